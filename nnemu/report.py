"""The run report: what each app and device did, and whether the expectations held.

``nnemu._emulator.build_report`` makes one of a finished emulator; this module knows
only the report.  The JSON form is documented in docs/report-schema.md.  Everything in it comes from
virtual time and seeded randomness, so the same scenario and seed give the same
bytes; the one wall-clock figure, ``wall_s``, is null unless asked for.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Mapping
from typing import Any, Final

import attrs

from nnemu.scenario import Expectation, ExpectOp

SPLIT_PARTS = (
    "app_wait",
    "binder_wait",
    "device_queue",
    "preempted",
    "ipc",
    "driver_launch",
    "compute",
    "retry",
    "runtime",
)
"""The parts an execution's latency is split into, in report order and the
order the HTML bars stack them (docs/report-schema.md)."""


_OPS = {
    ExpectOp.LT: operator.lt,
    ExpectOp.LE: operator.le,
    ExpectOp.GT: operator.gt,
    ExpectOp.GE: operator.ge,
    ExpectOp.EQ: operator.eq,
    ExpectOp.NE: operator.ne,
}


@attrs.frozen
class ExpectationResult:
    """One expectation and whether it held."""

    text: str
    """The expectation as written in the scenario."""
    passed: bool
    """Whether it held."""
    actual: float | None
    """The value the report had (None if the path names nothing)."""
    why: str | None = None
    """Why the figure does not exist (``"pinned completed no execution"``), which fails the
    expectation whatever it compares; None when the figure exists (or the path names nothing)."""

    def describe(self) -> str:
        """The expectation as written, followed by ``(why)`` when its figure does not exist."""
        return self.text if self.why is None else f"{self.text} ({self.why})"


@attrs.frozen
class Report:
    """The outcome of a run."""

    data: Mapping[str, Any]
    """The JSON document."""
    expectations: tuple[ExpectationResult, ...]
    """Expectation results, in scenario order."""

    @property
    def passed(self) -> bool:
        """Whether every expectation held."""
        return all(result.passed for result in self.expectations)

    def to_json(self) -> str:
        """The report as JSON text (sorted keys, two-space indent, trailing newline)."""
        return json.dumps(self.data, indent=2, sort_keys=True) + "\n"

    def interrupted(self, how: str) -> Report:
        """This report marked as the report of a run cut short: ``"interrupted"`` is ``how``
        (``"SIGINT"``, ``"SIGTERM"``, or ``"q"`` at a ``--step`` prompt)."""
        return attrs.evolve(self, data={**self.data, "interrupted": how})


def lookup(data: Mapping[str, Any], path: tuple[str, ...]) -> float | None:
    """The number at ``path`` in the report; error counts that never happened are 0."""
    node: Any = data
    for i, key in enumerate(path):
        if isinstance(node, Mapping) and key in node:
            node = node[key]
        elif i == len(path) - 1 and len(path) >= 2 and path[-2] == "errors":
            return 0.0
        else:
            return None
    if isinstance(node, bool) or not isinstance(node, int | float):
        return None
    return float(node)


PER_COMPLETION: Final = ("latency_ms", "latency_split_ms")
"""An app's figures over its completed executions: placeholders (0) when it completed none."""


def _undefined(data: Mapping[str, Any], path: tuple[str, ...]) -> str | None:
    """Why the figure at ``path`` does not exist: the latency of an app that completed nothing.

    The report writes such an app's ``latency_ms`` and ``latency_split_ms`` as 0 (the JSON
    keeps one shape), but it measured nothing: ``latency_ms.p99 < 8`` must not hold for an
    app that never finished, nor its 0 count as a sample in a mean.
    """
    if len(path) != 4 or path[0] != "apps" or path[2] not in PER_COMPLETION:
        return None
    apps = data.get("apps")
    app = apps.get(path[1]) if isinstance(apps, Mapping) else None
    if isinstance(app, Mapping) and app.get("completed") == 0:
        return f"{path[1]} completed no execution"
    return None


def measured(data: Mapping[str, Any], path: tuple[str, ...]) -> float | None:
    """The number at ``path`` (``lookup``), or None when the report holds only a placeholder
    there: the latency figures of an app that completed nothing."""
    return None if _undefined(data, path) is not None else lookup(data, path)


def evaluate(data: Mapping[str, Any], expectation: Expectation) -> ExpectationResult:
    """Check one expectation against the report data.

    An expectation on a figure that does not exist fails (``ExpectationResult.why`` says
    why): the latency of an app with no completed execution compares with nothing.
    """
    actual = lookup(data, expectation.path)
    why = _undefined(data, expectation.path)
    passed = why is None and actual is not None and _OPS[expectation.op](actual, expectation.value)
    return ExpectationResult(expectation.text, passed, actual, why)
