"""The tracer: NNTRACE marks written on the emulated thread that runs the code.

Every layer calls ``begin``/``switch``/``end`` exactly where the AOSP code has an
``NNTRACE_*`` scope (docs/hal-semantics.md §6); HIDL proxies and stubs call
``begin``/``end`` with ``HIDL::<Iface>::<method>::client|server`` names.  Events
go to sinks in order of (virtual time, emission order).  A task that accounts CPU
work without a task switch writes marks ahead of the kernel's clock, so events
wait in a buffer, kept in that order as they come (an event earlier than the
buffer's last is inserted before the later ones), and are released once the
kernel's time has passed them: no later event can be earlier.

Sinks that take events in batches (``BatchSink``: the ftrace/systrace writer)
get them up to ``BATCH_EVENTS`` at a time, so a mark costs the hot path one tuple;
with any other sink or an observer attached, events are released as soon as
the clock passes them, one call per event, as the ``TraceSink`` protocol says.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Hashable
from operator import itemgetter
from typing import Final

from nnemu.sim._kernel import Kernel
from nnemu.sim._threads import SimThread, _current_thread, current_thread
from nnemu.tracer._events import (
    BatchSink,
    EventInfo,
    FlowSink,
    SectionInfo,
    SectionKind,
    TraceEvent,
    TraceObserver,
    TraceSink,
    _CounterMark,
    _FlowMark,
    takes_batches,
)
from nnemu.tracer._vocab import Layer, Phase

_thread_now: Final = _current_thread.get
"""The current emulated thread, or None (the context variable's bound ``get``, looked up once:
compiled, a method call on a Python object is a lookup and a bound method each time)."""

_NO_THREAD: Final = SimThread(0, 0, "")
"""The thread slot of a counter event written outside any emulated thread."""

_NOBODY: Final = object()
"""What the tracer's last-thread memo holds when it holds no thread."""


class Mark:
    """A section name built once: ``[NN_<layer>_<phase>]detail``, its ``[SW]`` form and their infos.

    Call sites that write the same section again and again build its ``Mark`` once (with
    ``mark``, at import or construction) and pass it to ``Tracer.enter`` and
    ``Section.switch_to``, so a mark costs no string formatting.
    """

    __slots__ = ("event_info", "info", "name", "switch_event_info", "switch_info", "switch_name")

    def __init__(self, layer: Layer, phase: Phase, detail: str) -> None:
        self.name: Final = f"[NN_{layer._value_}_{phase._value_}]{detail}"
        self.switch_name: Final = "[SW]" + self.name
        self.info: Final[SectionInfo] = (SectionKind.PLAIN, layer, phase, detail)
        self.switch_info: Final[SectionInfo] = (SectionKind.SWITCH, layer, phase, detail)
        # What the events carry: the same infos, as one tuple object each.  (Compiled, an
        # attribute typed as a fixed tuple is kept unpacked, so each event that read ``info``
        # would pack a new tuple: one more allocation per mark, bench/README.md.)
        self.event_info: Final[EventInfo] = self.info
        self.switch_event_info: Final[EventInfo] = self.switch_info

    def __repr__(self) -> str:
        return f"Mark({self.name!r})"


_MARKS: dict[tuple[str, str, str], Mark] = {}


def mark(layer: Layer, phase: Phase, detail: str) -> Mark:
    """The ``Mark`` of ``[NN_<layer>_<phase>]detail`` (one object per name, built on first use)."""
    key = (layer._value_, phase._value_, detail)
    found = _MARKS.get(key)
    if found is None:
        found = _MARKS[key] = Mark(layer, phase, detail)
    return found


BATCH_EVENTS: Final = 1024
"""Events a tracer collects before it releases them to ``BatchSink`` sinks: enough that
a mark costs the hot path one tuple, few enough that the batch is still in the CPU's
caches when the writer formats it (4096 measured slower, bench/README.md)."""

_TS: Final = itemgetter(0)


