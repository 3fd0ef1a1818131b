"""The ftrace ``tracing_mark_write`` row and its timestamp: defined once for every reader.

A row is ``TASK-TID ( TGID) [CPU] FLAGS SEC.FRAC: tracing_mark_write: B|tgid|name``
or ``...: tracing_mark_write: E|tgid``; the ``( TGID)`` column is optional (old
systrace) and may be ``(-----)`` (unknown: the payload's pid is the process).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

_HEAD: Final = r"\s*(.+?)-(\d+)\s+(?:\(\s*(-----|\d+)\)\s+)?\[\d+\](?:\s+\S+)?\s+"
"""``TASK-TID ( TGID) [CPU] FLAGS `` up to the timestamp (groups: task, tid, TGID column)."""

ROW_SEPARATOR: Final = ": tracing_mark_write: "
"""What follows a row's timestamp; the payload comes after it."""

ROW_RE: Final = re.compile(_HEAD + r"(\d+)\.(\d+)" + ROW_SEPARATOR.rstrip(" ") + r" ([BE])(.*)")
"""A ``tracing_mark_write`` B/E row.  Groups: task, tid, TGID column (None when
absent, ``-----`` when unknown), seconds, fraction, ``B`` or ``E``, the payload
after the kind (``|tgid|name`` or ``|tgid``)."""

COUNTER_RE: Final = re.compile(
    _HEAD + r"(\d+)\.(\d+)" + ROW_SEPARATOR.rstrip(" ") + r" C[^|]*\|([^|]*)\|([^|]*)\|(.*)"
)
"""A ``tracing_mark_write`` counter row.  Groups: task, tid, TGID column, seconds,
fraction, the payload's tgid, name, and the value (with an optional ``|category``).  As in
Perfetto's trace processor, the first field is the kind whatever follows its ``C``; the
tgid and the value are checked by ``atrace_tgid`` and ``atrace_counter_value``."""

MALFORMED_COUNTER: Final = "malformed counter mark: expected C|<tgid>|<name>|<integer>"
"""Why a counter row that ``COUNTER_RE`` matches gives no value."""

HEAD_RE: Final = re.compile(_HEAD)
"""``ROW_RE`` up to the timestamp (same groups 1-3), for a reader that splits rows itself."""

_LEADING_SPACE: Final = re.compile(r"\s*")


def head_groups(head: str) -> tuple[str, str, str | None] | None:
    """``(task, tid, TGID column or None)`` of a row's head up to (not including) its
    timestamp, as ``ROW_RE`` reads them, for a reader that caches them per distinct head;
    None when it must match the row with ``ROW_RE`` (``HEAD_RE`` does not match, or the task
    name needs some of the leading whitespace, which ``ROW_RE`` gives to its indent)."""
    row_head = head + " "
    m = HEAD_RE.fullmatch(row_head)
    if m is None:
        return None
    leading = _LEADING_SPACE.match(row_head)
    if leading is None or m.start(1) != leading.end():
        return None
    task, tid, column = m.groups()
    return task, tid, column


MALFORMED_ROW: Final = "malformed trace row: expected TASK-TID [CPU] FLAGS TIMESTAMP: ..."
"""The warning for a line that ``is_mark_row`` but ``ROW_RE`` does not match."""


MAX_SORTED_BYTES: Final = 64 * 1024 * 1024
"""A text trace with rows out of time order is read again in time order (its rows held in
memory) when it is at most this big (as ``nnemu query`` keeps a trace this big in memory)."""


def out_of_order_warning(count: int, *, sorted_again: bool) -> str:
    """The one warning per file about ``count`` rows earlier than the row before them on
    their thread, placed at the first: parse, query and replay read the rows again in time
    order (``sorted_again``: ``time_ordered``), else (too big) keep file order, where an end
    mark before its section's begin is skipped."""
    rows = (
        "1 row is earlier than the row before it on its thread"
        if count == 1
        else f"{count} rows are earlier than the row before them on their thread"
    )
    if sorted_again:
        done = "the rows were matched in time order, as Perfetto matches them"
    else:
        done = (
            f"matched in file order (a trace over {MAX_SORTED_BYTES // 2**20} MiB, or a"
            " Perfetto protobuf one, is not read again in time order), so sections may nest"
            " otherwise than in Perfetto;"
            " an end mark (E) before its section's begin is skipped, the section left open"
        )
    return (
        f"{rows} (rows out of time order; the first is here): {done} (docs/parser.md:"
        " rows out of time order)"
    )


def time_ordered(numbered: Iterable[tuple[int, str]]) -> list[tuple[int, str]]:
    """The ``tracing_mark_write`` lines of ``numbered`` ((line number, line), as
    ``FtraceLines`` gives them) sorted by timestamp, ties in file order: the order in which
    Perfetto's trace processor matches them.  A line without a timestamp ``ROW_RE`` reads
    (a malformed row) keeps its place after the row before it; other lines are dropped
    (no reader uses them)."""
    keyed: list[tuple[int, int, str]] = []
    last = -MAX_ABS_NS - 1
    for number, line in numbered:
        if "tracing_mark_write" not in line:
            continue
        m = ROW_RE.match(line)
        if m is not None:
            ts = timestamp_ns(m.group(4), m.group(5))
            if ts is not None:
                last = ts
        keyed.append((last, number, line))
    keyed.sort(key=_time_then_line)
    return [(number, line) for _, number, line in keyed]


