"""Loading a trace into the query tables, streamed.

Four inputs: ftrace text, systrace HTML (its ftrace block and process dump),
Chrome trace-event JSON and Perfetto protobuf (as ftrace rows).  Only the open
sections of each thread are held in Python; finished slices go to SQLite in
multi-row ``INSERT`` statements, each as soon as its rows have ended.  A slice's
``line`` is the file line it began on (NULL when the input has no lines).
A wheel runs this module compiled by mypyc (``nnemu._native``).

Slice ids are given in begin order.  A slice's row is written when it ends, with
``subtree_end_id``: the last id given by then, so its descendants are the
slices of its track with ids in ``(id, subtree_end_id]``.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Final, TextIO

from nnemu._progress import Progress
from nnemu._text import counted
from nnemu.errors import TraceFormatError
from nnemu.query._marks import PLAIN, MarkInfo, describe
from nnemu.query._perfetto_tables import RESET_TABLES, PerfettoRows, flow_id
from nnemu.query._schema import create_tables, finish_schema
from nnemu.query._summary import LoadSummary
from nnemu.trace import (
    HEAD_RE,
    MALFORMED_ROW,
    MAX_ABS_NS,
    MAX_ID,
    MAX_SORTED_BYTES,
    NO_DUR,
    NO_PHASE,
    NO_PID_TID,
    NOT_AN_EVENT,
    NOT_CHROME_TRACE,
    ROW_RE,
    ROW_SEPARATOR,
    UNKNOWN_TGID,
    Counter,
    DumpProcess,
    DumpThread,
    Flow,
    FtraceLines,
    NotLineJson,
    SystemText,
    TraceFormat,
    atrace_tgid,
    event_lines,
    file_format,
    is_json_number,
    is_mark_row,
    json_line_events,
    json_problem,
    json_time_ns,
    negative_dur,
    negative_ts,
    not_a_number_dur,
    not_a_number_ts,
    out_of_order_warning,
    pid_of_tgid,
    pid_tid_problem,
    refuse_unreadable,
    system_text,
    time_ordered,
    timestamp_ns,
)

_BULK_LOAD_PRAGMAS: Final = (
    "PRAGMA page_size = 16384",
    "PRAGMA journal_mode = OFF",
    "PRAGMA synchronous = OFF",
    "PRAGMA cache_size = -32768",
)
"""A fresh database being filled: 16 KiB pages (a load is ~5% cheaper than with the default
4 KiB: fewer page splits), no rollback journal, no fsync, a 32 MB page cache."""
_MAX_CACHED_NAMES: Final = 20_000
_UNKNOWN_TASK: Final = "<...>"
_JSON_SLICE_PHASES: Final = frozenset({"B", "E", "X", "i", "I", "n"})
_FAST_STAMP: Final = 16
"""Longest ``SECONDS.FFFFFF`` timestamp the fast path reads: 15 digits (< ``MAX_ABS_NS``)."""
_SEPARATOR_LENGTH: Final = len(ROW_SEPARATOR)
_LEADING_SPACE: Final = re.compile(r"\s*")
_BAD_HEAD: Final[tuple[str, str, str | None]] = ("", "", None)
_NOT_A_MARK: Final = MarkInfo(None, None, PLAIN)
_MALFORMED_BEGIN: Final = "malformed begin mark: expected B|<tgid>|<name>; row skipped"
_UNTERMINATED: Final = (
    "the file ends mid-line (no line break after this row): row skipped, as Perfetto's trace"
    " processor skips it"
)
EMPTY_SLICE_NAME: Final = "[empty slice name]"
"""The name Perfetto's trace processor gives the slice of a ``B|tgid`` or ``B|tgid|`` row."""
_JSON_FLOW_PHASES: Final = frozenset({"s", "t", "f"})

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


_ROWS_PER_INSERT: Final = 200
"""Rows per multi-row ``INSERT ... VALUES (...), (...)`` (far fewer statement steps than
one ``executemany`` row at a time; 200 x 13 parameters is within SQLite's limit)."""
_ARGS_PER_INSERT: Final = 1000
"""``args`` rows per ``INSERT`` (3 values each; ~7% less insert time than 200 rows in
isolation, within noise in a whole load; 500 slice rows were no better than 200)."""
_ARG_VALUES: Final = 3 * _ARGS_PER_INSERT
"""Values of one ``args`` statement: buffered rows are written once there are this many."""
_ARGS_STATEMENT: Final = "INSERT INTO args VALUES " + ", ".join(["(?, ?, ?)"] * _ARGS_PER_INSERT)


