"""Perfetto's table functions: ``ancestor_slice``, ``descendant_slice`` and the flow walks.

Python's ``sqlite3`` cannot define table-valued functions, so they live on an
``apsw`` connection: ``apsw`` defines SQLite virtual tables, and an eponymous
virtual table with a HIDDEN argument column is what SQLite calls a table-valued
function. It takes its argument from a column to its left, so correlated joins
(``FROM slice s JOIN ancestor_slice(s.id) a``) work as in Perfetto. The database
loaded through ``sqlite3`` is copied in memory (``serialize``/``deserialize``).

Semantics follow Perfetto's trace processor (v58): ``ancestor_slice(id)`` and
``descendant_slice(id)`` give the rows of ``slice`` (all its columns) of the
slice's ancestors / descendants, in id order; ``directly_connected_flow(id)``
the rows of ``flow`` in the chains of flows entering and leaving the slice,
``following_flow(id)`` those reached forward from the slice and its
descendants, ``preceding_flow(id)`` backward from the slice and its ancestors,
breadth first, with ``id`` numbering the rows (as trace processor does). A NULL
argument gives no rows; an id with no slice is an error, as in Perfetto; a call
without an argument is SQLite's "no query solution".
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Final, cast

if TYPE_CHECKING:
    import apsw

MISSING_APSW: Final = (
    "{name}() needs the apsw package (Python's sqlite3 has no table-valued functions):"
    " pip install 'nnemu[query]'"
)
"""The hint added to SQLite's ``no such table`` when apsw is not installed."""

FUNCTIONS: Final = (
    "ancestor_slice",
    "descendant_slice",
    "directly_connected_flow",
    "following_flow",
    "preceding_flow",
)
"""The table functions defined here."""

Row = tuple[Any, ...]
Rows = Callable[["apsw.Connection", int], list[Row]]


def _slice_exists(db: apsw.Connection, slice_id: int, function: str) -> tuple[int, int]:
    """(track_id, subtree_end_id) of slice ``slice_id``; an error naming it if there is none."""
    row = db.execute(
        "SELECT track_id, subtree_end_id FROM slice WHERE id = ?", (slice_id,)
    ).fetchone()
    if row is None:
        import apsw

        msg = f"{function}: no slice with id {slice_id}"
        raise apsw.SQLError(msg)
    return int(row[0]), int(row[1])


_ANCESTORS: Final = """
WITH RECURSIVE up(id) AS (
    SELECT parent_id FROM slice WHERE id = ?
    UNION ALL
    SELECT slice.parent_id FROM slice JOIN up ON slice.id = up.id
)
SELECT slice.* FROM up CROSS JOIN slice ON slice.id = up.id ORDER BY slice.id
"""
"""Ancestors by parent_id, each found by its primary key (CROSS JOIN keeps ``up`` outer:
without it SQLite may scan ``slice`` once per call)."""


def _ancestors(db: apsw.Connection, slice_id: int) -> list[Row]:
    _slice_exists(db, slice_id, "ancestor_slice")
    return [tuple(row) for row in db.execute(_ANCESTORS, (slice_id,))]


def _descendants(db: apsw.Connection, slice_id: int) -> list[Row]:
    track_id, subtree_end_id = _slice_exists(db, slice_id, "descendant_slice")
    # Ids are given in begin order: the descendants are the ids in (id, subtree_end_id].
    return [
        tuple(row)
        for row in db.execute(
            "SELECT * FROM slice WHERE track_id = ? AND id > ? AND id <= ? ORDER BY id",
            (track_id, slice_id, subtree_end_id),
        )
    ]


def _connected_flows(db: apsw.Connection, slice_id: int) -> list[Row]:
    """The flows of the chains through ``slice_id``, breadth first, as trace processor gives them.

    From each slice reached the flows entering it are followed back and those
    leaving it forward; trace processor numbers the rows 0, 1, ... in that order
    in the ``id`` column (it is not ``flow.id``), and so does this.
    """
    _slice_exists(db, slice_id, "directly_connected_flow")
    queue: deque[tuple[int, bool]] = deque([(slice_id, False), (slice_id, True)])
    seen: set[int] = set()
    rows: list[Row] = []
    while queue:
        current, forward = queue.popleft()
        near = "slice_out" if forward else "slice_in"
        for row in db.execute(f"SELECT * FROM flow WHERE {near} = ? ORDER BY id", (current,)):
            if row[0] in seen:
                continue
            seen.add(row[0])
            rows.append((len(rows), *row[1:]))
            queue.append((row[2] if forward else row[1], forward))
    return rows


