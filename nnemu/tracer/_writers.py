"""Trace writers: ftrace text, systrace HTML and Chrome trace-event JSON, streamed to a file.

(The Perfetto protobuf writer is in ``_perfetto_writer``, imported only when chosen.)

Timestamps are virtual; the emulator keeps them on whole microseconds, which is
the resolution of ftrace text, so nothing is lost in writing.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, BinaryIO, Final, TextIO, cast

from librt.strings import BytesWriter

from nnemu.errors import OutputError
from nnemu.sim import SimThread
from nnemu.tracer._events import FlowBatchReceiver, TraceEvent
from nnemu.tracer._names import thread_name

if TYPE_CHECKING:
    from nnemu.tracer._perfetto_writer import PerfettoWriter

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


class ChromeJsonWriter(FlowBatchReceiver):
    """Streams Chrome trace-event JSON (``{"traceEvents": [...]}``) that Perfetto UI opens.

    A ``FlowSink``: besides the ``B``/``E`` slices it writes flows (``s`` and ``f`` with
    ``"bp": "e"``, bound to the slice just begun) and counters (``C``), docs/perfetto.md.
    """

    def __init__(self, out: TextIO) -> None:
        self._out = _Output(out)
        self._first = True
        self._threads: set[SimThread] = set()
        self._names: dict[str, str] = {}
        """Each slice name as JSON text (``json.dumps``), made once."""
        self._out.write('{"displayTimeUnit": "ns", "traceEvents": [\n')

    def _event(self, event: dict[str, object]) -> None:
        self._text(json.dumps(event, sort_keys=True))

    def _text(self, text: str) -> None:
        # Separator and event in one write: the file never ends in a bare ",".
        self._out.write(text if self._first else ",\n" + text)
        self._first = False

    def process(self, pid: int, name: str) -> None:
        """Write the process_name metadata event."""
        self._event(
            {"ph": "M", "name": "process_name", "pid": pid, "tid": pid, "args": {"name": name}}
        )

    def _thread(self, thread: SimThread) -> None:
        if thread not in self._threads:
            self._threads.add(thread)
            self._event(
                {
                    "ph": "M",
                    "name": "thread_name",
                    "pid": thread.pid,
                    "tid": thread.tid,
                    "args": {"name": thread.name},
                }
            )

    def begin(self, ts_ns: int, thread: SimThread, name: str) -> None:
        """Write a ``B`` event (ts in µs): what ``json.dumps(..., sort_keys=True)`` writes."""
        self._thread(thread)
        text = self._names.get(name)
        if text is None:
            text = self._names[name] = json.dumps(name)
        self._text(
            f'{{"cat": "nnapi", "name": {text}, "ph": "B", "pid": {thread.pid}, '
            f'"tid": {thread.tid}, "ts": {ts_ns / 1000!r}}}'
        )

    def end(self, ts_ns: int, thread: SimThread) -> None:
        """Write an ``E`` event."""
        self._text(
            f'{{"ph": "E", "pid": {thread.pid}, "tid": {thread.tid}, "ts": {ts_ns / 1000!r}}}'
        )

    def flow(self, ts_ns: int, thread: SimThread, flow_id: int, terminating: bool) -> None:
        """Write a flow event bound to the slice just begun: ``s`` starts it, ``f`` ends it."""
        event: dict[str, object] = {
            "ph": "f" if terminating else "s",
            "name": "flow",
            "cat": "nnapi-flow",
            "id": flow_id,
            "pid": thread.pid,
            "tid": thread.tid,
            "ts": ts_ns / 1000,
        }
        if terminating:
            event["bp"] = "e"
        self._event(event)

    def counter(self, ts_ns: int, pid: int, name: str, value: int) -> None:
        """Write a ``C`` event: counter ``name`` of process ``pid``."""
        self._event(
            {"ph": "C", "name": name, "pid": pid, "ts": ts_ns / 1000, "args": {"value": value}}
        )

    def close(self) -> None:
        """Finish the JSON document and close the file."""
        self._out.write("\n]}\n")
        self._out.close()


def open_trace_writer(
    path: str | os.PathLike[str],
) -> FtraceWriter | ChromeJsonWriter | PerfettoWriter:
    """A writer for ``path``, chosen by extension: .html (systrace), .json (Chrome),
    .pftrace or .perfetto-trace (Perfetto protobuf), else ftrace text."""
    name = os.fspath(path)
    if name.endswith(PERFETTO_SUFFIXES):
        from nnemu.tracer._perfetto_writer import open_perfetto_writer

        return open_perfetto_writer(name)
    if name.endswith(".json"):
        text = open(name, "w", encoding="utf-8", newline="\n")  # noqa: SIM115 - closed by the writer
        return ChromeJsonWriter(text)
    # The ftrace writer makes UTF-8 itself, as it writes it.
    out = open(name, "wb")  # noqa: SIM115 - closed by the writer
    return FtraceWriter(out, html=name.endswith((".html", ".htm")))
