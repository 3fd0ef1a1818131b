"""``nnemu query`` answers Perfetto-style queries as Perfetto's own trace processor does.

The trace processor is ``trace_processor_shell``: ``NNEMU_TRACE_PROCESSOR`` names it,
else ``../shared/tools/trace_processor_shell`` beside the repository is used when
present; without either these tests skip.
"""

from __future__ import annotations

import csv
import io
import json
import subprocess
from pathlib import Path

import pytest

from nnemu import load_scenario, run
from nnemu.query import open_trace
from nnemu.query._table_functions import ApswDatabase, to_apsw
from nnemu.tracer import open_trace_writer
from tests.commands import trace_processor_shell

REPO = Path(__file__).resolve().parents[3]

ANCESTOR_QUERY = """
SELECT s.name AS slice, a.name AS root, count(*) AS calls, sum(s.dur) AS dur
FROM slice s JOIN ancestor_slice(s.id) a ON a.depth = 0
WHERE s.name LIKE 'HIDL::%::client'
GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2
"""
FLOW_QUERY = """
SELECT o.name AS out_name, i.name AS in_name, count(*) AS flows, sum(i.ts - o.ts) AS latency
FROM flow f JOIN slice o ON o.id = f.slice_out JOIN slice i ON i.id = f.slice_in
GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2
"""
DESCENDANT_QUERY = """
SELECT s.name, count(d.id) AS descendants, max(d.depth) AS deepest
FROM slice s LEFT JOIN descendant_slice(s.id) d
WHERE s.depth = 0
GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 20
"""
CONNECTED_QUERY = """
SELECT s.name, (SELECT count(*) FROM directly_connected_flow(s.id)) AS connected
FROM slice s
WHERE s.name LIKE '%::server'
GROUP BY 1, 2 ORDER BY 1, 2
"""
FOLLOWING_QUERY = """
SELECT s.id, f.id, f.slice_out, f.slice_in, f.trace_id
FROM slice s JOIN following_flow(s.id) f
ORDER BY 1, 2
"""
PRECEDING_QUERY = """
SELECT s.id, f.id, f.slice_out, f.slice_in, f.trace_id
FROM slice s JOIN preceding_flow(s.id) f
ORDER BY 1, 2
"""
COUNTER_QUERY = """
SELECT t.name, p.pid, count(*) AS n, sum(c.value) AS total, min(c.ts) AS first, max(c.ts) AS last
FROM counter c JOIN process_counter_track t ON t.id = c.track_id JOIN process p USING (upid)
GROUP BY 1, 2 ORDER BY 1, 2
"""
ARGS_QUERY = """
SELECT count(*) AS slices, count(arg_set_id) AS with_args
FROM slice WHERE name NOT LIKE '[NN_%' AND name NOT LIKE 'HIDL::%'
"""
"""Systrace slices that are no NNAPI mark have no arg set (their begin line is ``slice.line``)."""
WORKED_QUERY = """\
SELECT root.name AS caller_root, i.name AS callee, count(*) AS calls,
       round(avg(i.dur) / 1e6, 3) AS avg_callee_ms
FROM flow f
JOIN slice o ON o.id = f.slice_out
JOIN slice i ON i.id = f.slice_in
JOIN ancestor_slice(o.id) root ON root.depth = 0
GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2 LIMIT 6;
"""
"""The worked query of docs/query.md, as printed there."""
QUERIES = [
    ANCESTOR_QUERY,
    FLOW_QUERY,
    DESCENDANT_QUERY,
    CONNECTED_QUERY,
    FOLLOWING_QUERY,
    PRECEDING_QUERY,
    COUNTER_QUERY,
    WORKED_QUERY,
]


def _shell() -> str:
    return trace_processor_shell()


def _value(text: str | float) -> object:
    """A trace processor CSV cell: quoted text, [NULL], or a number."""
    if isinstance(text, float):
        return int(text) if text.is_integer() else text
    return None if text == "[NULL]" else text


