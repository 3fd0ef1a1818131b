"""The one ``tracing_mark_write`` row pattern and the timestamp readers."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnemu.trace import (
    HEAD_RE,
    MAX_ABS_NS,
    ROW_RE,
    ROW_SEPARATOR,
    exact_timestamp_ns,
    is_mark_row,
    timestamp_ns,
)


def test_row_groups_name_task_ids_timestamp_kind_and_payload():
    """A systrace row gives task, tid, TGID column, seconds, fraction, B/E and the payload."""
    row = "  HwBinder:2000_1-2001  ( 2000) [003] ...1 1034.000123: tracing_mark_write: B|2000|x|y"
    m = ROW_RE.match(row)
    assert m is not None
    assert m.groups() == ("HwBinder:2000_1", "2001", "2000", "1034", "000123", "B", "|2000|x|y")


@pytest.mark.parametrize(
    ("row", "tgid"),
    [
        ("app-7 [000] ...1 1.5: tracing_mark_write: E|7", None),
        ("app-7 (-----) [000] ...1 1.5: tracing_mark_write: E|7", "-----"),
        ("app-7 ( 7) [000] 1.5: tracing_mark_write: E|7", "7"),
    ],
)
def test_tgid_column_is_optional_or_unknown(row: str, tgid: str | None):
    """Old systrace has no TGID column, and ftrace writes ``-----`` for an unknown one."""
    m = ROW_RE.match(row)
    assert m is not None
    assert (m.group(2), m.group(3), m.group(6)) == ("7", tgid, "E")


def test_task_names_may_hold_dashes_and_spaces():
    """The tid is the number after the last dash before the CPU column (task names vary)."""
    m = ROW_RE.match("my-app thread-12  ( 10) [000] ...1 2.000001: tracing_mark_write: E|10")
    assert m is not None
    assert m.group(1, 2) == ("my-app thread", "12")


@pytest.mark.parametrize(
    "row",
    [
        "app-7 ( 7) [000] ...1 1.5: tracing_mark_write: C|7|counter|1",
        "app-7 ( 7) ...1 1.5: tracing_mark_write: E|7",
        "app ( 7) [000] ...1 1.5: tracing_mark_write: E|7",
        "app-7 ( 7) [000] ...1 1: tracing_mark_write: E|7",
    ],
)
def test_rows_that_are_not_begin_or_end_marks_do_not_match(row: str):
    """Counters, rows without a CPU column, tid or fraction are not B/E rows."""
    assert ROW_RE.match(row) is None


@given(
    task=st.text(st.characters(codec="ascii", exclude_characters="\n\r"), min_size=1, max_size=12),
    tid=st.integers(0, 10**7),
    tgid=st.one_of(st.none(), st.integers(0, 10**7)),
)
def test_head_re_ends_where_row_re_reads_the_timestamp(task: str, tid: int, tgid: int | None):
    """HEAD_RE (the fast path's head) reads the same task, tid and TGID as ROW_RE."""
    column = "" if tgid is None else f"({tgid:>5}) "
    head = f"{task}-{tid} {column}[001] ...1 "
    row = f"{head}5.000001{ROW_SEPARATOR}E|{tid}"
    full, part = ROW_RE.match(row), HEAD_RE.fullmatch(head)
    assert (full is None) == (part is None)
    if full is not None and part is not None:
        assert full.group(1, 2, 3) == part.group(1, 2, 3)


@pytest.mark.parametrize(
    ("seconds", "fraction", "ns"),
    [
        ("1", "5", 1_500_000_000),
        ("2", "000001", 2_000_001_000),
        ("2", "123456789", 2_123_456_789),
        ("2", "1234567894", 2_123_456_789),
        ("2", "12345678950001", 2_123_456_790),
        ("0", "0000000000000000000000", 0),
    ],
)
def test_timestamp_ns_reads_any_fraction_length_rounded_to_the_ns(
    seconds: str, fraction: str, ns: int
):
    """Fractions of 1 to many digits give ns, the tenth digit rounding half up."""
    assert timestamp_ns(seconds, fraction) == ns


def test_timestamp_ns_refuses_out_of_range():
    """More than 11 digits of seconds, or beyond MAX_ABS_NS, is None (the row is skipped)."""
    assert timestamp_ns("1" * 12, "0") is None
    assert timestamp_ns("4611686018", "427387904") == MAX_ABS_NS
    assert timestamp_ns("4611686018", "427387905") is None
    assert timestamp_ns("99999999999", "999999") is None


def test_exact_timestamp_ns_accepts_trailing_zeros_but_not_sub_ns_digits():
    """1.5000000000 is exact; 1.1234567891 is finer than a ns and gets a message, not a guess."""
    assert exact_timestamp_ns("1", "5000000000") == 1_500_000_000
    assert exact_timestamp_ns("3", "25") == 3_250_000_000
    problem = exact_timestamp_ns("1", "1234567891")
    assert isinstance(problem, str)
    assert problem.startswith("timestamp 1.1234567891 is finer than a nanosecond")
    too_long = exact_timestamp_ns("9" * 30, "5")
    assert isinstance(too_long, str)
    assert "at most 11 digits of seconds" in too_long
    assert "9" * 21 not in too_long


@given(st.integers(0, 10**20 - 1), st.integers(1, 12))
def test_exact_and_rounded_readers_agree_on_exact_timestamps(ns: int, digits: int):
    """A timestamp written with up to 9 fraction digits reads the same in both readers."""
    seconds, rest = divmod(ns, 10**9)
    width = min(digits, 9)
    rest -= rest % 10 ** (9 - width)
    fraction = f"{rest:09d}"[:width] + "0" * (digits - width)
    exact = exact_timestamp_ns(str(seconds), fraction)
    rounded = timestamp_ns(str(seconds), fraction)
    value = seconds * 10**9 + rest
    assert exact == value
    assert rounded == (value if value <= MAX_ABS_NS else None)


def test_mark_rows_the_pattern_refuses_are_told_from_other_ftrace_events():
    """A B/E mark with a broken head is worth a warning; other ftrace events are not."""
    broken = "garbage 1.5: tracing_mark_write: B|10|x"
    assert ROW_RE.match(broken) is None
    assert is_mark_row(broken)
    assert not is_mark_row("app-7 ( 7) [000] ...1 1.5: tracing_mark_write: C|7|counter|1")
    assert not is_mark_row("app-7 ( 7) [000] ...1 1.5: sched_switch: prev_comm=app")
