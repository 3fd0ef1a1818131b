"""What a replay derives about the devices: compute units, and a partitioned app's device time.

A device's compute units come from executions running at once on the driver's threads (an
execution begun beside a running one whose whole driver time is its app's own), never from a
call that waited for a unit, was refused at once or aborted; each shipped scenario's recorded
JSON trace carries the device's ``compute units busy`` counter, the ground truth to compare
with.  An app that called the device once per partition gets the per-execution sum of its
calls as its device time.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nnemu import run
from nnemu.replay import build_replay, describe_build, describe_plan, extract_plan
from nnemu.scenario import load_scenario
from tests.unit.replay.helpers import OMR1, REPO, Shipped, record

SCENARIOS = sorted(p.stem for p in (REPO / "scenarios").glob("*.yaml"))


def _busy_counters(path: Path) -> dict[int, int]:
    """The most ``compute units busy`` of each driver pid in an nnemu JSON trace."""
    data = json.loads(path.read_text(encoding="utf-8"))
    busiest: dict[int, int] = {}
    for event in data["traceEvents"]:
        if event.get("ph") == "C" and event.get("name") == "compute units busy":
            value = max(event["args"].values())
            busiest[event["pid"]] = max(busiest.get(event["pid"], 0), value)
    return busiest


@pytest.mark.xdist_group("shipped_json")
@pytest.mark.parametrize("name", SCENARIOS)
def test_compute_units_are_the_most_the_device_ran_at_once(
    name: str, shipped_json: Callable[[str], Shipped]
) -> None:
    """Each device's derived compute units equal the most units the recording kept busy at once, within its scenario's units."""
    scenario, path, plan = shipped_json(name)
    busiest = _busy_counters(path)
    units_of = {device.name: device.compute_units for device in scenario.devices}
    for driver in plan.drivers:
        assert driver.compute_units <= units_of[driver.name], driver.name
        assert driver.compute_units == busiest.get(driver.pid, 1), driver.name


def _recorded_and_replayed(path: Path) -> tuple[Any, Any, list[str]]:
    built = build_replay(extract_plan(str(path)))
    return built, run(built.scenario).data, describe_build(built)


def test_two_units_at_once_replay_the_recorded_latency(tmp_path: Path) -> None:
    """legacy_hal10_async's two executions at a time on 2 units replay on 2 units, at the recorded latency (not ~10x it)."""
    path = tmp_path / "legacy.html"
    recorded = record(REPO / "scenarios/legacy_hal10_async.yaml", path).data
    built, replayed, lines = _recorded_and_replayed(path)
    (device,) = (d for d in built.scenario.devices if d.name == "oreo-dsp")
    assert device.compute_units == 2
    assert (
        "  devices.oreo-dsp.compute_units: 2 (at most 2 executions at once on the driver's "
        "threads; 20 began beside a running one and ran from their begin)"
    ) in lines
    assert not any("1 compute unit" in line for line in lines)
    was, now = recorded["apps"]["mlbench"]["latency_ms"], replayed["apps"]["mlbench"]["latency_ms"]
    assert now["p50"] == pytest.approx(was["p50"], rel=0.05)
    assert now["p95"] == pytest.approx(was["p95"], rel=0.05)


def _ftrace(rows: list[tuple[float, int, int, str]]) -> str:
    """ftrace text of (seconds, pid, tid, B name or E) rows, in the order given."""
    lines = ["# tracer: nop\n"]
    for seconds, pid, tid, what in rows:
        body = f"E|{pid}" if what == "E" else f"B|{pid}|{what}"
        lines.append(f"  t-{tid} ({pid:5d}) [000] ...1 {seconds:.6f}: tracing_mark_write: {body}\n")
    return "".join(lines)


def _sync_call(begin_ms: float, end_ms: float, client_tid: int, server_tid: int) -> list[Any]:
    """One app thread's executeSynchronously call served on a driver binder thread."""
    b, e = 1 + begin_ms / 1e3, 1 + end_ms / 1e3
    method = "HIDL::IPreparedModel::executeSynchronously"
    return [
        (b, 9, client_tid, "[NN_LA_PE]run"),
        (b + 1e-6, 9, client_tid, f"{method}::client"),
        (b + 2e-6, 5, server_tid, f"{method}::server"),
        (e, 5, server_tid, "E"),
        (e + 1e-6, 9, client_tid, "E"),
        (e + 2e-6, 9, client_tid, "E"),
    ]


