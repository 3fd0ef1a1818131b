"""Tail quantiles over too few executions: where a p95 or p99 is only the slowest execution.

The report's latency quantiles are nearest rank (``nnemu.app.LatencyHistogram.quantile_us``):
the q quantile of n latencies is the ceil(q n)-th smallest, which is the n-th, the slowest,
while q n > n - 1, that is while n < 1 / (1 - q).  So the p95 of fewer than 20 executions
and the p99 of fewer than 100 are the slowest execution (at exactly 20 and 100 they are the
second slowest), not an estimate of a tail.  The human-readable tables (``nnemu run``'s and
``nnemu replay``'s summaries, ``--replications``, ``--html``, ``nnemu compare``, a sweep's
summary.txt; ``--plot`` draws an open marker) mark such a cell with ``*`` and explain it in
one footnote line; JSON reports keep their numbers (an
app's ``completed`` is the sample count).  Standard library only: ``nnemu compare`` uses it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from nnemu._text import right

TAIL_MIN: Final = {"p95": 20, "p99": 100}
"""Per quantile, the fewest executions over which its nearest rank is not the slowest."""

MARK: Final = "*"
"""What follows a marked cell."""


def slowest_only(quantile: str, completed: int) -> bool:
    """Whether ``quantile`` (``p50``, ``p95``, ``p99``, ...) over ``completed`` executions is
    just the slowest of them: a p95 over 1-19 executions or a p99 over 1-99 (none: no figure)."""
    least = TAIL_MIN.get(quantile)
    return least is not None and 0 < completed < least


def footnote(quantiles: Iterable[str], where: str = "") -> str:
    """The footnote line for the marked ``quantiles`` (those of ``TAIL_MIN``, in its order);
    ``where`` follows the counts (`` in some replication``)."""
    marked = set(quantiles)
    parts = [f"{q} over fewer than {least}" for q, least in TAIL_MIN.items() if q in marked]
    if not parts:
        return ""
    parts[0] += " executions"
    return f"{MARK} {', '.join(parts)}{where}: the slowest execution, not a tail estimate"


def marked_cells(cells: Sequence[tuple[str, int, bool]]) -> tuple[str, int]:
    """Right-aligned cells ``(text, width, marked)``, a marked one followed by ``MARK`` in the
    first column of what comes after it, so the numbers stay aligned with unmarked rows.

    Returns the text and how many columns the last mark took from what follows (0 or 1).
    """
    text, carry = "", 0
    for cell, width, marked in cells:
        text += right(cell, width - carry)
        carry = 0
        if marked:
            text += MARK
            carry = 1
    return text, carry


__all__ = ["MARK", "TAIL_MIN", "footnote", "marked_cells", "slowest_only"]
