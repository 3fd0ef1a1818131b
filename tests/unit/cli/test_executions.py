"""``nnemu run --executions FILE.csv|FILE.parquet``: one row per finished execution."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from nnemu.executions import COLUMNS
from tests.commands import run_cli

ROOT = Path(__file__).resolve().parents[3]
TWO_APPS = ROOT / "scenarios" / "two_apps_one_npu.yaml"
RETRIES = ROOT / "scenarios" / "qos_busy_retries.yaml"

_PARTS = (
    "app_wait_ms",
    "binder_wait_ms",
    "device_queue_ms",
    "preempted_ms",
    "ipc_ms",
    "driver_launch_ms",
    "compute_ms",
    "retry_ms",
    "runtime_ms",
)


def _csv_rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        return list(reader.fieldnames or []), list(reader)


def _with_table(tmp_path: Path, *argv: str) -> tuple[list[dict[str, str]], dict[str, Any]]:
    """Run ``nnemu ARGV --executions x.csv --report r.json``; check the table's header and that
    it says where it wrote how many rows; the rows and the report's apps."""
    table, report = tmp_path / "x.csv", tmp_path / "r.json"
    code, out, err = run_cli(*argv, "--executions", str(table), "--report", str(report))
    assert code == 0, err
    header, rows = _csv_rows(table)
    assert header == [column.name for column in COLUMNS]
    assert f"{len(rows)} executions written to {table}" in out
    apps: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))["apps"]
    return rows, apps


def test_csv_has_one_row_per_finished_execution(tmp_path: Path) -> None:
    """The CSV has the documented columns and one row per completed or failed execution, in
    arrival order, each with times in order and split parts adding up to its latency."""
    rows, apps = _with_table(tmp_path, "run", str(TWO_APPS))
    assert len(rows) == sum(app["completed"] + app["failed"] for app in apps.values())
    arrivals = [float(row["arrival_ms"]) for row in rows]
    assert arrivals == sorted(arrivals)
    for app in apps:
        seqs = [int(row["seq"]) for row in rows if row["app"] == app]
        assert sorted(seqs) == list(range(1, len(seqs) + 1))
    for row in rows:
        times = [float(row[name]) for name in ("arrival_ms", "start_ms", "device_arrival_ms")]
        times += [float(row[name]) for name in ("device_start_ms", "device_end_ms", "result_ms")]
        assert times == sorted(times)
        latency = float(row["latency_ms"])
        assert latency == pytest.approx(float(row["result_ms"]) - float(row["arrival_ms"]))
        assert sum(float(row[part]) for part in _PARTS) == pytest.approx(latency, abs=1e-6)
        assert row["device"] == "npu"
        assert row["result"] == "NO_ERROR"
        assert row["deadline_ms"] == ""


def test_parquet_holds_the_same_rows_as_the_csv(tmp_path: Path) -> None:
    """The Parquet file has typed columns and the same rows as the CSV of the same run."""
    pq = pytest.importorskip("pyarrow.parquet")
    table_csv, table_pq = tmp_path / "x.csv", tmp_path / "x.parquet"
    assert run_cli("run", str(RETRIES), "--executions", str(table_csv))[0] == 0
    assert run_cli("run", str(RETRIES), "--executions", str(table_pq))[0] == 0
    _, rows = _csv_rows(table_csv)
    table = pq.read_table(table_pq)
    assert table.column_names == [column.name for column in COLUMNS]
    assert str(table.schema.field("attempts").type) == "int64"
    assert str(table.schema.field("retry_ms").type) == "double"
    parquet_rows = table.to_pylist()
    assert len(parquet_rows) == len(rows) == 80
    assert any(row["attempts"] > 1 and row["retry_ms"] > 0 for row in parquet_rows)
    for from_csv, from_parquet in zip(rows, parquet_rows, strict=True):
        for name, value in from_parquet.items():
            if value is None:
                assert from_csv[name] == ""
            elif isinstance(value, float):
                assert float(from_csv[name]) == value
            else:
                assert from_csv[name] == str(value)


def test_parquet_without_pyarrow_is_refused_before_the_run(tmp_path: Path, monkeypatch) -> None:
    """Without pyarrow, a .parquet path exits 2 before running and says how to install it."""
    monkeypatch.setattr("nnemu.executions.pyarrow_available", lambda: False)
    table = tmp_path / "x.parquet"
    code, out, err = run_cli("run", str(TWO_APPS), "--executions", str(table))
    assert code == 2
    assert out == ""
    assert (
        err
        == f"{table}: writing Parquet needs pyarrow: pip install 'nnemu[sweep]' (or write .csv)\n"
    )
    assert not table.exists()


@pytest.mark.parametrize("name", ["x.txt", "x"])
def test_other_suffixes_are_refused_before_the_run(tmp_path: Path, name: str) -> None:
    """A path that is neither .csv nor .parquet exits 2 with one line naming what is written."""
    table = tmp_path / name
    code, out, err = run_cli("run", str(TWO_APPS), "--executions", str(table))
    assert code == 2
    assert out == ""
    assert err.startswith(f"{table}: --executions writes .csv or .parquet, not ")
    assert len(err.splitlines()) == 1


def test_replay_writes_the_replayed_executions(tmp_path: Path) -> None:
    """``nnemu replay --executions`` writes one row per execution of the replayed run."""
    trace = tmp_path / "t.html"
    assert run_cli("run", str(TWO_APPS), "--trace", str(trace), "-q")[0] == 0
    rows, apps = _with_table(tmp_path, "replay", str(trace))
    assert len(rows) == sum(app["completed"] + app["failed"] for app in apps.values())
    assert {row["app"] for row in rows} == set(apps)


def test_replay_refuses_a_bad_executions_path_before_extracting(tmp_path: Path) -> None:
    """``nnemu replay --executions x.txt`` exits 2 with one line before reading the trace."""
    table = tmp_path / "x.txt"
    code, out, err = run_cli("replay", str(tmp_path / "missing.html"), "--executions", str(table))
    assert code == 2
    assert out == ""
    assert err == f"{table}: --executions writes .csv or .parquet, not .txt\n"


def test_replications_refuse_the_executions_of_one_run(tmp_path: Path) -> None:
    """--executions with --replications exits 2 before running: the table shows one run."""
    table = tmp_path / "x.csv"
    code, out, err = run_cli(
        "run", str(TWO_APPS), "--replications", "2", "--executions", str(table)
    )
    assert code == 2
    assert out == ""
    assert err.startswith("--executions: not with --replications")
    assert not table.exists()
