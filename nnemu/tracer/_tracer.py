"""The tracer: NNTRACE marks written on the emulated thread that runs the code.

Every layer calls ``begin``/``switch``/``end`` exactly where the AOSP code has an
``NNTRACE_*`` scope (docs/hal-semantics.md §6); HIDL proxies and stubs call
``begin``/``end`` with ``HIDL::<Iface>::<method>::client|server`` names.  Events
go to sinks (the writers of ``nnemu.tracer._writers``) sorted by (virtual time,
emission sequence).  A task that accounts CPU work without a task switch writes
marks ahead of the kernel's clock, so events are held in a small heap and
released once the kernel's time has passed them: no later event can be earlier.
"""

from __future__ import annotations

import enum
import heapq
from typing import Final, Protocol

from nnemu.sim import Kernel, SimThread, current_thread
from nnemu.tracer._vocab import Layer, Phase, tag


class TraceSink(Protocol):
    """Receives trace events in run order."""

    def process(self, pid: int, name: str) -> None:
        """A process exists (called once per process, before its first event)."""

    def begin(self, ts_ns: int, thread: SimThread, name: str) -> None:
        """A section starts on ``thread``."""

    def end(self, ts_ns: int, thread: SimThread) -> None:
        """The innermost open section of ``thread`` ends."""

    def close(self) -> None:
        """No more events."""


class SectionKind(enum.Enum):
    """How a section was begun (what an observer needs to apply the contract's rules)."""

    PLAIN = "plain"
    """``begin``: an NNTRACE_FULL scope."""
    SWITCH = "switch"
    """``switch``: ends the innermost section's phase and starts another (``[SW]``)."""
    SUBTRACT = "subtract"
    """``subtract``: work deducted from the enclosing section (``[SUB]``)."""
    RAW = "raw"
    """``raw_begin``: a section with no NNTRACE tag (the HIDL proxies' and stubs' marks)."""


SectionInfo = tuple[SectionKind, Layer | None, Phase | None, str]
"""(kind, layer, phase, detail) of a section; for ``RAW`` the layer and phase are None and
the detail is the whole name."""


class TraceObserver(Protocol):
    """Receives the same events as the sinks, in the same order, with structured information."""

    def process(self, pid: int, name: str) -> None:
        """A process exists."""

    def begin(self, ts_ns: int, thread: SimThread, info: SectionInfo) -> None:
        """A section starts on ``thread``."""

    def end(self, ts_ns: int, thread: SimThread) -> None:
        """The innermost open section of ``thread`` ends."""

    def close(self) -> None:
        """No more events."""


_Event = tuple[int, int, SimThread, str | None, SectionInfo | None]


class Section:
    """An open trace section, as a scoped block: leaving the block ends it.

    The Python shape of AOSP's scoped ``NNTRACE_*`` macros.  ``switch`` inside the
    block begins a ``[SW]`` section (``NNTRACE_*_SWITCH``); the block's exit ends
    every section it opened, innermost first, whether it exits normally, by an
    exception or by a cancellation, so begin and end marks always balance.
    """

    __slots__ = ("_depth", "_tracer")

    def __init__(self, tracer: Tracer) -> None:
        self._tracer = tracer
        self._depth = 1

    def __enter__(self) -> Section:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._tracer.end(self._depth)

    def switch(self, layer: Layer, phase: Phase, detail: str) -> None:
        """Switch phase inside this section: begin ``[SW][NN_<layer>_<phase>]detail``."""
        self._tracer.switch(layer, phase, detail)
        self._depth += 1


class _UntracedSection(Section):
    """The section a disabled tracer hands out: one shared object that writes nothing.

    A block opened while tracing is off stays unmarked to its end (its switches too),
    so it never writes an ``E`` or ``[SW]`` whose ``B`` was not written.
    """

    __slots__ = ()

    def __init__(self) -> None:
        pass

    def __exit__(self, *exc_info: object) -> None:
        return None

    def switch(self, layer: Layer, phase: Phase, detail: str) -> None:
        return None


_UNTRACED: Final = _UntracedSection()


