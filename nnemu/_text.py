"""Small pieces of the text the commands print, shared so that they read alike."""

from __future__ import annotations

import math


def counted(number: int, noun: str) -> str:
    """``number`` and ``noun``, plural unless it is 1: ``counted(1, "run")`` is ``1 run``."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def seed_span(first: int, count: int) -> str:
    """The seeds of ``count`` replications from ``first``: ``seed 7`` or ``seeds 7..9``."""
    return f"seed {first}" if count == 1 else f"seeds {first}..{first + count - 1}"


def fixed(value: float, places: int) -> str:
    """``value`` to ``places`` decimals (to a multiple of 10**-places when negative), with
    no minus sign on a figure that rounds to zero."""
    text = f"{value:.{places}f}" if places >= 0 else f"{round(value, places):.0f}"
    return text.removeprefix("-") if not text.strip("-0.") else text


def places(text: str) -> int:
    """The decimal places of a figure as printed: ``13.37`` 2, ``89`` 0."""
    return len(text.partition(".")[2])


def plain(value: float) -> str:
    """A figure without an interval, to 4 significant digits, trailing zeros kept so that
    they count (``11.90`` for 11.905: ``11.9`` would claim 3); a whole number as it is, and
    no exponent: ``13.37``, ``0.2110``, ``89``, ``12346``, ``0.00001234``."""
    if not math.isfinite(value) or value == int(value):
        return fixed(value, 0)
    return fixed(value, max(0, 3 - math.floor(math.log10(abs(value)))))


def interval_text(mean: float, half_width: float | None) -> tuple[str, str]:
    """``mean`` and ``half_width`` as text to the precision the interval has: two significant
    digits of the half-width and the mean rounded to the same decimal place (``20.7654``,
    ``4.80747``: ``20.8``, ``4.8``; ``23.4056``, ``11.693``: ``23``, ``12``).  Without a
    half-width (one value: ``-``) or with a zero one (every value equal: ``0``), the mean is
    ``plain``."""
    if half_width is None or not math.isfinite(half_width):
        return plain(mean), "-"
    if half_width == 0:
        return plain(mean), "0"
    exponent = int(f"{half_width:.1e}".partition("e")[2])  # of the half-width as rounded
    places = 1 - exponent
    return fixed(mean, places), fixed(half_width, places)
