"""A closed-loop app replays as a closed loop (docs/replay.md, "Closed loops").

An app thread that issues its next execution when its last one ends (plus a think time)
shows it in its trace: on each thread, the gap from one execution's end to the next one's
arrival is the same whatever the executions took.  The replay runs such an app as a
``closed_loop`` workload with its threads, count and think time, so a moment the replayed
device is slower delays one execution, not every later one queued behind its recorded
arrival.  Open-loop apps (periodic, Poisson, bursts), at any load, keep their arrivals.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nnemu import run
from nnemu.replay import build_replay, describe_build, describe_plan, extract_plan, loop_problem
from nnemu.replay._loop import closed_loop
from nnemu.scenario import (
    MAX_EXECUTIONS,
    WorkloadKind,
    dump_scenario,
    load_scenario_text,
)
from tests.unit.replay.helpers import REPO, Shipped, record

SCENARIOS = sorted(p.stem for p in (REPO / "scenarios").glob("*.yaml"))

MS = 1_000_000


def _rows(*threads: list[tuple[float, float]]) -> array[int]:
    """(arrival, tid, duration) rows, flat, of each thread's (arrival ms, duration ms)."""
    out = array("q")
    for tid, rows in enumerate(threads, start=1):
        for begin, duration in rows:
            out.extend((round(begin * MS), tid, round(duration * MS)))
    return out


def _loop(think: float, durations: list[float], start: float = 0.0) -> list[tuple[float, float]]:
    rows, now = [], start
    for duration in durations:
        rows.append((now, duration))
        now += duration + think
    return rows


JITTERY = [4.0, 4.6, 3.9, 9.0, 4.2, 4.1, 5.5, 4.0, 4.4, 4.3]


def test_a_steady_gap_after_each_end_is_a_closed_loop() -> None:
    """Executions of varying length, each arriving 5 ms after the one before on its thread ended, are a closed loop with think time 5 ms."""
    loop = closed_loop(_rows(_loop(5.0, JITTERY)))
    assert loop is not None
    assert (loop.threads, loop.think_ns, loop.gaps, loop.in_loop) == (1, 5 * MS, 9, 9)


def test_each_thread_loops_on_its_own() -> None:
    """Two threads each looping (think 0) give a closed loop of 2 threads, their executions interleaved in time."""
    loop = closed_loop(_rows(_loop(0.0, JITTERY), _loop(0.0, JITTERY[::-1], start=1.3)))
    assert loop is not None
    assert (loop.threads, loop.think_ns, loop.gaps) == (2, 0, 18)


