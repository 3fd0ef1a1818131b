"""What a trace file is, and the one place that opens a trace by its format.

``detect_format`` tells a file's format by its first bytes; ``open_trace``
opens a path and gives its rows, dispatching on that format (for the parser, which
reads rows); ``TraceEvents`` (``_reader``) gives a file's canonical events.  A new
format gets a ``TraceFormat`` member, a test in ``detect_format``, a module that yields
its events (a branch in ``TraceEvents.events``) and, while the parser reads rows, a
branch in ``open_trace`` that turns it into rows.  A Perfetto protobuf trace (plain or
gzip-compressed) is told by its content: binary bytes that walk as
``Trace.packet`` records (``looks_like_perfetto``).  A file short enough to be read whole
by ``detect_format`` is also told by what it holds: nothing (blank, or a JSON trace whose
list of events is empty: ``EMPTY``), or a bare JSON value (``JSON``, so that every reader
says it is not a Chrome trace).
"""

from __future__ import annotations

import contextlib
import enum
import json
import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Final, TextIO, TypeGuard

from nnemu.errors import TraceFormatError
from nnemu.trace._pbwire import SUFFIXES, gunzip_head, looks_like_perfetto

if TYPE_CHECKING:
    from nnemu.trace._perfetto import PerfettoLines

HEAD_BYTES: Final = 8192
"""How much of a file ``detect_format`` is given by ``open_trace``."""
_TEXT_WINDOW: Final = 4096
GZIP_MAGIC: Final = b"\x1f\x8b"
_ARCHIVE_MAGICS: Final = (b"PK\x03\x04", b"BZh", b"\xfd7zXZ", b"\x28\xb5\x2f\xfd")
"""zip, bzip2, xz, zstd."""


class TraceFormat(enum.Enum):
    """A file's format, as its first bytes tell it."""

    GZIP = "gzip"
    ARCHIVE = "archive"
    """zip, bzip2, xz or zstd."""
    PERFETTO = "perfetto"
    """A Perfetto protobuf trace, plain or gzip-compressed."""
    BINARY = "binary"
    """Not text, and not a Perfetto protobuf trace."""
    JSON = "json"
    """Chrome trace-event JSON (first non-blank character ``{`` or ``[``), or a short file
    that is one bare JSON value (a number, a string, ``null``, ``true``: not a trace)."""
    EMPTY = "empty"
    """No trace in it: a short file that is blank, or a JSON trace with no events."""
    TEXT = "text"
    """Systrace HTML or ftrace text."""


NO_TRACE_EVENTS: Final = (
    "no trace events: the file is blank, or a JSON trace whose list of events is empty"
)
"""What every reader says of an ``EMPTY`` file (``FILE: error: ...``)."""
_BLANK: Final = b"\xef\xbb\xbf \t\r\n"
"""A BOM and the whitespace around a JSON document or text."""

_UNREADABLE: Final = {
    TraceFormat.EMPTY: NO_TRACE_EVENTS,
    TraceFormat.GZIP: "the file is gzip-compressed; decompress it first (gunzip -k)",
    TraceFormat.ARCHIVE: "the file is a compressed archive; extract the trace from it first",
    TraceFormat.BINARY: "the file is binary and not a Perfetto protobuf trace, systrace HTML,"
    " ftrace text or Chrome JSON trace",
}


def detect_format(head: bytes) -> TraceFormat:
    """What a file's first bytes (``HEAD_BYTES`` of them, or all of a shorter file) say it is."""
    if head.startswith(GZIP_MAGIC):
        inner = gunzip_head(head, HEAD_BYTES)
        if inner and looks_like_perfetto(inner, binary=_binary(inner)):
            return TraceFormat.PERFETTO
        return TraceFormat.GZIP
    if head.startswith(_ARCHIVE_MAGICS):
        return TraceFormat.ARCHIVE
    binary = _binary(head)
    if head[:1] == b"\n" and looks_like_perfetto(head, binary=binary):
        return TraceFormat.PERFETTO
    if binary:
        return TraceFormat.BINARY
    if len(head) < HEAD_BYTES:  # the whole file
        whole = _whole_document(head)
        if whole is not None:
            return whole
    if head.lstrip(_BLANK)[:1] in (b"{", b"["):
        return TraceFormat.JSON
    return TraceFormat.TEXT


