"""The report's latency quantiles: close to the exact nearest-rank values, and recorded ones."""

from __future__ import annotations

import math
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from nnemu import run
from nnemu.app._stats import LatencyHistogram
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
