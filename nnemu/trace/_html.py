"""Finding the ftrace text in a systrace HTML file or a plain ftrace dump, and its process dump.

A text stream is read a line at a time, at most ``MAX_LINE`` characters at a
time: an ftrace line longer than that (a file without line breaks) is refused,
not read whole; in HTML outside the ftrace block only a line's first
``MAX_LINE`` characters are looked at.

Systrace HTML holds several ``<script class="trace-data">`` blocks: a ``PROCESS
DUMP`` (``ps`` listings: processes, then threads), the ftrace text (first line
``# tracer:``) and JSON metadata.  ``FtraceLines`` yields the ftrace block's
numbered lines and reads a dump before it with ``ProcessDump``: process names
are kept in ``process_names``, and every process and thread row goes to
``on_dump`` for readers that want more of it (thread names).
"""

from __future__ import annotations

import functools
import io
import itertools
import re
from collections.abc import Callable, Generator, Iterable, Iterator
from typing import Final, TextIO

import attrs

from nnemu.errors import TraceFormatError
from nnemu.trace._rows import pid_of

TRACE_DATA_OPEN: Final = '<script class="trace-data" type="application/text">'
TRUNCATED_HTML: Final = "the trace data block has no closing </script>: the file looks truncated"
"""The warning of every reader (parse, query, replay) at the last line of a cut systrace HTML file."""
"""The tag that opens a systrace trace-data block."""
SCRIPT_CLOSE: Final = "</script>"
PROCESS_DUMP: Final = "PROCESS DUMP"
"""The first line of a systrace process-dump block."""
_MAX_PROCESSES: Final = 100_000

MAX_LINE: Final = 1 << 20
"""The longest line a text trace may have, in characters (so at least as many bytes): 1 MiB."""
BLOCK_LINES: Final = 4096
"""Lines per list of ``FtraceLines.blocks`` (~400 KB of a usual trace)."""


def _line_too_long(source: str, line_number: int) -> TraceFormatError:
    return TraceFormatError(source, line_number, "", f"line longer than {MAX_LINE} bytes")


def _source_of(stream: TextIO | io.TextIOBase) -> str:
    return str(getattr(stream, "name", "<stream>"))


def _pieces(stream: TextIO | io.TextIOBase) -> Iterator[str]:
    """The stream's lines, each read in at most ``MAX_LINE + 1`` characters (C-speed iteration).

    A line longer than ``MAX_LINE`` comes in several pieces, the first exactly
    ``MAX_LINE + 1`` characters long without a line break.
    """
    return iter(functools.partial(stream.readline, MAX_LINE + 1), "")


def _skip_rest(pieces: Iterator[str]) -> None:
    """Read past the rest of an over-long line (its pieces up to a line break)."""
    for piece in pieces:
        if piece.endswith("\n"):
            return


def bounded_lines(stream: TextIO | io.TextIOBase) -> Iterator[str]:
    """The lines of a text stream, each read in at most ``MAX_LINE + 1`` characters.

    A trace line is ~100 characters; a longer one than ``MAX_LINE`` (a file
    without line breaks, say) is refused rather than read whole into memory.

    Raises:
        TraceFormatError: A line is longer than ``MAX_LINE`` (at its line number;
            the source is the stream's ``name``).
    """
    limit = MAX_LINE + 1
    for line_number, line in enumerate(_pieces(stream), 1):
        if len(line) == limit and line[-1] != "\n":
            raise _line_too_long(_source_of(stream), line_number)
        yield line


def process_name(rest: str) -> str:
    """The NAME column of a ``ps`` line's tail ``NAME  COMM`` (names may hold spaces)."""
    wide = re.split(r"\s{2,}", rest.strip())
    if len(wide) >= 2:
        return wide[0]
    return rest.split()[0]


@attrs.frozen
class DumpProcess:
    """A row of the dump's process listing (``USER PID PPID VSZ RSS WCHAN PC S NAME COMM``)."""

    pid: int
    name: str
    """The NAME column (which may hold single spaces)."""


@attrs.frozen
class DumpThread:
    """A row of the dump's thread listing (``USER PID TID CMD``)."""

    pid: int
    tid: int
    name: str
    """The CMD column: the thread's name."""


