"""Reading Perfetto protobuf traces (``adb shell perfetto ... -o x.perfetto-trace``), streamed.

A Perfetto trace file is a ``Trace`` message: repeated field 1, ``TracePacket``,
each a length-delimited record (tag ``0x0a``, a varint length, the packet's
bytes).  ``read_perfetto`` reads the file a block (``CHUNK``, 1 MiB) at a time
(``_pbstream.packet_runs``), so memory stays bounded whatever the file's size.  A
packet of one slice begin, end or counter value on a described track (most packets) is
read straight from its bytes (``_pbdecode.Decoder.fast``, with its flow ids unless the
reader wants only slices), and so is a packet that describes (``_pbpackets``: a process
tree, a track descriptor, a track event that interns its names); any other is decoded by
the ``perfetto`` package's generated ``TracePacket`` (upb, in C), imported on the first such
packet, and read from its fields.  The loops over every record
(``_pbdecode``, ``_pbstream``, ``_pfevents``, ``_pftrack``) import no protobuf package and
run compiled in a wheel (``nnemu._native``); this module hands them the packet parser.
Gzip-compressed files are read through ``gzip``.

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

``perfetto_event_batches`` turns the records into canonical events
(``nnemu.trace._events``: what ``TraceEvents`` gives parse and replay), the events the
systrace form of the same trace gives, with no text made; ``PerfettoLines`` turns them
into that systrace form's ftrace text rows (``TASK-TID ( TGID) [CPU] .... SEC.FRAC:
tracing_mark_write: B|tgid|name``), with process and thread names as ``ProcessDump``
rows, for ``nnemu query``'s loader.

Problems are given with the byte offset of the packet (in the decompressed
stream): a file whose first packet cannot be read is refused with
``TraceFormatError``; a truncated or undecodable packet later ends the reading
with a warning, and what was read before it is kept.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Final

import attrs

from nnemu.errors import TraceFormatError

# The compiled reader's modules first, in the order nnemu._native lists them (one first
# imported by another of them would get a wrong __file__ in a wheel).
from nnemu.trace import _pbdecode as _pbdecode
from nnemu.trace import _pbstream as _pbstream
from nnemu.trace import _pftrack as _pftrack
from nnemu.trace._events import Event
from nnemu.trace._html import DumpProcess, DumpThread
from nnemu.trace._pbdecode import (
    BEGIN,
    COUNTER,
    END,
    FLOW,
    PRINT,
    PROCESS,
    THREAD,
    ParsePacket,
    Problem,
    Record,
)
from nnemu.trace._pfevents import event_batches, record_lists

INSTALL_HINT: Final = (
    "reading a Perfetto protobuf trace needs the perfetto package:"
    " pip install 'nnemu[perfetto]' (or: pip install perfetto protobuf)"
)
REORDER_WINDOW: Final = 1 << 15
"""How far out of file order ``read_perfetto`` puts records in time order (per-CPU
bundles interleave); up to twice as many wait to be sorted."""


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


def _pb2() -> Any:
    """The generated ``perfetto_trace_pb2`` module (imported on first use)."""
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2

    return perfetto_trace_pb2


def _format_value(value: float) -> str:
    """A counter value as ftrace text: an integer without ``.0``."""
    return str(int(value)) if value.is_integer() and abs(value) < 2**63 else repr(value)


def read_perfetto(
    path: str, *, on_problem: Problem | None = None, window: int | None = None
) -> Iterator[PerfettoEvent]:
    """The typed records of the Perfetto protobuf trace at ``path``, streamed.

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
    for record in _records(path, problem, REORDER_WINDOW if window is None else max(window, 1)):
        yield _typed(record)


def _typed(record: Record) -> PerfettoEvent:
    """The typed record of a reader's tuple."""
    ts, offset, kind = record[:3]
    if kind == BEGIN:
        return SliceBegin(ts=ts, pid=record[3], tid=record[4], name=record[5], offset=offset)
    if kind == END:
        return SliceEnd(ts=ts, pid=record[3], tid=record[4], offset=offset)
    if kind == COUNTER:
        return _counter(record)
    if kind == FLOW:
        return _flow(record)
    if kind == PRINT:
        pid, tid, cpu, text = record[3:]
        return Print(ts=ts, pid=pid, tid=tid, cpu=cpu, text=text, offset=offset)
    if kind == PROCESS:
        return ProcessName(pid=record[3], name=record[4], offset=offset)
    return ThreadName(pid=record[3], tid=record[4], name=record[5], offset=offset)


def _counter(record: Record) -> Counter:
    ts, offset, _, pid, tid, name, value = record
    return Counter(ts=ts, pid=pid, tid=tid, name=name, value=value, offset=offset)


def _flow(record: Record) -> Flow:
    ts, offset, _, pid, tid, flow_id, terminating = record
    return Flow(ts=ts, pid=pid, tid=tid, flow_id=flow_id, terminating=terminating, offset=offset)


def _records(path: str, problem: Problem, limit: int) -> Iterator[Record]:
    """``read_perfetto``'s records as the reader's tuples, timed ones in time order."""
    for records in record_lists(path, _parser(path), problem, limit):
        yield from records


