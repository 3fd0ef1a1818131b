"""``nnemu compare``'s reading of its inputs, its --fail-if conditions and its exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nnemu.compare import (
    Point,
    Row,
    Side,
    compare,
    format_comparison,
    load_side,
    parse_condition,
)
from nnemu.replications import metric_samples, metric_values
from tests.commands import run_cli

INPUTS = Path(__file__).resolve().parents[1] / "golden" / "compare"
REPORT = json.loads((INPUTS / "reports" / "a.json").read_text())


def _row(point: dict, replication: int, report: dict | None, variant: str) -> str:
    status = "ok" if report is not None else "failed"
    row = {
        "error": None if report else "boom",
        "nnemu": "0.1.0",
        "point": point,
        "replication": replication,
        "report": report,
        "seed": replication,
        "status": status,
        "variant": variant,
    }
    return json.dumps(row, sort_keys=True) + "\n"


@pytest.mark.parametrize(
    ("text", "kind", "a", "b", "holds"),
    [
        ("apps.x.p99 > +5%", "percent", 10.0, 10.6, True),
        ("apps.x.p99 > +5%", "percent", 10.0, 10.4, False),
        ("apps.x.p99 < -10%", "percent", 10.0, 8.9, True),
        ("apps.x.p99 >= +0.5", "change", 10.0, 10.5, True),
        ("apps.x.p99 <= -1", "change", 10.0, 9.5, False),
        ("apps.x.p99 > 2.5", "value", 1.0, 2.6, True),
        ("apps.x.p99>2.5", "value", 9.0, 2.4, False),
        ("apps.x.rate > +5%", "percent", 0.0, 0.1, True),
    ],
)
def test_conditions(text: str, kind: str, a: float, b: float, holds: bool) -> None:
    """A plain VALUE bounds B, a signed one B - A, a percentage (B - A) / |A| (0 -> any: infinite)."""
    condition = parse_condition(text)
    assert condition.kind == kind
    assert condition.holds(a, b) is holds


@pytest.mark.parametrize("text", ["apps.x.p99", "apps.x.p99 == 3", "apps.x.p99 > fast", "> 5%"])
def test_malformed_condition_exits_two(text: str) -> None:
    """A --fail-if that is not PATH OP VALUE exits 2 naming the form expected."""
    code, out, err = run_cli(
        "compare", str(INPUTS / "reports/a.json"), str(INPUTS / "reports/b.json"), "--fail-if", text
    )
    assert (code, out) == (2, "")
    assert err.startswith(f"--fail-if {text!r}: expected PATH OP VALUE")


def test_fail_if_exit_codes() -> None:
    """Exit 1 when a condition holds, 0 when none does."""
    a, b = str(INPUTS / "reports/a.json"), str(INPUTS / "reports/b.json")
    assert run_cli("compare", a, b, "--fail-if", "apps.camera.latency_ms.p99 > +5%")[0] == 1
    assert run_cli("compare", a, b, "--fail-if", "apps.camera.latency_ms.p99 > +50%")[0] == 0


def test_fail_if_decides_on_the_exact_means_not_the_printed_ones() -> None:
    """A gate between a mean and its rounding is decided on the mean: B - A = +1.566 prints
    as +1.57 (its Welch interval's precision) yet '>= +1.57' does not hold."""
    a, b = str(INPUTS / "replications/a.json"), str(INPUTS / "replications/b.json")
    code, out, _ = run_cli("compare", a, b, "--fail-if", "apps.indexer.latency_ms.p50 >= +1.57")
    assert code == 0
    row = next(line for line in out.splitlines() if line.startswith("apps.indexer.latency_ms.p50"))
    assert row.split()[7:9] == ["+1.57", "+19.7%"]
    assert "  ok    apps.indexer.latency_ms.p50 >= +1.57" in out
    code, out, _ = run_cli("compare", a, b, "--fail-if", "apps.indexer.latency_ms.p50 >= +1.56")
    assert code == 1
    assert "HELD  apps.indexer.latency_ms.p50 >= +1.56  (B - A +1.57)" in out


@pytest.mark.parametrize(
    ("a", "b", "texts"),
    [
        # one run a side: 4 significant digits, trailing zeros kept; B - A to the finer place of the two
        ((11.296,), (14.432,), ("11.30", "-", "14.43", "-", "+3.14", "+27.8%")),
        ((0.711026,), (0.754232,), ("0.7110", "-", "0.7542", "-", "+0.0432", "+6.1%")),
        # replications: the interval's precision; B - A: that of its Welch interval
        (
            (0.0235, 0.0241, 0.0229, 0.0238),
            (0.0, 0.0, 0.001, 0.0),
            ("0.02357", "0.00082", "0.00025", "0.00080", "-0.02332", "-98.9%"),
        ),
        ((5.0, 5.0), (5.0, 5.0), ("5.000", "0", "5.000", "0", "0", "+0.0%")),
        # one run against several: B - A to the several's interval
        ((7.048,), (7.6, 9.152), ("7.048", "-", "8.4", "9.9", "+1.3", "+18.8%")),
    ],
)
def test_a_row_prints_the_precision_its_values_have(
    a: tuple[float, ...], b: tuple[float, ...], texts: tuple[str, ...]
) -> None:
    """A row's figures carry the digits the data supports, not six significant digits of a
    mean (0.0235929, -0.000333333)."""
    row = Row("apps.x.error_rate", a, b)
    printed = row.texts()
    assert (printed.a, printed.a_half, printed.b, printed.b_half) == texts[:4]
    assert (printed.difference, printed.change) == texts[4:]


def test_a_count_prints_whole_and_a_time_keeps_its_digits() -> None:
    """A count's whole value prints as it is (89 executions), a time's keeps its 4 significant
    digits even when whole (a p99 of exactly 12 ms is ``12.00``, not ``12`` beside ``13.90``)."""
    count = Row("apps.indexer.completed", (89.0,), (92.0,)).texts()
    assert (count.a, count.b, count.difference) == ("89", "92", "+3")
    time = Row("apps.indexer.latency_ms.p99", (12.0,), (13.9,)).texts()
    assert (time.a, time.b, time.difference) == ("12.00", "13.90", "+1.90")


def test_unknown_metric_exits_two() -> None:
    """A --metrics or --fail-if path neither side has exits 2 naming it and the file."""
    a, b = str(INPUTS / "reports/a.json"), str(INPUTS / "reports/b.json")
    code, _, err = run_cli("compare", a, b, "--metrics", "apps.camera.latency_ms.p42")
    assert code == 2
    assert err == f"--metrics apps.camera.latency_ms.p42: no such metric in {a}\n"
    code, _, err = run_cli("compare", a, b, "--fail-if", "apps.cam.completed > 1")
    assert code == 2
    assert err == f"--fail-if apps.cam.completed: no such metric in {a}\n"


def test_malformed_json_gives_file_and_line(tmp_path: Path) -> None:
    """A report with broken JSON exits 2 with file:line: what is wrong."""
    bad = tmp_path / "bad.json"
    bad.write_text('{\n  "apps": {,\n}\n')
    code, out, err = run_cli("compare", str(bad), str(INPUTS / "reports/b.json"))
    assert (code, out) == (2, "")
    assert err.startswith(f"{bad}:2: expected JSON: ")


def test_json_that_is_not_a_report_exits_two(tmp_path: Path) -> None:
    """Valid JSON that is neither a report nor a replications report is refused."""
    other = tmp_path / "other.json"
    other.write_text('{"rows": []}\n')
    code, _, err = run_cli("compare", str(other), str(INPUTS / "reports/b.json"))
    assert code == 2
    assert err == (
        f"{other}: expected an nnemu report (with apps and devices) or a replications report\n"
    )


def test_missing_input_and_plain_directory_exit_two(tmp_path: Path) -> None:
    """A missing file and a directory without results.jsonl exit 2 with one line each."""
    b = str(INPUTS / "reports/b.json")
    code, _, err = run_cli("compare", str(tmp_path / "nope.json"), b)
    assert (code, err) == (2, f"{tmp_path / 'nope.json'}: no such file\n")
    code, _, err = run_cli("compare", str(tmp_path), b)
    assert (code, err) == (
        2,
        f"{tmp_path}: not a sweep directory (no results.jsonl) nor a report\n",
    )


def test_sweep_line_errors_give_the_line(tmp_path: Path) -> None:
    """A bad line of results.jsonl is reported as results.jsonl:LINE."""
    (tmp_path / "results.jsonl").write_text(
        _row({"k": 1}, 0, REPORT, "a" * 16) + '{"point": 3, "variant": "b"}\n'
    )
    code, _, err = run_cli("compare", str(tmp_path), str(INPUTS / "reports/b.json"))
    assert code == 2
    assert err == f"{tmp_path / 'results.jsonl'}:2: point: expected an object\n"


def test_sweep_groups_replications_and_skips_failures(tmp_path: Path) -> None:
    """Runs of one point are its replications in order; failed, repeated and cut-off lines don't count."""
    slow = json.loads(json.dumps(REPORT))
    slow["apps"]["camera"]["latency_ms"]["p99"] = 99.0
    (tmp_path / "results.jsonl").write_text(
        _row({"k": 2}, 1, slow, "1" * 16)
        + _row({"k": 2}, 0, REPORT, "0" * 16)
        + _row({"k": 2}, 0, slow, "0" * 16)  # the same variant again (a resumed sweep)
        + _row({"k": 10}, 0, None, "2" * 16)
        + _row({"k": 10}, 1, REPORT, "3" * 16)
        + '{"point": {"k": 1'  # the sweep was killed while writing this line
    )
    side = load_side(str(tmp_path))
    assert side.kind == "sweep"
    assert side.skipped == 2
    assert [point.point for point in side.points.values()] == [{"k": 2}, {"k": 10}]
    first = next(iter(side.points.values()))
    assert first.samples["apps.camera.latency_ms.p99"] == (11.904, 99.0)


def test_sweep_points_follow_the_experiment_order(tmp_path: Path) -> None:
    """With the sweep's experiment.yaml, points come in its order (first varied key slowest,
    as summary.txt lists them), their keys too; a point outside it comes after, by value."""
    (tmp_path / "experiment.yaml").write_text(
        "vary:\n  sched: [fifo, global]\n  rate: [10.0, 2.0]\n"
    )
    points = [
        {"rate": 2.0, "sched": "global"},
        {"rate": 10.0, "sched": "global"},
        {"rate": 2.0, "sched": "fifo"},
        {"rate": 10.0, "sched": "fifo"},
        {"rate": 5.0, "sched": "fifo"},
    ]
    (tmp_path / "results.jsonl").write_text(
        "".join(_row(point, 0, REPORT, f"{n:016x}") for n, point in enumerate(points))
    )
    side = load_side(str(tmp_path))
    assert [list(point.point.items()) for point in side.points.values()] == [
        [("sched", "fifo"), ("rate", 10.0)],
        [("sched", "fifo"), ("rate", 2.0)],
        [("sched", "global"), ("rate", 10.0)],
        [("sched", "global"), ("rate", 2.0)],
        [("rate", 5.0), ("sched", "fifo")],
    ]


def test_metric_values_leave_out_idle_latency_and_the_seed() -> None:
    """An app that completed nothing has no latency metrics; seed and non-numbers are not metrics."""
    idle = json.loads(json.dumps(REPORT))
    idle["apps"]["camera"]["completed"] = 0
    idle["apps"]["camera"]["latency_split_ms"] = {"compute": 0.0, "ipc": 0.0}
    values = metric_values(idle)
    assert "apps.camera.latency_ms.p50" not in values
    assert not any(path.startswith("apps.camera.latency_split_ms.") for path in values)
    assert "apps.indexer.latency_ms.p50" in values
    assert "seed" not in values
    assert "wall_s" not in values
    assert values["apps.camera.completed"] == 0.0


def test_metric_samples_count_missing_error_codes_as_zero() -> None:
    """An error code seen in one run counts 0 in the runs where it did not happen."""
    failing = json.loads(json.dumps(REPORT))
    failing["apps"]["camera"]["errors"] = {"OP_FAILED": 3}
    samples = metric_samples([REPORT, failing])
    assert samples["apps.camera.errors.OP_FAILED"] == [0.0, 3.0]


@pytest.mark.parametrize("side", ["reports/a.json", "replications/a.json", "sweeps/a"])
def test_a_side_compared_with_itself_shows_no_difference(side: str) -> None:
    """Every row of a self-comparison is 0, never significant, and a '> +0%' gate passes."""
    path = str(INPUTS / side)
    code, out, err = run_cli("compare", path, path, "--fail-if", "apps.camera.latency_ms.p99 > +0%")
    assert (code, err) == (0, "")
    rows = [line.split() for line in out.splitlines() if line.startswith(("apps.", "devices."))]
    assert len(rows) >= 7
    assert all(row[-3:-1] == ["0", "+0.0%"] for row in rows)
    assert all(row[-1] in ("-", "1.000") for row in rows)


def test_hidden_metrics_are_counted_in_words() -> None:
    """The line under a table counts the default metrics left out as zero, singular for one."""
    samples = {"apps.a.error_rate": (0.0,), "apps.a.latency_ms.p99": (5.0,)}
    side = Side("r.json", "report", {"{}": Point({}, samples, 1)})
    text = format_comparison(compare(side, side))
    assert "\n1 metric is 0 in every run on both sides: not shown\n" in text
    samples = {**samples, "devices.d.busy_fraction": (0.0,)}
    side = Side("r.json", "report", {"{}": Point({}, samples, 1)})
    text = format_comparison(compare(side, side))
    assert "\n2 metrics are 0 in every run on both sides: not shown\n" in text


def test_a_replications_side_counts_its_runs_in_words() -> None:
    """The header names a replications side by its count, singular for one."""
    samples = {"apps.a.latency_ms.p99": (5.0,)}
    one = Side("r1.json", "replications", {"{}": Point({}, samples, 1)})
    assert one.description == "1 replication"
    two = Side("r2.json", "replications", {"{}": Point({}, {"x": (1.0, 2.0)}, 2)})
    assert two.description == "2 replications"


def test_default_metrics_one_side_lacks_are_named() -> None:
    """A latency only B measured (A's app completed nothing) is named under the table, not
    dropped without a word; naming it with --metrics says why A has none."""
    a = Side("a.json", "report", {"{}": Point({}, {"apps.p.completed": (0.0,)}, 1)})
    b_samples = {"apps.p.completed": (10.0,), "apps.p.latency_ms.p99": (23.0,)}
    b = Side("b.json", "report", {"{}": Point({}, b_samples, 1)})
    text = format_comparison(compare(a, b))
    assert "\nonly B measures (not compared): apps.p.latency_ms.p99\n" in text
    with pytest.raises(ValueError, match=r"not measured in a\.json: p completed no execution"):
        compare(a, b, metrics=["apps.p.latency_ms.p99"])


def _tail_side(completed: tuple[float, ...]) -> Side:
    """A side whose camera completed ``completed`` executions in its runs (latency where > 0)."""
    latency = tuple(5.0 + i for i, n in enumerate(completed) if n)
    samples = {
        "apps.camera.completed": completed,
        **{f"apps.camera.latency_ms.{q}": latency for q in ("p50", "p95", "p99")},
    }
    kind = "report" if len(completed) == 1 else "replications"
    return Side(f"{kind}.json", kind, {"{}": Point({}, samples, len(completed))})


def _tail_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if "not a tail estimate" in line]