def _insert_rows(
    conn: sqlite3.Connection,
    table: str,
    width: int,
    flat: Sequence[object],
    rows: int = _ROWS_PER_INSERT,
) -> None:
    """Insert the rows of ``width`` values laid end to end in ``flat`` into ``table``, in order,
    ``rows`` to a statement."""
    one = "(" + ", ".join("?" * width) + ")"
    step = rows * width
    whole = len(flat) - len(flat) % step
    if whole:
        statement = f"INSERT INTO {table} VALUES " + ", ".join([one] * rows)
        execute = conn.execute
        for start in range(0, whole, step):
            execute(statement, flat[start : start + step])
    if whole < len(flat):
        conn.executemany(
            f"INSERT INTO {table} VALUES {one}",
            [flat[start : start + width] for start in range(whole, len(flat), width)],
        )


_SLICE_COLUMNS: Final = (
    "id",
    "ts",
    "dur",
    "name",
    "depth",
    "parent_id",
    "track_id",
    "category",
    "layer",
    "phase",
    "kind",
    "arg_set_id",
    "line",
    "subtree_end_id",
)
"""The ``slice`` table's columns, in the order of a section's list (``INSERT`` names them)."""
_NO_PARENT: Final = 1
"""Bit of a section's ``_NULLS``: its ``parent_id`` is None."""
_NO_CATEGORY: Final = 2
"""Bit: its ``category`` is None."""
_NO_LAYER: Final = 4
"""Bit: its ``layer`` is None."""
_NO_PHASE: Final = 8
"""Bit: its ``phase`` is None."""
_NO_ARGS: Final = 16
"""Bit: its ``arg_set_id`` is None."""
_NO_LINE: Final = 32
"""Bit: its ``line`` is None (the input has no lines: Perfetto protobuf, a JSON document)."""
_NULLABLE: Final = (
    (_NO_PARENT, 5),
    (_NO_CATEGORY, 7),
    (_NO_LAYER, 8),
    (_NO_PHASE, 9),
    (_NO_ARGS, 11),
    (_NO_LINE, 12),
)
"""(bit, column index) of each column that may be None."""
_ALL_NULLS: Final = _NO_PARENT | _NO_CATEGORY | _NO_LAYER | _NO_PHASE | _NO_ARGS | _NO_LINE
_SLICE_STEPS: Final = tuple(
    (len(_SLICE_COLUMNS) - bin(nulls).count("1")) * _ROWS_PER_INSERT
    for nulls in range(_ALL_NULLS + 1)
)
"""Values of one slice statement, by ``_NULLS`` (each bit leaves one column out): a set of
None columns' rows are written once there are this many."""


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
            _NO_CATEGORY  # ftrace rows have none
            | (_NO_LAYER if info.layer is None else 0)
            | (_NO_PHASE if info.phase is None else 0)
            | (0 if info.args else _NO_ARGS)
        )
        """A begin's slice's ``_NULLS`` but for ``_NO_PARENT`` and ``_NO_LINE``."""
        self.values: tuple[str, ...] = tuple(
            value for value in (info.layer, info.phase, info.kind) if value is not None
        )
        """Its slice's layer, phase and kind, but those that are None."""
        self.args: tuple[str, ...] = tuple(itertools.chain.from_iterable(info.args))
        """Its slice's ``args``: key, value, key, value..."""


_BAD_TAIL: Final = _Tail("", "", "", False, _NOT_A_MARK)


class _SliceInsert:
    """How the slice rows whose None columns are one set are written: those columns are left
    out of the ``INSERT`` (SQLite stores NULL), so no None is bound (Python's sqlite3 looks
    an adapter up for each None it binds: ~0.3 µs, a quarter of a row's insert)."""

    __slots__ = ("one", "statement", "width")

    one: str
    """The one-row ``INSERT``."""
    statement: str
    """The ``_ROWS_PER_INSERT``-row ``INSERT``."""
    width: int
    """Values per row."""

    def __init__(self, nulls: int) -> None:
        left_out = {index for bit, index in _NULLABLE if nulls & bit}
        names = ", ".join(name for i, name in enumerate(_SLICE_COLUMNS) if i not in left_out)
        self.width = len(_SLICE_COLUMNS) - len(left_out)
        values = "(" + ", ".join("?" * self.width) + ")"
        self.one = f"INSERT INTO slice ({names}) VALUES {values}"
        self.statement = f"INSERT INTO slice ({names}) VALUES " + ", ".join(
            [values] * _ROWS_PER_INSERT
        )