class _Depth:
    """How many sections are open on one thread (what ``end`` and ``close`` need), and the
    thread's ``Section`` objects by the level they begin at (made once, handed out again)."""

    __slots__ = ("open", "sections", "thread")

    def __init__(self, thread: SimThread) -> None:
        self.thread = thread
        self.open = 0
        self.sections: list[Section] = []


class Section:
    """An open trace section, as a scoped block: leaving the block ends it.

    The Python shape of AOSP's scoped ``NNTRACE_*`` macros.  ``switch`` inside the
    block begins a ``[SW]`` section (``NNTRACE_*_SWITCH``); the block's exit ends
    every section begun on its thread since the block began that is still open (its
    own and its switches'), innermost first, whether it exits normally, by an
    exception or by a cancellation, so begin and end marks always balance.  The
    sections end on the thread that opened them.

    A section is the pair (thread, level): how many sections were open on the thread
    when it began.  It holds no other state, so the tracer makes one per pair and
    hands it out again each time a section begins there.
    """

    __slots__ = ("_depth", "_events", "_kernel", "_level", "_tracer")

    def __init__(self, tracer: Tracer, depth: _Depth, level: int) -> None:
        self._tracer = tracer
        self._depth = depth
        self._level = level
        self._kernel = tracer._kernel
        self._events = tracer._events
        """The tracer's buffer (the same list for the tracer's life)."""

    def __enter__(self) -> Section:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        # (Tracer._end, inline: this is the hot path.)  No ``enabled`` check: ``close``
        # leaves no section open, so a block that exits after it ends nothing.
        depth = self._depth
        count = depth.open - self._level  # (fewer, or none, if an outer ``end`` closed some)
        if count > 0:
            depth.open = self._level
            kernel = self._kernel  # (Kernel.task_now_ns, inline)
            proc = kernel._running
            ts = kernel.clock_ns + proc.lag_ns if proc is not None else kernel.clock_ns
            event = (ts, depth.thread, None, None)
            tracer = self._tracer
            events = self._events
            if proc is tracer._last_proc or not events or ts >= events[-1][0]:  # (``enter``)
                tracer._last_proc = proc
                events.append(event)
                while count > 1:  # (its switches' ends: appended, no list to extend by)
                    events.append(event)
                    count -= 1
            else:
                tracer._insert(event, count)

    def switch(self, layer: Layer, phase: Phase, detail: str) -> None:
        """Switch phase inside this section: begin ``[SW][NN_<layer>_<phase>]detail``."""
        depth = self._depth
        if depth.open > self._level:  # still open (and so tracing is on)
            tracer = self._tracer
            tracer._open(
                f"[SW][NN_{layer._value_}_{phase._value_}]{detail}",
                (SectionKind.SWITCH, layer, phase, detail) if tracer._observers else None,
                depth,
            )

    def switch_to(self, to: Mark) -> None:
        """``switch`` with a prebuilt name: begin ``to``'s ``[SW]`` section."""
        depth = self._depth
        if depth.open > self._level:  # (switch, inline)
            depth.open += 1
            kernel = self._kernel  # (Kernel.task_now_ns, inline)
            proc = kernel._running
            ts = kernel.clock_ns + proc.lag_ns if proc is not None else kernel.clock_ns
            event = (ts, depth.thread, to.switch_name, to.switch_event_info)
            tracer = self._tracer
            events = self._events
            if proc is tracer._last_proc or not events or ts >= events[-1][0]:  # (``enter``)
                tracer._last_proc = proc
                events.append(event)
            else:
                tracer._insert(event)

    def switch_through(self, through: Mark, to: Mark) -> None:
        """``switch_to(through)`` then ``switch_to(to)`` at one instant (a phase with no
        time of its own, as the sample driver's inputs-and-outputs): one call for both."""
        depth = self._depth
        if depth.open > self._level:  # (switch, inline)
            depth.open += 2
            kernel = self._kernel
            proc = kernel._running
            ts = kernel.clock_ns + proc.lag_ns if proc is not None else kernel.clock_ns
            thread = depth.thread
            first = (ts, thread, through.switch_name, through.switch_event_info)
            second = (ts, thread, to.switch_name, to.switch_event_info)
            tracer = self._tracer
            events = self._events
            if proc is tracer._last_proc or not events or ts >= events[-1][0]:  # (``enter``)
                tracer._last_proc = proc
                events.append(first)
                events.append(second)
            else:
                tracer._insert(first)
                tracer._insert(second)