def _perfetto_rows(shell: str, trace: Path, sql: str, tmp_path: Path) -> list[tuple[object, ...]]:
    query = tmp_path / "query.sql"
    query.write_text(sql)
    done = subprocess.run(
        [shell, "-q", str(query), str(trace)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip("\n").splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith('"'))
    reader = csv.reader(io.StringIO("\n".join(lines[header + 1 :])), quoting=csv.QUOTE_NONNUMERIC)
    return [tuple(_value(cell) for cell in row) for row in reader]


def _nnemu_rows(trace: Path, sql: str) -> list[tuple[object, ...]]:
    database = ApswDatabase(to_apsw(open_trace(str(trace))))
    try:
        return [
            tuple(_value(float(v)) if isinstance(v, int | float) else v for v in row)
            for row in database.execute(sql)
        ]
    finally:
        database.close()


@pytest.fixture(scope="module", name="two_apps", params=["json", "pftrace"])
def _two_apps(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Path:
    """nnemu's JSON and Perfetto protobuf traces of scenarios/two_apps_one_npu.yaml."""
    if request.param == "pftrace":
        pytest.importorskip("perfetto", reason="the Perfetto format needs nnemu[perfetto]")
    path = tmp_path_factory.mktemp("two_apps") / f"two_apps.{request.param}"
    run(load_scenario(REPO / "scenarios/two_apps_one_npu.yaml"), sinks=[open_trace_writer(path)])
    return path


@pytest.mark.parametrize(
    "sql",
    QUERIES,
    ids=[
        "ancestor",
        "flow",
        "descendant",
        "connected",
        "following",
        "preceding",
        "counter",
        "worked",
    ],
)
def test_two_apps_trace_gives_perfetto_rows(two_apps, tmp_path, sql):
    """On nnemu's own traces of two apps, each query returns trace processor's rows exactly."""
    shell = _shell()
    expected = _perfetto_rows(shell, two_apps, sql, tmp_path)
    assert _nnemu_rows(two_apps, sql) == expected
    if sql is ANCESTOR_QUERY:
        assert expected  # the ancestors of every HIDL client call are found


@pytest.mark.parametrize(
    "sql", [ANCESTOR_QUERY, DESCENDANT_QUERY, CONNECTED_QUERY, COUNTER_QUERY, ARGS_QUERY]
)
def test_device_trace_gives_perfetto_rows(tmp_path, sql):
    """On the OMR1 phone's systrace (its atrace C| counters included) the rows are trace processor's."""
    shell = _shell()
    trace = REPO / "tests" / "data" / "omr1.html"
    expected = _perfetto_rows(shell, trace, sql, tmp_path)
    assert expected
    assert _nnemu_rows(trace, sql) == expected


def test_docs_show_the_worked_query():
    """docs/query.md shows the worked query this test compares, word for word."""
    assert WORKED_QUERY in (REPO / "docs" / "query.md").read_text(encoding="utf-8")


def test_hand_made_flows_give_perfetto_rows(tmp_path):
    """Flows bound every way JSON allows (s, t, f with and without bp) give trace processor's rows."""
    shell = _shell()
    events = [
        {"ph": "B", "pid": 1, "tid": 10, "ts": 0, "name": "A"},
        {"ph": "B", "pid": 1, "tid": 10, "ts": 1, "name": "B"},
        {"ph": "s", "pid": 1, "tid": 10, "ts": 2, "name": "call", "cat": "c", "id": 7},
        {"ph": "E", "pid": 1, "tid": 10, "ts": 4},
        {"ph": "E", "pid": 1, "tid": 10, "ts": 9},
        {"ph": "B", "pid": 2, "tid": 20, "ts": 6, "name": "S"},
        {"ph": "t", "pid": 2, "tid": 20, "ts": 7, "name": "call", "cat": "c", "id": "0x7"},
        {"ph": "E", "pid": 2, "tid": 20, "ts": 8},
        {"ph": "f", "pid": 1, "tid": 10, "ts": 10, "name": "call", "cat": "c", "id": 7},
        {"ph": "X", "pid": 1, "tid": 10, "ts": 11, "name": "D", "dur": 4},
        {"ph": "X", "pid": 2, "tid": 20, "ts": 12, "name": "T", "dur": 3},
        {"ph": "s", "pid": 2, "tid": 20, "ts": 13, "name": "reply", "cat": "c", "id": 8},
        {"ph": "f", "pid": 1, "tid": 10, "ts": 14, "name": "reply", "cat": "c", "id": 8, "bp": "e"},
        {"ph": "C", "pid": 1, "tid": 10, "ts": 14, "name": "q", "args": {"a": 1, "b": "2.5"}},
    ]
    trace = tmp_path / "flows.json"
    trace.write_text(json.dumps(events))
    for sql in [
        "SELECT f.slice_out, o.name, f.slice_in, i.name, f.trace_id FROM flow f"
        " JOIN slice o ON o.id = f.slice_out JOIN slice i ON i.id = f.slice_in ORDER BY f.id",
        "SELECT s.id, d.id, d.slice_out, d.slice_in FROM slice s"
        " JOIN directly_connected_flow(s.id) d ORDER BY s.id, d.id",
        "SELECT s.id, a.id, a.name, a.depth FROM slice s JOIN ancestor_slice(s.id) a"
        " ORDER BY s.id, a.id",
        "SELECT c.id, c.ts, c.track_id, t.name, c.value FROM counter c"
        " JOIN counter_track t ON t.id = c.track_id ORDER BY c.id",
    ]:
        assert _nnemu_rows(trace, sql) == _perfetto_rows(shell, trace, sql, tmp_path), sql


THREAD_SLICES = (
    "SELECT s.ts, s.dur, s.name, s.category, t.tid, s.depth FROM slice s"
    " JOIN thread_track tt ON tt.id = s.track_id JOIN thread t USING (utid) ORDER BY s.ts"
)


def test_json_names_and_instants_give_trace_processors_thread_slices(tmp_path):
    """A JSON slice with an empty, missing or non-string name is ``[No name]``; ``i``/``I``
    (thread scope) and ``R`` are thread instants, ``i`` of global or process scope and ``n``
    are not its thread's slices; events out of time order are matched in it (trace
    processor v58's thread slices, docs/query.md)."""
    shell = _shell()
    events = [
        {"ph": "B", "pid": 1, "tid": 11, "ts": 1, "name": ""},
        {"ph": "E", "pid": 1, "tid": 11, "ts": 2},
        {"ph": "B", "pid": 1, "tid": 11, "ts": 3},
        {"ph": "E", "pid": 1, "tid": 11, "ts": 4},
        {"ph": "X", "pid": 1, "tid": 11, "ts": 5, "dur": 1, "name": 7},
        {"ph": "i", "pid": 1, "tid": 11, "ts": 7, "name": "thread instant"},
        {"ph": "I", "pid": 1, "tid": 11, "ts": 6.5, "name": "old instant", "s": "t"},
        {"ph": "n", "pid": 1, "tid": 11, "ts": 8, "name": "nest", "id": 1, "cat": "c"},
        {"ph": "R", "pid": 1, "tid": 11, "ts": 9, "name": "mark", "cat": "c", "args": {"a": 1}},
        {"ph": "i", "pid": 1, "tid": 11, "ts": 10, "name": "global", "s": "g"},
        {"ph": "i", "pid": 1, "tid": 11, "ts": 11, "name": "process", "s": "p"},
        {"ph": "B", "pid": 1, "tid": 12, "ts": 40, "name": "late"},
        {"ph": "E", "pid": 1, "tid": 12, "ts": 50},
        {"ph": "B", "pid": 1, "tid": 12, "ts": 30, "name": "early"},
        {"ph": "E", "pid": 1, "tid": 12, "ts": 35},
    ]
    trace = tmp_path / "instants.json"
    trace.write_text(json.dumps(events))
    for sql in [THREAD_SLICES, "SELECT count(*) FROM slice WHERE name = '[No name]'"]:
        assert _nnemu_rows(trace, sql) == _perfetto_rows(shell, trace, sql, tmp_path), sql
