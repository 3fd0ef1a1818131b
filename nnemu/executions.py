"""Per-execution data: one row per finished execution, written as CSV or Parquet.

``nnemu run --executions FILE.csv|FILE.parquet`` writes the table; docs/report-schema.md
documents the columns.  Rows come from the apps' ``ExecutionRecord`` (a run with
``keep_executions=True``); times are virtual ms (ns resolution), sorted by arrival.
CSV needs only the standard library; Parquet needs pyarrow (``pip install
'nnemu[sweep]'``), which is imported only when a Parquet file is written.
"""

from __future__ import annotations

import csv
import importlib.util
import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from nnemu.errors import OutputError

if TYPE_CHECKING:
    from nnemu.app import ExecutionRecord

MISSING_PYARROW = "writing Parquet needs pyarrow: pip install 'nnemu[sweep]' (or write .csv)"
"""What a user without pyarrow is told when asking for a ``.parquet`` file."""

SUFFIXES = (".csv", ".parquet")
"""The file types ``write_executions`` writes, chosen by the path's suffix."""


@attrs.frozen
class Column:
    """One column of the per-execution table."""

    name: str
    """The column's name (CSV header, Parquet field)."""
    kind: str
    """``str``, ``int`` or ``ms`` (virtual ms, a float; empty/null when it does not apply)."""
    doc: str
    """What it holds."""


COLUMNS: tuple[Column, ...] = (
    Column("app", "str", "the app's name"),
    Column("uid", "int", "the app's uid"),
    Column("seq", "int", "the execution's number in its app, in the order the app started them"),
    Column("arrival_ms", "ms", "the frame arrived (was submitted)"),
    Column("start_ms", "ms", "an app thread took it and began its first attempt"),
    Column("device_arrival_ms", "ms", "the final attempt reached its first device"),
    Column("device_start_ms", "ms", "the final attempt first ran on a device"),
    Column("device_end_ms", "ms", "the final attempt last left a device"),
    Column("result_ms", "ms", "the app had the final result (callback or return)"),
    Column("latency_ms", "ms", "result_ms - arrival_ms"),
    Column("device", "str", "the device(s) of the final attempt, joined by +"),
    Column("mode", "str", "execution mode: sync, async, fenced, burst"),
    Column("priority", "str", "execution priority: LOW, MEDIUM, HIGH"),
    Column("deadline_ms", "ms", "the final attempt's absolute deadline"),
    Column("result", "str", "final result code (NO_ERROR, MISSED_DEADLINE_TRANSIENT, ...)"),
    Column("attempts", "int", "attempts made (1 + retries)"),
    Column("preemptions", "int", "times the final attempt yielded a compute unit"),
    Column("app_wait_ms", "ms", "latency split: waiting for an app thread"),
    Column("binder_wait_ms", "ms", "latency split: waiting for a free binder thread"),
    Column("device_queue_ms", "ms", "latency split: waiting in the driver for a unit"),
    Column("preempted_ms", "ms", "latency split: set aside by preemption, work redone"),
    Column("ipc_ms", "ms", "latency split: transport latencies"),
    Column("driver_launch_ms", "ms", "latency split: the driver's launch overhead"),
    Column("compute_ms", "ms", "latency split: operations on a device"),
    Column("retry_ms", "ms", "latency split: earlier attempts and back-off"),
    Column("runtime_ms", "ms", "latency split: the stack's own code on the path"),
)
"""The table's columns, in order."""


def _ms(ns: int | None) -> float | None:
    return None if ns is None else round(ns / 1e6, 6)


def execution_rows(
    apps: Iterable[tuple[str, int, Sequence[ExecutionRecord]]],
) -> list[tuple[Any, ...]]:
    """The table's rows (``COLUMNS`` order) for (app name, uid, records) triples, sorted by
    arrival, then the apps' order, then the app's sequence number."""
    keyed: list[tuple[int, int, int, tuple[Any, ...]]] = []
    for index, (name, uid, records) in enumerate(apps):
        for r in records:
            row = (
                name,
                uid,
                r.seq,
                _ms(r.arrival_ns),
                _ms(r.started_ns),
                _ms(r.device_arrival_ns),
                _ms(r.device_start_ns),
                _ms(r.device_end_ns),
                _ms(r.finished_ns),
                _ms(r.finished_ns - r.arrival_ns),
                r.device,
                r.mode,
                r.priority,
                _ms(r.deadline_ns),
                r.code.name,
                r.attempts,
                r.preemptions,
                _ms(r.app_wait_ns),
                _ms(r.binder_wait_ns),
                _ms(r.device_queue_ns),
                _ms(r.preempted_ns),
                _ms(r.ipc_ns),
                _ms(r.driver_launch_ns),
                _ms(r.compute_ns),
                _ms(r.retry_ns),
                _ms(r.runtime_ns),
            )
            keyed.append((r.arrival_ns, index, r.seq, row))
    keyed.sort(key=lambda item: item[:3])
    return [row for *_, row in keyed]


def pyarrow_available() -> bool:
    """Whether pyarrow can be imported (without importing it)."""
    return importlib.util.find_spec("pyarrow") is not None


def executions_problem(path: str) -> str:
    """What is wrong with ``path`` as an ``--executions`` file before a run ("" if nothing)."""
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in SUFFIXES:
        return f"{path}: --executions writes .csv or .parquet, not {suffix or 'a file without a suffix'}"
    if suffix == ".parquet" and not pyarrow_available():
        return f"{path}: {MISSING_PYARROW}"
    return ""


def write_executions(path: str, rows: Sequence[tuple[Any, ...]]) -> None:
    """Write ``rows`` (``execution_rows``) to ``path``: CSV or Parquet by its suffix.

    Raises ``OutputError`` when the file cannot be written (or Parquet lacks pyarrow).
    """
    try:
        if path.lower().endswith(".parquet"):
            _write_parquet(path, rows)
        else:
            with open(path, "w", encoding="utf-8", newline="") as handle:
                writer = csv.writer(handle, lineterminator="\n")
                writer.writerow(column.name for column in COLUMNS)
                writer.writerows(rows)
    except OSError as exc:
        raise OutputError(path, "executions", exc.strerror or str(exc)) from exc


def _write_parquet(path: str, rows: Sequence[tuple[Any, ...]]) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise OutputError(path, "executions", MISSING_PYARROW) from exc
    types = {"str": pa.string(), "int": pa.int64(), "ms": pa.float64()}
    schema = pa.schema([pa.field(c.name, types[c.kind]) for c in COLUMNS])
    columns = [[row[i] for row in rows] for i in range(len(COLUMNS))]
    table = pa.Table.from_arrays(
        [pa.array(values, type=field.type) for values, field in zip(columns, schema, strict=True)],
        schema=schema,
    )
    pq.write_table(table, path)  # an unwritable path raises OSError