# A section is a list laid out as its ``slice`` row without the columns that are None:
# (id, ts, dur, name, depth, [parent_id], track_id, [category], [layer], [phase], kind,
# [arg_set_id], [line], subtree_end_id), and last its ``_NULLS``: which columns are left out
# (bits ``_NO_PARENT``...).  While it is open, ``dur`` holds its end (None but for JSON X
# (complete) and instant events) and ``subtree_end_id`` is 0; its end takes the bits off,
# fills both in and adds the row to the rows of its bits (``Loader._flats``), which are
# written as soon as they fill one statement (``_SLICE_STEPS``).
_Open = list[object]
_END: Final = 2
"""Index of ``dur`` in an open section: its end (None unless known in advance)."""


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
        self.stack: list[_Open] = []

    def top(self) -> tuple[int, int] | None:
        """(id, ts) of the innermost open section, or None."""
        if not self.stack:
            return None
        ident, ts = self.stack[-1][:2]
        assert isinstance(ident, int)
        assert isinstance(ts, int)
        return ident, ts


def _int(value: object) -> int | None:
    """A JSON pid or tid as an int, or None (not an integer, or out of pid_t's range)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        text = value.strip()
        digits = text.removeprefix("-")
        if not (digits.isascii() and digits.isdigit() and len(digits) <= 10):
            return None
        value = int(text)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and abs(value) <= MAX_ID:
        return value
    return None


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


def _arg_value(value: object) -> object:
    """A JSON arg as SQLite stores it (JSON text for what SQLite has no type for)."""
    if isinstance(value, str | float) or (
        isinstance(value, int) and not isinstance(value, bool) and abs(value) < 2**63
    ):
        return value
    return json.dumps(value, sort_keys=True)


class Loader:
    """Feeds trace events into an open database with the query tables."""

    def __init__(self, conn: sqlite3.Connection, warn: Warn) -> None:
        self.conn = conn
        self.warn = warn
        self._next_id = 0
        self._next_track = 0
        self._threads: dict[int, _Thread] = {}
        self._all_threads: list[_Thread] = []
        self._flats: list[list[object]] = [[] for _ in range(_ALL_NULLS + 1)]
        """The finished slices' rows to write, by their ``_NULLS``, laid end to end (fewer
        than one statement's: a full statement's are written at once)."""
        self._inserts: dict[int, _SliceInsert] = {}
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

    def _insert(self, nulls: int) -> _SliceInsert:
        """How the rows of ``nulls`` are written (made on first use)."""
        insert = self._inserts.get(nulls)
        if insert is None:
            insert = self._inserts[nulls] = _SliceInsert(nulls)
        return insert

    def _write_slices(self, nulls: int) -> None:
        """Insert the rows of ``nulls``, one statement's worth (``_SLICE_STEPS``), and empty
        their list (kept: no slice of it is copied)."""
        flat = self._flats[nulls]
        self.conn.execute(self._insert(nulls).statement, flat)
        flat.clear()
        self.slices += _ROWS_PER_INSERT

    def _write_args(self) -> None:
        """Insert the ``args`` rows of the whole statements buffered; keep the rest."""
        rows = self._arg_rows
        if len(rows) == _ARG_VALUES:
            self.conn.execute(_ARGS_STATEMENT, rows)
            rows.clear()
            return
        whole = len(rows) - len(rows) % _ARG_VALUES
        for start in range(0, whole, _ARG_VALUES):
            self.conn.execute(_ARGS_STATEMENT, rows[start : start + _ARG_VALUES])
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
            _insert_rows(self.conn, "args", 3, self._arg_rows, _ARGS_PER_INSERT)
            self._arg_rows.clear()

    def _emit(self, record: _Open, dur: int) -> None:
        nulls = record.pop()
        assert isinstance(nulls, int)
        record[_END] = dur
        record[-1] = self._next_id - 1
        flat = self._flats[nulls]
        flat += record
        if len(flat) >= _SLICE_STEPS[nulls]:
            self._write_slices(nulls)

    def _expire(self, thread: _Thread, ts: int) -> None:
        """Close the complete/instant events on top of the stack that ended by ``ts``."""
        stack = thread.stack
        while stack:
            end = stack[-1][_END]
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
        if stack and stack[-1][_END] is not None:
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
        if len(arg_rows) >= _ARG_VALUES:
            self._write_args()
        record: _Open = [ident, ts, end, name, len(stack)]
        nulls = 0
        if stack:
            record.append(stack[-1][0])
        else:
            nulls = _NO_PARENT
        record.append(thread.track_id)
        for bit, value in (
            (_NO_CATEGORY, category),
            (_NO_LAYER, info.layer),
            (_NO_PHASE, info.phase),
        ):
            if value is None:
                nulls |= bit
            else:
                record.append(value)
        record.append(info.kind)
        if arg_set_id is None:
            nulls |= _NO_ARGS
        else:
            record.append(arg_set_id)
        if line is None:
            nulls |= _NO_LINE
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
            end = stack[-1][_END]
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
        record: _Open
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
                        self.warn(line_number, _MALFORMED_BEGIN)
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
                            tail_info.nulls | _NO_PARENT,
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
                            tail_info.nulls | _NO_PARENT,
                        ]
                    if extra:
                        if len(extra) == 2:
                            add_args((ident, extra[0], extra[1]))
                        elif len(extra) == 4:
                            add_args((ident, extra[0], extra[1], ident, extra[2], extra[3]))
                        else:
                            for at in range(0, len(extra), 2):
                                add_args((ident, extra[at], extra[at + 1]))
                        if len(arg_rows) >= _ARG_VALUES:
                            self._write_args()
                    if not file_lines:
                        del record[-3]
                        record[-1] |= _NO_LINE  # type: ignore[operator]
                    stack.append(record)
                elif stack and ts >= stack[-1][1]:  # type: ignore[operator]
                    record = stack.pop()
                    nulls = record.pop()
                    assert isinstance(nulls, int)
                    flat = flats[nulls]
                    record[2] = ts - record[1]  # type: ignore[operator]
                    record[-1] = next_id - 1
                    flat += record
                    if len(flat) >= _SLICE_STEPS[nulls]:
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
            self.warn(line_number, _UNTERMINATED)
        return block[:-1]

    def _head(self, head: str) -> tuple[str, str, str | None]:
        """``(task, tid, TGID column)`` of a row head ending before the timestamp, cached;
        empty when the fast path cannot tell exactly what ``ROW_RE`` would match."""
        heads = self._heads
        if len(heads) >= _MAX_CACHED_NAMES:
            heads.clear()
            self._known.clear()
        row_head = head + " "
        m = HEAD_RE.fullmatch(row_head)
        leading = _LEADING_SPACE.match(row_head)
        info = _BAD_HEAD
        # ROW_RE prefers the longest leading whitespace; a head whose task name
        # needs some of it is left to ROW_RE.
        if m is not None and leading is not None and m.start(1) == leading.end():
            task, tid, tgid_column = m.groups()
            info = (task, tid, tgid_column)
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
        tgid = _id(tgid_column) if has_tgid and tgid_column is not None else _payload_tgid(rest)
        tid_number = _id(tid)
        if tid_number is None:
            self.warn(line_number, f"thread id out of range (> {MAX_ID}); row skipped")
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
            self.warn(line_number, _MALFORMED_BEGIN)
            return
        self.begin(thread, ts, name, line=line_number if self._file_lines else None)

    # -- JSON --------------------------------------------------------------

    def json_event(
        self, event: object, line_number: int | None, *, store_line: bool = True
    ) -> None:
        """Load one Chrome trace event (B, E, X, instants and name metadata); warn of one that
        is not an object, has no ``ph``, or a pid, tid or ts of the wrong type, as parse does.
        ``line_number`` places warnings, and is the slice's ``line`` if ``store_line``."""
        where = line_number or 0
        if not isinstance(event, Mapping):
            self.warn(where, NOT_AN_EVENT)
            return
        ph = event.get("ph")
        if ph == "M":
            self._json_metadata(event, where)
            return
        if ph not in _JSON_SLICE_PHASES:
            if ph in _JSON_FLOW_PHASES or ph == "C":
                self._json_flow_or_counter(event, ph, where)
            elif "ph" not in event:
                self.warn(where, NO_PHASE)
            return  # async events have no thread slice
        raw_pid = event.get("pid")
        raw_tid = event.get("tid", raw_pid)
        pid = _int(raw_pid)
        tid = _int(raw_tid)
        if pid is None or tid is None:
            self.warn(where, pid_tid_problem(ph, raw_pid, raw_tid))
            return
        raw_ts = event.get("ts")
        ts = json_time_ns(raw_ts)
        if ts is None:
            if not is_json_number(raw_ts):
                self.warn(where, not_a_number_ts(raw_ts))
            else:
                self.warn(
                    where, f"{ph!s} event's ts {raw_ts!r} is not finite or out of range; skipped"
                )
            return
        if ts < 0:  # (parse refuses it, and Perfetto drops it)
            self.warn(where, negative_ts(raw_ts))
            return
        raw_dur = event.get("dur")
        dur = 0
        if ph == "X":
            if raw_dur is None:
                self.warn(where, NO_DUR)
                return
            if not is_json_number(raw_dur):
                self.warn(where, not_a_number_dur(raw_dur))
                return
            dur = json_time_ns(raw_dur) or 0
            if dur < 0:
                self.warn(where, negative_dur(raw_dur))
                return
        thread = self._thread(tid, pid)
        self._check_order(thread, ts, where)
        if ph == "E":
            self.end(thread, ts, where)
            return
        end: int | None = None
        if ph == "X":
            end = min(MAX_ABS_NS, ts + dur)
        elif ph != "B":
            end = ts
        args: list[tuple[str, object]] = []
        event_args = event.get("args")
        if isinstance(event_args, Mapping):
            for key, value in event_args.items():
                args.append((f"args.{key}", _arg_value(value)))
        category = event.get("cat")
        self.begin(
            thread,
            ts,
            str(event.get("name", "")),
            category=category if isinstance(category, str) else None,
            args=args,
            end=end,
            line=line_number if store_line else None,
        )

    def _json_flow_or_counter(self, event: Mapping[str, object], ph: str, where: int) -> None:
        """A JSON flow (``s``, ``t``, ``f``) or counter (``C``) event."""
        pid = _int(event.get("pid"))
        ts = json_time_ns(event.get("ts"))
        if ts is not None and ts < 0:
            ts = None  # (out of range, as for the other events)
        name = str(event.get("name", ""))
        if ph == "C":
            args = event.get("args")
            if pid is None or ts is None:
                self.warn(where, "C event without a pid and a finite ts in range; skipped")
            elif isinstance(args, Mapping):
                self.perfetto.json_counter(pid, name, ts, args, where)
            return
        tid = _int(event.get("tid", pid))
        ident = flow_id(event.get("id"))
        if tid is None or ts is None or ident is None:
            self.warn(where, f"{ph} event without a tid, an id and a finite ts in range; skipped")
            return
        thread = self._thread(tid, pid)
        if thread.stack and thread.stack[-1][_END] is not None:
            self._expire(thread, ts)
        top = thread.top()
        key = (str(event.get("cat", "")), name, ident)
        self.perfetto.flow_event(ph, key, thread.utid, top, event.get("bp") == "e", where)

    def track_event(self, event: Flow | Counter) -> None:
        """A Perfetto TrackEvent flow id (on the slice just begun) or counter value."""
        if isinstance(event, Counter):
            self.perfetto.track_event_counter(event.pid, event.name, event.ts, event.value)
            return
        thread = self._thread(event.tid, event.pid)
        top = thread.top()
        self.perfetto.track_event_flow(event.flow_id, top, terminating=event.terminating, where=0)

    def _json_metadata(self, event: Mapping[str, object], where: int) -> None:
        args = event.get("args")
        name = args.get("name") if isinstance(args, Mapping) else None
        raw_pid = event.get("pid")
        pid = _int(raw_pid)
        if not is_json_number(raw_pid) or not is_json_number(event.get("tid", raw_pid)):
            self.warn(where, NO_PID_TID)  # as parse says it; out of range: no name, silently
            return
        if not isinstance(name, str):
            return
        if event.get("name") == "process_name" and pid is not None:
            self._process_names[pid] = name
        elif event.get("name") == "thread_name":
            tid = _int(event.get("tid"))
            if tid is not None:
                self._json_thread_names[(pid, tid)] = name

    def load_json_in_time_order(
        self,
        events: Iterable[tuple[int | None, object]],
        *,
        store_line: bool,
        rows: Sequence[tuple[int, str]] = (),
        rows_first: bool = True,
    ) -> None:
        """Load (file line, event) pairs sorted by ``ts``, ties in file order (as Perfetto
        matches them); an event without a usable ``ts`` keeps its place after the one before
        it.  ``store_line``: as ``json_event``'s.  ``rows``: the document's
        ``systemTraceEvents`` rows (``system_rows``), merged with the events by time (in
        file order before them with ``rows_first``, else after them), as Perfetto sorts
        both."""
        keyed: list[tuple[int, int, int | None, object]] = []
        if rows_first:
            _key_rows(keyed, rows)
        last = -MAX_ABS_NS - 1
        for line_number, event in events:
            if isinstance(event, Mapping):
                ts = json_time_ns(event.get("ts"))
                if ts is not None:
                    last = ts
            keyed.append((last, len(keyed), line_number, event))
        if not rows_first:
            _key_rows(keyed, rows)
        keyed.sort(key=_by_time_then_place)
        for _, _, line_number, event in keyed:
            if isinstance(event, _SystemRow):
                self._slow_row(0 if line_number is None else line_number, event.text)
            else:
                self.json_event(event, line_number, store_line=store_line)

    def system_rows(self, embedded: SystemText) -> list[tuple[int, str]]:
        """The ``tracing_mark_write`` rows of a JSON document's ``systemTraceEvents`` text,
        each numbered with the file line the text is on (its process dump read here); its
        slices keep line NULL, as the document's events do."""
        self._file_lines = False
        source = FtraceLines(embedded.text.splitlines(keepends=True), on_dump=self._dump_row)
        return [(embedded.line, line) for _, line in source if "tracing_mark_write" in line]

    def load_json_lines(self, stream: Iterable[str]) -> None:
        """Load a JSON trace written one event per line (as nnemu and Chrome write it).

        Raises:
            NotLineJson: A line is not a whole event; the caller reads the document.
        """
        for line_number, event in json_line_events(stream):
            self.json_event(event, line_number)

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
                end = record[_END]
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


