"""Decoding nnemu's Perfetto protobuf traces in tests, with the ``perfetto`` package's classes.

``packets(data)`` splits a file into its ``Trace.packet`` records (refusing a partial
one), ``as_text(data)`` renders them in protobuf text format for readable goldens, and
``decode(data)`` rebuilds each thread's slices with their flows (names inline or interned on
the one sequence nnemu writes), as trace processor does.
"""

from __future__ import annotations

from textwrap import indent
from typing import Any

import attrs
import pytest

pb: Any = pytest.importorskip(
    "perfetto.protos.perfetto.trace.perfetto_trace_pb2",
    reason="the Perfetto tests need the perfetto extra: pip install 'nnemu[perfetto]'",
)


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def packets(data: bytes) -> list[Any]:
    """The file's packets; fails the test if a record is not a complete ``Trace.packet``."""
    out = []
    at = 0
    while at < len(data):
        assert data[at] == 0x0A, f"byte {at}: not a Trace.packet record"
        size, start = _varint(data, at + 1)
        assert start + size <= len(data), f"byte {at}: truncated packet"
        out.append(pb.TracePacket.FromString(data[start : start + size]))
        at = start + size
    return out


def as_text(data: bytes) -> str:
    """Every packet in protobuf text format, one ``packet { ... }`` block each."""
    return "".join("packet {\n" + indent(str(packet), "  ") + "}\n" for packet in packets(data))


@attrs.define
class Slice:
    """A slice rebuilt from TrackEvent begin/end packets."""

    ts: int
    tid: int
    name: str
    depth: int
    parent: str | None
    flows_out: list[int]
    flows_in: list[int]
    dur: int = -1


@attrs.define
class Decoded:
    """What a test checks in a trace: slices, counter values and names."""

    slices: list[Slice]
    counters: dict[tuple[int, str], list[tuple[int, int]]]
    processes: dict[int, str]
    threads: dict[int, str]


def decode(data: bytes) -> Decoded:
    """Rebuild the slices (per thread track), counters (per process and name) and names."""
    tracks: dict[int, tuple[int, int]] = {}
    counter_tracks: dict[int, tuple[int, str]] = {}
    stacks: dict[int, list[Slice]] = {}
    result = Decoded([], {}, {}, {})
    names: dict[int, str] = {}
    for packet in packets(data):
        if packet.sequence_flags & pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED:
            names.clear()
        for entry in packet.interned_data.event_names:
            names[entry.iid] = entry.name
        if packet.HasField("process_tree"):
            for process in packet.process_tree.processes:
                result.processes[process.pid] = process.cmdline[0]
            for thread in packet.process_tree.threads:
                result.threads[thread.tid] = thread.name
        if packet.HasField("track_descriptor"):
            desc = packet.track_descriptor
            if desc.HasField("thread"):
                tracks[desc.uuid] = (desc.thread.pid, desc.thread.tid)
            elif desc.HasField("counter"):
                counter_tracks[desc.uuid] = (desc.parent_uuid, desc.name)
        if packet.HasField("track_event"):
            event = packet.track_event
            if event.type == pb.TrackEvent.TYPE_COUNTER:
                key = counter_tracks[event.track_uuid]
                result.counters.setdefault(key, []).append((packet.timestamp, event.counter_value))
                continue
            _, tid = tracks[event.track_uuid]
            stack = stacks.setdefault(tid, [])
            if event.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
                item = Slice(
                    packet.timestamp,
                    tid,
                    event.name if event.HasField("name") else names[event.name_iid],
                    len(stack),
                    stack[-1].name if stack else None,
                    list(event.flow_ids),
                    list(event.terminating_flow_ids),
                )
                stack.append(item)
                result.slices.append(item)
            else:
                done = stack.pop()
                done.dur = packet.timestamp - done.ts
    return result
