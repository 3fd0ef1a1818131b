"""Reading Perfetto packets into the reader's records (``_perfetto``'s engine).

``Decoder`` keeps what spans packets (tracks, interned names, thread and process names)
and turns each ``TracePacket`` into records: plain tuples (``Record``: time, the
packet's byte offset, a kind, then the kind's fields), cheaper to make than the typed
records ``read_perfetto`` builds from them.  ``Decoder.run`` reads a run of packets from
their bytes: a track event of one slice begin or end or a counter value (most packets)
is read from its wire format here (``Decoder.fast``), and so is a packet that describes
(``Decoder.described``: ``_pbpackets``); any other packet is decoded by protobuf (the
``perfetto`` package's classes, upb in C) and read from its fields.

A wheel runs this module compiled by mypyc (``nnemu._native``): it imports no
protobuf package (``_perfetto`` hands it the packet parser) and its classes are plain.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from typing import Any, Final

from nnemu.trace._pbpackets import (
    DESCRIPTOR,
    EVENT,
    TREE,
    Descriptor,
    annotation_read,
    read_descriptor,
    read_interned,
    read_packet,
    read_tree,
)

_SEQ_INCREMENTAL_STATE_CLEARED: Final = 1
_TYPE_SLICE_BEGIN: Final = 1
_TYPE_SLICE_END: Final = 2
_TYPE_INSTANT: Final = 3
_TYPE_COUNTER: Final = 4

_FAST_TYPES: Final = frozenset((_TYPE_SLICE_BEGIN, _TYPE_SLICE_END, _TYPE_COUNTER))
"""The ``TrackEvent`` types ``Decoder.fast`` reads itself."""
_EVENT_KEY: Final = 11 << 3 | 2
"""The key of ``TracePacket.track_event`` (field 11, length-delimited)."""
_UNREAD_PACKET_FIELDS: Final = frozenset((42, 58, 87))
"""``TracePacket`` varints nnemu reads nowhere: ``previous_packet_dropped``,
``timestamp_clock_id`` (one boot clock is assumed), ``first_packet_on_sequence``."""
_FLOW_FIELDS: Final = {36: 0, 47: 1, 42: 2, 48: 3}
"""``TrackEvent``'s flow id fields -> their list in ``fast_event``: ``flow_ids_old``
(varints), ``flow_ids`` (fixed64), ``terminating_flow_ids_old``, ``terminating_flow_ids``."""
_MAX_CACHED_EVENTS: Final = 1 << 14
"""Distinct track events whose fields ``Decoder.fast`` keeps (then it forgets them all)."""
_DOUBLE: Final = struct.Struct("<d")
_UINT64: Final = struct.Struct("<Q")

_TRACK_FIELDS: Final = frozenset(
    (
        "track_event",
        "track_descriptor",
        "interned_data",
        "thread_descriptor",
        "trace_packet_defaults",
    )
)

Problem = Callable[[int, str], None]
"""Called with (byte offset, message) for each problem found while reading."""
ParsePacket = Callable[[bytes], Any]
"""A ``TracePacket``'s bytes -> the decoded packet, or why it is undecodable (a str)."""

# -- decoding packets --------------------------------------------------------------

# A record as the reader makes it: a tuple (cheaper than the typed records, which
# ``read_perfetto`` builds from it), its time, its packet's offset and its kind first.
# The kinds, and what follows (ts is 0 for the untimed names):
BEGIN: Final = 0  # pid, tid, name
END: Final = 1  # pid | None, tid
COUNTER: Final = 2  # pid | None, tid | None, name, value
FLOW: Final = 3  # pid, tid, flow id, terminating
PRINT: Final = 4  # pid | None, tid, cpu, text
PROCESS: Final = 5  # pid, name
THREAD: Final = 6  # pid | None, tid, name
TIMED: Final = PROCESS
"""Kinds below this have a time."""
Record = tuple[Any, ...]
_Fields = tuple[
    int, int, bool, int, int, str, int, float | None, tuple[tuple[int, ...], tuple[int, ...]] | None
]
"""A track event's fields as ``_event_fields`` reads them: type, track uuid, whether the
uuid is set, which name field is set (0 none, 1 ``name_iid``, 2 ``name``), name iid, name,
counter value, double counter value (None: not set), flow ids (None: none): those that
continue a flow, those that end one."""
_Ready = tuple[int, int, Any, Any, Any, Any, Any]
"""A track event ``Decoder.fast`` read, as its records but for the packet's time and offset:
its sequence, then its record's kind and fields (``BEGIN``: pid, tid, name, flow ids or
None; ``END``: pid, tid; ``COUNTER``: pid, tid, name, value), left as the objects they are
(no int or float made again per packet)."""