def _whole_document(text: bytes) -> TraceFormat | None:
    """``EMPTY`` or ``JSON`` for a whole (short) file that holds no trace: blank, a JSON
    trace with no events (``[]``, ``{"traceEvents": []}`` without ``systemTraceEvents``),
    or a bare JSON value; None otherwise (the first bytes tell)."""
    stripped = text.strip(_BLANK)
    if not stripped:
        return TraceFormat.EMPTY
    if stripped[:1] not in b'{["-0123456789tfn' or stripped[-1:] not in b'}]"el0123456789':
        return None  # not one JSON value (text, HTML)
    try:
        document = json.loads(stripped)
    except (ValueError, RecursionError):  # also an int of > 4300 digits
        return None
    if document == [] or (
        isinstance(document, dict)
        and document.get("traceEvents") == []
        and "systemTraceEvents" not in document
    ):
        return TraceFormat.EMPTY
    if isinstance(document, dict | list):
        return None
    return TraceFormat.JSON


def _binary(head: bytes) -> bool:
    """Whether a file's first bytes are not text: a NUL, or not UTF-8."""
    window = head[:_TEXT_WINDOW]
    if b"\x00" in window:
        return True
    try:
        window.decode("utf-8")
    except UnicodeDecodeError as err:
        # A multi-byte character cut by the window is still text.
        if err.start < len(window) - 4:
            return True
    return False


STDIN_UNSUPPORTED: Final = "reading standard input is not supported; give a file"
"""What parse, query and replay say of the path ``-`` (exit 2)."""


def refuse_stdin(path: str) -> None:
    """Refuse the path ``-``, which reads as standard input to a user: the readers read a
    file (they need its size for a progress bar, seek a JSON file, read it more than once).

    Raises:
        TraceFormatError: ``path`` is ``-`` (``-: error: reading standard input is not
            supported; give a file``; ``./-`` names a file called ``-``).
    """
    if path == "-":
        raise TraceFormatError(path, 0, "", STDIN_UNSUPPORTED)


def file_format(path: str) -> TraceFormat:
    """``detect_format`` of the file at ``path`` (a Perfetto trace is also told by its name).

    Raises:
        TraceFormatError: ``path`` is ``-`` (``refuse_stdin``).
        OSError: The file cannot be read.
    """
    refuse_stdin(path)
    with open(path, "rb") as raw:
        head = raw.read(HEAD_BYTES)
    kind = detect_format(head)
    if (
        kind in (TraceFormat.TEXT, TraceFormat.BINARY)
        and path.removesuffix(".gz").endswith(SUFFIXES)
        and looks_like_perfetto(head)
    ):
        # Named as one, and its bytes walk as packets (a tiny trace can be all ASCII).
        return TraceFormat.PERFETTO
    return kind


def refuse_unreadable(path: str, kind: TraceFormat) -> None:
    """Raise ``TraceFormatError`` (line 0) for a format no reader reads (compressed or
    binary) or a file with nothing to read (``EMPTY``).

    Raises:
        TraceFormatError: ``kind`` is gzip, an archive, binary or empty.
    """
    message = _UNREADABLE.get(kind)
    if message is not None:
        raise TraceFormatError(path, 0, "", message)


def is_perfetto_lines(source: object) -> TypeGuard[PerfettoLines]:
    """Whether ``source`` (from ``open_trace``) is a Perfetto trace's ``PerfettoLines``.

    (Without importing the reader: if it was never imported, nothing is one.)
    """
    module = sys.modules.get("nnemu.trace._perfetto")
    return module is not None and isinstance(source, module.PerfettoLines)


@contextlib.contextmanager
def open_trace(path: str | os.PathLike[str]) -> Iterator[PerfettoLines | TextIO]:
    """Open a trace file and give its rows, whatever its format.

    Systrace HTML and ftrace text come as the open text stream (read its lines
    with ``FtraceLines``); a Perfetto protobuf trace as ``PerfettoLines``
    (ftrace rows, streamed as its packets are read).  Chrome JSON has no rows: read its
    events (``TraceEvents``).

    Raises:
        TraceFormatError: A format nnemu cannot read (compressed, binary, JSON; for a
            Perfetto trace, also while its rows are read: its first packet cannot be read).
        OSError: The file cannot be read.
    """
    name = os.fspath(path)
    kind = file_format(name)
    refuse_unreadable(name, kind)
    if kind is TraceFormat.PERFETTO:
        from nnemu.trace._perfetto import PerfettoLines

        yield PerfettoLines(name)
        return
    if kind is TraceFormat.JSON:
        raise TraceFormatError(name, 0, "", "a Chrome JSON trace has no rows: read its events")
    with open(name, encoding="utf-8", errors="replace") as stream:
        yield stream
