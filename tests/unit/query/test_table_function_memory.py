"""A table function on a big trace's database copies it to a file, not into memory (issue 28,
item 12: ``ancestor_slice()`` on a 1 GB trace took 2.1 GB, a plain count 93 MB)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from tests.commands import SITE

pytest.importorskip("apsw")

SCRIPT = textwrap.dedent(
    """
    import resource, sqlite3, sys
    from nnemu.query._table_functions import to_apsw

    conn = sqlite3.connect("")  # SQLite's private temporary database, as a big trace gets
    conn.execute("CREATE TABLE slice (id INTEGER PRIMARY KEY, track_id INT, parent_id INT,"
                 " subtree_end_id INT, name TEXT, payload BLOB)")
    conn.execute("CREATE TABLE flow (id INTEGER PRIMARY KEY, slice_out INT, slice_in INT)")
    conn.execute("INSERT INTO slice VALUES (0, 1, NULL, 1, 'root', NULL)")
    conn.execute("INSERT INTO slice VALUES (1, 1, 0, 1, 'child', NULL)")
    for i in range(2, 130):
        conn.execute("INSERT INTO slice VALUES (?, 2, NULL, ?, 'pad', zeroblob(1048576))", (i, i))
    conn.commit()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    db = to_apsw(conn, close=True)
    names = [row[4] for row in db.execute("SELECT * FROM ancestor_slice(1)")]
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    print(names, round(grown_mb))
    """
)


def test_a_big_temporary_database_is_not_copied_into_memory():
    """ancestor_slice() on a 128 MB database without a file grows the process by less than
    half of it (serialize() held it twice: 256 MB)."""
    env = {**os.environ, "PYTHONPATH": str(SITE)}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, check=True
    )
    names, grown_mb = done.stdout.rsplit(" ", 1)
    assert names == "['root']"
    assert int(grown_mb) < 64


def test_the_copy_is_deleted_with_its_connection(monkeypatch, tmp_path):
    """The temporary file a big database is copied to is gone once its connection is closed."""
    import sqlite3

    import nnemu.query._table_functions as functions

    monkeypatch.setattr(functions, "MEMORY_COPY_MAX_BYTES", 0)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    conn = sqlite3.connect("")
    conn.execute(
        "CREATE TABLE slice (id INTEGER PRIMARY KEY, track_id INT, parent_id INT,"
        " subtree_end_id INT)"
    )
    conn.execute("CREATE TABLE flow (id INTEGER PRIMARY KEY, slice_out INT, slice_in INT)")
    conn.executemany("INSERT INTO slice VALUES (?, 1, ?, 2)", [(0, None), (1, 0), (2, 1)])
    conn.commit()
    db = functions.to_apsw(conn, close=True)
    assert [row[0] for row in db.execute("SELECT id FROM ancestor_slice(2)")] == [0, 1]
    assert len(os.listdir(tmp_path)) == 1
    db.close()
    del db
    assert os.listdir(tmp_path) == []
