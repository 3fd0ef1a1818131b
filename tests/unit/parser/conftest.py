"""Fixtures for parser unit tests: build ftrace text from (ms, tid, tgid, payload) rows."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

Row = tuple[float, int, int, str]


def ftrace_text(rows: Sequence[Row]) -> str:
    """Render rows as ftrace text with the TGID column; payload "E" becomes E|tgid."""
    lines = ["# tracer: nop", "#"]
    for ms, tid, tgid, payload in rows:
        text = f"E|{tgid}" if payload == "E" else f"B|{tgid}|{payload}"
        ts_us = 1_000_000_000 + round(ms * 1000)
        seconds, micros = divmod(ts_us, 1_000_000)
        lines.append(
            f"{'task':>16}-{tid:<5} ({tgid:>5}) [001] ...1 {seconds}.{micros:06d}:"
            f" tracing_mark_write: {text}"
        )
    return "\n".join(lines) + "\n"


@pytest.fixture(name="make_trace")
def _make_trace() -> Callable[[Sequence[Row]], str]:
    """Return the function that renders rows as ftrace text."""
    return ftrace_text
