"""Student-t intervals and Welch's test against published table values."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnemu.stats import mean_interval, t_cdf, t_quantile, welch_test


@pytest.mark.parametrize(
    ("df", "expected"),
    # two-sided 95% critical values of Student's t, as printed in any statistics table
    [(1, 12.706), (2, 4.303), (4, 2.776), (9, 2.262), (19, 2.093), (29, 2.045), (120, 1.980)],
)
def test_t_quantile_matches_the_table(df: int, expected: float) -> None:
    """The 97.5% quantile is the factor of a 95% interval, to the table's three decimals."""
    assert t_quantile(0.975, df) == pytest.approx(expected, abs=5e-4)


@given(p=st.floats(0.001, 0.999), df=st.integers(1, 500))
def test_t_quantile_inverts_the_cdf(p: float, df: int) -> None:
    """The quantile is the inverse of the CDF over the whole range used."""
    assert t_cdf(t_quantile(p, df), df) == pytest.approx(p, abs=1e-9)


def test_mean_interval_of_five_values() -> None:
    """1..5 have mean 3 and a 95% half-width of 2.776 * sqrt(2.5 / 5)."""
    interval = mean_interval([1, 2, 3, 4, 5])
    assert interval.mean == 3.0
    assert interval.half_width == pytest.approx(2.7764 * math.sqrt(0.5), abs=1e-3)
    assert interval.low < 3.0 < interval.high


def test_mean_interval_of_one_value_has_no_width() -> None:
    """A single replication gives its value and a zero half-width, with n = 1 to say so."""
    interval = mean_interval([7.5])
    assert (interval.mean, interval.half_width, interval.n) == (7.5, 0.0, 1)


def test_mean_interval_refuses_nothing() -> None:
    """No values is an error, not a NaN."""
    with pytest.raises(ValueError, match="no values"):
        mean_interval([])


def test_welch_test_of_a_known_pair() -> None:
    """The statistic, degrees of freedom and p-value match a hand computation."""
    result = welch_test([1, 2, 3, 4, 5], [2, 3, 4, 5, 6.5])
    assert result.t == pytest.approx(1.04407, abs=1e-4)
    assert result.df == pytest.approx(7.9222, abs=1e-3)
    assert result.p_value == pytest.approx(0.3273, abs=1e-3)
    assert not result.significant


def test_welch_test_sees_a_clear_shift() -> None:
    """Two tight samples a long way apart differ significantly."""
    result = welch_test([10.0, 10.1, 9.9, 10.05], [12.0, 12.1, 11.9, 12.05])
    assert result.significant
    assert result.difference == pytest.approx(2.0)


def test_welch_test_of_constant_samples() -> None:
    """Equal constants do not differ; different constants differ with certainty."""
    assert not welch_test([3.0, 3.0], [3.0, 3.0]).significant
    assert welch_test([3.0, 3.0], [4.0, 4.0]).p_value == 0.0


def test_welch_test_needs_two_values_a_side() -> None:
    """One replication has no spread to test with: a clear error."""
    with pytest.raises(ValueError, match="two or more"):
        welch_test([1.0], [1.0, 2.0])