def _varint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """(value, next position) of the varint at ``pos``, or (-1, pos): cut off at ``end``,
    or longer than a 64-bit value."""
    value = 0
    shift = 0
    at = pos
    while at < end:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            if shift == 63 and byte > 1:
                return -1, pos
            return value, at
        shift += 7
        if shift > 63:
            break
    return -1, pos


def _packed(data: bytes, pos: int, end: int, fixed: bool, into: list[int]) -> bool:
    """Append the packed varints (or ``fixed`` 64-bit values) of ``data[pos:end]`` to
    ``into``; False if they do not fill it exactly."""
    if fixed:
        if (end - pos) % 8:
            return False
        into.extend(value for (value,) in _UINT64.iter_unpack(data[pos:end]))
        return True
    while pos < end:
        value, pos = _varint(data, pos, end)
        if value < 0:
            return False
        into.append(value)
    return True


def _event_fields(data: bytes) -> _Fields | None:
    """The fields of the ``TrackEvent`` ``data`` that ``Decoder.fast`` reads, or None if it
    holds another: ``type`` (a slice begin or end, a counter), ``track_uuid``, ``name_iid``
    or ``name``, ``counter_value`` or ``double_counter_value``, flow ids (``flow_ids``,
    ``terminating_flow_ids`` and their ``_old`` forms, packed or not) and the fields nnemu
    reads nowhere (``category_iids``, unpacked; ``debug_annotations`` that
    ``_pbpackets.annotation_read`` walks).  The last of a oneof's fields wins, as in
    protobuf."""
    pos = 0
    end = len(data)
    kind = uuid = iid = counter = 0
    has_uuid = False
    named = 0  # which field of the name's oneof is set: 0 none, 1 name_iid, 2 name
    name = ""
    double: float | None = None  # set: double_counter_value is the oneof's field
    flows: list[list[int]] | None = None
    while pos < end:
        key = data[pos]
        pos += 1
        if key >= 0x80:
            if pos >= end or data[pos] >= 0x80:
                return None
            key = (key & 0x7F) | data[pos] << 7
            pos += 1
        wire = key & 7
        field = key >> 3
        if wire == 0:
            value = data[pos] if pos < end else 0x80
            if value < 0x80:
                pos += 1
            else:
                value, pos = _varint(data, pos, end)
                if value < 0:
                    return None
            if field == 9:
                if value not in _FAST_TYPES:
                    return None
                kind = value
            elif field == 11:
                uuid = value
                has_uuid = True
            elif field == 10:
                iid = value
                named = 1
            elif field == 30:
                counter = value - (1 << 64) if value >> 63 else value
                double = None
            elif field in _FLOW_FIELDS and field < 47:
                if flows is None:
                    flows = [[], [], [], []]
                flows[_FLOW_FIELDS[field]].append(value)
            elif field != 3:  # category_iids: read nowhere
                return None
        elif wire == 2:
            length, pos = _varint(data, pos, end)
            stop = pos + length
            if length < 0 or stop > end:
                return None
            if field == 23:
                try:
                    name = data[pos:stop].decode()
                except UnicodeDecodeError:
                    return None
                named = 2
            elif field in _FLOW_FIELDS:  # packed
                if flows is None:
                    flows = [[], [], [], []]
                if not _packed(data, pos, stop, field >= 47, flows[_FLOW_FIELDS[field]]):
                    return None
            elif field != 4 or not annotation_read(data, pos, stop):
                return None  # (debug_annotations: read nowhere)
            pos = stop
        elif wire == 1:
            if pos + 8 > end:
                return None
            if field == 44:
                double = _DOUBLE.unpack_from(data, pos)[0]
                counter = 0
            elif field in _FLOW_FIELDS and field >= 47:
                if flows is None:
                    flows = [[], [], [], []]
                flows[_FLOW_FIELDS[field]].append(_UINT64.unpack_from(data, pos)[0])
            else:
                return None
            pos += 8
        else:
            return None
    if kind == 0:
        return None
    if flows is None:
        return kind, uuid, has_uuid, named, iid, name, counter, double, None
    return (
        kind,
        uuid,
        has_uuid,
        named,
        iid,
        name,
        counter,
        double,
        (
            (*flows[0], *flows[1]),
            (*flows[2], *flows[3]),
        ),
    )