def _time_then_line(item: tuple[int, int, str]) -> tuple[int, int]:
    return item[0], item[1]


UNKNOWN_TGID: Final = "-----"
"""The TGID column of a thread whose process ftrace did not know."""

MAX_SECONDS_DIGITS: Final = 11
"""Longest seconds part of a timestamp accepted (about 3,000 years)."""

MAX_ID: Final = 2**31 - 1
"""Largest pid or tid (Linux's pid_t)."""

MAX_ABS_NS: Final = 2**62
"""Largest |timestamp| in ns a row may carry (~146 years; SQLite's INTEGER is 64-bit)."""


def is_mark_row(line: str) -> bool:
    """Whether ``line`` was meant as a B/E mark row (worth a warning when ``ROW_RE`` fails)."""
    return "tracing_mark_write: B" in line or "tracing_mark_write: E" in line


def pid_of(text: str) -> int | None:
    """A pid or tid column as an int, or None: not ASCII digits, or beyond pid_t."""
    if not (text.isascii() and text.isdigit()) or len(text) > 10:
        return None
    value = int(text)
    return value if value <= MAX_ID else None


_ATRACE_NUMBER: Final = re.compile(r"[ \t\n\v\f\r]*([+-]?)([0-9]+)", re.ASCII)
"""A number field of an atrace mark as C's ``strtoul``/``strtoll`` read it whole: leading
whitespace, a sign, ASCII digits (how Perfetto's trace processor reads a mark's fields)."""


def atrace_tgid(field: str) -> int | None:
    """The tgid field of an atrace mark (``B|tgid|name``) as Perfetto's trace processor reads
    it (``StringToUInt32``: ``strtoul`` over the whole field, cast to 32 bits): ``200``,
    ``+200`` and `` 200`` are 200; None when it is no number (empty, ``abc``, ``200 ``).
    A negative or wrapped value is returned as that 32-bit number (``-1`` is 4294967295),
    which ``pid_of_tgid`` turns into no pid."""
    m = _ATRACE_NUMBER.fullmatch(field)
    if m is None:
        return None
    sign, digits = m.groups()
    value = int(digits)
    if value > 2**64 - 1:  # strtoul saturates
        return 2**32 - 1
    if sign == "-":
        value = -value % 2**64
    return value % 2**32


def pid_of_tgid(tgid: int) -> int | None:
    """The pid an ``atrace_tgid`` names, or None when it names none (0, beyond pid_t)."""
    return tgid if 0 < tgid <= MAX_ID else None


def pid_of_column(column: str) -> int | None:
    """The pid a row's ``( TGID)`` column names, read as Perfetto's trace processor reads it
    (``systrace_line_parser.cc``: ``StringToUInt32``, ``strtoul`` cast to 32 bits, so
    ``99999999999`` is 1215752191), or None when that is beyond pid_t (``3000000000``: no
    process, as a mark's tgid beyond it names none) or the column is no number.  0 is a pid
    here (trace processor puts the thread in process 0)."""
    if not (column.isascii() and column.isdigit()):
        return None
    tgid = atrace_tgid(column)
    return tgid if tgid is not None and tgid <= MAX_ID else None


def atrace_counter_value(field: str) -> int | None:
    """A counter mark's value (``C|tgid|name|value``) as Perfetto's trace processor reads it
    (``StringToInt64``: ``strtoll`` over the whole field, saturating): None when it is no
    integer (``2.5``, ``7 ``, empty)."""
    m = _ATRACE_NUMBER.fullmatch(field)
    if m is None:
        return None
    sign, digits = m.groups()
    value = -int(digits) if sign == "-" else int(digits)
    return max(-(2**63), min(2**63 - 1, value))


def timestamp_ns(seconds: str, fraction: str) -> int | None:
    """The ns of an ftrace timestamp ``seconds.fraction``, any number of fraction
    digits (rounded half up to the ns); None beyond ``MAX_SECONDS_DIGITS`` or ``MAX_ABS_NS``."""
    if len(seconds) > MAX_SECONDS_DIGITS:
        return None
    if len(fraction) == 6:
        ns = int(seconds + fraction) * 1000
    else:
        ns = int(seconds) * 1_000_000_000 + int(fraction[:9].ljust(9, "0"))
        if len(fraction) > 9 and fraction[9] >= "5":
            ns += 1
    return ns if ns <= MAX_ABS_NS else None


def exact_timestamp_ns(seconds: str, fraction: str) -> int | str:
    """The exact ns of ``seconds.fraction``, or why it cannot be read exactly (a
    message ending in "row skipped"): too many digits of seconds, or a fraction finer
    than a nanosecond (trailing zeros beyond the ninth digit are fine)."""
    if len(seconds) > MAX_SECONDS_DIGITS:
        return (
            f"timestamp {seconds[:20]}{'...' if len(seconds) > 20 else ''}.{fraction[:12]}"
            f" is out of range (at most {MAX_SECONDS_DIGITS} digits of seconds): row skipped"
        )
    if len(fraction) > 9:
        if fraction[9:].strip("0"):
            return (
                f"timestamp {seconds}.{fraction[:30]}{'...' if len(fraction) > 30 else ''}"
                " is finer than a nanosecond and cannot be read exactly: row skipped"
            )
        fraction = fraction[:9]
    scale: int = 10 ** (9 - len(fraction))
    return int(seconds) * 1_000_000_000 + int(fraction) * scale
