"""The Perfetto decoder's wire-format reading of track events (``Decoder.fast``) against
protobuf's: the same records from the same bytes, whatever the bytes hold."""

from __future__ import annotations

import io
from typing import Any

import pytest
from hypothesis import strategies as st

from nnemu.trace._pbdecode import BEGIN, COUNTER, FLOW, Decoder, Record
from nnemu.trace._pbstream import packet_runs
from nnemu.trace._perfetto import _parser
from tests.perfetto_traces import pb2
from tests.tiers import tiered

_TRACKS = (
    (50, "thread", 5, 6),  # a thread's track
    (99, "counter", 5, None),  # a counter track of process 5
    (7, "process", 7, None),  # a process's track: no thread
)


def _preamble() -> list[bytes]:
    """Packets describing the tracks and interning names on sequence 3."""
    packets = []
    for uuid, kind, pid, tid in _TRACKS:
        packet = pb2.TracePacket(trusted_packet_sequence_id=3)
        track = packet.track_descriptor
        track.uuid = uuid
        if kind == "thread":
            track.thread.pid, track.thread.tid, track.thread.thread_name = pid, tid, "worker"
        elif kind == "counter":
            track.parent_uuid, track.name = 7, "busy"
            track.counter.SetInParent()
        else:
            track.process.pid, track.process.process_name = pid, "driver"
        packets.append(packet.SerializeToString())
    interned = pb2.TracePacket(trusted_packet_sequence_id=3)
    interned.interned_data.event_names.add(iid=1, name="interned one")
    interned.interned_data.event_names.add(iid=2, name="interned two")
    interned.trace_packet_defaults.track_event_defaults.track_uuid = 50
    packets.append(interned.SerializeToString())
    return packets


def _records(packets: list[bytes], *, fast: bool, values: bool = True) -> list[Record]:
    """The records (and problems) of a trace of ``packets``, read with or without ``fast``."""
    data = b"".join(b"\x0a" + _varint(len(p)) + p for p in packets)
    problems: list[Record] = []
    decoder = Decoder(
        lambda at, why: problems.append((at, why)), _parser("t"), values=values, from_bytes=fast
    )
    for offsets, run in packet_runs(io.BytesIO(data)):
        assert run is not None
        decoder.run(offsets, run)
        if decoder.stop is not None:
            problems.append(decoder.stop)
            break
    return [*decoder.out, *problems]


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return _varint(field << 3 | wire)


def _field(field: int, wire: int, value: int | bytes) -> bytes:
    """One field's bytes: a varint, a fixed64 or length-delimited bytes."""
    if wire == 0:
        assert isinstance(value, int)
        return _key(field, 0) + _varint(value)
    if wire == 1:
        assert isinstance(value, int)
        return _key(field, 1) + value.to_bytes(8, "little")
    assert isinstance(value, bytes)
    return _key(field, 2) + _varint(len(value)) + value


def _event_packet(event: bytes, *extra: bytes, ts: int = 1000) -> bytes:
    return _field(8, 0, ts) + _field(10, 0, 3) + b"".join(extra) + _field(11, 2, event)


def _same(*packets: bytes, values: bool = True) -> list[Record]:
    every = [*_preamble(), *packets]
    fast = _records(every, fast=True, values=values)
    assert fast == _records(every, fast=False, values=values)
    return fast


BEGIN_50 = _field(9, 0, 1) + _field(11, 0, 50)

