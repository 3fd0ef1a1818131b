"""What a replay's what-ifs can and cannot change, and how faithful its baseline is.

``ineffective_sets`` (from ``nnemu.overrides``, which ``nnemu run --set`` uses too) names
the ``--set`` keys whose change cannot move any number under the replayed configuration;
``fidelity_lines`` puts each app's recorded latencies beside the replayed ones.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from nnemu._tails import footnote, marked_cells, slowest_only
from nnemu.overrides import ineffective_sets
from nnemu.replay._columns import sorted_column
from nnemu.replay._plan import TracePlan


def _quantile(sorted_ns: Sequence[int], q: float) -> int:
    """Nearest-rank quantile (the rule of the report's histogram)."""
    rank = max(1, math.ceil(q * len(sorted_ns)))
    return sorted_ns[rank - 1]


def fidelity_lines(plan: TracePlan, data: Mapping[str, Any]) -> list[str]:
    """Recorded vs replayed latency of each app, ms, as table lines."""
    lines = [
        "recorded vs replayed latency, ms (recorded: the sections that gave each app's "
        "arrivals; replayed: arrival -> result)",
        f"{'app':16} {'':9} {'n':>5} {'p50':>9} {'p95':>9} {'max':>9}",
    ]
    apps = data.get("apps", {})
    notes = []
    marked = False
    for app in plan.apps:
        recorded = sorted_column(app.latencies_ns)  # (not a list of ints: bench/README.md)
        marked |= slowest_only("p95", len(recorded))
        lines.append(f"{app.name[:16]:16} {'recorded':9} {len(recorded):5} {_cells(recorded)}")
        compiling = sum(1 for ns in app.compile_inside_ns if ns)
        if compiling:
            less = sorted_column(
                lat - inside
                for lat, inside in zip(app.latencies_ns, app.compile_inside_ns, strict=True)
            )
            marked |= slowest_only("p95", len(less))
            lines.append(f"{'':16} {'- compile':9} {len(less):5} {_cells(less)}")
            median = _quantile(sorted_column(ns for ns in app.compile_inside_ns if ns), 0.5)
            notes.append(
                f"{app.name}: {compiling} of {len(recorded)} recorded sections hold a "
                f"compilation (median {median / 1e6:.3f} ms): the app compiled before each "
                "execution, the replay compiles once before its arrivals; '- compile' is "
                "the recorded latency without it"
            )
        if app.never_ended:
            notes.append(
                f"{app.name}: {app.never_ended} of {len(app.arrivals_ns)} recorded executions "
                "did not finish in the trace (still running at its end): not in the recorded "
                "row; the replay runs every arrival to its end"
            )
        if app.failed:
            notes.append(
                f"{app.name}: {app.failed} of {len(app.arrivals_ns)} recorded executions "
                "failed (nnemu's failure marks): not in the recorded row, as a run's report "
                "times completed executions only"
            )
        replayed = apps.get(app.name)
        if replayed is None:
            continue
        latency = replayed["latency_ms"]
        done = replayed["completed"]
        marked |= slowest_only("p95", done)
        values = [latency[k] for k in ("p50", "p95", "max")] if done else []
        lines.append(f"{'':16} {'replayed':9} {done:5} {_row(values, done)}")
    if marked:
        lines.append(footnote(["p95"]))
    lines.extend(notes)
    return lines


def _row(values_ms: Sequence[float], count: int) -> str:
    """The p50, p95 and max cells of ``count`` latencies (dashes when there are none), the
    p95 marked when it is only the slowest (``nnemu._tails``)."""
    if not values_ms:
        return " ".join(f"{'-':>9}" for _ in range(3))
    cells = [f"{v:.3f}" for v in values_ms]
    marks = (False, slowest_only("p95", count), False)
    # widths 9, then 10: the one space between the cells is the first column of the next
    return marked_cells(list(zip(cells, (9, 10, 10), marks, strict=True)))[0]


def _cells(sorted_ns: Sequence[int]) -> str:
    """p50, p95 and max of ``sorted_ns`` in ms, or dashes when empty."""
    if not sorted_ns:
        return _row([], 0)
    values = (_quantile(sorted_ns, 0.5), _quantile(sorted_ns, 0.95), sorted_ns[-1])
    return _row([v / 1e6 for v in values], len(sorted_ns))


__all__ = ["fidelity_lines", "ineffective_sets"]
