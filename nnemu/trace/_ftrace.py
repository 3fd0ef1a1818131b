"""Systrace HTML and ftrace text as canonical events (``nnemu.trace._events``).

``row_batches`` turns the blocks of lines ``FtraceLines.blocks`` gives (or ``time_ordered``
rows, ``one_line_blocks``) into lists of ``BEGIN``/``END`` events, each placed on its line,
with the thread name the row's ``TASK`` column shows, and its ``C|tgid|name|value`` rows
into ``COUNTER`` events; the process and thread names of a ``PROCESS DUMP`` come as
``PROCESS``/``THREAD`` events where the dump is.  Read from a file (``problems``), what is
wrong with a row comes as a ``PROBLEM`` before its events.  ``feed_rows`` gives the same
events to a ``RowSink``, a usual row's ``BEGIN`` or ``END`` as a call with its fields (no
tuple per row: ``nnemu query``'s loader, which keeps millions of rows and pays for each
object).  Replay, the parser (with ``texts``: the rows as written, times exact) and query
(``feed_rows``) read a text trace through it; one loop (``_read_block``) reads the rows
for all of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Final

from mypy_extensions import mypyc_attr

from nnemu.trace._events import (
    BEGIN,
    COUNTER,
    CUT_ROW,
    END,
    HEAD,
    LINES,
    NO_SLICE,
    PROBLEM,
    PROCESS,
    THREAD,
    Event,
    RowHead,
)
from nnemu.trace._html import BLOCK_LINES, DumpProcess, DumpThread
from nnemu.trace._rows import (
    COUNTER_RE,
    MALFORMED_COUNTER,
    MALFORMED_ROW,
    MAX_ID,
    ROW_RE,
    ROW_SEPARATOR,
    UNKNOWN_TGID,
    atrace_counter_value,
    atrace_tgid,
    exact_timestamp_ns,
    head_groups,
    is_mark_row,
    pid_of,
    pid_of_column,
    pid_of_tgid,
    timestamp_ns,
)


class DumpEvents:
    """An ``on_dump`` for ``FtraceLines`` that keeps its rows as events until
    ``row_batches`` gives them, in their place among the rows."""

    __slots__ = ("pending",)

    def __init__(self) -> None:
        self.pending: list[Event] = []

    def __call__(self, row: DumpProcess | DumpThread) -> None:
        if isinstance(row, DumpProcess):
            self.pending.append((PROCESS, 0, 0, row.pid, 0, row.name, None))
        else:
            self.pending.append((THREAD, 0, 0, row.pid, row.tid, row.name, False))


_MAX_CACHED: Final = 20_000
"""Distinct row heads (and payloads) remembered before the cache is emptied."""
_FAST_STAMP: Final = 16
"""Longest ``SECONDS.FFFFFF`` timestamp the fast path reads: 15 digits (< ``MAX_ABS_NS``)."""
_SEPARATOR_LENGTH: Final = len(ROW_SEPARATOR)
_NO_ROW_HEAD: Final = RowHead("", "", None)
_NO_HEAD: Final[tuple[str, int, int, bool, RowHead]] = ("", -1, -1, False, _NO_ROW_HEAD)
_NO_TAIL: Final[tuple[str, int, str]] = ("", -1, "")

MALFORMED_BEGIN: Final = "malformed begin mark: expected B|<tgid>|<name>; row skipped"
"""The ``NO_SLICE`` problem: a ``B`` mark without a tgid."""
CUT_ROW_PROBLEM: Final = (
    "the file ends mid-line (no line break after this row): row skipped, as Perfetto's trace"
    " processor skips it"
)
"""The ``CUT_ROW`` problem."""


TID_OUT_OF_RANGE: Final = f"thread id out of range (> {MAX_ID}); row skipped"
"""The problem of a row whose thread id is beyond pid_t."""


class _Rows:
    """``row_batches``' caches: what a row's head and its payload say, per distinct text."""

    __slots__ = ("heads", "problems", "tails", "texts")

    def __init__(self, problems: bool, texts: bool = False) -> None:
        self.heads: dict[str, tuple[str, int, int, bool, RowHead]] = {}
        self.tails: dict[str, tuple[str, int, str]] = {}
        self.problems = problems
        self.texts = texts

    def head(self, head: str) -> tuple[str, int, int, bool, RowHead]:
        """``(task, tid, pid of the TGID column, whether it has one, the head as written)``
        of a row head ending before the timestamp (cached; a pid of -1: none; ``tid`` -1:
        beyond pid_t); the task empty when the fast path cannot tell exactly what
        ``ROW_RE`` would match."""
        heads = self.heads
        if len(heads) >= _MAX_CACHED:
            heads.clear()
        info = _NO_HEAD
        groups = head_groups(head)
        if groups is not None:
            task, tid_text, column = groups
            tid = pid_of(tid_text)
            has_column = column is not None and column.isdigit()
            pid = pid_of_column(column) if has_column and column is not None else None
            written = _row_head(task, tid_text, column)
            info = (
                task,
                -1 if tid is None else tid,
                -1 if pid is None else pid,
                has_column,
                written,
            )
        heads[head] = info
        return info

    def tail(self, tail: str) -> tuple[str, int, str]:
        """``(kind, pid, name)`` of a row's text after ``tracing_mark_write: `` (cached):
        ``B`` with the pid of its tgid (-1: none) and name (``begin_payload``), ``E`` with
        its ``E|tgid``'s pid (-1: none), or no kind (neither: left to ``ROW_RE``)."""
        tails = self.tails
        if len(tails) >= _MAX_CACHED:
            tails.clear()
        kind = tail[:1]
        rest = tail[1:].partition("\n")[0]
        info = _NO_TAIL
        if kind == "B":
            pid, name = begin_payload(rest)
            info = ("B", -1 if pid is None else pid, name)
            if pid is None and not _has_tgid(rest):
                info = _NO_TAIL  # a malformed begin: ROW_RE's path says so
        elif kind == "E":
            parts = rest.split("|", 2)
            tgid = atrace_tgid(parts[1]) if len(parts) > 1 else None
            pid = None if tgid is None else pid_of_tgid(tgid)
            info = ("E", -1 if pid is None else pid, "")
        tails[tail] = info
        return info