@attrs.define
class ProcessDump:
    """Reads the lines of ``PROCESS DUMP`` blocks: ``ps`` listings of processes, then threads.

    Each listing starts with its ``USER ...`` header, which tells which it is
    (a ``PPID`` column: processes; a ``TID`` column: threads).  Rows whose PID
    or TID column is not a pid (ASCII digits within pid_t) are skipped.
    """

    listing: str | None = None
    """``process``, ``thread``, or None before a header (or after an unknown one)."""

    def read(self, line: str) -> DumpProcess | DumpThread | None:
        """The row ``line`` holds, or None (a header, a blank or foreign line)."""
        fields = line.split()
        if not fields:
            return None
        if fields[0] == "USER":
            self.listing = "process" if "PPID" in fields else "thread" if "TID" in fields else None
            return None
        if line.strip() == PROCESS_DUMP:
            self.listing = None  # a new block
            return None
        if len(fields) < 4 or self.listing is None:
            return None
        first, second = pid_of(fields[1]), pid_of(fields[2])
        if first is None or second is None:
            return None
        if self.listing == "process":
            if len(fields) < 9:
                return None
            return DumpProcess(pid=first, name=process_name(line.split(None, 8)[8]))
        return DumpThread(pid=first, tid=second, name=line.split(None, 3)[3].strip())


