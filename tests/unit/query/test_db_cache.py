"""``nnemu query --db``: the database file is reused while it holds the same trace."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from nnemu.query import _command
from tests.commands import run_query

ROWS = [
    (0, "app", 100, 100, "[NN_LR_PE]compute"),
    (10, "app", 100, 100, "child"),
    (15, "app", 100, 100, "E"),
    (20, "app", 100, 100, "E"),
]
SQL = "SELECT count(*) AS n FROM slice"


def _query(trace: Path, db: Path, sql: str = SQL) -> tuple[int, str, str]:
    return run_query(trace, sql, as_csv=True, db=db)


def _no_loading(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the trace was loaded again")

    monkeypatch.setattr(_command, "load_trace", refuse)


def test_second_query_reuses_the_database(write_trace, tmp_path, monkeypatch):
    """A second query on the same trace and --db answers from the file without loading."""
    trace, db = write_trace(ROWS), tmp_path / "t.db"
    assert _query(trace, db) == (0, "n\n2\n", "")
    _no_loading(monkeypatch)
    sql = "SELECT line FROM slice WHERE id = 1"
    assert _query(trace, db, sql) == (0, "line\n4\n", "")


def test_a_changed_trace_is_loaded_again(write_trace, tmp_path):
    """--db is reloaded when the trace's size or modification time differs from the load's."""
    trace, db = write_trace(ROWS), tmp_path / "t.db"
    assert _query(trace, db)[1] == "n\n2\n"
    write_trace(ROWS[:1] + ROWS[-1:])
    stamp = os.stat(trace).st_mtime_ns + 10**9
    os.utime(trace, ns=(stamp, stamp))
    assert _query(trace, db)[1] == "n\n1\n"


def test_another_schema_version_is_loaded_again(write_trace, tmp_path, monkeypatch):
    """A --db file written by another version of the query tables is not reused."""
    trace, db = write_trace(ROWS), tmp_path / "t.db"
    _query(trace, db)
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM slice")
    assert _query(trace, db)[1] == "n\n0\n"
    monkeypatch.setattr(_command, "SCHEMA_VERSION", _command.SCHEMA_VERSION + 1)
    assert _query(trace, db)[1] == "n\n2\n"


def test_reuse_prints_the_load_warnings_again(write_trace, tmp_path, monkeypatch):
    """The warnings of the load that made the --db file are printed on each reuse."""
    trace, db = write_trace([*ROWS, (30, "app", 100, 100, "E")]), tmp_path / "t.db"
    first = _query(trace, db)
    assert "warning: end mark (E) with no open section" in first[2]
    _no_loading(monkeypatch)
    assert _query(trace, db) == first


def test_reuse_keeps_the_count_of_hidden_warnings(write_trace, tmp_path, monkeypatch):
    """Beyond the first 20 warnings, a reuse prints the same closing count line."""
    extra = [(30 + i, "app", 100, 100, "E") for i in range(25)]
    trace, db = write_trace([*ROWS, *extra]), tmp_path / "t.db"
    first = _query(trace, db)
    assert first[2].endswith(f"{trace}: warning: 5 more warnings not shown\n")
    _no_loading(monkeypatch)
    assert _query(trace, db) == first


def test_load_tables_are_not_listed(write_trace, tmp_path):
    """The shell's .tables does not list the --db file's own bookkeeping tables."""
    trace, db = write_trace(ROWS), tmp_path / "t.db"
    out = ""
    for _ in range(2):
        code, out, _err = run_query(trace, stdin=".tables\n", db=db)
        assert code == 0
    assert "nnemu" not in out
    assert "slice\n" in out


def test_failed_load_leaves_the_older_database(write_trace, tmp_path):
    """A trace that cannot be loaded leaves the --db file as it was and no partial file."""
    trace, db = write_trace(ROWS), tmp_path / "t.db"
    _query(trace, db)
    before = db.read_bytes()
    trace.write_text("not a trace\n")
    code, _, err = _query(trace, db)
    assert code == 2
    assert "no slices found" in err
    assert db.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.db", "t.txt"]


def test_big_trace_without_db_gives_the_same_answers(write_trace, monkeypatch):
    """A trace over the in-memory bound loads into a temporary file and answers alike."""
    trace = write_trace(ROWS)
    sql = "SELECT id, name, dur, line FROM slice ORDER BY id"
    small = run_query(trace, sql, as_csv=True)
    monkeypatch.setattr(_command, "IN_MEMORY_MAX_BYTES", 0)
    assert run_query(trace, sql, as_csv=True) == small
    assert small[1].startswith("id,name,dur,line\n0,[NN_LR_PE]compute,20000,3\n")


def test_a_file_of_schema_1_is_loaded_again_with_the_flow_and_counter_tables(
    write_trace, tmp_path
):
    """A --db file from before the flow and counter tables (schema 1) is reloaded, not reused."""
    trace, db = write_trace(ROWS), tmp_path / "t.db"
    _query(trace, db)
    with sqlite3.connect(db) as conn:
        conn.execute("DROP TABLE flow")
        conn.execute("DROP TABLE counter")
        conn.execute("UPDATE nnemu_load SET value = 1 WHERE key = 'schema_version'")
    assert _command.SCHEMA_VERSION >= 2
    assert _query(trace, db, "SELECT count(*) AS n FROM flow, counter") == (0, "n\n0\n", "")


def test_a_file_of_schema_2_is_loaded_again_with_slice_line(write_trace, tmp_path):
    """A --db file from when the begin line was a ``line`` arg (schema 2) is reloaded, not reused."""
    trace, db = write_trace(ROWS), tmp_path / "t.db"
    _query(trace, db)
    with sqlite3.connect(db) as conn:
        # The file as schema 2 wrote it: no slice.line, the lines as args rows.
        conn.execute("DROP VIEW nnapi_slice")
        conn.execute("ALTER TABLE slice DROP COLUMN line")
        conn.execute("INSERT INTO args SELECT id, 'line', 3 + id FROM slice")
        conn.execute("UPDATE nnemu_load SET value = 2 WHERE key = 'schema_version'")
    assert _command.SCHEMA_VERSION >= 3
    sql = "SELECT s.id, s.line, (SELECT count(*) FROM args a WHERE a.key = 'line') AS line_args"
    sql += " FROM slice s ORDER BY s.id"
    assert _query(trace, db, sql) == (0, "id,line,line_args\n0,3,0\n1,4,0\n", "")