def test_a_few_stray_gaps_are_tolerated_many_are_not() -> None:
    """One gap of ten off (a failed execution left out of the rows) still reads as a loop; three of ten do not (under 90%)."""
    rows = _loop(2.0, JITTERY + JITTERY)
    one_off = [*rows[:5], *((b + 7.0, d) for b, d in rows[5:])]
    assert closed_loop(_rows(one_off)) is not None
    three_off = [(b + 3.0 * (i // 4), d) for i, (b, d) in enumerate(rows)]
    assert closed_loop(_rows(three_off)) is None


def test_a_periodic_app_is_not_a_closed_loop() -> None:
    """Arrivals every 33.3 ms whose executions vary are periodic: the intervals are steady, the gaps are not; with executions of one length both are steady and the arrivals are kept."""
    varying = [(33.3 * i, JITTERY[i % 10] / 10 + 4.5) for i in range(30)]
    assert closed_loop(_rows(varying)) is None
    steady = [(33.3 * i, 4.7) for i in range(30)]
    assert closed_loop(_rows(steady)) is None


def test_back_to_back_executions_of_one_length_are_a_closed_loop() -> None:
    """Executions of one length, each arriving as the one before ended, are a loop (gap 0), though the intervals are as steady."""
    loop = closed_loop(_rows(_loop(0.0, [6.108] * 20)))
    assert loop is not None
    assert loop.think_ns == 0


def test_arrivals_while_busy_are_an_open_loop() -> None:
    """A saturated app's arrivals come while its thread is busy (gaps below 0, from nnemu's waited marks): not a loop."""
    rows = [(2.0 * i, 3.0) for i in range(20)]  # one arrival every 2 ms, 3 ms each
    queued, now = [], 0.0
    for arrival, duration in rows:
        now = max(now, arrival)
        queued.append((arrival, now + duration - arrival))
        now += duration
    assert closed_loop(_rows(queued)) is None


def test_too_few_executions_tell_nothing() -> None:
    """Three executions (two gaps) are too few to tell a loop."""
    assert closed_loop(_rows(_loop(0.0, [1.0, 2.0, 3.0]))) is None


@pytest.fixture(scope="module", name="aidl_v4")
def _aidl_v4(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    path = tmp_path_factory.mktemp("loop") / "aidl_v4_reusable.json"
    return path, record(REPO / "scenarios/aidl_v4_reusable.yaml", path).data


def test_hotword_npu_replays_at_its_recorded_latency(aidl_v4: tuple[Path, Any]) -> None:
    """aidl_v4_reusable's hotword_npu (a closed loop of 200 bursts beside a periodic camera on the npu) replays within 15% of its recorded p50 and p95: replayed from its recorded arrivals, one wait behind the camera delayed every later execution (4.424 ms p50 against 0.159)."""
    path, recorded = aidl_v4
    plan = extract_plan(str(path))
    apps = {app.name: app for app in plan.apps}
    latencies = sorted(apps["hotword_npu"].latencies_ns)
    assert (latencies[99], latencies[189]) == (159_000, 159_000)  # the recorded row, unchanged
    built = build_replay(plan)
    replayed = run(built.scenario).data["apps"]
    for name in ("hotword_npu", "hotword_gpu", "camera"):
        was, now = recorded["apps"][name]["latency_ms"], replayed[name]["latency_ms"]
        assert now["p50"] == pytest.approx(was["p50"], rel=0.15), name
        assert now["p95"] == pytest.approx(was["p95"], rel=0.15), name
        assert replayed[name]["completed"] == recorded["apps"][name]["completed"], name


def test_the_loop_is_in_the_plan_and_the_saved_scenario(aidl_v4: tuple[Path, Any]) -> None:
    """The closed-loop app's workload is derived with its evidence, and the scenario written (--save-scenario) loads back as a closed loop of 200 executions on 1 thread; the periodic camera keeps its arrivals."""
    path, _ = aidl_v4
    plan = extract_plan(str(path))
    built = build_replay(plan)
    assert (
        "  apps.hotword_npu.workload: closed_loop, think_ms 0, 1 thread (on its threads 199 "
        "of 199 executions arrived 0.000 ms (±0.020) after the one before ended; 197 of 199 "
        "a steady interval after its begin)"
    ) in describe_build(built)
    again = load_scenario_text(dump_scenario(built.scenario), "saved.yaml")
    apps = {app.name: app for app in again.apps}
    workload = apps["hotword_npu"].workload
    assert (workload.kind, workload.executions, workload.think_ms) == (
        WorkloadKind.CLOSED_LOOP,
        200,
        0.0,
    )
    assert apps["hotword_npu"].threads == 1
    assert (
        "    closed loop on 1 thread: each execution arrives 0.000 ms after its thread's last "
        "one ended (199 of 199)"
    ) in describe_plan(plan)
    assert apps["camera"].workload.kind is WorkloadKind.TRACE
    fast = build_replay(extract_plan(str(path)), fast=True, loops=2)
    workload = {app.name: app for app in fast.scenario.apps}["hotword_npu"].workload
    assert (workload.kind, workload.executions, workload.start_ms) == (
        WorkloadKind.CLOSED_LOOP,
        400,
        0.0,
    )


@pytest.mark.xdist_group("shipped_json")
@pytest.mark.parametrize("name", SCENARIOS)
def test_shipped_apps_are_read_as_the_loop_they_ran(
    name: str, shipped_json: Callable[[str], Shipped]
) -> None:
    """Each shipped scenario's closed-loop apps are read as closed loops of their threads and think time, and its periodic, Poisson and burst apps as open, whatever their load."""
    scenario, _, plan = shipped_json(name)
    specs = {app.name: app for app in scenario.apps}
    assert plan.apps
    for app in plan.apps:
        spec = specs[app.name]
        if spec.workload.kind is WorkloadKind.CLOSED_LOOP:
            assert app.loop is not None, app.name
            assert app.loop.threads == spec.threads, app.name
            assert app.loop.think_ns == round(spec.workload.think_ms * MS), app.name
        else:
            assert app.loop is None, app.name


SATURATED = """\
name: saturated
seed: 3
devices:
  - name: npu
    hal_version: "1.3"
    performance: {float32: {exec_time: 0.4}}
models:
  - {name: net, preset: mobilenet_v1}
apps:
  - name: poisson
    model: net
    devices: [npu]
    workload: {kind: poisson, rate_hz: RATE, executions: 150}
"""


@pytest.mark.parametrize("rate_hz", [150, 400])
def test_a_poisson_app_at_high_load_keeps_its_arrivals(rate_hz: int, tmp_path: Path) -> None:
    """A Poisson app keeping its device ~0.7 busy, or saturating it (arrivals 1.7x as fast as it serves them, each waiting behind the ones before), is read as open and replayed from its arrivals."""
    scenario = load_scenario_text(SATURATED.replace("RATE", str(rate_hz)), "saturated.yaml")
    path = tmp_path / "saturated.json"
    recorded = record(scenario, path).data
    busy = recorded["devices"]["npu"]["busy_fraction"]
    assert busy > (0.99 if rate_hz == 400 else 0.6)
    plan = extract_plan(str(path))
    (app,) = plan.apps
    assert app.loop is None
    (spec,) = build_replay(plan).scenario.apps
    assert spec.workload.kind is WorkloadKind.TRACE


def test_looping_a_closed_loop_is_bounded_by_its_executions(aidl_v4: tuple[Path, Any]) -> None:
    """-l N runs a closed-loop app's executions N times, so an N past a scenario's executions limit is refused with the largest N allowed (not a scenario that fails to build)."""
    path, _ = aidl_v4
    plan = extract_plan(str(path))
    most = MAX_EXECUTIONS // 200
    assert loop_problem(plan, fast=False, loops=most + 1) == (
        f"-l {most + 1}: an app would run {(most + 1) * 200} executions, past a scenario's "
        f"limit of {MAX_EXECUTIONS} per app; use -l {most} at most"
    )
