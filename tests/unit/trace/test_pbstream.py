"""Reading a Perfetto trace in runs of packets: block boundaries, and what the fast path skips."""

from __future__ import annotations

import io
import signal
from pathlib import Path

import pytest

from nnemu.trace import Counter, Flow, SliceBegin, SliceEnd, read_perfetto
from nnemu.trace._pbstream import CHUNK, StreamStop, packet_runs
from nnemu.trace._pbwire import varint
from tests.perfetto_traces import pb2
from tests.pftrace import packets


def _event_packet(ts: int, kind: int, uuid: int, name: str = "") -> object:
    packet = pb2.TracePacket()
    packet.trusted_packet_sequence_id = 1
    packet.timestamp = ts
    packet.track_event.type = kind
    packet.track_event.track_uuid = uuid
    if name:
        packet.track_event.name = name
    return packet


def _descriptors() -> list[object]:
    thread = pb2.TracePacket()
    thread.trusted_packet_sequence_id = 1
    thread.track_descriptor.uuid = 10
    thread.track_descriptor.thread.pid, thread.track_descriptor.thread.tid = 1, 2
    counter = pb2.TracePacket()
    counter.trusted_packet_sequence_id = 1
    counter.track_descriptor.uuid, counter.track_descriptor.name = 20, "queue"
    counter.track_descriptor.parent_uuid = 10
    counter.track_descriptor.counter.SetInParent()
    return [thread, counter]


def _write(path: Path, items: list[object]) -> bytes:
    trace = pb2.Trace()
    trace.packet.extend(items)
    data: bytes = trace.SerializeToString()
    path.write_bytes(data)
    return data


def test_runs_cover_every_packet_across_read_blocks():
    """Packets cut by a read block (lengths of one, two and three bytes) come whole, at their offsets."""
    items = [
        _event_packet(ts, 1, 10, "x" * size)
        for ts, size in enumerate([10, 200, 20_000] * (3 * CHUNK // 20_210 + 1))
    ]
    trace = pb2.Trace()
    trace.packet.extend(items)
    data = trace.SerializeToString()
    assert len(data) > 2 * CHUNK
    offsets: list[int] = []
    joined = b""
    for run_offsets, run in packet_runs(io.BytesIO(data)):
        assert run is not None
        assert run_offsets[0] == len(joined)
        offsets += run_offsets
        joined += run
    assert joined == data
    assert offsets == _offsets(data)
    assert len(packets(data)) == len(items)


def test_a_packet_cut_off_at_the_end_of_a_big_trace_stops_the_runs_at_it():
    """The runs give every whole packet, then stop at the cut one with its offset."""
    trace = pb2.Trace()
    trace.packet.extend(_event_packet(ts, 1, 10, "y" * 300) for ts in range(CHUNK // 300 + 10))
    data = trace.SerializeToString()
    offsets = _offsets(data)
    got: list[int] = []
    runs = packet_runs(io.BytesIO(data[:-5]))
    with pytest.raises(StreamStop) as stop:
        got.extend(offset for run_offsets, _ in runs for offset in run_offsets)
    assert got == offsets[:-1]
    assert stop.value.offset == offsets[-1]
    assert stop.value.message.startswith("truncated packet")


def test_a_short_last_record_of_another_field_ends_the_runs():
    """A last record shorter than a header can be read from (here 5 bytes of field 2, as a
    fuzzed trace ended) is read once the stream ends: the walk stopped over it for ever,
    and ``nnemu parse``, ``query`` and ``replay`` of a 10 KB file never ended."""
    trace = pb2.Trace()
    trace.packet.extend(_event_packet(ts, 1, 10, "z") for ts in range(3))
    data = trace.SerializeToString()
    tail = b"\x12\x03abc"  # field 2 (no field of Trace), length 3
    previous = signal.signal(signal.SIGALRM, _too_long)
    signal.setitimer(signal.ITIMER_REAL, 10)
    try:
        runs = list(packet_runs(io.BytesIO(data + tail)))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert [offsets for offsets, _ in runs] == [_offsets(data), [len(data)]]
    assert runs[-1][1] is None  # the record of another field: its offset alone


def _too_long(signum: int, frame: object) -> None:
    raise TimeoutError("packet_runs walked the same bytes for 10 s")


def _offsets(data: bytes) -> list[int]:
    """Each record's offset, walked one by one."""
    offsets = []
    at = 0
    while at < len(data):
        offsets.append(at)
        length = varint(data, at + 1, len(data))
        assert length is not None
        at = length[1] + length[0]
    return offsets


def test_flows_and_extra_counters_are_read_in_every_run(tmp_path: Path):
    """Flow ids, terminating flow ids and extra counter values, each alone on a few packets
    among many, are all read."""
    items = _descriptors()
    flows, ends, values = [], [], []
    for index in range(60_000):
        ts = 1000 + 10 * index
        begin = _event_packet(ts, 1, 10, f"slice {index % 7}")
        if index % 997 == 0:
            begin.track_event.flow_ids.append(index + 1)
            flows.append(index + 1)
        elif index % 991 == 0:
            begin.track_event.terminating_flow_ids.append(index + 1)
            ends.append(index + 1)
        elif index % 983 == 0:
            begin.track_event.extra_counter_track_uuids.append(20)
            begin.track_event.extra_counter_values.append(index)
            values.append(float(index))
        items += [begin, _event_packet(ts + 5, 2, 10)]
    data = _write(tmp_path / "many.pftrace", items)
    assert len(data) > 2 * CHUNK
    events = list(read_perfetto(str(tmp_path / "many.pftrace")))
    assert [e.flow_id for e in events if isinstance(e, Flow) and not e.terminating] == flows
    assert [e.flow_id for e in events if isinstance(e, Flow) and e.terminating] == ends
    assert [e.value for e in events if isinstance(e, Counter)] == values
    assert sum(isinstance(e, SliceBegin) for e in events) == 60_000
    assert sum(isinstance(e, SliceEnd) for e in events) == 60_000
