"""The text reader's rows (``_ftrace.row_batches``): its fast path, and its problems."""

from __future__ import annotations

from pathlib import Path
from unittest import mock

import hypothesis
import pytest
from hypothesis import strategies as st

from nnemu import _native
from nnemu.trace import (
    BEGIN,
    CUT_ROW,
    END,
    MALFORMED_BEGIN,
    MALFORMED_ROW,
    NO_SLICE,
    PROBLEM,
    TID_OUT_OF_RANGE,
    Event,
    FtraceLines,
    RowSink,
    TraceEvents,
    _ftrace,
)
from tests.tiers import tiered

_TASKS = st.one_of(
    st.sampled_from(
        ["app", "<...>", "HwBinder:2000_1", "my task", "a-b-c", "-", " x", "x ", "(1) [2]"]
    ),
    st.text(st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=10),
)
_TGIDS = st.sampled_from(
    ["", "( 1000) ", "(-----) ", "(  200) ", "(1000)", "(    0) ", "(3000000000) "]
)
_TIDS = st.sampled_from(["1000", "1001", "2000", "0123", "99999999999"])
_FLAGS = st.sampled_from([" ...1", " d..2", ""])
_STAMPS = st.sampled_from(
    ["1.000010", "1.000010500", "2.5", "99999999999.000001", "123456789012.000001", "1.0000100"]
)
_PAYLOADS = st.sampled_from(
    [
        "B|1000|[NN_LA_PO]run",
        "B|1000|HIDL::IDevice::prepareModel_1_3::server",
        "B|1000|name\r",
        "B|+1000|plus",
        "B|1000",
        "B|0|zero",
        "B||bad",
        "B|x|odd",
        "Bx|1000|kind",
        "E|1000",
        "E",
        "C|1000|counter|1",
        "C|1000|counter|2.5",
    ]
)


@st.composite
def _rows(draw: st.DrawFn) -> str:
    task, tid, tgid, flags = draw(_TASKS), draw(_TIDS), draw(_TGIDS), draw(_FLAGS)
    space = draw(st.sampled_from([" ", "  ", "\t"]))
    indent = draw(st.sampled_from(["", " ", "     "]))
    return (
        f"{indent}{task}-{tid} {tgid}[001]{flags}{space}{draw(_STAMPS)}:"
        f" tracing_mark_write: {draw(_PAYLOADS)}\n"
    )


def _events(path: Path, *, in_time_order: bool = False) -> list[Event]:
    return list(TraceEvents(path).events(in_time_order=in_time_order))


@tiered(lines=st.lists(_rows(), max_size=12), cut=st.booleans(), quick=60, wide=200)
@pytest.mark.skipif(
    _native.extension_of("nnemu.trace._ftrace") is not None,
    reason="a compiled reader's methods cannot be patched (the source's run under pip install -e .)",
)
def test_fast_path_reads_every_row_as_the_row_pattern(
    tmp_path_factory: pytest.TempPathFactory, lines: list[str], cut: bool
) -> None:
    """Rows the fast path reads give the same events and problems as ``ROW_RE`` on every row."""
    text = "# tracer: nop\n" + "".join(lines)
    path = tmp_path_factory.mktemp("rows") / "t.txt"
    path.write_text(text.rstrip("\n") if cut else text)
    fast = _events(path)
    with mock.patch.object(_ftrace._Rows, "head", return_value=_ftrace._NO_HEAD):
        slow = _events(path)
    assert fast == slow


def _trace(tmp_path: Path, *payloads: str, cut: bool = False) -> Path:
    row = "app-1001 ( 1000) [001] ...1 1.{:06d}: tracing_mark_write: {}\n"
    text = "# tracer: nop\n" + "".join(row.format(i, p) for i, p in enumerate(payloads, 10))
    path = tmp_path / "t.txt"
    path.write_text(text.rstrip("\n") if cut else text)
    return path


def test_a_begin_without_tgid_is_a_problem_then_a_nameless_begin(tmp_path: Path) -> None:
    """``B||bad`` comes as a ``NO_SLICE`` problem naming its TGID column's process, then its
    begin (which replay reads as a nameless section), both on its line."""
    events = _events(_trace(tmp_path, "B||bad", "E|1000"))
    assert events == [
        (PROBLEM, 0, 2, 1000, 0, MALFORMED_BEGIN, NO_SLICE),
        (BEGIN, 1_000_010_000, 2, 1000, 1001, "", "app"),
        (END, 1_000_011_000, 3, 1000, 1001, "", "app"),
    ]


