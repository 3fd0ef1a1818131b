"""``load_trace``: a trace file into the query tables, each format's canonical events
(``nnemu.trace.TraceEvents``) read by its loader (systrace and ftrace text: ``Loader``, fed
its rows, ``TraceEvents.feed``; JSON: ``JsonLoader``; Perfetto: ``EventLoader``), read again
in time order when its rows are out of it, with its warnings held, sorted and given below
the progress bar.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sqlite3
from collections.abc import Iterator
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
    TRUNCATED_HTML,
    TraceEvents,
    TraceFormat,
    file_format,
    out_of_order_warning,
    refuse_unreadable,
    time_ordered_events,
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
        with collector_paused():
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
    loader: Loader
    last_line = 0
    with contextlib.ExitStack() as cleanup:
        # The bar is kept through finish() (the last rows and the indexes), shown as a stage.
        bar: Progress | None = None
        if kind == "json":
            trace = TraceEvents(source, progress=progress, label="loading", keep_bar=True)
            cleanup.callback(trace.clear_bar)
            shown.source = trace
            loader = _load_json(trace, conn, warn, held)
            bar = trace.bar
        elif kind == "perfetto":
            # Events of packets: each is placed by its packet's byte offset.
            events = EventLoader(conn, warn)
            events.load_events(TraceEvents(source).batches(), byte_place)
            events.first_out_of_order = 0  # a warning of the whole file
            loader = events
        else:
            trace = TraceEvents(source, progress=progress, label="loading", keep_bar=True)
            cleanup.callback(trace.clear_bar)
            shown.source = trace
            loader, last_line, kind = _load_text(trace, conn, warn, held)
            bar = trace.bar
        if bar is not None:
            bar.stage("file read; building indexes")
        threads, processes = loader.finish()
    shown.bar = None
    shown.source = None
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


def _load_text(
    trace: TraceEvents, conn: sqlite3.Connection, warn: Warn, held: _HeldWarn | None
) -> tuple[Loader, int, str]:
    """Load systrace HTML or ftrace text (its rows fed to ``Loader.load_text``, each slice on
    its line); read again in time order when its rows are out of it and its warnings are
    ``held``.

    Returns:
        The loader, the file's last line, and ``systrace`` or ``ftrace``.

    Raises:
        TraceFormatError: No ftrace data in the file.
    """
    loader = Loader(conn, warn)
    loader.load_text(trace)
    lines = trace.lines
    assert lines is not None
    if lines.truncated:
        warn(lines.last_line_number, TRUNCATED_HTML)
    if not lines.found_ftrace:
        raise TraceFormatError(
            trace.path,
            lines.last_line_number,
            "",
            "no ftrace data found (expected a systrace HTML trace-data block"
            " starting with '# tracer:', ftrace text, or a JSON trace)",
        )
    if held is not None and loader.out_of_order:
        # Matched again in time order, as Perfetto matches them; the warnings are those of
        # that reading.
        _reset(conn)
        held.discard()
        first_reading = loader
        loader = Loader(conn, warn)
        loader.load_text(trace, in_time_order=True)
        if lines.truncated:
            warn(lines.last_line_number, TRUNCATED_HTML)
        loader.read_again_after(first_reading)
    return loader, lines.last_line_number, "systrace" if lines.is_html else "ftrace"


def _load_json(
    trace: TraceEvents, conn: sqlite3.Connection, warn: Warn, held: _HeldWarn | None
) -> JsonLoader:
    """Load a JSON trace's events (one event per line, streamed, else after a ``RESTART``
    the document's); read again in time order when they are out of it and its warnings
    are ``held``."""
    counting = _CountedWarn(warn)
    loader = JsonLoader(conn, counting)
    batches = trace.batches()
    one_a_line = loader.load_json(batches, store_line=True)
    if not one_a_line:
        _reset(conn)
        # The document's events are the same, in the same order, on the same lines:
        # the warnings the line pass gave already are not given again.  Its slices keep
        # line NULL (its lines are not one event each).
        loader = JsonLoader(conn, _CountedWarn(warn, skip=counting.count))
        loader.load_json(batches, store_line=False)
    if held is not None and loader.out_of_order:
        # Matched again in time order, as Perfetto matches them; the warnings are
        # those of that reading.
        _reset(conn)
        held.discard()
        first_reading = loader
        loader = JsonLoader(conn, warn)
        again = TraceEvents(trace.path)
        loader.load_json([time_ordered_events(again.events())], store_line=one_a_line)
        loader.read_again_after(first_reading)
    return loader


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off within (as it was after).

    A load makes millions of tuples and lists, and keeps hundreds of thousands alive at once
    (open slices, rows waiting for their ``INSERT``, records waiting to be put in time
    order), none of them in a cycle: the collector's passes over them found nothing and
    cost a tenth of a Perfetto trace's load (bench/README.md, ``bench_perfetto.py``).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


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
    """A ``Warn`` that erases the progress bar (when one is drawn: ``bar``, or the one of
    ``source``'s reading) before each warning, so that the warning is a line of its own;
    the bar is drawn again at its next update."""

    def __init__(self, warn: Warn) -> None:
        self.warn = warn
        self.bar: Progress | None = None
        self.source: TraceEvents | None = None

    def __call__(self, where: int, message: str) -> None:
        bar = self.bar if self.source is None else self.source.bar
        if bar is not None:
            bar.clear()
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
