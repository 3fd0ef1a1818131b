"""Executions cut by the end of a capture: not finished, in nnemu's traces as in a device's.

When a run stops at its ``duration_ms`` (or is interrupted), nnemu's tracer closes every open
section at that instant, so the execution then in flight has an end row at the trace's last
timestamp; a device's capture stopped mid-execution has none.  Both are the same execution:
begun, not finished.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import attrs
import pytest

from nnemu.replay import extract_plan
from nnemu.scenario import load_scenario
from tests.commands import run_cli
from tests.unit.replay.helpers import QUICKSTART, REPO, record

TWO_APPS = REPO / "scenarios/two_apps_one_npu.yaml"


@pytest.fixture(scope="module", name="cut")
def _cut(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """two_apps_one_npu stopped at 1 s, the indexer's execution then in flight: its trace and
    report's apps."""
    scenario = attrs.evolve(load_scenario(TWO_APPS), duration_ms=1000)
    path = tmp_path_factory.mktemp("cut") / "cut.html"
    apps = record(scenario, path).data["apps"]
    assert apps["indexer"]["in_flight"] == 1  # (the case under test)
    return path, apps


def _nearest_rank(values: list[int], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(1, math.ceil(q * len(ordered))) - 1] / 1e6


def test_recorded_latencies_are_the_executions_the_run_completed(
    cut: tuple[Path, dict[str, Any]],
) -> None:
    """Each app's recorded latencies are the executions its report counts completed (the one the run's end cut is not), with the report's p50 and max."""
    path, report = cut
    plan = extract_plan(str(path))
    for app in plan.apps:
        mine = report[app.name]
        assert len(app.latencies_ns) == mine["completed"], app.name
        assert app.never_ended == mine["in_flight"], app.name
        assert len(app.arrivals_ns) == mine["submitted"], app.name
        latency = mine["latency_ms"]
        assert _nearest_rank(list(app.latencies_ns), 0.5) == pytest.approx(latency["p50"], rel=2e-3)
        assert max(app.latencies_ns) / 1e6 == pytest.approx(latency["max"], abs=0.002)
    assert plan.cut_ns is not None


def test_a_cut_trace_and_the_same_without_its_closing_rows_agree(
    cut: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    """The trace nnemu closed at the cut and the same trace without those end rows (a device's capture stopped mid-execution) give the same apps and drivers."""
    path, _ = cut
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    stamps = [
        line.split(": tracing_mark_write")[0].split()[-1]
        for line in lines
        if "tracing_mark_write" in line
    ]
    last = stamps[-1]
    kept = [line for line in lines if f" {last}: tracing_mark_write: E|" not in line]
    assert len(kept) < len(lines)
    stopped = tmp_path / "stopped.html"
    stopped.write_text("".join(kept), encoding="utf-8")
    closed, open_ = extract_plan(str(path)), extract_plan(str(stopped))
    assert closed.apps == open_.apps
    assert closed.drivers == open_.drivers
    assert open_.cut_ns is None
    (driver,) = closed.drivers
    assert driver.unfinished == 1


def test_the_json_trace_of_a_cut_run_is_read_alike(tmp_path: Path) -> None:
    """The Chrome JSON trace of the same cut run gives the same recorded latencies as its HTML trace."""
    scenario = attrs.evolve(load_scenario(TWO_APPS), duration_ms=1000)
    html, json_ = tmp_path / "cut.html", tmp_path / "cut.json"
    record(scenario, html)
    record(scenario, json_)
    a, b = extract_plan(str(html)), extract_plan(str(json_))
    assert a.cut_ns == b.cut_ns is not None
    assert [(x.latencies_ns, x.never_ended) for x in a.apps] == [
        (x.latencies_ns, x.never_ended) for x in b.apps
    ]


def test_a_run_that_ended_by_itself_has_nothing_cut(tmp_path: Path) -> None:
    """A run that finished its work (quickstart) has every execution recorded, nothing cut."""
    path = tmp_path / "quick.html"
    report = record(QUICKSTART, path).data["apps"]
    plan = extract_plan(str(path))
    assert plan.cut_ns is None
    for app in plan.apps:
        assert (len(app.latencies_ns), app.never_ended) == (report[app.name]["completed"], 0)


def _row(ts: float, kind: str, name: str = "", tid: int = 9) -> str:
    body = f"B|9|{name}" if kind == "B" else "E|9"
    return f"  app-{tid} (    9) [000] ...1 {ts:.6f}: tracing_mark_write: {body}\n"


def test_an_execution_ending_last_in_a_capture_with_sections_open_is_finished(
    tmp_path: Path,
) -> None:
    """A device's capture that ends on an execution's end row, with the app's own section still open, keeps that execution as finished."""
    rows = [
        _row(1.0, "B", "[NN_LA_PO]app"),
        _row(1.1, "B", "[NN_LA_PE]run"),
        _row(1.2, "E"),
        _row(1.3, "B", "[NN_LA_PE]run"),
        _row(1.4, "E"),
    ]
    path = tmp_path / "device.txt"
    path.write_text("# tracer: nop\n#\n" + "".join(rows), encoding="utf-8")
    plan = extract_plan(str(path))
    (app,) = plan.apps
    assert (len(app.latencies_ns), app.never_ended, plan.cut_ns) == (2, 0, None)


def test_replay_says_what_the_recorded_row_leaves_out(cut: tuple[Path, dict[str, Any]]) -> None:
    """The replay's plan and latency table say the indexer's execution did not finish in the trace, and its recorded row counts the completed ones."""
    path, report = cut
    code, out, err = run_cli("replay", str(path))
    assert code == 0, err
    submitted = report["indexer"]["submitted"]
    assert f"{submitted} executions from [NN_LA_PE] begins" in out
    assert "; 1 did not finish in the trace" in out
    assert "the executions ending there did not finish (indexer 1)" in out
    row = next(
        line for line in out.splitlines() if line.startswith("indexer ") and "recorded" in line
    )
    assert int(row.split()[2]) == report["indexer"]["completed"]
    assert f"indexer: 1 of {submitted} recorded executions did not finish in the trace" in out


def test_an_execution_that_ended_at_the_stop_on_its_own_is_finished(tmp_path: Path) -> None:
    """A run stopped at the instant an execution ended on its own (the stop at the time its thread reached) keeps it: only the end rows nnemu adds at the stop, after every other row in (pid, tid) order, are the cut."""
    rows = [
        _row(1.0, "B", "[NN_LA_PO]app", tid=9),
        _row(1.1, "B", "[NN_LA_PE]run", tid=12),
        _row(1.2, "E", tid=12),
        _row(1.3, "B", "[NN_LA_PE]run", tid=12),
        _row(1.4, "E", tid=12),  # ends on its own at the stop ...
        _row(1.4, "E", tid=9),  # ... and the stop closes the app's own section
    ]
    path = tmp_path / "stopped.txt"
    path.write_text("# tracer: nop\n#\n" + "".join(rows), encoding="utf-8")
    plan = extract_plan(str(path))
    (app,) = plan.apps
    assert (len(app.latencies_ns), app.never_ended, plan.cut_ns) == (2, 0, None)
    cut = [*rows[:4], _row(1.4, "E", tid=9), _row(1.4, "E", tid=12)]  # still running: closed
    path.write_text("# tracer: nop\n#\n" + "".join(cut), encoding="utf-8")
    plan = extract_plan(str(path))
    (app,) = plan.apps
    assert (len(app.latencies_ns), app.never_ended, plan.cut_ns) == (1, 1, 1_400_000_000)
