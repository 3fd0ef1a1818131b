"""Loading a trace into the query tables, streamed.

Four inputs, each read by ``nnemu.trace``'s reader (``TraceEvents``): ftrace text and
systrace HTML (its ftrace block and process dump; the rows fed to ``Loader``, a ``RowSink``:
``load_text``), Chrome trace-event JSON (``_json_loader``) and Perfetto protobuf (its
canonical events: ``_event_loader``).  Only the open
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

from nnemu.query._marks import MarkInfo, describe
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
    BEGIN,
    COUNTER,
    CUT_ROW,
    END,
    MAX_ABS_NS,
    PROBLEM,
    PROCESS,
    THREAD,
    Event,
    RowSink,
    TraceEvents,
)

_MAX_CACHED_NAMES: Final = 20_000
_UNKNOWN_TASK: Final = "<...>"
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


class _TextName:
    """What a text row's begin named ``name`` (as the reader gives it) puts in its slice's row
    (cached per distinct name: ``Loader._text_name``)."""

    __slots__ = ("args", "name", "nulls", "values")

    def __init__(self, name: str, info: MarkInfo) -> None:
        self.name = name
        """The slice's name: trailing whitespace dropped; none: ``EMPTY_SLICE_NAME``."""
        self.nulls = (
            NULL_CATEGORY  # ftrace rows have none
            | (NULL_LAYER if info.layer is None else 0)
            | (NULL_PHASE if info.phase is None else 0)
            | (0 if info.args else NULL_ARGS)
        )
        """Its slice's ``_NULLS`` but for ``NULL_PARENT`` (and a line: it has one)."""
        self.values: tuple[str, ...] = tuple(
            value for value in (info.layer, info.phase, info.kind) if value is not None
        )
        """Its slice's layer, phase and kind, but those that are None."""
        self.args: tuple[str, ...] = tuple(itertools.chain.from_iterable(info.args))
        """Its slice's ``args``: key, value, key, value..."""


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


