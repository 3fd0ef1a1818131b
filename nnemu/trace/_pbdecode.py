"""Reading decoded Perfetto packets into the reader's records (``_perfetto``'s engine).

``Decoder`` keeps what spans packets (tracks, interned names, thread and process names)
and turns each ``TracePacket`` into records: plain tuples (``Record``: time, the
packet's byte offset, a kind, then the kind's fields), cheaper to make than the typed
records ``read_perfetto`` builds from them.  ``Decoder.run`` reads a run of packets;
``flagged`` tells which of them may hold the lists ``track_event`` reads.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Callable, Set
from typing import Any, Final

import attrs

_SEQ_INCREMENTAL_STATE_CLEARED: Final = 1
_TYPE_SLICE_BEGIN: Final = 1
_TYPE_SLICE_END: Final = 2
_TYPE_INSTANT: Final = 3
_TYPE_COUNTER: Final = 4

_FAST_TYPES: Final = frozenset((_TYPE_SLICE_BEGIN, _TYPE_SLICE_END, _TYPE_COUNTER))
"""The ``TrackEvent`` types ``Decoder.run`` reads itself."""
_STATE_TAGS: Final = re.compile(b"\x62|\xda\x03|\xc8\x02")
"""The tags of ``TracePacket.interned_data`` (field 12) and ``trace_packet_defaults``
(field 59), length-delimited, and of ``incremental_state_cleared`` (field 41, a varint):
a packet without these bytes holds none of them."""

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
_REPEATED_FIELDS: Final = (31, 36, 42, 45, 46, 47, 48)
"""The ``TrackEvent`` fields ``track_event`` reads as lists: ``extra_counter_track_uuids``,
``flow_ids_old``, ``terminating_flow_ids_old``, ``extra_double_counter_track_uuids``,
``extra_double_counter_values``, ``flow_ids``, ``terminating_flow_ids`` (each tag two bytes)."""
_REPEATED_TAGS: Final = re.compile(
    b"|".join(
        re.escape(bytes(((number << 3 | wire) & 0x7F | 0x80, (number << 3 | wire) >> 7)))
        for number in _REPEATED_FIELDS
        for wire in (0, 1, 2, 5)
    )
)
"""The bytes of their tags, any wire type: a packet without them holds none of the fields
(one with them may: the bytes may also be part of a value)."""


@attrs.define
class _Track:
    """A ``TrackDescriptor``: its thread or process (if any), name, and whether it counts."""

    pid: int | None
    tid: int | None
    name: str
    counter: bool


@attrs.define
class Decoder:
    """The state that spans packets: tracks, interned names, thread names and processes.

    Each method appends the records of what it reads to ``out``.
    """

    on_problem: Problem
    out: list[Record] = attrs.field(factory=list)
    """The records read and not yet taken."""
    tracks: dict[int, _Track] = attrs.field(factory=dict)
    names: dict[int, dict[int, str]] = attrs.field(factory=dict)
    """Interned event names by sequence, then iid."""
    default_track: dict[int, int] = attrs.field(factory=dict)
    """Default track uuid by sequence (``trace_packet_defaults``)."""
    sequence_thread: dict[int, tuple[int, int]] = attrs.field(factory=dict)
    """(pid, tid) of a sequence's ``thread_descriptor``."""
    thread_names: dict[int, tuple[str, bool]] = attrs.field(factory=dict)
    """tid -> (name, from the scheduler)."""
    tgid: dict[int, int] = attrs.field(factory=dict)
    process_names: dict[int, str] = attrs.field(factory=dict)
    warned: set[str] = attrs.field(factory=set)
    repeated: bool = True
    """Whether the packet being read may hold a flow or an extra counter value (else
    ``track_event`` does not look: reading an empty repeated field costs microseconds)."""

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

    def run(self, offsets: list[int], packets: Any, flagged: Set[int], stateful: Set[int]) -> None:
        """The records of a run of packets (``flagged``: the indexes of those that may hold
        a flow or an extra counter value; ``stateful``: of those that may hold interned
        data, packet defaults or ``incremental_state_cleared``: ``may_hold_state``).

        A packet of one slice begin or end or a counter value, and nothing else to read,
        is read here (most packets); any other by ``packet``.
        """
        append = self.out.append
        tracks = self.tracks
        names = self.names
        default_track = self.default_track
        self.repeated = False
        for index, (offset, packet) in enumerate(zip(offsets, packets, strict=True)):
            # (A packet that is no track event reads as one of type 0; testing the type
            # first costs less than asking upb which field the packet holds.)
            event = packet.track_event
            kind = event.type
            if (
                kind not in _FAST_TYPES
                or (flagged and index in flagged)
                or (
                    index in stateful
                    and (
                        packet.HasField("interned_data") or packet.HasField("trace_packet_defaults")
                    )
                )
            ):
                self.repeated = index in flagged
                self.packet(offset, packet)
                self.repeated = False
                continue
            # The sequence matters only to interned names and default tracks.
            seq = packet.trusted_packet_sequence_id if names or default_track else -1
            if (
                names
                and seq in names
                and (
                    packet.sequence_flags & _SEQ_INCREMENTAL_STATE_CLEARED
                    or (index in stateful and packet.incremental_state_cleared)
                )
            ):
                del names[seq]
            uuid = event.track_uuid
            if not uuid:
                uuid = 0 if event.HasField("track_uuid") else default_track.get(seq)
            track = tracks.get(uuid) if uuid else None
            if track is None:
                self.track_event(offset, packet, packet.trusted_packet_sequence_id)
            elif kind == _TYPE_COUNTER:
                value = float(
                    event.double_counter_value
                    if event.HasField("double_counter_value")
                    else event.counter_value
                )
                append((packet.timestamp, offset, COUNTER, track.pid, track.tid, track.name, value))
            elif track.tid is None or track.pid is None:
                self.track_event(offset, packet, packet.trusted_packet_sequence_id)
            elif kind == _TYPE_SLICE_END:
                append((packet.timestamp, offset, END, track.pid, track.tid))
            elif kind == _TYPE_SLICE_BEGIN:
                # Interned on this sequence (names were read: seq is its id), or set and
                # printable: as is; else the general reading.
                iid = event.name_iid
                interned = names.get(seq) if iid else None
                name = interned.get(iid) if interned is not None else None
                if name is None:
                    name = event.name
                    if not (name and type(name) is str and name.isprintable()):
                        name = self.event_name(event, packet.trusted_packet_sequence_id)
                append((packet.timestamp, offset, BEGIN, track.pid, track.tid, name))
            else:
                self.track_event(offset, packet, packet.trusted_packet_sequence_id)
        self.repeated = True

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
        """Remember a track (a counter track takes its process from its parent track)."""
        name = _clean(descriptor.name or descriptor.static_name or descriptor.atrace_name)
        parent = self.tracks.get(descriptor.parent_uuid) if descriptor.parent_uuid else None
        pid = parent.pid if parent is not None else None
        tid = parent.tid if parent is not None else None
        if descriptor.HasField("process"):
            pid = descriptor.process.pid
            self.process(offset, pid, _clean(descriptor.process.process_name))
        if descriptor.HasField("thread"):
            pid, tid = descriptor.thread.pid, descriptor.thread.tid
            self.thread(offset, pid, tid, _clean(descriptor.thread.thread_name))
        counter = descriptor.HasField("counter")
        self.tracks[descriptor.uuid] = _Track(pid=pid, tid=tid, name=name, counter=counter)

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
            return _clean(event.name)
        if event.HasField("name_iid"):
            return self.names.get(seq, {}).get(event.name_iid, f"<interned name {event.name_iid}>")
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


def may_hold_state(offsets: list[int], data: bytes) -> set[int]:
    """The indexes of a run's packets whose bytes hold a tag of ``_STATE_TAGS`` (one may
    hold interned data, packet defaults or ``incremental_state_cleared``; the bytes may
    also be part of a value)."""
    base = offsets[0]
    return {
        bisect.bisect_right(offsets, base + hit.start()) - 1 for hit in _STATE_TAGS.finditer(data)
    }


def flagged(offsets: list[int], data: bytes) -> set[int]:
    """The indexes of a run's packets whose bytes hold a tag of ``_REPEATED_TAGS``."""
    base = offsets[0]
    return {
        bisect.bisect_right(offsets, base + hit.start()) - 1
        for hit in _REPEATED_TAGS.finditer(data)
    }
