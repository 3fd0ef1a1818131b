"""How the query loader writes ``slice`` and ``args`` rows: multi-row ``INSERT`` statements,
the columns of a slice that are None left out, and the layout of a slice still open.

The loader calls it per statement (a wheel compiles the loader, not this: ``nnemu._native``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Final

ROWS_PER_INSERT: Final = 200
"""Rows per multi-row ``INSERT ... VALUES (...), (...)`` (far fewer statement steps than
one ``executemany`` row at a time; 200 x 13 parameters is within SQLite's limit)."""
ARGS_PER_INSERT: Final = 1000
"""``args`` rows per ``INSERT`` (3 values each; ~7% less insert time than 200 rows in
isolation, within noise in a whole load; 500 slice rows were no better than 200)."""
ARG_VALUES: Final = 3 * ARGS_PER_INSERT
"""Values of one ``args`` statement: buffered rows are written once there are this many."""
ARGS_STATEMENT: Final = "INSERT INTO args VALUES " + ", ".join(["(?, ?, ?)"] * ARGS_PER_INSERT)


def insert_rows(
    conn: sqlite3.Connection,
    table: str,
    width: int,
    flat: Sequence[object],
    rows: int = ROWS_PER_INSERT,
) -> None:
    """Insert the rows of ``width`` values laid end to end in ``flat`` into ``table``, in order,
    ``rows`` to a statement."""
    one = "(" + ", ".join("?" * width) + ")"
    step = rows * width
    whole = len(flat) - len(flat) % step
    if whole:
        statement = f"INSERT INTO {table} VALUES " + ", ".join([one] * rows)
        execute = conn.execute
        for start in range(0, whole, step):
            execute(statement, flat[start : start + step])
    if whole < len(flat):
        conn.executemany(
            f"INSERT INTO {table} VALUES {one}",
            [flat[start : start + width] for start in range(whole, len(flat), width)],
        )


SLICE_COLUMNS: Final = (
    "id",
    "ts",
    "dur",
    "name",
    "depth",
    "parent_id",
    "track_id",
    "category",
    "layer",
    "phase",
    "kind",
    "arg_set_id",
    "line",
    "subtree_end_id",
)
"""The ``slice`` table's columns, in the order of a section's list (``INSERT`` names them)."""
NULL_PARENT: Final = 1
"""Bit of a section's ``_NULLS``: its ``parent_id`` is None."""
NULL_CATEGORY: Final = 2
"""Bit: its ``category`` is None."""
NULL_LAYER: Final = 4
"""Bit: its ``layer`` is None."""
NULL_PHASE: Final = 8
"""Bit: its ``phase`` is None."""
NULL_ARGS: Final = 16
"""Bit: its ``arg_set_id`` is None."""
NULL_LINE: Final = 32
"""Bit: its ``line`` is None (the input has no lines: Perfetto protobuf, a JSON document)."""
NULLABLE: Final = (
    (NULL_PARENT, 5),
    (NULL_CATEGORY, 7),
    (NULL_LAYER, 8),
    (NULL_PHASE, 9),
    (NULL_ARGS, 11),
    (NULL_LINE, 12),
)
"""(bit, column index) of each column that may be None."""
ALL_NULLS: Final = NULL_PARENT | NULL_CATEGORY | NULL_LAYER | NULL_PHASE | NULL_ARGS | NULL_LINE
SLICE_STEPS: Final = tuple(
    (len(SLICE_COLUMNS) - bin(nulls).count("1")) * ROWS_PER_INSERT for nulls in range(ALL_NULLS + 1)
)
"""Values of one slice statement, by ``_NULLS`` (each bit leaves one column out): a set of
None columns' rows are written once there are this many."""


class SliceInsert:
    """How the slice rows whose None columns are one set are written: those columns are left
    out of the ``INSERT`` (SQLite stores NULL), so no None is bound (Python's sqlite3 looks
    an adapter up for each None it binds: ~0.3 µs, a quarter of a row's insert)."""

    __slots__ = ("one", "statement", "width")

    one: str
    """The one-row ``INSERT``."""
    statement: str
    """The ``ROWS_PER_INSERT``-row ``INSERT``."""
    width: int
    """Values per row."""

    def __init__(self, nulls: int) -> None:
        left_out = {index for bit, index in NULLABLE if nulls & bit}
        names = ", ".join(name for i, name in enumerate(SLICE_COLUMNS) if i not in left_out)
        self.width = len(SLICE_COLUMNS) - len(left_out)
        values = "(" + ", ".join("?" * self.width) + ")"
        self.one = f"INSERT INTO slice ({names}) VALUES {values}"
        self.statement = f"INSERT INTO slice ({names}) VALUES " + ", ".join(
            [values] * ROWS_PER_INSERT
        )


# A section is a list laid out as its ``slice`` row without the columns that are None:
# (id, ts, dur, name, depth, [parent_id], track_id, [category], [layer], [phase], kind,
# [arg_set_id], [line], subtree_end_id), and last its ``_NULLS``: which columns are left out
# (bits ``NULL_PARENT``...).  While it is open, ``dur`` holds its end (None but for JSON X
# (complete) and instant events) and ``subtree_end_id`` is 0; its end takes the bits off,
# fills both in and adds the row to the rows of its bits (``Loader._flats``), which are
# written as soon as they fill one statement (``SLICE_STEPS``).
OpenSlice = list[object]
END_AT: Final = 2
"""Index of ``dur`` in an open section: its end (None unless known in advance)."""
