"""A p95 over fewer than 20 executions or a p99 over fewer than 100 is marked '*' with a footnote
in every human-readable table: it is the slowest execution, not a tail estimate."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from nnemu._tails import TAIL_MIN, footnote, slowest_only
from nnemu.app import LatencyHistogram
from tests.commands import run_cli

SCENARIO = """\
name: tails
seed: 3
devices:
  - name: npu
    hal_version: "1.3"
    type: accelerator
    performance:
      float32: {{exec_time: 0.3, power_usage: 0.4}}
      quant8: {{exec_time: 0.1, power_usage: 0.2}}
    cost: {{prepare_ms: 20, prepare_ms_per_op: 0.5, launch_us: 40, jitter: 0.05}}
models:
  - name: mobilenet
    preset: mobilenet_v1
    dtype: quant8
apps:
  - name: camera
    uid: 10050
    model: mobilenet
    workload: {workload}
"""

P95_P99 = (
    "* p95 over fewer than 20 executions, p99 over fewer than 100: "
    "the slowest execution, not a tail estimate"
)
P99 = "* p99 over fewer than 100 executions: the slowest execution, not a tail estimate"


def _scenario(tmp_path: Path, executions: int) -> Path:
    """A camera app running ``executions`` frames, 10 ms apart."""
    path = tmp_path / f"tails{executions}.yaml"
    workload = f"{{kind: periodic, period_ms: 10, executions: {executions}}}"
    path.write_text(SCENARIO.format(workload=workload))
    return path


def _row(out: str, name: str) -> str:
    return next(line for line in out.splitlines() if line.startswith(f"{name} "))


@pytest.mark.parametrize("quantile", ["p95", "p99"])
def test_thresholds_are_where_the_nearest_rank_stops_being_the_slowest(quantile: str) -> None:
    """slowest_only holds exactly for the counts whose histogram quantile is the slowest latency."""
    q = {"p95": 0.95, "p99": 0.99}[quantile]
    histogram = LatencyHistogram()
    for count in range(1, 2 * TAIL_MIN[quantile] + 1):
        histogram.add(count)  # latencies 1..count µs: the slowest is ``count``
        assert slowest_only(quantile, count) == (histogram.quantile_us(q) == count), count
    assert not slowest_only(quantile, 0)  # nothing completed: no figure to mark
    assert not slowest_only("p50", 5)


@pytest.mark.parametrize(
    ("executions", "cells", "note"),
    [
        (19, ("", "*", "*"), P95_P99),
        (20, ("", "", "*"), P99),
        (99, ("", "", "*"), P99),
        (100, ("", "", ""), None),
    ],
)
def test_run_summary_marks_the_boundary_counts(
    tmp_path: Path, executions: int, cells: tuple[str, ...], note: str | None
) -> None:
    """At 19/20 executions the p95 mark goes, at 99/100 the p99's; the footnote only with a mark."""
    report = tmp_path / "r.json"
    code, out, err = run_cli("run", str(_scenario(tmp_path, executions)), "--report", str(report))
    assert code == 0, err
    data = json.loads(report.read_text())["apps"]["camera"]
    assert data["completed"] == executions
    fields = _row(out, "camera").split()
    expected = [
        f"{data['latency_ms'][q]:.3f}{mark}"
        for q, mark in zip(("p50", "p95", "p99"), cells, strict=True)
    ]
    assert fields[6:9] == expected
    notes = [line for line in out.splitlines() if line.startswith("* ")]
    assert notes == ([note] if note else [])
    if note:  # right under the app table
        assert out.splitlines()[out.splitlines().index(_row(out, "camera")) + 1] == note


def test_marked_and_unmarked_rows_stay_aligned() -> None:
    """A marked cell's number ends where an unmarked one's does, and the errors column does not move."""
    from nnemu._summary import summary as _summary

    def app(completed: int) -> dict[str, object]:
        return {
            "submitted": completed,
            "completed": completed,
            "failed": 0,
            "dropped": 0,
            "in_flight": 0,
            "errors": {"OP_FAILED": 1},
            "compile_result": "NO_ERROR",
            "latency_ms": {"p50": 1.5, "p95": 12.25, "p99": 13.125},
        }

    data = {
        "scenario": "s",
        "seed": 1,
        "virtual_ms": 10.0,
        "apps": {"many": app(500), "few": app(10), "some": app(50)},
        "devices": {},
        "expectations": [],
    }
    out = io.StringIO()
    _summary(data, out)
    lines = out.getvalue().splitlines()
    many, few, some = (_row(out.getvalue(), name) for name in ("many", "few", "some"))
    for number in ("1.500", "12.250", "13.125", "OP_FAILED:1"):
        assert many.index(number) == few.index(number) == some.index(number), number
    assert few.count("*") == 2
    assert some.count("*") == 1
    assert "*" not in many
    assert lines.count(P95_P99) == 1  # one footnote for the table, naming what is marked


