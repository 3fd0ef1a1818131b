"""Replications: one scenario run with seeds ``seed``, ``seed + 1``, ... and summarised.

``nnemu run SCENARIO --replications N`` runs the replications one after the other in this
process (``nnemu sweep`` runs them in parallel) and prints, per metric, the mean over the
replications with its 95% confidence interval (Student t, ``nnemu.stats.mean_interval``).
Its ``--report`` is ``Replications.to_json``: per metric the mean, the interval, ``n`` and
the value of each replication, which ``nnemu compare`` reads for Welch's test.

A metric is a numeric leaf of the run report (``apps.camera.latency_ms.p99``), named by its
dotted path as expectations name it.  An app's latency figures (``latency_ms``,
``latency_split_ms``) count only in the replications where it completed something (in the
others they are not measurements), and an error code that never happened in a replication
counts 0 there, as ``nnemu.report.lookup`` reads it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import attrs

from nnemu.errors import Interrupted
from nnemu.stats import MeanInterval, mean_interval

if TYPE_CHECKING:  # imported on use: ``nnemu compare`` reads metrics without YAML or the emulator
    from nnemu.report import ExpectationResult, Report
    from nnemu.scenario import Scenario

REPLICATIONS_KIND: Final = "nnemu-replications"
"""The ``kind`` of a replications report, which tells ``nnemu compare`` what it reads."""

_NOT_METRICS: Final = frozenset({"seed"})
"""Numeric top-level keys that identify a run rather than measure it."""

_PER_COMPLETION: Final = ("latency_ms", "latency_split_ms")
"""An app's figures over its completed executions (all 0 when none completed)."""


