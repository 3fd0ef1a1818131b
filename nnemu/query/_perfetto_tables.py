"""Perfetto's ``flow``, ``counter`` and counter-track tables, and how a trace fills them.

The loader hands this module what it reads: Chrome JSON flow events (``s``, ``t``,
``f``), JSON counters (``C``) and systrace counter marks (``C|tgid|name|value``).
They are bound and named as Perfetto's trace processor does (checked against its
v58 ``trace_processor_shell``):

- a flow start (``s``) or step (``t``) binds to the innermost slice open on its
  thread at its timestamp; a flow end (``f``) with ``"bp": "e"`` too, and one
  without it to the next slice that begins on its thread. Flow events are matched
  by (``cat``, ``name``, ``id``); a start with no enclosing slice, or a step or end
  with no start, makes no flow (a warning says so). As in trace processor's
  ``FlowTracker``, a flow goes from the slice that began first to the other
  (``slice_out`` is the earlier slice, the earlier-bound one on a tie), whichever
  of the two the ``s`` was in. A step moves the flow on to its slice; an end
  does not, so a later ``f`` with the same id links the same source again, and a
  second ``s`` with an id already started is skipped. ``trace_id`` numbers the
  flows' (cat, name, id) keys 0, 1, ... in order of first sight, as trace
  processor numbers them.
- a JSON counter gives one track per (process, ``"<name> <arg key>"``), of type
  ``json_counter``, with a value per numeric arg (a string that reads as a number
  counts, as in Perfetto); a systrace counter one track per (tgid, name), of type
  ``atrace_counter``, with an integer value. Values are stored as REAL.

Counter tracks get ids after the thread tracks (Perfetto's tracks share one id
space). Counters and flows are written in batches, like slices.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from typing import Final

from nnemu._text import counted
from nnemu.trace import MALFORMED_COUNTER, counter_event

TABLES: Final = """
CREATE TABLE flow (
    id INTEGER PRIMARY KEY,
    slice_out INTEGER NOT NULL,
    slice_in INTEGER NOT NULL,
    trace_id INTEGER,
    arg_set_id INTEGER
);
CREATE TABLE process_counter_track (
    id INTEGER PRIMARY KEY,
    name TEXT,
    type TEXT,
    parent_id INTEGER,
    unit TEXT,
    description TEXT,
    upid INTEGER
);
CREATE TABLE counter (
    id INTEGER PRIMARY KEY,
    ts INTEGER NOT NULL,
    track_id INTEGER NOT NULL,
    value REAL,
    arg_set_id INTEGER
);
"""
"""Tables, created before loading (beside those of ``_schema``)."""

INDEXES: Final = """
CREATE INDEX flow_slice_out ON flow(slice_out);
CREATE INDEX flow_slice_in ON flow(slice_in);
CREATE INDEX counter_track_id ON counter(track_id, ts);
"""

VIEWS: Final = """
CREATE VIEW counter_track AS
SELECT id, name, parent_id, type, unit, description FROM process_counter_track;
"""
"""Every counter track of nnemu's is a process's, so ``counter_track`` is a view of them."""

RESET_TABLES: Final = ("flow", "counter", "process_counter_track")

_BATCH_ROWS: Final = 10_000

Warn = Callable[[int, str], None]
FlowKey = tuple[str, str, object]
"""(cat, name, id) of a JSON v1 flow event."""
Bound = tuple[int, int]
"""(id, ts) of the slice a flow event is bound to."""


class PerfettoRows:
    """Collects the flows and counters of one load and writes them to the database."""

    def __init__(self, conn: sqlite3.Connection, warn: Warn) -> None:
        self.conn = conn
        self.warn = warn
        self._flows: list[tuple[int, int, int, int, int | None]] = []
        self._next_flow = 0
        self._flow_args: dict[tuple[str, str], int] = {}
        # The slice a flow was last bound to, by (cat, name, id).
        self._flow_source: dict[FlowKey, Bound] = {}
        # trace_id of each flow: trace processor's number for it, in order of first sight.
        self._flow_numbers: dict[FlowKey, int] = {}
        self.pending: dict[int, list[FlowKey]] = {}
        """Flow ends waiting for the next slice of a thread, by utid."""
        # TrackEvent flows in progress: the slice each flow id was last bound to.
        self._track_event_flows: dict[int, Bound] = {}
        self._counters: list[tuple[int, int, int, float]] = []
        self._next_counter = 0
        # (pid, name, type) -> local track index (0, 1, ...).
        self._tracks: dict[tuple[int | None, str, str], int] = {}
        self.flows = 0
        self.counters = 0

    @property
    def pids(self) -> set[int]:
        """The processes that own counter tracks."""
        return {pid for pid, _, _ in self._tracks if pid is not None}

    # -- flows -------------------------------------------------------------

    def _insert_flow(self, key: FlowKey, slice_in: Bound, *, step: bool) -> None:
        """Link the slice ``key`` was last bound to and ``slice_in``, the earlier one first.

        A step moves the flow on to ``slice_in``; an end leaves it where it was.
        """
        source = self._flow_source.get(key)
        if source is None:
            return
        if step:
            self._flow_source[key] = slice_in
        index = self._flow_args.setdefault(key[:2], len(self._flow_args))
        self._link(source, slice_in, self._flow_numbers[key], -1 - index)

    def _link(self, first: Bound, second: Bound, trace_id: int, args: int | None) -> None:
        """Write a flow between two slices, from the one that began first."""
        if first[1] > second[1]:
            first, second = second, first
        self._flows.append((self._next_flow, first[0], second[0], trace_id, args))
        self._next_flow += 1
        if len(self._flows) >= _BATCH_ROWS:
            self._flush()

    def track_event_flow(
        self, flow_id: int, top: Bound | None, *, terminating: bool, where: int
    ) -> None:
        """A Perfetto TrackEvent's ``flow_ids`` (or ``terminating_flow_ids``) entry.

        As trace processor: the first slice with an id starts the flow, each later
        one continues it from the previous, a terminating id ends it; ``trace_id``
        is the flow id.
        """
        if top is None:
            self.warn(where, f"flow id {flow_id} with no slice on its thread; skipped")
            return
        source = self._track_event_flows.get(flow_id)
        if source is None:
            if terminating:
                self.warn(where, f"terminating flow id {flow_id} that no slice began; skipped")
            else:
                self._track_event_flows[flow_id] = top
            return
        self._link(source, top, flow_id, None)
        if terminating:
            del self._track_event_flows[flow_id]
        else:
            self._track_event_flows[flow_id] = top

    def flow_event(
        self, ph: str, key: FlowKey, utid: int, top: Bound | None, bind_enclosing: bool, where: int
    ) -> None:
        """A JSON flow event ``ph`` (``s``, ``t`` or ``f``) on thread ``utid``.

        ``top`` is the innermost slice open on the thread at the event, if any.
        """
        self._flow_numbers.setdefault(key, len(self._flow_numbers))
        if ph == "f" and not bind_enclosing:
            self.pending.setdefault(utid, []).append(key)
            return
        if top is None:
            self.warn(where, f"flow event ({ph}) with no enclosing slice on its thread; skipped")
            return
        if ph == "s":
            if key in self._flow_source:
                self.warn(where, "flow start (s) with an id already started; skipped")
            else:
                self._flow_source[key] = top
            return
        if key not in self._flow_source:
            self.warn(where, f"flow event ({ph}) with no flow start (s) before it; skipped")
            return
        self._insert_flow(key, top, step=ph == "t")

    def slice_begun(self, utid: int, slice_id: int, ts: int) -> None:
        """Bind the flow ends waiting on thread ``utid`` to its new slice."""
        keys = self.pending.pop(utid, None)
        for key in keys or ():
            if key not in self._flow_source:
                self.warn(0, "flow end (f) with no flow start (s) before it; skipped")
                continue
            self._insert_flow(key, (slice_id, ts), step=False)

    # -- counters ----------------------------------------------------------

    def track_event_counter(self, pid: int | None, name: str, ts: int, value: float) -> None:
        """A Perfetto TrackEvent counter value on the track ``name`` (of process ``pid``)."""
        self._counter(pid, name, "process_counter_track_event", ts, value)

    def atrace_counter(self, pid: int | None, name: str, ts: int, value: float) -> None:
        """An atrace counter row's value (``C|tgid|name|value``) on the track ``name`` of
        process ``pid``."""
        self._counter(pid, name, "atrace_counter", ts, value)

    def _counter(self, pid: int | None, name: str, kind: str, ts: int, value: float) -> None:
        track = self._tracks.setdefault((pid, name, kind), len(self._tracks))
        self._counters.append((self._next_counter, ts, track, value))
        self._next_counter += 1
        if len(self._counters) >= _BATCH_ROWS:
            self._flush()

    def json_counter(self, pid: int, name: str, ts: int, value: float) -> None:
        """A JSON ``C`` event's numeric arg (a ``COUNTER`` of ``nnemu.trace``) on the track
        ``name`` (``"<name> <key>"``) of process ``pid``."""
        self._counter(pid, name, "json_counter", ts, value)

    def ftrace_counter(self, line: str, line_number: int) -> bool:
        """Load ``line`` if it is a ``C|tgid|name|value`` row (read as trace processor reads
        it: ``nnemu.trace.counter_event``); False if it is not one."""
        event = counter_event(line, line_number)
        if event is None:
            return False
        _, ts, _, pid, _, name, value = event
        if not isinstance(value, float):  # MALFORMED_COUNTER
            self.warn(line_number, MALFORMED_COUNTER)
            return True
        self.atrace_counter(None if pid < 0 else pid, name, ts, value)
        return True

    # -- the end -----------------------------------------------------------

    def _flush(self) -> None:
        if self._flows:
            self.conn.executemany("INSERT INTO flow VALUES (?, ?, ?, ?, ?)", self._flows)
            self.flows += len(self._flows)
            self._flows.clear()
        if self._counters:
            self.conn.executemany("INSERT INTO counter VALUES (?, ?, ?, ?, NULL)", self._counters)
            self.counters += len(self._counters)
            self._counters.clear()

    def finish(self, first_track_id: int, first_arg_set_id: int, upids: Mapping[int, int]) -> None:
        """Write what is buffered, the counter tracks and the flows' args.

        Args:
            first_track_id: The id of the first counter track (after the thread tracks).
            first_arg_set_id: An arg set id above every slice's.
            upids: The ``upid`` of each pid.
        """
        self._flush()
        if self.pending:
            waiting = sum(len(keys) for keys in self.pending.values())
            self.warn(0, f"{counted(waiting, 'flow end')} (f) with no slice after them; skipped")
            self.pending.clear()
        self.conn.executemany(
            "INSERT INTO process_counter_track VALUES (?, ?, ?, NULL, NULL, NULL, ?)",
            [
                (first_track_id + index, name, kind, None if pid is None else upids.get(pid))
                for (pid, name, kind), index in self._tracks.items()
            ],
        )
        if self.counters:
            self.conn.execute("UPDATE counter SET track_id = track_id + ?", (first_track_id,))
        # Flows refer to their (cat, name) arg set by -1 - index until the ids are known.
        arg_rows: list[tuple[int, str, object]] = []
        for (cat, name), index in self._flow_args.items():
            arg_set_id = first_arg_set_id + index
            arg_rows += [(arg_set_id, "cat", cat), (arg_set_id, "name", name)]
        if arg_rows:
            self.conn.executemany("INSERT INTO args VALUES (?, ?, ?)", arg_rows)
            self.conn.execute(
                "UPDATE flow SET arg_set_id = ? - 1 - arg_set_id", (first_arg_set_id,)
            )
