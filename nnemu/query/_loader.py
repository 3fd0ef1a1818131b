"""Loading a trace into the query tables, streamed.

Four inputs: ftrace text, systrace HTML (its ftrace block and process dump),
Chrome trace-event JSON (``_json_loader``) and Perfetto protobuf (its canonical events:
``_event_loader``).  Only the open
sections of each thread are held in Python; finished slices go to SQLite in
multi-row ``INSERT`` statements, each as soon as its rows have ended.  A slice's
``line`` is the file line it began on (NULL when the input has no lines).
A wheel runs this module compiled by mypyc (``nnemu._native``), with ``_slice_rows`` (how
slice and args rows are written), ``_json_loader`` (``JsonLoader``: Chrome JSON events) and
``_event_loader`` (``EventLoader``: canonical events);
``_load.load_trace`` reads a file with them.

Slice ids are given in begin order.  A slice's row is written when it ends, with
``subtree_end_id``: the last id given by then, so its descendants are the
slices of its track with ids in ``(id, subtree_end_id]``.
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Callable, Iterable
from typing import Final

from nnemu.query._marks import PLAIN, MarkInfo, describe
from nnemu.query._perfetto_tables import PerfettoRows
from nnemu.query._schema import finish_schema
from nnemu.query._slice_rows import (
    ALL_NULLS,
    ARG_VALUES,
    ARGS_PER_INSERT,
    ARGS_STATEMENT,
    END_AT,
    NULL_ARGS,
    NULL_CATEGORY,
    NULL_LAYER,
    NULL_LINE,
    NULL_PARENT,
    NULL_PHASE,
    ROWS_PER_INSERT,
    SLICE_STEPS,
    OpenSlice,
    SliceInsert,
    insert_rows,
)
from nnemu.trace import (
    CUT_ROW_PROBLEM,
    MALFORMED_BEGIN,
    MALFORMED_ROW,
    MAX_ABS_NS,
    MAX_ID,
    ROW_RE,
    ROW_SEPARATOR,
    TID_OUT_OF_RANGE,
    UNKNOWN_TGID,
    DumpProcess,
    DumpThread,
    FtraceLines,
    atrace_tgid,
    head_groups,
    is_mark_row,
    pid_of_column,
    pid_of_tgid,
    time_ordered,
    timestamp_ns,
)

_MAX_CACHED_NAMES: Final = 20_000
_UNKNOWN_TASK: Final = "<...>"
_FAST_STAMP: Final = 16
"""Longest ``SECONDS.FFFFFF`` timestamp the fast path reads: 15 digits (< ``MAX_ABS_NS``)."""
_SEPARATOR_LENGTH: Final = len(ROW_SEPARATOR)
_BAD_HEAD: Final[tuple[str, str, str | None]] = ("", "", None)
_NOT_A_MARK: Final = MarkInfo(None, None, PLAIN)
EMPTY_SLICE_NAME: Final = "[empty slice name]"
"""The name Perfetto's trace processor gives the slice of a ``B|tgid`` or ``B|tgid|`` row."""

Warn = Callable[[int, str], None]
"""Receives (where, message) for each recoverable problem: ``where`` is the file's line
number (0: the whole file), or for binary input (a Perfetto trace) ``byte_place(offset)``,
a negative number (``placed_bytes`` reads it back)."""


def byte_place(offset: int) -> int:
    """The ``where`` of a ``Warn`` for a problem at byte ``offset`` of binary input."""
    return -1 - offset


def placed_bytes(where: int) -> int | None:
    """The byte offset a ``Warn``'s ``where`` names, or None for a line number (or 0)."""
    return -1 - where if where < 0 else None