def test_replications_mark_a_quantile_short_in_any_replication(tmp_path: Path) -> None:
    """--replications marks a mean p99 when some replication completed fewer than 100, and not otherwise."""
    # Poisson arrivals at 100 Hz for 1 s: about 100 executions a seed, some under, some over.
    path = tmp_path / "poisson.yaml"
    path.write_text(
        SCENARIO.format(workload="{kind: poisson, rate_hz: 100}") + "duration_ms: 1000\n"
    )
    report = tmp_path / "r.json"
    code, out, err = run_cli("run", str(path), "--replications", "6", "--report", str(report))
    assert code == 0, err
    counts = json.loads(report.read_text())["metrics"]["apps.camera.completed"]["values"]
    assert min(counts) < 100 <= max(counts), counts  # the case the test is about
    assert _row(out, "camera").split()[8].endswith("*")
    assert (
        "* p99 over fewer than 100 executions in at least one replication: "
        "the slowest execution, not a tail estimate"
    ) in out.splitlines()
    code, out, err = run_cli("run", str(_scenario(tmp_path, 100)), "--replications", "2")
    assert code == 0, err
    assert "*" not in _row(out, "camera")
    assert "tail estimate" not in out


@pytest.mark.parametrize(("executions", "marked"), [(19, True), (20, False)])
def test_replay_marks_a_p95_over_fewer_than_20(
    tmp_path: Path, executions: int, marked: bool
) -> None:
    """The recorded-vs-replayed table marks p95 (beside max) at 19 executions, not at 20."""
    trace = tmp_path / "t.html"
    code, _, err = run_cli("run", str(_scenario(tmp_path, executions)), "--trace", str(trace))
    assert code == 0, err
    code, out, err = run_cli("replay", "-n", str(trace))
    assert code == 0, err
    lines = out.splitlines()
    recorded = next(line for line in lines if line.split()[1:2] == ["recorded"])
    replayed = next(line for line in lines if line.split()[:1] == ["replayed"])
    for row in (recorded, replayed):
        assert row.split()[-2].endswith("*") == marked, row
        assert row.split()[-1][-1].isdigit()  # max is never marked
    note = footnote(["p95"])
    assert (note in lines) == marked
    assert note == "* p95 over fewer than 20 executions: the slowest execution, not a tail estimate"
    # the replay's own summary table above it marks the same way as nnemu run's
    assert _row(out, "camera").split()[7].endswith("*") == marked


@pytest.mark.parametrize(
    ("executions", "p95", "p99"), [(19, True, True), (20, False, True), (100, False, False)]
)
def test_html_tables_mark_like_the_printed_summary(
    tmp_path: Path, executions: int, p95: bool, p99: bool
) -> None:
    """The page's app table marks the cells the printed summary marks, and its why-table's p95
    column too, each with its footnote only then."""
    page = tmp_path / "p.html"
    code, out, err = run_cli("run", str(_scenario(tmp_path, executions)), "--html", str(page))
    assert code == 0, err
    text = page.read_text(encoding="utf-8")
    row = re.search(r"camera</td>(.*?)</tr>", text)
    assert row
    cells = re.findall(r"<td>([^<]*)</td>", row.group(1))
    assert cells[8:11] == _row(out, "camera").split()[6:9]
    assert (cells[9].endswith("*"), cells[10].endswith("*")) == (p95, p99)
    assert ('id="summary-tails"' in text) == p99
    why = re.search(r'<table id="why-apps">.*?<tr data-app="camera">(.*?)</tr>', text)
    assert why
    assert re.findall(r"<td>([^<]*)</td>", why.group(1))[-3].endswith("*") == p95
    assert ('id="why-apps-tails"' in text) == p95
