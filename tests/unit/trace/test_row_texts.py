"""The text reader's rows as written (``row_batches`` with ``texts``): what parse reads."""

from __future__ import annotations

from unittest import mock

import pytest
from hypothesis import strategies as st

from nnemu import _native
from nnemu.trace import (
    BEGIN,
    COUNTER,
    END,
    HEAD,
    LINES,
    MALFORMED_ROW,
    PROBLEM,
    Event,
    FtraceLines,
    RowHead,
    _ftrace,
    exact_timestamp_ns,
    numbered_blocks,
    row_batches,
)
from tests.tiers import tiered


def _read(lines: list[str], **options: bool) -> list[list[Event]]:
    return list(row_batches(FtraceLines(lines).blocks(), **options))


def test_a_row_comes_with_its_line_payload_and_head_as_written() -> None:
    """A row's event has its payload and head as written (tid ``0123``, no TGID column, an
    unknown one), and its list's ``LINES`` gives its line's text by its place."""
    lines = [
        "# tracer: nop\n",
        "app-0123 ( 1000) [001] ...1 1.000010: tracing_mark_write: B|1000|x\n",
        "old-200 [001] ...1 1.000011: tracing_mark_write: B|200|y\n",
        "new-300 (-----) [001] ...1 1.000012: tracing_mark_write: E|300\n",
    ]
    (batch,) = _read(lines, texts=True)
    kind, first, extra = batch[0][0], batch[0][2], batch[0][6]
    assert (kind, first, extra) == (LINES, 2, lines[1:])  # the first line's list had no row
    rows = [event for event in batch if event[0] in (BEGIN, END)]
    assert [(e[0], e[1], e[5], e[6]) for e in rows] == [
        (BEGIN, 1_000_010_000, "B|1000|x\n", RowHead("app", "0123", "1000")),
        (BEGIN, 1_000_011_000, "B|200|y\n", RowHead("old", "200", None)),
        (END, 1_000_012_000, "E|300\n", RowHead("new", "300", None)),
    ]
    assert [lines[1:][e[2] - first] for e in rows] == lines[1:]


def test_a_head_is_told_once_where_it_is_first_read_counter_rows_too() -> None:
    """A ``HEAD`` event comes before the events of the first row of each distinct head, a
    counter row's too, and not again for the same head."""
    lines = [
        "# tracer: nop\n",
        "main-1000 ( 1000) [001] ...1 1.000010: tracing_mark_write: C|1000|n|1\n",
        "main-1000 ( 1000) [001] ...1 1.000011: tracing_mark_write: B|1000|x\n",
        "main-1000 ( 1000) [001] ...1 1.000012: tracing_mark_write: E|1000\n",
    ]
    (batch,) = _read(lines, texts=True)
    assert [(e[0], e[2]) for e in batch] == [
        (LINES, 2),
        (HEAD, 2),
        (COUNTER, 2),
        (BEGIN, 3),
        (END, 4),
    ]
    assert batch[1][5:] == ("main", RowHead("main", "1000", "1000"))


def test_times_are_exact_and_tids_beyond_pid_t_are_kept() -> None:
    """With ``texts`` a time finer than a ns is a problem with ``exact_timestamp_ns``'s words
    and no event (without, it is rounded), a time of nine fraction digits is exact, a tid
    beyond pid_t gives an event (tid -1) and a malformed mark row is a problem."""
    lines = [
        "# tracer: nop\n",
        "app-1001 ( 1000) [001] ...1 1.0000105001: tracing_mark_write: B|1000|x\n",
        "app-1001 ( 1000) [001] ...1 1.000010501: tracing_mark_write: B|1000|y\n",
        "app-99999999999 ( 1000) [001] ...1 2.000000: tracing_mark_write: E|1000\n",
        "garbage tracing_mark_write: B|1|x\n",
    ]
    events = [e for batch in _read(lines, texts=True) for e in batch if e[0] not in (LINES, HEAD)]
    inexact = exact_timestamp_ns("1", "0000105001")
    assert isinstance(inexact, str)
    assert [e[:6] for e in events] == [
        (PROBLEM, 0, 2, 0, 0, inexact),
        (BEGIN, 1_000_010_501, 3, 1000, 1001, "B|1000|y\n"),
        (END, 2_000_000_000, 4, 1000, -1, "E|1000\n"),
        (PROBLEM, 0, 5, 0, 0, MALFORMED_ROW),
    ]
    assert events[2][6] == RowHead("app", "99999999999", "1000")
    rounded = [e for batch in _read(lines) for e in batch]
    assert rounded[0][:2] == (BEGIN, 1_000_010_500)  # 1.0000105001 rounded; no problems


def test_numbered_lines_come_in_blocks_of_consecutive_lines() -> None:
    """``numbered_blocks`` starts a new block at a gap in the numbers or at ``size`` lines."""
    rows = [(1, "a"), (2, "b"), (3, "c"), (7, "d"), (8, "e"), (4, "f")]
    assert list(numbered_blocks(rows, size=2)) == [
        (1, ["a", "b"]),
        (3, ["c"]),
        (7, ["d", "e"]),
        (4, ["f"]),
    ]


_ROW = st.builds(
    "{}-{} {}[001] ...1 {}: tracing_mark_write: {}\n".format,
    st.sampled_from(["app", "<...>", "a-b", " x", "(1) [2]"]),
    st.sampled_from(["1000", "1001", "0123", "99999999999"]),
    st.sampled_from(["", "( 1000) ", "(-----) ", "(3000000000) "]),
    st.sampled_from(["1.000010", "1.000010500", "1.0000105", "2.5", "123456789012.000001"]),
    st.sampled_from(["B|1000|[NN_LA_PO]run", "B|+1000|p", "B|1000", "B||bad", "E|1000", "E"]),
)


@tiered(lines=st.lists(_ROW, max_size=12), quick=50, wide=150)
@pytest.mark.skipif(
    _native.extension_of("nnemu.trace._ftrace") is not None,
    reason="a compiled reader's constants cannot be patched (the source's run under pip install -e .)",
)
def test_fast_path_reads_rows_as_written_as_the_row_pattern(lines: list[str]) -> None:
    """With ``texts``, rows the fast path reads give the events ``ROW_RE`` gives them."""
    text = ["# tracer: nop\n", *lines]
    fast = _read(text, texts=True)
    with mock.patch.object(_ftrace, "_FAST_STAMP", 0):  # no row's time read by the fast path
        slow = _read(text, texts=True)
    assert fast == slow