def _sniff(path: str) -> str:
    """``json`` for a Chrome JSON trace, ``perfetto`` for a Perfetto protobuf trace,
    ``ftrace`` for systrace HTML or ftrace text.

    Raises:
        TraceFormatError: the file is compressed or binary.
    """
    kind = file_format(path)
    refuse_unreadable(path, kind)
    return {TraceFormat.JSON: "json", TraceFormat.PERFETTO: "perfetto"}.get(kind, "ftrace")


def _reset(conn: sqlite3.Connection) -> None:
    for table in ("slice", "args", "thread_track", "thread", "process", *RESET_TABLES):
        conn.execute(f"DELETE FROM {table}")


def load_trace(
    path: str, conn: sqlite3.Connection, warn: Warn, *, progress: TextIO | None = None
) -> LoadSummary:
    """Create the query tables in ``conn`` and load the trace at ``path``.

    The load is one transaction with SQLite's journal and syncing off (``conn`` is
    a fresh database: a failed load leaves nothing worth keeping), indexes last.

    Args:
        path: systrace ``.html``, ftrace text, Chrome/nnemu ``.json``, or a Perfetto
            protobuf trace (``.perfetto-trace``, ``.pftrace``, plain or gzip).
        conn: An empty database.
        warn: Called with (line number, message) for each recoverable problem.
        progress: Where to draw a progress bar (only if a terminal, for big files).

    Returns:
        What was loaded.

    Raises:
        TraceFormatError: Nothing to load (no ftrace data, no slices, invalid JSON).
        OSError: The file cannot be read.
    """
    source = os.fspath(path)
    for pragma in _BULK_LOAD_PRAGMAS:
        conn.execute(pragma)
    create_tables(conn)
    kind = _sniff(source)
    # Each warning erases the progress bar first: a line of its own, not glued to the bar.
    shown = _BelowBar(warn)
    # A text or JSON trace small enough to be read again in time order (rows out of it)
    # holds its warnings until the load ends: those of the reading that counts, then the
    # load's own, all sorted by line as parse sorts its diagnostics; a bigger one (read
    # once) gives them as it reads.
    small = kind != "perfetto" and os.path.getsize(source) <= MAX_SORTED_BYTES
    held = _HeldWarn(shown) if small else None
    out: Warn = shown if held is None else held
    try:
        summary = _load(source, kind, conn, out, held, shown, progress)
    except TraceFormatError:
        if held is not None:
            held.release()
        raise
    if held is not None:
        held.release()
    return summary


