"""The text reader's fast path loads every row exactly as the ``ROW_RE`` path does."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import tempfile
from unittest import mock

import pytest
from hypothesis import strategies as st

from nnemu import _native
from nnemu.errors import TraceFormatError
from nnemu.query._load import load_trace
from nnemu.trace import _ftrace
from tests.tiers import tiered

_TASKS = st.sampled_from(["app", "<...>", "Binder:1-2", " x y", "HwBinder:2000_1", "a-b-c"])
_TGIDS = st.sampled_from(["", "( 1000) ", "(-----) ", "(  200) ", "(1000)"])
_STAMPS = st.sampled_from(["1.000010", "1.000010500", "2.5", "99999999999.000001", "1.0000100"])
_PAYLOADS = st.sampled_from(
    [
        "B|1000|[NN_LA_PE]run",
        "B|1000|HIDL::IDevice::prepareModel_1_3::server",
        "B|1000|name\r",
        "B||bad",
        "B|x|odd",
        "E|1000",
        "E",
        "C|1000|counter|1",
    ]
)


@st.composite
def _rows(draw: st.DrawFn) -> str:
    task, tgid, stamp, payload = draw(_TASKS), draw(_TGIDS), draw(_STAMPS), draw(_PAYLOADS)
    tid = draw(st.sampled_from(["1000", "1001", "99999999999"]))
    space = draw(st.sampled_from([" ", "  ", "\t"]))
    return f"{task:>16}-{tid} {tgid}[001] ...1{space}{stamp}: tracing_mark_write: {payload}\n"


def _load(lines: list[str], *, fast: bool) -> tuple[list[object], list[tuple[int, str]]]:
    conn = sqlite3.connect(":memory:")
    warnings: list[tuple[int, str]] = []
    with contextlib.ExitStack() as stack:
        if not fast:  # every row read with ROW_RE
            stack.enter_context(
                mock.patch.object(_ftrace._Rows, "head", return_value=_ftrace._NO_HEAD)
            )
        handle, path = tempfile.mkstemp(suffix=".txt")
        stack.callback(os.remove, path)
        with os.fdopen(handle, "w") as out:
            out.write("".join(["# tracer: nop\n", *lines]))
        try:
            load_trace(path, conn, lambda line, message: warnings.append((line, message)))
        except TraceFormatError as error:
            warnings.append((error.line_number, error.message))
    tables = [
        conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()
        for table in (
            "slice",
            "args",
            "thread",
            "process",
            "thread_track",
            "counter",
            "process_counter_track",
        )
    ]
    return tables, warnings


@tiered(st.lists(_rows(), max_size=12), quick=60, wide=200)
@pytest.mark.skipif(
    _native.extension_of("nnemu.trace._ftrace") is not None,
    reason="a compiled reader's methods cannot be patched (the source's run under pip install -e .)",
)
def test_fast_path_matches_the_row_pattern(lines: list[str]):
    """Tables and warnings are the same whether rows take the fast path or ROW_RE."""
    assert _load(lines, fast=True) == _load(lines, fast=False)


def test_counter_rows_of_the_usual_layout_reach_the_counter_table():
    """C|tgid|name|value rows the fast path meets (usual layout, TGID column) become counters."""
    row = "app-1001 ( 1000) [001] ...1 {}: tracing_mark_write: {}\n"
    lines = [
        row.format("1.000010", "B|1000|run"),
        row.format("1.000020", "C|1000|inflight|3"),
        row.format("1.000030", "E|1000"),
        row.format("1.000040", "C|1000|inflight|0"),
    ]
    (_slices, _args, _threads, _processes, _tracks, counters, counter_tracks), warnings = _load(
        lines, fast=True
    )
    assert warnings == []
    assert [(ts, value) for _id, ts, _track, value, *_ in counters] == [
        (1_000_020_000, 3.0),
        (1_000_040_000, 0.0),
    ]
    assert [name for _id, name, *_ in counter_tracks] == ["inflight"]