def _calls_trace(tmp_path: Path, calls: list[tuple[float, float]]) -> Path:
    rows = []
    for index, (begin, end) in enumerate(calls):
        rows.extend(_sync_call(begin, end, 100 + index, 200 + index))
    rows.sort(key=lambda row: row[0])
    path = tmp_path / "t.txt"
    path.write_text(_ftrace(rows), encoding="utf-8")
    return path


def _units(tmp_path: Path, calls: list[tuple[float, float]]) -> int:
    (driver,) = extract_plan(str(_calls_trace(tmp_path, calls))).drivers
    return driver.compute_units


def test_a_call_that_waited_for_the_unit_is_not_running(tmp_path: Path) -> None:
    """A call begun while another runs and ending one device time after it (it queued) leaves the device at 1 unit."""
    calls = [(0, 10), (20, 30), (21, 40), (50, 60)]
    assert _units(tmp_path, calls) == 1


def test_a_call_refused_at_once_is_not_running(tmp_path: Path) -> None:
    """A short call inside a running one (refused at once) leaves the device at 1 unit."""
    calls = [(0, 10), (20, 30), (22, 22.01), (50, 60)]
    assert _units(tmp_path, calls) == 1


def test_a_call_that_waited_and_was_aborted_is_not_running(tmp_path: Path) -> None:
    """A call begun beside a running one that ran on after it but not its app's whole time (aborted at a deadline after waiting) is not running."""
    calls = [(0, 10), (20, 30), (20.1, 35), (50, 60)]
    assert _units(tmp_path, calls) == 1


def test_calls_begun_together_that_end_together_ran_at_once(tmp_path: Path) -> None:
    """Three calls begun together that each take the app's own time ran on three units at once."""
    calls = [(0, 10), (20, 30), (20.1, 30.1), (20.2, 30.2), (50, 60)]
    assert _units(tmp_path, calls) == 3


def test_one_overlap_among_thousands_of_executions_is_noise(tmp_path: Path) -> None:
    """A 1-unit NPU's 60 s trace (two_apps_one_npu: one execution in 6,349 began beside a
    running one) gave 2 units, and the replayed camera p95 9.33 ms against 11.62 recorded:
    a level of executions at once needs one execution in a thousand to begin at it."""
    serial = [(20.0 * i, 20.0 * i + 10) for i in range(2500)]
    together = [*serial[:1000], (20_000.0, 20_010.0), (20_000.1, 20_010.1), *serial[1002:]]
    assert _units(tmp_path, together) == 1
    three = [*together[:2000], (40_000.0, 40_010.0), (40_000.1, 40_010.1), *together[2002:]]
    assert _units(tmp_path, three) == 1
    five = [c for i, c in enumerate(serial) if i % 500 != 1]
    five += [(20.0 * i + 0.1, 20.0 * i + 10.1) for i in range(0, 2500, 500)]
    assert _units(tmp_path, sorted(five)) == 2


def test_more_units_than_worker_threads_get_a_worker_each(tmp_path: Path) -> None:
    """A device found running 3 executions at once gets 3 worker threads (default 2), so asynchronous executions can use every unit."""
    calls = [(0, 10), (20, 30), (20.1, 30.1), (20.2, 30.2), (50, 60)]
    built = build_replay(extract_plan(str(_calls_trace(tmp_path, calls))))
    (device,) = (d for d in built.scenario.devices if d.name == "driver-5")
    assert (device.compute_units, device.worker_threads) == (3, 3)
    assert any(".worker_threads: 3 (one per compute unit" in line for line in describe_build(built))


def test_a_real_devices_serial_trace_keeps_one_unit() -> None:
    """omr1's HAL 1.0 driver, whose preparations overlap nothing it executes, stays at 1 compute unit."""
    (driver,) = extract_plan(str(OMR1)).drivers
    assert driver.compute_units == 1
    assert any(
        "1 compute unit" in line for line in describe_build(build_replay(extract_plan(str(OMR1))))
    )


