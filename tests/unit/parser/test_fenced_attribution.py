"""A driver worker's fenced work counts for the client whose ``executeFenced`` launched it
(docs/parser.md, "Attribution" rule 3 and D-FENCED; docs/hal-semantics.md §1.7)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nnemu.parser import RunStats, parse_file
from nnemu.scenario import load_scenario_text
from nnemu.tracer import GroundTruth, Layer, Phase
from nnemu.verify import compare, run_with_truth
from tests.unit.parser.helpers import parse_rows

MS = 1_000_000

# Two pipelined apps on one sync-fence NPU. a_big's frames take the NPU ~3 ms from each
# period's start, b_small's begin 5 ms into a_big's period: their runs overlap the whole time,
# their executions never wait for each other, so each app's driver time is its time alone.
DEVICES = """\
name: fenced_two_apps
seed: 7
devices:
  - name: npu
    hal_version: "1.3"
    sync_fences: true
    performance:
      float32: {exec_time: 0.3, power_usage: 0.3}
models:
  - name: big
    preset: mobilenet_v1
    params: {input_size: 128, width: 0.5}
  - name: small
    preset: add
apps:
"""
APPS = {
    "a_big": """\
  - name: a_big
    model: big
    devices: [npu]
    execution_mode: fenced
    pipeline: 2
    workload: {kind: periodic, period_ms: 10, executions: 6}
""",
    "b_small": """\
  - name: b_small
    model: small
    devices: [npu]
    execution_mode: fenced
    pipeline: 2
    workload: {kind: periodic, period_ms: 10, executions: 6, start_ms: 5}
