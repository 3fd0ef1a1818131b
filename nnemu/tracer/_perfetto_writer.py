"""The Perfetto protobuf writer (``.pftrace``, ``.perfetto-trace``): slices, flows and counters.

The file is a ``Trace`` message written packet by packet, each packet a complete
length-delimited ``Trace.packet`` record (field 1), so a run that is killed leaves a
file that trace processor and Perfetto UI read up to its last flushed block.  The
encoding (docs/perfetto.md) is TrackEvent on one packet sequence:

- a ``process_tree`` packet naming the processes (and, as each first appears, a
  thread), and a TrackDescriptor for every process and thread;
- every NNTRACE mark as a TrackEvent slice on its thread's track, with the mark's
  exact name, so trace processor shows the same slices, nesting and threads as for
  the systrace HTML of the same run;
- flows as ``flow_ids`` / ``terminating_flow_ids`` on the slice they belong to: the
  tracer delivers a flow right after the begin of its section, so the writer holds
  the last begin until the next event;
- counters as TrackEvent counter tracks under their process.

The packets are built with the ``perfetto`` package's generated classes (the
``perfetto`` extra); nothing here is hand-written protobuf but the record framing.
"""

from __future__ import annotations

import os
from typing import IO, Any

from nnemu.errors import OutputError
from nnemu.sim import SimThread
from nnemu.tracer._events import FlowBatchReceiver

SEQUENCE_ID = 1
"""The trusted packet sequence id of every packet nnemu writes (one writer, one sequence)."""

THREAD_UUID_BASE = 1 << 32
"""A thread's track uuid is this plus its tid (a process's is its pid)."""

COUNTER_UUID_BASE = 2 << 32
"""The n-th counter track (n = 1, 2, ... in order of first use) has uuid this plus n."""

FLUSH_BYTES = 1 << 16
"""Complete packets are written to the file in blocks of about this size."""


def load_pb2(path: str = "<stream>") -> Any:
    """The ``perfetto_trace_pb2`` module, or an ``OutputError`` for ``path`` saying how to install it."""
    try:
        from perfetto.protos.perfetto.trace import perfetto_trace_pb2
    except ImportError as exc:
        raise OutputError(
            path,
            "trace",
            "a Perfetto trace needs the perfetto package: pip install 'nnemu[perfetto]'",
        ) from exc
    return perfetto_trace_pb2


def _varint(value: int) -> bytes:
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