class _Tail:
    """A row's text after ``tracing_mark_write: `` read (cached per distinct text)."""

    __slots__ = ("args", "kind", "malformed", "name", "nulls", "payload", "values")

    def __init__(self, kind: str, name: str, payload: str, malformed: bool, info: MarkInfo) -> None:
        self.kind = kind
        """``B``, ``E`` or empty (neither)."""
        self.name = name
        """A begin's slice name."""
        self.payload = payload
        """The text after the kind (``|tgid|name``)."""
        self.malformed = malformed
        """A begin that is not ``B|<tgid>|<name>`` (``begin_name``): no slice."""
        self.nulls = (
            NULL_CATEGORY  # ftrace rows have none
            | (NULL_LAYER if info.layer is None else 0)
            | (NULL_PHASE if info.phase is None else 0)
            | (0 if info.args else NULL_ARGS)
        )
        """A begin's slice's ``_NULLS`` but for ``NULL_PARENT`` and ``NULL_LINE``."""
        self.values: tuple[str, ...] = tuple(
            value for value in (info.layer, info.phase, info.kind) if value is not None
        )
        """Its slice's layer, phase and kind, but those that are None."""
        self.args: tuple[str, ...] = tuple(itertools.chain.from_iterable(info.args))
        """Its slice's ``args``: key, value, key, value..."""


_BAD_TAIL: Final = _Tail("", "", "", False, _NOT_A_MARK)


class _Thread:
    __slots__ = ("last_ts", "name", "stack", "tgid", "tid", "track_id", "utid")

    def __init__(self, utid: int, tid: int, tgid: int | None) -> None:
        self.last_ts = -MAX_ABS_NS - 1
        """The latest timestamp of its rows so far (file order)."""
        self.utid = utid
        self.tid = tid
        self.tgid = tgid
        self.name: str | None = None
        self.track_id: int | None = None
        self.stack: list[OpenSlice] = []

    def top(self) -> tuple[int, int] | None:
        """(id, ts) of the innermost open section, or None."""
        if not self.stack:
            return None
        ident, ts = self.stack[-1][:2]
        assert isinstance(ident, int)
        assert isinstance(ts, int)
        return ident, ts


def begin_name(rest: str) -> str | None:
    """The slice name of a begin row (``rest``: its text after the ``B``) as Perfetto's trace
    processor reads it: ``|tgid|name``, the name everything after the second ``|`` (``|`` in
    it kept), its trailing whitespace dropped; with no name (``|tgid``, ``|tgid|``)
    ``EMPTY_SLICE_NAME``; None when there is no tgid (``B``, ``B|``, ``B||name``,
    ``B|abc|name``): not a slice (trace processor counts a ``systrace_parse_failure``).
    As there, the first field is the kind whatever follows its ``B`` (``Bx|200|name``
    begins a slice) and the tgid is read as ``strtoul`` reads it (``+200``, `` 200``:
    ``nnemu.trace.atrace_tgid``)."""
    parts = rest.split("|", 2)
    if len(parts) < 2 or (
        not (parts[1].isascii() and parts[1].isdigit()) and atrace_tgid(parts[1]) is None
    ):
        return None
    return (parts[2].rstrip() if len(parts) == 3 else "") or EMPTY_SLICE_NAME


def _id(text: str) -> int | None:
    """A pid or tid column (digits) as an int, or None when out of pid_t's range."""
    if len(text) > 10:
        return None
    value = int(text)
    return value if value <= MAX_ID else None


def _payload_tgid(rest: str) -> int | None:
    """The tgid of a ``B|tgid|name`` or ``E|tgid`` payload, if it has one."""
    parts = rest.split("|", 2)
    tgid = atrace_tgid(parts[1]) if len(parts) >= 2 else None
    return None if tgid is None else pid_of_tgid(tgid)


