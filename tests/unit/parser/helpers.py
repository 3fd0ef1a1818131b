"""Parsing hand-written traces in the parser's unit tests; import it as ``tests.unit.parser.helpers``.

A trace is written as rows ``(ms, tid, tgid, payload)``; ``ftrace_text`` renders
them (``make_trace`` in conftest.py hands it to a test), ``parse_rows`` parses
them and ``only_run`` returns the single run of a trace that must parse cleanly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nnemu.parser import NEGATIVE_BY_CONTRACT, Diagnostic, ParseResult, RunStats, parse_lines

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


def parse_rows(rows: Sequence[Row], **options: Any) -> ParseResult:
    """Parse the rows' ftrace text with ``parse_lines``' options."""
    return parse_lines(ftrace_text(rows).splitlines(), **options)


def only_run(rows: Sequence[Row]) -> RunStats:
    """The one run of rows that must parse without a diagnostic (but for a negative self
    time the contract's own rules give: ``contract_problems``)."""
    result = parse_rows(rows)
    assert contract_problems(result) == []
    (run,) = result.runs
    return run


def contract_problems(result: ParseResult) -> list[Diagnostic]:
    """``result``'s diagnostics less the negative self times of lower layers that the
    contract's own rules give (a callee's work outlasting its call: Android's figures)."""
    return [d for d in result.diagnostics if not d.message.endswith(NEGATIVE_BY_CONTRACT)]