def _row_head(task: str, tid: str, column: str | None) -> RowHead:
    """A row head as written (``RowHead``): an unknown TGID column (``-----``) as none."""
    return RowHead(task, tid, None if column == UNKNOWN_TGID else column)


def _has_tgid(rest: str) -> bool:
    """Whether a ``B`` mark's text after its ``B`` has a tgid Perfetto's trace processor reads."""
    parts = rest.split("|", 2)
    return len(parts) > 1 and atrace_tgid(parts[1]) is not None


def row_batches(
    blocks: Iterable[tuple[int, list[str]]],
    dumps: DumpEvents | None = None,
    *,
    problems: bool = False,
    texts: bool = False,
) -> Iterator[list[Event]]:
    """The ``tracing_mark_write`` B/E rows of ``blocks`` (the number of a block's first line,
    its consecutive lines: ``FtraceLines.blocks``) as events, a list per block.

    A row ``ROW_RE`` does not read, or whose time or tid is out of range, is no event (not
    a row a kernel writes).  ``B|tgid|name`` begins a slice of process ``tgid`` (read as
    Perfetto's trace processor reads it: ``+200``, `` 200``); ``B|tgid``, ``B|tgid|`` or any
    other ``B`` payload begins one with no name (``""``: its ``E`` closes it).  A begin's or
    end's pid is its TGID column's when that is a number (``pid_of_column``: as trace
    processor reads it, wrapped to 32 bits), else its ``B|tgid``'s or ``E|tgid``'s
    (``pid_of_tgid``), else -1: no process (a column or tgid beyond pid_t, a tgid of 0, or
    neither), as trace processor gives the thread none (``systrace_parser.cc``).
    The event's last field is the row's ``TASK`` column as written (strip it to use it).
    A counter row is a ``COUNTER`` (``counter_event``).
    ``dumps``: the ``on_dump`` of the ``FtraceLines`` that reads the lines; its events come
    before the rows after them.

    With ``problems`` (the lines are a file's, each with its line break), what is wrong
    with a row comes as a ``PROBLEM`` at its line, before its events if it has any: a
    malformed mark row (``MALFORMED_ROW``), a time or tid out of range, a ``B`` mark with
    no tgid (``NO_SLICE``) and a last row the file cuts off (``CUT_ROW``).

    With ``texts`` (``nnemu parse``, which says where a row is wrong, and what it says, as
    written), the events also carry the rows as written (``nnemu.trace._events``: a
    ``LINES`` event first in each list, the payload and ``RowHead`` of a ``BEGIN`` or
    ``END``, a ``HEAD`` event where a distinct row head is first read), a time is read
    exactly (``exact_timestamp_ns``: one finer than a ns is a ``PROBLEM``), a tid beyond
    pid_t is kept (``tid`` -1; its ``RowHead`` has it), and a malformed mark row is a
    ``PROBLEM`` (``MALFORMED_ROW``) whatever ``problems`` says; the rest of ``problems``
    is left to the caller.

    A usual row is read by its head (up to the timestamp) and its text after
    ``tracing_mark_write: ``, each looked up per distinct text, and its ``SECONDS.FFFFFF``
    timestamp; any other is matched with ``ROW_RE`` (``_slow_row``).  ``feed_rows`` reads
    the rows alike, for a consumer that takes the usual rows as calls.
    """
    rows = _Rows(problems, texts)
    pending = dumps.pending if dumps is not None else []
    for first, block in blocks:
        out: list[Event] = [(LINES, 0, first, 0, 0, "", block)] if texts else []
        if pending:
            out += pending
            pending.clear()
        _read_block(rows, first, block, out, None)
        if len(out) > texts:
            yield out
    if pending:
        yield pending[:]
        pending.clear()