class Loader(RowSink):
    """Feeds trace events into an open database with the query tables (a text trace's rows
    as the ``RowSink`` its reader feeds: ``load_text``)."""

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
        self._text_names: dict[str, _TextName] = {}
        """A text row's begin's name, as the reader gives it, to what its slice's row has."""
        self._skip_at = -1
        """The place (line) of the last text row's ``PROBLEM`` that has an ``extra``."""
        self._skip_cut = 0
        """1 when it is ``CUT_ROW`` (its row is skipped), 0 when ``NO_SLICE``."""
        self._skip_pid = -1
        """Its ``PROBLEM``'s pid (``NO_SLICE``: its thread's process, -1 none)."""
        self.perfetto = PerfettoRows(conn, warn)
        self.slices = 0
        self.open_slices = 0
        self.unmatched_ends = 0
        self.out_of_order = 0
        """Rows earlier than the row before them on their thread."""
        self.first_out_of_order = 0
        """The line of the first of them (0: none, or not a line of the file)."""
        self.time_sorted = False
        """The rows were read in time order (``load_text``'s ``in_time_order``) after reading them in
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

    # -- systrace and ftrace text ----------------------------------------

    def load_text(self, trace: TraceEvents, *, in_time_order: bool = False) -> None:
        """Load a systrace or ftrace text's events (``trace.feed``: the usual rows as calls to
        ``row``, the rest as ``event``), in file order or ``in_time_order``, each slice on its
        row's line (``slice.line``), each warning at its line."""
        trace.feed(self, in_time_order=in_time_order)

    def row(self, kind: int, ts: int, place: int, pid: int, tid: int, name: str, task: str) -> None:
        """A text row's ``BEGIN`` or ``END`` (``RowSink``): ``pid`` its process (-1: none;
        0 too, a TGID column's), ``task`` its thread's name (``<...>``: not known).

        Rows of ftrace text are B/E marks only (no complete events: every open record's end
        is None) and no flow waits for a slice to begin, so a begin's row is laid out here in
        one list display (no tuple or append per value; as ``begin`` lays it out, with no
        category and its name's args) and an end's written as ``_emit`` writes it.
        """
        thread = self._threads.get(tid)
        if thread is None:
            thread = self._thread(tid, None if pid < 0 else pid)
        elif pid >= 0:
            tgid = thread.tgid  # (an int compared natively, not the boxed pid)
            if tgid is None or tgid != pid:
                thread = self._thread(tid, pid)
        if task != _UNKNOWN_TASK:
            thread.name = task
        if ts < thread.last_ts:
            self._out_of_order(place)
        else:
            thread.last_ts = ts
        stack = thread.stack
        record: OpenSlice
        if kind == BEGIN:
            # (Compiled, ``x or y`` of an object is a generic truth test: a None test is not.)
            text = self._text_names.get(name)
            if text is None:
                text = self._text_name(name)
            if thread.track_id is None:
                thread.track_id = self._next_track
                self._next_track += 1
            ident = self._next_id
            self._next_id = ident + 1
            values = text.values
            extra = text.args
            # Its arg_set_id (its id) only when it has args, its line, then as open.
            if stack:
                depth = len(stack)
                parent = stack[-1][0]
                if extra:
                    record = [
                        ident,
                        ts,
                        None,
                        text.name,
                        depth,
                        parent,
                        thread.track_id,
                        *values,
                        ident,
                        place,
                        0,
                        text.nulls,
                    ]
                else:
                    record = [
                        ident,
                        ts,
                        None,
                        text.name,
                        depth,
                        parent,
                        thread.track_id,
                        *values,
                        place,
                        0,
                        text.nulls,
                    ]
            elif extra:
                record = [
                    ident,
                    ts,
                    None,
                    text.name,
                    0,
                    thread.track_id,
                    *values,
                    ident,
                    place,
                    0,
                    text.nulls | NULL_PARENT,
                ]
            else:
                record = [
                    ident,
                    ts,
                    None,
                    text.name,
                    0,
                    thread.track_id,
                    *values,
                    place,
                    0,
                    text.nulls | NULL_PARENT,
                ]
            if extra:
                arg_rows = self._arg_rows
                if len(extra) == 2:
                    arg_rows += (ident, extra[0], extra[1])
                elif len(extra) == 4:
                    arg_rows += (ident, extra[0], extra[1], ident, extra[2], extra[3])
                else:
                    for at in range(0, len(extra), 2):
                        arg_rows += (ident, extra[at], extra[at + 1])
                if len(arg_rows) >= ARG_VALUES:
                    self._write_args()
            stack.append(record)
        elif stack and ts >= stack[-1][1]:  # type: ignore[operator]
            record = stack.pop()
            nulls = record.pop()
            assert isinstance(nulls, int)
            flat = self._flats[nulls]
            record[END_AT] = ts - record[1]  # type: ignore[operator]
            record[-1] = self._next_id - 1
            flat += record
            if len(flat) >= SLICE_STEPS[nulls]:
                self._write_slices(nulls)
        else:
            self.end(thread, ts, place)

    def event(self, event: Event) -> None:
        """A text trace's event other than a usual row (``RowSink``): a ``PROBLEM`` (warned)
        and the events of its row after it, a counter row, a process dump's names.

        A ``PROBLEM`` with an ``extra`` skips what Perfetto's trace processor skips of its
        row: the slice of a ``NO_SLICE`` begin (its thread is still named, in the process of
        the ``PROBLEM``'s pid), and all of a ``CUT_ROW``."""
        kind, ts, at, pid, tid, name, extra = event
        if at == self._skip_at:
            if self._skip_cut:
                return
            if kind <= END:  # the begin of a NO_SLICE row
                thread = self._thread(tid, self._skip_pid if self._skip_pid >= 0 else None)
                if isinstance(extra, str) and extra != _UNKNOWN_TASK:
                    thread.name = extra
                self._check_order(thread, ts, at)
                return
        if kind <= END:  # a row the reader read with ROW_RE
            self.row(
                kind, ts, at, pid, tid, name, extra if isinstance(extra, str) else _UNKNOWN_TASK
            )
        elif kind == COUNTER:
            if isinstance(extra, str):
                self.warn(at, extra)
            elif isinstance(extra, float):
                self.perfetto.atrace_counter(pid if pid >= 0 else None, name, ts, extra)
        elif kind == PROCESS:
            self._process_names[pid] = name
        elif kind == THREAD:
            self._dump_threads[tid] = (pid, name)
        elif kind == PROBLEM:
            self.warn(at, name)
            if isinstance(extra, int):
                self._skip_at = at
                self._skip_cut = 1 if extra == CUT_ROW else 0
                self._skip_pid = pid

    def _text_name(self, name: str) -> _TextName:
        """What a text row's begin named ``name`` puts in its slice's row (cached)."""
        names = self._text_names
        if len(names) >= _MAX_CACHED_NAMES:
            names.clear()
        text = names[name] = _TextName(
            stripped := name.rstrip() or EMPTY_SLICE_NAME, self._describe(stripped)
        )
        return text

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
