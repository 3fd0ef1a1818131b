"""Reading Perfetto protobuf traces (``adb shell perfetto ... -o x.perfetto-trace``), streamed.

A Perfetto trace file is a ``Trace`` message: repeated field 1, ``TracePacket``,
each a length-delimited record (tag ``0x0a``, a varint length, the packet's
bytes).  ``read_perfetto`` reads the tag and length from the stream itself and
decodes one packet at a time with the ``perfetto`` package's generated classes
(``perfetto_trace_pb2.TracePacket.FromString``), so memory stays bounded
whatever the file's size.  Gzip-compressed files are read through ``gzip``.

What it reads, as typed records (``PerfettoEvent``; the timed ones in time order):

* ftrace ``print`` events in ``ftrace_events`` bundles (what atrace writes to
  ``trace_marker``): ``B|tgid|name`` -> ``SliceBegin``, ``E|tgid`` or ``E`` ->
  ``SliceEnd``, ``C|tgid|name|value`` -> ``Counter``, any other text ->
  ``Print``; the writing thread is the event's ``pid``;
* thread names from ``sched_switch`` events and from the ``compact_sched`` form
  (its interned ``intern_table`` of comms), unless ``process_tree`` named the thread;
* ``process_tree`` packets: ``ProcessName`` (``cmdline[0]``), ``ThreadName``;
* ``track_event`` packets: ``TrackDescriptor`` tracks of threads, processes and
  counters; ``TYPE_SLICE_BEGIN``/``TYPE_SLICE_END``/``TYPE_INSTANT`` on thread
  tracks (an instant is a begin and an end at one time), ``TYPE_COUNTER`` (and
  ``extra_counter_*``) on counter tracks, ``flow_ids``/``terminating_flow_ids``
  (``Flow``, right after the begin of the slice they belong to), names given
  inline or interned (``interned_data.event_names``, cleared with the
  sequence's incremental state), ``trace_packet_defaults`` track uuids and
  ``thread_descriptor`` packets (the default track of a sequence).

Timestamps are the packets' and events' ``timestamp`` in ns (clock ids are
ignored: phone traces use one boot clock).

``PerfettoLines`` turns the records into the ftrace text rows every reader of
nnemu already reads (``TASK-TID ( TGID) [CPU] .... SEC.FRAC: tracing_mark_write:
B|tgid|name``), with process and thread names as ``ProcessDump`` rows, so
``nnemu parse`` gives exactly the table the systrace form of the same trace gives.

Problems are given with the byte offset of the packet (in the decompressed
stream): a file whose first packet cannot be read is refused with
``TraceFormatError``; a truncated or undecodable packet later ends the reading
with a warning, and what was read before it is kept.
"""

from __future__ import annotations

import gzip
import math
import zlib
from collections.abc import Callable, Iterator
from typing import IO, Any, Final

import attrs

from nnemu.errors import TraceFormatError
from nnemu.trace._html import DumpProcess, DumpThread
from nnemu.trace._pbwire import GZIP_MAGIC, MAX_PACKET, MAX_VARINT_BYTES, PACKET_TAG, varint

INSTALL_HINT: Final = (
    "reading a Perfetto protobuf trace needs the perfetto package:"
    " pip install 'nnemu[perfetto]' (or: pip install perfetto protobuf)"
)
REORDER_WINDOW: Final = 1 << 15
"""How far out of file order ``read_perfetto`` puts records in time order (per-CPU
bundles interleave); up to twice as many wait to be sorted."""
_CHUNK: Final = 1 << 20
_SEQ_INCREMENTAL_STATE_CLEARED: Final = 1
_TYPE_SLICE_BEGIN: Final = 1
_TYPE_SLICE_END: Final = 2
_TYPE_INSTANT: Final = 3
_TYPE_COUNTER: Final = 4

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


# -- the typed records ---------------------------------------------------------


@attrs.frozen
class ProcessName:
    """A process and its name (``process_tree``, a process ``TrackDescriptor``)."""

    pid: int
    name: str
    offset: int
    """Byte offset of the packet it came from."""


@attrs.frozen
class ThreadName:
    """A thread, its process when known, and its name ("" when only the process is known)."""

    pid: int | None
    tid: int
    name: str
    offset: int
    """Byte offset of the packet it came from."""