def _load(
    source: str,
    kind: str,
    conn: sqlite3.Connection,
    warn: Warn,
    held: _HeldWarn | None,
    shown: _BelowBar,
    progress: TextIO | None,
) -> LoadSummary:
    """``load_trace`` of a trace of ``kind``, its warnings to ``warn`` (``held``: they are
    held, and a trace read again in time order drops those of its first reading)."""
    loader = Loader(conn, warn)
    last_line = 0
    label = f"loading {os.path.basename(source)}"
    with contextlib.ExitStack() as cleanup:
        # The bar is kept through finish() (the last rows and the indexes), shown as a stage.
        bar: Progress | None = None
        if kind == "json":
            stream = cleanup.enter_context(open(source, encoding="utf-8", errors="replace"))
            bar = cleanup.enter_context(Progress(source, stream, progress, label=label))
            shown.bar = bar
            counting = _CountedWarn(warn)
            loader = Loader(conn, counting)
            one_a_line = True
            try:
                loader.load_json_lines(bar.lines(stream))
            except NotLineJson:
                _reset(conn)
                stream.seek(0)
                one_a_line = False
                # The document's events are the same, in the same order, on the same lines:
                # the warnings the line pass gave already are not given again.
                loader = _load_json_document(
                    source, stream, conn, _CountedWarn(warn, skip=counting.count)
                )
            if held is not None and loader.out_of_order:
                # Matched again in time order, as Perfetto matches them; the warnings are
                # those of that reading.
                _reset(conn)
                held.discard()
                first_reading = loader
                stream.seek(0)
                if one_a_line:
                    loader = Loader(conn, warn)
                    loader.load_json_in_time_order(json_line_events(stream), store_line=True)
                else:
                    loader = _load_json_document(source, stream, conn, warn, in_time_order=True)
                loader.read_again_after(first_reading)
        elif kind == "perfetto":
            from nnemu.trace import PerfettoLines

            # Rows made from packets: a problem is placed by the packet's byte offset.
            pftrace = PerfettoLines(
                source, on_problem=lambda offset, message: warn(byte_place(offset), message)
            )

            def warn_at_packet(line_number: int, message: str) -> None:
                del line_number  # of the rows made from the packets
                warn(byte_place(pftrace.last_offset), message)

            loader = Loader(conn, warn_at_packet)
            pftrace.on_dump = loader._dump_row
            pftrace.on_track_event = loader.track_event
            loader.load_ftrace(pftrace, file_lines=False)
            loader.first_out_of_order = 0  # its rows' numbers are no place in the file
        else:
            stream = cleanup.enter_context(open(source, encoding="utf-8", errors="replace"))
            bar = cleanup.enter_context(Progress(source, stream, progress, label=label))
            shown.bar = bar
            lines = loader.load_ftrace(bar.lines(stream))
            last_line = lines.last_line_number
            if not lines.found_ftrace:
                raise TraceFormatError(
                    source,
                    last_line,
                    "",
                    "no ftrace data found (expected a systrace HTML trace-data block"
                    " starting with '# tracer:', ftrace text, or a JSON trace)",
                )
            kind = "systrace" if lines.is_html else "ftrace"
            if held is not None and loader.out_of_order:
                # Matched again in time order, as Perfetto matches them; the warnings are
                # those of that reading.
                _reset(conn)
                held.discard()
                first_reading = loader
                loader = Loader(conn, warn)
                stream.seek(0)
                loader.load_in_time_order(stream)
                loader.read_again_after(first_reading)
        if bar is not None:
            bar.stage("file read; building indexes")
        threads, processes = loader.finish()
    shown.bar = None
    if loader.slices == 0:
        raise TraceFormatError(
            source,
            last_line,
            "",
            "no slices found (tracing_mark_write B/E rows, or JSON B/E/X events)",
        )
    if loader.out_of_order:
        warning = out_of_order_warning(loader.out_of_order, sorted_again=loader.time_sorted)
        warn(loader.first_out_of_order, warning)
    if loader.open_slices:
        warn(
            last_line,
            f"{counted(loader.open_slices, 'section')} still open at the end of the trace (dur = -1)",
        )
    return LoadSummary(
        source=source,
        format=kind,
        slices=loader.slices,
        open_slices=loader.open_slices,
        unmatched_ends=loader.unmatched_ends,
        out_of_order=loader.out_of_order,
        threads=threads,
        processes=processes,
    )


