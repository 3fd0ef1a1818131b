"""The tracer: NNTRACE marks written on the emulated thread that runs the code.

The API is AOSP's ``Tracing.h`` in Python: a ``Mark`` is a section name built once
(``mark(layer, phase, detail)`` is ``NNTRACE_FULL``'s ``[NN_<layer>_<phase>]detail``,
with ``subtract=True`` ``NNTRACE_FULL_SUBTRACT``'s ``[SUB]`` form; ``raw_mark(name)`` is
a bare ``ScopedTrace`` name, as the HIDL proxies' and stubs'
``HIDL::<Iface>::<method>::client|server``), ``with tracer.section(mark) as s:`` is the
scoped trace and ``s.switch(mark)`` is ``NNTRACE_FULL_SWITCH``.  Every layer opens a
section exactly where the AOSP code has an ``NNTRACE_*`` scope (docs/hal-semantics.md §6).

Events go to sinks in order of (virtual time, emission order).  A task that accounts CPU
work without a task switch writes marks ahead of the kernel's clock, so events wait in a
buffer, kept in that order as they come (an event earlier than the buffer's last is
inserted before the later ones), and are released once the kernel's time has passed them:
no later event can be earlier.

Sinks that take events in batches (``BatchSink``: the ftrace/systrace writer)
get them up to ``BATCH_EVENTS`` at a time, so a mark costs the hot path one tuple;
with any other sink or an observer attached, events are released as soon as
the clock passes them, one call per event, as the ``TraceSink`` protocol says.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Hashable
from operator import itemgetter
from typing import Final, cast

from nnemu.sim._kernel import Kernel
from nnemu.sim._threads import SimThread, _current_thread, current_thread
from nnemu.tracer._events import (
    BatchSink,
    CounterInfo,
    EventInfo,
    FlowSink,
    SectionInfo,
    SectionKind,
    TraceEvent,
    TraceObserver,
    TraceSink,
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
    """A section name built once, its ``[SW]`` form and their infos.

    Build one with ``mark`` (``[NN_<layer>_<phase>]detail``, or its ``[SUB]`` form) or
    ``raw_mark`` (a bare name), at import or construction where a call site writes it
    again and again, and pass it to ``Tracer.section`` and ``Section.switch``: a mark then
    costs no string formatting.
    """

    __slots__ = ("event_info", "info", "name", "switch_event_info", "switch_info", "switch_name")

    def __init__(self, name: str, info: SectionInfo, switch_name: str, switch_info: SectionInfo):
        self.name: Final = name
        self.switch_name: Final = switch_name
        """What ``Section.switch`` to this mark begins."""
        self.info: Final = info
        self.switch_info: Final = switch_info
        # What the events carry: the same infos, as one tuple object each.  (Compiled, an
        # attribute typed as a fixed tuple is kept unpacked, so each event that read ``info``
        # would pack a new tuple: one more allocation per mark, bench/README.md.)
        self.event_info: Final[EventInfo] = info
        self.switch_event_info: Final[EventInfo] = switch_info

    def __repr__(self) -> str:
        return f"Mark({self.name!r})"


_MARKS: dict[tuple[str, str, str, bool], Mark] = {}


def mark(layer: Layer, phase: Phase, detail: str, *, subtract: bool = False) -> Mark:
    """The ``Mark`` of ``[NN_<layer>_<phase>]detail`` (``NNTRACE_FULL``), or with ``subtract``
    of ``[SUB][NN_<layer>_<phase>]detail`` (``NNTRACE_FULL_SUBTRACT``: time deducted from
    the enclosing section); its switch is ``[SW][NN_<layer>_<phase>]detail`` either way.
    One object per name, built on first use."""
    key = (layer._value_, phase._value_, detail, subtract)
    found = _MARKS.get(key)
    if found is None:
        name = f"[NN_{layer._value_}_{phase._value_}]{detail}"
        kind = SectionKind.SUBTRACT if subtract else SectionKind.PLAIN
        found = _MARKS[key] = Mark(
            "[SUB]" + name if subtract else name,
            (kind, layer, phase, detail),
            "[SW]" + name,
            (SectionKind.SWITCH, layer, phase, detail),
        )
    return found


def raw_mark(name: str) -> Mark:
    """The ``Mark`` of a section called ``name`` with no NNTRACE tag (a HIDL proxy's or stub's,
    an app's note); a switch to it begins the same name.  Not cached: build it once where it
    repeats."""
    info: SectionInfo = (SectionKind.RAW, None, None, name)
    return Mark(name, info, name, info)


BATCH_EVENTS: Final = 1024
"""Events a tracer collects before it releases them to ``BatchSink`` sinks: enough that
a mark costs the hot path one tuple, few enough that the batch is still in the CPU's
caches when the writer formats it (4096 measured slower, bench/README.md)."""

_TS: Final = itemgetter(0)


class _Depth:
    """How many sections are open on one thread (what a section's exit and ``close`` need),
    and the thread's ``Section`` objects by the level they begin at (made once, handed out
    again)."""

    __slots__ = ("open", "sections", "thread")

    def __init__(self, thread: SimThread) -> None:
        self.thread = thread
        self.open = 0
        self.sections: list[Section] = []


class Section:
    """An open trace section, as a scoped block: leaving the block ends it.

    The Python shape of AOSP's ``ScopedTrace`` under the ``NNTRACE_*`` macros.  ``switch``
    inside the block begins a ``[SW]`` section (``NNTRACE_*_SWITCH``); the block's exit
    ends every section begun on its thread since the block began that is still open (its
    own and its switches'), innermost first, whether it exits normally, by an exception or
    by a cancellation, so begin and end marks always balance.  The sections end on the
    thread that opened them (a section that spans two kernel callbacks, as a oneway call's
    stub, calls ``__exit__`` itself).

    A section is the pair (thread, level): how many sections were open on the thread
    when it began.  It holds no other state, so the tracer makes one per pair and
    hands it out again each time a section begins there.
    """

    __slots__ = ("_depth", "_level", "_tracer")

    def __init__(self, tracer: Tracer, depth: _Depth, level: int) -> None:
        self._tracer = tracer
        self._depth = depth
        self._level = level

    def __enter__(self) -> Section:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        # No ``enabled`` check: ``close`` leaves no section open, so a block that exits
        # after it ends nothing.
        depth = self._depth
        count = depth.open - self._level  # (fewer, or none, if an outer block closed some)
        if count > 0:
            depth.open = self._level
            self._tracer._write(depth.thread, None, None, count)

    def switch(self, to: Mark) -> None:
        """Switch phase inside this section: begin ``to``'s ``[SW]`` form (it ends with the block)."""
        depth = self._depth
        if depth.open > self._level:  # still open (and so tracing is on)
            depth.open += 1
            self._tracer._write(depth.thread, to.switch_name, to.switch_event_info)


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

    def switch(self, to: Mark) -> None:
        return None


_UNTRACED: Final = _UntracedSection()


class CounterTrack:
    """One counter of one process (``Tracer.counter_track``): ``set`` writes its value when
    the value changed.

    The event is the one ``Tracer.counter`` writes, ``(ts_ns, _NO_THREAD, None, (pid, name,
    value))`` (``CounterInfo``): the event's thread slot is ``_NO_THREAD`` wherever it is
    written, as a counter belongs to its process and no sink reads the slot
    (``FlowSink.counter`` has none), so the current thread is not looked up.  A call site
    that writes one counter again and again (the device's load, an app's executions in
    flight) holds its track: a value costs a comparison, and a changed one an event, with
    no lookup by name and pid.  Nothing is written unless a sink takes counters
    (``Tracer.flows``) and tracing is on.
    """

    __slots__ = ("_tracer", "name", "pid", "value", "written")

    def __init__(self, tracer: Tracer, pid: int, name: str) -> None:
        self._tracer = tracer
        self.pid: Final = pid
        self.name: Final = name
        self.value = 0
        """The value last written (0 before the first: ``add`` starts from it)."""
        self.written = False
        """Whether a value is written yet (the first is written whatever it is)."""

    def set(self, value: int) -> None:
        """The counter is ``value`` from now on: write it if it changed (or is the first)."""
        if value == self.value and self.written:
            return
        tracer = self._tracer
        if tracer.flows and tracer.enabled:
            self.value = value
            self.written = True
            tracer._write(_NO_THREAD, None, (self.pid, self.name, value))

    def add(self, delta: int) -> None:
        """Add ``delta`` to the counter (``set``)."""
        self.set(self.value + delta)


class Tracer:
    """Writes NNTRACE sections at the kernel's virtual time; a disabled tracer does nothing."""

    def __init__(self, kernel: Kernel, sinks: list[TraceSink] | None = None) -> None:
        self._kernel = kernel
        self._sinks = list(sinks or [])
        self.enabled = bool(self._sinks)
        self._closed = False
        self._observers: list[TraceObserver] = []
        self._events: list[TraceEvent] = []
        """Events not yet released, in order (by time, then emission): nearly every event
        comes at or after the last one and is appended; an earlier one is inserted."""
        self._last_ts = 0
        """The time of the buffer's last event, when it holds one (read without the last
        event's nested type checks, compiled)."""
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
        """The thread of the last begin and its depth (a lookup saved: most begins follow
        one on the same thread); ``_NOBODY`` (never a thread, not even None) when there is none."""
        self._batch_sinks: list[BatchSink] = []
        self._event_sinks: list[TraceSink] = []
        self._batch = 1
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
        self._counters: dict[str, dict[int, CounterTrack]] = {}
        """Each counter's track (its last value), by name and pid (no key tuple made per call)."""
        self._choose_delivery()

    def _choose_delivery(self) -> None:
        """Batch the events if every sink takes batches and no observer is attached."""
        self._batch_sinks = [s for s in self._sinks if takes_batches(s)]
        self._event_sinks = [s for s in self._sinks if not takes_batches(s)]
        batched = not self._event_sinks and not self._observers and not self._kernel.realtime
        self._batch = BATCH_EVENTS if batched else 1
        self._release_at = len(self._events) + self._batch

    # ------------------------------------------------------------ release

    def _release(self, *, everything: bool = False) -> None:
        """Send the buffered events the kernel's clock has passed (or all) to the sinks, in order."""
        events = self._events  # (in order already: ``_write``)
        horizon = self._kernel.clock_ns
        if everything or not events or self._last_ts <= horizon:
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
                        observer.begin(ts, thread, cast("SectionInfo", info))

    def _deliver_extra(self, ts: int, thread: SimThread, info: object) -> None:
        if isinstance(info, int):  # a ``FlowInfo``
            for sink in self._flow_event_sinks:
                sink.flow(ts, thread, abs(info), info < 0)
        else:
            pid, name, value = cast("CounterInfo", info)
            for sink in self._flow_event_sinks:
                sink.counter(ts, pid, name, value)

    def _write(self, thread: SimThread, name: str | None, info: EventInfo, count: int = 1) -> None:
        """Put ``count`` events ``(now, thread, name, info)`` into the buffer in run order,
        and release what the clock has passed once the buffer holds a batch.

        ``now`` is the running task's time (``Kernel.task_now_ns``, read inline).  Nearly
        every event comes at or after the buffer's last and is appended.  One earlier goes
        after every event at or before its time: a task that works without a task switch
        writes marks ahead of the kernel's clock (``Kernel.work``), and another task (or a
        kernel callback) may then write at the clock's time.  So the buffer is always in
        run order and a release sorts nothing.  Every begin, switch, end, flow and counter
        goes through here.
        """
        kernel = self._kernel
        proc = kernel._running
        ts = kernel.clock_ns + proc.lag_ns if proc is not None else kernel.clock_ns
        event = (ts, thread, name, info)
        events = self._events
        if ts >= self._last_ts or not events:
            self._last_ts = ts
            events.append(event)
            while count > 1:  # (an exit ending its switches too: no list to extend by)
                events.append(event)
                count -= 1
        else:
            at = bisect_right(events, ts, key=_TS)
            events[at:at] = [event] * count
        if len(events) >= self._release_at:
            self._release()

    # ------------------------------------------------------------ the API

    def add_observer(self, observer: TraceObserver) -> None:
        """Send later events to ``observer`` too, with each section's kind, layer and phase.

        Observers see exactly the events the sinks see, in the same order.
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

    def section(self, mark: Mark, *, work_ns: int = 0) -> Section:
        """Begin ``mark`` on the current thread, as a scoped block: ``with tracer.section(M) as s:``.

        ``work_ns``: CPU time charged to the running task right after the begin
        (``Kernel.work``, also while tracing is off), as an NDK call's cost.  The block's
        exit ends the section and its switches (``Section``).
        """
        if not self.enabled:
            if work_ns:
                self._kernel.work(work_ns)
            return _UNTRACED
        thread = _thread_now()  # (most begins follow one on the same thread: no call then)
        depth = self._last_depth if thread is self._last_thread else self._depth_of(thread)
        level = depth.open
        depth.open = level + 1
        self._write(depth.thread, mark.name, mark.event_info)
        if work_ns:
            self._kernel.work(work_ns)
        sections = depth.sections
        return sections[level] if level < len(sections) else self._section_at(depth, level)

    def begin(self, mark: Mark) -> None:
        """Begin ``mark`` on the current thread, ended by ``end``: ``atrace_begin``, as hidl-gen's
        stubs write it, for a section that spans kernel callbacks (a oneway call's stub)."""
        self.section(mark)

    def end(self) -> None:
        """End the innermost section of the current thread (``atrace_end``), if one is open."""
        if self.enabled:
            depth = self._depth_now()
            if depth.open:
                depth.open -= 1
                self._write(depth.thread, None, None)

    def flow_out(self, key: Hashable) -> None:
        """Start a flow (an arrow) at the section just begun on this thread; ``flow_in(key)`` ends it.

        Call it right after the section's begin.  Flow ids are numbered 1, 2, ... in the
        order flows start, so traces stay deterministic.  Costs nothing (no event, no id)
        unless a sink that takes flows is attached.  (A flow whose two ends one piece of
        code holds needs no key: ``flow_start``.)
        """
        if self.flows and self.enabled and key is not None:
            self._flows[key] = self.flow_start()

    def flow_in(self, key: Hashable) -> None:
        """End the flow ``flow_out(key)`` started at the section just begun on this thread."""
        if self.flows and self.enabled:
            flows = self._flows
            flow_id = flows.get(key)
            if flow_id is not None:
                del flows[key]
                self.flow_end(flow_id)

    def flow_start(self) -> int:
        """Start a flow at the section just begun on this thread: its id, which ``flow_end``
        takes where the flow ends (0, which ``flow_end`` ignores, when no sink takes flows).

        ``flow_out`` without a key: for a flow whose ends one piece of code holds (a binder
        transaction's proxy and stub), so no lookup is made at either end.
        """
        if self.flows and self.enabled:
            flow_id = self._flow_ids = self._flow_ids + 1
            thread = _thread_now()
            self._write(thread if thread is not None else current_thread(), None, flow_id)
            return flow_id
        return 0

    def flow_end(self, flow_id: int) -> None:
        """End flow ``flow_id`` (``flow_start``'s) at the section just begun on this thread."""
        if flow_id and self.flows and self.enabled:
            thread = _thread_now()
            self._write(thread if thread is not None else current_thread(), None, -flow_id)

    def counter(self, pid: int, name: str, value: int) -> None:
        """Counter ``name`` of process ``pid`` is ``value`` from now on (written when it changes).

        ``counter_track(pid, name).set(value)``: a call site that writes the same counter
        again and again keeps its ``CounterTrack`` instead (no lookup per value).
        """
        if self.flows and self.enabled:
            self.counter_track(pid, name).set(value)

    def counter_add(self, pid: int, name: str, delta: int) -> None:
        """Add ``delta`` to counter ``name`` of process ``pid`` (which starts at 0)."""
        if self.flows and self.enabled:
            self.counter_track(pid, name).add(delta)

    def counter_track(self, pid: int, name: str) -> CounterTrack:
        """Counter ``name`` of process ``pid``: the one track of that name and pid, made on
        first use, which ``counter`` and ``counter_add`` write through too."""
        tracks = self._counters.get(name)
        if tracks is None:
            tracks = self._counters[name] = {}
        track = tracks.get(pid)
        if track is None:
            track = tracks[pid] = CounterTrack(self, pid, name)
        return track

    # ------------------------------------------------------------ threads

    def _depth_now(self) -> _Depth:
        """The current thread's depth (the last begin's thread's, remembered)."""
        thread = _thread_now()
        return self._last_depth if thread is self._last_thread else self._depth_of(thread)

    def _depth_of(self, thread: SimThread | None) -> _Depth:
        """The depth of ``thread``, the current one, remembered as the last begin's."""
        if thread is None:
            thread = current_thread()  # (not an emulated thread: an ``EmulatorBug``)
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
            sections.append(Section(self, depth, len(sections)))
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
        self._last_ts = ts
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
