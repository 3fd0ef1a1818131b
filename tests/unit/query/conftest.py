"""Fixtures for query tests: small hand-written ftrace files."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

# (µs after t0, task, tid, tgid, payload); payload "E" becomes E|tgid.
Row = tuple[int, str, int, int, str]
T0_US = 1_000_000_000


def ftrace_text(rows: Sequence[Row]) -> str:
    """Render rows as ftrace text with the TGID column, after a two-line header."""
    lines = ["# tracer: nop", "#"]
    for us, task, tid, tgid, payload in rows:
        text = f"E|{tgid}" if payload == "E" else f"B|{tgid}|{payload}"
        seconds, micros = divmod(T0_US + us, 1_000_000)
        lines.append(
            f"{task:>16}-{tid:<5} ({tgid:>5}) [001] ...1 {seconds}.{micros:06d}:"
            f" tracing_mark_write: {text}"
        )
    return "\n".join(lines) + "\n"


@pytest.fixture(name="write_trace")
def _write_trace(tmp_path: Path) -> Callable[[Sequence[Row]], Path]:
    """Return a function that writes rows as an ftrace text file and gives its path."""

    def write(rows: Sequence[Row], name: str = "t.txt") -> Path:
        path = tmp_path / name
        path.write_text(ftrace_text(rows))
        return path

    return write