def _load_json_document(
    source: str,
    stream: TextIO,
    conn: sqlite3.Connection,
    warn: Warn,
    *,
    in_time_order: bool = False,
) -> Loader:
    """Read a JSON trace as one document (an event array or ``{"traceEvents": [...]}``),
    its events in file order or ``in_time_order`` (``Loader.load_json_in_time_order``).

    Raises:
        TraceFormatError: Not JSON, or no list of events, as parse and replay say it.
    """
    text = stream.read()
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as err:  # ValueError: also an int of > 4300 digits
        line, message = json_problem(err)
        raise TraceFormatError(source, line, "", message) from None
    loader = Loader(conn, warn)
    # Chrome JSON can carry the systrace text of the same capture: its rows are read where
    # the text is in the file (before or after the events) and placed on its file line.
    embedded = system_text(text, document)
    events = document.get("traceEvents") if isinstance(document, Mapping) else document
    if events is None and embedded is not None:
        events = []
    if not isinstance(events, list):
        raise TraceFormatError(source, 1, "", NOT_CHROME_TRACE)
    # Each event's file line places its warnings (as parse places them); a document's
    # slices keep line NULL (its lines are not one event each).
    lines = event_lines(text, document, len(events))
    del text
    rows = loader.system_rows(embedded) if embedded is not None else []
    first = embedded is None or embedded.first
    if in_time_order:
        loader.load_json_in_time_order(
            (
                (None if lines is None else lines[index], event)
                for index, event in enumerate(events)
            ),
            store_line=False,
            rows=rows,
            rows_first=first,
        )
        return loader
    if first:
        for row_line, row in rows:
            loader._slow_row(row_line, row)
    for index, event in enumerate(events):
        loader.json_event(event, None if lines is None else lines[index], store_line=False)
    if not first:
        for row_line, row in rows:
            loader._slow_row(row_line, row)
    return loader