def _leaves(node: Any, prefix: str) -> Iterator[tuple[str, float]]:
    if isinstance(node, Mapping):
        for key in sorted(node):
            yield from _leaves(node[key], f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(node, int | float) and not isinstance(node, bool) and math.isfinite(node):
        yield prefix, float(node)


def metric_values(data: Mapping[str, Any], *, measured_only: bool = True) -> dict[str, float]:
    """Every numeric leaf of a run report by dotted path, sorted; see the module docstring.

    Lists (the expectations), strings, booleans, nulls (``wall_s`` unless asked for) and the
    seed are left out, as are (unless ``measured_only`` is false) the latency figures
    (``latency_ms``, ``latency_split_ms``) of an app that completed nothing.
    """
    values: dict[str, float] = {}
    apps = data.get("apps") if measured_only else None
    idle = tuple(
        f"apps.{name}.{figures}."
        for name, app in (apps.items() if isinstance(apps, Mapping) else ())
        if isinstance(app, Mapping) and app.get("completed") == 0
        for figures in _PER_COMPLETION
    )
    for path, value in _leaves(data, ""):
        if path in _NOT_METRICS or path.startswith(idle):
            continue
        values[path] = value
    return values


def _error_path(path: str) -> bool:
    parts = path.split(".")
    return len(parts) >= 3 and parts[-2] == "errors"


def metric_samples(
    reports: Sequence[Mapping[str, Any]], *, measured_only: bool = True
) -> dict[str, list[float]]:
    """Per metric (sorted by path), its value in each report that has it.

    An error code seen in some reports counts 0 in the others (it did not happen there).
    ``measured_only`` is passed to ``metric_values``.
    """
    per_report = [metric_values(data, measured_only=measured_only) for data in reports]
    paths = sorted({path for values in per_report for path in values})
    samples: dict[str, list[float]] = {}
    for path in paths:
        default = 0.0 if _error_path(path) else None
        column = [values.get(path, default) for values in per_report]
        samples[path] = [value for value in column if value is not None]
    return samples


def _nest(flat: Mapping[str, float]) -> dict[str, Any]:
    """A report-shaped document from dotted paths (what expectations are evaluated on)."""
    root: dict[str, Any] = {}
    for path, value in flat.items():
        node = root
        *parents, last = path.split(".")
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
    return root


@attrs.frozen
class Replications:
    """The runs of one scenario with consecutive seeds, and their summary."""

    scenario: Scenario
    """The scenario run (after ``--set``)."""
    seeds: tuple[int, ...]
    """The seed of each finished replication, in order."""
    reports: tuple[Report, ...]
    """The report of each finished replication."""
    requested: int
    """How many replications were asked for."""
    interrupted: str | None = None
    """The signal that stopped the replications early (``"SIGINT"``), if one did."""

    def samples(self) -> dict[str, list[float]]:
        """Per metric, its value in each replication (see ``metric_samples``)."""
        return metric_samples([report.data for report in self.reports])

    def intervals(self) -> dict[str, MeanInterval]:
        """Per metric with a value, its mean and 95% confidence interval."""
        return {path: mean_interval(values) for path, values in self.samples().items() if values}

    def mean_data(self) -> dict[str, Any]:
        """A report-shaped document of the metrics' means.

        The latency of an app that completed nothing in every replication is the mean of the
        report's own figures for it (0); its mean ``completed`` is 0, so an expectation on it
        fails as on one run (``nnemu.report.evaluate``).
        """
        means = {path: interval.mean for path, interval in self.intervals().items()}
        reports = [report.data for report in self.reports]
        for path, values in metric_samples(reports, measured_only=False).items():
            if path not in means and values:
                means[path] = math.fsum(values) / len(values)
        return _nest(dict(sorted(means.items())))

    def expectations(self) -> tuple[ExpectationResult, ...]:
        """The scenario's expectations evaluated on the means over the replications."""
        from nnemu.report import evaluate

        data = self.mean_data()
        return tuple(evaluate(data, expectation) for expectation in self.scenario.expect)

    @property
    def passed(self) -> bool:
        """Whether every expectation held on the means."""
        return all(result.passed for result in self.expectations())

    def to_data(self) -> dict[str, Any]:
        """The replications report (``nnemu run --replications N --report PATH``)."""
        samples = self.samples()
        metrics = {}
        for path, values in samples.items():
            if not values:
                continue
            interval = mean_interval(values)
            metrics[path] = {
                "mean": interval.mean,
                "half_width": interval.half_width,
                "low": interval.low,
                "high": interval.high,
                "n": interval.n,
                "values": values,
            }
        return {
            "kind": REPLICATIONS_KIND,
            "scenario": self.scenario.name,
            "seeds": list(self.seeds),
            "replications": len(self.reports),
            "requested": self.requested,
            "confidence": 0.95,
            "interrupted": self.interrupted,
            "metrics": metrics,
            "expectations": [
                {"text": result.text, "passed": result.passed, "mean": result.actual}
                | ({} if result.why is None else {"why": result.why})
                for result in self.expectations()
            ],
        }

    def to_json(self) -> str:
        """The replications report as JSON text (sorted keys, two-space indent, newline)."""
        return json.dumps(self.to_data(), indent=2, sort_keys=True) + "\n"


def run_replications(
    scenario: Scenario,
    count: int,
    *,
    seed: int | None = None,
    wall_time: bool = False,
    started: Callable[[int, int], None] | None = None,
    inspect: Callable[[Any], None] | None = None,
) -> Replications:
    """Run ``scenario`` ``count`` times with seeds ``seed``, ``seed + 1``, ... in turn.

    ``seed`` defaults to the scenario's; ``wall_time`` records each run's ``wall_s`` (then a
    metric like the others).  ``started(index, seed)`` is called before each
    replication (a progress line); ``inspect`` is called with each finished emulator
    (``nnemu.run``'s).  Ctrl-C or SIGTERM stops the current replication; the
    ones finished before it are returned with ``interrupted`` set (the cut one is left out:
    it would bias every mean towards a shorter run).

    Raises:
        ValueError: ``count`` is less than 1.
    """
    from nnemu._emulator import run

    if count < 1:
        msg = f"expected at least 1 replication, got {count}"
        raise ValueError(msg)
    first = scenario.seed if seed is None else seed
    seeds: list[int] = []
    reports: list[Report] = []
    interrupted: str | None = None
    for index in range(count):
        if started is not None:
            started(index, first + index)
        try:
            report = run(
                scenario,
                seed=first + index,
                wall_time=wall_time,
                inspect=inspect,
                handle_signals=True,
            )
        except Interrupted as exc:
            interrupted = exc.signal_name
            break
        except KeyboardInterrupt:  # Ctrl-C between two runs, outside run()'s signal handling
            interrupted = "SIGINT"
            break
        seeds.append(first + index)
        reports.append(report)
    return Replications(scenario, tuple(seeds), tuple(reports), count, interrupted)
