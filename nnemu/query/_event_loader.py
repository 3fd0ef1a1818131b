"""Loading canonical trace events (``nnemu.trace.TraceEvents``) into the query tables.

``EventLoader`` is the ``Loader`` that reads the events the one trace reader gives: slice
begins and ends, counter values and flows bound to slices (as Perfetto's trace processor
binds them: ``_perfetto_tables``), process and thread names, and the reader's problems.
A Perfetto protobuf trace is loaded through it (``_load.load_trace``).

A wheel runs this module compiled by mypyc with the loader (``nnemu._native``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from nnemu.query._loader import EMPTY_SLICE_NAME, Loader
from nnemu.query._slice_rows import END_AT
from nnemu.trace import (
    BEGIN,
    COUNTER,
    END,
    FLOW,
    FLOW_IN,
    FLOW_THROUGH,
    MAX_ID,
    PROBLEM,
    PROCESS,
    THREAD,
    Event,
)

_UNKNOWN_TASK = "<...>"


class EventLoader(Loader):
    """A ``Loader`` that reads canonical events."""

    def load_events(self, batches: Iterable[list[Event]], place: Callable[[int], int]) -> None:
        """Load the events of ``batches`` in the order they come (a slice's ``line`` NULL);
        ``place`` turns an event's place into a warning's ``where`` (``byte_place`` for a
        Perfetto trace's byte offsets).

        A begin's or end's pid is its thread's process (a pid of 0 or beyond pid_t names
        none); its ``extra`` the thread's name as its row showed it (``<...>``: not known;
        the events' own ``TASK`` columns have no leading space).
        A begin with no name is ``EMPTY_SLICE_NAME``, as trace processor names it.  A
        counter of a thread is an atrace counter (``atrace_counter``), one of no thread a
        counter track's (``process_counter_track_event``).
        """
        perfetto = self.perfetto
        threads = self._threads
        for batch in batches:
            for kind, ts, at, pid, tid, name, extra in batch:
                if kind <= END:  # BEGIN (0) or END (1): one compare on the hot path
                    tgid = pid if 0 < pid <= MAX_ID else None
                    thread = threads.get(tid)
                    if thread is None or (tgid is not None and thread.tgid != tgid):
                        thread = self._thread(tid, tgid)
                    if extra != _UNKNOWN_TASK and isinstance(extra, str):
                        thread.name = extra
                    if ts < thread.last_ts:
                        self._out_of_order(place(at))
                    else:
                        thread.last_ts = ts
                    if kind == BEGIN:
                        self.begin(thread, ts, name.rstrip() or EMPTY_SLICE_NAME)
                        continue
                    stack = thread.stack
                    if stack and stack[-1][END_AT] is None and ts >= stack[-1][1]:  # type: ignore[operator]
                        record = stack.pop()
                        self._emit(record, ts - record[1])  # type: ignore[operator]
                    else:
                        self.end(thread, ts, place(at))
                elif kind == COUNTER:
                    if isinstance(extra, str):
                        self.warn(place(at), extra)
                    elif isinstance(extra, float):
                        owner = pid if pid >= 0 else None
                        if tid >= 0:
                            perfetto.atrace_counter(owner, name, ts, extra)
                        else:
                            perfetto.track_event_counter(owner, name, ts, extra)
                elif kind == FLOW:
                    if isinstance(extra, tuple) and isinstance(extra[2], int):
                        how = extra[0]
                        if how in (FLOW_THROUGH, FLOW_IN):
                            top = self._thread(tid, pid).top()
                            perfetto.track_event_flow(
                                extra[2], top, terminating=how == FLOW_IN, where=0
                            )
                elif kind == PROCESS:
                    self._process_names[pid] = name
                elif kind == THREAD:
                    self._dump_threads[tid] = (pid, name)
                elif kind == PROBLEM:
                    self.warn(place(at), name)