@mypyc_attr(allow_interpreted_subclasses=True)
class RowSink:
    """A consumer of a text trace's events that ``feed_rows`` gives them to: each usual row's
    ``BEGIN`` or ``END`` as a call to ``row`` with the event's fields (no tuple made: they stay
    native ints in a wheel), every other event as ``event``, all in the order ``row_batches``
    gives them.  A subclass overrides both (``nnemu query``'s ``Loader``, compiled with its
    group in a wheel; a Python one too)."""

    def row(self, kind: int, ts: int, place: int, pid: int, tid: int, name: str, task: str) -> None:
        """A ``BEGIN`` or ``END`` event ``(kind, ts, place, pid, tid, name, task)`` of a row
        with no ``PROBLEM`` (its ``extra`` is ``task``, the row's ``TASK`` column)."""
        raise NotImplementedError

    def event(self, event: Event) -> None:
        """Any other event: a ``PROBLEM`` and the events of its row after it, a ``COUNTER``,
        a process dump's ``PROCESS`` and ``THREAD``."""
        raise NotImplementedError


def feed_rows(
    blocks: Iterable[tuple[int, list[str]]],
    sink: RowSink,
    dumps: DumpEvents | None = None,
    *,
    problems: bool = False,
) -> None:
    """Give the events ``row_batches`` gives of ``blocks`` (without ``texts``) to ``sink``, in
    the same order: a usual row's ``BEGIN`` or ``END`` as ``sink.row``, any other event as
    ``sink.event`` (``RowSink``).  The rows are read by the same code (``_read_block``)."""
    rows = _Rows(problems)
    pending = dumps.pending if dumps is not None else []
    out: list[Event] = []
    for first, block in blocks:
        if pending:
            out += pending
            pending.clear()
        _read_block(rows, first, block, out, sink)
        if out:
            _give(out, sink)
    if pending:
        _give(pending, sink)


def _give(events: list[Event], sink: RowSink) -> None:
    """``events`` to ``sink.event``, in order; then ``events`` emptied."""
    for event in events:
        sink.event(event)
    events.clear()