def _by_time_then_place(item: tuple[int, int, int | None, object]) -> tuple[int, int]:
    return item[0], item[1]


class _SystemRow:
    """An ftrace row of a JSON document's ``systemTraceEvents``, among its events."""

    def __init__(self, text: str) -> None:
        self.text = text


def _key_rows(
    keyed: list[tuple[int, int, int | None, object]], rows: Sequence[tuple[int, str]]
) -> None:
    """Append ``rows`` to ``keyed`` as ``load_json_in_time_order`` sorts them: by their
    timestamp (a row without one after the row before it), then their place."""
    last = -MAX_ABS_NS - 1
    for line_number, line in rows:
        m = ROW_RE.match(line)
        if m is not None:
            ts = timestamp_ns(m.group(4), m.group(5))
            if ts is not None:
                last = ts
        keyed.append((last, len(keyed), line_number, _SystemRow(line)))


class _HeldWarn:
    """A ``Warn`` that keeps the warnings until ``release`` passes them on, by line."""

    def __init__(self, warn: Warn) -> None:
        self.warn = warn
        self.held: list[tuple[int, str]] = []

    def __call__(self, where: int, message: str) -> None:
        self.held.append((where, message))

    def discard(self) -> None:
        """Forget the warnings held (those of a reading done again)."""
        self.held.clear()

    def release(self) -> None:
        """Pass the warnings held on to the ``Warn`` given, sorted by line (in the order
        given on one line; a warning of no line, ``0``, last)."""
        for where, message in sorted(self.held, key=_place):
            self.warn(where, message)
        self.held.clear()


def _place(item: tuple[int, str]) -> int:
    return item[0] if item[0] > 0 else MAX_ABS_NS


class _BelowBar:
    """A ``Warn`` that erases the progress bar (when one is drawn) before each warning, so
    that the warning is a line of its own; the bar is drawn again at its next update."""

    def __init__(self, warn: Warn) -> None:
        self.warn = warn
        self.bar: Progress | None = None

    def __call__(self, where: int, message: str) -> None:
        if self.bar is not None:
            self.bar.clear()
        self.warn(where, message)


class _CountedWarn:
    """A ``Warn`` that counts the warnings and passes them on, but for the first ``skip``."""

    def __init__(self, warn: Warn, *, skip: int = 0) -> None:
        self.warn = warn
        self.skip = skip
        self.count = 0

    def __call__(self, where: int, message: str) -> None:
        self.count += 1
        if self.count > self.skip:
            self.warn(where, message)
