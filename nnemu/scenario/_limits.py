"""The range of every number a scenario holds, declared once on its attrs field.

``limited(bound, default)`` makes a field whose validator refuses a value outside
``bound`` (so a spec built in code cannot hold it either) and whose metadata carries
the bound, which the YAML loader reads to check the same range with a
``file:line:col: key.path: expected …, got …`` message.  docs/scenario-format.md,
"Limits", lists them.
"""

from __future__ import annotations

import math
import sys
import typing
from typing import Any, Final

import attrs

from nnemu.errors import SpecValueError

MAX_TIME_MS: Final = 3_600_000.0
"""Longest time a scenario may give (one hour of virtual time), in every ``*_ms`` key."""
MAX_TIME_US: Final = MAX_TIME_MS * 1000
"""The same limit for ``*_us`` keys."""
MAX_RATIO: Final = 1e6
"""Largest cost ratio or factor (``exec_time``, ``power_usage``, ``factor``, ``ns_per_*``)."""
MIN_RATIO: Final = 1e-6
"""Smallest positive cost ratio (``exec_time``, ``power_usage``, ``ns_per_*``)."""
MAX_JITTER: Final = 5.0
"""Largest log-normal sigma (``jitter``): a factor of e**5 at one standard deviation."""
MIN_PERIOD_MS: Final = 0.001
"""Shortest period or burst interval (one microsecond, the trace's resolution)."""
MAX_RATE_HZ: Final = 1e6
"""Highest Poisson rate (one arrival per microsecond on average)."""
MAX_THREADS: Final = 1024
"""Most threads, compute units or binder threads of one app, device or process."""
MAX_SCENARIO_THREADS: Final = 32_768
"""Most emulated threads of a whole scenario: every device's worker and binder threads, every
app's threads and binder threads (each costs about 2 KB: 400 devices of 1,024 of each took 1.8
GB; this many take about 70 MB)."""
MAX_EXECUTIONS: Final = 10_000_000
"""Most executions of one app (``executions``, ``burst_size``)."""
MAX_COUNT: Final = 10_000
"""Most compilations of one app, retries of one execution, cache files of one driver."""
MAX_INT: Final = 2**31 - 1
"""Largest tensor dimension, queue limit or memory size (Android's int32)."""
MAX_SEED: Final = 2**64
"""Largest absolute seed."""
MAX_PARAM: Final = 10_000_000
"""Largest absolute value of a preset parameter."""
MAX_OPERATIONS: Final = 10_000
"""Most operations a model may have (its layers, or what its preset parameters build)."""

BOUND_KEY: Final = "nnemu.bound"
"""The metadata key of a field's ``Bound``."""


def number_text(value: float) -> str:
    """A limit as a message shows it: whole numbers in full, others in %g."""
    if isinstance(value, int):
        return str(value)
    if value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    return f"{value:g}"


@attrs.frozen
class Bound:
    """A numeric range, e.g. ``> 0`` or ``in [0, 3600000]``."""

    op: str
    """``>`` or ``>=``: how ``limit`` bounds a value from below."""
    limit: float
    """The lower end."""
    high: float | None = None
    """The upper end (inclusive); None = unbounded."""

    def holds(self, value: float) -> bool:
        """Whether ``value`` is in the range."""
        if self.high is not None and value > self.high:
            return False
        if self.op == ">":
            return value > self.limit
        return value >= self.limit

    def describe(self) -> str:
        """The range as a message states it."""
        low = number_text(self.limit)
        if self.high is None:
            return f"{self.op} {low}"
        high = number_text(self.high)
        if self.op == ">":
            return f"> {low} and <= {high}"
        return f"in [{low}, {high}]"

    def expected(self, *, integer: bool) -> str:
        """What a message says was expected: ``an integer in [1, 1024]``."""
        return f"{'an integer' if integer else 'a number'} {self.describe()}"

    def admits(self, value: object, *, integer: bool) -> bool:
        """Whether ``value`` is a (finite, in integer fields whole) number in the range."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if integer and not isinstance(value, int):
            return False
        return finite_number(value) and self.holds(value)


def finite_number(value: object) -> bool:
    """Whether ``value`` is an int or float (not a bool) that a float holds finitely: not
    inf or nan, nor an integer past 1.8e308 (which would raise OverflowError)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