class Loader:
    """Feeds trace events into an open database with the query tables."""

    def __init__(self, conn: sqlite3.Connection, warn: Warn) -> None:
        self.conn = conn
        self.warn = warn
        self._next_id = 0
        self._next_track = 0
        self._threads: dict[int, _Thread] = {}
        self._all_threads: list[_Thread] = []
        self._flats: list[list[object]] = [[] for _ in range(ALL_NULLS + 1)]
        """The finished slices' rows to write, by their ``_NULLS``, laid end to end (fewer
        than one statement's: a full statement's are written at once)."""
        self._inserts: dict[int, SliceInsert] = {}
        """How slice rows are written, by their ``_NULLS``."""
        self._arg_rows: list[object] = []
        """The ``args`` rows to write: (arg_set_id, key, value) laid end to end."""
        self._cache: dict[str, MarkInfo] = {}
        self._process_names: dict[int, str] = {}
        self._dump_threads: dict[int, tuple[int, str]] = {}
        self._json_thread_names: dict[tuple[int | None, int], str] = {}
        # The ftrace fast path's caches: row head -> (task, tid, TGID column), row text
        # after "tracing_mark_write: " -> _Tail, and row head -> (its thread, its task
        # name or None for "<...>") (heads with a TGID column only, cleared when a tid
        # goes to a new thread).
        self._heads: dict[str, tuple[str, str, str | None]] = {}
        self._tails: dict[str, _Tail] = {}
        self._known: dict[str, tuple[_Thread, str | None]] = {}
        self._file_lines = True
        """Whether the rows ``load_ftrace`` reads are the lines of the file (``slice.line``)."""
        self.perfetto = PerfettoRows(conn, warn)
        self.slices = 0
        self.open_slices = 0
        self.unmatched_ends = 0
        self.out_of_order = 0
        """Rows earlier than the row before them on their thread."""
        self.first_out_of_order = 0
        """The line of the first of them (0: none, or not a line of the file)."""
        self.time_sorted = False
        """The rows were read in time order (``load_in_time_order``) after reading them in
        file order found ``out_of_order`` (``read_again_after``)."""

    def read_again_after(self, first: Loader) -> None:
        """This loader read the rows again in time order because ``first``, reading them in
        file order, found some out of it: the warning counts and places ``first``'s."""
        self.out_of_order = first.out_of_order
        self.first_out_of_order = first.first_out_of_order
        self.time_sorted = True

    # -- threads -----------------------------------------------------------

    def _thread(self, tid: int, tgid: int | None) -> _Thread:
        thread = self._threads.get(tid)
        if thread is None or (tgid is not None and thread.tgid is not None and thread.tgid != tgid):
            # A new tid, or a tid the kernel gave to another process: a new thread.
            if thread is not None:
                self._known.clear()  # row heads that led to the old thread
            thread = _Thread(len(self._all_threads), tid, tgid)
            self._threads[tid] = thread
            self._all_threads.append(thread)
        elif tgid is not None and thread.tgid is None:
            thread.tgid = tgid
        return thread

    # -- slices ------------------------------------------------------------

    def _describe(self, name: str) -> MarkInfo:
        """What the slice name ``name`` means (cached)."""
        info = self._cache.get(name)
        if info is None:
            if len(self._cache) >= _MAX_CACHED_NAMES:
                self._cache.clear()
            info = self._cache[name] = describe(name)
        return info

    def _insert(self, nulls: int) -> SliceInsert:
        """How the rows of ``nulls`` are written (made on first use)."""
        insert = self._inserts.get(nulls)
        if insert is None:
            insert = self._inserts[nulls] = SliceInsert(nulls)
        return insert

    def _write_slices(self, nulls: int) -> None:
        """Insert the rows of ``nulls``, one statement's worth (``SLICE_STEPS``), and empty
        their list (kept: no slice of it is copied)."""
        flat = self._flats[nulls]
        self.conn.execute(self._insert(nulls).statement, flat)
        flat.clear()
        self.slices += ROWS_PER_INSERT

    def _write_args(self) -> None:
        """Insert the ``args`` rows of the whole statements buffered; keep the rest."""
        rows = self._arg_rows
        if len(rows) == ARG_VALUES:
            self.conn.execute(ARGS_STATEMENT, rows)
            rows.clear()
            return
        whole = len(rows) - len(rows) % ARG_VALUES
        for start in range(0, whole, ARG_VALUES):
            self.conn.execute(ARGS_STATEMENT, rows[start : start + ARG_VALUES])
        del rows[:whole]

    def _flush(self) -> None:
        """Write the rows still buffered (each set of None columns' last rows, fewer than a
        statement's) and the last ``args`` rows."""
        for nulls, flat in enumerate(self._flats):
            if flat:
                width = self._insert(nulls).width
                self.conn.executemany(
                    self._insert(nulls).one,
                    [flat[start : start + width] for start in range(0, len(flat), width)],
                )
                self.slices += len(flat) // width
                flat.clear()
        if self._arg_rows:
            insert_rows(self.conn, "args", 3, self._arg_rows, ARGS_PER_INSERT)
            self._arg_rows.clear()

    def _emit(self, record: OpenSlice, dur: int) -> None:
        nulls = record.pop()
        assert isinstance(nulls, int)
        record[END_AT] = dur
        record[-1] = self._next_id - 1
        flat = self._flats[nulls]
        flat += record
        if len(flat) >= SLICE_STEPS[nulls]:
            self._write_slices(nulls)

    def _expire(self, thread: _Thread, ts: int) -> None:
        """Close the complete/instant events on top of the stack that ended by ``ts``."""
        stack = thread.stack
        while stack:
            end = stack[-1][END_AT]
            if end is None or end > ts:  # type: ignore[operator]
                return
            record = stack.pop()
            self._emit(record, end - record[1])  # type: ignore[operator]

    def begin(
        self,
        thread: _Thread,
        ts: int,
        name: str,
        *,
        category: str | None = None,
        args: Iterable[tuple[str, object]] = (),
        end: int | None = None,
        line: int | None = None,
    ) -> None:
        """Open a slice (``end`` given: a complete event that closes itself at ``end``) that
        began on the file's line ``line`` (None: unknown)."""
        stack = thread.stack
        if stack and stack[-1][END_AT] is not None:
            self._expire(thread, ts)
        if thread.track_id is None:
            thread.track_id = self._next_track
            self._next_track += 1
        info = self._describe(name)
        ident = self._next_id
        self._next_id = ident + 1
        if self.perfetto.pending:
            self.perfetto.slice_begun(thread.utid, ident, ts)
        arg_set_id = None
        arg_rows = self._arg_rows
        for key, value in args:
            arg_set_id = ident
            arg_rows += (ident, key, value)
        for key, value in info.args:
            arg_set_id = ident
            arg_rows += (ident, key, value)
        if len(arg_rows) >= ARG_VALUES:
            self._write_args()
        record: OpenSlice = [ident, ts, end, name, len(stack)]
        nulls = 0
        if stack:
            record.append(stack[-1][0])
        else:
            nulls = NULL_PARENT
        record.append(thread.track_id)
        for bit, value in (
            (NULL_CATEGORY, category),
            (NULL_LAYER, info.layer),
            (NULL_PHASE, info.phase),
        ):
            if value is None:
                nulls |= bit
            else:
                record.append(value)
        record.append(info.kind)
        if arg_set_id is None:
            nulls |= NULL_ARGS
        else:
            record.append(arg_set_id)
        if line is None:
            nulls |= NULL_LINE
        else:
            record.append(line)
        record += (0, nulls)
        stack.append(record)

    def _out_of_order(self, line_number: int) -> None:
        """A row earlier than the row before it on its thread (see ``load_trace``)."""
        self.out_of_order += 1
        if self.out_of_order == 1:
            self.first_out_of_order = line_number

    def _check_order(self, thread: _Thread, ts: int, line_number: int) -> None:
        """Count a row of ``thread`` at ``ts`` that is earlier than its row before."""
        if ts < thread.last_ts:
            self._out_of_order(line_number)
        else:
            thread.last_ts = ts

    def end(self, thread: _Thread, ts: int, line_number: int) -> None:
        """Close the innermost open B section of ``thread`` (warn when there is none)."""
        stack = thread.stack
        while stack:
            end = stack[-1][END_AT]
            if end is None:
                break
            # A complete event still running at this E: it ends at its own end.
            record = stack.pop()
            self._emit(record, end - record[1])  # type: ignore[operator]
        if not stack:
            self.unmatched_ends += 1
            self.warn(line_number, "end mark (E) with no open section on this thread; skipped")
            return
        if ts < stack[-1][1]:  # type: ignore[operator]
            # Rows out of time order (counted by _check_order) in a trace not read again
            # in time order: this E ends nothing (in time order it comes before the
            # section's B); the section stays open, never a negative dur.
            return
        record = stack.pop()
        self._emit(record, ts - record[1])  # type: ignore[operator]

    # -- ftrace ------------------------------------------------------------

    def _dump_row(self, row: DumpProcess | DumpThread) -> None:
        if isinstance(row, DumpProcess):
            self._process_names[row.pid] = row.name
        else:
            self._dump_threads[row.tid] = (row.pid, row.name)

    def load_ftrace(self, lines: Iterable[str], *, file_lines: bool = True) -> FtraceLines:
        """Load the ``tracing_mark_write`` B/E rows of systrace HTML or ftrace text (the
        lines of the file unless not ``file_lines``: then ``slice.line`` is NULL)."""
        self._file_lines = file_lines
        source = FtraceLines(lines, on_dump=self._dump_row)
        heads = self._heads
        tails = self._tails
        known = self._known
        flats = self._flats
        arg_rows = self._arg_rows
        add_args = arg_rows.extend
        # Rows of ftrace text are B/E marks only (no complete events: every open
        # record's end is None), so begin() and end() are inlined for them here; a
        # systrace has no flows either, so no flow waits for a slice to begin
        # (perfetto.slice_begun).  C| counter rows go to _slow_row, which hands them
        # to perfetto.ftrace_counter.
        next_id = self._next_id
        record: OpenSlice
        for first, block in source.blocks():
            line_number = first - 1
            if file_lines and block and block[-1][-1:] != "\n":
                block = self._without_unterminated(first + len(block) - 1, block)
            for line in block:
                line_number += 1
                # Fast path for the usual layout: the row's head (up to the timestamp) and
                # its text after "tracing_mark_write: " are looked up per distinct text; a
                # row the fast path does not accept exactly as ROW_RE would goes to _slow_row.
                # (Found with find/rfind and sliced: no partition tuples, no string of the
                # head and timestamp together.)
                at = line.find(ROW_SEPARATOR)
                if at < 0:
                    if "tracing_mark_write" in line:  # a malformed row: _slow_row warns
                        self._next_id = next_id
                        self._slow_row(line_number, line)
                        next_id = self._next_id
                    continue
                space = line.rfind(" ", 0, at)
                if space < 0:  # no head: not a row ROW_RE reads
                    self._next_id = next_id
                    self._slow_row(line_number, line)
                    next_id = self._next_id
                    continue
                head = line[:space]
                stamp = line[space + 1 : at]
                tail = line[at + _SEPARATOR_LENGTH :]
                tail_info = tails.get(tail) or self._tail(tail)
                known_head = known.get(head)
                # SECONDS.FFFFFF: non-empty seconds, six fraction digits, nothing else.
                if not (
                    tail_info.kind
                    and (known_head is not None or (heads.get(head) or self._head(head))[1])
                    and 7 < len(stamp) <= _FAST_STAMP
                    and stamp[-7] == "."
                    and (digits := stamp.replace(".", "", 1)).isdecimal()
                ):
                    self._next_id = next_id
                    self._slow_row(line_number, line)
                    next_id = self._next_id
                    continue
                ts = int(digits) * 1000
                if known_head is None:
                    head_info = heads[head]
                    thread_or_none = self._row_thread(
                        head_info, head, tail_info.payload, line_number
                    )
                    if thread_or_none is None:
                        continue
                    thread = thread_or_none
                    task: str | None = head_info[0]
                    if task == _UNKNOWN_TASK:
                        task = None
                else:
                    thread, task = known_head
                if task is not None:
                    thread.name = task
                if ts < thread.last_ts:
                    self._out_of_order(line_number)
                else:
                    thread.last_ts = ts
                stack = thread.stack
                if tail_info.kind == "B":
                    if tail_info.malformed:
                        self.warn(line_number, MALFORMED_BEGIN)
                        continue
                    name = tail_info.name
                    if thread.track_id is None:
                        thread.track_id = self._next_track
                        self._next_track += 1
                    ident = next_id
                    next_id += 1
                    # The row in one list display (no tuple or append per value): its
                    # arg_set_id (its id) only when it has args, its line, then as open.
                    values = tail_info.values
                    extra = tail_info.args
                    if stack:
                        depth = len(stack)
                        parent = stack[-1][0]
                        if extra:
                            record = [
                                ident,
                                ts,
                                None,
                                name,
                                depth,
                                parent,
                                thread.track_id,
                                *values,
                                ident,
                                line_number,
                                0,
                                tail_info.nulls,
                            ]
                        else:
                            record = [
                                ident,
                                ts,
                                None,
                                name,
                                depth,
                                parent,
                                thread.track_id,
                                *values,
                                line_number,
                                0,
                                tail_info.nulls,
                            ]
                    elif extra:
                        record = [
                            ident,
                            ts,
                            None,
                            name,
                            0,
                            thread.track_id,
                            *values,
                            ident,
                            line_number,
                            0,
                            tail_info.nulls | NULL_PARENT,
                        ]
                    else:
                        record = [
                            ident,
                            ts,
                            None,
                            name,
                            0,
                            thread.track_id,
                            *values,
                            line_number,
                            0,
                            tail_info.nulls | NULL_PARENT,
                        ]
                    if extra:
                        if len(extra) == 2:
                            add_args((ident, extra[0], extra[1]))
                        elif len(extra) == 4:
                            add_args((ident, extra[0], extra[1], ident, extra[2], extra[3]))
                        else:
                            for at in range(0, len(extra), 2):
                                add_args((ident, extra[at], extra[at + 1]))
                        if len(arg_rows) >= ARG_VALUES:
                            self._write_args()
                    if not file_lines:
                        del record[-3]
                        record[-1] |= NULL_LINE  # type: ignore[operator]
                    stack.append(record)
                elif stack and ts >= stack[-1][1]:  # type: ignore[operator]
                    record = stack.pop()
                    nulls = record.pop()
                    assert isinstance(nulls, int)
                    flat = flats[nulls]
                    record[2] = ts - record[1]  # type: ignore[operator]
                    record[-1] = next_id - 1
                    flat += record
                    if len(flat) >= SLICE_STEPS[nulls]:
                        self._write_slices(nulls)
                else:
                    self._next_id = next_id
                    self.end(thread, ts, line_number)
        self._next_id = next_id
        if source.truncated:
            self.warn(
                source.last_line_number,
                "the trace data block has no closing </script>: the file looks truncated",
            )
        return source

    def load_in_time_order(self, lines: Iterable[str]) -> None:
        """Load the ``tracing_mark_write`` rows of systrace HTML or ftrace text in time
        order (``time_ordered``: as Perfetto matches them), each as the file line it is."""
        self._file_lines = True
        source = FtraceLines(lines, on_dump=self._dump_row)
        for line_number, line in time_ordered(source):
            if line[-1:] != "\n" and not self._without_unterminated(line_number, [line]):
                continue
            self._slow_row(line_number, line)
        if source.truncated:
            self.warn(
                source.last_line_number,
                "the trace data block has no closing </script>: the file looks truncated",
            )

    def _without_unterminated(self, line_number: int, block: list[str]) -> list[str]:
        """``block`` without its last line (``line_number``), which has no line break: the
        file ends mid-line, a row cut off (``B|200|[NN_LA_P``, ``E|2``). Perfetto's trace
        processor reads only whole lines, so that row is skipped, with a warning if it is a
        mark row."""
        if "tracing_mark_write" in block[-1]:
            self.warn(line_number, CUT_ROW_PROBLEM)
        return block[:-1]

    def _head(self, head: str) -> tuple[str, str, str | None]:
        """``(task, tid, TGID column)`` of a row head ending before the timestamp, cached;
        empty when the fast path cannot tell exactly what ``ROW_RE`` would match."""
        heads = self._heads
        if len(heads) >= _MAX_CACHED_NAMES:
            heads.clear()
            self._known.clear()
        info = head_groups(head) or _BAD_HEAD
        heads[head] = info
        return info

    def _tail(self, tail: str) -> _Tail:
        """What a row's text after ``tracing_mark_write: `` says (``_Tail``), cached."""
        tails = self._tails
        if len(tails) >= _MAX_CACHED_NAMES:
            tails.clear()
        kind = tail[:1]
        rest = tail[1:].partition("\n")[0]
        info = _BAD_TAIL
        if kind == "E":
            info = _Tail("E", "", rest, False, _NOT_A_MARK)
        elif kind == "B":
            name = begin_name(rest)
            malformed = name is None
            name = name or ""
            info = _Tail("B", name, rest, malformed, self._describe(name))
        tails[tail] = info
        return info

    def _row_thread(
        self, head: tuple[str, str, str | None], key: str | None, rest: str, line_number: int
    ) -> _Thread | None:
        """The thread of a row (None, warned, when its tid is out of range); remembered
        under ``key`` (the row's head) when the row has a TGID column."""
        _, tid, tgid_column = head
        has_tgid = tgid_column is not None and tgid_column != UNKNOWN_TGID
        tgid = (
            pid_of_column(tgid_column)
            if has_tgid and tgid_column is not None
            else _payload_tgid(rest)
        )
        tid_number = _id(tid)
        if tid_number is None:
            self.warn(line_number, TID_OUT_OF_RANGE)
            return None
        thread = self._thread(tid_number, tgid)
        if has_tgid and key is not None:
            self._known[key] = (thread, None if head[0] == _UNKNOWN_TASK else head[0])
        return thread

    def _slow_row(self, line_number: int, line: str) -> None:
        """Load one row the fast path left (unusual layout, timestamp or payload)."""
        if "tracing_mark_write" not in line:
            return
        m = ROW_RE.match(line)
        if m is None:
            if self.perfetto.ftrace_counter(line, line_number):
                return
            if is_mark_row(line):
                self.warn(line_number, MALFORMED_ROW)
            return
        task, tid, tgid_column, seconds, fraction, kind, rest = m.groups()
        ts = timestamp_ns(seconds, fraction)
        if ts is None:
            self.warn(line_number, f"timestamp {seconds}.{fraction} out of range; row skipped")
            return
        thread = self._row_thread((task, tid, tgid_column), None, rest, line_number)
        if thread is None:
            return
        if task != _UNKNOWN_TASK:
            thread.name = task
        self._check_order(thread, ts, line_number)
        if kind == "E":
            self.end(thread, ts, line_number)
            return
        name = begin_name(rest)
        if name is None:
            self.warn(line_number, MALFORMED_BEGIN)
            return
        self.begin(thread, ts, name, line=line_number if self._file_lines else None)

    # -- the end -----------------------------------------------------------

    def finish(self) -> tuple[int, int]:
        """Close what is still open (``dur = -1``), write threads and processes, index.

        Returns:
            (threads, processes) written.
        """
        for thread in self._all_threads:
            stack = thread.stack
            while stack:
                record = stack.pop()
                end = record[END_AT]
                if end is None:
                    self.open_slices += 1
                self._emit(record, -1 if end is None else end - record[1])  # type: ignore[operator]
        self._flush()
        threads = [
            (thread.utid, thread.tid, thread.tgid, self._thread_name(thread), thread.track_id)
            for thread in self._all_threads
        ]
        seen_tids = {thread.tid for thread in self._all_threads}
        utid = len(threads)
        for tid, (pid, name) in sorted(self._dump_threads.items()):
            if tid not in seen_tids:
                threads.append((utid, tid, pid, name, None))
                utid += 1
        pids = (
            {pid for _, _, pid, _, _ in threads if pid is not None}
            | set(self._process_names)
            | self.perfetto.pids
        )
        upids = {pid: upid for upid, pid in enumerate(sorted(pids))}
        main_thread_names = {tid: name for _, tid, pid, name, _ in threads if tid == pid}
        self.conn.executemany(
            "INSERT INTO process VALUES (?, ?, ?)",
            [
                (upid, pid, self._process_names.get(pid, main_thread_names.get(pid)))
                for pid, upid in upids.items()
            ],
        )
        self.conn.executemany(
            "INSERT INTO thread VALUES (?, ?, ?, ?)",
            [
                (utid, tid, name, None if pid is None else upids[pid])
                for utid, tid, pid, name, _ in threads
            ],
        )
        self.conn.executemany(
            "INSERT INTO thread_track VALUES (?, ?, ?)",
            [(track, utid, name) for utid, _, _, name, track in threads if track is not None],
        )
        self.perfetto.finish(self._next_track, self._next_id, upids)
        finish_schema(self.conn)
        self.conn.commit()
        return len(threads), len(upids)

    def _thread_name(self, thread: _Thread) -> str | None:
        name = self._json_thread_names.get((thread.tgid, thread.tid))
        if name is not None:
            return name
        if thread.name is not None:
            return thread.name
        dumped = self._dump_threads.get(thread.tid)
        if dumped is not None and (thread.tgid is None or dumped[0] == thread.tgid):
            if thread.tgid is None:
                thread.tgid = dumped[0]
            return dumped[1]
        return None
