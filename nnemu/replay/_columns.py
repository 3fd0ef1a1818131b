"""Sorting per-execution columns without a tuple a row.

A replay of a 1 GB trace holds more than a million executions; a row as a tuple of Python
ints takes ~130-200 bytes where its 8-byte column entries take 8 each (bench/README.md,
``bench_memory.py``'s replay row).  So the orders the extraction needs are computed from
the columns, each row's key packed into one int; and their values are sorted (for a
median, a quantile, a sweep in time order) a chunk at a time, not as one list of Python
numbers (~32-40 bytes a value: ``ascending``).
"""

from __future__ import annotations

import heapq
import itertools
from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import Final, TypeVar

_N = TypeVar("_N", int, float)


def sorted_order(*columns: Sequence[int]) -> array[int]:
    """The row indexes that sort rows by ``columns`` (the first, then the next, ...), rows
    with equal keys in index order, as ``sorted(range(n), key=lambda i: (c0[i], c1[i],
    ...))`` gives them.

    Each row's key is one int (the columns' values and the index side by side in bits: ~50
    bytes a row while sorting) when the values are not negative; a tuple each otherwise."""
    count = len(columns[0]) if columns else 0
    if not all(len(column) == count for column in columns):
        raise ValueError("columns of different lengths")  # (an internal misuse)
    rows = _sorted_runs(columns, count)
    if rows is not None:
        return rows
    if count and all(min(column) >= 0 for column in columns):
        keys: list[int] = list(columns[0])
        for column in columns[1:]:
            width = max(column).bit_length()
            keys = [key << width | value for key, value in zip(keys, column, strict=True)]
        index_width = count.bit_length()
        mask = (1 << index_width) - 1
        keys = [key << index_width | i for i, key in enumerate(keys)]
        keys.sort()
        return array("q", (key & mask for key in keys))
    return array("q", sorted(range(count), key=lambda i: tuple(c[i] for c in columns)))


MAX_RUNS: Final = 256
"""Rows in at most this many sorted runs are merged run by run (``_sorted_runs``)."""


def _sorted_runs(columns: Sequence[Sequence[int]], count: int) -> array[int] | None:
    """``sorted_order`` of rows that lie in at most ``MAX_RUNS`` runs already in order (as
    traces joined end to end give them), merged without a key a row; None when they lie in
    more."""

    def key(i: int) -> tuple[int, ...]:
        return tuple(column[i] for column in columns)

    starts = [0]
    previous = key(0) if count else ()
    for i in range(1, count):
        current = key(i)
        if current < previous:
            if len(starts) == MAX_RUNS:
                return None
            starts.append(i)
        previous = current
    bounds = [*starts[1:], count]
    runs = (
        ((key(i), i) for i in range(start, end)) for start, end in zip(starts, bounds, strict=True)
    )
    # (key, index) pairs: equal keys come out in index order, as a stable sort leaves them.
    return array("q", (i for _, i in heapq.merge(*runs)))


CHUNK: Final = 1 << 16
"""Values ``ascending`` sorts as one list at a time."""


def ascending(values: Sequence[_N]) -> Iterator[_N]:
    """``values`` in ascending order, as ``iter(sorted(values))`` gives them: sorted a
    ``CHUNK`` at a time into 8-byte columns (of ``values``' type code, an array's) and
    merged, so that no more than a chunk of them is a list of Python numbers at once."""
    if len(values) <= CHUNK:
        return iter(sorted(values))
    code = values.typecode if isinstance(values, array) else None
    chunks: list[Sequence[_N]] = []
    for start in range(0, len(values), CHUNK):
        chunk = sorted(values[start : start + CHUNK])
        chunks.append(chunk if code is None else array(code, chunk))
    return heapq.merge(*chunks)


def sorted_column(values: Iterable[int]) -> array[int]:
    """``values`` sorted into an 8-byte column (gathered into one first, then sorted by
    ``ascending``)."""
    column = values if isinstance(values, array) else array("q", values)
    return array("q", ascending(column))


def median(values: Sequence[_N]) -> _N | float:
    """``statistics.median(values)`` (the middle value; the mean of the two middle ones of
    an even count), sorted by ``ascending``."""
    count = len(values)
    if count % 2:
        return _at(values, count // 2, 1)[0]
    low, high = _at(values, count // 2 - 1, 2)
    return (low + high) / 2


def median_low(values: Sequence[_N]) -> _N:
    """``statistics.median_low(values)`` (the lower of the two middle values of an even
    count), sorted by ``ascending``."""
    return _at(values, (len(values) - 1) // 2, 1)[0]


def _at(values: Sequence[_N], rank: int, count: int) -> list[_N]:
    """The ``count`` values from the ``rank``-th smallest (0: the least) of ``values``."""
    if not values:
        raise ValueError("no median of no values")  # (as statistics' StatisticsError)
    return list(itertools.islice(ascending(values), rank, rank + count))
