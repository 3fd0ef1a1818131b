"""The local engine and the sweep directory: results, determinism, failures, crashes, resume."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from nnemu import run
from nnemu._text import interval_text
from nnemu.overrides import apply_overrides
from nnemu.report import lookup
from nnemu.stats import mean_interval
from nnemu.sweep import load_experiment
from nnemu.sweep._results import summary as summary_text
from nnemu.sweep._worker import Chunk, Job, nnemu_version, run_chunk
from tests.commands import run_cli
from tests.unit.sweep.sweeps import SHARES_SMALL_SWEEP, SMALL, copy_small_sweep, results, write

pq = pytest.importorskip("pyarrow.parquet")


def _sweep(tmp_path: Path, out: str, *extra: str, text: str | None = None) -> tuple[int, str, str]:
    path = write(tmp_path) if text is None else write(tmp_path, text)
    return run_cli("sweep", str(path), "--out", str(tmp_path / out), *extra)


@SHARES_SMALL_SWEEP
def test_one_and_two_workers_write_the_same_table(
    tmp_path: Path, small_sweep: tuple[Path, str]
) -> None:
    """results.parquet and summary.txt are the same bytes whether 1 or 2 workers ran the sweep."""
    code1, out1, _ = _sweep(tmp_path, "one", "--workers", "1")
    two, out2 = small_sweep
    assert code1 == 0
    assert (tmp_path / "one" / "results.parquet").read_bytes() == (
        two / "out" / "results.parquet"
    ).read_bytes()
    # (The summary and the output name the experiment file and the directory.)
    summary = (tmp_path / "one" / "summary.txt").read_text()
    assert summary.replace(str(tmp_path), str(two)) == (two / "out" / "summary.txt").read_text()
    assert (
        out1.replace(f"{tmp_path / 'one'}", f"{two / 'out'}").replace(str(tmp_path), str(two))
        == out2
    )


@SHARES_SMALL_SWEEP
def test_results_jsonl_follows_the_contract(tmp_path: Path, small_sweep: tuple[Path, str]) -> None:
    """Each line has the contract's keys, sorted, and a report equal to a plain run's."""
    copy_small_sweep(small_sweep, tmp_path)
    lines = (tmp_path / "out" / "results.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    assert len(rows) == 12
    assert all(
        line == json.dumps(row, sort_keys=True) for line, row in zip(lines, rows, strict=True)
    )
    experiment = load_experiment(tmp_path / "exp.yaml")
    assert {row["variant"] for row in rows} == {v.key for v in experiment.variants()}
    row = rows[-1]
    assert set(row) == {
        "error",
        "nnemu",
        "point",
        "replication",
        "report",
        "seed",
        "status",
        "variant",
    }
    assert (row["status"], row["error"], row["report"]["wall_s"]) == ("ok", None, None)
    variant = next(v for v in experiment.variants() if v.key == row["variant"])
    assert (row["point"], row["replication"], row["seed"]) == (
        variant.point,
        variant.replication,
        variant.seed,
    )
    scenario = apply_overrides(experiment.scenario, variant.overrides)
    assert row["report"] == json.loads(run(scenario, seed=variant.seed).to_json())


@SHARES_SMALL_SWEEP
def test_the_table_has_a_row_per_variant_and_app(
    tmp_path: Path, small_sweep: tuple[Path, str]
) -> None:
    """The Parquet table: varied keys as columns, flattened app metrics, device metrics."""
    copy_small_sweep(small_sweep, tmp_path)
    table = pq.read_table(tmp_path / "out" / "results.parquet").to_pylist()
    assert len(table) == 24
    first = table[0]
    assert first["devices.npu.scheduler"] == "fifo"
    assert first["apps.indexer.workload.rate_hz"] == 10.0
    assert (first["app"], first["replication"], first["status"]) == ("camera", 0, "ok")
    assert first["latency_ms.p99"] > 0
    assert 0 < first["devices.npu.busy_fraction"] < 1
    rows = {row["variant"]: row for row in results(tmp_path / "out")}
    for record in table:
        report = rows[record["variant"]]["report"]
        assert record["completed"] == report["apps"][record["app"]]["completed"]


@SHARES_SMALL_SWEEP
def test_summary_gives_the_mean_and_interval_of_each_point(
    tmp_path: Path, small_sweep: tuple[Path, str]
) -> None:
    """summary.txt's figure for a point is nnemu.stats.mean_interval over its replications."""
    copy_small_sweep(small_sweep, tmp_path)
    rows = [
        r
        for r in results(tmp_path / "out")
        if r["point"]["devices.npu.scheduler"] == "fifo"
        and r["point"]["apps.indexer.workload.rate_hz"] == 60.0
    ]
    values = [lookup(r["report"], ("apps", "camera", "latency_ms", "p99")) for r in rows]
    interval = mean_interval([v for v in values if v is not None])
    summary = (tmp_path / "out" / "summary.txt").read_text()
    line = next(line for line in summary.splitlines() if line.startswith("fifo") and " 60 " in line)
    mean, half = interval_text(interval.mean, interval.half_width)
    assert f"{mean} ± {half}" in line or f"{mean}* ± {half}" in line
    assert line.split()[2:4] == ["3", "0"]


