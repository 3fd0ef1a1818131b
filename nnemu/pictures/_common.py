"""What both writers share: caps, colors, names safe in ids, nice axis ticks."""

from __future__ import annotations

import math
import re

MAX_JOBS_PER_DEVICE = 5000
"""Jobs drawn per device timeline (the first ones by arrival); the rest are counted in a note."""
MAX_MARKS_PER_APP = 5000
"""Failed results marked per app on the results strip."""

# matplotlib's tab10, so the page and the PNG figures agree.
APP_COLORS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#bcbd22",
    "#7f7f7f",
    "#d62728",
)
CODE_COLORS = {
    "NO_ERROR": "#4caf50",
    "MISSED_DEADLINE_TRANSIENT": "#ff9800",
    "MISSED_DEADLINE_PERSISTENT": "#e65100",
    "RESOURCE_EXHAUSTED_TRANSIENT": "#9c27b0",
    "RESOURCE_EXHAUSTED_PERSISTENT": "#6a1b9a",
    "UNAVAILABLE_DEVICE": "#607d8b",
    "OP_FAILED": "#d32f2f",
    "BAD_DATA": "#795548",
}
OTHER_CODE_COLOR = "#455a64"
PREEMPTION_COLOR = "#000000"
DEADLINE_MISS_COLOR = "#d62728"


def app_color(index: int) -> str:
    """Color of the ``index``-th app of the scenario."""
    return APP_COLORS[index % len(APP_COLORS)]


def code_color(code: str) -> str:
    """Color of a result code."""
    return CODE_COLORS.get(code, OTHER_CODE_COLOR)


def slug(name: str) -> str:
    """``name`` made safe for an HTML id, a CSS class and a file name."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", name) or "-"


def nice_step(span: float, target: int = 8) -> float:
    """A 1/2/5 x 10^k step giving about ``target`` ticks over ``span``."""
    if span <= 0:
        return 1.0
    raw = span / target
    power = 10.0 ** math.floor(math.log10(raw))
    for factor in (1.0, 2.0, 5.0, 10.0):
        if raw <= factor * power:
            return factor * power
    return 10.0 * power  # pragma: no cover - the loop always returns


def ticks(low: float, high: float, target: int = 8) -> list[float]:
    """Nice tick values covering [low, high]."""
    step = nice_step(high - low, target)
    first = math.ceil(low / step) * step
    values = []
    value = first
    while value <= high + step * 1e-9:
        values.append(round(value, 9))
        value += step
    return values


def fmt_ms(value_ms: float) -> str:
    """A tick label in ms without trailing zeros."""
    return f"{value_ms:.6f}".rstrip("0").rstrip(".")
