"""What a replay's what-ifs can and cannot change, and how faithful its baseline is.

``ineffective_sets`` (from ``nnemu.overrides``, which ``nnemu run --set`` uses too) names
the ``--set`` keys whose change cannot move any number under the replayed configuration;
``fidelity_lines`` puts each app's recorded latencies beside the replayed ones.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from nnemu.overrides import ineffective_sets
from nnemu.replay._extract import TracePlan


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
    for app in plan.apps:
        recorded = sorted(app.latencies_ns)
        if recorded:
            values = (_quantile(recorded, 0.5), _quantile(recorded, 0.95), recorded[-1])
            cells = " ".join(f"{v / 1e6:9.3f}" for v in values)
        else:
            cells = " ".join(f"{'-':>9}" for _ in range(3))
        lines.append(f"{app.name[:16]:16} {'recorded':9} {len(recorded):5} {cells}")
        replayed = apps.get(app.name)
        if replayed is None:
            continue
        latency = replayed["latency_ms"]
        if replayed["completed"]:
            cells = " ".join(f"{latency[k]:9.3f}" for k in ("p50", "p95", "max"))
        else:
            cells = " ".join(f"{'-':>9}" for _ in range(3))
        lines.append(f"{'':16} {'replayed':9} {replayed['completed']:5} {cells}")
    return lines


__all__ = ["fidelity_lines", "ineffective_sets"]
