"""Trace writers: ftrace text, systrace HTML, Chrome trace-event JSON and Perfetto protobuf.

Each streams to a file.  Timestamps are virtual; the emulator keeps them on whole
microseconds, which is the resolution of ftrace text, so nothing is lost in writing.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Sequence
from typing import IO, BinaryIO, Final, TextIO, cast

from librt.strings import BytesWriter

from nnemu.errors import OutputError
from nnemu.sim import SimThread
from nnemu.tracer._args import PREFIX as _ARGS_PREFIX
from nnemu.tracer._args import debug_annotations, json_args
from nnemu.tracer._events import CounterInfo, TraceEvent
from nnemu.tracer._names import thread_name

PERFETTO_SUFFIXES: Final = (".pftrace", ".perfetto-trace")
"""File name endings that select the Perfetto protobuf writer."""

FTRACE_HEADER = """\
# tracer: nop
#
# entries-in-buffer/entries-written: {entries}/{entries}   #P:{cpus}
#
#                                      _-----=> irqs-off
#                                     / _----=> need-resched
#                                    | / _---=> hardirq/softirq
#                                    || / _--=> preempt-depth
#                                    ||| /     delay
#           TASK-PID    TGID   CPU#  ||||    TIMESTAMP  FUNCTION
#              | |        |      |   ||||       |         |
"""

HTML_HEAD = """\
<!DOCTYPE html>
<html>
<head i18n-values="dir:textdirection;">
<meta http-equiv="Content-Type" content="text/html; charset=utf-8">
<meta charset="utf-8"/>
<title>Android System Trace</title>
</head>
<body>
<!-- Written by nnemu. The ftrace text is in the trace-data block below, as Android's
     systrace tool writes it; Perfetto UI and Android's systrace parser read it. -->
  <script class="trace-data" type="application/text">
"""

HTML_TAIL = """\
  </script>
<!-- END TRACE -->
</body>
</html>
"""

CPUS: Final = 8
"""Number of CPUs the ftrace header claims; threads are spread over them by tid."""

PROCESS_DUMP_HEADER = (
    "PROCESS DUMP\n"
    "USER           PID  PPID     VSZ    RSS WCHAN  PC S NAME                        COMM\n"
)
"""The start of the ``ps`` listing systrace puts in its own trace-data block."""

_DIGITS3: Final = tuple(b"%03d" % n for n in range(1000))
"""``000`` to ``999`` (UTF-8): a timestamp's six decimals are two of these."""

_NEXT_TRACE_DATA: Final = '  </script>\n  <script class="trace-data" type="application/text">\n'


def _process_dump_line(pid: int, name: str) -> str:
    """One ``ps`` row as atrace writes it (memory columns unknown: 0).

    The sink interface gives a process's pid and name only, so the USER column
    follows the name: HAL services run as ``system``, the rest are apps.
    """
    service = name.startswith("android.hardware.")
    user = "system" if service else "u0_app"
    wchan = "binder_ioctl_write_read" if service else "SyS_epoll_wait"
    comm = name if service else "app_process64"
    return f"{user:<10}{pid:>8}{0:>6}{0:>8}{0:>7} {wchan} 0 S {name} {comm}\n"


class _Output:
    """The trace file: the first write error (a full disk) stops writing and is raised at close.

    A run does not stop for its trace: it goes on to the end (virtual time is quick),
    then ``close`` raises ``OutputError`` naming the file, so the user gets one clear
    line instead of a traceback from inside an emulated task.

    The file is binary (an ``io`` binary stream, as ``open_trace_writer`` opens: the
    ftrace writer's UTF-8 is written as it is made) or text (anything else with a
    ``write(str)``: the ftrace writer's text is decoded for it).
    """

    def __init__(self, out: TextIO | BinaryIO) -> None:
        self.out = out
        self.name = str(getattr(out, "name", "<stream>"))
        self.error: OSError | None = None
        self.binary = isinstance(out, (io.RawIOBase, io.BufferedIOBase))

    def write(self, data: str | bytes) -> None:
        """Write ``data`` (text, or UTF-8), encoded or decoded as the file takes it."""
        if self.error is None:
            try:
                if self.binary:
                    cast("BinaryIO", self.out).write(
                        data if isinstance(data, bytes) else data.encode()
                    )
                else:
                    cast("TextIO", self.out).write(data if isinstance(data, str) else data.decode())
            except OSError as exc:
                self.error = exc

    def close(self) -> None:
        try:
            self.out.close()
        except OSError as exc:
            self.error = self.error or exc
        if self.error is not None:
            raise OutputError(self.name, "trace", self.error.strerror or str(self.error))


