"""Printing query results: an aligned text table, CSV or JSON."""

from __future__ import annotations

import csv
import itertools
import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Final, Protocol, TextIO

MODES: Final = ("table", "csv", "json")
"""Output modes of ``nnemu query`` (``--csv``, ``--json``, default ``table``)."""
NULL_TEXT: Final = "NULL"
"""How the text table shows SQL NULL (CSV leaves the field empty, JSON writes null)."""


class Result(Protocol):
    """An executed statement: a ``sqlite3.Cursor``, or an apsw one made to read like it."""

    @property
    def description(self) -> Any:
        """Column names first in each item; None for a statement without rows."""

    def __iter__(self) -> Iterator[Any]:
        """The rows."""


class Database(Protocol):
    """What the command runs statements on: a ``sqlite3.Connection`` or an ``ApswDatabase``."""

    def execute(self, sql: str, parameters: Any = ..., /) -> Any:
        """Run one statement and return its ``Result``."""


TABLE_SAMPLE_ROWS: Final = 1000
"""Rows the text table holds to size and align its columns; the rest are written as they come."""
MAX_CELL: Final = 1000
"""Characters of a text table's cell (a longer one is cut, ending in ``…``; CSV and JSON keep
every value whole)."""


def _cell(value: object) -> str:
    if value is None:
        return NULL_TEXT
    # A blob's hex is cut before it is made: a huge one would double in memory first.
    text = value[: MAX_CELL // 2 + 1].hex() if isinstance(value, bytes) else str(value)
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def _json_value(value: object) -> object:
    return value.hex() if isinstance(value, bytes) else value


def _column_names(cursor: Result) -> list[str]:
    """Column names, with ``:2``, ``:3``... added to repeats so JSON keys stay distinct."""
    names: list[str] = []
    seen: dict[str, int] = {}
    for column in cursor.description:
        name = str(column[0])
        seen[name] = seen.get(name, 0) + 1
        names.append(name if seen[name] == 1 else f"{name}:{seen[name]}")
    return names


def write_table(columns: Sequence[str], rows: Iterable[Sequence[object]], out: TextIO) -> None:
    """Write rows as a text table: a header, a rule, then the rows.

    A column of numbers (NULL allowed) is right-aligned.  The widths and alignment are those
    of the first ``TABLE_SAMPLE_ROWS`` rows, so that memory stays bounded: later rows are
    written as they come (a wider cell widens its line).
    """
    remaining = iter(rows)
    raw = [tuple(row) for row in itertools.islice(remaining, TABLE_SAMPLE_ROWS)]
    numeric = [
        any(isinstance(row[i], int | float) for row in raw)
        and all(row[i] is None or isinstance(row[i], int | float) for row in raw)
        for i in range(len(columns))
    ]
    cells = [[_cell(value) for value in row] for row in raw]
    widths = [len(name) for name in columns]
    for row in cells:
        for i, text in enumerate(row):
            widths[i] = max(widths[i], len(text))
    out.write("  ".join(name.ljust(widths[i]) for i, name in enumerate(columns)).rstrip() + "\n")
    out.write("  ".join("-" * width for width in widths) + "\n")
    later = ([_cell(value) for value in row] for row in remaining)
    for row in itertools.chain(cells, later):
        line = "  ".join(
            text.rjust(widths[i]) if numeric[i] else text.ljust(widths[i])
            for i, text in enumerate(row)
        )
        out.write(line.rstrip() + "\n")


def write_result(cursor: Result, mode: str, out: TextIO) -> None:
    """Write the rows of an executed statement in ``mode`` (nothing if it has no columns)."""
    if cursor.description is None:
        return
    columns = _column_names(cursor)
    if mode == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        for row in cursor:
            writer.writerow(["" if value is None else _json_value(value) for value in row])
    elif mode == "json":
        out.write("[")
        first = True
        for row in cursor:
            out.write("\n  " if first else ",\n  ")
            first = False
            out.write(
                json.dumps(
                    {name: _json_value(value) for name, value in zip(columns, row, strict=True)}
                )
            )
        out.write("\n]\n" if not first else "]\n")
    else:
        write_table(columns, cursor, out)
