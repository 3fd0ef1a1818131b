"""``nnemu sweep --plot``: one PNG per metric against the first numeric varied key, a line per
combination of the other varied keys, with the 95% confidence band of the mean.

matplotlib is the optional ``plots`` extra; it is imported only here, when asked for.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from nnemu.report import measured
from nnemu.stats import mean_interval
from nnemu.sweep._experiment import Experiment

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
        for row in ok:
            value = measured(row["report"], path_parts)
            if value is None or not math.isfinite(value):
                continue
            label = _label(row["point"], others)
            lines.setdefault(label, {}).setdefault(float(row["point"][x_key]), []).append(value)
        figure, axes = plt.subplots(figsize=(8, 5))
        try:
            for label in sorted(lines, key=lambda text: _order(experiment, others, text)):
                points = sorted(lines[label].items())
                xs = [x for x, _ in points]
                intervals = [mean_interval(values) for _, values in points]
                means = [interval.mean for interval in intervals]
                axes.plot(xs, means, marker="o", markersize=3, label=label or None)
                axes.fill_between(
                    xs,
                    [interval.low for interval in intervals],
                    [interval.high for interval in intervals],
                    alpha=0.2,
                )
            axes.set_xlabel(x_key)
            axes.set_ylabel(metric)
            axes.set_title(
                f"{metric} (mean, 95% CI over {experiment.replications} replications)", fontsize=10
            )
            axes.grid(alpha=0.3)
            if others and lines:
                axes.legend(fontsize=8)
            figure.tight_layout()
            target = os.path.join(directory, _UNSAFE.sub("_", metric) + ".png")
            figure.savefig(target, dpi=100, metadata={"Software": None})
            paths.append(target)
        finally:
            plt.close(figure)
    return paths


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