def test_latency_of_an_app_that_completed_nothing_is_missing_not_zero(tmp_path: Path) -> None:
    """An app with no completion has no latency in summary.txt ("-") nor in the table (null),
    where the report's placeholder 0 would pass for the fastest result; a point of one run
    has no interval ("± -", not "± 0")."""
    scenario = Path(__file__).resolve().parents[3] / "scenarios" / "qos_model_too_large.yaml"
    text = (
        f"scenario: {scenario}\n"
        "vary:\n  devices.tiny-npu.memory_mb: [1, 4096]\n"
        "metrics: [apps.pinned.latency_ms.p99, apps.pinned.completed]\n"
    )
    assert _sweep(tmp_path, "out", text=text)[0] == 0
    lines = (tmp_path / "out" / "summary.txt").read_text().splitlines()
    starved = next(line for line in lines if line.startswith("1 "))
    assert starved.split()[1:] == ["1", "0", "-", "0", "±", "-"]  # one run: no interval
    fitted = next(line for line in lines if line.startswith("4096 "))
    assert fitted.split()[3] != "-"
    table = pq.read_table(tmp_path / "out" / "results.parquet").to_pylist()
    pinned = {r["devices.tiny-npu.memory_mb"]: r for r in table if r["app"] == "pinned"}
    assert pinned[1]["completed"] == 0
    assert pinned[1]["latency_ms.p99"] is None
    assert pinned[1]["latency_split_ms.compute"] is None
    assert pinned[4096]["latency_ms.p99"] > 0


def test_a_varied_key_that_cannot_change_any_run_is_named(tmp_path: Path) -> None:
    """A varied key that no point lets change the result (a priority under the per-app
    scheduler) gets one warning that says why; one that matters at some point gets none."""
    scenario = Path(__file__).resolve().parents[3] / "scenarios" / "two_apps_one_npu.yaml"
    text = (
        f"scenario: {scenario}\nset: {{duration_ms: 200}}\n"
        "vary:\n  apps.camera.priority: [low, high]\n"
        "  devices.npu.scheduler: [per_app_priority, fifo]\n"
        "metrics: [apps.camera.latency_ms.p99]\n"
    )
    code, _, err = _sweep(tmp_path, "out", text=text)
    assert code == 0
    assert err == (
        "warning: vary apps.camera.priority cannot change the result at any point: "
        "priority only orders an app's own executions under per_app_priority (npu), and no "
        "other app of uid 10050 there has another priority; set "
        "devices.npu.scheduler=global_priority to compare across apps\n"
    )
    code, _, err = _sweep(
        tmp_path, "out2", text=text.replace("per_app_priority, fifo", "global_priority")
    )
    assert code == 0
    assert "warning" not in err


def test_summary_header_counts_in_the_singular(tmp_path: Path) -> None:
    """A one-point, one-replication sweep's summary says "1 point x 1 replication (seed S)"."""
    text = SMALL.replace("[fifo, global_priority]", "[fifo]").replace("steps: 2", "steps: 1")
    experiment = load_experiment(write(tmp_path, text.replace("replications: 3", "seed: 7")))
    header = summary_text(experiment, []).splitlines()[1]
    assert header.startswith("1 point x 1 replication (seed 7); 0 of 1 variants done")