def _read_block(
    rows: _Rows, first: int, block: list[str], out: list[Event], sink: RowSink | None
) -> None:
    """The events of the lines ``block`` (the first numbered ``first``), appended to ``out``;
    with a ``sink``, a usual row's ``BEGIN`` or ``END`` to ``sink.row`` instead (``out``'s
    events before it given first, ``_give``)."""
    problems = rows.problems
    texts = rows.texts
    malformed = problems or texts
    heads = rows.heads
    tails = rows.tails
    line_number = first - 1
    cut = problems and bool(block) and block[-1][-1:] != "\n"
    for line in block:
        line_number += 1
        at = line.find(ROW_SEPARATOR)
        if at < 0:
            if malformed and "tracing_mark_write" in line:
                _slow_row(rows, line, line_number, out, cut)  # (a malformed row)
            continue
        space = line.rfind(" ", 0, at)
        stamp = line[space + 1 : at]
        head = line[:space]
        info = heads.get(head)
        if info is None:
            info = rows.head(head)
            if texts and info[0] and space >= 0:
                out.append((HEAD, 0, line_number, 0, 0, info[0], info[4]))
        task, tid, pid, has_column, written = info
        # (Not ``tails.get(tail) or rows.tail(tail)``: compiled, that boxes a new tuple per
        # row to test it.)
        said = tails.get(tail := line[at + _SEPARATOR_LENGTH :])
        if said is None:
            said = rows.tail(tail)
        kind, payload_pid, name = said
        # SECONDS.FFFFFF: non-empty seconds, six fraction digits, nothing else.
        if not (
            kind
            and task
            and tid >= 0
            and space >= 0
            and 7 < len(stamp) <= _FAST_STAMP
            and stamp[-7] == "."
            and (digits := stamp.replace(".", "", 1)).isdecimal()
        ) or (cut and line_number == first + len(block) - 1):
            _slow_row(rows, line, line_number, out, cut)
            continue
        ts = int(digits) * 1000
        if not has_column:
            pid = payload_pid
        if sink is not None:
            if out:
                _give(out, sink)
            sink.row(BEGIN if kind == "B" else END, ts, line_number, pid, tid, name, task)
        elif kind == "B":
            if texts:
                out.append((BEGIN, ts, line_number, pid, tid, tail, written))
            else:
                out.append((BEGIN, ts, line_number, pid, tid, name, task))
        elif texts:
            out.append((END, ts, line_number, pid, tid, tail, written))
        else:
            out.append((END, ts, line_number, pid, tid, "", task))


def _slow_row(rows: _Rows, line: str, line_number: int, out: list[Event], cut: bool) -> None:
    """Read a ``tracing_mark_write`` line the fast path left (an unusual layout, timestamp
    or payload; a counter row; a malformed row) with ``ROW_RE`` into ``out``."""
    problems = rows.problems
    if problems and cut and line[-1:] != "\n":
        out.append((PROBLEM, 0, line_number, 0, 0, CUT_ROW_PROBLEM, CUT_ROW))
    m = ROW_RE.match(line)
    if m is None:
        counter = counter_event(line, line_number)
        if counter is not None:
            out.append(counter)
        elif (problems or rows.texts) and is_mark_row(line):
            out.append((PROBLEM, 0, line_number, 0, 0, MALFORMED_ROW, None))
        return
    task, tid_text, tgid_column, seconds, fraction, kind, rest = m.groups()
    texts = rows.texts
    if texts:
        exact = exact_timestamp_ns(seconds, fraction)
        if isinstance(exact, str):
            out.append((PROBLEM, 0, line_number, 0, 0, exact, None))
            return
        ts = exact
    else:
        stamp = timestamp_ns(seconds, fraction)
        if stamp is None:
            if problems:
                message = f"timestamp {seconds}.{fraction} out of range; row skipped"
                out.append((PROBLEM, 0, line_number, 0, 0, message, None))
            return  # out of range: not a row a kernel writes
        ts = stamp
    tid = pid_of(tid_text)
    if tid is None:
        if texts:
            tid = -1  # kept as written (its RowHead)
        else:
            if problems:
                out.append((PROBLEM, 0, line_number, 0, 0, TID_OUT_OF_RANGE, None))
            return
    # With texts: the payload as read (with its line break, as the fast path's) and the
    # head as written.
    extra: str | RowHead = _row_head(task, tid_text, tgid_column) if texts else task
    if kind == "B":
        pid, name = begin_payload(rest)
        if tgid_column is not None and tgid_column.isdigit():
            column = pid_of_column(tgid_column)
            if problems and pid is None and not _has_tgid(rest):
                named = -1 if column is None else column
                out.append((PROBLEM, 0, line_number, named, 0, MALFORMED_BEGIN, NO_SLICE))
            pid = column
        elif problems and pid is None and not _has_tgid(rest):
            out.append((PROBLEM, 0, line_number, -1, 0, MALFORMED_BEGIN, NO_SLICE))
        if texts:
            name = line[m.start(6) :]
        out.append((BEGIN, ts, line_number, -1 if pid is None else pid, tid, name, extra))
        return
    if tgid_column is not None and tgid_column.isdigit():
        column = pid_of_column(tgid_column)
        pid = -1 if column is None else column
    else:
        parts = rest.split("|", 2)
        tgid = atrace_tgid(parts[1]) if len(parts) > 1 else None
        pid = -1 if tgid is None else (pid_of_tgid(tgid) or -1)
    out.append((END, ts, line_number, pid, tid, line[m.start(6) :] if texts else "", extra))