def _relative_flows(db: apsw.Connection, slice_id: int, *, following: bool) -> list[Row]:
    """The flows ``following_flow`` / ``preceding_flow`` reach, as trace processor finds them.

    Breadth first over the slices reached: following, each one and then its
    descendants in id order give their leaving flows; preceding, each one gives
    its entering flows and then its parent is reached. The other end of each
    flow is reached next. Rows are numbered 0, 1, ... in that order in ``id``.
    """
    _slice_exists(db, slice_id, "following_flow" if following else "preceding_flow")
    near, far = ("slice_out", 2) if following else ("slice_in", 1)
    queue: deque[int] = deque([slice_id])
    reached = {slice_id}
    expanded: set[int] = set()
    seen: set[int] = set()
    rows: list[Row] = []
    while queue:
        current = queue.popleft()
        if following:
            track_id, subtree_end_id = _slice_exists(db, current, "following_flow")
            group = [
                int(row[0])
                for row in db.execute(
                    "SELECT id FROM slice WHERE track_id = ? AND id >= ? AND id <= ? ORDER BY id",
                    (track_id, current, subtree_end_id),
                )
            ]
        else:
            group = [current]
        for member in group:
            if member in expanded:
                continue
            expanded.add(member)
            for row in db.execute(f"SELECT * FROM flow WHERE {near} = ? ORDER BY id", (member,)):
                if row[0] not in seen:
                    seen.add(row[0])
                    rows.append((len(rows), *row[1:]))
                if row[far] not in reached:
                    reached.add(row[far])
                    queue.append(row[far])
        if not following:
            parent = db.execute("SELECT parent_id FROM slice WHERE id = ?", (current,)).fetchone()
            if parent is not None and parent[0] is not None and parent[0] not in reached:
                reached.add(parent[0])
                queue.append(parent[0])
    return rows


def _following_flows(db: apsw.Connection, slice_id: int) -> list[Row]:
    return _relative_flows(db, slice_id, following=True)


def _preceding_flows(db: apsw.Connection, slice_id: int) -> list[Row]:
    return _relative_flows(db, slice_id, following=False)


class _Cursor:
    """Walks the rows one call of a table function gave."""

    def __init__(self, table: _Table) -> None:
        self.table = table
        self.rows: list[Row] = []
        self.index = 0
        self.argument: object = None

    def Filter(self, index_number: int, index_string: str | None, args: Sequence[object]) -> None:
        self.index = 0
        self.argument = args[0] if args else None
        if not isinstance(self.argument, int):
            self.rows = []  # NULL (or a value that is no id) names no slice
            return
        self.rows = self.table.rows(self.table.db, self.argument)

    def Eof(self) -> bool:
        return self.index >= len(self.rows)

    def Next(self) -> None:
        self.index += 1

    def Rowid(self) -> int:
        return self.index

    def Column(self, number: int) -> object:
        if number == -1:
            return self.index
        if number >= self.table.width:
            return self.argument
        return self.rows[self.index][number]

    def Close(self) -> None:
        self.rows = []


class _Table:
    """One table function: its columns, then the HIDDEN argument column."""

    def __init__(self, db: apsw.Connection, columns: Sequence[str], rows: Rows) -> None:
        self.db = db
        self.width = len(columns)
        self.rows = rows

    def BestIndexObject(self, info: apsw.IndexInfo) -> bool:
        import apsw

        for number in range(info.nConstraint):
            if (
                info.get_aConstraint_iColumn(number) == self.width
                and info.get_aConstraint_usable(number)
                and info.get_aConstraint_op(number) == apsw.SQLITE_INDEX_CONSTRAINT_EQ
            ):
                info.set_aConstraintUsage_argvIndex(number, 1)
                info.set_aConstraintUsage_omit(number, True)
                info.estimatedCost = 10.0
                info.estimatedRows = 10
                return True
        return False  # not usable without its argument: SQLite tries another order

    def Open(self) -> _Cursor:
        return _Cursor(self)

    def Disconnect(self) -> None:
        pass

    Destroy = Disconnect


class _Module:
    def __init__(self, columns: Sequence[str], argument: str, rows: Rows) -> None:
        self.columns = columns
        self.argument = argument
        self.rows = rows

    def Connect(
        self,
        connection: apsw.Connection,
        modulename: str,
        databasename: str,
        tablename: str,
        *args: object,
    ) -> tuple[str, _Table]:
        names = ", ".join(f'"{name}"' for name in self.columns)
        schema = f'CREATE TABLE x({names}, "{self.argument}" HIDDEN)'
        return schema, _Table(connection, self.columns, self.rows)

    Create = Connect


