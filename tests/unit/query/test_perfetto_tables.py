"""Perfetto's flow and counter tables and its table functions in ``nnemu query``."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import strategies as st

from nnemu.errors import TraceFormatError
from nnemu.query import open_trace
from nnemu.query._table_functions import ApswDatabase, QueryDatabase, to_apsw
from tests.commands import run_query, trace_processor_shell
from tests.tiers import tiered

T0_US = 1_000_000


def _event(ph: str, tid: int, us: int, name: str = "", **fields: object) -> dict[str, object]:
    return {"ph": ph, "pid": tid // 10, "tid": tid, "ts": T0_US + us, "name": name, **fields}


def _write_json(tmp_path: Path, events: list[dict[str, object]]) -> Path:
    """Write events one per line, as nnemu and Chrome do (so warnings name lines)."""
    path = tmp_path / "t.json"
    lines = ",\n".join(json.dumps(event) for event in events)
    path.write_text(f'{{"traceEvents": [\n{lines}\n]}}\n')
    return path


# Thread 10 (process 1): A > B > C nested, then D alone; thread 20 (process 2): S, then T.
NESTED = [
    _event("B", 10, 0, "A"),
    _event("B", 10, 1, "B"),
    _event("s", 10, 2, "call", cat="binder", id=7),
    _event("B", 10, 3, "C"),
    _event("E", 10, 4),
    _event("E", 10, 5),
    _event("E", 10, 9),
    _event("B", 20, 6, "S"),
    _event("t", 20, 7, "call", cat="binder", id="0x7"),
    _event("E", 20, 8),
    _event("f", 10, 10, "call", cat="binder", id=7),
    _event("X", 10, 11, "D", dur=4),
    _event("X", 20, 12, "T", dur=3),
    _event("s", 20, 13, "reply", cat="binder", id=8),
    _event("f", 10, 14, "reply", cat="binder", id=8, bp="e"),
]


def _rows(tmp_path: Path, sql: str, events: list[dict[str, object]] = NESTED) -> list[tuple]:
    database = ApswDatabase(to_apsw(open_trace(str(_write_json(tmp_path, events)))))
    try:
        return [tuple(row) for row in database.execute(sql)]
    finally:
        database.close()


def _command(trace: Path, sql: str) -> tuple[int, str, str]:
    return run_query(trace, sql, as_csv=True)


FLOW_NAMES = """
SELECT f.id, o.name, i.name, f.trace_id, extract_arg(f.arg_set_id, 'cat'),
       extract_arg(f.arg_set_id, 'name')