@attrs.frozen
class SliceBegin:
    """A slice begins on thread ``tid`` of process ``pid``."""

    ts: int
    """ns."""
    pid: int
    tid: int
    name: str
    offset: int
    """Byte offset of the packet it came from."""


@attrs.frozen
class SliceEnd:
    """The innermost open slice of thread ``tid`` ends (``pid`` None for a bare ``E``)."""

    ts: int
    """ns."""
    pid: int | None
    tid: int
    offset: int
    """Byte offset of the packet it came from."""


@attrs.frozen
class Counter:
    """A counter's value from ``ts`` on (``C|tgid|name|value``, or a counter track)."""

    ts: int
    """ns."""
    pid: int | None
    """The process the counter belongs to, if any."""
    tid: int | None
    """The thread that wrote it (ftrace) or the thread of its track, if any."""
    name: str
    value: float
    offset: int
    """Byte offset of the packet it came from."""


@attrs.frozen
class Flow:
    """A flow id on the slice that began just before (same ``ts`` and ``tid``).

    Perfetto's meaning: a flow goes from the previous slice that carried
    ``flow_id`` to this one; a ``terminating`` id ends that chain here.
    """

    ts: int
    """ns."""
    pid: int
    tid: int
    flow_id: int
    terminating: bool
    offset: int
    """Byte offset of the packet it came from."""


@attrs.frozen
class Print:
    """Any other ftrace print (``trace_marker`` text): ``S|``/``F|`` async marks, clock syncs."""

    ts: int
    """ns."""
    pid: int | None
    """The writer's process, when the trace said it."""
    tid: int
    cpu: int
    text: str
    offset: int
    """Byte offset of the packet it came from."""


TimedEvent = SliceBegin | SliceEnd | Counter | Flow | Print
"""The records that have a time (``read_perfetto`` sorts them)."""
PerfettoEvent = ProcessName | ThreadName | TimedEvent
"""What ``read_perfetto`` yields."""


# -- the packet stream -----------------------------------------------------------


class _Stop(Exception):
    """The packet stream cannot go on: (offset, message)."""

    def __init__(self, offset: int, message: str) -> None:
        super().__init__(message)
        self.offset = offset
        self.message = message


def _packets(raw: IO[bytes] | gzip.GzipFile) -> Iterator[tuple[int, bytes | None]]:
    """(byte offset, bytes) of each ``Trace.packet`` in ``raw`` (None for another field of
    ``Trace``); raises ``_Stop`` on a record that cannot be read."""
    buf = bytearray()
    pos = 0  # in buf
    base = 0  # offset of buf[0] in the stream
    eof = False
    broken = ""  # why a compressed stream ended early
    # A gzip stream is read a block at a time, so a cut one loses only its last block.
    read = raw.read1 if isinstance(raw, gzip.GzipFile) else raw.read

    def fill(need: int) -> bool:
        """Make ``need`` bytes from ``pos`` available; False at the end of the stream."""
        nonlocal buf, pos, base, eof, broken
        while len(buf) - pos < need and not eof:
            if pos:
                del buf[:pos]
                base += pos
                pos = 0
            try:
                chunk = read(max(_CHUNK, need - len(buf)))
            except (EOFError, zlib.error, gzip.BadGzipFile) as err:
                broken = f"the compressed stream is corrupt or cut off ({err})"
                chunk = b""
            if not chunk:
                eof = True
            buf += chunk
        return len(buf) - pos >= need

    def cut(message: str) -> str:
        return f"{message}; {broken}" if broken else message

    while fill(1):
        offset = base + pos
        fill(1 + MAX_VARINT_BYTES)
        key = varint(buf, pos, len(buf))
        if key is None:
            raise _Stop(offset, cut("truncated record header"))
        tag, after_tag = key
        if tag >> 3 == 0 or tag & 7 in (3, 4, 6, 7):
            raise _Stop(offset, f"not a protobuf Trace record (byte 0x{buf[pos]:02x})")
        wire = tag & 7
        if wire == 0:
            value = varint(buf, after_tag, len(buf))
            if value is None:
                raise _Stop(offset, cut("truncated record"))
            size, start = 0, value[1]
        elif wire == 2:
            length = varint(buf, after_tag, len(buf))
            if length is None:
                raise _Stop(offset, cut("truncated record length"))
            size, start = length
        else:
            size, start = (8 if wire == 1 else 4), after_tag
        if size > MAX_PACKET:
            raise _Stop(offset, f"record of {size} bytes: not a Perfetto trace (or corrupt)")
        header = start - pos
        if not fill(header + size):  # (may move the bytes in buf: positions from pos)
            have = len(buf) - pos - header
            message = f"truncated packet: {size} bytes announced, {max(have, 0)} present"
            raise _Stop(offset, cut(message))
        start = pos + header
        pos = start + size
        if tag != PACKET_TAG:
            yield offset, None  # an unknown field of Trace: the caller warns
            continue
        yield offset, bytes(buf[start:pos])
    if broken:
        raise _Stop(base + pos, broken)