def _columns(db: apsw.Connection, table: str) -> list[str]:
    return [str(row[1]) for row in db.execute(f"PRAGMA table_info({table})")]


def register_table_functions(db: apsw.Connection) -> None:
    """Define the table functions and ``extract_arg`` on ``db`` (which holds the tables)."""
    slice_columns = _columns(db, "slice")
    flow_columns = _columns(db, "flow")
    modules = {
        "ancestor_slice": _Module(slice_columns, "slice_id", _ancestors),
        "descendant_slice": _Module(slice_columns, "slice_id", _descendants),
        "directly_connected_flow": _Module(flow_columns, "slice_id", _connected_flows),
        "following_flow": _Module(flow_columns, "slice_id", _following_flows),
        "preceding_flow": _Module(flow_columns, "slice_id", _preceding_flows),
    }
    for name, module in modules.items():
        db.create_module(
            name,
            cast("apsw.VTModule", module),
            use_bestindex_object=True,
            eponymous_only=True,
            read_only=True,
        )

    def extract_arg(*values: apsw.SQLiteValue) -> apsw.SQLiteValue:
        arg_set_id, key = values
        if arg_set_id is None or key is None:
            return None
        row = db.execute(
            "SELECT value FROM args WHERE arg_set_id = ? AND key = ?", (arg_set_id, key)
        ).fetchone()
        value: apsw.SQLiteValue = None if row is None else row[0]
        return value

    db.create_scalar_function("extract_arg", extract_arg, 2, deterministic=True)


def _in_temp(kind: str, sql: str) -> str:
    """A temp object's stored ``CREATE`` (SQLite keeps it without TEMP) made to create it in temp."""
    if kind == "index":
        return re.sub(
            r"^(CREATE\s+(?:UNIQUE\s+)?INDEX\s+(?:IF\s+NOT\s+EXISTS\s+)?)",
            r"\1temp.",
            sql,
            count=1,
            flags=re.IGNORECASE,
        )
    return re.sub(r"^CREATE\s+", "CREATE TEMP ", sql, count=1, flags=re.IGNORECASE)


MEMORY_COPY_MAX_BYTES: Final = 64 * 1024 * 1024
"""Largest database without a file that ``to_apsw`` copies into memory; a larger one is
copied into a temporary file."""


def _file_copy(conn: sqlite3.Connection) -> apsw.Connection:
    """An apsw connection on a copy of ``conn``'s main database in a temporary file, which is
    deleted when the connection is (or at exit)."""
    import shutil
    import tempfile
    import weakref

    import apsw

    directory = tempfile.mkdtemp(prefix="nnemu-query-")
    try:
        copy = os.path.join(directory, "trace.db")
        target = sqlite3.connect(copy)
        try:
            conn.backup(target, pages=4096)  # (in steps: a signal handler runs between them)
        finally:
            target.close()
        db = apsw.Connection(copy)
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    weakref.finalize(db, shutil.rmtree, directory, ignore_errors=True)
    return db


