"""The run report: what each app and device did, and whether the expectations held.

The JSON form is documented in docs/report-schema.md.  Everything in it comes from
virtual time and seeded randomness, so the same scenario and seed give the same
bytes; the one wall-clock figure, ``wall_s``, is null unless asked for.
"""

from __future__ import annotations

import collections
import json
import operator
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from nnemu.scenario import Expectation, ExpectOp

if TYPE_CHECKING:
    from nnemu._emulator import Emulator

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


def _ms(us: int) -> float:
    return round(us / 1000.0, 3)


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


def evaluate(data: Mapping[str, Any], expectation: Expectation) -> ExpectationResult:
    """Check one expectation against the report data."""
    actual = lookup(data, expectation.path)
    passed = actual is not None and _OPS[expectation.op](actual, expectation.value)
    return ExpectationResult(expectation.text, passed, actual)


def build_report(emulator: Emulator, *, wall_s: float | None = None) -> Report:
    """Aggregate the emulator's counters into a report and evaluate the expectations."""
    scenario = emulator.scenario
    elapsed = emulator.kernel.now_ns
    apps: dict[str, Any] = {}
    cpu_executions = 0
    cpu_busy_ns = 0
    refused: collections.Counter[int] = collections.Counter()
    aborted: collections.Counter[int] = collections.Counter()
    for service in emulator.services:
        refused.update(service.device.stats.refused_by_uid)
        aborted.update(service.device.stats.aborted_by_uid)
    for app in emulator.apps:
        stats = app.stats
        latency = stats.latency
        submitted = stats.submitted
        apps[app.spec.name] = {
            "submitted": submitted,
            "completed": stats.completed,
            "failed": stats.failed,
            "dropped": stats.dropped,
            "retries": stats.retries,
            "in_flight": submitted - stats.completed - stats.failed - stats.dropped,
            "errors": dict(sorted(stats.errors.items())),
            "deadline_misses": stats.deadline_misses,
            "completed_late": stats.completed_late,
            "deadline_refused": refused[app.spec.uid],
            "deadline_aborted": aborted[app.spec.uid],
            "deadline_miss_rate": round(stats.deadline_misses / submitted, 6) if submitted else 0.0,
            "error_rate": round(stats.failed / submitted, 6) if submitted else 0.0,
            "compile_result": stats.compile_result.name,
            "compilations": {
                "count": len(stats.compile_ns),
                "from_cache": stats.compilations_from_cache,
                "first_ms": _ms(stats.compile_ns[0] // 1000) if stats.compile_ns else 0.0,
                "last_ms": _ms(stats.compile_ns[-1] // 1000) if stats.compile_ns else 0.0,
            },
            "latency_ms": {
                "p50": _ms(latency.quantile_us(0.50)),
                "p95": _ms(latency.quantile_us(0.95)),
                "p99": _ms(latency.quantile_us(0.99)),
                "max": _ms(latency.max_us),
                "mean": _ms(latency.total_us // latency.count) if latency.count else 0.0,
            },
        }
        cpu_executions += app.runtime.cpu_stats.executions
        cpu_busy_ns += app.runtime.cpu_stats.busy_ns
    devices: dict[str, Any] = {}
    for service in emulator.services:
        device = service.device
        device_stats = device.stats
        devices[service.name] = {
            "executions": device_stats.executions,
            "busy_fraction": round(device.busy_fraction(elapsed), 6),
            "preemptions": device_stats.preemptions,
            "deadline_aborts": device_stats.deadline_aborts,
            "loop_timeouts": device_stats.loop_timeouts,
            "rejected_persistent": device_stats.rejected_persistent,
            "rejected_transient": device_stats.rejected_transient,
        }
    devices["nnapi-reference"] = {
        "executions": cpu_executions,
        "busy_fraction": round(cpu_busy_ns / elapsed, 6) if elapsed else 0.0,
        "preemptions": 0,
        "deadline_aborts": 0,
        "loop_timeouts": 0,
        "rejected_persistent": 0,
        "rejected_transient": 0,
    }
    data: dict[str, Any] = {
        "scenario": scenario.name,
        "seed": scenario.seed,
        "virtual_ms": round(elapsed / 1e6, 6),
        "wall_s": None if wall_s is None else round(wall_s, 3),
        "apps": apps,
        "devices": devices,
    }
    results = tuple(evaluate(data, expectation) for expectation in scenario.expect)
    data["expectations"] = [{"text": r.text, "passed": r.passed} for r in results]
    return Report(data, results)
