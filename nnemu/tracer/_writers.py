"""Trace writers: ftrace text, systrace HTML, Chrome trace-event JSON (Perfetto protobuf:
``_perfetto_writer``; ``_open.open_trace_writer`` picks one by the file's name).

Each streams to a file.  Timestamps are virtual; the emulator keeps them on whole
microseconds, which is the resolution of ftrace text, so nothing is lost in writing.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from typing import BinaryIO, Final, TextIO, cast

from librt.strings import BytesWriter

from nnemu.errors import OutputError
from nnemu.sim import SimThread
from nnemu.tracer._args import json_args
from nnemu.tracer._events import TraceEvent
from nnemu.tracer._names import thread_name

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
        self.flow_start: Final = b', "name": "flow", "ph": "s", ' + self.place
        self.flow_end: Final = b', "name": "flow", "ph": "f", ' + self.place
        """A flow event after its ``id``'s value up to its timestamp (``s`` starts it, ``f``
        ends it)."""
        self.begins: Final[dict[str, bytes]] = {}
        """A ``B`` event up to its timestamp, by section name (made on first use)."""
        self.named = False
        """Whether its ``thread_name`` event is written."""
        self.thread: Final = thread
        """The thread itself, which keeps its ``id`` from being reused."""


_SMALL_VALUES: Final = 1024
_JSON_VALUES: Final = tuple(b',\n{"args": {"value": %d' % n for n in range(_SMALL_VALUES))
"""A counter event up to its value's end, for the small values (most counters' values)."""

_DECIMALS: Final = tuple(b"%d" % n for n in range(1000))
"""``0`` to ``999`` (UTF-8, no leading zeros)."""

_STAMP_ENDS: Final = tuple(b"%03d.0}" % n for n in range(1000))
"""A timestamp's last three digits (its µs), then what ends it and its event."""

_FLOW_STARTS: Final = b',\n{"cat": "nnapi-flow", "id": '
_FLOW_ENDS: Final = b',\n{"bp": "e", "cat": "nnapi-flow", "id": '
"""A flow event up to its id (``s`` starts it, ``f`` ends it)."""

_NO_SECOND: Final = -(10**18)
"""A second's start (µs) no timestamp is in."""

_NO_JSON_THREAD: Final = _JsonThread(SimThread(0, 0, ""))
"""The thread before a batch's first event (never written)."""


def _write_decimal(buffer: BytesWriter, n: int) -> None:
    """Write ``n`` (>= 0) in decimal, from ``_DECIMALS`` and ``_DIGITS3`` below a million."""
    if n < 1000:
        buffer.write(_DECIMALS[n])
    elif n < 1_000_000:
        buffer.write(_DECIMALS[n // 1000])
        buffer.write(_DIGITS3[n % 1000])
    else:
        buffer.write(b"%d" % n)


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
        self._counters: dict[str, dict[object, bytes]] = {}
        """A ``C`` event between its value and its timestamp, by name and pid (no key
        tuple made per event)."""
        self._last_ts = -1
        self._stamp = b""
        """The text of ``_last_ts`` and the closing brace."""
        self._second = (_NO_SECOND, b"")
        """The second the last whole-µs stamp was in: (its start in µs, its text)."""
        self._milli = (_NO_SECOND, b"")
        """The millisecond it was in: (its start in µs, its text: the second's and 3 digits)."""
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
        # A whole number of µs past the first second (nearly every stamp) is what ``_json_ts``
        # gives, ``<seconds><6 digits>.0``: as in ``FtraceWriter.receive``, the seconds' text
        # is kept while they last, and so is the millisecond's (the seconds and three digits:
        # a 20 s run's 73k events have 25k timestamps in 4k milliseconds); the rest is a table
        # entry.
        second_us, second = self._second
        milli_us, milli = self._milli
        digits = _DIGITS3
        ends = _STAMP_ENDS
        counters = self._counters
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
                us = ts // 1000 - milli_us
                if ts % 1000 == 0 and 0 <= us < 1000:
                    stamp = milli + ends[us]
                elif ts % 1000 == 0 and 1_000_000_000 <= ts < 10**18:
                    us = ts // 1000 - second_us
                    if not 0 <= us < 1_000_000:
                        seconds, us = divmod(ts // 1000, 1_000_000)
                        second_us = ts // 1000 - us
                        second = b"%d" % seconds
                    milli_us = ts // 1000 - us % 1000
                    milli = second + digits[us // 1000]
                    stamp = milli + ends[us % 1000]
                else:
                    stamp = _json_ts(ts) + b"}"
            if name is not None or info is None:
                if thread is not last_thread:
                    track = threads.get(id(thread)) or self._thread(thread)
                    last_thread = thread
                if name is not None:
                    text = track.begins.get(name)
                    buffer.write(text if text is not None else self._begin(track, name))
                else:
                    buffer.write(track.end)
            elif isinstance(info, int):  # a flow (``FlowInfo``: its id, negated at its end)
                if thread is not last_thread:
                    track = threads.get(id(thread)) or self._thread(thread)
                    last_thread = thread
                if info < 0:
                    buffer.write(_FLOW_ENDS)
                    _write_decimal(buffer, -info)
                    buffer.write(track.flow_end)
                else:
                    buffer.write(_FLOW_STARTS)
                    _write_decimal(buffer, info)
                    buffer.write(track.flow_start)
            else:  # a counter (``CounterInfo``; its pid only a key here, read as an object)
                pid, counter, value = cast("tuple[object, str, int]", info)
                by_pid = counters.get(counter)
                if by_pid is None:
                    by_pid = counters[counter] = {}
                middle = by_pid.get(pid)
                if middle is None:
                    middle = by_pid[pid] = b'}, "name": %s, "ph": "C", "pid": %d, "ts": ' % (
                        json.dumps(counter).encode(),
                        cast("int", pid),
                    )
                if 0 <= value < _SMALL_VALUES:
                    buffer.write(_JSON_VALUES[value])
                else:
                    buffer.write(b',\n{"args": {"value": %d' % value)
                buffer.write(middle)
            buffer.write(stamp)
        self._last_ts = last_ts
        self._stamp = stamp
        self._second = (second_us, second)
        self._milli = (milli_us, milli)
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