_ODD_EVENTS = {
    "interned name": BEGIN_50 + _field(10, 0, 1),
    "inline name": BEGIN_50 + _field(23, 2, b"inline"),
    "name then iid": BEGIN_50 + _field(23, 2, b"inline") + _field(10, 0, 2),
    "iid then name": BEGIN_50 + _field(10, 0, 2) + _field(23, 2, b"inline"),
    "iid 0": BEGIN_50 + _field(10, 0, 0),
    "iid never interned": BEGIN_50 + _field(10, 0, 9),
    "no name": BEGIN_50,
    "unprintable name": BEGIN_50 + _field(23, 2, b"a\nb"),
    "name not UTF-8": BEGIN_50 + _field(23, 2, b"\xff\xfe"),
    "default track": _field(9, 0, 1) + _field(10, 0, 1),
    "track 0 given": _field(9, 0, 1) + _field(11, 0, 0),
    "unknown track": _field(9, 0, 1) + _field(11, 0, 1234),
    "process track": _field(9, 0, 1) + _field(11, 0, 7),
    "end": _field(9, 0, 2) + _field(11, 0, 50),
    "instant": _field(9, 0, 3) + _field(11, 0, 50) + _field(23, 2, b"now"),
    "unknown type": _field(9, 0, 17) + _field(11, 0, 50),
    "type twice": _field(9, 0, 2) + BEGIN_50,
    "counter": _field(9, 0, 4) + _field(11, 0, 99) + _field(30, 0, 5),
    "negative counter": _field(9, 0, 4) + _field(11, 0, 99) + _field(30, 0, 2**64 - 3),
    "double counter": _field(9, 0, 4) + _field(11, 0, 99) + _key(44, 1) + b"\0\0\0\0\0\0\xf8?",
    "double then int": _field(9, 0, 4)
    + _field(11, 0, 99)
    + _key(44, 1)
    + b"\0\0\0\0\0\0\xf8?"
    + _field(30, 0, 2),
    "counter on a thread track": _field(9, 0, 4) + _field(11, 0, 50) + _field(30, 0, 1),
    "flows": BEGIN_50
    + _field(36, 0, 8)
    + _field(47, 1, 9)
    + _field(42, 0, 10)
    + _field(48, 1, 11)
    + _field(36, 0, 12),
    "packed flows": BEGIN_50
    + _field(36, 2, _varint(300) + _varint(2))
    + _field(47, 2, (5).to_bytes(8, "little") + (6).to_bytes(8, "little"))
    + _field(48, 2, (7).to_bytes(8, "little")),
    "packed fixed64 cut": BEGIN_50 + _field(47, 2, b"\1\2\3"),
    "flow id as a varint of fixed64": BEGIN_50 + _field(47, 0, 3),
    "flows on an end": _field(9, 0, 2) + _field(11, 0, 50) + _field(47, 1, 3),
    "extra counter": BEGIN_50 + _field(31, 0, 99) + _field(12, 0, 4),
    "category iids": BEGIN_50 + _field(3, 0, 4) + _field(10, 0, 1),
    "debug annotation": BEGIN_50 + _field(4, 2, _field(10, 0, 1) + _field(6, 2, b"x")),
    "unknown field": BEGIN_50 + _field(1000, 0, 1),
    "wrong wire type": _field(9, 0, 1) + _field(11, 1, 50),
    "huge uuid": _field(9, 0, 1) + _field(11, 0, 2**64 - 1),
    "varint beyond 64 bits": BEGIN_50 + _key(30, 0) + b"\xff" * 9 + b"\x7f",
    "varint too long": BEGIN_50 + _key(30, 0) + b"\xff" * 11 + b"\x01",
    "cut varint": BEGIN_50 + _key(30, 0) + b"\xff",
    "cut length": BEGIN_50 + _key(23, 2) + b"\x05ab",
}


@pytest.mark.parametrize("event", list(_ODD_EVENTS.values()), ids=list(_ODD_EVENTS))
@pytest.mark.parametrize("values", [True, False])
def test_a_track_event_read_from_its_bytes_gives_what_protobuf_gives(event: bytes, values: bool):
    """Each packet gives the records (and problems) protobuf's reading of it gives."""
    _same(_event_packet(event), values=values)


_ODD_PACKETS = {
    "two track events (merged)": _event_packet(BEGIN_50) + _field(11, 2, _field(10, 0, 2)),
    "cleared state": _event_packet(BEGIN_50 + _field(10, 0, 1), _field(13, 0, 1)),
    "cleared by the field": _event_packet(BEGIN_50 + _field(10, 0, 1), _field(41, 0, 1)),
    "unread fields": _event_packet(BEGIN_50, _field(58, 0, 6), _field(87, 0, 1)),
    "sequence beyond 32 bits": _field(8, 0, 5) + _field(10, 0, 2**32 + 3) + _field(11, 2, BEGIN_50),
    "no track event": _field(8, 0, 5) + _field(10, 0, 3),
    "a process tree too": _event_packet(BEGIN_50, _field(2, 2, b"")),
    "cut track event": _field(8, 0, 5) + _key(11, 2) + b"\x09" + BEGIN_50[:3],
}


@pytest.mark.parametrize("packet", list(_ODD_PACKETS.values()), ids=list(_ODD_PACKETS))
def test_a_packet_read_from_its_bytes_gives_what_protobuf_gives(packet: bytes):
    """Packet-level oddities: state cleared, merged events, a sequence id truncated, a cut."""
    _same(packet, _event_packet(BEGIN_50 + _field(10, 0, 1)))