class _Track:
    """A ``TrackDescriptor``: its thread or process (if any), name, and whether it counts."""

    def __init__(self, pid: int | None, tid: int | None, name: str, counter: bool) -> None:
        self.pid = pid
        self.tid = tid
        self.name = name
        self.counter = counter


class Decoder:
    """The state that spans packets: tracks, interned names, thread names and processes.

    Each method appends the records of what it reads to ``out``.
    """

    def __init__(
        self,
        on_problem: Problem,
        parse: ParsePacket,
        *,
        values: bool = True,
        from_bytes: bool = True,
    ) -> None:
        self.on_problem = on_problem
        self.parse = parse
        """Decodes a packet ``fast`` does not read."""
        self.out: list[Record] = []
        """The records read and not yet taken."""
        self.tracks: dict[int, _Track] = {}
        self.names: dict[int, dict[int, str]] = {}
        """Interned event names by sequence, then iid."""
        self.default_track: dict[int, int] = {}
        """Default track uuid by sequence (``trace_packet_defaults``)."""
        self.sequence_thread: dict[int, tuple[int, int]] = {}
        """(pid, tid) of a sequence's ``thread_descriptor``."""
        self.thread_names: dict[int, tuple[str, bool]] = {}
        """tid -> (name, from the scheduler)."""
        self.tgid: dict[int, int] = {}
        self.process_names: dict[int, str] = {}
        self.warned: set[str] = set()
        self.repeated = values
        """Whether a ``TrackEvent``'s flow ids and extra counter values are read."""
        self.events: dict[bytes, _Fields | None] = {}
        """Track events' fields by their bytes (None: ``fast`` does not read it)."""
        self.ready: dict[bytes, _Ready] = {}
        """Track events ``fast`` read, by their bytes, as the state read so far gives them
        (their track, their interned name): emptied whenever that state changes (another
        packet read by ``packet``, a sequence's state cleared)."""
        self.stop: tuple[int, str] | None = None
        """Where ``run`` stopped at an undecodable packet, and why."""
        self.from_bytes = from_bytes
        """Whether the packets ``fast`` reads are read from their bytes (False: protobuf
        decodes every packet, the reading ``fast`` must agree with)."""

    def warn_once(self, offset: int, message: str) -> None:
        """Report ``message`` the first time it comes (of at most 1000 distinct ones)."""
        if message not in self.warned and len(self.warned) < 1000:
            self.warned.add(message)
            self.on_problem(offset, message)

    def thread(self, offset: int, pid: int | None, tid: int, name: str) -> None:
        """A thread named by the trace (process_tree, track descriptors): always kept."""
        changed = False
        if pid is not None and self.tgid.get(tid) != pid:
            self.tgid[tid] = pid
            changed = True
        if name and self.thread_names.get(tid) != (name, False):
            self.thread_names[tid] = (name, False)
            changed = True
        if changed:
            known = self.thread_names.get(tid)
            self.out.append((0, offset, THREAD, pid, tid, known[0] if known else ""))

    def process(self, offset: int, pid: int, name: str) -> None:
        """A process named by the trace (once per name)."""
        self.tgid[pid] = pid
        if name and self.process_names.get(pid) != name:
            self.process_names[pid] = name
            self.out.append((0, offset, PROCESS, pid, name))

    def comm(self, offset: int, tid: int, name: str) -> None:
        """A thread's comm seen by the scheduler: kept unless the trace named the thread."""
        known = self.thread_names.get(tid)
        if tid > 0 and name and (known is None or (known[1] and known[0] != name)):
            self.thread_names[tid] = (name, True)
            self.out.append((0, offset, THREAD, self.tgid.get(tid), tid, name))

    # -- packets

    def run(self, offsets: list[int], data: bytes) -> int:
        """Read a run of ``Trace.packet`` records (``data``: their bytes, ``offsets``: the
        offset of each); return how many were read: all, unless one is undecodable (then
        ``stop`` holds its offset and why, and the records before it are read).

        A packet of one slice begin or end or a counter value on a described track, and
        nothing else to read, is read from its bytes here (``fast``: most packets); any
        other is decoded by protobuf (``parse``) and read by ``packet``.
        """
        base = offsets[0]
        count = len(offsets)
        size = len(data)
        for index in range(count):
            offset = offsets[index]
            end = offsets[index + 1] - base if index + 1 < count else size
            # The record's header: its tag (one byte), then its length (a varint).
            pos = offset - base + 1
            while data[pos] >= 0x80:
                pos += 1
            pos += 1
            if self.from_bytes and (
                self.fast(offset, data, pos, end) or self.described(offset, data, pos, end)
            ):
                continue
            if self.ready:
                self.ready.clear()  # the packet may describe tracks or intern names
            packet = self.parse(data[pos:end])
            if isinstance(packet, str):
                self.stop = (offset, packet)
                return index
            self.packet(offset, packet)
        return count

    def fast(self, offset: int, data: bytes, pos: int, end: int) -> bool:
        """Read the ``TracePacket`` in ``data[pos:end]`` from its bytes, if it is a track
        event ``fast`` reads whole (else change nothing and return False).

        It reads a packet of ``timestamp``, ``trusted_packet_sequence_id``,
        ``sequence_flags`` (and the fields nnemu reads nowhere: ``timestamp_clock_id``,
        ``previous_packet_dropped``, ``first_packet_on_sequence``) and one
        ``track_event`` (``fast_event``), each field with its own wire type, on a track
        described with its thread, or a counter track: what protobuf reads of such bytes.
        Anything else (another field, a field twice where protobuf would merge, a varint
        longer than 64 bits) is left to protobuf.
        """
        ts = seq = flags = 0
        event_at = -1
        event_end = 0
        while pos < end:
            key = data[pos]
            pos += 1
            if key >= 0x80:
                if pos >= end or data[pos] >= 0x80:
                    return False
                key = (key & 0x7F) | data[pos] << 7
                pos += 1
            if key == _EVENT_KEY:
                if event_at >= 0:
                    return False  # a second track_event: protobuf merges the two
                length, event_at = _varint(data, pos, end)
                event_end = event_at + length
                if length < 0 or event_end > end:
                    return False
                pos = event_end
                continue
            if key & 7:
                return False
            value = data[pos] if pos < end else 0x80
            if value < 0x80:  # (a one-byte varint, read here: most are)
                pos += 1
            else:
                value, pos = _varint(data, pos, end)
                if value < 0:
                    return False
            field = key >> 3
            if field == 8:
                ts = value
            elif field == 10:
                seq = value & 0xFFFFFFFF
            elif field == 13:
                flags = value & 0xFFFFFFFF
            elif field not in _UNREAD_PACKET_FIELDS:
                return False
        if event_at < 0:
            return False
        # A track event's fields, read once per distinct bytes (an end on a track, a begin
        # of an interned name: the same bytes again and again; the time is the packet's),
        # and its records' fields once per state (``ready``).
        raw = data[event_at:event_end]
        ready = self.ready.get(raw)
        if ready is not None and ready[0] == seq and not flags & _SEQ_INCREMENTAL_STATE_CLEARED:
            out = self.out
            kind = ready[1]
            if kind == END:
                out.append((ts, offset, END, ready[2], ready[3]))
            elif kind == BEGIN:
                out.append((ts, offset, BEGIN, ready[2], ready[3], ready[4]))
                flows = ready[5]
                if flows is not None:
                    self.flow_records(ts, offset, ready[2], ready[3], flows)
            else:
                out.append((ts, offset, COUNTER, ready[2], ready[3], ready[4], ready[5]))
            return True
        cache = self.events
        fields = cache.get(raw)
        if fields is None:
            if raw in cache:
                return False
            if len(cache) >= _MAX_CACHED_EVENTS:
                cache.clear()
            fields = cache[raw] = _event_fields(raw)
            if fields is None:
                return False
        return self.fast_event(offset, fields, ts, seq, flags, raw)

    def fast_event(
        self, offset: int, fields: _Fields, ts: int, seq: int, flags: int, raw: bytes
    ) -> bool:
        """``fast``'s track event, of ``fields`` (``_event_fields``; its bytes ``raw``), at
        ``ts`` on sequence ``seq`` (packet ``flags``): its records, if on a track ``fast``
        reads (then kept in ``ready``)."""
        kind, uuid, has_uuid, named, iid, name, counter, double, flows = fields
        names = self.names
        if not uuid and not has_uuid:
            uuid = self.default_track.get(seq, 0)
        track = self.tracks.get(uuid) if uuid else None
        if track is None:
            return False
        pid = track.pid
        tid = track.tid
        if kind != _TYPE_COUNTER and (tid is None or pid is None):
            return False
        if names and flags & _SEQ_INCREMENTAL_STATE_CLEARED and seq in names:
            del names[seq]
            self.ready.clear()
        out = self.out
        ready = self.ready
        if len(ready) >= _MAX_CACHED_EVENTS:
            ready.clear()
        if kind == _TYPE_COUNTER:
            number = double if double is not None else float(counter)
            out.append((ts, offset, COUNTER, pid, tid, track.name, number))
            ready[raw] = (seq, COUNTER, pid, tid, track.name, number, None)
        elif kind == _TYPE_SLICE_END:
            out.append((ts, offset, END, pid, tid))
            ready[raw] = (seq, END, pid, tid, None, None, None)
        else:
            # Interned on this sequence, or set and printable: as is; else the general
            # reading (``name_of``).
            text = None
            if named == 1 and iid:
                interned = names.get(seq)
                if interned is not None:
                    text = interned.get(iid)
            if text is None:
                if named == 2 and name and name.isprintable():
                    text = name
                else:
                    text = self.name_of(named, name, iid, seq)
            out.append((ts, offset, BEGIN, pid, tid, text))
            if flows is not None and self.repeated:
                self.flow_records(ts, offset, pid, tid, flows)
                ready[raw] = (seq, BEGIN, pid, tid, text, flows, None)
            else:
                ready[raw] = (seq, BEGIN, pid, tid, text, None, None)
        return True

    def flow_records(
        self, ts: int, offset: int, pid: Any, tid: Any, flows: tuple[tuple[int, ...], ...]
    ) -> None:
        """The ``FLOW`` records of a slice begin's flow ids (``_Fields``' last)."""
        out = self.out
        for flow_id in flows[0]:
            out.append((ts, offset, FLOW, pid, tid, flow_id, False))
        for flow_id in flows[1]:
            out.append((ts, offset, FLOW, pid, tid, flow_id, True))

    def described(self, offset: int, data: bytes, pos: int, end: int) -> bool:
        """Read the ``TracePacket`` in ``data[pos:end]`` from its bytes, as ``packet`` reads
        protobuf's, if it is one ``_pbpackets`` reads (a process tree, a track descriptor, a
        track event ``fast_event`` reads that interns names); else change nothing and
        return False."""
        packet = read_packet(data, pos, end)
        if packet is None:
            return False
        ts, seq, flags, cleared, kind, start, stop, interned_at, interned_end = packet
        if kind == 0 and interned_at < 0:
            return True  # nothing that makes a record or changes a state
        interned = None
        if interned_at >= 0:
            interned = read_interned(data, interned_at, interned_end)
            if interned is None:
                return False
        if kind == TREE:
            tree = read_tree(data, start, stop)
            if tree is None or interned is not None:
                return False
            for pid, name in tree[0]:
                self.process(offset, pid, _clean(name))
            for tid, tgid, name in tree[1]:
                self.thread(offset, tgid or None, tid, _clean(name))
            return True
        descriptor = None
        raw = b""
        fields = None
        if kind == DESCRIPTOR:
            descriptor = read_descriptor(data, start, stop)
            if descriptor is None:
                return False
        elif kind == EVENT:
            raw = data[start:stop]
            fields = _event_fields(raw)
            if fields is None or not self.fast_track(fields, seq):
                return False
        # As track_packet: the sequence's state, its interned names, then its data.
        if self.ready:
            self.ready.clear()
        names = self.names
        if names and seq in names and (flags & _SEQ_INCREMENTAL_STATE_CLEARED or cleared):
            del names[seq]
        if interned is not None:
            table = names.setdefault(seq, {})
            for iid, name in interned:
                table[iid] = _clean(name)
        if descriptor is not None:
            self.describe_track(offset, descriptor)
        elif fields is not None:
            self.fast_event(offset, fields, ts, seq, 0, raw)
        return True

    def fast_track(self, fields: _Fields, seq: int) -> bool:
        """Whether ``fast_event`` reads a track event of ``fields`` on sequence ``seq``: its
        track is described, with its thread unless it is a counter's."""
        uuid: int = fields[1]
        if not uuid and not fields[2]:
            uuid = self.default_track.get(seq, 0)
        track = self.tracks.get(uuid) if uuid else None
        if track is None:
            return False
        return fields[0] == _TYPE_COUNTER or (track.tid is not None and track.pid is not None)

    def packet(self, offset: int, packet: Any) -> None:
        """The records of one ``TracePacket``."""
        kind = packet.WhichOneof("data")
        if kind == "track_event":  # most packets: nothing else to look for first
            self.track_packet(offset, packet, kind)
            return
        if kind == "process_tree":
            self.process_tree(offset, packet.process_tree)
        elif kind == "ftrace_events":
            self.ftrace(offset, packet.ftrace_events)
        if (
            kind in _TRACK_FIELDS
            or packet.HasField("interned_data")
            or packet.HasField("trace_packet_defaults")
        ):
            self.track_packet(offset, packet, kind)

    def process_tree(self, offset: int, tree: Any) -> None:
        """Processes (``cmdline[0]``) and threads of a ``ProcessTree``."""
        for process in tree.processes:
            name = process.cmdline[0] if process.cmdline else ""
            self.process(offset, process.pid, _clean(name))
        for thread in tree.threads:
            self.thread(offset, thread.tgid or None, thread.tid, _clean(thread.name))

    def ftrace(self, offset: int, bundle: Any) -> None:
        """Prints and scheduler comms of a ``FtraceEventBundle`` (full and compact events)."""
        cpu = bundle.cpu
        if bundle.HasField("compact_sched"):
            compact = bundle.compact_sched
            table = compact.intern_table
            for pids, indexes in (
                (compact.switch_next_pid, compact.switch_next_comm_index),
                (compact.waking_pid, compact.waking_comm_index),
            ):
                for tid, index in zip(pids, indexes, strict=False):
                    if index < len(table):
                        self.comm(offset, tid, _clean(table[index]))
        append = self.out.append
        for event in bundle.event:
            kind = event.WhichOneof("event")
            if kind == "print":
                append(self.print_event(offset, cpu, event.timestamp, event.pid, event.print.buf))
            elif kind == "sched_switch":
                switch = event.sched_switch
                self.comm(offset, switch.prev_pid, _clean(switch.prev_comm))
                self.comm(offset, switch.next_pid, _clean(switch.next_comm))

    def print_event(self, offset: int, cpu: int, ts: int, tid: int, buf: str | bytes) -> Record:
        """An atrace mark from its ``trace_marker`` text."""
        text = _clean(_text(buf).rstrip("\n\x00"))
        kind = text[:2]
        if kind == "B|":
            parts = text.split("|", 2)
            if len(parts) == 3 and _is_id(parts[1]):
                return (ts, offset, BEGIN, int(parts[1]), tid, parts[2])
        elif text == "E" or kind == "E|":
            parts = text.split("|")
            if len(parts) == 1 or (len(parts) == 2 and _is_id(parts[1])):
                return (ts, offset, END, int(parts[1]) if len(parts) == 2 else None, tid)
        elif kind == "C|":
            parts = text.split("|")  # C|tgid|name|value, and |category since Android 12
            if len(parts) in (4, 5) and _is_id(parts[1]):
                try:
                    value = float(parts[3])
                except ValueError:
                    value = math.nan
                if math.isfinite(value):
                    return (ts, offset, COUNTER, int(parts[1]), tid, parts[2], value)
        return (ts, offset, PRINT, self.tgid.get(tid), tid, cpu, text)

    def track_packet(self, offset: int, packet: Any, kind: str | None) -> None:
        """A packet's sequence state, track descriptor and track event."""
        seq = packet.trusted_packet_sequence_id
        if (
            self.names
            and seq in self.names
            and (
                packet.sequence_flags & _SEQ_INCREMENTAL_STATE_CLEARED
                or packet.incremental_state_cleared
            )
        ):
            del self.names[seq]
        if packet.HasField("trace_packet_defaults"):
            defaults = packet.trace_packet_defaults
            if defaults.HasField("track_event_defaults"):
                event_defaults = defaults.track_event_defaults
                if event_defaults.HasField("track_uuid"):
                    self.default_track[seq] = event_defaults.track_uuid
        if kind == "thread_descriptor":
            descriptor = packet.thread_descriptor
            self.sequence_thread[seq] = (descriptor.pid, descriptor.tid)
            self.thread(offset, descriptor.pid, descriptor.tid, _clean(descriptor.thread_name))
        if packet.HasField("interned_data"):
            names = self.names.setdefault(seq, {})
            for entry in packet.interned_data.event_names:
                names[entry.iid] = _clean(entry.name)
        if kind == "track_descriptor":
            self.track_descriptor(offset, packet.track_descriptor)
        elif kind == "track_event":
            self.track_event(offset, packet, seq)

    def track_descriptor(self, offset: int, descriptor: Any) -> None:
        """Remember a track, from protobuf's ``TrackDescriptor``."""
        process = thread = None
        if descriptor.HasField("process"):
            process = (descriptor.process.pid, descriptor.process.process_name)
        if descriptor.HasField("thread"):
            given = descriptor.thread
            thread = (given.pid, given.tid, given.thread_name)
        self.describe_track(
            offset,
            (
                descriptor.uuid,
                descriptor.parent_uuid,
                descriptor.name or descriptor.static_name or descriptor.atrace_name,
                process,
                thread,
                descriptor.HasField("counter"),
            ),
        )

    def describe_track(self, offset: int, descriptor: Descriptor) -> None:
        """Remember a track (a counter track takes its process from its parent track)."""
        uuid, parent_uuid, given_name, process, thread, counter = descriptor
        name = _clean(given_name)
        parent = self.tracks.get(parent_uuid) if parent_uuid else None
        pid = parent.pid if parent is not None else None
        tid = parent.tid if parent is not None else None
        if process is not None:
            pid = process[0]
            self.process(offset, pid, _clean(process[1]))
        if thread is not None:
            pid, tid = thread[0], thread[1]
            self.thread(offset, pid, tid, _clean(thread[2]))
        self.tracks[uuid] = _Track(pid=pid, tid=tid, name=name, counter=counter)

    def track_of(self, offset: int, event: Any, seq: int) -> _Track | None:
        """An event's track: its uuid, the sequence's default, or its ``thread_descriptor``."""
        uuid = event.track_uuid if event.HasField("track_uuid") else self.default_track.get(seq)
        if uuid is None or (uuid == 0 and 0 not in self.tracks):
            thread = self.sequence_thread.get(seq)
            if thread is None:
                self.warn_once(
                    offset, "track_event with no track and no thread_descriptor: skipped"
                )
                return None
            return _Track(pid=thread[0], tid=thread[1], name="", counter=False)
        track = self.tracks.get(uuid)
        if track is None:
            self.warn_once(offset, f"track_event on track {uuid}, never described: skipped")
        return track

    def track_event(self, offset: int, packet: Any, seq: int) -> None:
        """Slices (with their flows) and counter values of a ``TrackEvent``."""
        event = packet.track_event
        ts = packet.timestamp
        track = self.track_of(offset, event, seq)
        kind = event.type
        append = self.out.append
        if track is None:
            pass
        elif kind == _TYPE_COUNTER:
            value = float(
                event.double_counter_value
                if event.HasField("double_counter_value")
                else event.counter_value
            )
            append((ts, offset, COUNTER, track.pid, track.tid, track.name, value))
        elif kind in (_TYPE_SLICE_BEGIN, _TYPE_SLICE_END, _TYPE_INSTANT):
            pid, tid = track.pid, track.tid
            if tid is None or pid is None:
                self.warn_once(
                    offset, "track_event slices on tracks without a thread (async): skipped"
                )
            elif kind == _TYPE_SLICE_END:
                append((ts, offset, END, pid, tid))
            else:
                append((ts, offset, BEGIN, pid, tid, self.event_name(event, seq)))
                if self.repeated:
                    for flow_id in (*event.flow_ids_old, *event.flow_ids):
                        append((ts, offset, FLOW, pid, tid, flow_id, False))
                    for flow_id in (*event.terminating_flow_ids_old, *event.terminating_flow_ids):
                        append((ts, offset, FLOW, pid, tid, flow_id, True))
                if kind == _TYPE_INSTANT:
                    append((ts, offset, END, pid, tid))
        if not self.repeated:
            return
        extra = (
            *zip(event.extra_counter_track_uuids, event.extra_counter_values, strict=False),
            *zip(
                event.extra_double_counter_track_uuids,
                event.extra_double_counter_values,
                strict=False,
            ),
        )
        for uuid, value in extra:
            counter_track = self.tracks.get(uuid)
            if counter_track is None:
                self.warn_once(offset, f"counter value on track {uuid}, never described: skipped")
                continue
            append(
                (
                    ts,
                    offset,
                    COUNTER,
                    counter_track.pid,
                    counter_track.tid,
                    counter_track.name,
                    float(value),
                )
            )

    def event_name(self, event: Any, seq: int) -> str:
        """A slice's name, inline or interned on its sequence."""
        if event.HasField("name"):
            return self.name_of(2, event.name, 0, seq)
        if event.HasField("name_iid"):
            return self.name_of(1, "", event.name_iid, seq)
        return ""

    def name_of(self, named: int, name: str | bytes, iid: int, seq: int) -> str:
        """A slice's name: ``name`` (``named`` 2), interned ``iid`` on sequence ``seq``
        (``named`` 1), or none (0)."""
        if named == 2:
            return _clean(name)
        if named == 1:
            return self.names.get(seq, {}).get(iid, f"<interned name {iid}>")
        return ""


def _is_id(text: str) -> bool:
    """Whether ``text`` is a pid: ASCII digits, at most 10."""
    return text.isascii() and text.isdigit() and len(text) <= 10


def _text(value: str | bytes) -> str:
    """A string field's text (a proto2 string that is not UTF-8 comes as bytes)."""
    return value if isinstance(value, str) else value.decode("utf-8", errors="replace")


def _clean(value: str | bytes) -> str:
    """A string field's text on one line (a newline in a name would split a row)."""
    text = _text(value)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else " " for c in text)