def test_a_partitioned_apps_device_time_is_the_sum_per_execution(tmp_path: Path) -> None:
    """partial_driver_fallback's two calls per execution (0.043 + 5.842 ms) set the device speed by their sum, and the replay lands near the recording."""
    path = tmp_path / "partial.html"
    recorded = record(REPO / "scenarios/partial_driver_fallback.yaml", path).data
    _, replayed, lines = _recorded_and_replayed(path)
    (speed,) = (line for line in lines if ".performance.float32.exec_time" in line)
    assert (
        "median device time of 20 gallery's executions, each the sum of its 2 calls to it "
        "(partitions of the model; 40 calls) 5.885 ms"
    ) in speed
    was = recorded["apps"]["gallery"]["latency_ms"]["p50"]
    assert replayed["apps"]["gallery"]["latency_ms"]["p50"] == pytest.approx(was, rel=0.05)


def test_executions_of_no_time_on_an_idle_device_are_compared_with_nothing() -> None:
    """An app whose executions on an idle device all took 0 ns has no typical time: its overlapping ones are not counted as running (no division by zero)."""
    from array import array

    from nnemu.replay._units import _service, _units

    begins = array("q", [0, 100, 1_000, 1_001])
    durations = array("q", [0, 10_000, 0, 5])
    clients = [1, 2, 1, 1]
    assert _units(begins, durations, clients, _service(begins, durations)) == (1, None)


def test_calls_outside_the_sections_are_not_summed_into_them(tmp_path: Path) -> None:
    """When a partition's call lies outside its startCompute section (the section returned first), no section's calls are summed: the speed comes from the calls as they are."""
    rows = []
    method = "HIDL::IPreparedModel::executeSynchronously"
    for index in range(3):
        start = 1 + index * 0.1
        rows.append((start, 9, 100, "[NN_LR_PE]ANeuralNetworksExecution_startCompute"))
        rows.append((start + 1.5e-3, 9, 100, "E"))  # returns inside the first call
        for part, (begin_ms, end_ms) in enumerate(((1, 2), (3, 9))):
            b, e = start + begin_ms / 1e3, start + end_ms / 1e3
            rows += [
                (b, 9, 101, f"{method}::client"),
                (b + 1e-6, 5, 200 + part, f"{method}::server"),
                (e, 5, 200 + part, "E"),
                (e + 1e-6, 9, 101, "E"),
            ]
    rows.sort(key=lambda row: row[0])
    path = tmp_path / "t.txt"
    path.write_text(_ftrace(rows), encoding="utf-8")
    lines = describe_build(build_replay(extract_plan(str(path))))
    (speed,) = (line for line in lines if ".performance.float32.exec_time" in line)
    assert "median device time of 6 app-9's executions 3.499 ms" in speed


def test_calls_whose_transactions_overtook_each_other_are_both_paired(tmp_path: Path) -> None:
    """Two apps' calls to one driver, the second app's transaction served first (IPC latency
    jitter): each server call goes to the client call it answered, so each app has its one
    execution on the driver (the in-order pairing gave the first app both and lost one)."""
    client = "HIDL::IPreparedModel::executeSynchronously::client"
    server = "HIDL::IPreparedModel::executeSynchronously::server"
    rows = [
        (1.000000, 100, 101, client),  # app 100 calls first ...
        (1.000010, 300, 301, client),  # ... app 300 second,
        (1.000050, 200, 201, server),  # but app 300's transaction arrives first
        (1.000060, 200, 201, "E"),
        (1.000080, 300, 301, "E"),  # app 300's call returns: this server call was its
        (1.000100, 200, 201, server),  # app 100's transaction
        (1.000110, 200, 201, "E"),
        (1.000150, 100, 101, "E"),
    ]
    path = tmp_path / "overtaken.txt"
    path.write_text(_ftrace(rows), encoding="utf-8")
    plan = extract_plan(str(path))
    on = [line.strip() for line in describe_plan(plan) if "executions on:" in line]
    assert on == ["executions on: driver-200 x1", "executions on: driver-200 x1"]
    # the delays to each call's own server call: 40 us (app 300) and 100 us (app 100)
    lines = describe_build(build_replay(plan))
    assert any("ipc.latency_us: 70 (median of 2 " in line for line in lines), lines