class PerfettoWriter(FlowBatchReceiver):
    """Streams a Perfetto protobuf trace (TrackEvent slices, flows and counters) to a binary file."""

    def __init__(self, out: IO[bytes]) -> None:
        self._name = str(getattr(out, "name", "<stream>"))
        self._pb = load_pb2(self._name)
        self._out = out
        self._error: OSError | None = None
        self._buffer = bytearray()
        self._processes: dict[int, str] = {}
        self._described: set[int] = set()
        self._thread_uuids: dict[int, int] = {}
        """Each thread object's track uuid, by ``id`` (hashing a ``SimThread`` costs more)."""
        self._keep: list[SimThread] = []
        """The thread objects whose ``id`` is a key there (kept alive so it is not reused)."""
        self._threads: set[SimThread] = set()
        self._counter_uuids: dict[tuple[int, str], int] = {}
        self._started = False
        self._pending: Any = None
        self._pending_thread: SimThread | None = None
        self._begin_type = self._pb.TrackEvent.TYPE_SLICE_BEGIN
        self._end_type = self._pb.TrackEvent.TYPE_SLICE_END
        self._counter_type = self._pb.TrackEvent.TYPE_COUNTER

    # ------------------------------------------------------------ output
    def _packet(self, ts_ns: int | None = None) -> Any:
        packet = self._pb.TracePacket()
        packet.trusted_packet_sequence_id = SEQUENCE_ID
        if ts_ns is not None:
            packet.timestamp = ts_ns
        return packet

    def _write(self, packet: Any) -> None:
        data = packet.SerializeToString()
        buffer = self._buffer
        buffer.append(0x0A)  # field 1 (Trace.packet), length-delimited
        buffer += _varint(len(data))
        buffer += data
        if len(buffer) >= FLUSH_BYTES:
            self._flush()

    def _flush(self) -> None:
        """Write the buffered complete packets (one write: the file never ends mid-packet)."""
        if self._buffer and self._error is None:
            try:
                view = memoryview(bytes(self._buffer))
                while view:  # a raw file may take part of a write
                    view = view[self._out.write(view) or 0 :]
                self._out.flush()
            except OSError as exc:
                self._error = exc
        self._buffer.clear()

    def _release(self) -> None:
        """Write the begin held for its flows."""
        if self._pending is not None:
            self._write(self._pending)
            self._pending = None
            self._pending_thread = None

    # ------------------------------------------------------------ tracks
    def _start(self, ts_ns: int) -> None:
        """The first packet: the process tree of every process announced so far."""
        self._started = True
        packet = self._packet(ts_ns)
        packet.first_packet_on_sequence = True
        packet.sequence_flags = self._pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
        tree = packet.process_tree
        for pid, name in sorted(self._processes.items()):
            process = tree.processes.add()
            process.pid = pid
            process.cmdline.append(name)
        self._write(packet)
        for pid in sorted(self._processes):
            self._describe_process(pid, ts_ns)

    def _describe_process(self, pid: int, ts_ns: int) -> None:
        if pid in self._described:
            return
        self._described.add(pid)
        packet = self._packet(ts_ns)
        descriptor = packet.track_descriptor
        descriptor.uuid = pid
        descriptor.process.pid = pid
        name = self._processes.get(pid)
        if name is not None:
            descriptor.process.process_name = name
        self._write(packet)

    def _thread_uuid(self, ts_ns: int, thread: SimThread) -> int:
        uuid = self._thread_uuids.get(id(thread))
        if uuid is not None:
            return uuid
        self._keep.append(thread)
        uuid = self._thread_uuids[id(thread)] = THREAD_UUID_BASE + thread.tid
        if thread not in self._threads:
            if not self._started:
                self._start(ts_ns)
            self._threads.add(thread)
            self._describe_process(thread.pid, ts_ns)
            packet = self._packet(ts_ns)
            entry = packet.process_tree.threads.add()
            entry.tid = thread.tid
            entry.tgid = thread.pid
            entry.name = thread.name
            self._write(packet)
            packet = self._packet(ts_ns)
            descriptor = packet.track_descriptor
            descriptor.uuid = THREAD_UUID_BASE + thread.tid
            descriptor.parent_uuid = thread.pid
            descriptor.thread.pid = thread.pid
            descriptor.thread.tid = thread.tid
            descriptor.thread.thread_name = thread.name
            self._write(packet)
        return uuid

    def _counter_uuid(self, ts_ns: int, pid: int, name: str) -> int:
        uuid = self._counter_uuids.get((pid, name))
        if uuid is None:
            if not self._started:
                self._start(ts_ns)
            self._describe_process(pid, ts_ns)
            uuid = COUNTER_UUID_BASE + len(self._counter_uuids) + 1
            self._counter_uuids[pid, name] = uuid
            packet = self._packet(ts_ns)
            descriptor = packet.track_descriptor
            descriptor.uuid = uuid
            descriptor.parent_uuid = pid
            descriptor.name = name
            descriptor.counter.SetInParent()
            self._write(packet)
        return uuid

    # ------------------------------------------------------------ sink
    def process(self, pid: int, name: str) -> None:
        """Name process ``pid`` (in the process tree, and on its track)."""
        self._processes[pid] = name
        if self._started:
            self._release()
            packet = self._packet()
            process = packet.process_tree.processes.add()
            process.pid = pid
            process.cmdline.append(name)
            self._write(packet)

    def begin(self, ts_ns: int, thread: SimThread, name: str) -> None:
        """A slice called ``name`` begins on ``thread`` (held until its flows are known)."""
        self._release()
        packet = self._packet(ts_ns)
        event = packet.track_event
        event.type = self._begin_type
        event.track_uuid = self._thread_uuid(ts_ns, thread)
        event.name = name
        self._pending = packet
        self._pending_thread = thread

    def end(self, ts_ns: int, thread: SimThread) -> None:
        """The innermost slice of ``thread`` ends."""
        self._release()
        packet = self._packet(ts_ns)
        event = packet.track_event
        event.type = self._end_type
        event.track_uuid = self._thread_uuid(ts_ns, thread)
        self._write(packet)

    def flow(self, ts_ns: int, thread: SimThread, flow_id: int, terminating: bool) -> None:
        """Put flow ``flow_id`` on the slice just begun on ``thread``."""
        held = self._pending_thread
        if self._pending is None or (held is not thread and held != thread):
            return  # the tracer delivers a flow right after its begin; nothing else to bind to
        event = self._pending.track_event
        (event.terminating_flow_ids if terminating else event.flow_ids).append(flow_id)

    def counter(self, ts_ns: int, pid: int, name: str, value: int) -> None:
        """Counter ``name`` of process ``pid`` has ``value`` from ``ts_ns`` on."""
        self._release()
        uuid = self._counter_uuid(ts_ns, pid, name)
        packet = self._packet(ts_ns)
        event = packet.track_event
        event.type = self._counter_type
        event.track_uuid = uuid
        event.counter_value = value
        self._write(packet)

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


def open_perfetto_writer(path: str | os.PathLike[str]) -> PerfettoWriter:
    """A ``PerfettoWriter`` on a new file at ``path`` (``OutputError`` without the package)."""
    load_pb2(os.fspath(path))
    return PerfettoWriter(open(os.fspath(path), "wb", buffering=0))