FROM flow f JOIN slice o ON o.id = f.slice_out JOIN slice i ON i.id = f.slice_in
ORDER BY f.id
"""


def test_flows_bind_as_trace_processor_binds_them(tmp_path):
    """s and t bind to the innermost open slice, f to the next slice, f with bp=e to its enclosing one."""
    assert _rows(tmp_path, FLOW_NAMES) == [
        (0, "B", "S", 0, "binder", "call"),  # the s inside B (C not begun yet); hex "0x7" is 7
        (1, "S", "D", 0, "binder", "call"),  # f without bp: the next slice on thread 10
        # s inside T, f with bp=e inside D: slice_out is the slice that began first (D).
        (2, "D", "T", 1, "binder", "reply"),  # trace_id numbers the flows' (cat, name, id)
    ]


def test_a_flow_end_does_not_move_the_flow_on(tmp_path):
    """A second f links the same source again; a second s with a started id is skipped."""
    events = []
    for first, second, us in (("A", "B", 0), ("C", "D", 10)):
        events += [
            _event("B", 10, us, first),
            _event("s", 10, us + 1, "r", id=1),
            _event("E", 10, us + 2),
            _event("B", 20, us + 3, second),
            _event("f", 20, us + 4, "r", id=1, bp="e"),
            _event("E", 20, us + 5),
        ]
    code, out, err = _command(
        _write_json(tmp_path, events),
        "SELECT o.name, i.name FROM flow f JOIN slice o ON o.id = f.slice_out"
        " JOIN slice i ON i.id = f.slice_in ORDER BY f.id",
    )
    assert (code, out.splitlines()) == (0, ["name,name:2", "A,B", "A,D"])
    assert err.endswith("t.json:9: warning: flow start (s) with an id already started; skipped\n")


def test_flow_events_without_a_slice_make_no_flow(tmp_path):
    """A flow start outside any slice, or an end with no start, is skipped with a warning."""
    events = [
        _event("s", 10, 0, "lost", id=1),
        _event("B", 10, 1, "A"),
        _event("f", 10, 2, "lost", id=1, bp="e"),
        _event("f", 10, 3, "never", id=2, bp="e"),
        _event("E", 10, 4),
    ]
    code, out, err = _command(_write_json(tmp_path, events), "SELECT count(*) FROM flow")
    assert (code, out) == (0, "count(*)\n0\n")
    assert "t.json:2: warning: flow event (s) with no enclosing slice" in err
    assert "t.json:5: warning: flow event (f) with no flow start (s) before it" in err


def test_json_counters_make_a_track_per_process_and_arg(tmp_path):
    """A C event gives one json_counter track per arg, named "<name> <key>", after the thread tracks."""
    events = [
        _event("B", 10, 0, "A"),
        _event("C", 10, 1, "queue", args={"waiting": 2, "busy": "1.5"}),
        _event("C", 10, 2, "queue", args={"waiting": 0, "label": "x", "huge": 10**400}),
        _event("C", 20, 3, "queue", args={"waiting": 4}),
        _event("E", 10, 4),
    ]
    sql = """
    SELECT c.id, c.ts, t.id, t.name, t.type, p.pid, c.value
    FROM counter c JOIN process_counter_track t ON t.id = c.track_id JOIN process p USING (upid)
    ORDER BY c.id
    """
    assert _rows(tmp_path, sql, events) == [
        (0, (T0_US + 1) * 1000, 1, "queue waiting", "json_counter", 1, 2.0),
        (1, (T0_US + 1) * 1000, 2, "queue busy", "json_counter", 1, 1.5),
        (2, (T0_US + 2) * 1000, 1, "queue waiting", "json_counter", 1, 0.0),
        (3, (T0_US + 3) * 1000, 3, "queue waiting", "json_counter", 2, 4.0),
    ]
    assert _rows(tmp_path, "SELECT id, name, type FROM counter_track ORDER BY id", events) == [
        (1, "queue waiting", "json_counter"),
        (2, "queue busy", "json_counter"),
        (3, "queue waiting", "json_counter"),
    ]


COUNTER_ROWS = [
    # (row, the value trace_processor_shell v58.2 stores, or None: no counter, a warning)
    ("C|100|a|5", 5.0),
    ("C|100|b| 7", 7.0),
    ("C|100|c|+7", 7.0),
    ("C|100|d|7|cat", 7.0),
    ("Cx|100|e|5", 5.0),
    ("C|100|f|7   ", 7.0),
    ("C|+100|g|3", 3.0),
    ("C|100|h|-4", -4.0),
    ("C|100|i|2.5", None),
    ("C|100|j|7 |cat", None),
    ("C|100||5", None),
    ("C|100|k|", None),
]


def test_systrace_counter_rows_are_read_as_trace_processor_reads_them(write_trace):
    """A counter's tgid and value are integers as C's strtoul/strtoll read them (a sign, leading
    whitespace; the row's trailing whitespace dropped) and its kind the first field's first
    character, as trace processor reads them; a fraction, a blank name or value is skipped."""
    path = write_trace([(0, "app", 100, 100, "A"), (1, "app", 100, 100, "E")])
    text = path.read_text().splitlines()
    row = text[2]
    path.write_text(
        "\n".join([*text, *(row.replace("B|100|A", mark) for mark, _ in COUNTER_ROWS)]) + "\n"
    )
    code, out, err = _command(
        path,
        "SELECT t.name, p.pid, c.value FROM counter c JOIN process_counter_track t"
        " ON t.id = c.track_id JOIN process p USING (upid) ORDER BY c.id",
    )
    assert code == 0
    loaded = [(mark.split("|")[2], value) for mark, value in COUNTER_ROWS if value is not None]
    assert out.splitlines()[1:] == [f"{name},100,{value}" for name, value in loaded]
    skipped = [n + 5 for n, (_, value) in enumerate(COUNTER_ROWS) if value is None]
    assert [int(line.split(":")[1]) for line in err.splitlines()] == skipped
    assert all(
        line.endswith("malformed counter mark: expected C|<tgid>|<name>|<integer>")
        for line in err.splitlines()
    )


def test_systrace_counter_rows_agree_with_trace_processor(write_trace, tmp_path):
    """The counter rows above give trace_processor_shell's counters (name, ts, value)."""
    shell = trace_processor_shell()
    path = write_trace([(0, "app", 100, 100, "A"), (1, "app", 100, 100, "E")])
    text = path.read_text().splitlines()
    row = text[2]
    path.write_text(
        "\n".join([*text, *(row.replace("B|100|A", mark) for mark, _ in COUNTER_ROWS)]) + "\n"
    )
    sql = (
        "SELECT t.name, c.value FROM counter c JOIN counter_track t ON t.id = c.track_id"
        " ORDER BY c.ts, c.id"
    )
    query = tmp_path / "q.sql"
    query.write_text(sql)
    done = subprocess.run(
        [shell, "-q", str(query), str(path)], capture_output=True, text=True, check=True
    )
    theirs = [
        (name.strip('"'), float(value))
        for name, value in (line.rsplit(",", 1) for line in done.stdout.strip().splitlines()[1:])
    ]
    code, out, _ = _command(path, sql)
    assert code == 0
    ours = [
        (name, float(value)) for name, value in (x.rsplit(",", 1) for x in out.splitlines()[1:])
    ]
    assert ours == theirs


def test_systrace_counter_marks_make_process_counter_tracks(write_trace):
    """C|tgid|name|value rows give atrace_counter tracks of the tgid's process; a bad value warns."""
    path = write_trace(
        [
            (0, "app", 100, 100, "A"),
            (1, "app", 100, 100, "E"),
        ]
    )
    text = path.read_text().splitlines()
    row = text[2]
    marks = ["C|100|inflight|3", "C|100|inflight|-1|cat", "C|200|inflight|2", "C|100|bad|1.5"]
    extra = [row.replace("B|100|A", mark) for mark in marks]
    path.write_text("\n".join([*text, *extra]) + "\n")
    code, out, err = _command(
        path,
        "SELECT t.id, t.name, t.type, p.pid, c.value FROM counter c"
        " JOIN process_counter_track t ON t.id = c.track_id JOIN process p USING (upid)"
        " ORDER BY c.id",
    )
    assert code == 0
    assert out.splitlines() == [
        "id,name,type,pid,value",
        "1,inflight,atrace_counter,100,3.0",
        "1,inflight,atrace_counter,100,-1.0",
        "2,inflight,atrace_counter,200,2.0",
    ]
    assert err.endswith(
        "t.txt:8: warning: malformed counter mark: expected C|<tgid>|<name>|<integer>\n"
    )


ANCESTORS = "SELECT id, name, depth, parent_id FROM ancestor_slice({}) ORDER BY id"
DESCENDANTS = "SELECT id, name, depth, parent_id FROM descendant_slice({}) ORDER BY id"


def test_ancestor_slice_gives_the_enclosing_slices(tmp_path):
    """ancestor_slice(id) is every slice above it up to depth 0; none for a top slice or NULL."""
    assert _rows(tmp_path, ANCESTORS.format(2)) == [(0, "A", 0, None), (1, "B", 1, 0)]
    assert _rows(tmp_path, ANCESTORS.format(1)) == [(0, "A", 0, None)]
    assert _rows(tmp_path, ANCESTORS.format(0)) == []
    assert _rows(tmp_path, ANCESTORS.format("NULL")) == []


def test_descendant_slice_gives_the_nested_slices_of_its_track(tmp_path):
    """descendant_slice(id) is every slice nested under it on its track, not later or other tracks."""
    assert _rows(tmp_path, DESCENDANTS.format(0)) == [(1, "B", 1, 0), (2, "C", 2, 1)]
    assert _rows(tmp_path, DESCENDANTS.format(1)) == [(2, "C", 2, 1)]
    assert _rows(tmp_path, DESCENDANTS.format(2)) == []
    # D (id 4) begins on thread 10 after A ended: not A's descendant.
    assert _rows(tmp_path, "SELECT count(*) FROM descendant_slice(4)") == [(0,)]


def test_table_functions_give_all_slice_columns(tmp_path):
    """ancestor_slice and descendant_slice have the slice table's columns, in its order."""
    slice_columns = _rows(tmp_path, "SELECT name FROM pragma_table_info('slice')")
    database = ApswDatabase(to_apsw(open_trace(str(_write_json(tmp_path, NESTED)))))
    for function in ("ancestor_slice(2)", "descendant_slice(0)"):
        result = database.execute(f"SELECT * FROM {function}")
        assert [(column[0],) for column in result.description] == slice_columns
        full = database.execute(
            f"SELECT s.* FROM slice s WHERE s.id IN (SELECT id FROM {function})"
        )
        assert sorted(result) == sorted(full)


def test_table_functions_take_columns_of_earlier_tables(tmp_path):
    """Correlated joins work as in Perfetto: each slice with its ancestors, and LEFT JOIN keeps tops."""
    pairs = _rows(
        tmp_path,
        "SELECT s.name, a.name FROM slice s JOIN ancestor_slice(s.id) a ORDER BY s.id, a.id",
    )
    assert pairs == [("B", "A"), ("C", "A"), ("C", "B")]
    roots = _rows(
        tmp_path,
        "SELECT s.name, a.name FROM slice s LEFT JOIN ancestor_slice(s.id) a ON a.depth = 0"
        " ORDER BY s.id",
    )
    assert roots == [("A", None), ("B", "A"), ("C", "A"), ("S", None), ("D", None), ("T", None)]
    counts = _rows(
        tmp_path,
        "SELECT name, (SELECT count(*) FROM descendant_slice(slice.id)) FROM slice ORDER BY id",
    )
    assert counts == [("A", 2), ("B", 1), ("C", 0), ("S", 0), ("D", 0), ("T", 0)]


def test_directly_connected_flow_follows_the_chain_both_ways(tmp_path):
    """directly_connected_flow(id) walks the chain through the slice breadth first, ids numbering rows."""
    flows = "SELECT id, slice_out, slice_in FROM directly_connected_flow({})"
    # The flows are B(1) -> S(3) -> D(4) -> T(5); as trace processor, the rows are found
    # from each slice reached (entering flows followed back, leaving ones forward).
    assert _rows(tmp_path, flows.format(1)) == [(0, 1, 3), (1, 3, 4), (2, 4, 5)]
    assert _rows(tmp_path, flows.format(4)) == [(0, 3, 4), (1, 4, 5), (2, 1, 3)]
    assert _rows(tmp_path, flows.format(5)) == [(0, 4, 5), (1, 3, 4), (2, 1, 3)]
    assert _rows(tmp_path, flows.format(0)) == []  # A: the flow leaves B, its child
    assert _rows(tmp_path, flows.format("NULL")) == []


def test_following_and_preceding_flow_reach_through_nesting(tmp_path):
    """following_flow takes descendants' flows onward, preceding_flow ancestors' flows back."""
    flows = "SELECT id, slice_out, slice_in FROM {}({})"
    # A(0) holds B(1), whose flow leaves for S(3), then S -> D(4) -> T(5).
    assert _rows(tmp_path, flows.format("following_flow", 0)) == [
        (0, 1, 3),
        (1, 3, 4),
        (2, 4, 5),
    ]
    assert _rows(tmp_path, flows.format("directly_connected_flow", 0)) == []
    assert _rows(tmp_path, flows.format("preceding_flow", 4)) == [(0, 3, 4), (1, 1, 3)]
    assert _rows(tmp_path, flows.format("preceding_flow", 2)) == []  # C: above it only A, B
    assert _rows(tmp_path, flows.format("following_flow", 5)) == []


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELECT * FROM ancestor_slice(99)", "query: ancestor_slice: no slice with id 99\n"),
        ("SELECT * FROM descendant_slice(99)", "query: descendant_slice: no slice with id 99\n"),
        (
            "SELECT * FROM directly_connected_flow(99)",
            "query: directly_connected_flow: no slice with id 99\n",
        ),
        ("SELECT * FROM following_flow(99)", "query: following_flow: no slice with id 99\n"),
        ("SELECT * FROM ancestor_slice", "query: no query solution\n"),
    ],
)
def test_unknown_slice_id_is_an_error(tmp_path, sql, message):
    """An id with no slice, or no argument at all, fails with exit 2 as in Perfetto."""
    assert _command(_write_json(tmp_path, NESTED), sql) == (2, "", message)