TIME: Final = Bound(">=", 0, MAX_TIME_MS)
TIME_US: Final = Bound(">=", 0, MAX_TIME_US)
PERIOD: Final = Bound(">=", MIN_PERIOD_MS, MAX_TIME_MS)
DURATION: Final = Bound(">", 0, MAX_TIME_MS)
RATIO: Final = Bound(">=", MIN_RATIO, MAX_RATIO)
FACTOR: Final = Bound(">=", 1, MAX_RATIO)
JITTER: Final = Bound(">=", 0, MAX_JITTER)
THREADS: Final = Bound(">=", 1, MAX_THREADS)
EXECUTIONS: Final = Bound(">=", 1, MAX_EXECUTIONS)
COUNT0: Final = Bound(">=", 0, MAX_COUNT)
COUNT1: Final = Bound(">=", 1, MAX_COUNT)
INT0: Final = Bound(">=", 0, MAX_INT)
INT1: Final = Bound(">=", 1, MAX_INT)
UNIT: Final = Bound(">=", 0, 1)
MEMORY: Final = Bound(">", 0, MAX_INT)
SEED: Final = Bound(">=", -MAX_SEED, MAX_SEED)
RATE: Final = Bound(">=", 1 / 3600, MAX_RATE_HZ)  # one arrival an hour at least
BACKOFF: Final = Bound(">=", 1, 100)
UID: Final = Bound(">=", 0, 2**32 - 1)  # uid_t
PARAM: Final = Bound(">=", -MAX_PARAM, MAX_PARAM)


_INTEGER_FIELDS: dict[tuple[type, str], bool] = {}
"""Cache of ``is_integer_field``."""


def is_integer_field(cls: type, name: str) -> bool:
    """Whether the field ``name`` of ``cls`` holds integers only (``int``, optional or in a tuple)."""
    known = _INTEGER_FIELDS.get((cls, name))
    if known is None:
        hint = typing.get_type_hints(cls)[name]
        known = _INTEGER_FIELDS[cls, name] = _holds(hint, int) and not _holds(hint, float)
    return known


def _holds(hint: Any, kind: type) -> bool:
    if hint is kind:
        return True
    return any(_holds(arg, kind) for arg in typing.get_args(hint))


def _check(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """The validator of a ``limited`` field: each number (of a tuple: each item; of a
    ``(name, number)`` pair: the number) in range."""
    bound: Bound = attribute.metadata[BOUND_KEY]
    if value is None:
        return
    integer = is_integer_field(type(instance), attribute.name)
    if type(value) is tuple and not integer and bound.op == ">=":
        # A long list of floats (a trace workload's arrivals) checked without a call a number.
        low, high = bound.limit, sys.float_info.max if bound.high is None else bound.high
        for number in value:
            if type(number) is not float or not low <= number <= high:
                break  # (nan fails too) reported below
        else:
            return
    items = value if isinstance(value, tuple) else (value,)
    for item in items:
        number = item
        if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str):
            number = item[1]  # a preset parameter (name, value)
        if not bound.admits(number, integer=integer):
            raise SpecValueError(
                type(instance).__name__, attribute.name, bound.expected(integer=integer), number
            )


def limited(bound: Bound, default: Any = attrs.NOTHING, **kwargs: Any) -> Any:
    """An attrs field whose numbers must lie in ``bound`` (None passes; tuples per item).

    Extra ``kwargs`` go to ``attrs.field``; a ``validator`` there runs after the bound's.
    """
    extra = kwargs.pop("validator", None)
    validator: Any = _check if extra is None else [_check, extra]
    return attrs.field(default=default, validator=validator, metadata={BOUND_KEY: bound}, **kwargs)


def bound_of(field: attrs.Attribute[Any]) -> Bound | None:
    """The bound declared on ``field``, if any."""
    bound = field.metadata.get(BOUND_KEY)
    return bound if isinstance(bound, Bound) else None
