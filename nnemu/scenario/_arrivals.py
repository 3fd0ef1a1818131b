"""A trace workload's arrivals read from a file (``workload.arrivals_file``): CSV, or Parquet
with pyarrow.

The file is read row by row (Parquet: batch by batch) into one ``array('d')``, 8 bytes an
arrival, so that two million arrivals cost 16 MB, not the gigabyte the same list costs as
YAML.  Every row that is not an arrival time is a problem at its ``file:line``.
"""

from __future__ import annotations

import csv
import itertools
import os
import typing
from array import array
from collections.abc import Iterator
from typing import Final

from nnemu.errors import Problem
from nnemu.scenario._limits import MAX_EXECUTIONS, MAX_TIME_MS, TIME, finite_number
from nnemu.scenario._yaml import _clip

COLUMN: Final = "arrival_ms"
"""The column a file with a header (every Parquet file) gives the arrivals in."""
MAX_PROBLEMS: Final = 20
"""Rows reported before the reader stops at the next bad one."""


class ArrivalsError(ValueError):
    """The file cannot be read as arrivals; ``problems`` says where and why."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


def read_arrivals(path: str) -> array[float]:
    """The arrival times (ms) of the file ``path``: ``.parquet`` by pyarrow, anything else CSV.

    CSV: one arrival a row, in the column ``arrival_ms`` of a header row, or without a
    header (a first row of numbers) in the first column; blank lines are skipped.
    Parquet: the column ``arrival_ms``, or the only column.  Times are numbers in
    ``[0, 3600000]``, none earlier than the one before, at most MAX_EXECUTIONS of them.

    Raises:
        ArrivalsError: the file cannot be read, or each row that is not an arrival time
            (up to MAX_PROBLEMS), at its line (Parquet: its row number).
    """
    rows = _parquet_rows(path) if path.lower().endswith(".parquet") else _csv_rows(path)
    arrivals: array[float] = array("d")
    append = arrivals.append
    problems: list[Problem] = []
    last = 0.0
    try:
        for line, column, value in rows:
            # The common case inline (a float in range, not earlier): nan fails it too.
            if (
                type(value) is float
                and last <= value <= MAX_TIME_MS
                and len(arrivals) < MAX_EXECUTIONS
            ):
                append(value)
                last = value
                continue
            problems.append(_at(path, line, column, COLUMN, _problem(value, last)))
            if len(problems) >= MAX_PROBLEMS:
                break
    except _Unreadable as err:
        problems.append(_at(path, err.line, 1, "", err.message))
    if not problems and not arrivals:
        problems.append(_at(path, 1, 1, "", f"expected at least one {COLUMN}, got none"))
    if problems:
        raise ArrivalsError(problems)
    return arrivals


def _at(source: str, line: int, column: int, key_path: str, message: str) -> Problem:
    return Problem(source=source, line=line, column=column, key_path=key_path, message=message)


def _problem(value: object, last: float) -> str:
    """What is wrong with ``value`` as the arrival after ``last``."""
    if not TIME.admits(value, integer=False):
        shown = _clip(value) if isinstance(value, str) else value
        return f"expected a number in [0, {MAX_TIME_MS:.0f}], got {shown!r}"
    if typing.cast(float, value) < last:
        return f"expected a time not earlier than the one before ({last:g}), got {value!r}"
    return f"expected at most {MAX_EXECUTIONS} arrivals (one app's executions), got more"


class _Unreadable(Exception):
    """The file stops being readable at ``line``."""

    def __init__(self, line: int, message: str) -> None:
        self.line = line
        self.message = message
        super().__init__(message)


def _number(text: str) -> object:
    """``text`` as a float when it is one (an int or float, finite or not), else itself."""
    try:
        return float(text)
    except ValueError:
        return text


def _csv_rows(path: str) -> Iterator[tuple[int, int, object]]:
    """(line, column, value) of each arrival of a CSV file, read one row at a time."""
    try:
        handle = open(path, encoding="utf-8", newline="")  # noqa: SIM115 (closed below)
    except OSError as err:
        raise _Unreadable(1, f"cannot read the arrivals: {err.strerror or err}") from err
    with handle:
        reader = csv.reader(handle)
        index: int | None = None
        try:
            for row in reader:
                if index is not None and len(row) > index:
                    try:
                        yield reader.line_num, index + 1, float(row[index])
                    except ValueError:
                        text = row[index].strip()
                        yield reader.line_num, index + 1, text if text else "nothing"
                    continue
                if not row or all(not cell.strip() for cell in row):
                    continue  # a blank line
                if index is None:
                    names = [cell.strip() for cell in row]
                    if COLUMN in names:
                        index = names.index(COLUMN)
                        continue
                    index = 0
                    if not isinstance(_number(names[0]), float):
                        found = ", ".join(repr(_clip(name)) for name in names[:5])
                        raise _Unreadable(
                            reader.line_num,
                            f"expected a header naming the column {COLUMN!r} or a first row "
                            f"of numbers, got {found}",
                        )
                    yield reader.line_num, 1, _number(names[0])
                else:
                    yield reader.line_num, len(row) + 1, "nothing"
        except UnicodeDecodeError as err:
            raise _Unreadable(
                reader.line_num + 1,
                f"expected UTF-8 text, got byte {err.object[err.start]:#04x}",
            ) from err
        except (csv.Error, OSError) as err:
            raise _Unreadable(reader.line_num or 1, f"cannot read the arrivals: {err}") from err


def _parquet_rows(path: str) -> Iterator[tuple[int, int, object]]:
    """(row, 1, value) of each arrival of a Parquet file, read one batch at a time."""
    try:
        import pyarrow.parquet as pq
    except ImportError as err:
        message = "reading a .parquet file needs pyarrow: pip install 'nnemu[sweep]' (or use CSV)"
        raise _Unreadable(1, message) from err
    import pyarrow as pa

    try:
        if not os.path.isfile(path):
            raise _Unreadable(1, "cannot read the arrivals: not a file")
        parquet = pq.ParquetFile(path)
        names = parquet.schema_arrow.names
        if COLUMN in names:
            column = COLUMN
        elif len(names) == 1:
            column = names[0]
        else:
            found = ", ".join(repr(_clip(name)) for name in names[:5])
            raise _Unreadable(1, f"expected a column {COLUMN!r} or only one column, got {found}")
        rows = itertools.count(1)
        for batch in parquet.iter_batches(columns=[column], batch_size=65_536):
            for value in batch.column(0).to_pylist():
                row = next(rows)
                if isinstance(value, int | float) and not isinstance(value, bool):
                    yield row, 1, float(value) if finite_number(value) else value
                else:
                    yield row, 1, "null" if value is None else value
    except (pa.ArrowException, OSError) as err:
        raise _Unreadable(1, f"cannot read the arrivals as Parquet: {_clip(str(err))}") from err
