"""Joining an execution's attempts: the app retried it after a refusal.

nnemu's app layer holds a section named ``RETRY_MARK`` + the refused attempt's result code
(``nnemu::retry RESOURCE_EXHAUSTED_TRANSIENT``) open on the app's thread while it backs off
before the next attempt (docs/trace-contract.md).  Each attempt is an ``[NN_LA_PE]``
section of its own, so without the mark a retried execution counts as several, each as
long as one attempt.  With it, the ``[NN_LA_PE]`` section that ended last on the thread
before the mark began and the one that began first on it after the mark ended are attempts
of one execution: it arrived at its first attempt's begin and lasted to its last attempt's
end, as the run's report counts it (arrival to result, retries and backoffs included).
"""

from __future__ import annotations

import bisect
from array import array
from collections import Counter
from collections.abc import Sequence
from typing import Final

import attrs

from nnemu.app import RETRY_MARK

__all__ = ["RETRY_MARK", "Joined", "join_attempts"]

_NONE: Final = array("q")


@attrs.frozen
class Joined:
    """An app's executions once their attempts are joined."""

    arrivals_ns: list[int]
    """The begins of each execution's first attempt."""
    closed: array[int]
    """(first attempt's begin, tid, first begin -> last attempt's end) of each execution
    whose last attempt ended in the trace."""
    inside: array[int] | None
    """Compile time inside each row of ``closed`` (the attempts' summed), or None."""
    retried: int
    """Attempts after the first (the retry marks followed by an attempt)."""


def join_attempts(
    begins: Sequence[int],
    closed: array[int],
    inside: array[int] | None,
    marks: array[int],
    retry_begins: Sequence[int],
) -> Joined:
    """Join the attempts of each retried execution.

    ``begins``: every ``[NN_LA_PE]`` begin; ``closed``: (begin, tid, duration) of the closed
    ones, with ``inside`` aligned to its rows; ``marks``: (begin, tid, end) of the closed
    retry marks; ``retry_begins``: the ``[NN_LA_PE]`` begins that followed a retry mark on
    their thread (later attempts, not arrivals).  An execution whose retry mark has no
    closed attempt after it (the trace ended in its backoff or its next attempt) did not
    finish: it keeps no row in ``closed``.
    """
    rows = len(closed) // 3
    by_tid: dict[int, list[tuple[int, int]]] = {}
    for row in range(rows):
        by_tid.setdefault(closed[3 * row + 1], []).append((closed[3 * row], row))
    for entries in by_tid.values():
        entries.sort()
    follows: dict[int, int] = {}  # row -> the row of the attempt after it
    later: set[int] = set()  # rows that are not a first attempt
    unfinished: set[int] = set()  # rows whose execution's last attempt never closed
    for index in range(0, len(marks), 3):
        mark_begin, tid, mark_end = marks[index], marks[index + 1], marks[index + 2]
        entries = by_tid.get(tid, [])
        before = None
        at = bisect.bisect_right(entries, (mark_begin, rows))
        for _, row in reversed(entries[:at]):
            if closed[3 * row] + closed[3 * row + 2] <= mark_begin:
                before = row
                break
        after_at = bisect.bisect_left(entries, (mark_end, -1))
        after = entries[after_at][1] if after_at < len(entries) else None
        if before is None:
            continue
        if after is None:
            unfinished.add(before)
        else:
            follows[before] = after
            later.add(after)
    out = array("q")
    summed: array[int] | None = None if inside is None else array("q")
    for row in range(rows):
        if row in later:
            continue
        last, compile_ns = row, 0 if inside is None else inside[row]
        while last in follows:
            last = follows[last]
            if inside is not None:
                compile_ns += inside[last]
        if last in unfinished:
            continue
        first_begin = closed[3 * row]
        end = closed[3 * last] + closed[3 * last + 2]
        out.extend((first_begin, closed[3 * row + 1], end - first_begin))
        if summed is not None:
            summed.append(compile_ns)
    dropped = Counter(retry_begins)
    arrivals: list[int] = []
    for begin in sorted(begins):
        if dropped[begin]:
            dropped[begin] -= 1
        else:
            arrivals.append(begin)
    return Joined(arrivals, out, summed, len(retry_begins))