def test_flows_are_read_only_when_values_are_wanted():
    """Without ``values`` (parse, replay) a packet's flow ids make no record."""
    flows = _event_packet(_ODD_EVENTS["flows"])
    assert [r[5] for r in _same(flows) if r[2] == FLOW] == [8, 12, 9, 10, 11]
    assert not [r for r in _same(flows, values=False) if r[2] == FLOW]


_FIELDS = st.sampled_from(
    [
        *((9, 0), (11, 0), (10, 0), (23, 2), (30, 0), (44, 1), (36, 0), (47, 1), (42, 0)),
        *((48, 1), (36, 2), (47, 2), (3, 0), (4, 2), (31, 0), (9, 1), (11, 2), (2000, 0)),
    ]
)
_VALUES = st.one_of(
    st.sampled_from([0, 1, 2, 3, 4, 7, 50, 99, 2**63, 2**64 - 1]),
    st.integers(0, 2**64 - 1),
)


@st.composite
def _events(draw: Any) -> bytes:
    out = b""
    for field, wire in draw(st.lists(_FIELDS, max_size=8)):
        if wire == 2:
            out += _field(field, 2, draw(st.binary(max_size=17)))
        else:
            out += _field(field, wire, draw(_VALUES))
    return out


@tiered(
    events=st.lists(_events(), min_size=1, max_size=4),
    values=st.booleans(),
    quick=100,
    wide=300,
    derandomize=True,
)
def test_any_track_events_give_what_protobuf_gives(events: list[bytes], values: bool):
    """Random track events, fields in any order, valid or not, read as protobuf reads them."""
    _same(*(_event_packet(event) for event in events), values=values)


def _on_sequence(seq: int, event: bytes, *extra: bytes) -> bytes:
    return _field(8, 0, 2000) + _field(10, 0, seq) + b"".join(extra) + _field(11, 2, event)


def test_an_event_read_again_after_the_state_changed_gives_what_protobuf_gives():
    """The same event bytes read again after their track is described anew, their name
    interned anew, their sequence's default track changed or state cleared, or on another
    sequence, give protobuf's records each time (what ``fast`` read is not reused then)."""
    named = BEGIN_50 + _field(10, 0, 1)
    defaulted = _field(9, 0, 1) + _field(10, 0, 2)
    end = _field(9, 0, 2) + _field(11, 0, 50)
    counter = _field(9, 0, 4) + _field(11, 0, 99) + _field(30, 0, 5)
    flows = BEGIN_50 + _field(36, 0, 8) + _field(48, 1, 11)
    again = [_event_packet(event) for event in (named, defaulted, end, counter, flows)]
    moved = pb2.TracePacket(trusted_packet_sequence_id=3)
    moved.track_descriptor.uuid = 50
    thread = moved.track_descriptor.thread
    thread.pid, thread.tid, thread.thread_name = 8, 9, "moved"
    counted = pb2.TracePacket(trusted_packet_sequence_id=3)
    counted.track_descriptor.uuid = 99
    counted.track_descriptor.name = "renamed counter"
    counted.track_descriptor.counter.SetInParent()
    interned = pb2.TracePacket(trusted_packet_sequence_id=3)
    interned.interned_data.event_names.add(iid=1, name="interned anew")
    defaults = pb2.TracePacket(trusted_packet_sequence_id=3)
    defaults.trace_packet_defaults.track_event_defaults.track_uuid = 7
    records = _same(
        *again,
        *again,  # read again, nothing changed
        moved.SerializeToString(),
        counted.SerializeToString(),
        *again,
        interned.SerializeToString(),
        *again,
        _event_packet(named, _field(13, 0, 1)),  # the sequence's state cleared
        *again,
        defaults.SerializeToString(),
        *again,
        *(_on_sequence(4, event) for event in (named, defaulted, end, flows)),
        *again,
    )
    begins = [r[3:] for r in records if len(r) > 2 and r[2] == BEGIN]
    first, moved_on = [(5, 6, "interned one"), (5, 6, "interned two"), (5, 6, "")], (8, 9)
    assert begins[:6] == first * 2
    assert begins[6:12] == [
        (*moved_on, "interned one"),
        (*moved_on, "interned two"),
        (*moved_on, ""),
        (*moved_on, "interned anew"),
        (*moved_on, "interned two"),
        (*moved_on, ""),
    ]
    assert begins[12:16] == [(*moved_on, f"<interned name {iid}>") for iid in (1, 1, 2)] + [
        (*moved_on, "")
    ]
    counters = [r[5] for r in records if len(r) > 2 and r[2] == COUNTER]
    assert counters == ["busy"] * 2 + ["renamed counter"] * 5