def test_a_row_the_file_cuts_off_is_a_problem_before_its_events(tmp_path: Path) -> None:
    """The last row, without its line break, comes after a ``CUT_ROW`` problem on its line."""
    events = _events(_trace(tmp_path, "B|1000|x", "E|1000", cut=True))
    assert events[1:] == [
        (PROBLEM, 0, 3, 0, 0, _ftrace.CUT_ROW_PROBLEM, CUT_ROW),
        (END, 1_000_011_000, 3, 1000, 1001, "", "app"),
    ]


def test_rows_no_reader_can_use_are_problems_in_their_place(tmp_path: Path) -> None:
    """A malformed mark row, a tid beyond pid_t and a time out of range are problems, no event."""
    path = tmp_path / "t.txt"
    path.write_text(
        "# tracer: nop\n"
        "garbage tracing_mark_write: B|1|x\n"
        "app-99999999999 ( 1000) [001] ...1 1.000010: tracing_mark_write: B|1000|x\n"
        "app-1001 ( 1000) [001] ...1 123456789012.000001: tracing_mark_write: B|1000|x\n"
    )
    assert _events(path) == [
        (PROBLEM, 0, 2, 0, 0, MALFORMED_ROW, None),
        (PROBLEM, 0, 3, 0, 0, TID_OUT_OF_RANGE, None),
        (PROBLEM, 0, 4, 0, 0, "timestamp 123456789012.000001 out of range; row skipped", None),
    ]


def test_rows_of_lines_not_read_from_a_file_give_no_problems() -> None:
    """Lines given as a list (no file: no line breaks owed) give events, no problem."""
    lines = FtraceLines(
        ["# tracer: nop", "app-1001 ( 1000) [001] ...1 1.000010: tracing_mark_write: B||x"]
    )
    events = [e for batch in _ftrace.row_batches(lines.blocks()) for e in batch]
    assert events == [(BEGIN, 1_000_010_000, 2, 1000, 1001, "", "app")]


class _Recorder(RowSink):
    """A ``RowSink`` that keeps what it is given, a row's call as its event."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.rows = 0

    def row(self, kind: int, ts: int, place: int, pid: int, tid: int, name: str, task: str) -> None:
        self.rows += 1
        self.events.append((kind, ts, place, pid, tid, name, task))

    def event(self, event: Event) -> None:
        self.events.append(event)


_DUMP = (
    '<script class="trace-data" type="application/text">\nPROCESS DUMP\n'
    "USER PID PPID VSZ RSS WCHAN PC S NAME COMM\n"
    "root 1000 1 0 0 0 0 S /system/bin/app app\n</script>\n"
)


@hypothesis.settings(max_examples=60, deadline=None)
@hypothesis.given(
    lines=st.lists(_rows(), max_size=12),
    cut=st.booleans(),
    html=st.booleans(),
    in_time_order=st.booleans(),
)
def test_a_sink_is_fed_the_events_the_batches_give(
    tmp_path_factory: pytest.TempPathFactory,
    lines: list[str],
    cut: bool,
    html: bool,
    in_time_order: bool,
) -> None:
    """``TraceEvents.feed`` gives a ``RowSink`` the events ``batches`` gives, in their order
    (what ``nnemu query`` loads is what replay reads), in file or time order."""
    text = "# tracer: nop\n" + "".join(lines)
    if cut:
        text = text.rstrip("\n")
    if html:
        text = (
            '<html><body>\n<script class="trace-data" type="application/text">\n'
            f"{text}\n</script>\n{_DUMP}</body></html>\n"
        )
    path = tmp_path_factory.mktemp("rows") / "t.txt"
    path.write_text(text)
    sink = _Recorder()
    TraceEvents(path).feed(sink, in_time_order=in_time_order)
    assert sink.events == _events(path, in_time_order=in_time_order)


def test_a_sink_is_fed_usual_rows_as_calls(tmp_path: Path) -> None:
    """The usual rows come as ``row`` calls (no event tuple); a row with a problem, with
    its events, as ``event``."""
    sink = _Recorder()
    TraceEvents(_trace(tmp_path, "B|1000|x", "E|1000", "B||bad")).feed(sink)
    assert sink.rows == 2
    assert sink.events == [
        (BEGIN, 1_000_010_000, 2, 1000, 1001, "x", "app"),
        (END, 1_000_011_000, 3, 1000, 1001, "", "app"),
        (PROBLEM, 0, 4, 1000, 0, MALFORMED_BEGIN, NO_SLICE),
        (BEGIN, 1_000_012_000, 4, 1000, 1001, "", "app"),
    ]