@attrs.define
class FtraceLines:
    """Yields the numbered ftrace lines of an input and remembers what it saw.

    Systrace HTML holds several ``trace-data`` blocks (process dump, JSON
    metadata); the ftrace one is the block whose first line is ``# tracer:``.
    Anything that does not look like HTML is read as plain ftrace text.
    """

    lines: Iterable[str]
    """The raw input lines (a text stream is read at most ``MAX_LINE`` characters at a time)."""
    is_html: bool = attrs.field(default=False, init=False)
    """Whether the input was recognised as systrace HTML."""
    found_ftrace: bool = attrs.field(default=False, init=False)
    """Whether an ftrace block (or plain text) was found."""
    truncated: bool = attrs.field(default=False, init=False)
    """Whether the ftrace block of an HTML file had no closing ``</script>``."""
    last_line_number: int = attrs.field(default=0, init=False)
    """Number of the last line read."""
    last_line_unterminated: bool = attrs.field(default=False, init=False)
    """Whether the input's last line had no line break (cut off mid-line)."""
    process_names: dict[str, str] = attrs.field(factory=dict, init=False)
    """Process names by pid, from a systrace ``PROCESS DUMP`` block before the ftrace one."""
    on_ftrace: Callable[[dict[str, str]], None] | None = None
    """Called with ``process_names`` when the ftrace block of an HTML file starts."""
    on_dump: Callable[[DumpProcess | DumpThread], None] | None = None
    """Called with each row of a ``PROCESS DUMP`` block before the ftrace one."""
    _dump: ProcessDump = attrs.field(factory=ProcessDump, init=False)
    _limit: int = attrs.field(default=0, init=False)
    """``MAX_LINE + 1`` when reading a stream (a piece that long is a line too long), else 0."""
    _source: str = attrs.field(default="", init=False)

    def __iter__(self) -> Iterator[tuple[int, str]]:
        # Plain text, the common case, is yielded from this frame itself (no
        # ``yield from`` through a second generator per line).
        lines, line_number, line, html = self._start()
        if html:
            line_number, line = yield from self._html_block(lines, line_number, line)
        elif html is not None:
            limit = self._limit
            item = (line_number, line)
            if limit:
                if self._too_long(line):
                    raise _line_too_long(self._source, line_number)
                yield item
                for item in enumerate(lines, line_number + 1):
                    if len(item[1]) == limit and item[1][-1] != "\n":
                        raise _line_too_long(self._source, item[0])
                    yield item
            else:
                yield item
                for item in enumerate(lines, line_number + 1):
                    yield item
            line_number, line = item
        self._end(line_number, line)

    def blocks(self, size: int = BLOCK_LINES) -> Iterator[tuple[int, list[str]]]:
        """The same numbered lines as iterating gives, in lists of consecutive lines:
        ``(number of the first, lines)``.

        Plain text read from a text stream or a list comes ``size`` lines at a time,
        with no Python code run per line (what ``row_batches`` and the query loader read); the
        ftrace block of HTML comes in lists of up to ``size`` lines too.  Other
        iterables (whose lines may come with callbacks, as ``PerfettoLines``' do) come
        a line at a time, so nothing is read ahead of the rows handled.

        Raises:
            TraceFormatError: A line is longer than ``MAX_LINE``.
        """
        batched = isinstance(self.lines, io.TextIOBase | list)
        lines, line_number, line, html = self._start()
        if html:
            block = self._html_block(lines, line_number, line)
            first = line_number
            chunk: list[str] = []
            while True:
                try:
                    number, text = next(block)
                except StopIteration as stop:
                    line_number, line = stop.value
                    break
                if not chunk:
                    first = number
                chunk.append(text)
                if len(chunk) >= size or not batched:
                    yield first, chunk
                    chunk = []
            if chunk:
                yield first, chunk
        elif html is not None:
            if self._limit and self._too_long(line):
                raise _line_too_long(self._source, line_number)
            yield line_number, [line]
            limit = self._limit
            step = size if batched else 1
            while chunk := list(itertools.islice(lines, step)):
                if limit and max(map(len, chunk)) == limit:
                    for number, text in enumerate(chunk, line_number + 1):
                        if len(text) == limit and text[-1] != "\n":
                            raise _line_too_long(self._source, number)
                yield line_number + 1, chunk
                line_number += len(chunk)
                line = chunk[-1]
        self._end(line_number, line)

    def _start(self) -> tuple[Iterator[str], int, str, bool | None]:
        """Start reading: skip blank lines and tell HTML (``is_html``) from plain text.

        Returns:
            The lines still to read, the number of the last line read and that line, and
            whether that first line with text opens HTML (None: the input had no text).
        """
        line_number = 0
        line = ""
        lines: Iterator[str]
        if isinstance(self.lines, io.TextIOBase):
            lines = _pieces(self.lines)
            self._source = _source_of(self.lines)
            self._limit = MAX_LINE + 1
        else:
            lines = iter(self.lines)
        for line in lines:
            line_number += 1
            stripped = line.lstrip()
            if not stripped:
                if self._too_long(line):
                    _skip_rest(lines)
                continue
            head = stripped[:15].lower()
            if head.startswith(("<!doctype", "<html")):
                self.is_html = True
                return lines, line_number, line, True
            self.found_ftrace = True  # plain ftrace text from this line on
            return lines, line_number, line, False
        return lines, line_number, line, None

    def _end(self, line_number: int, line: str) -> None:
        """Remember the last line read."""
        self.last_line_number = line_number
        self.last_line_unterminated = bool(line) and not line.endswith("\n")

    def _too_long(self, line: str) -> bool:
        """Whether ``line`` is the first piece of a line longer than ``MAX_LINE``."""
        return len(line) == self._limit and line[-1] != "\n"

    def _dump_line(self, line: str) -> None:
        """Read one line of a ``PROCESS DUMP`` block."""
        row = self._dump.read(line)
        if row is None:
            return
        if (
            isinstance(row, DumpProcess)
            and len(self.process_names) < _MAX_PROCESSES
            and row.name.isprintable()
        ):
            self.process_names[str(row.pid)] = row.name[:200]
        if self.on_dump is not None:
            self.on_dump(row)

    def _html_block(
        self, lines: Iterator[str], line_number: int, line: str
    ) -> Generator[tuple[int, str], None, tuple[int, str]]:
        """Yield the ftrace block's lines; return the last line read (and its number)."""
        in_block = in_dump = False
        expect_tracer = False
        while True:
            if self._limit and self._too_long(line):
                if in_block:
                    raise _line_too_long(self._source, line_number)
                # Outside the ftrace block (the viewer's code, other data blocks) only
                # the first MAX_LINE characters of a line are looked at.
                _skip_rest(lines)
            if in_block:
                if SCRIPT_CLOSE in line:
                    break
                yield line_number, line
            elif in_dump:
                if SCRIPT_CLOSE in line:
                    in_dump = False
                else:
                    self._dump_line(line)
            elif expect_tracer:
                expect_tracer = False
                if line.startswith("# tracer:"):
                    in_block = True
                    self.found_ftrace = True
                    if self.on_ftrace is not None:
                        self.on_ftrace(self.process_names)
                elif line.strip() == PROCESS_DUMP:
                    in_dump = True
                    self._dump_line(line)
                elif TRACE_DATA_OPEN in line:
                    expect_tracer = True
            elif TRACE_DATA_OPEN in line:
                expect_tracer = True
            next_line = next(lines, None)
            if next_line is None:
                if in_block:
                    self.truncated = True
                break
            line = next_line
            line_number += 1
        return line_number, line