def test_without_apsw_the_error_says_what_to_install(tmp_path, monkeypatch):
    """Without apsw the tables still load and a table function names the package to install."""

    def missing(conn: object, *, close: bool) -> object:
        raise ImportError("No module named 'apsw'")

    monkeypatch.setattr("nnemu.query._table_functions.to_apsw", missing)
    path = _write_json(tmp_path, NESTED)
    assert _command(path, "SELECT count(*) FROM flow") == (0, "count(*)\n3\n", "")
    code, out, err = _command(path, "SELECT * FROM ancestor_slice(2)")
    assert (code, out) == (2, "")
    assert err == (
        "query: no such table: ancestor_slice (ancestor_slice() needs the apsw package"
        " (Python's sqlite3 has no table-valued functions): pip install 'nnemu[query]')\n"
    )


def test_empty_result_still_prints_its_columns(tmp_path):
    """A query with no rows prints its header, and a statement without columns prints nothing."""
    path = _write_json(tmp_path, NESTED)
    assert _command(path, "SELECT id, name FROM ancestor_slice(0)") == (0, "id,name\n", "")
    assert _command(path, "CREATE VIEW v AS SELECT 1") == (0, "", "")


def test_ordinary_queries_stay_on_sqlite3_and_temp_objects_follow(tmp_path):
    """Only a table function moves the database to apsw, and temp views and tables move with it."""
    database = QueryDatabase(open_trace(str(_write_json(tmp_path, NESTED))))
    try:
        database.execute("CREATE TEMP TABLE picked (id INTEGER)")
        database.execute("INSERT INTO picked VALUES (1), (2)")
        database.execute("CREATE INDEX picked_id ON picked(id)")
        database.execute("CREATE TEMP VIEW named AS SELECT id, name FROM slice")
        assert database.execute("SELECT count(*) FROM named").fetchall() == [(6,)]
        assert database.apsw is None
        rows = database.execute(
            "SELECT p.id, a.name FROM picked p JOIN ancestor_slice(p.id) a ORDER BY 1, 2"
        ).fetchall()
        assert rows == [(1, "A"), (2, "A"), (2, "B")]
        assert database.apsw is not None
        assert database.execute("SELECT name FROM named WHERE id = 5").fetchall() == [("T",)]
        temp = "SELECT type, name FROM temp.sqlite_master ORDER BY name"
        assert database.execute(temp).fetchall() == [
            ("view", "named"),
            ("table", "picked"),
            ("index", "picked_id"),
        ]
        assert database.execute(
            "SELECT count(*) FROM main.sqlite_master WHERE name = 'named'"
        ).fetchall() == [(0,)]
    finally:
        database.close()


