"""The Perfetto protobuf trace writer (``open_trace_writer`` picks it for ``.pftrace``).

It streams TrackEvent slices, flows and counters to a binary file in the protobuf wire format,
written directly (docs/perfetto.md gives the messages).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import IO, Final, cast

from librt.strings import BytesWriter

from nnemu.errors import OutputError
from nnemu.sim import SimThread
from nnemu.tracer._args import PREFIX as _ARGS_PREFIX
from nnemu.tracer._args import debug_annotations
from nnemu.tracer._events import CounterInfo, TraceEvent

_NO_THREAD: Final = SimThread(0, 0, "")
"""The thread slot of a counter event handed over one call at a time."""

PERFETTO_SEQUENCE_ID: Final = 1
"""The trusted packet sequence id of every packet nnemu writes (one writer, one sequence)."""

THREAD_UUID_BASE: Final = 1 << 32
"""A thread's track uuid is this plus its tid (a process's is its pid)."""

COUNTER_UUID_BASE: Final = 2 << 32
"""The n-th counter track (n = 1, 2, ... in order of first use) has uuid this plus n."""

FLUSH_BYTES: Final = 1 << 16
"""Complete packets are written to the file in blocks of about this size."""

_BYTES1: Final = tuple(bytes((n,)) for n in range(128))
"""The one-byte varints."""

_SEQUENCE: Final = b"\x50\x01"
"""``trusted_packet_sequence_id: 1`` (field 10), on every packet."""

_TS: Final = b"\x40"
"""The tag of ``TracePacket.timestamp`` (field 8, varint)."""

_TRACK_EVENT: Final = b"\x5a"
"""The tag of ``TracePacket.track_event`` (field 11)."""

_SLICE_BEGIN: Final = b"\x48\x01"
"""``TrackEvent.type: TYPE_SLICE_BEGIN`` (field 9)."""

_FLOW: Final = b"\xf9\x02"
"""The tag of one ``TrackEvent.flow_ids`` (field 47, fixed64)."""

_TERMINATING_FLOW: Final = b"\x81\x03"
"""The tag of one ``TrackEvent.terminating_flow_ids`` (field 48, fixed64)."""


def _varint(value: int) -> bytes:
    """``value`` as a protobuf varint (a negative one as its 64-bit two's complement)."""
    if 0 <= value < 0x80:
        return _BYTES1[value]
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _varint_size(value: int) -> int:
    """How many bytes ``_varint(value)`` has."""
    if value < 0:
        return 10
    size = 1
    while value > 0x7F:
        value >>= 7
        size += 1
    return size


def _put_varint(buffer: BytesWriter, value: int) -> None:
    """Write ``_varint(value)`` into ``buffer``, byte by byte (no object made)."""
    if value < 0:
        value += 1 << 64
    while value > 0x7F:
        buffer.append((value & 0x7F) | 0x80)
        value >>= 7
    buffer.append(value)


def _field(tag: bytes, payload: bytes) -> bytes:
    """A length-delimited field: ``tag``, the payload's length, the payload."""
    return tag + _varint(len(payload)) + payload


def _text_field(tag: bytes, text: str) -> bytes:
    return _field(tag, text.encode())


class _PfThread:
    """What is constant on one thread's TrackEvent packets, after the timestamp: built once."""

    __slots__ = ("begins", "end", "events", "thread", "uuid")

    def __init__(self, thread: SimThread) -> None:
        self.uuid: Final = b"\x58" + _varint(THREAD_UUID_BASE + thread.tid)
        """``track_uuid`` (field 11) of the thread's track."""
        self.end: Final = _SEQUENCE + _field(_TRACK_EVENT, b"\x48\x02" + self.uuid)
        """An end packet after its timestamp, whole."""
        self.begins: Final[dict[str, bytes]] = {}
        """A begin packet (no flows) after its timestamp, by the slice's name (interned)."""
        self.events: Final[dict[str, bytes]] = {}
        """A begin's ``TrackEvent`` fields before its flows, by the slice's name."""
        self.thread: Final = thread
        """The thread itself, which keeps its ``id`` from being reused."""


class PerfettoWriter:
    """Streams a Perfetto protobuf trace (TrackEvent slices, flows and counters) to a binary file.

    A ``FlowSink`` that takes batches.  The packets are written in the protobuf wire format
    directly (docs/perfetto.md gives the messages; the tests decode them with the ``perfetto``
    package's classes): what is constant on a thread's packets is built once, a slice name
    is interned (``interned_data.event_names``, in the packet that first uses it, on a
    sequence whose first packet clears the incremental state), so a begin is its packet's
    length, timestamp and one cached tail copied into one buffer.  A begin is held until
    the next event: the tracer delivers a section's flows right after its begin, and they
    go into the begin's ``TrackEvent``.
    """

    def __init__(self, out: IO[bytes]) -> None:
        self._name = str(getattr(out, "name", "<stream>"))
        self._out = out
        self._error: OSError | None = None
        self._buffer = BytesWriter()
        self.flush_bytes = FLUSH_BYTES
        """Complete packets go to the file once the buffer holds this many bytes."""
        self._processes: dict[int, str] = {}
        self._described: set[int] = set()
        self._threads: dict[int, _PfThread] = {}
        """By ``id`` of the thread object."""
        self._described_threads: set[SimThread] = set()
        self._counters: dict[str, dict[int, bytes]] = {}
        """A counter event's ``TrackEvent`` up to its value, by name and pid (no key tuple
        made per event)."""
        self._counter_tracks = 0
        """How many counter tracks are described."""
        self._iids: dict[str, bytes] = {}
        """Each interned slice name's ``name_iid`` field."""
        self._arg_iids: dict[str, int] = {}
        """Each interned debug annotation name's iid (``_args.debug_annotations``)."""
        self._started = False
        self._last_ts = -1
        self._ts_field = b""
        """The timestamp field of ``_last_ts``."""
        self._held: _PfThread | None = None
        """The thread of the begin held for its flows (None: none held)."""
        self._held_name = ""
        self._held_ts = 0
        self._event_ts = -1
        self._event_ts_field = b""
        """The last timestamp an event packet had, and its field (the tag and the varint)."""
        self._ts_buffer = BytesWriter()
        """Where each timestamp's field is made."""
        self._held_flows: list[int] = []
        """The held begin's flows (``FlowInfo``s: an id, negated where the flow ends)."""

    # ------------------------------------------------------------ output
    def _timestamp(self, ts_ns: int) -> bytes:
        if ts_ns != self._last_ts:
            self._last_ts = ts_ns
            self._ts_field = _TS + _varint(ts_ns)
        return self._ts_field

    def _event_head(self, ts_ns: int, rest: int) -> None:
        """Write a packet's record header and timestamp; ``rest`` bytes of fields follow."""
        # The timestamp's field is made once per timestamp (about two events in three share
        # the one before): each event copies its bytes.
        field = self._event_ts_field
        if ts_ns != self._event_ts:
            self._event_ts = ts_ns
            made = self._ts_buffer
            made.truncate(0)
            made.append(0x40)  # TracePacket.timestamp (field 8)
            _put_varint(made, ts_ns)
            field = self._event_ts_field = made.getvalue()
        size = len(field) + rest
        buffer = self._buffer
        buffer.append(0x0A)  # field 1 (Trace.packet), length-delimited
        if size < 0x80:
            buffer.append(size)
        else:
            buffer.write(_varint(size))
        buffer.write(field)

    def _packet(self, ts_field: bytes, tail: bytes) -> None:
        """Write one ``Trace.packet`` record (field 1): ``ts_field`` and ``tail`` are its fields."""
        self._buffer.write(_field(b"\x0a", ts_field + tail))

    def _flush(self) -> None:
        """Write the buffered complete packets (one write: the file never ends mid-packet)."""
        data = self._buffer.getvalue()
        self._buffer.truncate(0)
        if data and self._error is None:
            try:
                done = 0
                while done < len(data):  # a raw file may take part of a write
                    count: int | None = self._out.write(data[done:] if done else data)
                    done += count or 0
                self._out.flush()
            except OSError as exc:
                self._error = exc

    def _release(self) -> None:
        """Write the begin held for its flows."""
        thread = self._held
        if thread is None:
            return
        self._held = None
        name = self._held_name
        flows = self._held_flows
        if not flows:
            tail = thread.begins.get(name)
            if tail is not None:
                self._event_head(self._held_ts, len(tail))
                self._buffer.write(tail)
                return
        interned = b""
        event = thread.events.get(name)
        if event is None:
            event, interned = self._begin_event(thread, name)
        buffer = self._buffer
        if not flows:
            tail = thread.begins[name]
            self._event_head(self._held_ts, len(tail) + len(interned))
            buffer.write(tail)
            buffer.write(interned)
            return
        # The TrackEvent's fields are the cached ones, then each flow: its tag and its id
        # (fixed64, little-endian), written byte by byte (no object made).
        size = len(event) + 10 * len(flows)
        size_field = _varint(size)
        self._event_head(self._held_ts, 3 + len(size_field) + size + len(interned))
        buffer.write(_SEQUENCE)
        buffer.write(_TRACK_EVENT)
        buffer.write(size_field)
        buffer.write(event)
        for flow in flows:
            if flow < 0:
                buffer.write(_TERMINATING_FLOW)
                flow = -flow
            else:
                buffer.write(_FLOW)
            count = 8
            while count > 0:  # (not ``for _ in range``: compiled, ``_`` is boxed each time)
                buffer.append(flow & 0xFF)
                flow >>= 8
                count -= 1
        flows.clear()
        buffer.write(interned)

    def _begin_event(self, thread: _PfThread, name: str) -> tuple[bytes, bytes]:
        """The first begin of a slice called ``name`` on ``thread``: its ``TrackEvent`` fields
        before the flows and its whole packet tail without flows (both cached on the thread),
        and the ``interned_data`` to send with it (empty if the names are interned already)."""
        iid = self._iids.get(name)
        entry = b""
        if iid is None:
            number = _varint(len(self._iids) + 1)
            iid = self._iids[name] = b"\x50" + number
            # interned_data (field 12) { event_names (2) { iid (1), name (2) } }
            entry = _field(b"\x12", b"\x08" + number + _text_field(b"\x12", name))
        event = _SLICE_BEGIN + iid + thread.uuid
        if name.startswith(_ARGS_PREFIX):  # nnemu's QoS facts as debug annotations (4)
            annotations, names = debug_annotations(name, self._arg_iids)
            event = annotations + event
            entry += names
        thread.events[name] = event
        thread.begins[name] = _SEQUENCE + _field(_TRACK_EVENT, event)
        return event, _field(b"\x62", entry) if entry else b""

    # ------------------------------------------------------------ tracks
    def _start(self, ts_ns: int) -> None:
        """The first packet: the process tree of every process announced so far."""
        self._started = True
        tree = b"".join(
            self._process_entry(pid, name) for pid, name in sorted(self._processes.items())
        )
        # process_tree (2), sequence_flags (13) = SEQ_INCREMENTAL_STATE_CLEARED,
        # first_packet_on_sequence (87) = true
        tail = _SEQUENCE + b"\x68\x01" + b"\xb8\x05\x01"
        self._packet(self._timestamp(ts_ns), _field(b"\x12", tree) + tail)
        for pid in sorted(self._processes):
            self._describe_process(pid, ts_ns)

    @staticmethod
    def _process_entry(pid: int, name: str) -> bytes:
        """``ProcessTree.processes`` (field 1): pid, ``cmdline[0]`` = the name."""
        return _field(b"\x0a", b"\x08" + _varint(pid) + _text_field(b"\x1a", name))

    def _descriptor(self, ts_ns: int, descriptor: bytes) -> None:
        """A packet with ``track_descriptor`` (field 60)."""
        self._packet(self._timestamp(ts_ns), _SEQUENCE + _field(b"\xe2\x03", descriptor))

    def _describe_process(self, pid: int, ts_ns: int) -> None:
        if pid in self._described:
            return
        self._described.add(pid)
        process = b"\x08" + _varint(pid)  # ProcessDescriptor { pid (1), process_name (6) }
        name = self._processes.get(pid)
        if name is not None:
            process += _text_field(b"\x32", name)
        self._descriptor(ts_ns, b"\x08" + _varint(pid) + _field(b"\x1a", process))

    def _thread(self, ts_ns: int, thread: SimThread) -> _PfThread:
        track = self._threads[id(thread)] = _PfThread(thread)
        if thread not in self._described_threads:
            if not self._started:
                self._start(ts_ns)
            self._described_threads.add(thread)
            self._describe_process(thread.pid, ts_ns)
            pid, tid = _varint(thread.pid), _varint(thread.tid)
            # ProcessTree.threads (2) { tid (1), name (2), tgid (3) }
            entry = b"\x08" + tid + _text_field(b"\x12", thread.name) + b"\x18" + pid
            self._packet(
                self._timestamp(ts_ns), _field(b"\x12", _field(b"\x12", entry)) + _SEQUENCE
            )
            # TrackDescriptor { uuid (1), thread (4) { pid, tid, thread_name (5) }, parent_uuid (5) }
            described = b"\x08" + pid + b"\x10" + tid + _text_field(b"\x2a", thread.name)
            uuid = _varint(THREAD_UUID_BASE + thread.tid)
            self._descriptor(ts_ns, b"\x08" + uuid + _field(b"\x22", described) + b"\x28" + pid)
        return track

    def _counter_event(self, ts_ns: int, pid: int, name: str) -> bytes:
        """A counter's ``TrackEvent`` up to its value (describing its track on first use)."""
        if not self._started:
            self._start(ts_ns)
        self._describe_process(pid, ts_ns)
        self._counter_tracks += 1
        uuid = _varint(COUNTER_UUID_BASE + self._counter_tracks)
        # TrackDescriptor { uuid (1), name (2), parent_uuid (5), counter (8) {} }
        descriptor = b"\x08" + uuid + _text_field(b"\x12", name) + b"\x28" + _varint(pid)
        self._descriptor(ts_ns, descriptor + b"\x42\x00")
        # type (9) = TYPE_COUNTER, track_uuid (11), counter_value (30) follows
        event = b"\x48\x04\x58" + uuid + b"\xf0\x01"
        self._counters.setdefault(name, {})[pid] = event
        return event

    # ------------------------------------------------------------ sink
    def process(self, pid: int, name: str) -> None:
        """Name process ``pid`` (in the process tree, and on its track)."""
        self._processes[pid] = name
        if self._started:
            self._release()
            self._packet(b"", _field(b"\x12", self._process_entry(pid, name)) + _SEQUENCE)

    def receive(self, events: Sequence[TraceEvent]) -> None:
        """Write the packets of ``events``: slices, the flows on them, counter values."""
        threads = self._threads
        last_thread: SimThread | None = None
        track: _PfThread | None = None
        # (As in ``FtraceWriter.receive``: read the events without the info's nested checks.)
        rows = cast(
            "list[tuple[int, SimThread, str | None, object]]",
            events if isinstance(events, list) else list(events),
        )
        for ts, thread, name, info in rows:
            if name is None and info is not None:
                if isinstance(info, int):  # a flow (``FlowInfo``: its id, negated at its end)
                    held = self._held
                    if held is not None and (held.thread is thread or held.thread == thread):
                        self._held_flows.append(info)
                    # else: the tracer delivers a flow right after its begin; nothing to bind to
                else:  # a counter (``CounterInfo``)
                    self._release()
                    pid, counter, value = cast("CounterInfo", info)
                    by_pid = self._counters.get(counter)
                    event = by_pid.get(pid) if by_pid is not None else None
                    if event is None:
                        event = self._counter_event(ts, pid, counter)
                    value_size = _varint_size(value)
                    size = len(event) + value_size  # (< 128: a 1-byte length)
                    self._event_head(ts, 4 + size)
                    buffer = self._buffer
                    buffer.write(_SEQUENCE)
                    buffer.append(0x5A)  # track_event (field 11)
                    buffer.append(size)
                    buffer.write(event)
                    _put_varint(buffer, value)
                continue
            if self._held is not None:
                self._release()
            if thread is not last_thread or track is None:
                track = threads.get(id(thread)) or self._thread(ts, thread)
                last_thread = thread
            if name is None:
                self._event_head(ts, len(track.end))
                self._buffer.write(track.end)
            else:
                self._held = track
                self._held_name = name
                self._held_ts = ts
        if len(self._buffer) >= self.flush_bytes:
            self._flush()

    def begin(self, ts_ns: int, thread: SimThread, name: str) -> None:
        """A slice called ``name`` begins on ``thread`` (held until its flows are known)."""
        self.receive(((ts_ns, thread, name, None),))

    def end(self, ts_ns: int, thread: SimThread) -> None:
        """The innermost slice of ``thread`` ends."""
        self.receive(((ts_ns, thread, None, None),))

    def flow(self, ts_ns: int, thread: SimThread, flow_id: int, terminating: bool) -> None:
        """Put flow ``flow_id`` on the slice just begun on ``thread``."""
        self.receive(((ts_ns, thread, None, -flow_id if terminating else flow_id),))

    def counter(self, ts_ns: int, pid: int, name: str, value: int) -> None:
        """Counter ``name`` of process ``pid`` has ``value`` from ``ts_ns`` on."""
        self.receive(((ts_ns, _NO_THREAD, None, (pid, name, value)),))

    def close(self) -> None:
        """Write what is left and close the file; a write error is raised here as ``OutputError``."""
        self._release()
        if not self._started:
            self._start(0)
        self._flush()
        try:
            self._out.close()
        except OSError as exc:
            self._error = self._error or exc
        if self._error is not None:
            raise OutputError(self._name, "trace", self._error.strerror or str(self._error))
