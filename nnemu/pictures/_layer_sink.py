"""The per-layer tables of a run parsed as the run goes: a trace sink that feeds the parser.

``nnemu run --html`` without ``--trace`` needs the NNAPI per-layer tables of the run's
trace.  Writing a systrace to a temporary file and parsing it afterwards also costs the
writing, reading and decoding of that file (212 MB for a 600 s run).  ``LayerSink`` is a
``BatchSink`` that formats each batch of events with the systrace writer (``FtraceWriter``,
the text ``--trace x.html`` would write) in memory and hands its lines to the parser
(``nnemu.parser.StreamingParser``) at once, so no file is written or read and one batch's text is all that is held.

The parser gets exactly the numbered lines ``nnemu parse`` would read from that file:
the HTML and ``PROCESS DUMP`` preamble goes through the same reader (``FtraceLines``, which
gives the parser the process names), later lines are numbered on from there, and the
closing ``</script>`` is not fed (the reader stops there).  So the tables, and the
warnings' line numbers, are those of ``nnemu parse`` on the systrace of the run.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import TYPE_CHECKING

from nnemu.parser import ParseResult, StreamingParser
from nnemu.sim import SimThread
from nnemu.trace import FtraceLines
from nnemu.tracer import FtraceWriter

if TYPE_CHECKING:
    from nnemu.tracer import TraceEvent


class _Text(io.StringIO):
    """What the writer writes, kept as pieces until the sink takes them."""

    name = "<the run's systrace, in memory>"

    def __init__(self) -> None:
        super().__init__()
        self.pieces: list[str] = []

    def write(self, text: str) -> int:
        self.pieces.append(text)
        return len(text)

    def take(self) -> str:
        """Everything written since the last ``take``."""
        text = "".join(self.pieces)
        self.pieces.clear()
        return text


def _lines(text: str) -> list[str]:
    """``text``'s lines as a file of it is read (universal newlines, each with its ``\\n``)."""
    lines = text.splitlines(keepends=True)
    if len(lines) != text.count("\n") or "\r" in text:
        # Another line break than "\n" (in a name): read it as the file would be.
        lines = list(io.StringIO(text, newline=None))
    return lines


class LayerSink:
    """A ``BatchSink`` that parses the run's systrace as it is made; ``result`` after ``close``."""

    def __init__(self) -> None:
        self._text = _Text()
        self._writer = FtraceWriter(self._text, html=True)
        self._parser = StreamingParser()
        self._line_number = 0
        """Number of the last line fed (0: the ftrace block has not started)."""
        self._result: ParseResult | None = None
        self._problem: str | None = None

    def process(self, pid: int, name: str) -> None:
        """A process of the run (named in the systrace's process dump)."""
        self._writer.process(pid, name)

    def receive(self, events: Sequence[TraceEvent]) -> None:
        """Format ``events`` as systrace lines and feed them to the parser."""
        if not events:
            return  # the writer writes nothing either (not even its preamble)
        self._writer.receive(events)
        self._feed(self._text.take())

    def begin(self, ts_ns: int, thread: SimThread, name: str) -> None:
        """A section starts (one event: ``receive`` is what the tracer uses)."""
        self.receive(((ts_ns, thread, name, None),))

    def end(self, ts_ns: int, thread: SimThread) -> None:
        """A section ends."""
        self.receive(((ts_ns, thread, None, None),))

    def _feed(self, text: str) -> None:
        if not text:
            return
        lines = _lines(text)
        parser = self._parser
        if self._line_number:
            parser.feed(enumerate(lines, self._line_number + 1))
            self._line_number += len(lines)
            return
        # The first lines: the HTML head and the process dump, read as ``nnemu parse``
        # reads them, up to the ftrace block's first lines.
        source = FtraceLines(lines, on_ftrace=parser.set_process_names)
        parser.feed(source)
        self._line_number = source.last_line_number

    def close(self) -> None:
        """End the parse (the document's closing lines end the ftrace block: not fed)."""
        if self._result is not None:
            return
        self._writer.close()
        tail = self._text.take()
        if not self._line_number:
            self._feed(tail)  # no event at all: the whole document at once
        # The parser's own ending: its problem (no NNAPI marks) and its diagnostics' order.
        self._result = self._parser.finish(last_line_number=self._line_number)
        self._problem = self._parser.problem

    @property
    def result(self) -> ParseResult:
        """What ``parse_file`` returns for the run's systrace (after ``close``; no runs when
        there is a ``problem``)."""
        if self._result is None:
            raise ValueError("the run's systrace is not finished")
        return self._result

    @property
    def problem(self) -> str | None:
        """Why the trace is not usable (what ``parse_file`` raises), after ``close``."""
        return self._problem