def test_tail_quantiles_over_too_few_executions_are_named_under_the_table() -> None:
    """A p99 over 99 executions in some runs is named with its runs, a p99 over 100 is not."""
    text = format_comparison(compare(_tail_side((99.0,)), _tail_side((100.0, 99.0, 0.0, 99.0))))
    assert _tail_lines(text) == [
        "the slowest execution, not a tail estimate: apps.camera.latency_ms.p99 "
        "(fewer than 100 executions in A and 2 of 3 runs of B with a completion)"
    ]
    table = text.splitlines()
    assert (
        table.index(_tail_lines(text)[0])
        == table.index(
            next(line for line in table if line.startswith("apps.camera.latency_ms.p99"))
        )
        + 1
    )  # right under the table
    text = format_comparison(compare(_tail_side((19.0, 19.0)), _tail_side((20.0, 20.0))))
    assert _tail_lines(text) == [
        "the slowest execution, not a tail estimate: apps.camera.latency_ms.p95 "
        "(fewer than 20 executions in both runs of A); apps.camera.latency_ms.p99 "
        "(fewer than 100 executions in both runs of A and both runs of B)"
    ]
    text = format_comparison(compare(_tail_side((50.0, 120.0, 50.0)), _tail_side((100.0,))))
    assert _tail_lines(text) == [
        "the slowest execution, not a tail estimate: apps.camera.latency_ms.p99 "
        "(fewer than 100 executions in 2 of 3 runs of A)"
    ]
    text = format_comparison(compare(_tail_side((100.0,)), _tail_side((100.0, 250.0))))
    assert _tail_lines(text) == []