def _fake_rows(experiment, completed: dict[float, list[int]]) -> list[dict]:
    """Rows of ok runs at each point of ``experiment`` whose camera completed the given
    numbers of executions (one run each), with made-up figures."""
    rows = []
    for variant in experiment.variants():
        counts = completed.get(variant.point["apps.indexer.workload.rate_hz"], [])
        if variant.point["devices.npu.scheduler"] != "fifo" or variant.replication >= len(counts):
            continue
        report = {
            "apps": {
                "camera": {
                    "completed": counts[variant.replication],
                    "latency_ms": {"p99": 20.7654 + variant.replication},
                }
            },
            "devices": {"npu": {"busy_fraction": 0.2109 + variant.replication / 1000}},
        }
        rows.append(
            {"variant": variant.key, "point": variant.point, "status": "ok", "report": report}
        )
    return rows


def test_summary_rounds_each_mean_to_its_intervals_precision(tmp_path: Path) -> None:
    """summary.txt prints a mean and its half-width to two significant digits of the
    half-width, with the ± signs of a column aligned."""
    experiment = load_experiment(write(tmp_path))
    rows = _fake_rows(experiment, {10.0: [200, 200, 200], 60.0: [200, 200]})
    lines = summary_text(experiment, rows).splitlines()
    low = next(line for line in lines if line.startswith("fifo") and " 10 " in line)
    high = next(line for line in lines if line.startswith("fifo") and " 60 " in line)
    # 20.7654, 21.7654, 22.7654: mean 21.7654, half-width 2.48414...; two values: 12.7062...
    assert low.split()[4:] == ["21.8", "±", "2.5", "0.2119", "±", "0.0025"]
    assert high.split()[4:] == ["21.3", "±", "6.4", "0.2114", "±", "0.0064"]
    assert low.index("±") == high.index("±")
    assert "*" not in "\n".join(lines)


def test_summary_marks_a_p99_that_was_the_slowest_execution_in_some_replication(
    tmp_path: Path,
) -> None:
    """A point's p99 mean is marked, with the footnote, when at least one replication counted
    fewer than 100 executions (nnemu._tails' rule), and not when every one counted 100."""
    experiment = load_experiment(write(tmp_path))
    rows = _fake_rows(experiment, {10.0: [100, 99, 100], 60.0: [100, 100, 100]})
    lines = summary_text(experiment, rows).splitlines()
    low = next(line for line in lines if line.startswith("fifo") and " 10 " in line)
    high = next(line for line in lines if line.startswith("fifo") and " 60 " in line)
    assert low.split()[4:7] == ["21.8*", "±", "2.5"]
    assert high.split()[4:7] == ["21.8", "±", "2.5"]
    assert low.index("±") == high.index("±")
    assert lines[-1] == (
        "* p99 over fewer than 100 executions in at least one replication of the point: "
        "the slowest execution, not a tail estimate"
    )


def test_a_variant_that_fails_is_a_row_and_the_sweep_goes_on() -> None:
    """A worker returns a failed row with the error's message instead of raising."""
    scenario = Path(__file__).resolve().parents[3] / "scenarios" / "two_apps_one_npu.yaml"
    good = Job(key="a" * 16, point={}, replication=0, seed=1, overrides=("duration_ms=100",))
    bad = Job(
        key="b" * 16, point={}, replication=0, seed=1, overrides=("apps.nobody.priority=high",)
    )
    chunk = Chunk(
        scenario_text=scenario.read_text(),
        scenario_path=str(scenario),
        version=nnemu_version(),
        jobs=(bad, good),
    )
    rows = pickle.loads(pickle.dumps(run_chunk(chunk)))
    assert [row["status"] for row in rows] == ["failed", "ok"]
    assert "apps.nobody: expected the name of an app" in rows[0]["error"]
    assert rows[0]["report"] is None


