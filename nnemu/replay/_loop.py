"""Telling a closed-loop app from its trace by timing alone.

A closed-loop app thread issues its next execution when its last one ends, after a think
time: on each thread, the gap from one execution's end to the next one's arrival is the
same whatever the executions took.  An open-loop app's arrivals do not wait for its
executions: a periodic app's begins are a period apart (the gaps take up the latency's
jitter), a Poisson app's gaps are as random as its arrivals, and an arrival that came while
its thread was busy (nnemu's ``nnemu::waited`` mark moves it back, ``_attempts``) has a
gap below 0.
"""

from __future__ import annotations

from array import array
from typing import Final

import attrs

from nnemu.replay._columns import median_low, sorted_order

LOOP_SHARE: Final = 0.9
"""Of an app's gaps (end to next arrival on one thread), the share that must lie within
``tolerance_ns`` of their median for a closed loop (a few may not: a failed execution,
left out of the rows, makes one gap span it)."""

MIN_GAPS: Final = 3
"""Fewest gaps that can tell a closed loop (fewer: its arrivals are replayed)."""

TOLERANCE_NS: Final = 20_000
"""Gaps within this of their median (plus ``TOLERANCE_SHARE`` of it) are one think time: a
device's app does a few µs of work between its executions (freeing one, making the next)."""

TOLERANCE_SHARE: Final = 0.05


@attrs.frozen(kw_only=True)
class ClosedLoop:
    """What a closed-loop app's trace shows of its loop."""

    threads: int
    """App threads that ran executions."""
    think_ns: int
    """The median gap from an execution's end to the next arrival on its thread."""
    tolerance_ns: int
    """How far a gap may stray from ``think_ns`` and count as one think time."""
    gaps: int
    """Gaps measured (executions that followed another on their thread)."""
    in_loop: int
    """Of ``gaps``, those within ``tolerance_ns`` of ``think_ns``."""
    periodic: int
    """Of the begin-to-begin intervals on a thread, those within ``tolerance_ns`` of their
    median (what a periodic app's would be)."""

    def evidence(self) -> str:
        """Why the app was read as closed-loop, for the plan."""
        return (
            f"on its threads {self.in_loop} of {self.gaps} executions arrived "
            f"{self.think_ns / 1e6:.3f} ms (±{self.tolerance_ns / 1e6:.3f}) after the one "
            f"before ended; {self.periodic} of {self.gaps} a steady interval after its begin"
        )


def _within(values: array[int], centre: int, tolerance: int) -> int:
    return sum(1 for v in values if abs(v - centre) <= tolerance)


def closed_loop(closed: array[int]) -> ClosedLoop | None:
    """The loop the app's rows show, or None when they do not show one.

    ``closed``: (arrival, tid, duration) of each execution that finished, flat.  A closed
    loop: at least ``LOOP_SHARE`` of the gaps within the tolerance of their median, which is
    not below 0, and more of them than of the begin-to-begin intervals within the same
    tolerance of theirs (a periodic app whose executions take a steady time has steady gaps
    too, and its intervals are steadier still; executions of one fixed length leave the two
    alike, and the arrivals are replayed).
    """
    # Each thread's rows by (begin, end): by (begin, duration), read in place from the rows
    # (views of the flat array, not a copy or a tuple a row: bench/README.md).
    rows = memoryview(closed)
    begins, tids, durations = rows[::3], rows[1::3], rows[2::3]
    gaps = array("q")
    intervals = array("q")
    threads = 0
    last_tid: int | None = None
    last = 0
    for row in sorted_order(tids, begins, durations):
        tid, begin = tids[row], begins[row]
        if tid == last_tid:
            gaps.append(begin - begins[last] - durations[last])
            intervals.append(begin - begins[last])
        else:
            threads += 1
            last_tid = tid
        last = row
    if len(gaps) < MIN_GAPS:
        return None
    think = round(median_low(gaps))
    if think < 0:
        return None
    tolerance = TOLERANCE_NS + round(TOLERANCE_SHARE * think)
    in_loop = _within(gaps, think, tolerance)
    periodic = _within(intervals, median_low(intervals), tolerance)
    if in_loop < LOOP_SHARE * len(gaps) or (periodic >= in_loop and think > TOLERANCE_NS):
        return None
    return ClosedLoop(
        threads=threads,
        think_ns=think,
        tolerance_ns=tolerance,
        gaps=len(gaps),
        in_loop=in_loop,
        periodic=periodic,
    )