class _Head:
    """What is constant on one thread's lines, as UTF-8: built once per thread."""

    __slots__ = ("begins", "end", "middle", "prefix", "thread")

    def __init__(self, thread: SimThread) -> None:
        task = thread_name(thread.name)
        self.prefix: Final = (
            f"{task:>16}-{thread.tid:<5} ({thread.pid:>5}) [{thread.tid % CPUS:03d}] ...1 "
        ).encode()
        """``TASK-PID (TGID) [CPU] ....`` up to the stamp."""
        self.middle: Final = f": tracing_mark_write: B|{thread.pid}|".encode()
        self.end: Final = f": tracing_mark_write: E|{thread.pid}\n".encode()
        """An ``E`` line after the stamp, whole."""
        self.begins: Final[dict[str, bytes]] = {}
        """A ``B`` line after the stamp, whole, by section name (made on first use)."""
        self.thread: Final = thread
        """The thread itself, which keeps its ``id`` from being reused."""

    def begin(self, name: str) -> bytes:
        """A ``B`` line's text after the stamp, for a section called ``name``."""
        text = self.begins[name] = self.middle + name.encode() + b"\n"
        return text


_NO_HEAD: Final = _Head(SimThread(0, 0, ""))
"""The head before a batch's first line (never written)."""


class FtraceWriter:
    """Streams ``tracing_mark_write`` lines; optionally wrapped in systrace HTML.

    A ``BatchSink``: the tracer hands it up to ``BATCH_EVENTS`` events at a time, and it
    writes their lines with one ``write``.  What is constant on a thread's lines (the
    ``TASK-PID (TGID) [CPU] ....`` head, each ``B|pid|name`` tail, the whole ``E|pid``
    tail) is built once per thread, as UTF-8; a line is its pieces copied into one
    buffer (``librt.strings.BytesWriter``: no object per line), written as it is to
    ``open_trace_writer``'s binary file (decoded for a text one).
    """

    def __init__(self, out: TextIO | BinaryIO, *, html: bool = False) -> None:
        self._out = _Output(out)
        self._html = html
        self._heads: dict[int, _Head] = {}
        """By ``id`` of the thread object."""
        self._processes: dict[int, str] = {}
        self._second = (0, b"0.")
        """The second the last stamp was in: (its start in µs, its text ``<seconds>.``)."""
        self._buffer = BytesWriter()
        """A batch's lines (emptied after each batch, its memory kept)."""
        self._started = False
        if html:
            self._out.write(HTML_HEAD)
        else:
            self._start()

    def _start(self) -> None:
        """Write what precedes the first mark: the process dump (HTML) and the ftrace header."""
        self._started = True
        if self._html:
            # As systrace does: the ``ps`` listing in the first trace-data block, so that
            # Perfetto and ``nnemu query`` name the processes (not only the threads).
            rows = (_process_dump_line(pid, name) for pid, name in sorted(self._processes.items()))
            self._out.write(PROCESS_DUMP_HEADER + "".join(rows) + _NEXT_TRACE_DATA)
        # The entry count is not known when streaming; systrace writes the count of
        # the ring buffer, which parsers do not rely on.
        self._out.write(FTRACE_HEADER.format(entries=0, cpus=CPUS))

    def _head(self, thread: SimThread) -> _Head:
        head = self._heads[id(thread)] = _Head(thread)
        return head

    def process(self, pid: int, name: str) -> None:
        """Remember the process for the HTML's process dump (written before the first mark).

        Every process nnemu emulates is announced before the run starts; one announced
        after the first mark is named by its threads' lines only.
        """
        if not self._started:
            self._processes[pid] = name

    def receive(self, events: Sequence[TraceEvent]) -> None:
        """Write the lines of ``events`` (``B|pid|name`` and ``E|pid``) in one block."""
        if not events:
            return
        if not self._started:
            self._start()
        heads = self._heads
        digits = _DIGITS3
        buffer = self._buffer
        last_ts = -1
        last_thread: SimThread | None = None
        head = _NO_HEAD
        begins = head.begins
        # The stamp is whole seconds, then µs (ftrace's resolution, which virtual time
        # keeps): the seconds' text is kept while they last, the µs are two table entries.
        second_us, second = self._second
        milli = micro = b""
        # (Compiled, a ``TraceEvent`` read from the list is checked item by item, the info's
        # union and nested tuple too, which this loop never reads: read without them.)
        rows = cast(
            "list[tuple[int, SimThread, str | None, object]]",
            events if isinstance(events, list) else list(events),
        )
        for ts, thread, name, _ in rows:
            if thread is not last_thread:
                head = heads.get(id(thread)) or self._head(thread)
                begins = head.begins
                last_thread = thread
            if ts != last_ts:
                last_ts = ts
                us = ts // 1000 - second_us
                if not 0 <= us < 1_000_000:
                    seconds, us = divmod(ts // 1000, 1_000_000)
                    second_us = ts // 1000 - us
                    second = b"%d." % seconds
                milli = digits[us // 1000]
                micro = digits[us % 1000]
            buffer.write(head.prefix)
            buffer.write(second)
            buffer.write(milli)
            buffer.write(micro)
            if name is not None:
                buffer.write(begins.get(name) or head.begin(name))
            else:
                buffer.write(head.end)
        self._second = (second_us, second)
        lines = buffer.getvalue()
        buffer.truncate(0)
        self._out.write(lines)

    def begin(self, ts_ns: int, thread: SimThread, name: str) -> None:
        """Write a ``B|pid|name`` line."""
        self.receive(((ts_ns, thread, name, None),))

    def end(self, ts_ns: int, thread: SimThread) -> None:
        """Write an ``E|pid`` line."""
        self.receive(((ts_ns, thread, None, None),))

    def close(self) -> None:
        """Finish the document and close the file."""
        if not self._started:
            self._start()
        if self._html:
            self._out.write(HTML_TAIL)
        self._out.close()


class _JsonThread:
    """What is constant on one thread's JSON events, as UTF-8, each with the ``,`` and newline
    before it (``ChromeJsonWriter._write`` drops the file's first): built once per thread."""

    __slots__ = ("begins", "end", "flow_end", "flow_start", "named", "place", "thread")

    def __init__(self, thread: SimThread) -> None:
        self.place: Final = b'"pid": %d, "tid": %d, "ts": ' % (thread.pid, thread.tid)
        """An event's ``pid``, ``tid`` and ``ts`` key, in ``sort_keys`` order."""
        self.end: Final = b',\n{"ph": "E", ' + self.place
        """An ``E`` event up to its timestamp."""
        self.flow_start: Final = b'"name": "flow", "ph": "s", ' + self.place
        self.flow_end: Final = b'"name": "flow", "ph": "f", ' + self.place
        """A flow event after its ``id`` up to its timestamp (``s`` starts it, ``f`` ends it)."""
        self.begins: Final[dict[str, bytes]] = {}
        """A ``B`` event up to its timestamp, by section name (made on first use)."""
        self.named = False
        """Whether its ``thread_name`` event is written."""
        self.thread: Final = thread
        """The thread itself, which keeps its ``id`` from being reused."""


_NO_JSON_THREAD: Final = _JsonThread(SimThread(0, 0, ""))
"""The thread before a batch's first event (never written)."""


def _json_ts(ts_ns: int) -> bytes:
    """``ts_ns`` in µs as ``json.dumps`` writes the float ``ts_ns / 1000``."""
    if ts_ns % 1000 == 0 and 0 <= ts_ns < 10**18:
        return b"%d.0" % (ts_ns // 1000)  # (a whole number of µs: what repr gives)
    return repr(ts_ns / 1000).encode()


class ChromeJsonWriter:
    """Streams Chrome trace-event JSON (``{"traceEvents": [...]}``) that Perfetto UI opens.

    A ``FlowSink`` that takes batches: besides the ``B``/``E`` slices it writes flows (``s`` and
    ``f`` with ``"bp": "e"``, bound to the slice just begun) and counters (``C``),
    docs/perfetto.md.  Each event is what ``json.dumps(event, sort_keys=True)`` writes, built
    as the systrace writer builds its lines: what is constant on a thread's events (its
    ``pid``/``tid``, each ``B`` event up to its timestamp, the ``E`` event's) is made once, as
    UTF-8, with the separator before it, and so is each timestamp's text with the event's
    closing brace; an event is those two pieces copied into one buffer, a batch's events
    one write.
    """

    def __init__(self, out: TextIO | BinaryIO) -> None:
        self._out = _Output(out)
        self._first = True
        """Whether no event is written yet (the first goes without its leading separator)."""
        self._threads: dict[int, _JsonThread] = {}
        """By ``id`` of the thread object."""
        self._named: set[SimThread] = set()
        self._counters: dict[tuple[int, str], bytes] = {}
        """A ``C`` event between its value and its timestamp, by (pid, name)."""
        self._last_ts = -1
        self._stamp = b""
        """The text of ``_last_ts`` and the closing brace."""
        self._buffer = BytesWriter()
        """A batch's events (emptied after each batch)."""
        self._out.write('{"displayTimeUnit": "ns", "traceEvents": [\n')

    def _event(self, event: dict[str, object]) -> None:
        self._buffer.write(b",\n" + json.dumps(event, sort_keys=True).encode())

    def process(self, pid: int, name: str) -> None:
        """Write the process_name metadata event."""
        self._event(
            {"ph": "M", "name": "process_name", "pid": pid, "tid": pid, "args": {"name": name}}
        )
        self._write()

    def _thread(self, thread: SimThread) -> _JsonThread:
        track = self._threads[id(thread)] = _JsonThread(thread)
        return track

    def _begin(self, track: _JsonThread, name: str) -> bytes:
        """A ``B`` event up to its timestamp on ``track``, for a section called ``name``; the
        thread's ``thread_name`` event first if this is its first (a track's first begin
        always comes here: its ``begins`` is empty)."""
        if not track.named:
            track.named = True
            thread = track.thread
            if thread not in self._named:
                self._named.add(thread)
                self._event(
                    {
                        "ph": "M",
                        "name": "thread_name",
                        "pid": thread.pid,
                        "tid": thread.tid,
                        "args": {"name": thread.name},
                    }
                )
        text = track.begins[name] = (
            b",\n{"
            + json_args(name)
            + b'"cat": "nnapi", "name": '
            + json.dumps(name).encode()
            + b', "ph": "B", '
            + track.place
        )
        return text

    def receive(self, events: Sequence[TraceEvent]) -> None:
        """Write the events of a batch (slices, flows, counters) in one block."""
        threads = self._threads
        buffer = self._buffer
        last_ts = self._last_ts
        stamp = self._stamp
        last_thread: SimThread | None = None
        track = _NO_JSON_THREAD
        # (As in ``FtraceWriter.receive``: read the events without the info's nested checks.)
        rows = cast(
            "list[tuple[int, SimThread, str | None, object]]",
            events if isinstance(events, list) else list(events),
        )
        for ts, thread, name, info in rows:
            if ts != last_ts:
                last_ts = ts
                # A whole number of µs past the first second (nearly every one) is what
                # ``_json_ts`` gives, in one format.
                if ts % 1000 == 0 and 1_000_000_000 <= ts < 10**18:
                    stamp = b"%d.0}" % (ts // 1000)
                else:
                    stamp = _json_ts(ts) + b"}"
            if name is not None or info is None:
                if thread is not last_thread:
                    track = threads.get(id(thread)) or self._thread(thread)
                    last_thread = thread
                if name is not None:
                    buffer.write(track.begins.get(name) or self._begin(track, name))
                else:
                    buffer.write(track.end)
            elif isinstance(info, int):  # a flow (``FlowInfo``: its id, negated at its end)
                if thread is not last_thread:
                    track = threads.get(id(thread)) or self._thread(thread)
                    last_thread = thread
                if info < 0:
                    buffer.write(b',\n{"bp": "e", "cat": "nnapi-flow", "id": %d, ' % -info)
                    buffer.write(track.flow_end)
                else:
                    buffer.write(b',\n{"cat": "nnapi-flow", "id": %d, ' % info)
                    buffer.write(track.flow_start)
            else:  # a counter (``CounterInfo``)
                pid, counter, value = cast("CounterInfo", info)
                middle = self._counters.get((pid, counter))
                if middle is None:
                    middle = self._counters[pid, counter] = (
                        b'}, "name": %s, "ph": "C", "pid": %d, "ts": '
                        % (json.dumps(counter).encode(), pid)
                    )
                buffer.write(b',\n{"args": {"value": %d' % value)
                buffer.write(middle)
            buffer.write(stamp)
        self._last_ts = last_ts
        self._stamp = stamp
        self._write()

    def _write(self) -> None:
        """Write the buffered events (the file's first without its leading separator)."""
        data = self._buffer.getvalue()
        self._buffer.truncate(0)
        if self._first and data:
            self._first = False
            data = data[2:]
        self._out.write(data)

    def begin(self, ts_ns: int, thread: SimThread, name: str) -> None:
        """Write a ``B`` event (ts in µs)."""
        self.receive(((ts_ns, thread, name, None),))

    def end(self, ts_ns: int, thread: SimThread) -> None:
        """Write an ``E`` event."""
        self.receive(((ts_ns, thread, None, None),))

    def flow(self, ts_ns: int, thread: SimThread, flow_id: int, terminating: bool) -> None:
        """Write a flow event bound to the slice just begun: ``s`` starts it, ``f`` ends it."""
        self.receive(((ts_ns, thread, None, -flow_id if terminating else flow_id),))

    def counter(self, ts_ns: int, pid: int, name: str, value: int) -> None:
        """Write a ``C`` event: counter ``name`` of process ``pid``."""
        self.receive(((ts_ns, _NO_HEAD.thread, None, (pid, name, value)),))

    def close(self) -> None:
        """Finish the JSON document and close the file."""
        self._out.write("\n]}\n")
        self._out.close()


# ---------------------------------------------------------------- Perfetto protobuf

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

    __slots__ = ("begins", "end", "thread", "uuid")

    def __init__(self, thread: SimThread) -> None:
        self.uuid: Final = b"\x58" + _varint(THREAD_UUID_BASE + thread.tid)
        """``track_uuid`` (field 11) of the thread's track."""
        self.end: Final = _SEQUENCE + _field(_TRACK_EVENT, b"\x48\x02" + self.uuid)
        """An end packet after its timestamp, whole."""
        self.begins: Final[dict[str, bytes]] = {}
        """A begin packet (no flows) after its timestamp, by the slice's name (interned)."""
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
        self._counters: dict[tuple[int, str], bytes] = {}
        """A counter event's ``TrackEvent`` up to its value, by (pid, name)."""
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
        self._event_ts_size = 0
        """The last timestamp an event packet had, and its varint's size."""
        self._held_flows = b""

    # ------------------------------------------------------------ output
    def _timestamp(self, ts_ns: int) -> bytes:
        if ts_ns != self._last_ts:
            self._last_ts = ts_ns
            self._ts_field = _TS + _varint(ts_ns)
        return self._ts_field

    def _event_head(self, ts_ns: int, rest: int) -> None:
        """Write a packet's record header and timestamp; ``rest`` bytes of fields follow."""
        if ts_ns != self._event_ts:
            self._event_ts = ts_ns
            self._event_ts_size = _varint_size(ts_ns)
        size = 1 + self._event_ts_size + rest
        buffer = self._buffer
        buffer.append(0x0A)  # field 1 (Trace.packet), length-delimited
        if size < 0x80:
            buffer.append(size)
        else:
            buffer.write(_varint(size))
        buffer.append(0x40)  # TracePacket.timestamp (field 8)
        _put_varint(buffer, ts_ns)

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
        tail = thread.begins.get(name)
        if tail is None or flows:
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
            interned = _field(b"\x62", entry) if entry else b""
            if not flows:
                tail = thread.begins[name] = _SEQUENCE + _field(_TRACK_EVENT, event)
                tail += interned
            else:
                self._held_flows = b""
                tail = _SEQUENCE + _field(_TRACK_EVENT, event + flows) + interned
        self._event_head(self._held_ts, len(tail))
        self._buffer.write(tail)

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
        uuid = _varint(COUNTER_UUID_BASE + len(self._counters) + 1)
        # TrackDescriptor { uuid (1), name (2), parent_uuid (5), counter (8) {} }
        descriptor = b"\x08" + uuid + _text_field(b"\x12", name) + b"\x28" + _varint(pid)
        self._descriptor(ts_ns, descriptor + b"\x42\x00")
        # type (9) = TYPE_COUNTER, track_uuid (11), counter_value (30) follows
        event = self._counters[pid, name] = b"\x48\x04\x58" + uuid + b"\xf0\x01"
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
                        if info < 0:
                            flow = _TERMINATING_FLOW + (-info).to_bytes(8, "little")
                        else:
                            flow = _FLOW + info.to_bytes(8, "little")
                        self._held_flows += flow
                    # else: the tracer delivers a flow right after its begin; nothing to bind to
                else:  # a counter (``CounterInfo``)
                    self._release()
                    pid, counter, value = cast("CounterInfo", info)
                    event = self._counters.get((pid, counter))
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
        self.receive(((ts_ns, _NO_HEAD.thread, None, (pid, name, value)),))

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


def open_trace_writer(
    path: str | os.PathLike[str],
) -> FtraceWriter | ChromeJsonWriter | PerfettoWriter:
    """A writer for ``path``, chosen by extension: .html (systrace), .json (Chrome),
    .pftrace or .perfetto-trace (Perfetto protobuf), else ftrace text."""
    name = os.fspath(path)
    if name.endswith(PERFETTO_SUFFIXES):
        # Unbuffered: the writer writes whole blocks of packets, so the file never ends mid-packet.
        return PerfettoWriter(open(name, "wb", buffering=0))
    # The other writers make UTF-8 themselves, as they write it.
    out = open(name, "wb")  # noqa: SIM115 - closed by the writer
    if name.endswith(".json"):
        return ChromeJsonWriter(out)
    return FtraceWriter(out, html=name.endswith((".html", ".htm")))
