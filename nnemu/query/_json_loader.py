"""Loading a Chrome trace-event JSON trace's canonical events (``nnemu.trace.TraceEvents``)
into the query tables: ``JsonLoader``, the ``Loader`` that reads what ``nnemu.trace``'s
``_chrome`` gives of JSON (B, E, X, thread instants and marks with their category and args,
v1 flows, counters, name metadata, the problems), and the rows of a document's
``systemTraceEvents`` text among them.

A wheel runs this module compiled by mypyc with the loader (``nnemu._native``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Final

from nnemu.query._loader import EMPTY_SLICE_NAME, Loader
from nnemu.query._slice_rows import END_AT
from nnemu.trace import (
    ARGS,
    BEGIN,
    COMPLETE,
    COUNTER,
    END,
    FLOW,
    FLOW_END,
    FLOW_END_NEXT,
    FLOW_START,
    FLOW_STEP,
    INSTANT,
    MAX_ABS_NS,
    MAX_ID,
    NO_SLICE,
    PROBLEM,
    PROCESS,
    RESTART,
    THREAD,
    Event,
)

NO_NAME: Final = "[No name]"
"""The name trace processor gives a JSON slice whose ``name`` is empty, missing or no string."""
_UNKNOWN_TASK: Final = "<...>"
_FLOW_PHASE: Final = {FLOW_START: "s", FLOW_STEP: "t", FLOW_END: "f", FLOW_END_NEXT: "f"}
"""The JSON phase of a v1 flow, by how it binds (``nnemu.trace.FLOW_START`` ...)."""


def _arg_value(value: object) -> object:
    """A JSON arg as SQLite stores it (JSON text for what SQLite has no type for)."""
    if isinstance(value, str | float) or (
        isinstance(value, int) and not isinstance(value, bool) and abs(value) < 2**63
    ):
        return value
    return json.dumps(value, sort_keys=True)


class JsonLoader(Loader):
    """A ``Loader`` that reads the canonical events of a Chrome JSON trace."""

    def load_json(self, batches: Iterable[list[Event]], *, store_line: bool) -> bool:
        """Load the events of ``batches`` in the order they come (file order, or
        ``time_ordered_events``'), each ``PROBLEM`` a warning at its line.

        A slice keeps its file line (``slice.line``) if ``store_line`` (a file of one event
        per line), its category and args (``args.<key>``) from the ``ARGS`` before it; one
        with no name is ``NO_NAME``.  An ``X`` ends itself at its end, an instant at once.
        A ``BEGIN`` or ``END`` whose ``extra`` is a str is a row of the document's
        ``systemTraceEvents`` text (its task; read as ftrace rows are: ``EMPTY_SLICE_NAME``;
        a ``NO_SLICE`` problem before it at its place: it opens no slice).
        A v1 flow (``s``, ``t``, ``f``) binds to its thread's innermost open slice, as
        trace processor binds it; a slice's ``bind_id`` is not read.

        Returns:
            False when the reading restarts (``RESTART``: the caller empties the tables
            and loads the rest of ``batches``, the document's events); else True.
        """
        perfetto = self.perfetto
        threads = self._threads
        category: str | None = None
        args: list[tuple[str, object]] = []
        no_slice = -1  # the place of the last NO_SLICE problem: its row's begin opens none
        for batch in batches:
            for kind, ts, at, pid, tid, name, extra in batch:
                if kind <= END and extra is None:  # a JSON B or E: the hot path
                    thread = threads.get(tid)
                    if thread is None or thread.tgid != pid:
                        thread = self._thread(tid, pid)
                    if ts < thread.last_ts:
                        self._out_of_order(at)
                    else:
                        thread.last_ts = ts
                    if kind == END:
                        stack = thread.stack
                        if stack and stack[-1][END_AT] is None and ts >= stack[-1][1]:  # type: ignore[operator]
                            record = stack.pop()
                            self._emit(record, ts - record[1])  # type: ignore[operator]
                        else:
                            self.end(thread, ts, at)
                        continue
                    self.begin(
                        thread,
                        ts,
                        name or NO_NAME,
                        category=category,
                        args=args,
                        line=at if store_line else None,
                    )
                    if category is not None or args:
                        category = None
                        args = []
                elif kind == ARGS:
                    assert isinstance(extra, dict)
                    cat = extra.get("cat")
                    category = cat if isinstance(cat, str) else None
                    values = extra.get("args")
                    if isinstance(values, dict):
                        args = [(f"args.{key}", _arg_value(v)) for key, v in values.items()]
                elif kind <= END:  # a systemTraceEvents row (extra: its task)
                    thread = self._thread(tid, pid if 0 < pid <= MAX_ID else None)
                    if extra != _UNKNOWN_TASK and isinstance(extra, str):
                        thread.name = extra
                    self._check_order(thread, ts, at)
                    if kind == BEGIN:
                        if at != no_slice:
                            self.begin(thread, ts, name.rstrip() or EMPTY_SLICE_NAME)
                    else:
                        self.end(thread, ts, at)
                elif kind in (COMPLETE, INSTANT):
                    thread = self._thread(tid, pid)
                    self._check_order(thread, ts, at)
                    end = ts
                    if kind == COMPLETE:
                        assert isinstance(extra, int)
                        end = min(MAX_ABS_NS, ts + extra)
                    self.begin(
                        thread,
                        ts,
                        name or NO_NAME,
                        category=category,
                        args=args,
                        end=end,
                        line=at if store_line else None,
                    )
                    category = None
                    args = []
                elif kind == COUNTER:
                    if isinstance(extra, str):
                        self.warn(at, extra)
                    elif isinstance(extra, float):
                        if tid < 0:  # a JSON C event's arg
                            perfetto.json_counter(pid, name, ts, extra)
                        else:  # a C| row of the systemTraceEvents text
                            perfetto.atrace_counter(None if pid < 0 else pid, name, ts, extra)
                elif kind == FLOW:
                    if isinstance(extra, str):
                        self.warn(at, extra)
                    elif isinstance(extra, tuple):
                        how, flow_cat, ident = extra
                        phase = _FLOW_PHASE.get(how)
                        if phase is None:
                            continue  # a slice's bind_id: not read
                        thread = self._thread(tid, None if pid < 0 else pid)
                        if thread.stack and thread.stack[-1][END_AT] is not None:
                            self._expire(thread, ts)
                        key = (flow_cat, name, ident)
                        bind_enclosing = how == FLOW_END
                        perfetto.flow_event(
                            phase, key, thread.utid, thread.top(), bind_enclosing, at
                        )
                elif kind == PROCESS:
                    self._process_names[pid] = name
                elif kind == THREAD:
                    if extra is True:  # a JSON thread_name
                        self._json_thread_names[(pid, tid)] = name
                    else:  # a process dump's row
                        self._dump_threads[tid] = (pid, name)
                elif kind == PROBLEM:
                    self.warn(at, name)
                    if extra == NO_SLICE:
                        no_slice = at
                elif kind == RESTART:
                    return False
        return True