def _parser(path: str) -> ParsePacket:
    """The packet parser the decoder is handed: a ``TracePacket`` decoded by protobuf, or
    why it is not.  Protobuf is imported on the first packet the decoder leaves to it (a
    trace nnemu wrote has none: ``_pbpackets``).

    Raises (when called):
        TraceFormatError: the ``perfetto`` package is missing (``INSTALL_HINT``).
    """
    parsers: list[ParsePacket] = []

    def packet(data: bytes) -> Any:
        if not parsers:
            parsers.append(_protobuf_parser(path))
        return parsers[0](data)

    return packet


def _protobuf_parser(path: str) -> ParsePacket:
    """``_parser``'s, once protobuf is imported."""
    try:
        pb2 = _pb2()
    except ImportError:
        raise TraceFormatError(path, 0, "", INSTALL_HINT) from None
    from google.protobuf.message import DecodeError

    parse = pb2.TracePacket.FromString

    def packet(data: bytes) -> Any:
        try:
            return parse(data)
        except DecodeError as err:
            return f"undecodable packet ({err})"

    return packet


def _ignore(offset: int, message: str) -> None:
    del offset, message


# -- as canonical events -----------------------------------------------------------


def perfetto_event_batches(path: str, *, slices_only: bool = False) -> Iterator[list[Event]]:
    """The canonical events (``nnemu.trace._events``) of the Perfetto trace at ``path``, in
    lists (one per run of packets read), straight from the decoded records.

    They are the events its systrace text form gives (``PerfettoLines`` read by
    ``_ftrace.row_batches``), with no text made or read again: slice begins and ends in
    time order, each placed at its packet's byte offset, its pid the process the trace
    gives its thread (else the mark's own pid, ``begin_payload``'s, or -1: none) and its ``extra`` the
    thread's name as the row's ``TASK`` column shows it (``<...>`` before the trace names
    the thread); an ``END`` carries its thread's process when the trace gave one, else -1.
    Process names come as ``PROCESS`` events, threads named with their process as
    ``THREAD`` events (a process dump's rows), where they are read; problems as
    ``PROBLEM`` events.  What the text form has no row for (a negative time or tid, one
    beyond ``MAX_ABS_NS`` or pid_t) gives no event; counters and flows give ``COUNTER``
    and ``FLOW`` events (``_pftrack.track_record_events``).  ``slices_only``: neither is
    wanted, and a ``TrackEvent``'s flow ids and extra counter values make no record
    (``_pfevents.record_lists``' ``values``).

    Raises:
        TraceFormatError: The first packet cannot be read, or ``perfetto`` is missing.
        OSError: The file cannot be read.
    """
    yield from event_batches(path, _parser(path), REORDER_WINDOW, slices_only=slices_only)


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
        problem = self.on_problem if self.on_problem is not None else _ignore
        offset = 0
        for record in _records(self.path, problem, REORDER_WINDOW):
            kind = record[2]
            cpu = 0
            if kind == BEGIN:
                text = f"B|{record[3]}|{record[5]}"
                tid = record[4]
            elif kind == END:
                text = "E" if record[3] is None else f"E|{record[3]}"
                tid = record[4]
            elif kind == PRINT:
                tid, cpu, text = record[4], record[5], record[6]
            elif kind == COUNTER:
                tid = record[4]
                if tid is None or record[3] is None:
                    # A counter track of no thread: no ftrace row for it.
                    if self.on_track_event is not None:
                        self.on_track_event(_counter(record))
                    continue
                text = f"C|{record[3]}|{record[5]}|{_format_value(record[6])}"
            elif kind == PROCESS:
                pid, name = record[3], record[4]
                tgid[pid] = pid
                heads.clear()
                self.process_names[str(pid)] = name
                if on_dump is not None:
                    on_dump(DumpProcess(pid=pid, name=name))
                continue
            elif kind == THREAD:
                pid, tid, name = record[3], record[4], record[5]
                if pid is not None:
                    tgid[tid] = pid
                if name:
                    names[tid] = name
                heads.clear()
                if on_dump is not None and pid is not None and name:
                    on_dump(DumpThread(pid=pid, tid=tid, name=name))
                continue
            else:
                if self.on_track_event is not None:
                    self.on_track_event(_flow(record))
                continue  # a flow: no ftrace row
            head = heads.get((tid, cpu))
            if head is None:
                process = tgid.get(tid)
                column = f"{process:>5}" if process is not None else "-----"
                head = f"{names.get(tid, '<...>'):>16}-{tid:<5} ({column}) [{cpu:03d}] ...."
                heads[tid, cpu] = head
            offset = record[1]
            self.last_offset = offset
            seconds, ns = divmod(record[0], 1_000_000_000)
            if ns % 1000:
                yield offset, f"{head} {seconds}.{ns:09d}: tracing_mark_write: {text}\n"
            else:
                yield offset, f"{head} {seconds}.{ns // 1000:06d}: tracing_mark_write: {text}\n"