class Tracer:
    """Writes NNTRACE sections at the kernel's virtual time; a disabled tracer does nothing."""

    def __init__(self, kernel: Kernel, sinks: list[TraceSink] | None = None) -> None:
        self._kernel = kernel
        self._sinks = list(sinks or [])
        self.enabled = bool(self._sinks)
        self._open: dict[SimThread, int] = {}
        self._closed = False
        self._pending: list[_Event] = []
        self._seq = 0
        self._observers: list[TraceObserver] = []

    def _emit(
        self, ts: int, thread: SimThread, name: str | None, info: SectionInfo | None = None
    ) -> None:
        self._seq += 1
        pending = self._pending
        heapq.heappush(pending, (ts, self._seq, thread, name, info))
        horizon = self._kernel.clock_ns
        while pending and pending[0][0] <= horizon:
            self._deliver(heapq.heappop(pending))

    def _deliver(self, event: _Event) -> None:
        ts, _, thread, name, info = event
        if name is None:
            for sink in self._sinks:
                sink.end(ts, thread)
            for observer in self._observers:
                observer.end(ts, thread)
        else:
            for sink in self._sinks:
                sink.begin(ts, thread, name)
            if info is not None:
                for observer in self._observers:
                    observer.begin(ts, thread, info)

    def add_observer(self, observer: TraceObserver) -> None:
        """Send later events to ``observer`` too, with each section's kind, layer and phase.

        Observers see exactly the events the sinks see, in the same order; with no
        observer attached the tracer builds no structured information at all.
        """
        self._observers.append(observer)
        self.enabled = not self._closed

    def process(self, pid: int, name: str) -> None:
        """Announce a process (its name appears in the trace's metadata)."""
        if self._closed:
            return
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

    def _begin(self, name: str, info: SectionInfo | None) -> None:
        thread = current_thread()
        self._open[thread] = self._open.get(thread, 0) + 1
        self._emit(self._kernel.task_now_ns(), thread, name, info)

    def raw_begin(self, name: str) -> None:
        """Begin a section called ``name`` on the current thread."""
        if self.enabled:
            self._begin(name, (SectionKind.RAW, None, None, name) if self._observers else None)

    def begin(self, layer: Layer, phase: Phase, detail: str) -> None:
        """Begin ``[NN_<layer>_<phase>]detail`` (an NNTRACE_FULL scope)."""
        if self.enabled:
            self._begin(
                tag(layer, phase) + detail,
                (SectionKind.PLAIN, layer, phase, detail) if self._observers else None,
            )

    def switch(self, layer: Layer, phase: Phase, detail: str) -> None:
        """Begin ``[SW][NN_<layer>_<phase>]detail`` (an NNTRACE_*_SWITCH); its scope's end closes it."""
        if self.enabled:
            self._begin(
                "[SW]" + tag(layer, phase) + detail,
                (SectionKind.SWITCH, layer, phase, detail) if self._observers else None,
            )

    def subtract(self, layer: Layer, phase: Phase, detail: str) -> None:
        """Begin ``[SUB][NN_<layer>_<phase>]detail`` (NNTRACE_FULL_SUBTRACT)."""
        if self.enabled:
            self._begin(
                "[SUB]" + tag(layer, phase) + detail,
                (SectionKind.SUBTRACT, layer, phase, detail) if self._observers else None,
            )

    def section(self, layer: Layer, phase: Phase, detail: str) -> Section:
        """A scoped ``[NN_<layer>_<phase>]detail`` section: ``with tracer.section(...) as s:``."""
        if not self.enabled:
            return _UNTRACED
        self.begin(layer, phase, detail)
        return Section(self)

    def raw_section(self, name: str) -> Section:
        """A scoped section called ``name`` with no NNTRACE tag (a HIDL proxy's or stub's)."""
        if not self.enabled:
            return _UNTRACED
        self.raw_begin(name)
        return Section(self)

    def subtract_section(self, layer: Layer, phase: Phase, detail: str) -> Section:
        """A scoped ``[SUB][NN_<layer>_<phase>]detail`` section (NNTRACE_FULL_SUBTRACT)."""
        if not self.enabled:
            return _UNTRACED
        self.subtract(layer, phase, detail)
        return Section(self)

    def end(self, count: int = 1) -> None:
        """End the ``count`` innermost sections of the current thread (a scope with switches ends several)."""
        if not self.enabled:
            return
        thread = current_thread()
        ts = self._kernel.task_now_ns()
        for _ in range(count):
            depth = self._open.get(thread, 0)
            if depth == 0:
                return
            self._open[thread] = depth - 1
            self._emit(ts, thread, None)

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
        pending = self._pending
        ts = max([self._kernel.clock_ns] + [event[0] for event in pending])
        for thread in sorted(self._open, key=lambda t: (t.pid, t.tid)):
            for _ in range(self._open[thread]):
                self._seq += 1
                heapq.heappush(pending, (ts, self._seq, thread, None, None))
        self._open.clear()
        while pending:
            self._deliver(heapq.heappop(pending))
        failure: BaseException | None = None
        closers = [sink.close for sink in self._sinks] + [obs.close for obs in self._observers]
        for close in closers:
            try:
                close()
            except Exception as exc:  # close the others; report the first failure
                failure = failure or exc
        if failure is not None:
            raise failure
