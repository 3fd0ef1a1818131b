"""Finding the ftrace text in a systrace HTML file or a plain ftrace dump, and its process dump.

Systrace HTML holds several ``<script class="trace-data">`` blocks: a ``PROCESS
DUMP`` (``ps`` listings: processes, then threads), the ftrace text (first line
``# tracer:``) and JSON metadata.  ``FtraceLines`` yields the ftrace block's
numbered lines, reads process names from a dump before it, and hands each dump
line to ``on_dump_line`` for readers that want more of it (thread names).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Iterable, Iterator
from typing import Final

import attrs

TRACE_DATA_OPEN: Final = '<script class="trace-data" type="application/text">'
"""The tag that opens a systrace trace-data block."""
SCRIPT_CLOSE: Final = "</script>"
PROCESS_DUMP: Final = "PROCESS DUMP"
"""The first line of a systrace process-dump block."""
_MAX_PROCESSES: Final = 100_000


def process_name(rest: str) -> str:
    """The NAME column of a ``ps`` line's tail ``NAME  COMM`` (names may hold spaces)."""
    wide = re.split(r"\s{2,}", rest.strip())
    if len(wide) >= 2:
        return wide[0]
    return rest.split()[0]


@attrs.define
class FtraceLines:
    """Yields the numbered ftrace lines of an input and remembers what it saw.

    Systrace HTML holds several ``trace-data`` blocks (process dump, JSON
    metadata); the ftrace one is the block whose first line is ``# tracer:``.
    Anything that does not look like HTML is read as plain ftrace text.
    """

    lines: Iterable[str]
    """The raw input lines."""
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
    on_dump_line: Callable[[str], None] | None = None
    """Called with each line of a ``PROCESS DUMP`` block before the ftrace one (its
    ``PROCESS DUMP`` line first, then the ``ps`` headers and rows)."""

    def __iter__(self) -> Iterator[tuple[int, str]]:
        line_number = 0
        line = ""
        lines = iter(self.lines)
        for line in lines:
            line_number += 1
            stripped = line.lstrip()
            if not stripped:
                continue
            head = stripped[:15].lower()
            if head.startswith(("<!doctype", "<html")):
                self.is_html = True
                line_number, line = yield from self._html_block(lines, line_number, line)
            else:
                self.found_ftrace = True
                item = (line_number, line)
                yield item
                for item in enumerate(lines, line_number + 1):
                    yield item
                line_number, line = item
            break
        self.last_line_number = line_number
        self.last_line_unterminated = bool(line) and not line.endswith("\n")

    def _dump_line(self, line: str) -> None:
        """Read one ``ps`` row (``USER PID PPID VSZ RSS WCHAN PC S NAME COMM``)."""
        fields = line.split(None, 8)
        if len(fields) == 9 and fields[1].isdigit() and len(self.process_names) < _MAX_PROCESSES:
            name = process_name(fields[8])
            if name.isprintable():
                self.process_names[str(int(fields[1]))] = name[:200]

    def _html_block(
        self, lines: Iterator[str], line_number: int, line: str
    ) -> Generator[tuple[int, str], None, tuple[int, str]]:
        """Yield the ftrace block's lines; return the last line read (and its number)."""
        in_block = in_dump = False
        expect_tracer = False
        while True:
            if in_block:
                if SCRIPT_CLOSE in line:
                    break
                yield line_number, line
            elif in_dump:
                if SCRIPT_CLOSE in line:
                    in_dump = False
                else:
                    self._dump_line(line)
                    if self.on_dump_line is not None:
                        self.on_dump_line(line)
            elif expect_tracer:
                expect_tracer = False
                if line.startswith("# tracer:"):
                    in_block = True
                    self.found_ftrace = True
                    if self.on_ftrace is not None:
                        self.on_ftrace(self.process_names)
                elif line.strip() == PROCESS_DUMP:
                    in_dump = True
                    if self.on_dump_line is not None:
                        self.on_dump_line(line)
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
