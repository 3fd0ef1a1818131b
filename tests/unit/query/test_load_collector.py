"""The load runs with Python's cyclic garbage collector paused, and gives it back."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from nnemu.errors import TraceFormatError
from nnemu.query import open_trace
from tests.perfetto_traces import pb2

# An end with no begin: a warning, given while the trace loads.
ROWS = [
    (0, "app", 100, 100, "E"),
    (10, "app", 100, 100, "[NN_LA_PE]run"),
    (20, "app", 100, 100, "E"),
]


@pytest.fixture(name="collector_on")
def _collector_on():
    enabled = gc.isenabled()
    gc.enable()
    yield
    if not enabled:
        gc.disable()


def _pftrace(path: Path) -> Path:
    """A Perfetto trace of ``ROWS``' marks as track events (whose warnings come as it loads)."""
    trace = pb2.Trace()
    packet = trace.packet.add(trusted_packet_sequence_id=1)
    packet.track_descriptor.uuid = 1
    packet.track_descriptor.thread.pid = packet.track_descriptor.thread.tid = 100
    for ts, kind in ((0, pb2.TrackEvent.TYPE_SLICE_END), (10, 1), (20, 2)):
        event = trace.packet.add(timestamp=ts, trusted_packet_sequence_id=1).track_event
        event.type, event.track_uuid = kind, 1
        if kind == pb2.TrackEvent.TYPE_SLICE_BEGIN:
            event.name = "[NN_LA_PE]run"
    path.write_bytes(trace.SerializeToString())
    return path


@pytest.mark.usefixtures("collector_on")
def test_the_collector_is_paused_while_a_trace_loads_and_on_again_after(tmp_path):
    """Within the load (seen from its warnings) the collector is off; after it, on."""
    seen: list[bool] = []
    trace = _pftrace(tmp_path / "t.pftrace")
    conn = open_trace(str(trace), warn=lambda *_: seen.append(gc.isenabled()))
    assert conn.execute("select count(*) from slice").fetchone() == (1,)
    assert seen == [False]
    assert gc.isenabled()


@pytest.mark.usefixtures("collector_on")
def test_the_collector_is_on_again_after_a_load_that_failed(tmp_path):
    """A trace refused mid-load leaves the collector as it found it."""
    path = tmp_path / "t.txt"
    path.write_text("# tracer: nop\n")
    with pytest.raises(TraceFormatError):
        open_trace(str(path))
    assert gc.isenabled()


def test_a_load_leaves_a_paused_collector_paused(write_trace):
    """A caller that had paused the collector finds it paused after the load."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        open_trace(str(write_trace(ROWS)))
        assert not gc.isenabled()
    finally:
        if enabled:
            gc.enable()