class _PromptSection(Section):
    """A ``Section`` of a tracer that releases every event at once (an observer, a sink
    without ``receive``, ``--realtime``): after each mark it checks the buffer, as
    ``Tracer.enter`` does (a batching tracer's sections leave that to the next begin)."""

    __slots__ = ()

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        Section.__exit__(self, exc_type, exc, tb)
        tracer = self._tracer
        if len(tracer._events) >= tracer._release_at:
            tracer._release()

    def switch_to(self, to: Mark) -> None:
        Section.switch_to(self, to)
        tracer = self._tracer
        if len(tracer._events) >= tracer._release_at:
            tracer._release()

    def switch_through(self, through: Mark, to: Mark) -> None:
        self.switch_to(through)
        self.switch_to(to)


class _UntracedSection(Section):
    """The section a disabled tracer hands out: one shared object that writes nothing.

    A block opened while tracing is off stays unmarked to its end (its switches too),
    so it never writes an ``E`` or ``[SW]`` whose ``B`` was not written.
    """

    __slots__ = ()

    def __init__(self) -> None:
        pass

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        return None

    def switch(self, layer: Layer, phase: Phase, detail: str) -> None:
        return None

    def switch_to(self, to: Mark) -> None:
        return None

    def switch_through(self, through: Mark, to: Mark) -> None:
        return None


_UNTRACED: Final = _UntracedSection()