def test_a_worker_that_dies_is_replaced_and_its_variant_marked_crashed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A variant whose process dies twice is 'crashed'; every other variant still runs, once."""
    victim = load_experiment(write(tmp_path)).variants()[4].key
    monkeypatch.setenv("NNEMU_SWEEP_TEST_CRASH", victim)
    code, out, _ = _sweep(tmp_path, "out", "--workers", "2")
    assert code == 0
    rows = results(tmp_path / "out")
    assert len(rows) == 12
    assert len({row["variant"] for row in rows}) == 12
    crashed = [row for row in rows if row["status"] != "ok"]
    assert [(row["variant"], row["status"], row["report"]) for row in crashed] == [
        (victim, "crashed", None)
    ]
    assert "11 ok, 0 failed, 1 crashed" in out


def test_resume_runs_a_crashed_variant_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A variant whose worker died is run again by --resume (the crash was not the variant's
    result); the table then has it ok, and results.jsonl keeps the crashed row before it."""
    victim = load_experiment(write(tmp_path)).variants()[4].key
    monkeypatch.setenv("NNEMU_SWEEP_TEST_CRASH", victim)
    assert _sweep(tmp_path, "out", "--workers", "2")[0] == 0
    monkeypatch.delenv("NNEMU_SWEEP_TEST_CRASH")
    code, out, err = _sweep(tmp_path, "out", "--workers", "2", "--resume")
    assert code == 0
    assert "resuming: 11 of 12 variants already done; running again 1 crashed\n" in err
    assert "12 ok, 0 failed, 0 crashed" in out
    rows = results(tmp_path / "out")
    assert [row["status"] for row in rows if row["variant"] == victim] == ["crashed", "ok"]
    assert len(rows) == 13
    table = pq.read_table(tmp_path / "out" / "results.parquet").to_pydict()
    assert set(table["status"]) == {"ok"}


@SHARES_SMALL_SWEEP
def test_resume_keeps_a_failed_variant_unless_asked(
    tmp_path: Path, small_sweep: tuple[Path, str]
) -> None:
    """A failed variant (its scenario raised: it would again) is kept by --resume and run
    again with --retry-failed, which implies --resume."""
    copy_small_sweep(small_sweep, tmp_path)
    jsonl = tmp_path / "out" / "results.jsonl"
    rows = results(tmp_path / "out")
    failed = {**rows[3], "status": "failed", "error": "ValueError: made up", "report": None}
    jsonl.write_text("".join(json.dumps(row) + "\n" for row in [*rows[:3], failed, *rows[4:]]))
    code, out, err = _sweep(tmp_path, "out", "--resume")
    assert code == 0
    assert (
        "resuming: 12 of 12 variants already done (1 failed kept: --retry-failed runs them again)"
        in err
    )
    assert "11 ok, 1 failed, 0 crashed" in out
    assert len(results(tmp_path / "out")) == 12
    code, out, err = _sweep(tmp_path, "out", "--retry-failed")
    assert code == 0
    assert "resuming: 11 of 12 variants already done; running again 1 failed\n" in err
    assert "12 ok, 0 failed, 0 crashed" in out
    again = results(tmp_path / "out")
    assert [row["status"] for row in again if row["variant"] == failed["variant"]] == [
        "failed",
        "ok",
    ]
    assert again[-1]["report"] == rows[3]["report"]  # the same seed: the same result


@SHARES_SMALL_SWEEP
def test_resume_runs_only_what_is_missing(tmp_path: Path, small_sweep: tuple[Path, str]) -> None:
    """After an interruption (a cut last line too), --resume runs the rest and gives the same table."""
    copy_small_sweep(small_sweep, tmp_path, "part")
    jsonl = tmp_path / "part" / "results.jsonl"
    lines = jsonl.read_text().splitlines(keepends=True)
    kept = lines[:5]
    jsonl.write_text("".join(kept) + lines[5][:40])
    (tmp_path / "part" / "results.parquet").unlink()
    code, _, err = _sweep(tmp_path, "part", "--resume")
    assert code == 0
    assert "resuming: 5 of 12 variants already done" in err
    after = jsonl.read_text().splitlines(keepends=True)
    assert after[:5] == kept
    assert len(after) == 12
    full = pq.read_table(small_sweep[0] / "out" / "results.parquet")
    assert pq.read_table(tmp_path / "part" / "results.parquet").equals(full)


