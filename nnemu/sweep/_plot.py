"""``nnemu sweep --plot``: one PNG per metric against the first numeric varied key, a line per
combination of the other varied keys, with the 95% confidence band of the mean (the part of it
a mean of the metric can be in: not below 0, not above 1 for a fraction).  A p95 or p99
point that summary.txt marks ``*`` (only the slowest execution in some replication:
``nnemu._tails``) is drawn as an open marker, explained under the plot.

matplotlib is the optional ``plots`` extra; it is imported only here, when asked for.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from nnemu._tails import footnote
from nnemu.report import measured
from nnemu.stats import mean_interval
from nnemu.sweep._experiment import Experiment
from nnemu.sweep._results import slowest_only_in

MISSING_MATPLOTLIB: Final = "--plot needs matplotlib: pip install 'nnemu[plots]'"
_UNSAFE: Final = re.compile(r"[^A-Za-z0-9._-]+")


def numeric_key(experiment: Experiment) -> str | None:
    """The first varied key whose values are all numbers (the plots' x axis), if any."""
    for key, values in experiment.vary:
        if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
            return key
    return None


def write_plots(
    experiment: Experiment, rows: Sequence[Mapping[str, Any]], directory: str
) -> list[str]:
    """Write the PNGs into ``directory``; their paths (none without a numeric varied key)."""
    x_key = numeric_key(experiment)
    if x_key is None:
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    others = [key for key in experiment.varied_keys if key != x_key]
    ok = [row for row in rows if row["status"] == "ok"]
    paths = []
    for metric in experiment.metrics:
        path_parts = tuple(metric.split("."))
        lines: dict[str, dict[float, list[float]]] = {}
        counted: dict[str, dict[float, list[Mapping[str, Any]]]] = {}
        for row in ok:
            value = measured(row["report"], path_parts)
            if value is None or not math.isfinite(value):
                continue
            label, x = _label(row["point"], others), float(row["point"][x_key])
            lines.setdefault(label, {}).setdefault(x, []).append(value)
            counted.setdefault(label, {}).setdefault(x, []).append(row)
        figure, axes = plt.subplots(figsize=(8, 5))
        try:
            any_marked = False
            for label in sorted(lines, key=lambda text: _order(experiment, others, text)):
                points = sorted(lines[label].items())
                xs = [x for x, _ in points]
                intervals = [mean_interval(values) for _, values in points]
                means = [interval.mean for interval in intervals]
                (drawn,) = axes.plot(xs, means, marker="o", markersize=3, label=label or None)
                low, high = _bounds(path_parts, [v for _, values in points for v in values])
                axes.fill_between(
                    xs,
                    [max(interval.low, low) for interval in intervals],
                    [min(interval.high, high) for interval in intervals],
                    alpha=0.2,
                )
                marked = [
                    (x, mean)
                    for x, mean in zip(xs, means, strict=True)
                    if slowest_only_in(path_parts, counted[label][x])
                ]
                if marked:
                    any_marked = True
                    axes.plot(
                        [x for x, _ in marked],
                        [mean for _, mean in marked],
                        linestyle="none",
                        marker="o",
                        markersize=6,
                        markerfacecolor="white",
                        color=drawn.get_color(),  # (a colour given: the cycle does not move on)
                    )
            axes.set_xlabel(x_key)
            axes.set_ylabel(metric)
            axes.set_title(
                f"{metric} (mean, 95% CI over {experiment.replications} replications)", fontsize=10
            )
            axes.grid(alpha=0.3)
            if others and lines:
                axes.legend(fontsize=8)
            if any_marked:
                note = footnote([path_parts[3]], " in at least one replication of the point")
                figure.text(0.01, 0.01, "open markers: " + note.removeprefix("* "), fontsize=7)
                figure.tight_layout(rect=(0, 0.04, 1, 1))
            else:
                figure.tight_layout()
            target = os.path.join(directory, _UNSAFE.sub("_", metric) + ".png")
            figure.savefig(target, dpi=100, metadata={"Software": None})
            paths.append(target)
        finally:
            plt.close(figure)
    return paths


_FRACTIONS: Final = frozenset({"busy_fraction", "deadline_miss_rate", "error_rate"})
"""Report leaves that are fractions: 0 to 1."""


def _bounds(path: Sequence[str], values: Sequence[float]) -> tuple[float, float]:
    """Where a band of ``path``'s mean may reach: not below 0 for a metric no run measured
    below 0 (a latency, a count), not above 1 for a fraction.  With few replications the
    Student-t interval, symmetric about the mean, can reach past what the metric can be; the
    band shows the part of it the mean could be in (summary.txt prints the interval whole)."""
    low = 0.0 if all(value >= 0 for value in values) else -math.inf
    return low, 1.0 if path[-1] in _FRACTIONS else math.inf


def _label(point: Mapping[str, Any], others: Sequence[str]) -> str:
    """A line's legend: the last part of each other varied key with its value."""
    return ", ".join(f"{key.rsplit('.', 1)[-1]}={_text(point[key])}" for key in others)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _order(experiment: Experiment, others: Sequence[str], label: str) -> int:
    """The position of a line's combination in the experiment's order (legend order)."""
    for index, point in enumerate(experiment.points()):
        if _label(point, others) == label:
            return index
    return 0
