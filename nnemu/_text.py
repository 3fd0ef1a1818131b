"""Small pieces of the text the commands print, shared so that they read alike."""

from __future__ import annotations

import math
from typing import Final


def cells(*pairs: tuple[object, int]) -> str:
    """Right-aligned table cells ``(value, width)``: a value as wide as its column or wider
    keeps one blank before it, so wide numbers never run together."""
    return "".join(right(value, width) for value, width in pairs)


def right(value: object, width: int) -> str:
    """``value`` right-aligned in ``width`` columns, with at least one blank before it."""
    text = str(value)
    return f"{text:>{width}}" if len(text) < width else f" {text}"


def counted(number: int, noun: str) -> str:
    """``number`` and ``noun``, plural unless it is 1: ``counted(1, "run")`` is ``1 run``."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def ending(how: str) -> str:
    """How a run ended early, as a report's ``"interrupted"`` says it (``q``, ``SIGINT``,
    ``SIGTERM``), in the commands' words: ``ended at the prompt (q)``, ``interrupted by SIGINT``."""
    return "ended at the prompt (q)" if how == "q" else f"interrupted by {how}"


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


def plain(value: float, *, whole: bool = True) -> str:
    """A figure without an interval, to 4 significant digits, trailing zeros kept so that
    they count (``11.90`` for 11.905: ``11.9`` would claim 3); with ``whole`` a whole number
    as it is (a count), and no exponent: ``13.37``, ``0.2110``, ``89``, ``12346``,
    ``0.00001234``; ``12.00`` for a time of 12 ms (``whole=False``: ``counts``)."""
    if not math.isfinite(value) or value == 0 or (whole and value == int(value)):
        return fixed(value, 0)
    return fixed(value, max(0, 3 - math.floor(math.log10(abs(value)))))


_NOT_COUNTS: Final = frozenset(
    {"busy_fraction", "deadline_miss_rate", "error_rate", "energy", "energy_per_execution"}
)


def counts(path: str) -> bool:
    """Whether the report metric ``path`` counts things (``apps.camera.completed``,
    ``...errors.OP_FAILED``), so a whole value prints as it is: not a time (a part ending in
    ``_ms``, ``wall_s``), a fraction, a rate or an energy, which keep their 4 digits."""
    parts = path.split(".")
    return not (
        parts[-1] in _NOT_COUNTS or parts[-1] == "wall_s" or any(p.endswith("_ms") for p in parts)
    )


def interval_text(mean: float, half_width: float | None, *, whole: bool = True) -> tuple[str, str]:
    """``mean`` and ``half_width`` as text to the precision the interval has: two significant
    digits of the half-width and the mean rounded to the same decimal place (``20.7654``,
    ``4.80747``: ``20.8``, ``4.8``; ``23.4056``, ``11.693``: ``23``, ``12``).  Without a
    half-width (one value: ``-``) or with a zero one (every value equal: ``0``), the mean is
    ``plain`` (``whole`` passed on)."""
    if half_width is None or not math.isfinite(half_width):
        return plain(mean, whole=whole), "-"
    if half_width == 0:
        return plain(mean, whole=whole), "0"
    exponent = int(f"{half_width:.1e}".partition("e")[2])  # of the half-width as rounded
    places = 1 - exponent
    return fixed(mean, places), fixed(half_width, places)
