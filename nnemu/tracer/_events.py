"""What the tracer hands its sinks and observers: the sink protocols, section kinds, events.

Pure Python, never compiled: the tracer and the writers (``_tracer``, ``_writers``) may run
compiled by mypyc (``nnemu._native``), and both families share these, so an observer's
``kind is SectionKind.RAW`` and a sink's ``isinstance`` checks hold for either.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Protocol, TypeAlias, TypeGuard, runtime_checkable

from nnemu.sim import SimThread
from nnemu.tracer._vocab import Layer, Phase


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


@runtime_checkable
class FlowSink(TraceSink, Protocol):
    """A sink that also takes flows (arrows between sections) and counter values.

    The tracer builds these events only when a sink of this kind is attached: the
    systrace writer is not one, so it costs nothing there.
    """

    def flow(self, ts_ns: int, thread: SimThread, flow_id: int, terminating: bool) -> None:
        """The section just begun on ``thread`` starts (or, ``terminating``, ends) flow ``flow_id``."""

    def counter(self, ts_ns: int, pid: int, name: str, value: int) -> None:
        """Counter ``name`` of process ``pid`` has ``value`` from ``ts_ns`` on."""


class SectionKind(enum.Enum):
    """How a section was begun (what an observer needs to apply the contract's rules)."""

    PLAIN = "plain"
    """``mark(...)``: an NNTRACE_FULL scope."""
    SWITCH = "switch"
    """``Section.switch``: ends the innermost section's phase and starts another (``[SW]``)."""
    SUBTRACT = "subtract"
    """``mark(..., subtract=True)``: work deducted from the enclosing section (``[SUB]``)."""
    RAW = "raw"
    """``raw_mark``: a section with no NNTRACE tag (the HIDL proxies' and stubs' marks)."""


SectionInfo = tuple[SectionKind, Layer | None, Phase | None, str]
"""(kind, layer, phase, detail) of a section; for ``RAW`` the layer and phase are None and
the detail is the whole name."""


FlowInfo: TypeAlias = int
"""A flow event's info: the flow's id (1, 2, ...), negated where the flow ends (a
``terminating`` flow).  A plain int, as ``CounterInfo`` is a plain tuple: made and read
without a call to Python code, compiled or not (a flow or counter is an event a section's
begin is, and costs what one does)."""

CounterInfo: TypeAlias = tuple[int, str, int]
"""A counter event's info: (pid, name, value)."""

EventInfo: TypeAlias = "SectionInfo | FlowInfo | CounterInfo | None"
"""What an event's info slot holds (``TraceEvent``)."""

TraceEvent = tuple[int, SimThread, str | None, EventInfo]
"""(ts_ns, thread, name, info): a begin when ``name`` is set, else an end (``info`` None);
a begin's ``info`` is the section's structured information, which its ``Mark`` carries.
(With a ``FlowSink`` attached the buffer also holds flow and counter events: ``name`` None
and ``info`` a ``FlowInfo`` (an int) or a ``CounterInfo``; only the sinks that take flows see
them.)"""


class BatchSink(TraceSink, Protocol):
    """A sink that also takes a run of events at once (what the tracer prefers).

    ``receive`` gets the events in run order, exactly those ``begin``/``end``
    would have received one by one; the tracer then sends it no ``begin``/``end``.
    ``process`` is still called one by one, after every event earlier than it.
    A new kind of event added to the tracer must go through the same buffer (so
    it keeps its place in the order) and reach such sinks inside ``receive``.
    """

    def receive(self, events: Sequence[TraceEvent]) -> None:
        """Take ``events`` (sorted by time, then emission order)."""


def takes_batches(sink: TraceSink) -> TypeGuard[BatchSink]:
    """Whether ``sink`` has a ``receive`` method (a ``BatchSink``)."""
    return callable(getattr(sink, "receive", None))


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
