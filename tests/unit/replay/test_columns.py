"""The replay's sorts of per-execution columns a chunk at a time (``_columns``) give what
``sorted`` and ``statistics`` give: the plan's medians and quantiles stay the same numbers
(bench/README.md, ``bench_memory.py``'s replay row)."""

from __future__ import annotations

import statistics
from array import array

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnemu.replay import _columns
from nnemu.replay._columns import ascending, median, median_low, sorted_column

_INTS = st.lists(st.integers(min_value=-(2**62), max_value=2**62), min_size=1, max_size=300)
_FLOATS = st.lists(
    st.floats(allow_nan=False, allow_infinity=False, width=64), min_size=1, max_size=300
)


@given(values=_INTS, chunk=st.integers(min_value=1, max_value=40))
def test_int_columns_sort_and_median_as_statistics_does(values: list[int], chunk: int) -> None:
    """8-byte int columns longer than a chunk: sorted, median (a float mean of the two
    middle values when even) and median_low as ``sorted`` and ``statistics`` give them."""
    column = array("q", values)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_columns, "CHUNK", chunk)
        assert list(ascending(column)) == sorted(values)
        assert list(sorted_column(iter(values))) == sorted(values)
        got = median(column)
        assert got == statistics.median(values)
        assert type(got) is type(statistics.median(values))
        assert median_low(column) == statistics.median_low(values)


@given(values=_FLOATS, chunk=st.integers(min_value=1, max_value=40))
def test_float_columns_take_the_median_statistics_takes(values: list[float], chunk: int) -> None:
    """8-byte float columns (the logs of device times) and lists: the same medians."""
    column = array("d", values)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_columns, "CHUNK", chunk)
        assert median(column) == statistics.median(values)
        assert median(values) == statistics.median(values)
        assert median_low(column) == statistics.median_low(values)


def test_a_chunked_sort_keeps_the_column_type() -> None:
    """Each chunk is kept as a column of the input's type code (8 bytes a value), and the
    median of no values is refused, as ``statistics`` refuses it."""
    column = array("d", [3.5, -1.0, 2.25, 0.0, 7.0])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_columns, "CHUNK", 2)
        assert list(ascending(column)) == [-1.0, 0.0, 2.25, 3.5, 7.0]
    with pytest.raises(ValueError, match="no median"):
        median(array("q"))