""",
}


def _run(tmp_path: Path, apps: list[str]) -> tuple[dict[str, RunStats], GroundTruth, Path]:
    """Run the scenario with ``apps`` (traced, with the ground truth); its runs by app."""
    trace = tmp_path / f"{'+'.join(apps)}.html"
    truth = GroundTruth()
    text = DEVICES + "".join(APPS[app] for app in apps)
    run_with_truth(load_scenario_text(text, source="s.yaml"), truth, trace=str(trace))
    return {run.process_name: run for run in parse_file(trace).runs}, truth, trace


def _driver_pe(run: RunStats) -> int | None:
    return run.totals_ns(Layer.DRIVER, Phase.EXECUTION)


def test_two_apps_on_a_sync_fence_device_keep_their_own_driver_work(tmp_path: Path):
    """With two pipelined apps on one sync-fence NPU, each app's parsed Driver execution time
    is its own (what it gets alone), no IPC self time is negative, and verify agrees."""
    shared, truth, trace = _run(tmp_path, ["a_big", "b_small"])
    alone = {app: _run(tmp_path, [app])[0][app] for app in APPS}
    # 12 executions each: mobilenet 1.512 ms, add 0.023 ms on the driver.
    assert {app: _driver_pe(alone[app]) for app in APPS} == {
        "a_big": 12 * 1_512_000,
        "b_small": 12 * 23_000,
    }
    assert {app: _driver_pe(shared[app]) for app in APPS} == {
        app: _driver_pe(alone[app]) for app in APPS
    }
    for app, run in shared.items():
        for phase, row in run.self_times.items():
            assert row[Layer.IPC] >= 0, (app, phase, row[Layer.IPC])
    assert compare(parse_file(trace), truth.runs).passed


_START = "[NN_LR_PE]ANeuralNetworksExecution_startComputeWithDependencies"


def _fenced_rows(server: str, client: str) -> list[tuple[float, int, int, str]]:
    """Clients a (pid 10) and b (pid 20, started last) each call executeFenced; the driver
    (pid 30) returns at once and its worker (tid 33) does a's work, then b's."""
    return [
        (0, 10, 10, "[NN_LA_PO]a"),
        (0, 20, 20, "[NN_LA_PO]b"),
        (1, 11, 10, _START),
        (1, 11, 10, client),
        (1, 31, 30, server),
        (1.5, 31, 30, "E"),
        (2, 11, 10, "E"),
        (2, 11, 10, "E"),
        (2, 21, 20, _START),
        (2, 21, 20, client),
        (2, 31, 30, server),
        (2.5, 31, 30, "E"),
        (3, 21, 20, "E"),
        (3, 21, 20, "E"),
        (3, 33, 30, "[NN_LD_PIO]SamplePreparedModel::executeFenced"),
        (4, 33, 30, "[SW][NN_LD_PE]SamplePreparedModel::executeFenced"),
        (7, 33, 30, "E"),
        (7, 33, 30, "E"),
        (7, 33, 30, "[NN_LD_PIO]SamplePreparedModel::executeFenced"),
        (7, 33, 30, "[SW][NN_LD_PE]SamplePreparedModel::executeFenced"),
        (8, 33, 30, "E"),
        (8, 33, 30, "E"),
        (10, 10, 10, "E"),
        (10, 20, 20, "E"),
    ]


@pytest.mark.parametrize(
    "call",
    [
        "HIDL::IPreparedModel::executeFenced",
        "AIDL::ndk::IPreparedModel::executeFenced",
        "AIDL::ndk::IPreparedModel::executeFencedWithConfig",
        "AIDL::ndk::IExecution::executeFenced",
    ],
)
def test_a_fenced_worker_serves_the_client_whose_call_launched_its_work(call: str):
    """A worker's top-level section (and the [SW] section that goes on with it) counts for
    the oldest executeFenced launch no worker took; the next top-level section takes the next."""
    result = parse_rows(_fenced_rows(f"{call}::server", f"{call}::client"))
    assert result.diagnostics == ()
    a, b = result.runs
    # The server call (0.5 ms) and the worker's section.
    assert _driver_pe(a) == (0.5 + 4) * MS
    assert _driver_pe(b) == (0.5 + 1) * MS
    # The worker's time is not inside the IPC call: IPC self time = IPC - server call.
    assert a.self_times[Phase.EXECUTION][Layer.IPC] == pytest.approx(0.5)
    assert b.self_times[Phase.OVERALL][Layer.IPC] == pytest.approx(0.5)


def test_an_executeFenced_that_works_inside_the_call_launches_nothing():
    """A driver that executes inside executeFenced (the sample driver, ``sync_fences: false``)
    leaves no launch behind: a later worker's preparation counts for the client that asked."""
    rows = [
        (0, 20, 20, "[NN_LA_PO]b"),
        (0, 10, 10, "[NN_LA_PO]a"),
        (1, 11, 10, _START),
        (1, 11, 10, "HIDL::IPreparedModel::executeFenced::client"),
        (1, 31, 30, "HIDL::IPreparedModel::executeFenced::server"),
        (1, 31, 30, "[NN_LD_PE]SamplePreparedModel::executeFenced"),
        (1.5, 31, 30, "[SW][NN_LD_PIO]SamplePreparedModel::executeFenced"),
        (2, 31, 30, "[SW][NN_LD_PE]SamplePreparedModel::executeFenced"),
        (3, 31, 30, "E"),
        (3, 31, 30, "E"),
        (3, 31, 30, "E"),
        (3, 31, 30, "E"),
        (3, 11, 10, "E"),
        (3, 11, 10, "E"),
        (4, 21, 20, "[NN_LR_PC]ANeuralNetworksCompilation_finish"),
        (4, 21, 20, "HIDL::IDevice::prepareModel_1_3::client"),
        (4, 31, 30, "HIDL::IDevice::prepareModel_1_3::server"),
        (4.5, 31, 30, "E"),
        (5, 33, 30, "[NN_LD_PC]SamplePreparedModel::initialize"),
        (8, 33, 30, "HIDL::IPreparedModelCallback::notify_1_3::client"),
        (8, 33, 30, "E"),
        (8, 33, 30, "E"),
        (8, 21, 20, "E"),
        (8, 21, 20, "E"),
        (10, 10, 10, "E"),
        (10, 20, 20, "E"),
    ]
    result = parse_rows(rows)
    assert result.diagnostics == ()
    b, a = result.runs
    assert _driver_pe(a) == 2 * MS
    assert a.totals_ns(Layer.DRIVER, Phase.COMPILATION) == 0
    assert b.totals_ns(Layer.DRIVER, Phase.COMPILATION) == (0.5 + 3) * MS