def to_apsw(conn: sqlite3.Connection, *, close: bool = False) -> apsw.Connection:
    """The database ``conn`` on ``apsw``, with the table functions: a database file
    (``--db``) is opened by apsw in place; one in memory (or SQLite's private temporary
    file) is copied into apsw's memory, or past MEMORY_COPY_MAX_BYTES into a temporary file.

    Args:
        conn: The loaded database.
        close: Close ``conn`` once copied out, so that the two copies are not held at once.

    Raises:
        ImportError: apsw is not installed (``conn`` is left open).
    """
    import apsw

    # The temp schema is the connection's own: its objects are made again, tables with their rows.
    temp = conn.execute(
        "SELECT type, name, sql FROM temp.sqlite_master WHERE sql IS NOT NULL ORDER BY rowid"
    ).fetchall()
    temp_rows = {
        name: conn.execute(f'SELECT * FROM temp."{name}"').fetchall()
        for kind, name, _ in temp
        if kind == "table"
    }
    path = next((row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main"), "")
    (pages,) = conn.execute("PRAGMA page_count").fetchone()
    (page_size,) = conn.execute("PRAGMA page_size").fetchone()
    if path:
        conn.commit()
        db = apsw.Connection(path)
        if close:
            conn.close()
    elif pages * page_size > MEMORY_COPY_MAX_BYTES:
        # SQLite's private temporary database (a big trace's): copied page by page into a
        # file of our own, since serialize() would hold it in memory twice (a 1 GB trace's
        # ancestor_slice() took 2.1 GB, its plain count 93 MB).
        db = _file_copy(conn)
        if close:
            conn.close()
    else:
        db = apsw.Connection(":memory:")
        image = conn.serialize()
        if close:
            conn.close()
        db.deserialize("main", image)
        del image
    for kind, name, sql in temp:
        db.execute(_in_temp(kind, sql))
        rows = temp_rows.get(name)
        if kind == "table" and rows:
            marks = ", ".join("?" * len(rows[0]))
            db.executemany(f'INSERT INTO temp."{name}" VALUES ({marks})', rows)
    register_table_functions(db)
    return db


class ApswResult:
    """An executed statement on an apsw connection, read like a ``sqlite3.Cursor``."""

    def __init__(self, cursor: apsw.Cursor, description: tuple[tuple[str, ...], ...] | None):
        self._cursor = cursor
        self.description = description
        """Column names first in each item, as ``sqlite3``; None for a statement without rows."""

    def __iter__(self) -> Iterator[Row]:
        return iter(self._cursor)

    def fetchall(self) -> list[Row]:
        """The remaining rows."""
        return list(self._cursor)

    def fetchone(self) -> Row | None:
        """The next row, or None."""
        row: Row | None = self._cursor.fetchone()
        return row


_CALL_RE: Final = re.compile(r"\b(?:" + "|".join(FUNCTIONS) + r")\b", re.IGNORECASE)


PROGRESS_STEPS: Final = 100_000
"""SQLite virtual-machine steps between two calls of ``_tick`` (a few ms)."""


def _tick() -> bool:
    """SQLite's progress callback: Python code, so that a signal handler (Ctrl-C) runs in the
    middle of a long statement instead of after it (sqlite3 runs its statement without
    the interpreter); False lets the statement go on."""
    return False


class QueryDatabase:
    """Runs statements on ``sqlite3`` until one calls a table function, then on apsw.

    The first such statement copies the database to apsw (closing the ``sqlite3``
    connection, so the two copies are not kept); ordinary queries never pay for it.
    Without apsw the statement runs on ``sqlite3``, whose ``no such table`` error
    ``explain_error`` completes with what to install.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.apsw: ApswDatabase | None = None
        conn.set_progress_handler(_tick, PROGRESS_STEPS)

    def interrupt(self) -> None:
        """Make the running statement fail with SQLite's ``interrupted`` (any thread; from a
        signal handler, which ``_tick`` gives its moment to run)."""
        if self.apsw is not None:
            self.apsw.db.interrupt()
        else:
            self.conn.interrupt()

    def execute(self, sql: str, bindings: Sequence[Any] = ()) -> Any:
        """Run one statement; its rows are read from the result (a cursor).

        Raises:
            sqlite3.Error, apsw.Error: The statement failed.
        """
        if self.apsw is None and _CALL_RE.search(sql):
            try:
                self.apsw = ApswDatabase(to_apsw(self.conn, close=True))
                self.apsw.db.set_progress_handler(_tick, PROGRESS_STEPS)
            except ImportError:
                pass
        if self.apsw is not None:
            return self.apsw.execute(sql, bindings)
        return self.conn.execute(sql, bindings)

    def close(self) -> None:
        """Close the connection in use."""
        if self.apsw is not None:
            self.apsw.close()
        self.conn.close()


class ApswDatabase:
    """The query database on apsw, with the table functions; ``execute`` as ``sqlite3``'s."""

    def __init__(self, db: apsw.Connection) -> None:
        self.db = db

    def execute(self, sql: str, bindings: Sequence[object] = ()) -> ApswResult:
        """Run one statement; its rows are read from the result.

        Raises:
            apsw.Error: The statement failed.
        """
        import apsw.ext

        # apsw describes only a statement that has rows left, so ask SQLite before running it.
        columns = apsw.ext.query_info(self.db, sql, bindings).description
        cursor = self.db.execute(sql, bindings)
        return ApswResult(cursor, tuple(columns) if columns else None)

    def close(self) -> None:
        """Close the connection."""
        self.db.close()


def query_errors() -> tuple[type[Exception], ...]:
    """The exceptions a failing statement raises (sqlite3's, and apsw's when installed)."""
    errors: tuple[type[Exception], ...] = (sqlite3.Error, sqlite3.Warning)
    try:
        import apsw
    except ImportError:
        return errors
    return (*errors, apsw.Error)


def explain_error(err: Exception) -> str:
    """The message of a failed statement, with how to get the table functions if missing."""
    text = str(err).removeprefix(f"{type(err).__name__}: ")  # older apsw names the class
    for name in FUNCTIONS:
        if text == f"no such table: {name}":
            return f"{text} ({MISSING_APSW.format(name=name)})"
    return text
