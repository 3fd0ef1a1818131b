"""What both writers share: colors, names safe in ids, nice axis ticks."""

from __future__ import annotations

import math
import re

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
# Result codes get their own palette, sharing no colour with APP_COLORS (tests check that
# every code colour is far from every app colour): success is a pale mint, deadline misses
# yellow/ochre, resource exhaustion lavender/navy, hard failures maroon/teal/black.
CODE_COLORS = {
    "NO_ERROR": "#aaffc3",
    "MISSED_DEADLINE_TRANSIENT": "#ffe119",
    "MISSED_DEADLINE_PERSISTENT": "#9a7d00",
    "RESOURCE_EXHAUSTED_TRANSIENT": "#dcbeff",
    "RESOURCE_EXHAUSTED_PERSISTENT": "#000075",
    "UNAVAILABLE_DEVICE": "#000000",
    "OP_FAILED": "#800000",
    "BAD_DATA": "#469990",
}
OTHER_CODE_COLOR = "#ffd8b1"
PREEMPTION_COLOR = "#000000"
DEADLINE_MISS_COLOR = "#d62728"


def app_color(index: int) -> str:
    """Color of the ``index``-th app of the scenario."""
    return APP_COLORS[index % len(APP_COLORS)]


def code_color(code: str) -> str:
    """Color of a result code."""
    return CODE_COLORS.get(code, OTHER_CODE_COLOR)


def short_labels(names: list[str], limit: int = 16) -> dict[str, str]:
    """Labels of at most ``limit`` characters for ``names``, distinct whenever the names are.

    A long name keeps its head and tail around an ellipsis (``com.example.ca…era``), so two
    names sharing a long prefix still differ; where that is not enough the labels grow until
    they differ, up to the whole name.
    """
    size = limit
    while True:
        labels = {name: _middle_cut(name, size) for name in names}
        if len(set(labels.values())) == len(set(names)) or size >= max(map(len, names), default=0):
            return labels
        size += 1


def _middle_cut(name: str, size: int) -> str:
    if len(name) <= size:
        return name
    head = size // 2
    tail = size - 1 - head
    return name[:head] + "\u2026" + (name[-tail:] if tail else "")


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


def ticks(low: float, high: float, target: int = 8, *, whole: bool = False) -> list[float]:
    """Nice tick values covering [low, high]; with ``whole``, whole numbers only (counts)."""
    step = nice_step(high - low, target)
    if whole:
        step = max(1.0, step)
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
