"""Replay counts executions, not attempts: nnemu's execution marks (``nnemu.replay._attempts``).

An app that retries a refused execution makes an ``[NN_LA_PE]`` section per attempt; one
whose frame waited for a thread begins its section after the frame arrived; a failed
execution has sections like a completed one.  nnemu writes a mark for each
(``nnemu::retry CODE``, ``nnemu::waited N ns``, ``nnemu::failed CODE``), so the recorded
row of a replay counts and times what the run's report does: completed executions, from
arrival to result.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from nnemu import run
from nnemu.parser import parse_file
from nnemu.replay import build_replay, extract_plan
from nnemu.replay._build import describe_plan
from tests.unit.replay.helpers import REPO, record

MARKED = ("qos_busy_retries", "qos_deadline_storm", "qos_driver_crash")


def _quantile_ms(sorted_ns: list[int], q: float) -> float:
    """Nearest-rank quantile in ms, rounded as the report rounds it."""
    return round(sorted_ns[max(1, math.ceil(q * len(sorted_ns))) - 1] / 1e6, 3)


@pytest.mark.parametrize("suffix", [".json", ".html", ".pftrace"])
@pytest.mark.parametrize("name", MARKED)
def test_recorded_row_is_the_reports(name: str, suffix: str, tmp_path: Path) -> None:
    """Each app's recorded n, p50 and p95 equal the run's report (completed executions,
    arrival to result, retries and waits included), in every trace format."""
    path = tmp_path / f"{name}{suffix}"
    report = record(REPO / "scenarios" / f"{name}.yaml", path)
    apps: dict[str, Any] = dict(report.data["apps"])
    plan = extract_plan(str(path))
    assert sorted(app.name for app in plan.apps) == sorted(apps)
    for app in plan.apps:
        was = apps[app.name]
        latencies = sorted(app.latencies_ns)
        assert len(latencies) == was["completed"], app.name
        assert len(app.arrivals_ns) == was["submitted"], app.name
        assert app.failed == was["failed"], app.name
        if latencies:
            assert _quantile_ms(latencies, 0.5) == was["latency_ms"]["p50"], app.name
            assert _quantile_ms(latencies, 0.95) == was["latency_ms"]["p95"], app.name


def test_busy_retries_figures(tmp_path: Path) -> None:
    """qos_busy_retries: 80 executions, 100 of their attempts retried (it was 180 executions
    with a p50 of one refused attempt, 0.116 ms, against the run's 11.588)."""
    path = tmp_path / "busy.json"
    record(REPO / "scenarios/qos_busy_retries.yaml", path)
    (app,) = extract_plan(str(path)).apps
    latencies = sorted(app.latencies_ns)
    assert len(app.arrivals_ns) == len(latencies) == 80
    assert (_quantile_ms(latencies, 0.5), _quantile_ms(latencies, 0.95)) == (11.588, 23.06)
    assert app.retried == 100
    lines = describe_plan(extract_plan(str(path)))
    assert "    nnemu's marks: 100 later attempts joined to their execution (nnemu::retry)" in lines


def test_refused_attempts_do_not_set_the_device_speed(tmp_path: Path) -> None:
    """qos_busy_retries and qos_deadline_storm: the driver times of refused attempts (a few
    µs) count for no app, so the device's speed comes from the executions that completed
    (their compute within 5% of the run's: the jitter draws are the replay's own, 5.501 ms
    against 5.716); qos_busy_retries then replays within 15% of its
    recorded p50 and p95 (the refusals and retries of a one-place queue come back as the
    wait in the device's queue). It replayed a 0.118 ms device."""
    runs = {}
    for name in ("qos_busy_retries", "qos_deadline_storm"):
        path = tmp_path / f"{name}.json"
        was = record(REPO / "scenarios" / f"{name}.yaml", path).data["apps"]
        replayed = run(build_replay(extract_plan(str(path))).scenario).data["apps"]
        runs[name] = was, replayed
        for app, figures in was.items():
            if figures["completed"]:
                compute = figures["latency_split_ms"]["compute"]
                now = replayed[app]["latency_split_ms"]["compute"]
                assert now == pytest.approx(compute, rel=0.05), (name, app)
    was, replayed = runs["qos_busy_retries"]
    for q in ("p50", "p95"):
        recorded = was["batcher"]["latency_ms"][q]
        assert replayed["batcher"]["latency_ms"][q] == pytest.approx(recorded, rel=0.15)


@pytest.mark.parametrize(
    ("name", "mark"),
    [
        ("qos_deadline_storm", "|nnemu::failed MISSED_DEADLINE_TRANSIENT"),
        ("qos_deadline_storm", "|nnemu::qos priority=MEDIUM execution_timeout_ns=15000000"),
        ("qos_driver_crash", "|nnemu::died"),
    ],
)
def test_marks_leave_the_parsers_tables_alone(name: str, mark: str, tmp_path: Path) -> None:
    """Android's parser ignores a section whose name has no NNTRACE tag and no ``HIDL``
    (frameworks/ml/nn/tools/systrace_parser/parser/tracker.py), and so does nnemu's: the
    trace without the marks (execution, QoS and death marks) gives the same tables."""
    path = tmp_path / f"{name}.html"
    record(REPO / "scenarios" / f"{name}.yaml", path)
    text = path.read_text(encoding="utf-8")
    assert mark in text
    bare = tmp_path / "bare.html"
    bare.write_text(_without_marks(text), encoding="utf-8")
    assert len(bare.read_text(encoding="utf-8")) < len(text)
    assert _tables(path) == _tables(bare)


def _without_marks(text: str) -> str:
    """``text`` without the ``nnemu::`` marks' begin rows and the end rows that close them."""
    kept = []
    stacks: dict[str, list[bool]] = {}
    for line in text.splitlines(keepends=True):
        if "tracing_mark_write: " not in line:
            kept.append(line)
            continue
        tid = line.split("(")[0].rsplit("-", 1)[-1].strip()
        stack = stacks.setdefault(tid, [])
        payload = line.split("tracing_mark_write: ", 1)[1]
        if payload.startswith("B|"):
            mark = payload.split("|", 2)[2].startswith("nnemu::")
            stack.append(mark)
            if mark:
                continue
        elif payload.startswith("E|") and stack and stack.pop():
            continue
        kept.append(line)
    return "".join(kept)


def _tables(path: Path) -> list[str]:
    return [repr(run) for run in parse_file(path).runs]