def test_shell_uses_table_functions_after_other_statements(tmp_path):
    """In the shell a table function works after earlier statements, views included."""
    stdin = (
        "CREATE VIEW tops AS SELECT id FROM slice WHERE depth = 0;\n"
        "SELECT count(*) AS n FROM tops;\n"
        "SELECT t.id, count(d.id) AS below FROM tops t LEFT JOIN descendant_slice(t.id) d"
        " GROUP BY t.id ORDER BY t.id;\n"
    )
    code, out, err = run_query(_write_json(tmp_path, NESTED), stdin=stdin, as_csv=True)
    assert (code, err) == (0, "")
    assert out.splitlines() == ["n", "4", "id,below", "0,2", "3,0", "4,0", "5,0"]


@pytest.mark.parametrize("ident", [[1], {"local": 1}, True, 1.5, None])
def test_a_flow_event_without_a_usable_id_is_skipped(tmp_path, ident):
    """A flow id that is no number or text (a list, an object, a bool, a fraction) is warned about."""
    events = [
        _event("B", 10, 0, "A"),
        _event("s", 10, 1, "r", id=ident),
        _event("E", 10, 2),
    ]
    code, out, err = _command(_write_json(tmp_path, events), "SELECT count(*) FROM flow")
    assert (code, out) == (0, "count(*)\n0\n")
    assert err.endswith(
        "t.json:3: warning: s event without a tid, an id and a finite ts in range; skipped\n"
    )


