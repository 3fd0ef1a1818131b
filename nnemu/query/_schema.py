"""The SQLite schema ``nnemu query`` loads traces into, shaped like Perfetto's tables."""

from __future__ import annotations

import sqlite3
from typing import Final

from nnemu.query import _perfetto_tables
from nnemu.tracer import Layer, Phase

SCHEMA_VERSION: Final = 3
"""Version of the tables below; a ``--db`` file loaded by another version is reloaded.
Raise it with any change to what a load writes (tables, columns, values).  2: Perfetto's
``flow``, ``counter`` and ``process_counter_track`` tables.  3: a slice's begin line is
``slice.line`` (and ``nnapi_slice.line``), no longer a ``line`` row of ``args``."""

TABLES: Final = """
CREATE TABLE process (
    upid INTEGER PRIMARY KEY,
    pid INTEGER,
    name TEXT
);
CREATE TABLE thread (
    utid INTEGER PRIMARY KEY,
    tid INTEGER,
    name TEXT,
    upid INTEGER REFERENCES process(upid)
);
CREATE TABLE thread_track (
    id INTEGER PRIMARY KEY,
    utid INTEGER REFERENCES thread(utid),
    name TEXT
);
CREATE TABLE slice (
    id INTEGER PRIMARY KEY,
    ts INTEGER NOT NULL,
    dur INTEGER NOT NULL,
    name TEXT,
    depth INTEGER NOT NULL,
    parent_id INTEGER,
    track_id INTEGER NOT NULL REFERENCES thread_track(id),
    category TEXT,
    layer TEXT,
    phase TEXT,
    kind TEXT NOT NULL,
    arg_set_id INTEGER,
    subtree_end_id INTEGER NOT NULL,
    line INTEGER
);
CREATE TABLE args (
    arg_set_id INTEGER NOT NULL,
    key TEXT NOT NULL,
    value
);
CREATE TABLE nnapi_layer (code TEXT PRIMARY KEY, name TEXT);
CREATE TABLE nnapi_phase (code TEXT PRIMARY KEY, name TEXT);
"""
"""Tables, created before loading."""

EARLY_INDEXES: Final = """
CREATE INDEX args_arg_set_id ON args(arg_set_id);
"""
"""Indexes created with the tables, kept as rows come: a load writes ``args`` rows in
``arg_set_id`` order (a slice's args when it begins, slices numbered in begin order), so
this index only grows at its end, which costs less than sorting its keys after the load
(about 0.01 s of 0.04 s for 350,000 rows)."""
INDEXES: Final = """
CREATE INDEX slice_track_id ON slice(track_id);
CREATE INDEX slice_parent_id ON slice(parent_id) WHERE parent_id IS NOT NULL;
"""
"""Indexes, created after loading (cheaper than maintaining them row by row).  With
``EARLY_INDEXES`` they are what the views, the table functions and ``extract_arg`` look
up; building them is about a fifth of a load, so there are no more: ``track_id`` alone
(an index ends with the rowid, which ``id`` is: ``track_id = ? AND id > ?`` is the same
search as with ``(track_id, id)``, the index a third smaller and cheaper to build),
``parent_id`` is
indexed where it is set (a ``parent_id = ?`` look-up uses it; the roots, a third of the
slices, are left out), ``args`` on ``arg_set_id`` alone (an arg set is a few rows), and
``name`` not at all (an equality look-up scans the table, ~10 ms per 150,000 slices; a
join on it gets SQLite's automatic index)."""

# Descendants of P are the slices begun on P's track while P was open: ids are
# given in begin order, so they are exactly the ids in (P.id, P.subtree_end_id]
# on P.track_id.  Unlike a recursive CTE, these plain joins are flattened by
# SQLite, so a WHERE on id uses the track_id index (its rowid is id).
VIEWS: Final = """
CREATE VIEW slice_descendant AS
SELECT p.id AS id, c.id AS descendant_id, c.depth - p.depth AS distance
FROM slice AS p
JOIN slice AS c ON c.track_id = p.track_id AND c.id > p.id AND c.id <= p.subtree_end_id;

CREATE VIEW slice_ancestor AS
SELECT c.id AS id, p.id AS ancestor_id, c.depth - p.depth AS distance
FROM slice AS c
JOIN slice AS p ON p.track_id = c.track_id AND p.id < c.id AND p.subtree_end_id >= c.id;

CREATE VIEW nnapi_slice AS
SELECT
    slice.id, slice.ts, slice.dur, slice.name, slice.depth, slice.parent_id,
    slice.track_id, slice.category, slice.layer, slice.phase, slice.kind, slice.arg_set_id,
    slice.line,
    thread.utid, thread.tid, thread.name AS thread_name,
    process.upid, process.pid, process.name AS process_name
FROM slice
JOIN thread_track ON thread_track.id = slice.track_id
JOIN thread USING (utid)
LEFT JOIN process USING (upid)
WHERE slice.layer IS NOT NULL;
"""
"""Helper views (see ``docs/query.md``)."""


def create_tables(conn: sqlite3.Connection) -> None:
    """Create the tables (and ``EARLY_INDEXES``) and fill the layer/phase code tables."""
    conn.executescript(TABLES + _perfetto_tables.TABLES + EARLY_INDEXES)
    conn.executemany(
        "INSERT INTO nnapi_layer VALUES (?, ?)",
        [(layer.value, layer.name.lower()) for layer in Layer],
    )
    conn.executemany(
        "INSERT INTO nnapi_phase VALUES (?, ?)",
        [(phase.value, phase.name.lower()) for phase in Phase],
    )


def finish_schema(conn: sqlite3.Connection) -> None:
    """Create the indexes, views and helper functions once the rows are in."""
    conn.executescript(INDEXES + _perfetto_tables.INDEXES + VIEWS + _perfetto_tables.VIEWS)
    register_functions(conn)


def register_functions(conn: sqlite3.Connection) -> None:
    """Register ``extract_arg(arg_set_id, key)`` as Perfetto's ``EXTRACT_ARG``."""

    def extract_arg(arg_set_id: int | None, key: str | None) -> str | int | float | bytes | None:
        if arg_set_id is None or key is None:
            return None
        row = conn.execute(
            "SELECT value FROM args WHERE arg_set_id = ? AND key = ?", (arg_set_id, key)
        ).fetchone()
        value: str | int | float | bytes | None = None if row is None else row[0]
        return value

    conn.create_function("extract_arg", 2, extract_arg, deterministic=True)
