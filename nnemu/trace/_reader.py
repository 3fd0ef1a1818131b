"""The one trace reader: a file's format told once, its events from that format's module.

``TraceEvents(path)`` tells the format (``file_format``; refused with ``refuse_unreadable``)
and ``events()`` gives the file's canonical events (``nnemu.trace._events``) from the module
of its format: ``_ftrace`` for systrace HTML and ftrace text, ``_chrome`` for Chrome JSON,
``_perfetto`` for a Perfetto protobuf trace (``perfetto_event_batches``: from its decoded
packets, no text; its flows and counter tracks: ``_pftrack``).  A new format is a
``TraceFormat`` member, a module that yields the events, and a branch in ``events``.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Generator, Iterable, Iterator
from typing import Final, TextIO

from nnemu._progress import Progress
from nnemu.trace._chrome import NotLineJson, chrome_document_events, chrome_events, json_line_events
from nnemu.trace._detect import TraceFormat, file_format, refuse_unreadable
from nnemu.trace._events import RESTART, Event
from nnemu.trace._ftrace import DumpEvents, RowSink, feed_rows, one_line_blocks, row_batches
from nnemu.trace._html import FtraceLines
from nnemu.trace._rows import time_ordered


class TraceEvents:
    """A trace file whose format is told once, read for its events (each reading anew).

    Raises (``__init__``):
        TraceFormatError: ``path`` is ``-``, or a format no reader reads (compressed,
            binary) or a file with no trace (``refuse_unreadable``).
        OSError: The file cannot be read.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        progress: TextIO | None = None,
        label: str = "reading",
        strict_lines: bool = False,
        slices_only: bool = False,
        keep_bar: bool = False,
    ) -> None:
        self.path = os.fspath(path)
        self.kind = file_format(self.path)
        """The file's format."""
        refuse_unreadable(self.path, self.kind)
        self.progress = progress
        """Where a progress bar is drawn (a terminal) while a text or JSON file is read."""
        self.label = f"{label} {os.path.basename(self.path)}"
        self.strict_lines = strict_lines
        """A JSON file is read one event per line only if it is exactly that
        (``json_line_events``' ``strict``)."""
        self.slices_only = slices_only
        """Only slices, names and problems are wanted (no ``COUNTER`` or ``FLOW`` event): a
        Perfetto trace's flow ids and extra counter values are then not even decoded."""
        self.keep_bar = keep_bar
        """The progress bar of a JSON or text file's reading in file order is left drawn when
        it ends (``bar``: the caller shows a last stage on it, then ``clear_bar``)."""
        self.bar: Progress | None = None
        """The progress bar of the last reading in file order of a JSON or text file
        (``keep_bar``)."""
        self.last_line = 0
        """The last reading's line of its last JSON event (0: none, or not JSON)."""
        self.lines: FtraceLines | None = None
        """The last reading's ``FtraceLines`` (text traces): whether it found
        ftrace, was HTML, was cut short, and its last line."""

    def clear_bar(self) -> None:
        """Erase the progress bar left drawn (``keep_bar``), if any."""
        if self.bar is not None:
            self.bar.clear()

    def events(self, *, in_time_order: bool = False) -> Iterator[Event]:
        """The file's events, read from its start (``batches``, one at a time)."""
        return itertools.chain.from_iterable(self.batches(in_time_order=in_time_order))

    def batches(self, *, in_time_order: bool = False) -> Iterator[list[Event]]:
        """The file's events, read from its start, in lists (a reader's loop over a list
        costs less per event than a generator's).

        A text trace's rows come in file order, or ``in_time_order`` (``time_ordered``: as
        Perfetto's trace processor matches them), what is wrong with a row as a ``PROBLEM``
        before its events (``row_batches``' ``problems``); a JSON file's events in file
        order (one event per line streamed; else, after a ``RESTART``, the document's); a
        Perfetto trace's in time order, each placed at the byte offset of its packet (its
        problems as ``PROBLEM`` events).

        Raises:
            TraceFormatError: A JSON document that is not a trace; a Perfetto trace whose
                first packet cannot be read.
        """
        if self.kind is TraceFormat.PERFETTO:
            return self._perfetto_batches()
        if self.kind is TraceFormat.JSON:
            return self._json_batches()
        return self._text_batches(in_time_order)

    def _perfetto_batches(self) -> Iterator[list[Event]]:
        from nnemu.trace._perfetto import perfetto_event_batches

        return perfetto_event_batches(self.path, slices_only=self.slices_only)

    def feed(self, sink: RowSink, *, in_time_order: bool = False) -> None:
        """Give the file's events, read from its start, to ``sink`` (``RowSink``): those
        ``batches`` gives, in the same order, a text trace's usual rows as ``sink.row`` calls
        (``feed_rows``: no tuple per row), every other event as ``sink.event``.

        Raises:
            TraceFormatError: As ``batches``.
        """
        if self.kind in (TraceFormat.PERFETTO, TraceFormat.JSON):
            for batch in self.batches(in_time_order=in_time_order):
                for event in batch:
                    sink.event(event)
            return
        with self._text_blocks(in_time_order) as (blocks, dumps):
            feed_rows(blocks, sink, dumps, problems=True)

    def _text_batches(self, in_time_order: bool) -> Iterator[list[Event]]:
        with self._text_blocks(in_time_order) as (blocks, dumps):
            yield from row_batches(blocks, dumps, problems=True)

    @contextlib.contextmanager
    def _text_blocks(
        self, in_time_order: bool
    ) -> Iterator[tuple[Iterable[tuple[int, list[str]]], DumpEvents]]:
        """The blocks of a text trace's lines (``FtraceLines.blocks``; ``in_time_order``: its
        rows one a block, ``time_ordered``) and the ``DumpEvents`` of its process dump, the
        file open within (and its progress bar drawn, a reading in file order: kept drawn
        after it with ``keep_bar``)."""
        dumps = DumpEvents()
        with open(self.path, encoding="utf-8", errors="replace") as handle:
            if in_time_order:
                self.lines = FtraceLines(handle, on_dump=dumps)
                yield one_line_blocks(time_ordered(self.lines)), dumps
                return
            bar = self.bar = Progress(self.path, handle, self.progress, label=self.label)
            try:
                self.lines = FtraceLines(bar.lines(handle), on_dump=dumps)
                yield self.lines.blocks(), dumps
            finally:
                if not self.keep_bar:
                    bar.clear()

    def _json_batches(self) -> Iterator[list[Event]]:
        """A JSON file's events in lists; a ``RESTART`` is a list of its own (a reader that
        stops at it goes on with the next list)."""
        with open(self.path, encoding="utf-8", errors="replace") as handle:
            # One event per line (as nnemu and Chrome write it) is streamed; anything
            # else is parsed as one document (in memory).
            bar = self.bar = Progress(self.path, handle, self.progress, label=self.label)
            try:
                lines = json_line_events(bar.lines(handle), strict=self.strict_lines)
                yield from _chunks(self._last_line_of(chrome_events(lines)))
                return
            except NotLineJson:
                pass
            finally:
                if not self.keep_bar:
                    bar.clear()
            yield [(RESTART, 0, 0, 0, 0, "", None)]
            handle.seek(0)
            document = chrome_document_events(self.path, handle.read())
        yield from _chunks(self._last_line_of(document))

    def _last_line_of(self, events: Generator[Event, None, int]) -> Iterator[Event]:
        """``events``, keeping the line they end on in ``last_line``."""
        self.last_line = yield from events


_CHUNK: Final = 4096
"""Events per list of a reader that yields them one at a time."""


def _chunks(events: Iterator[Event]) -> Iterator[list[Event]]:
    """``events`` in lists of ``_CHUNK``."""
    while chunk := list(itertools.islice(events, _CHUNK)):
        yield chunk