_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=4),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)
_EVENTS = st.lists(
    st.fixed_dictionaries(
        {"ph": st.sampled_from(["B", "E", "X", "s", "t", "f", "C", "i"])},
        optional={
            "pid": _VALUES,
            "tid": _VALUES,
            "ts": _VALUES,
            "dur": _VALUES,
            "id": _VALUES,
            "bp": st.sampled_from(["e", "x", 1]),
            "cat": _VALUES,
            "name": _VALUES,
            "args": st.one_of(_VALUES, st.dictionaries(st.text(max_size=3), _VALUES, max_size=3)),
        },
    ),
    max_size=12,
)


@tiered(events=_EVENTS, quick=50, wide=150, derandomize=True)
def test_odd_flow_and_counter_events_never_break_the_load(events):
    """Any mix of odd slice, flow and counter events loads (warnings at most), and the tables hold."""
    import tempfile

    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "t.json"
        path.write_text(json.dumps({"traceEvents": events}))
        try:
            conn = open_trace(str(path))
        except TraceFormatError:
            return  # nothing to load: a slice-less trace is refused with a message
        database = ApswDatabase(to_apsw(conn, close=True))
        try:
            ids = {row[0] for row in database.execute("SELECT id FROM slice")}
            for out, into in database.execute("SELECT slice_out, slice_in FROM flow"):
                assert {out, into} <= ids
            tracks = {row[0] for row in database.execute("SELECT id FROM counter_track")}
            for (track,) in database.execute("SELECT track_id FROM counter"):
                assert track in tracks
            for (slice_id,) in database.execute("SELECT id FROM slice"):
                database.execute(f"SELECT count(*) FROM ancestor_slice({slice_id})").fetchall()
                database.execute(
                    f"SELECT count(*) FROM directly_connected_flow({slice_id})"
                ).fetchall()
        finally:
            database.close()


