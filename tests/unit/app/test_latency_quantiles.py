"""The report's latency quantiles: close to the exact nearest-rank values, and recorded ones."""

from __future__ import annotations

import math
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from nnemu import run
from nnemu._emulator import Emulator
from nnemu.app._stats import LatencyHistogram
from nnemu.hal import ResultCode
from nnemu.scenario import load_scenario

REPO = Path(__file__).resolve().parents[3]


def _nearest_rank(values: list[int], q: float) -> int:
    ordered = sorted(values)
    return ordered[max(1, math.ceil(q * len(ordered))) - 1]


def test_identical_latencies_give_that_latency_at_every_quantile() -> None:
    """Five executions of 5.852 ms have p50, p95 and p99 of 5.852 ms, not a bucket's 5.848."""
    histogram = LatencyHistogram()
    for _ in range(5):
        histogram.add(5852)
    assert [histogram.quantile_us(q) for q in (0.5, 0.95, 0.99)] == [5852, 5852, 5852]


@given(
    values=st.lists(st.integers(min_value=0, max_value=10**10), min_size=1, max_size=200),
    q=st.sampled_from([0.5, 0.95, 0.99]),
)
def test_quantiles_are_recorded_latencies_within_a_fifth_of_a_percent(
    values: list[int], q: float
) -> None:
    """Each quantile is one of the recorded latencies, at most 0.2% below the exact value."""
    histogram = LatencyHistogram()
    for value in values:
        histogram.add(value)
    exact = _nearest_rank(values, q)
    got = histogram.quantile_us(q)
    assert got in values
    assert exact * (1 - 1 / 512) <= got <= exact


def test_report_quantiles_of_a_deterministic_run_match_its_executions() -> None:
    """Without jitter, the report's quantiles are exactly those of the executions' latencies."""
    scenario = load_scenario(REPO / "scenarios/compilation_caching.yaml")
    report = run(scenario)
    latency = report.data["apps"]["cached_app"]["latency_ms"]
    assert latency["p50"] == latency["p95"] == latency["p99"] == latency["max"] == 5.852


def test_mean_is_rounded_not_truncated() -> None:
    """199 latencies of 115 µs and one of 277 µs have a mean of 115.81 µs, reported 0.116 ms."""
    histogram = LatencyHistogram()
    for _ in range(199):
        histogram.add_ns(115_000)
    histogram.add_ns(277_000)
    assert histogram.mean_ms() == 0.116


def test_quantiles_of_ns_latencies_are_the_exact_ones_rounded_to_the_us() -> None:
    """A latency of 5.8516 ms is recorded as 5.852 ms, not cut to 5.851 ms."""
    histogram = LatencyHistogram()
    histogram.add_ns(5_851_600)
    histogram.add_ns(5_000_400)
    assert [histogram.quantile_us(q) for q in (0.5, 0.99)] == [5000, 5852]
    assert histogram.max_us == 5852
    assert histogram.mean_ms() == 5.426


def test_report_mean_and_quantiles_match_the_executions_rounded_to_the_us() -> None:
    """Every app's reported mean, max and quantiles equal those of its executions' latencies."""
    scenario = load_scenario(REPO / "scenarios/burst_low_latency.yaml")
    apps: dict[str, list[int]] = {}

    def keep(emulator: Emulator) -> None:
        for app in emulator.apps:
            records = app.records or []
            apps[app.spec.name] = [
                r.finished_ns - r.arrival_ns for r in records if r.code is ResultCode.NO_ERROR
            ]

    report = run(scenario, keep_executions=True, inspect=keep)
    for name, latencies in apps.items():
        figures = report.data["apps"][name]["latency_ms"]
        assert figures["mean"] == round(sum(latencies) / len(latencies) / 1e6, 3)
        assert figures["max"] == round(max(latencies) / 1e6, 3)
        for q, key in ((0.5, "p50"), (0.95, "p95"), (0.99, "p99")):
            assert figures[key] == round(_nearest_rank(latencies, q) / 1e6, 3)