def begin_payload(rest: str) -> tuple[int | None, str]:
    """(pid or None, name) of a ``B`` mark's text after its ``B`` (``|tgid|name``), as
    ``row_batches`` reads it: the tgid as Perfetto's trace processor reads it, no pid when
    it is no number, 0 or beyond pid_t (``pid_of_tgid``), and no name (``""``) without a
    tgid."""
    parts = rest.split("|", 2)
    tgid = atrace_tgid(parts[1]) if len(parts) > 1 else None
    pid = None if tgid is None else pid_of_tgid(tgid)
    name = parts[2].rstrip("\n") if tgid is not None and len(parts) == 3 else ""
    return pid, name


def counter_event(line: str, line_number: int) -> Event | None:
    """The ``COUNTER`` of a ``C|tgid|name|value`` row (``COUNTER_RE``), or None: not one.

    Read as Perfetto's trace processor reads it: the tgid as ``strtoul`` (``pid`` -1 when it
    names no process), the value an int64 as ``strtoll`` (`` 7`` and ``+7`` are 7; ``2.5``
    and ``7 |cat`` are none; the row's trailing whitespace dropped), a name not empty; a row
    that fails any of it (or its timestamp) has ``MALFORMED_COUNTER`` for its value.  ``tid``
    is the row's (0 when out of range: a counter row is never a track's value, -1).
    """
    m = COUNTER_RE.match(line)
    if m is None:
        return None
    _, tid_text, _, seconds, fraction, tgid_field, name, rest = m.groups()
    ts = timestamp_ns(seconds, fraction)
    tgid = atrace_tgid(tgid_field)
    value = atrace_counter_value(rest.rstrip().split("|", 1)[0])
    tid = pid_of(tid_text) or 0
    if ts is None or tgid is None or not name or value is None:
        return (COUNTER, ts or 0, line_number, -1, tid, name, MALFORMED_COUNTER)
    pid = pid_of_tgid(tgid)
    return (COUNTER, ts, line_number, -1 if pid is None else pid, tid, name, float(value))


def one_line_blocks(rows: Iterable[tuple[int, str]]) -> Iterator[tuple[int, list[str]]]:
    """Numbered lines (``time_ordered``'s, not consecutive) as ``row_batches`` reads blocks."""
    for number, line in rows:
        yield number, [line]


def numbered_blocks(
    rows: Iterable[tuple[int, str]], size: int = BLOCK_LINES
) -> Iterator[tuple[int, list[str]]]:
    """Numbered lines (``FtraceLines``' or ``time_ordered``'s) as ``row_batches`` reads
    blocks: consecutive lines in lists of up to ``size``, a line out of sequence starting
    a new one."""
    block: list[str] = []
    first = 0
    for number, line in rows:
        if block and (number != first + len(block) or len(block) >= size):
            yield first, block
            block = []
        if not block:
            first = number
        block.append(line)
    if block:
        yield first, block
