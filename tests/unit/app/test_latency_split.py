"""The latency split: each execution's latency by where it went, per record and in the report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest

from nnemu import run
from nnemu.app import SPLIT_PARTS, ExecutionRecord
from nnemu.hal import ResultCode
from nnemu.scenario import PreemptionKind, load_scenario

ROOT = Path(__file__).resolve().parents[3]
SCENARIOS = sorted(
    [*(ROOT / "scenarios").glob("**/*.yaml"), *(ROOT / "nnemu/demo/scenarios").glob("*.yaml")]
)


def _run(path: Path) -> tuple[dict[str, Any], dict[str, list[ExecutionRecord]]]:
    """The report data and every app's execution records of one run of ``path``."""
    records: dict[str, list[ExecutionRecord]] = {}

    def inspect(emulator: Any) -> None:
        for app in emulator.apps:
            records[app.spec.name] = list(app.records)

    report = run(load_scenario(path), keep_executions=True, inspect=inspect)
    return report.data, records


def _parts(record: ExecutionRecord) -> list[int]:
    return [getattr(record, f"{part}_ns") for part in SPLIT_PARTS]


def _scenario(name: str) -> Path:
    return ROOT / "scenarios" / f"{name}.yaml"


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_parts_add_up_to_the_latency_in_every_shipped_scenario(path: Path) -> None:
    """Every execution's parts are >= 0 and add up to its latency; the report's mean parts add
    up to its mean latency (up to rounding) and are the records' means."""
    data, records = _run(path)
    for name, app in data["apps"].items():
        split = app["latency_split_ms"]
        assert list(split) == list(SPLIT_PARTS)
        completed = [r for r in records[name] if r.code is ResultCode.NO_ERROR]
        assert len(completed) == app["completed"]
        for record in records[name]:
            parts = _parts(record)
            assert min(parts) >= 0, (name, record)
            assert sum(parts) == record.finished_ns - record.arrival_ns, (name, record)
        assert sum(split.values()) == pytest.approx(app["latency_ms"]["mean"], abs=0.004)
        for index, part in enumerate(SPLIT_PARTS):
            total_ns = sum(_parts(r)[index] for r in completed)
            mean = round(total_ns / len(completed) / 1e6, 3) if completed else 0.0
            assert split[part] == mean, (name, part)


def test_time_preempted_is_its_own_part_not_queue_or_compute() -> None:
    """Checkpoint preemption puts the indexer's time off its unit after a preemption in
    ``preempted``: its compute is what it is without preemption, its device queue is only the
    wait before it first ran, and an execution never preempted has no preempted part."""
    with_preemption, records = _run(_scenario("qos_priority_checkpoint"))
    without, _ = _run(_scenario("qos_priority_no_preemption"))
    indexer = with_preemption["apps"]["indexer"]["latency_split_ms"]
    assert indexer["compute"] == without["apps"]["indexer"]["latency_split_ms"]["compute"]
    assert indexer["preempted"] > indexer["device_queue"]
    assert without["apps"]["indexer"]["latency_split_ms"]["preempted"] == 0.0
    preempted = [r for r in records["indexer"] if r.preemptions]
    assert preempted
    for record in preempted:
        assert record.device_arrival_ns is not None
        assert record.device_start_ns is not None
        assert record.device_end_ns is not None
        assert record.device_queue_ns == record.device_start_ns - record.device_arrival_ns
        on_device = record.device_end_ns - record.device_start_ns
        assert record.preempted_ns == on_device - record.compute_ns - record.driver_launch_ns > 0
    assert all(r.preempted_ns == 0 for r in records["indexer"] if not r.preemptions)


def test_work_a_restart_throws_away_is_preempted_not_compute() -> None:
    """Under ``preemption: restart`` an execution's compute and launch are one whole run's;
    the stretches it ran before a restart count as ``preempted``, with the time off its unit."""
    scenario = load_scenario(_scenario("qos_priority_checkpoint"))
    device = attrs.evolve(scenario.devices[0], preemption=PreemptionKind.RESTART)
    restart = attrs.evolve(scenario, devices=(device,))
    records: dict[str, list[ExecutionRecord]] = {}

    def inspect(emulator: Any) -> None:
        for app in emulator.apps:
            records[app.spec.name] = list(app.records)

    run(restart, keep_executions=True, inspect=inspect)
    indexer = [r for r in records["indexer"] if r.code is ResultCode.NO_ERROR]
    whole = [r.compute_ns for r in indexer if not r.preemptions]
    restarted = [r for r in indexer if r.preemptions]
    assert whole
    assert restarted
    for record in restarted:
        assert record.device_start_ns is not None
        assert record.device_end_ns is not None
        # Compute is one run of the model (the jitter-free indexer's, as when not preempted).
        assert record.compute_ns == whole[0]
        on_device = record.device_end_ns - record.device_start_ns
        assert record.preempted_ns == on_device - record.compute_ns - record.driver_launch_ns


def test_waiting_for_the_drivers_binder_threads_is_binder_wait() -> None:
    """qos_binder_bound.yaml: the indexer's 4 threads hold the driver's 4 binder threads in
    their synchronous executions, so the camera waits for a binder thread, not at the NPU;
    with 8 binder threads that wait is gone."""
    path = _scenario("qos_binder_bound")
    data, records = _run(path)
    camera = data["apps"]["camera"]["latency_split_ms"]
    assert camera["binder_wait"] > 2.0
    assert camera["device_queue"] < 1.0
    assert any(r.binder_wait_ns > 5_000_000 for r in records["camera"])
    scenario = load_scenario(path)
    device = attrs.evolve(scenario.devices[0], binder_threads=8)
    wider = run(attrs.evolve(scenario, devices=(device,))).data["apps"]["camera"]
    assert wider["latency_split_ms"]["binder_wait"] == 0.0
    assert wider["deadline_misses"] == 0


def test_cpu_executions_have_no_ipc_and_no_driver_launch() -> None:
    """An app that runs on the runtime's CPU executor spends nothing on IPC or a driver launch."""
    data, records = _run(_scenario("qos_model_too_large"))
    flexible = [r for r in records["flexible"] if r.code is ResultCode.NO_ERROR]
    assert flexible
    for record in flexible:
        assert record.device == "nnapi-reference"
        assert record.ipc_ns == record.driver_launch_ns == 0
        assert record.compute_ns > 0
    split = data["apps"]["flexible"]["latency_split_ms"]
    assert split["ipc"] == split["driver_launch"] == 0.0


def test_earlier_attempts_and_back_off_are_retry() -> None:
    """A retried execution's earlier attempts and back-off are its retry part; others have none."""
    _, records = _run(_scenario("qos_busy_retries"))
    retried = [r for r in records["batcher"] if r.attempts > 1]
    assert retried
    assert all(r.retry_ns > 0 for r in retried)
    assert all(r.retry_ns == 0 for r in records["batcher"] if r.attempts == 1)


def test_records_carry_the_device_path_and_settings() -> None:
    """A record names its device, mode and priority, and its device times lie inside its latency."""
    _, records = _run(_scenario("two_apps_one_npu"))
    camera = records["camera"]
    assert [r.seq for r in camera] == sorted(r.seq for r in camera)
    for record in camera:
        assert record.device == "npu"
        assert record.mode == "sync"
        assert record.priority == "HIGH"
        assert record.device_arrival_ns is not None
        assert record.device_start_ns is not None
        assert record.device_end_ns is not None
        assert record.arrival_ns <= record.started_ns <= record.device_arrival_ns
        assert record.device_arrival_ns <= record.device_start_ns <= record.device_end_ns
        assert record.device_end_ns <= record.finished_ns
