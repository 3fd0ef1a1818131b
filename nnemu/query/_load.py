"""``load_trace``: a trace file into the query tables, each format read by its loader (text
rows: ``Loader``; JSON: ``JsonLoader``; Perfetto: ``EventLoader``, of the canonical events
``nnemu.trace.TraceEvents`` gives), read again in time order when its rows
are out of it, with its warnings held, sorted and given below the progress bar.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Mapping
from typing import Final, TextIO

from nnemu._progress import Progress
from nnemu._text import counted
from nnemu.errors import TraceFormatError
from nnemu.query._event_loader import EventLoader
from nnemu.query._json_loader import JsonLoader
from nnemu.query._loader import Loader, Warn, byte_place
from nnemu.query._perfetto_tables import RESET_TABLES
from nnemu.query._schema import create_tables
from nnemu.query._summary import LoadSummary
from nnemu.trace import (
    MAX_ABS_NS,
    MAX_SORTED_BYTES,
    NOT_CHROME_TRACE,
    NotLineJson,
    TraceEvents,
    TraceFormat,
    event_lines,
    file_format,
    json_line_events,
    json_problem,
    out_of_order_warning,
    refuse_unreadable,
    system_text,
)

_BULK_LOAD_PRAGMAS: Final = (
    "PRAGMA page_size = 16384",
    "PRAGMA journal_mode = OFF",
    "PRAGMA synchronous = OFF",
    "PRAGMA cache_size = -32768",
)
"""A fresh database being filled: 16 KiB pages (a load is ~5% cheaper than with the default
4 KiB: fewer page splits), no rollback journal, no fsync, a 32 MB page cache."""


def _sniff(path: str) -> str:
    """``json`` for a Chrome JSON trace, ``perfetto`` for a Perfetto protobuf trace,
    ``ftrace`` for systrace HTML or ftrace text.

    Raises:
        TraceFormatError: the file is compressed or binary.
    """
    kind = file_format(path)
    refuse_unreadable(path, kind)
    return {TraceFormat.JSON: "json", TraceFormat.PERFETTO: "perfetto"}.get(kind, "ftrace")


def _reset(conn: sqlite3.Connection) -> None:
    for table in ("slice", "args", "thread_track", "thread", "process", *RESET_TABLES):
        conn.execute(f"DELETE FROM {table}")


def load_trace(
    path: str, conn: sqlite3.Connection, warn: Warn, *, progress: TextIO | None = None
) -> LoadSummary:
    """Create the query tables in ``conn`` and load the trace at ``path``.

    The load is one transaction with SQLite's journal and syncing off (``conn`` is
    a fresh database: a failed load leaves nothing worth keeping), indexes last.

    Args:
        path: systrace ``.html``, ftrace text, Chrome/nnemu ``.json``, or a Perfetto
            protobuf trace (``.perfetto-trace``, ``.pftrace``, plain or gzip).
        conn: An empty database.
        warn: Called with (line number, message) for each recoverable problem.
        progress: Where to draw a progress bar (only if a terminal, for big files).

    Returns:
        What was loaded.

    Raises:
        TraceFormatError: Nothing to load (no ftrace data, no slices, invalid JSON).
        OSError: The file cannot be read.
    """
    source = os.fspath(path)
    for pragma in _BULK_LOAD_PRAGMAS:
        conn.execute(pragma)
    create_tables(conn)
    kind = _sniff(source)
    # Each warning erases the progress bar first: a line of its own, not glued to the bar.
    shown = _BelowBar(warn)
    # A text or JSON trace small enough to be read again in time order (rows out of it)
    # holds its warnings until the load ends: those of the reading that counts, then the
    # load's own, all sorted by line as parse sorts its diagnostics; a bigger one (read
    # once) gives them as it reads.
    small = kind != "perfetto" and os.path.getsize(source) <= MAX_SORTED_BYTES
    held = _HeldWarn(shown) if small else None
    out: Warn = shown if held is None else held
    try:
        summary = _load(source, kind, conn, out, held, shown, progress)
    except TraceFormatError:
        if held is not None:
            held.release()
        raise
    if held is not None:
        held.release()
    return summary


def _load(
    source: str,
    kind: str,
    conn: sqlite3.Connection,
    warn: Warn,
    held: _HeldWarn | None,
    shown: _BelowBar,
    progress: TextIO | None,
) -> LoadSummary:
    """``load_trace`` of a trace of ``kind``, its warnings to ``warn`` (``held``: they are
    held, and a trace read again in time order drops those of its first reading)."""
    loader = Loader(conn, warn)
    last_line = 0
    label = f"loading {os.path.basename(source)}"
    with contextlib.ExitStack() as cleanup:
        # The bar is kept through finish() (the last rows and the indexes), shown as a stage.
        bar: Progress | None = None
        if kind == "json":
            stream = cleanup.enter_context(open(source, encoding="utf-8", errors="replace"))
            bar = cleanup.enter_context(Progress(source, stream, progress, label=label))
            shown.bar = bar
            loader = _load_json(source, stream, bar, conn, warn, held)
        elif kind == "perfetto":
            # Events of packets: each is placed by its packet's byte offset.
            events = EventLoader(conn, warn)
            events.load_events(TraceEvents(source).batches(), byte_place)
            events.first_out_of_order = 0  # a warning of the whole file
            loader = events
        else:
            stream = cleanup.enter_context(open(source, encoding="utf-8", errors="replace"))
            bar = cleanup.enter_context(Progress(source, stream, progress, label=label))
            shown.bar = bar
            lines = loader.load_ftrace(bar.lines(stream))
            last_line = lines.last_line_number
            if not lines.found_ftrace:
                raise TraceFormatError(
                    source,
                    last_line,
                    "",
                    "no ftrace data found (expected a systrace HTML trace-data block"
                    " starting with '# tracer:', ftrace text, or a JSON trace)",
                )
            kind = "systrace" if lines.is_html else "ftrace"
            if held is not None and loader.out_of_order:
                # Matched again in time order, as Perfetto matches them; the warnings are
                # those of that reading.
                _reset(conn)
                held.discard()
                first_reading = loader
                loader = Loader(conn, warn)
                stream.seek(0)
                loader.load_in_time_order(stream)
                loader.read_again_after(first_reading)
        if bar is not None:
            bar.stage("file read; building indexes")
        threads, processes = loader.finish()
    shown.bar = None
    if loader.slices == 0:
        raise TraceFormatError(
            source,
            last_line,
            "",
            "no slices found (tracing_mark_write B/E rows, or JSON B/E/X events)",
        )
    if loader.out_of_order:
        warning = out_of_order_warning(loader.out_of_order, sorted_again=loader.time_sorted)
        warn(loader.first_out_of_order, warning)
    if loader.open_slices:
        warn(
            last_line,
            f"{counted(loader.open_slices, 'section')} still open at the end of the trace (dur = -1)",
        )
    return LoadSummary(
        source=source,
        format=kind,
        slices=loader.slices,
        open_slices=loader.open_slices,
        unmatched_ends=loader.unmatched_ends,
        out_of_order=loader.out_of_order,
        threads=threads,
        processes=processes,
    )


def _load_json(
    source: str,
    stream: TextIO,
    bar: Progress,
    conn: sqlite3.Connection,
    warn: Warn,
    held: _HeldWarn | None,
) -> JsonLoader:
    """Load a JSON trace: one event per line, streamed, else as one document; read again in
    time order when its events are out of it and its warnings are ``held``."""
    counting = _CountedWarn(warn)
    loader = JsonLoader(conn, counting)
    one_a_line = True
    try:
        loader.load_json_lines(bar.lines(stream))
    except NotLineJson:
        _reset(conn)
        stream.seek(0)
        one_a_line = False
        # The document's events are the same, in the same order, on the same lines:
        # the warnings the line pass gave already are not given again.
        loader = _load_json_document(source, stream, conn, _CountedWarn(warn, skip=counting.count))
    if held is not None and loader.out_of_order:
        # Matched again in time order, as Perfetto matches them; the warnings are
        # those of that reading.
        _reset(conn)
        held.discard()
        first_reading = loader
        stream.seek(0)
        if one_a_line:
            loader = JsonLoader(conn, warn)
            loader.load_json_in_time_order(json_line_events(stream), store_line=True)
        else:
            loader = _load_json_document(source, stream, conn, warn, in_time_order=True)
        loader.read_again_after(first_reading)
    return loader


def _load_json_document(
    source: str,
    stream: TextIO,
    conn: sqlite3.Connection,
    warn: Warn,
    *,
    in_time_order: bool = False,
) -> JsonLoader:
    """Read a JSON trace as one document (an event array or ``{"traceEvents": [...]}``),
    its events in file order or ``in_time_order`` (``Loader.load_json_in_time_order``).

    Raises:
        TraceFormatError: Not JSON, or no list of events, as parse and replay say it.
    """
    text = stream.read()
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as err:  # ValueError: also an int of > 4300 digits
        line, message = json_problem(err)
        raise TraceFormatError(source, line, "", message) from None
    loader = JsonLoader(conn, warn)
    # Chrome JSON can carry the systrace text of the same capture: its rows are read where
    # the text is in the file (before or after the events) and placed on its file line.
    embedded = system_text(text, document)
    events = document.get("traceEvents") if isinstance(document, Mapping) else document
    if events is None and embedded is not None:
        events = []
    if not isinstance(events, list):
        raise TraceFormatError(source, 1, "", NOT_CHROME_TRACE)
    # Each event's file line places its warnings (as parse places them); a document's
    # slices keep line NULL (its lines are not one event each).
    lines = event_lines(text, document, len(events))
    del text
    rows = loader.system_rows(embedded) if embedded is not None else []
    first = embedded is None or embedded.first
    if in_time_order:
        loader.load_json_in_time_order(
            (
                (None if lines is None else lines[index], event)
                for index, event in enumerate(events)
            ),
            store_line=False,
            rows=rows,
            rows_first=first,
        )
        return loader
    if first:
        for row_line, row in rows:
            loader._slow_row(row_line, row)
    for index, event in enumerate(events):
        loader.json_event(event, None if lines is None else lines[index], store_line=False)
    if not first:
        for row_line, row in rows:
            loader._slow_row(row_line, row)
    return loader


class _HeldWarn:
    """A ``Warn`` that keeps the warnings until ``release`` passes them on, by line."""

    def __init__(self, warn: Warn) -> None:
        self.warn = warn
        self.held: list[tuple[int, str]] = []

    def __call__(self, where: int, message: str) -> None:
        self.held.append((where, message))

    def discard(self) -> None:
        """Forget the warnings held (those of a reading done again)."""
        self.held.clear()

    def release(self) -> None:
        """Pass the warnings held on to the ``Warn`` given, sorted by line (in the order
        given on one line; a warning of no line, ``0``, last)."""
        for where, message in sorted(self.held, key=_place):
            self.warn(where, message)
        self.held.clear()


def _place(item: tuple[int, str]) -> int:
    return item[0] if item[0] > 0 else MAX_ABS_NS


class _BelowBar:
    """A ``Warn`` that erases the progress bar (when one is drawn) before each warning, so
    that the warning is a line of its own; the bar is drawn again at its next update."""

    def __init__(self, warn: Warn) -> None:
        self.warn = warn
        self.bar: Progress | None = None

    def __call__(self, where: int, message: str) -> None:
        if self.bar is not None:
            self.bar.clear()
        self.warn(where, message)


class _CountedWarn:
    """A ``Warn`` that counts the warnings and passes them on, but for the first ``skip``."""

    def __init__(self, warn: Warn, *, skip: int = 0) -> None:
        self.warn = warn
        self.skip = skip
        self.count = 0

    def __call__(self, where: int, message: str) -> None:
        self.count += 1
        if self.count > self.skip:
            self.warn(where, message)
