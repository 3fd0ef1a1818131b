"""Replay of failure-heavy runs: nnemu's ``nnemu::qos`` and ``nnemu::died`` marks.

nnemu writes each app's priority and timeouts (``nnemu::qos priority=NAME ...``, at the
begin of its ``[NN_LA_PO]`` section) and a driver process's death (``nnemu::died`` on its
main thread) in every trace format; replay gives the app those settings and the device a
``crash`` fault at the recorded time, so the replayed run refuses, aborts and falls back
where the recorded one did (docs/replay.md, "Priorities, deadlines and a driver's death").
A trace without the marks (a device's) is replayed by the timing-only rule, with a warning
naming what was assumed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest

from nnemu import run
from nnemu.app import qos_mark
from nnemu.hal import Priority
from nnemu.replay import build_replay, extract_plan
from nnemu.replay._attempts import AppQos, parse_qos
from nnemu.replay._build import describe_plan
from nnemu.scenario import FaultKind, load_scenario
from tests.commands import run_cli
from tests.unit.replay.helpers import OMR1, REPO, record

FAILURE_HEAVY = ("qos_busy_retries", "qos_deadline_storm", "qos_driver_crash")


@pytest.mark.parametrize("name", FAILURE_HEAVY)
def test_replay_of_a_failure_heavy_run_meets_its_figures(name: str, tmp_path: Path) -> None:
    """Issue 25 item 4: each app's replayed completed and failed counts and its p50/p95 are
    within 15% of the recorded run's report (qos_deadline_storm replayed 200 of ar_overlay's
    executions at 156.858 ms p50 against 6.453 without its deadlines; qos_driver_crash's
    resilient 4.715 ms p95 against 874.381 without the npu's death)."""
    path = tmp_path / f"{name}.json"
    recorded: dict[str, Any] = dict(record(REPO / "scenarios" / f"{name}.yaml", path).data["apps"])
    replayed = run(build_replay(extract_plan(str(path))).scenario).data["apps"]
    for app, was in recorded.items():
        now = replayed[app]
        for count in ("completed", "failed"):
            assert now[count] == pytest.approx(was[count], rel=0.15), (app, count)
        for q in ("p50", "p95"):
            assert now["latency_ms"][q] == pytest.approx(was["latency_ms"][q], rel=0.15), (app, q)


@pytest.mark.parametrize("suffix", [".json", ".html", ".pftrace"])
def test_every_format_carries_the_priority_deadline_and_death(suffix: str, tmp_path: Path) -> None:
    """In each trace format the plan reads each app's priority and timeout and the driver's
    death, and the replay scenario gets them: timeouts, and a crash 500 ms after the first
    app's start, as the scenarios say."""
    storm = tmp_path / f"storm{suffix}"
    record(REPO / "scenarios/qos_deadline_storm.yaml", storm)
    qos = {app.name: app.qos for app in extract_plan(str(storm)).apps}
    assert qos == {
        "ar_overlay": AppQos(priority=Priority.MEDIUM, execution_timeout_ns=15_000_000),
        "impatient": AppQos(priority=Priority.MEDIUM, execution_timeout_ns=2_000_000),
    }
    apps = {app.name: app for app in build_replay(extract_plan(str(storm))).scenario.apps}
    assert (apps["ar_overlay"].execution_timeout_ms, apps["impatient"].execution_timeout_ms) == (
        15,
        2,
    )
    crash = tmp_path / f"crash{suffix}"
    record(REPO / "scenarios/qos_driver_crash.yaml", crash)
    plan = extract_plan(str(crash))
    (npu,) = plan.drivers
    assert npu.died_ns is not None
    built = build_replay(plan).scenario
    (device,) = [d for d in built.devices if d.name == "npu"]
    assert [(f.kind, f.at_ms) for f in device.faults] == [(FaultKind.CRASH, 500)]
    # resilient fell back to the CPU after the death: not pinned to the npu; pinned is
    assert {a.name: a.devices for a in built.apps} == {"resilient": None, "pinned": ("npu",)}


def test_qos_mark_round_trips_every_setting() -> None:
    """What ``qos_mark`` writes for an app, ``parse_qos`` reads back; a mark naming no known
    priority is no mark, and a word it does not know is skipped."""
    scenario = load_scenario(REPO / "scenarios/qos_deadline_storm.yaml")
    spec = scenario.apps[0]
    spec = attrs.evolve(spec, priority=Priority.HIGH, compile_timeout_ms=30, drop_late_frames=True)
    name = qos_mark(spec)
    assert name == (
        "nnemu::qos priority=HIGH execution_timeout_ns=15000000 compile_timeout_ns=30000000 "
        "drop_late_frames"
    )
    assert parse_qos(name.removeprefix("nnemu::qos ")) == AppQos(
        priority=Priority.HIGH,
        execution_timeout_ns=15_000_000,
        compile_timeout_ns=30_000_000,
        drop_late_frames=True,
    )
    assert parse_qos("priority=URGENT") is None
    assert parse_qos("priority=LOW energy=3") == AppQos(priority=Priority.LOW)


def test_plan_and_build_say_what_the_marks_gave(tmp_path: Path) -> None:
    """The plan prints each app's priority and deadline from its mark, and the build derives
    them and the crash (not "assumed"), with the evidence."""
    path = tmp_path / "crash.html"
    record(REPO / "scenarios/qos_driver_crash.yaml", path)
    plan = extract_plan(str(path))
    assert "    priority medium; no deadline (nnemu::qos)" in describe_plan(plan)
    built = build_replay(plan)
    derived = [note.text for note in built.derived]
    assert any(
        text.startswith("devices.npu.faults: crash at 500.000 ms (its process died")
        for text in derived
    ), derived
    assert any(text.startswith("apps.resilient.devices: all (") for text in derived), derived
    assert "apps.pinned.priority: medium, no deadline (nnemu::qos)" in derived
    assert not any(".priority:" in note.text for note in built.assumed)
    assert built.warnings == ()


def test_a_device_trace_replays_by_timing_alone_with_a_warning() -> None:
    """omr1 (an Android 8.1 phone's trace) has no nnemu marks: it replays without deadlines at
    priority medium, each section one execution, no driver dying; a warning says so."""
    code, out, err = run_cli("replay", "-n", str(OMR1))
    assert code == 0, err
    (warning,) = [line for line in err.splitlines() if "nnemu marks" in line]
    assert warning.startswith(
        "warning: no nnemu marks for any app in the trace (a device's trace): "
        "no deadlines in the trace, replayed without deadlines at priority medium; "
    )
    assert "no driver dies" in warning
    assert "  apps.app-27005.priority: medium (" in out
    scenario = build_replay(extract_plan(str(OMR1))).scenario
    assert all(app.execution_timeout_ms is None for app in scenario.apps)
    assert all(not device.faults for device in scenario.devices)