_BUSY_UNITS = """
name: units_busy
seed: {seed}
devices:
  - name: npu
    hal_version: "1.3"
    type: accelerator
    compute_units: {units}
    performance:
      float32: {{exec_time: 0.25, power_usage: 0.3}}
      quant8: {{exec_time: 0.08, power_usage: 0.15}}
    cost: {{prepare_ms: 30, launch_us: 50, jitter: 0.1}}
models:
  - {{name: small, preset: mobilenet_v1, dtype: quant8}}
  - {{name: big, preset: mobilenet_v2, dtype: float32, params: {{input_size: 224}}}}
apps:
  - {{name: camera, uid: 10050, model: small, workload: {{kind: periodic, period_ms: {period}, executions: 120}}}}
  - {{name: indexer, uid: 10077, model: big, threads: {threads}, workload: {{kind: closed_loop, think_ms: 1, executions: 80}}}}
  - {{name: gallery, uid: 10078, model: big, threads: {threads}, workload: {{kind: closed_loop, think_ms: 2, executions: 80}}}}
"""


@pytest.mark.parametrize(("units", "period", "threads"), [(2, 8, 1), (2, 12, 1), (3, 6, 2)])
def test_device_times_on_busy_units_are_each_executions_own(
    units: int, period: int, threads: int, tmp_path: Path
) -> None:
    """On a device of several compute units kept busy by three apps (executions queue for a unit), the replay finds the units and each app's device times average its recorded compute plus launch, so the replay computes as the recording did."""
    source = tmp_path / "busy.yaml"
    source.write_text(
        _BUSY_UNITS.format(units=units, period=period, threads=threads, seed=3), encoding="utf-8"
    )
    path = tmp_path / "busy.html"
    recorded = record(load_scenario(source), path).data["apps"]
    assert max(app["latency_split_ms"]["device_queue"] for app in recorded.values()) > 0.5
    plan = extract_plan(str(path))
    (driver,) = plan.drivers
    assert driver.compute_units == units
    for app in plan.apps:
        split = recorded[app.name]["latency_split_ms"]
        mean_ms = statistics.mean(driver.service_of(app.pid)) / 1e6
        assert mean_ms == pytest.approx(split["compute"] + split["driver_launch"], rel=0.01)
    built = build_replay(plan)
    replayed = run(built.scenario).data["apps"]
    for name, was in recorded.items():
        compute = was["latency_split_ms"]["compute"]
        assert replayed[name]["latency_split_ms"]["compute"] == pytest.approx(compute, rel=0.03)
    (line,) = (line for line in describe_build(built) if ".compute_units:" in line)
    assert line.startswith(
        f"  devices.npu.compute_units: {units} (the device times fit {units} units"
    )


def test_queued_executions_are_timed_from_the_unit_they_took() -> None:
    """On 2 units, an execution that waited is timed from the end that freed a unit for it (first come, first served), not from the end just before its own."""
    from array import array

    from nnemu.replay._units import _service, _service_on_units

    # a [0, 10] and b [1, 11] run; c (begun 2) waits for a's unit at 10, d (begun 3) for
    # b's at 11; c ends at 20, d at 21 (10 each on a unit; from the end before each: 9)
    begins = array("q", [0, 1, 2, 3])
    durations = array("q", [10, 10, 18, 18])
    serial = _service(begins, durations)
    assert list(serial) == [10, 1, 9, 1]
    assert list(_service_on_units(begins, durations, 2, serial)) == [10, 10, 10, 10]


def test_a_single_preparation_or_execution_is_counted_in_the_singular(tmp_path: Path) -> None:
    """A driver that prepared once reads '1 preparation' in the plan and in the derived
    prepare_ms line, not '1 preparations'."""
    path = tmp_path / "quickstart.html"
    record(load_scenario(REPO / "scenarios" / "quickstart.yaml"), path)
    plan = extract_plan(str(path))
    (driver,) = plan.drivers
    assert len(driver.prepare_ns) == 1
    text = "\n".join(describe_plan(plan) + describe_build(build_replay(plan)))
    assert "; 1 preparation, median" in text
    assert "(median of 1 preparation " in text
    assert "1 preparations" not in text
