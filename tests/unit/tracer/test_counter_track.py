"""``Tracer.counter_track``: a counter written through its track is the counter that
``Tracer.counter`` and ``counter_add`` write (one last value, written only when it changes)."""

from __future__ import annotations

from nnemu.sim import Kernel
from nnemu.tracer import Tracer
from tests.unit.tracer.helpers import FlowRecorder


def test_a_track_writes_its_first_value_and_then_only_changes():
    """The first value is written even if 0; a repeated one is not, whichever of the track,
    ``counter`` and ``counter_add`` writes it: they share the counter's last value."""
    sink = FlowRecorder()
    tracer = Tracer(Kernel(), [sink])
    track = tracer.counter_track(700, "executions waiting")
    assert tracer.counter_track(700, "executions waiting") is track
    track.set(0)
    track.set(0)
    track.add(2)
    tracer.counter(700, "executions waiting", 2)
    tracer.counter_add(700, "executions waiting", 1)
    track.set(3)
    track.add(-3)
    tracer.counter(701, "executions waiting", 0)  # another process: another track
    tracer.close()
    assert [(pid, value) for _, pid, _, value in sink.counters] == [
        (700, 0),
        (700, 2),
        (700, 3),
        (700, 0),
        (701, 0),
    ]
    assert track.value == 0


def test_a_track_writes_nothing_without_a_flow_sink_or_once_closed():
    """A tracer whose sinks take no counters writes none through a track; neither does a
    closed tracer, and its track keeps the value last written."""
    kernel = Kernel()
    silent = Tracer(kernel, [])
    track = silent.counter_track(700, "memory in use")
    track.set(5)
    assert (track.value, track.written) == (0, False)
    sink = FlowRecorder()
    tracer = Tracer(kernel, [sink])
    track = tracer.counter_track(700, "memory in use")
    track.set(5)
    tracer.close()
    track.set(6)
    tracer.counter(700, "memory in use", 7)
    assert [value for *_, value in sink.counters] == [5]
    assert track.value == 5