def _open_raw(path: str) -> IO[bytes] | gzip.GzipFile:
    """The file at ``path``, decompressed when it is gzip."""
    with open(path, "rb") as head:
        compressed = head.read(2) == GZIP_MAGIC
    if compressed:
        return gzip.open(path, "rb")
    return open(path, "rb")


def _pb2() -> Any:
    """The generated ``perfetto_trace_pb2`` module (imported on first use)."""
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2

    return perfetto_trace_pb2


# -- decoding packets --------------------------------------------------------------


@attrs.define
class _Track:
    """A ``TrackDescriptor``: its thread or process (if any), name, and whether it counts."""

    pid: int | None
    tid: int | None
    name: str
    counter: bool


@attrs.define
class _Decoder:
    """The state that spans packets: tracks, interned names, thread names and processes."""

    on_problem: Problem
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

    def warn_once(self, offset: int, message: str) -> None:
        """Report ``message`` the first time it comes (of at most 1000 distinct ones)."""
        if message not in self.warned and len(self.warned) < 1000:
            self.warned.add(message)
            self.on_problem(offset, message)

    def thread(self, offset: int, pid: int | None, tid: int, name: str) -> Iterator[ThreadName]:
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
            yield ThreadName(pid=pid, tid=tid, name=known[0] if known else "", offset=offset)

    def process(self, offset: int, pid: int, name: str) -> Iterator[ProcessName]:
        """A process named by the trace (once per name)."""
        self.tgid[pid] = pid
        if name and self.process_names.get(pid) != name:
            self.process_names[pid] = name
            yield ProcessName(pid=pid, name=name, offset=offset)

    def comm(self, offset: int, tid: int, name: str) -> Iterator[ThreadName]:
        """A thread's comm seen by the scheduler: kept unless the trace named the thread."""
        known = self.thread_names.get(tid)
        if tid > 0 and name and (known is None or (known[1] and known[0] != name)):
            self.thread_names[tid] = (name, True)
            yield ThreadName(pid=self.tgid.get(tid), tid=tid, name=name, offset=offset)

    # -- packets

    def packet(self, offset: int, packet: Any) -> Iterator[PerfettoEvent]:
        """The records of one ``TracePacket``."""
        fields = {field.name for field, _ in packet.ListFields()}
        if "process_tree" in fields:
            yield from self.process_tree(offset, packet.process_tree)
        if "ftrace_events" in fields:
            yield from self.ftrace(offset, packet.ftrace_events)
        if not fields.isdisjoint(_TRACK_FIELDS):
            yield from self.track_packet(offset, packet, fields)

    def process_tree(self, offset: int, tree: Any) -> Iterator[PerfettoEvent]:
        """Processes (``cmdline[0]``) and threads of a ``ProcessTree``."""
        for process in tree.processes:
            name = process.cmdline[0] if process.cmdline else ""
            yield from self.process(offset, process.pid, _clean(name))
        for thread in tree.threads:
            yield from self.thread(offset, thread.tgid or None, thread.tid, _clean(thread.name))

    def ftrace(self, offset: int, bundle: Any) -> Iterator[PerfettoEvent]:
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
                        yield from self.comm(offset, tid, _clean(table[index]))
        for event in bundle.event:
            kind = event.WhichOneof("event")
            if kind == "print":
                yield self.print_event(offset, cpu, event.timestamp, event.pid, event.print.buf)
            elif kind == "sched_switch":
                switch = event.sched_switch
                yield from self.comm(offset, switch.prev_pid, _clean(switch.prev_comm))
                yield from self.comm(offset, switch.next_pid, _clean(switch.next_comm))

    def print_event(
        self, offset: int, cpu: int, ts: int, tid: int, buf: str | bytes
    ) -> PerfettoEvent:
        """An atrace mark from its ``trace_marker`` text."""
        text = _clean(_text(buf).rstrip("\n\x00"))
        kind = text[:2]
        if kind == "B|":
            parts = text.split("|", 2)
            if len(parts) == 3 and _is_id(parts[1]):
                return SliceBegin(ts=ts, pid=int(parts[1]), tid=tid, name=parts[2], offset=offset)
        elif text == "E" or kind == "E|":
            parts = text.split("|")
            if len(parts) == 1 or (len(parts) == 2 and _is_id(parts[1])):
                pid = int(parts[1]) if len(parts) == 2 else None
                return SliceEnd(ts=ts, pid=pid, tid=tid, offset=offset)
        elif kind == "C|":
            parts = text.split("|")  # C|tgid|name|value, and |category since Android 12
            if len(parts) in (4, 5) and _is_id(parts[1]):
                try:
                    value = float(parts[3])
                except ValueError:
                    value = math.nan
                if math.isfinite(value):
                    return Counter(
                        ts=ts, pid=int(parts[1]), tid=tid, name=parts[2], value=value, offset=offset
                    )
        return Print(ts=ts, pid=self.tgid.get(tid), tid=tid, cpu=cpu, text=text, offset=offset)

    def track_packet(self, offset: int, packet: Any, fields: set[str]) -> Iterator[PerfettoEvent]:
        """A packet's sequence state, track descriptor and track event."""
        seq = packet.trusted_packet_sequence_id
        if (
            packet.sequence_flags & _SEQ_INCREMENTAL_STATE_CLEARED
            or packet.incremental_state_cleared
        ):
            self.names.pop(seq, None)
        if "trace_packet_defaults" in fields:
            defaults = packet.trace_packet_defaults
            if defaults.HasField("track_event_defaults"):
                event_defaults = defaults.track_event_defaults
                if event_defaults.HasField("track_uuid"):
                    self.default_track[seq] = event_defaults.track_uuid
        if "thread_descriptor" in fields:
            descriptor = packet.thread_descriptor
            self.sequence_thread[seq] = (descriptor.pid, descriptor.tid)
            yield from self.thread(
                offset, descriptor.pid, descriptor.tid, _clean(descriptor.thread_name)
            )
        if "interned_data" in fields:
            names = self.names.setdefault(seq, {})
            for entry in packet.interned_data.event_names:
                names[entry.iid] = _clean(entry.name)
        if "track_descriptor" in fields:
            yield from self.track_descriptor(offset, packet.track_descriptor)
        if "track_event" in fields:
            yield from self.track_event(offset, packet, seq)

    def track_descriptor(self, offset: int, descriptor: Any) -> Iterator[PerfettoEvent]:
        """Remember a track (a counter track takes its process from its parent track)."""
        name = _clean(descriptor.name or descriptor.static_name or descriptor.atrace_name)
        parent = self.tracks.get(descriptor.parent_uuid) if descriptor.parent_uuid else None
        pid = parent.pid if parent is not None else None
        tid = parent.tid if parent is not None else None
        if descriptor.HasField("process"):
            pid = descriptor.process.pid
            yield from self.process(offset, pid, _clean(descriptor.process.process_name))
        if descriptor.HasField("thread"):
            pid, tid = descriptor.thread.pid, descriptor.thread.tid
            yield from self.thread(offset, pid, tid, _clean(descriptor.thread.thread_name))
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

    def track_event(self, offset: int, packet: Any, seq: int) -> Iterator[PerfettoEvent]:
        """Slices (with their flows) and counter values of a ``TrackEvent``."""
        event = packet.track_event
        ts = packet.timestamp
        track = self.track_of(offset, event, seq)
        kind = event.type
        if track is not None and kind == _TYPE_COUNTER:
            value = float(
                event.double_counter_value
                if event.HasField("double_counter_value")
                else event.counter_value
            )
            yield Counter(
                ts=ts, pid=track.pid, tid=track.tid, name=track.name, value=value, offset=offset
            )
        elif track is not None and kind in (_TYPE_SLICE_BEGIN, _TYPE_SLICE_END, _TYPE_INSTANT):
            if track.tid is None or track.pid is None:
                self.warn_once(
                    offset, "track_event slices on tracks without a thread (async): skipped"
                )
            else:
                pid, tid = track.pid, track.tid
                if kind == _TYPE_SLICE_END:
                    yield SliceEnd(ts=ts, pid=pid, tid=tid, offset=offset)
                else:
                    yield SliceBegin(
                        ts=ts, pid=pid, tid=tid, name=self.event_name(event, seq), offset=offset
                    )
                    for flow_id in (*event.flow_ids_old, *event.flow_ids):
                        yield Flow(ts=ts, pid=pid, tid=tid, flow_id=flow_id, terminating=False,
                                   offset=offset)  # fmt: skip
                    for flow_id in (*event.terminating_flow_ids_old, *event.terminating_flow_ids):
                        yield Flow(ts=ts, pid=pid, tid=tid, flow_id=flow_id, terminating=True,
                                   offset=offset)  # fmt: skip
                    if kind == _TYPE_INSTANT:
                        yield SliceEnd(ts=ts, pid=pid, tid=tid, offset=offset)
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
            yield Counter(
                ts=ts,
                pid=counter_track.pid,
                tid=counter_track.tid,
                name=counter_track.name,
                value=float(value),
                offset=offset,
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


def _format_value(value: float) -> str:
    """A counter value as ftrace text: an integer without ``.0``."""
    return str(int(value)) if value.is_integer() and abs(value) < 2**63 else repr(value)


def read_perfetto(
    path: str, *, on_problem: Problem | None = None, window: int | None = None
) -> Iterator[PerfettoEvent]:
    """The typed records of the Perfetto protobuf trace at ``path``, streamed packet by packet.

    Timed records come in time order (ties in file order): a trace holds its
    events per CPU and per writer, so they are sorted in a bounded window (a
    record may come up to ``window`` records, ``REORDER_WINDOW``, after later
    ones in the file; at most twice that wait); names come as soon as they are read.

    Args:
        path: A Perfetto trace file, plain or gzip-compressed.
        on_problem: Called with (byte offset, message) for each problem after the
            first packet: a truncated or undecodable packet (which ends the
            reading), an unknown field, a track event on an unknown track,
            events further out of order than the window.
        window: How many timed records may wait to be sorted.

    Raises:
        TraceFormatError: The first packet cannot be read (not a Perfetto trace,
            truncated, undecodable: ``offset`` is set), or the ``perfetto``
            package is missing.
        OSError: The file cannot be read.
    """
    problem = on_problem if on_problem is not None else _ignore
    limit = REORDER_WINDOW if window is None else max(window, 1)
    # Sorted in batches: a batch of 2 x limit records is sorted (timsort merges the
    # per-CPU runs it holds in about linear time) and its first half goes out.
    pending: list[tuple[int, int, TimedEvent]] = []
    sequence = 0
    last_ts = -(2**63)
    warned = False
    for event in _decoded(path, problem):
        if isinstance(event, (ProcessName, ThreadName)):  # a tuple: faster than a union
            yield event
            continue
        ts = event.ts
        if ts < last_ts and not warned:
            warned = True
            problem(
                event.offset,
                f"events more than {limit} places out of time order: some are read out of order",
            )
        sequence += 1
        pending.append((ts, sequence, event))
        if len(pending) >= 2 * limit:
            pending.sort()
            last_ts = pending[limit - 1][0]
            for item in pending[:limit]:
                yield item[2]
            del pending[:limit]
    pending.sort()
    for item in pending:
        yield item[2]


def _decoded(path: str, problem: Problem) -> Iterator[PerfettoEvent]:
    """``read_perfetto``'s records in file order."""
    try:
        pb2 = _pb2()
    except ImportError:
        raise TraceFormatError(path, 0, "", INSTALL_HINT) from None
    from google.protobuf.message import DecodeError

    decode = pb2.TracePacket.FromString
    decoder = _Decoder(on_problem=problem)
    packets = 0
    with _open_raw(path) as raw:
        stream = _packets(raw)
        while True:
            try:
                item = next(stream, None)
            except _Stop as stop:
                _give_up(path, stop.offset, stop.message, packets, problem)
                return
            if item is None:
                return
            offset, data = item
            if data is None and packets == 0:
                raise TraceFormatError(
                    path, 0, "", "not a Perfetto trace: expected a packet", offset=offset
                )
            if data is None:
                problem(offset, "unknown field in the Trace message: skipped")
                continue
            try:
                packet = decode(data)
            except DecodeError as err:
                _give_up(path, offset, f"undecodable packet ({err})", packets, problem)
                return
            packets += 1
            yield from decoder.packet(offset, packet)


def _give_up(path: str, offset: int, message: str, packets: int, problem: Problem) -> None:
    """End the reading at a bad record: an error if nothing was read, else a warning."""
    if packets == 0:
        where = offset if offset >= 0 else None
        raise TraceFormatError(path, 0, "", f"not a Perfetto trace: {message}", offset=where)
    problem(offset, f"{message}; the trace is read up to here")


def _ignore(offset: int, message: str) -> None:
    del offset, message


# -- as ftrace rows ----------------------------------------------------------------


@attrs.define
class PerfettoLines:
    """A Perfetto trace as the ftrace text rows nnemu's readers read, streamed.

    Iterating gives text lines (``# tracer: nop``, then one
    ``tracing_mark_write`` row per print or slice begin/end/counter);
    ``rows()`` gives them numbered by the byte offset of their packet.
    Process and thread names go to ``on_dump`` (as a systrace ``PROCESS DUMP``
    would give them) as they are read, process names also to ``process_names``.
    """

    path: str
    on_dump: Callable[[DumpProcess | DumpThread], None] | None = None
    """Called with each process and thread the trace names, as it is read."""
    on_problem: Problem | None = None
    """Called with (byte offset, message) for each problem."""
    process_names: dict[str, str] = attrs.field(factory=dict, init=False)
    """Process names by pid, as read so far."""
    last_offset: int = attrs.field(default=0, init=False)
    """Byte offset of the last packet a row came from."""
    on_track_event: Callable[[Flow | Counter], None] | None = None
    """Called with each flow and each counter of no thread (what makes no row), as read."""

    def __iter__(self) -> Iterator[str]:
        yield "# tracer: nop\n"
        for _, line in self.rows():
            yield line

    def rows(self) -> Iterator[tuple[int, str]]:
        """(byte offset of the packet, row) of each ``tracing_mark_write`` row."""
        names: dict[int, str] = {}
        tgid: dict[int, int] = {}
        heads: dict[tuple[int, int], str] = {}  # (tid, cpu) -> "TASK-TID ( TGID) [CPU] ...."
        on_dump = self.on_dump
        for event in read_perfetto(self.path, on_problem=self.on_problem):
            cpu = 0
            if isinstance(event, SliceBegin):
                text = f"B|{event.pid}|{event.name}"
                tid = event.tid
            elif isinstance(event, SliceEnd):
                text = "E" if event.pid is None else f"E|{event.pid}"
                tid = event.tid
            elif isinstance(event, Print):
                text, tid, cpu = event.text, event.tid, event.cpu
            elif isinstance(event, Counter):
                if event.tid is None or event.pid is None:
                    # A counter track of no thread: no ftrace row for it.
                    if self.on_track_event is not None:
                        self.on_track_event(event)
                    continue
                text = f"C|{event.pid}|{event.name}|{_format_value(event.value)}"
                tid = event.tid
            elif isinstance(event, ProcessName):
                tgid[event.pid] = event.pid
                heads.clear()
                self.process_names[str(event.pid)] = event.name
                if on_dump is not None:
                    on_dump(DumpProcess(pid=event.pid, name=event.name))
                continue
            elif isinstance(event, ThreadName):
                if event.pid is not None:
                    tgid[event.tid] = event.pid
                if event.name:
                    names[event.tid] = event.name
                heads.clear()
                if on_dump is not None and event.pid is not None and event.name:
                    on_dump(DumpThread(pid=event.pid, tid=event.tid, name=event.name))
                continue
            else:
                if self.on_track_event is not None:
                    self.on_track_event(event)
                continue  # a flow: no ftrace row
            head = heads.get((tid, cpu))
            if head is None:
                process = tgid.get(tid)
                column = f"{process:>5}" if process is not None else "-----"
                head = f"{names.get(tid, '<...>'):>16}-{tid:<5} ({column}) [{cpu:03d}] ...."
                heads[tid, cpu] = head
            self.last_offset = offset = event.offset
            seconds, ns = divmod(event.ts, 1_000_000_000)
            if ns % 1000:
                yield offset, f"{head} {seconds}.{ns:09d}: tracing_mark_write: {text}\n"
            else:
                yield offset, f"{head} {seconds}.{ns // 1000:06d}: tracing_mark_write: {text}\n"
