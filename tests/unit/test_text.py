"""The shared pieces of printed text: a mean with its interval, to the interval's precision."""

from __future__ import annotations

import pytest

from nnemu._text import interval_text, plain


@pytest.mark.parametrize(
    ("mean", "half", "expected"),
    [
        (20.7654, 4.80747, ("20.8", "4.8")),
        (23.4056, 11.693, ("23", "12")),
        (0.210961, 0.00870424, ("0.2110", "0.0087")),
        (12.0, 0.0996, ("12.00", "0.10")),  # the half-width rounds up to 0.10: two digits
        (20812.3, 1234.0, ("20800", "1200")),
        (-0.004, 0.3, ("0.00", "0.30")),  # no "-0.00"
    ],
)
def test_a_mean_is_rounded_where_its_half_widths_second_digit_is(
    mean: float, half: float, expected: tuple[str, str]
) -> None:
    """The half-width keeps two significant digits and the mean the same decimal place."""
    assert interval_text(mean, half) == expected


def test_a_figure_without_spread_keeps_four_significant_digits() -> None:
    """One value (no half-width) or equal values (zero) print the mean to 4 digits, no exponent,
    trailing zeros kept (``11.3`` for 11.296 would claim only 3); a whole number as it is."""
    assert interval_text(13.369, None) == ("13.37", "-")
    assert interval_text(89.0, 0.0) == ("89", "0")
    assert plain(123456.7) == "123457"
    assert plain(0.210961) == "0.2110"
    assert plain(11.296) == "11.30"
    assert plain(0.711026) == "0.7110"
    assert plain(-2.5) == "-2.500"
    assert plain(0.00001234) == "0.00001234"
