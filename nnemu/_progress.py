"""Progress bars on stderr: ``Progress`` for reading big input files (bytes read / total,
rate and ETA), ``CountProgress`` for items finished out of a total (``nnemu sweep``'s variants).

Shown only when the stream is a terminal (and, for ``Progress``, the file is over
``MIN_BYTES``); elsewhere (tests, pipes, files) a bar does nothing and ``lines`` hands
back the stream itself, so the readers' hot loops pay nothing.  Standard library only:
the loaders that use it (``nnemu parse``, ``query``, ``replay``) import nothing else heavy.

Usage::

    with open(path) as stream, Progress(path, stream, sys.stderr, label="loading") as bar:
        for line in bar.lines(stream):
            ...
        bar.stage("building indexes")  # a last step of no measured progress
        ...
"""

from __future__ import annotations

import io
import os
import time
from types import TracebackType
from typing import IO, Final, TextIO

MIN_BYTES: Final = 4 * 1024 * 1024
"""Files smaller than this get no bar (they load in well under a second)."""
_EVERY_LINES: Final = 8192
"""Lines between two looks at the clock."""
_INTERVAL_S: Final = 0.1
"""Shortest time between two redraws."""
_WIDTH: Final = 24
"""Characters of the bar itself."""


class _Watched(io.TextIOBase):
    """A text stream passing its lines through and updating a ``Progress`` every few."""

    def __init__(self, stream: TextIO, progress: Progress) -> None:
        super().__init__()
        self._stream = stream
        self._progress = progress
        self._countdown = _EVERY_LINES

    @property
    def name(self) -> str:
        """The file's name, as the wrapped stream has it."""
        return str(getattr(self._stream, "name", "<stream>"))

    def readable(self) -> bool:
        return True

    def readline(self, size: int | None = -1, /) -> str:  # type: ignore[override]
        line = self._stream.readline(-1 if size is None else size)
        self._countdown -= 1
        if not self._countdown:
            self._countdown = _EVERY_LINES
            self._progress.update()
        return line


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def _mb(n: float) -> str:
    return f"{n / 1e6:,.1f}"


def _duration(seconds: float) -> str:
    seconds = int(seconds + 0.5)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds // 60 % 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


def _bar(label: str, done: int, total: int, rate: float) -> tuple[str, str]:
    """``label [####----] 45%`` and the ETA at ``rate`` items a second (``--`` when unknown)."""
    fraction = min(1.0, done / total) if total > 0 else 1.0
    filled = int(fraction * _WIDTH)
    eta = _duration((total - done) / rate) if rate > 0 and done < total else "--"
    return f"{label} [{'#' * filled}{'-' * (_WIDTH - filled)}] {fraction:4.0%}", eta


def render(label: str, done: int, total: int, elapsed_s: float) -> str:
    """One line of the bar: ``label [####----] 45% 12.0/26.7 MB 8.1 MB/s ETA 2s``."""
    rate = done / elapsed_s if elapsed_s > 0 else 0.0
    bar, eta = _bar(label, done, total, rate)
    return f"{bar} {_mb(done)}/{_mb(total)} MB {rate / 1e6:,.1f} MB/s ETA {eta}"


class _Line:
    """The one terminal line a bar redraws in place (``\\r``, padded over a longer last one);
    a write that fails (the terminal went away) turns the bar off."""

    def __init__(self, out: TextIO | None, label: str) -> None:
        self.out = out
        self.label = label
        self.enabled = False
        self._start = time.monotonic()
        self._last_draw = 0.0
        self._drawn = 0

    def _draw(self, text: str) -> None:
        pad = " " * max(0, self._drawn - len(text))
        self._write(f"\r{text}{pad}")
        self._drawn = len(text)

    def clear(self) -> None:
        """Erase the bar (the line is left empty for what is printed next)."""
        if self._drawn:
            self._write("\r" + " " * self._drawn + "\r")
            self._drawn = 0

    def _write(self, text: str) -> None:
        if self.out is None:
            return
        try:
            self.out.write(text)
            self.out.flush()
        except (OSError, ValueError):
            self.enabled = False


class Progress(_Line):
    """Draws the reading progress of one open file on a terminal (see the module docstring).

    Args:
        path: The file being read (its size is the total).
        stream: The open file; its descriptor's offset is the bytes read.
        out: Where to draw; nothing is drawn unless it is a terminal (None: nowhere).
        label: Says what is going on (``loading trace.html``).
        min_bytes: No bar for smaller files (None: ``MIN_BYTES``).
    """

    def __init__(
        self,
        path: str,
        stream: IO[str] | IO[bytes],
        out: TextIO | None,
        *,
        label: str,
        min_bytes: int | None = None,
    ) -> None:
        super().__init__(out, label)
        self._fd = -1
        self.total = 0
        if out is None or not _is_tty(out):
            return
        try:
            self.total = os.path.getsize(path)
            self._fd = stream.fileno()
        except (OSError, ValueError, AttributeError):
            return
        self.enabled = self.total >= (MIN_BYTES if min_bytes is None else min_bytes)

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.clear()

    def lines(self, stream: TextIO) -> TextIO | io.TextIOBase:
        """``stream`` itself when no bar is shown, else a stream of the same lines that
        updates the bar (still a text stream: readers keep their bounded ``readline``)."""
        if not self.enabled:
            return stream
        return _Watched(stream, self)

    def update(self) -> None:
        """Redraw if the last drawing is older than ``_INTERVAL_S``."""
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last_draw < _INTERVAL_S:
            return
        self._last_draw = now
        try:
            done = os.lseek(self._fd, 0, os.SEEK_CUR)
        except OSError:
            return
        self._draw(render(self.label, done, self.total, now - self._start))

    def stage(self, text: str) -> None:
        """Replace the bar by ``label: text`` for a last step whose progress is not measured
        (``building indexes``): the bar would otherwise sit still at its last share."""
        if not self.enabled:
            return
        self._draw(f"{self.label}: {text}")


def render_count(
    label: str, done: int, total: int, failed: int, elapsed_s: float, already: int = 0
) -> str:
    """One line of a count bar: ``label [####----] 45% 540/1200 2 failed ETA 12s``
    (``already`` of the ``done`` were done before the clock started: not in the rate)."""
    rate = (done - already) / elapsed_s if elapsed_s > 0 else 0.0
    bar, eta = _bar(label, done, total, rate)
    return f"{bar} {done}/{total} {failed} failed ETA {eta}"


class CountProgress(_Line):
    """A bar of finished items out of a total (``nnemu sweep``'s variants), drawn on ``out``
    only when it is a terminal; ``advance`` redraws at most every ``_INTERVAL_S``."""

    def __init__(self, out: TextIO | None, *, label: str, total: int, already: int = 0) -> None:
        super().__init__(out, label)
        self.total = total
        self.already = already
        """Items done before this bar started (a resumed sweep's): counted, not in the rate."""
        self.done = already
        self.failed = 0
        self.enabled = out is not None and _is_tty(out) and total > 0

    def advance(self, done: int, failed: int = 0) -> None:
        """Count ``done`` more items, ``failed`` of them failures, and redraw if due."""
        self.done += done
        self.failed += failed
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last_draw < _INTERVAL_S and self.done < self.total:
            return
        self._last_draw = now
        self._draw(
            render_count(
                self.label, self.done, self.total, self.failed, now - self._start, self.already
            )
        )