class Tracer:
    """Writes NNTRACE sections at the kernel's virtual time; a disabled tracer does nothing."""

    def __init__(self, kernel: Kernel, sinks: list[TraceSink] | None = None) -> None:
        self._kernel = kernel
        self._now = kernel.task_now_ns
        """The running task's time: what a mark carries."""
        self._sinks = list(sinks or [])
        self.enabled = bool(self._sinks)
        self._closed = False
        self._observers: list[TraceObserver] = []
        self._events: list[TraceEvent] = []
        """Events not yet released, in order (by time, then emission): nearly every event
        comes at or after the last one and is appended; an earlier one is inserted."""
        self._last_proc: object = _NOBODY
        """The kernel task that wrote the buffer's last event (None: outside any task;
        ``_NOBODY``: not known).  A task's marks never go back in time, so its next one is
        appended without a look at the times (in pure Python, comparing two large ints
        costs about what the sort did)."""
        self._release_at = 1
        """Release when the buffer holds this many events."""
        self._by_id: dict[int, _Depth] = {}
        """Each thread object's open count, by ``id`` (hashing a ``SimThread`` costs more)."""
        self._depths: dict[SimThread, _Depth] = {}
        """The same counts by thread value (equal thread objects share one count)."""
        self._keep: dict[int, SimThread] = {}
        """Thread objects whose ``id`` is a key of ``_by_id`` (kept alive so it is not reused)."""
        self._last_thread: object = _NOBODY
        self._last_depth = _Depth(_NO_THREAD)
        """The thread of the last ``enter`` or ``raw_section`` and its depth (a lookup saved);
        ``_NOBODY`` (never a thread, not even None) when there is none."""
        self._batch_sinks: list[BatchSink] = []
        self._event_sinks: list[TraceSink] = []
        self._batch = 1
        self._section_type: type[Section] = Section
        """What ``enter`` and the other scoped begins hand out (``_choose_delivery``)."""
        self._flow_sinks = [sink for sink in self._sinks if isinstance(sink, FlowSink)]
        self._flow_sink_ids = {id(sink) for sink in self._flow_sinks}
        self.flows = bool(self._flow_sinks)
        """Whether a sink takes flows and counters (else ``flow_*`` and ``counter*`` do
        nothing); hot call sites test it first, so tracing without them costs one check."""
        self._flow_event_sinks = [s for s in self._flow_sinks if not takes_batches(s)]
        """Flow sinks that get flows and counters one call each (batch ones get them in
        ``receive``, as ``(ts_ns, thread, None, mark)``)."""
        self._flows: dict[Hashable, int] = {}
        self._flow_ids = 0
        self._counters: dict[tuple[int, str], int] = {}
        self._choose_delivery()

    def _choose_delivery(self) -> None:
        """Batch the events if every sink takes batches and no observer is attached."""
        self._batch_sinks = [s for s in self._sinks if takes_batches(s)]
        self._event_sinks = [s for s in self._sinks if not takes_batches(s)]
        batched = not self._event_sinks and not self._observers and not self._kernel.realtime
        self._batch = BATCH_EVENTS if batched else 1
        self._release_at = len(self._events) + self._batch
        section_type = Section if batched else _PromptSection
        if section_type is not self._section_type:
            self._section_type = section_type
            for depth in self._depths.values():
                depth.sections.clear()  # (made again, of the new type, on first use)

    # ------------------------------------------------------------ release

    def _release(self, *, everything: bool = False) -> None:
        """Send the buffered events the kernel's clock has passed (or all) to the sinks, in order."""
        events = self._events  # (in order already: ``_insert``)
        horizon = self._kernel.clock_ns
        if everything or not events or events[-1][0] <= horizon:
            ready = events.copy()
            events.clear()  # (in place: the sections hold this list)
        else:
            cut = bisect_right(events, horizon, key=_TS)
            ready = events[:cut]
            del events[:cut]
        self._release_at = len(self._events) + self._batch
        if ready:
            self._deliver(ready)

    def _deliver(self, ready: list[TraceEvent]) -> None:
        marks: list[TraceEvent] | None = None
        for batch_sink in self._batch_sinks:
            if id(batch_sink) in self._flow_sink_ids:
                batch_sink.receive(ready)
                continue
            if marks is None:  # flows and counters only for the sinks that take them
                marks = (
                    [e for e in ready if e[2] is not None or e[3] is None]
                    if self._flow_sinks
                    else ready
                )
            batch_sink.receive(marks)
        sinks, observers = self._event_sinks, self._observers
        if not sinks and not observers:
            return
        for ts, thread, name, info in ready:
            if name is None:
                if info is not None:
                    self._deliver_extra(ts, thread, info)
                    continue
                for sink in sinks:
                    sink.end(ts, thread)
                for observer in observers:
                    observer.end(ts, thread)
            else:
                for sink in sinks:
                    sink.begin(ts, thread, name)
                if isinstance(info, tuple):  # (a begin's info: a SectionInfo)
                    for observer in observers:
                        observer.begin(ts, thread, info)

    def _deliver_extra(self, ts: int, thread: SimThread, info: object) -> None:
        if isinstance(info, _FlowMark):
            for sink in self._flow_event_sinks:
                sink.flow(ts, thread, info.flow_id, info.terminating)
        elif isinstance(info, _CounterMark):
            for sink in self._flow_event_sinks:
                sink.counter(ts, info.pid, info.name, info.value)

    def _extra(self, thread: SimThread, mark: _FlowMark | _CounterMark) -> None:
        self._insert((self._now(), thread, None, mark))
        events = self._events
        if len(events) >= self._release_at:
            self._release()

    def flow_out(self, key: Hashable) -> None:
        """Start a flow (an arrow) at the section just begun on this thread; ``flow_in(key)`` ends it.

        Call it right after the section's begin.  Flow ids are numbered 1, 2, ... in the
        order flows start, so traces stay deterministic.  Costs nothing (no event, no id)
        unless a sink that takes flows is attached.
        """
        if self._flow_sinks and self.enabled and key is not None:
            self._flow_ids += 1
            self._flows[key] = self._flow_ids
            self._extra(current_thread(), _FlowMark(self._flow_ids, False))

    def flow_in(self, key: Hashable) -> None:
        """End the flow ``flow_out(key)`` started at the section just begun on this thread."""
        if self._flow_sinks and self.enabled:
            flow_id = self._flows.pop(key, None)
            if flow_id is not None:
                self._extra(current_thread(), _FlowMark(flow_id, True))

    def counter(self, pid: int, name: str, value: int) -> None:
        """Counter ``name`` of process ``pid`` is ``value`` from now on (written when it changes)."""
        if self._flow_sinks and self.enabled:
            key = (pid, name)
            if self._counters.get(key) != value:
                self._counters[key] = value
                self._extra(_thread_now() or _NO_THREAD, _CounterMark(pid, name, value))

    def counter_add(self, pid: int, name: str, delta: int) -> None:
        """Add ``delta`` to counter ``name`` of process ``pid`` (which starts at 0)."""
        if self._flow_sinks and self.enabled:
            self.counter(pid, name, self._counters.get((pid, name), 0) + delta)

    # ------------------------------------------------------------ threads

    def _depth_of(self, thread: SimThread) -> _Depth:
        depth = self._by_id.get(id(thread))
        if depth is None:
            depth = self._new_depth(thread)
        return depth

    def _depth_of_current(self, thread: SimThread | None) -> _Depth:
        """The depth of ``thread``, the current one (None: not an emulated thread, an
        ``EmulatorBug``), remembered as the last thread's for the next begin."""
        if thread is None:
            thread = current_thread()
        depth = self._by_id.get(id(thread)) or self._new_depth(thread)
        self._last_thread = thread
        self._last_depth = depth
        return depth

    def _new_depth(self, thread: SimThread) -> _Depth:
        depth = self._depths.get(thread)
        if depth is None:
            depth = self._depths[thread] = _Depth(thread)
        self._by_id[id(thread)] = depth
        self._keep[id(thread)] = thread
        return depth

    def _section_at(self, depth: _Depth, level: int) -> Section:
        """The ``Section`` begun at ``level`` on ``depth``'s thread (made on first use)."""
        sections = depth.sections
        while len(sections) <= level:
            sections.append(self._section_type(self, depth, len(sections)))
        return sections[level]

    def end_thread(self, thread: SimThread) -> None:
        """Forget ``thread``, which has ended, unless a section is still open on it (then
        ``close`` ends that section): a run with one thread per execution holds none."""
        depth = self._by_id.get(id(thread))
        if depth is not None and depth.open == 0 and self._depths.get(thread) is depth:
            del self._depths[thread]
            del self._by_id[id(thread)]
            del self._keep[id(thread)]
            if depth is self._last_depth:
                self._last_thread = _NOBODY

    def _open(self, name: str, info: SectionInfo | None, depth: _Depth | None = None) -> _Depth:
        """Begin section ``name`` on ``depth``'s thread (the current one if None); return its depth.

        What the string-building entry points share (``section``, ``begin``, ``switch``,
        ...); ``enter``, ``raw_section``, ``Section.switch_to`` and the ends keep this body
        inline (the per-execution path, bench/README.md).
        """
        if depth is None:
            thread = _thread_now() or current_thread()
            depth = self._by_id.get(id(thread)) or self._new_depth(thread)
        depth.open += 1
        kernel = self._kernel  # (Kernel.task_now_ns, inline)
        proc = kernel._running
        self._insert(
            (
                kernel.clock_ns + proc.lag_ns if proc is not None else kernel.clock_ns,
                depth.thread,
                name,
                info,
            )
        )
        if len(self._events) >= self._release_at:
            self._release()
        return depth

    def _insert(self, event: TraceEvent, count: int = 1) -> None:
        """Put ``event`` into the buffer ``count`` times, after every event at or before its time.

        Nearly every event comes in order (appended); one earlier than the buffer's last
        goes before the later ones: a task that works without a task switch writes marks
        ahead of the kernel's clock (``Kernel.work``), and another task may then write at
        the clock's time.  So the buffer is always in run order and a release sorts nothing.
        """
        ts = event[0]
        events = self._events
        if not events or ts >= events[-1][0]:
            self._last_proc = _NOBODY
            events.extend([event] * count)
        else:
            at = bisect_right(events, ts, key=_TS)
            events[at:at] = [event] * count

    def _end(self, depth: _Depth, count: int) -> None:
        count = min(count, depth.open)
        if count > 0:
            depth.open -= count
            self._insert((self._now(), depth.thread, None, None), count)
            events = self._events
            if len(events) >= self._release_at:
                self._release()

    # ------------------------------------------------------------ the API

    def add_observer(self, observer: TraceObserver) -> None:
        """Send later events to ``observer`` too, with each section's kind, layer and phase.

        Observers see exactly the events the sinks see, in the same order; with no
        observer attached the tracer builds no structured information at all.
        """
        self._observers.append(observer)
        self.enabled = not self._closed
        self._choose_delivery()

    def process(self, pid: int, name: str) -> None:
        """Announce a process (its name appears in the trace's metadata)."""
        if self._closed:
            return
        if self._batch > 1 and self._events:
            self._release()
        for sink in self._sinks:
            sink.process(pid, name)
        for observer in self._observers:
            observer.process(pid, name)

    def process_died(self, pid: int) -> None:
        """Tell observers that a process died (ftrace has no mark for it; sinks see nothing)."""
        for observer in self._observers:
            died = getattr(observer, "process_died", None)
            if died is not None:
                died(pid)

    def raw_begin(self, name: str) -> None:
        """Begin a section called ``name`` on the current thread."""
        if self.enabled:
            self._open(name, (SectionKind.RAW, None, None, name) if self._observers else None)

    def begin(self, layer: Layer, phase: Phase, detail: str) -> None:
        """Begin ``[NN_<layer>_<phase>]detail`` (an NNTRACE_FULL scope)."""
        if self.enabled:
            self._open(
                f"[NN_{layer._value_}_{phase._value_}]{detail}",
                (SectionKind.PLAIN, layer, phase, detail) if self._observers else None,
            )

    def begin_mark(self, mark: Mark) -> None:
        """``begin`` with a prebuilt name (``end`` ends it)."""
        if self.enabled:
            self._open(mark.name, mark.info if self._observers else None)

    def switch(self, layer: Layer, phase: Phase, detail: str) -> None:
        """Begin ``[SW][NN_<layer>_<phase>]detail`` (an NNTRACE_*_SWITCH); its scope's end closes it."""
        if self.enabled:
            self._open(
                f"[SW][NN_{layer._value_}_{phase._value_}]{detail}",
                (SectionKind.SWITCH, layer, phase, detail) if self._observers else None,
            )

    def subtract(self, layer: Layer, phase: Phase, detail: str) -> None:
        """Begin ``[SUB][NN_<layer>_<phase>]detail`` (NNTRACE_FULL_SUBTRACT)."""
        if self.enabled:
            self._open(
                f"[SUB][NN_{layer._value_}_{phase._value_}]{detail}",
                (SectionKind.SUBTRACT, layer, phase, detail) if self._observers else None,
            )

    def section(self, layer: Layer, phase: Phase, detail: str) -> Section:
        """A scoped ``[NN_<layer>_<phase>]detail`` section: ``with tracer.section(...) as s:``."""
        if not self.enabled:
            return _UNTRACED
        depth = self._open(
            f"[NN_{layer._value_}_{phase._value_}]{detail}",
            (SectionKind.PLAIN, layer, phase, detail) if self._observers else None,
        )
        return self._section_at(depth, depth.open - 1)

    def enter(self, mark: Mark) -> Section:
        """``section`` with a prebuilt name: ``with tracer.enter(MARK) as s:``."""
        if not self.enabled:
            return _UNTRACED
        thread = _thread_now()
        # (Most begins follow one on the same thread: the lookup is saved.)
        if thread is self._last_thread:
            depth = self._last_depth
        else:  # (``_depth_of_current``, inline for a thread seen before)
            found = self._by_id.get(id(thread))
            if found is None:
                depth = self._depth_of_current(thread)
            else:
                depth = self._last_depth = found
                self._last_thread = thread
        level = depth.open
        depth.open = level + 1
        kernel = self._kernel  # (Kernel.task_now_ns, inline)
        proc = kernel._running
        ts = kernel.clock_ns + proc.lag_ns if proc is not None else kernel.clock_ns
        event = (ts, depth.thread, mark.name, mark.event_info)
        events = self._events
        # (``_insert``, inline: in order, appended.  A task's marks never go back in time, so
        # one after the last event's, by the same task, is in order without a compare.)
        if proc is self._last_proc or not events or ts >= events[-1][0]:
            self._last_proc = proc
            events.append(event)
        else:
            self._insert(event)
        if len(events) >= self._release_at:
            self._release()
        try:
            return depth.sections[level]
        except IndexError:
            return self._section_at(depth, level)

    def enter_call(self, mark: Mark, work_ns: int) -> Section:
        """``enter(mark)``, then ``work_ns`` of CPU time charged to the running task (``Kernel.work``,
        also while tracing is off): an API call's scoped section and its cost in one call."""
        kernel = self._kernel
        proc = kernel._running
        if not self.enabled or proc is None:  # (off, or outside a task: Kernel.work decides)
            section = self.enter(mark)
            kernel.work(work_ns)
            return section
        thread = _thread_now()  # (``enter``, inline)
        if thread is self._last_thread:
            depth = self._last_depth
        else:
            found = self._by_id.get(id(thread))
            if found is None:
                depth = self._depth_of_current(thread)
            else:
                depth = self._last_depth = found
                self._last_thread = thread
        level = depth.open
        depth.open = level + 1
        ts = kernel.clock_ns + proc.lag_ns
        event = (ts, depth.thread, mark.name, mark.event_info)
        events = self._events
        if proc is self._last_proc or not events or ts >= events[-1][0]:  # (``enter``)
            self._last_proc = proc
            events.append(event)
        else:
            self._insert(event)
        proc.lag_ns += work_ns
        if len(events) >= self._release_at:
            self._release()
        try:
            return depth.sections[level]
        except IndexError:
            return self._section_at(depth, level)

    def span(self, mark: Mark, work_ns: int, count: int = 1) -> None:
        """``count`` sections ``mark``, one after the other, each charged ``work_ns`` of CPU time.

        One call for what ``with tracer.enter(mark): kernel.work(work_ns)`` writes ``count``
        times: each section begins at the running task's time, the task works ``work_ns``
        (``Kernel.work``, also while tracing is off) and the section ends.  For a section
        with nothing traced or awaited inside, such as an NDK call that only costs the
        API call's CPU time (the per-execution path, bench/README.md).
        """
        kernel = self._kernel
        proc = kernel._running
        if not self.enabled:
            kernel.work(work_ns * count)
            return
        if proc is None:  # (outside a task: Kernel.work decides what that means)
            for _ in range(count):
                with self.enter(mark):
                    kernel.work(work_ns)
            return
        thread = _thread_now()  # (``enter``, inline)
        if thread is self._last_thread:
            depth = self._last_depth
        else:  # (``_depth_of_current``, inline for a thread seen before)
            found = self._by_id.get(id(thread))
            if found is None:
                depth = self._depth_of_current(thread)
            else:
                depth = self._last_depth = found
                self._last_thread = thread
        thread = depth.thread
        events = self._events
        ts = kernel.clock_ns + proc.lag_ns
        if proc is not self._last_proc and events and ts < events[-1][0]:  # (rare: ``enter``)
            name, info = mark.name, mark.event_info
            for _ in range(count):
                end = ts + work_ns
                self._insert((ts, thread, name, info))
                self._insert((end, thread, None, None))
                ts = end
        elif count == 1:  # (the usual case, without the loop)
            self._last_proc = proc
            events.append((ts, thread, mark.name, mark.event_info))
            events.append((ts + work_ns, thread, None, None))
        else:
            name, info = mark.name, mark.event_info
            for _ in range(count):
                end = ts + work_ns
                events.append((ts, thread, name, info))
                events.append((end, thread, None, None))
                ts = end
            self._last_proc = proc
        proc.lag_ns += work_ns * count
        if len(events) >= self._release_at:
            self._release()

    def raw_section(self, name: str) -> Section:
        """A scoped section called ``name`` with no NNTRACE tag (a HIDL proxy's or stub's)."""
        if not self.enabled:
            return _UNTRACED
        thread = _thread_now()  # (``enter``, inline: per execution)
        if thread is self._last_thread:
            depth = self._last_depth
        else:  # (``_depth_of_current``, inline for a thread seen before)
            found = self._by_id.get(id(thread))
            if found is None:
                depth = self._depth_of_current(thread)
            else:
                depth = self._last_depth = found
                self._last_thread = thread
        level = depth.open
        depth.open = level + 1
        kernel = self._kernel  # (Kernel.task_now_ns, inline)
        proc = kernel._running
        ts = kernel.clock_ns + proc.lag_ns if proc is not None else kernel.clock_ns
        event = (
            ts,
            depth.thread,
            name,
            (SectionKind.RAW, None, None, name) if self._observers else None,
        )
        events = self._events
        if proc is self._last_proc or not events or ts >= events[-1][0]:  # (``enter``)
            self._last_proc = proc
            events.append(event)
        else:
            self._insert(event)
        if len(events) >= self._release_at:
            self._release()
        try:
            return depth.sections[level]
        except IndexError:
            return self._section_at(depth, level)

    def subtract_section(self, layer: Layer, phase: Phase, detail: str) -> Section:
        """A scoped ``[SUB][NN_<layer>_<phase>]detail`` section (NNTRACE_FULL_SUBTRACT)."""
        if not self.enabled:
            return _UNTRACED
        depth = self._open(
            f"[SUB][NN_{layer._value_}_{phase._value_}]{detail}",
            (SectionKind.SUBTRACT, layer, phase, detail) if self._observers else None,
        )
        return self._section_at(depth, depth.open - 1)

    def end(self, count: int = 1) -> None:
        """End the ``count`` innermost sections of the current thread (a scope with switches ends several)."""
        if self.enabled:
            thread = _thread_now() or current_thread()
            depth = self._by_id.get(id(thread))
            if count == 1 and depth is not None and depth.open:  # (``_end``, inline)
                depth.open -= 1
                kernel = self._kernel  # (Kernel.task_now_ns, inline)
                proc = kernel._running
                ts = kernel.clock_ns + proc.lag_ns if proc is not None else kernel.clock_ns
                self._insert((ts, depth.thread, None, None))
                events = self._events
                if len(events) >= self._release_at:
                    self._release()
            else:
                self._end(self._depth_of(thread), count)

    def close(self) -> None:
        """End every open section at the current time and close the sinks.

        Sections still open (a run stopped by its duration, or interrupted) end in the
        order of (pid, tid), innermost first: the trace never depends on the order in
        which trio cancels the tasks.  Marks after this are ignored, so the cleanup code
        of the cancelled tasks writes nothing.
        """
        if self._closed:
            return
        self._closed = True
        self.enabled = False
        events = self._events
        ts = max([self._kernel.clock_ns] + [event[0] for event in events])
        for thread, depth in sorted(self._depths.items(), key=lambda i: (i[0].pid, i[0].tid)):
            events.extend([(ts, thread, None, None)] * depth.open)
            depth.open = 0
        self._last_proc = _NOBODY
        self._flows.clear()
        self._release(everything=True)
        failure: BaseException | None = None
        closers = [sink.close for sink in self._sinks] + [obs.close for obs in self._observers]
        for close in closers:
            try:
                close()
            except Exception as exc:  # close the others; report the first failure
                failure = failure or exc
        if failure is not None:
            raise failure