def test_without_apsw_installed_query_still_runs(tmp_path):
    """With apsw not importable at all, plain queries work and a table function exits 2 naming the extra."""
    path = _write_json(tmp_path, NESTED)
    check = (
        "import io, sys\n"
        "sys.modules['apsw'] = None\n"
        "from nnemu.cli import main\n"
        "for sql in sys.argv[2:]:\n"
        "    out, err = io.StringIO(), io.StringIO()\n"
        "    code = main(['query', '--csv', sys.argv[1], sql], out=out, err=err)\n"
        "    print(code, repr(out.getvalue()), repr(err.getvalue()))\n"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            check,
            str(path),
            "SELECT count(*) AS n FROM flow",
            "SELECT * FROM ancestor_slice(2)",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        cwd=Path(__file__).resolve().parents[3],
    )
    plain, table_function = done.stdout.splitlines()
    assert plain == "0 'n\\n3\\n' ''"
    assert table_function.startswith("2 '' ")
    assert "pip install 'nnemu[query]'" in table_function


def test_a_db_file_is_opened_by_apsw_in_place(tmp_path):
    """With --db, table functions run on the file itself: a table made after one is in the file."""
    trace, db = _write_json(tmp_path, NESTED), tmp_path / "t.db"
    statements = (
        "SELECT a.name FROM slice s, ancestor_slice(s.id) a WHERE s.depth = 2 ORDER BY a.depth;\n"
        "CREATE TABLE mine AS SELECT id FROM slice WHERE depth = 2;\n"
    )
    code, out, err = run_query(trace, stdin=statements, as_csv=True, db=db)
    assert (code, err) == (0, "")
    assert out == "name\nA\nB\n"
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM mine").fetchone() == (1,)