@SHARES_SMALL_SWEEP
def test_a_directory_with_results_needs_resume(
    tmp_path: Path, small_sweep: tuple[Path, str]
) -> None:
    """Running again into a directory with results is refused unless --resume is given."""
    copy_small_sweep(small_sweep, tmp_path)
    code, _, err = _sweep(tmp_path, "out")
    assert code == 2
    assert "already holds results of a sweep; add --resume" in err
    code, out, err = _sweep(tmp_path, "out", "--resume")
    assert code == 0
    assert "12 of 12 variants done" in out


@SHARES_SMALL_SWEEP
def test_another_experiment_or_version_is_not_mixed_in(
    tmp_path: Path, small_sweep: tuple[Path, str]
) -> None:
    """A directory holding another experiment, or another nnemu's results, is refused."""
    copy_small_sweep(small_sweep, tmp_path)
    other = (tmp_path / "exp.yaml").read_text().replace("replications: 3", "replications: 2")
    code, _, err = _sweep(tmp_path, "out", "--resume", text=other)
    assert code == 2
    assert "another experiment (changed: replications)" in err
    recorded = tmp_path / "out" / "experiment.yaml"
    recorded.write_text(recorded.read_text().replace("nnemu: ", "nnemu: '0.0.1' #", 1))
    code, _, err = _sweep(tmp_path, "out", "--resume")
    assert code == 2
    assert "run by nnemu 0.0.1" in err


def test_without_pyarrow_the_table_is_csv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without pyarrow the same table is written as results.csv, and stderr says so."""
    import sys

    monkeypatch.setitem(sys.modules, "pyarrow", None)
    code, out, err = _sweep(tmp_path, "out", "--workers", "1")
    assert code == 0
    assert "pip install 'nnemu[sweep]'" in err
    header, *lines = (tmp_path / "out" / "results.csv").read_text().splitlines()
    assert header.startswith(
        "variant,devices.npu.scheduler,apps.indexer.workload.rate_hz,replication"
    )
    assert len(lines) == 24
    assert "results.csv" in out


def test_a_worker_of_another_nnemu_version_runs_nothing() -> None:
    """A chunk from a sweep of another nnemu version comes back as failed rows saying why."""
    scenario = Path(__file__).resolve().parents[3] / "scenarios" / "two_apps_one_npu.yaml"
    job = Job(key="a" * 16, point={}, replication=0, seed=1, overrides=())
    chunk = Chunk(
        scenario_text=scenario.read_text(),
        scenario_path=str(scenario),
        version="0.0.0",
        jobs=(job,),
    )
    [result] = run_chunk(chunk)
    assert (result["status"], result["report"]) == ("failed", None)
    assert "the sweep nnemu 0.0.0: install the same version on every worker" in result["error"]


def test_varying_the_seed_runs_each_seed_and_writes_the_table(tmp_path: Path) -> None:
    """`vary: {seed: [...]}` runs each point with its own seed (then +1 per replication) and
    writes one seed column (the Parquet write raised ArrowInvalid on a doubled column)."""
    text = SMALL.replace(
        "vary:\n  devices.npu.scheduler: [fifo, global_priority]\n"
        "  apps.indexer.workload.rate_hz: {range: [10, 60], steps: 2}\n",
        "vary:\n  seed: [5, 9]\n",
    ).replace("replications: 3", "replications: 2")
    code, _, err = _sweep(tmp_path, "out", "--workers", "1", text=text)
    assert code == 0, err
    table = pq.read_table(tmp_path / "out" / "results.parquet")
    assert table.column_names.count("seed") == 1
    rows = [row for row in table.to_pylist() if row["app"] == "camera"]
    assert [(row["seed"], row["replication"]) for row in rows] == [(5, 0), (6, 1), (9, 0), (10, 1)]
    assert len({row["latency_ms.p99"] for row in rows}) > 1
