"""Loading ftrace text, systrace HTML and JSON into the Perfetto-shaped tables."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nnemu.errors import TraceFormatError
from nnemu.query import open_trace

T0_NS = 1_000_000_000 * 1000

COLUMNS = {
    "process": ["upid", "pid", "name"],
    "thread": ["utid", "tid", "name", "upid"],
    "thread_track": ["id", "utid", "name"],
    "slice": [
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
        "subtree_end_id",
        "line",
    ],
    "args": ["arg_set_id", "key", "value"],
    "slice_ancestor": ["id", "ancestor_id", "distance"],
    "slice_descendant": ["id", "descendant_id", "distance"],
}

# Two threads of one app (main thread 100) and a driver thread of process 200.
ROWS = [
    (0, "app", 100, 100, "[NN_LA_PE]run"),
    (10, "app", 100, 100, "[NN_LR_PE]ANeuralNetworksExecution_compute"),
    (10, "worker", 101, 100, "other"),
    (20, "app", 100, 100, "HIDL::IPreparedModel::executeSynchronously::client"),
    (30, "HwBinder:200_1", 201, 200, "HIDL::IPreparedModel::executeSynchronously::server"),
    (70, "HwBinder:200_1", 201, 200, "E"),
    (80, "app", 100, 100, "E"),
    (80, "app", 100, 100, "[NN_LR_PE]zero"),
    (80, "app", 100, 100, "E"),
    (90, "app", 100, 100, "E"),
    (95, "worker", 101, 100, "E"),
    (100, "app", 100, 100, "E"),
]


def test_tables_and_views_have_the_documented_columns(write_trace):
    """Every table and helper view exists with the documented columns, in order."""
    conn = open_trace(str(write_trace(ROWS)))
    for table, columns in COLUMNS.items():
        found = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
        assert found == columns, table
    names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'view'")}
    assert {"nnapi_slice", "slice_ancestor", "slice_descendant"} <= names


def test_slices_have_exact_ts_dur_depth_and_parent(write_trace):
    """Hand-written ftrace rows become slices with exact ns times, depths and parents."""
    conn = open_trace(str(write_trace(ROWS)))
    rows = conn.execute(
        "SELECT id, ts - ?, dur, name, depth, parent_id, track_id FROM slice ORDER BY id", (T0_NS,)
    ).fetchall()
    assert rows == [
        (0, 0, 100_000, "[NN_LA_PE]run", 0, None, 0),
        (1, 10_000, 80_000, "[NN_LR_PE]ANeuralNetworksExecution_compute", 1, 0, 0),
        (2, 10_000, 85_000, "other", 0, None, 1),
        (3, 20_000, 60_000, "HIDL::IPreparedModel::executeSynchronously::client", 2, 1, 0),
        (4, 30_000, 40_000, "HIDL::IPreparedModel::executeSynchronously::server", 0, None, 2),
        (5, 80_000, 0, "[NN_LR_PE]zero", 2, 1, 0),
    ]


def test_threads_and_processes_come_from_the_task_column(write_trace):
    """Thread names are the TASK column; a process is named after its main thread."""
    conn = open_trace(str(write_trace(ROWS)))
    threads = conn.execute(
        "SELECT tid, thread.name, pid, process.name, thread_track.id FROM thread"
        " JOIN process USING (upid) JOIN thread_track USING (utid) ORDER BY tid"
    ).fetchall()
    assert threads == [
        (100, "app", 100, "app", 0),
        (101, "worker", 100, "app", 1),
        (201, "HwBinder:200_1", 200, None, 2),
    ]


def test_slice_line_is_the_line_each_ftrace_slice_began_on(write_trace):
    """Each ftrace slice's ``line`` (and ``nnapi_slice.line``) is the file line of its begin row."""
    conn = open_trace(str(write_trace(ROWS)))
    lines = conn.execute("SELECT line FROM slice ORDER BY id").fetchall()
    assert [line for (line,) in lines] == [3, 4, 5, 6, 7, 10]
    assert conn.execute("SELECT id, line FROM nnapi_slice ORDER BY id").fetchall() == [
        (0, 3),
        (1, 4),
        (3, 6),
        (4, 7),
        (5, 10),
    ]


def test_line_is_no_arg_and_slices_without_args_have_no_arg_set(write_trace):
    """``args`` holds no ``line`` rows; a slice with no args (``other``) has arg_set_id NULL."""
    conn = open_trace(str(write_trace(ROWS)))
    assert conn.execute("SELECT count(*) FROM args WHERE key = 'line'").fetchone() == (0,)
    assert conn.execute("SELECT id, name FROM slice WHERE arg_set_id IS NULL").fetchall() == [
        (2, "other")
    ]
    assert conn.execute(
        "SELECT extract_arg(arg_set_id, 'nnapi.function') FROM slice WHERE id = 1"
    ).fetchone() == ("ANeuralNetworksExecution_compute",)


def test_rows_off_the_fast_path_keep_their_line(tmp_path):
    """A row the fast path leaves to ``ROW_RE`` (a timestamp of 9 digits) gets its line too."""
    path = tmp_path / "t.txt"
    path.write_text(
        "# tracer: nop\n"
        "#\n"
        "  app-100   (  100) [001] ...1 1000.000000: tracing_mark_write: B|100|a\n"
        "  app-100   (  100) [001] ...1 1000.000001000: tracing_mark_write: B|100|b\n"
        "  app-100   (  100) [001] ...1 1000.000002: tracing_mark_write: E|100\n"
        "  app-100   (  100) [001] ...1 1000.000003: tracing_mark_write: E|100\n"
    )
    conn = open_trace(str(path))
    assert conn.execute("SELECT name, line FROM slice ORDER BY id").fetchall() == [
        ("a", 3),
        ("b", 4),
    ]


def test_descendant_and_ancestor_views_follow_parent_ids(write_trace):
    """slice_descendant/slice_ancestor agree with the parent_id chains, zero-length siblings included."""
    conn = open_trace(str(write_trace(ROWS)))
    parent = dict(conn.execute("SELECT id, parent_id FROM slice"))
    expected = set()
    for child in parent:
        distance, node = 1, parent[child]
        while node is not None:
            expected.add((child, node, distance))
            node, distance = parent[node], distance + 1
    ancestors = set(conn.execute("SELECT id, ancestor_id, distance FROM slice_ancestor"))
    descendants = set(conn.execute("SELECT descendant_id, id, distance FROM slice_descendant"))
    assert ancestors == expected
    assert descendants == expected
    assert conn.execute("SELECT descendant_id FROM slice_descendant WHERE id = 1").fetchall() == [
        (3,),
        (5,),
    ]


def test_unmatched_end_is_skipped_with_a_warning(write_trace):
    """An E with nothing open is skipped and reported with its line number."""
    warnings = []
    path = write_trace(
        [(0, "app", 100, 100, "E"), (5, "app", 100, 100, "x"), (9, "app", 100, 100, "E")]
    )
    conn = open_trace(str(path), warn=lambda line, message: warnings.append((line, message)))
    assert conn.execute("SELECT ts - ?, dur FROM slice", (T0_NS,)).fetchall() == [(5_000, 4_000)]
    assert warnings == [(3, "end mark (E) with no open section on this thread; skipped")]


def test_sections_open_at_the_end_have_dur_minus_one(write_trace):
    """A section never closed gets dur = -1, as in Perfetto, and a warning."""
    warnings = []
    path = write_trace([(0, "app", 100, 100, "outer"), (5, "app", 100, 100, "inner")])
    conn = open_trace(str(path), warn=lambda line, message: warnings.append(message))
    assert conn.execute("SELECT name, dur, depth FROM slice ORDER BY id").fetchall() == [
        ("outer", -1, 0),
        ("inner", -1, 1),
    ]
    assert warnings == ["2 sections still open at the end of the trace (dur = -1)"]


def test_systrace_html_process_dump_names_processes(tmp_path):
    """The PROCESS DUMP block of systrace HTML names processes and dumped threads."""
    html = tmp_path / "t.html"
    html.write_text(
        "<!DOCTYPE html>\n<html>\n"
        '  <script class="trace-data" type="application/text">\n'
        "PROCESS DUMP\n"
        "USER           PID  PPID     VSZ    RSS WCHAN  PC S NAME                        COMM\n"
        "u0_a64         100     1   10000   2000 SyS_epoll_wait 0 S com.example.app   com.example.app\n"
        "root           300     2       0      0 irq_thread 0 S [irq/36-ARM64 pr]        4\n"
        "USER           PID   TID CMD\n"
        "u0_a64         100   102 AsyncTask #1544\n"
        "  </script>\n"
        '  <script class="trace-data" type="application/text">\n'
        "# tracer: nop\n"
        "             <...>-101   (  100) [001] ...1 1000.000000: tracing_mark_write: B|100|x\n"
        "             <...>-101   (  100) [001] ...1 1000.000010: tracing_mark_write: E|100\n"
        "  </script>\n</html>\n"
    )
    conn = open_trace(str(html))
    assert conn.execute("SELECT pid, name FROM process ORDER BY pid").fetchall() == [
        (100, "com.example.app"),
        (300, "[irq/36-ARM64 pr]"),
    ]
    assert conn.execute("SELECT tid, name, upid FROM thread ORDER BY tid").fetchall() == [
        (101, None, 0),
        (102, "AsyncTask #1544", 0),
    ]


def test_chrome_json_events_and_metadata(tmp_path):
    """JSON B/E, X and instant events nest by time; metadata names processes and threads."""
    events = [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 1, "args": {"name": "proc"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "worker"}},
        {"ph": "B", "name": "[NN_LR_PE]outer", "cat": "nnapi", "pid": 1, "tid": 2, "ts": 1.5},
        {"ph": "X", "name": "child", "pid": 1, "tid": 2, "ts": 2, "dur": 3, "args": {"n": 7}},
        {"ph": "i", "name": "mark", "pid": 1, "tid": 2, "ts": 6},
        {"ph": "E", "pid": 1, "tid": 2, "ts": 10},
        {"ph": "C", "name": "counter", "pid": 1, "tid": 2, "ts": 11, "args": {"v": 1}},
    ]
    path = tmp_path / "t.json"
    # One document on one line: read as a whole, not line by line.
    path.write_text(json.dumps(events))
    conn = open_trace(str(path))
    assert conn.execute(
        "SELECT ts, dur, name, depth, parent_id, category, layer FROM slice ORDER BY id"
    ).fetchall() == [
        (1500, 8500, "[NN_LR_PE]outer", 0, None, "nnapi", "LR"),
        (2000, 3000, "child", 1, 0, None, None),
        (6000, 0, "mark", 1, 0, None, None),
    ]
    assert conn.execute("SELECT value FROM args WHERE key = 'args.n'").fetchall() == [(7,)]
    assert conn.execute(
        "SELECT thread.name, process.name FROM thread JOIN process USING (upid)"
    ).fetchall() == [("worker", "proc")]
    # A JSON document has no line per event.
    assert conn.execute("SELECT count(*), count(line) FROM slice").fetchone() == (3, 0)


def test_line_per_event_json_slices_have_their_event_line(tmp_path):
    """Written one event per line, a JSON event's slice has the line of that event."""
    events = [
        {"ph": "B", "name": "[NN_LR_PE]outer", "pid": 1, "tid": 2, "ts": 1},
        {"ph": "C", "name": "counter", "pid": 1, "tid": 2, "ts": 2, "args": {"v": 1}},
        {"ph": "X", "name": "child", "pid": 1, "tid": 2, "ts": 2, "dur": 3, "args": {"n": 7}},
        {"ph": "E", "pid": 1, "tid": 2, "ts": 10},
        {"ph": "i", "name": "mark", "pid": 1, "tid": 2, "ts": 11},
    ]
    path = tmp_path / "t.json"
    path.write_text('{"traceEvents": [\n' + ",\n".join(map(json.dumps, events)) + "\n]}\n")
    conn = open_trace(str(path))
    assert conn.execute(
        "SELECT name, line, arg_set_id IS NULL FROM slice ORDER BY id"
    ).fetchall() == [
        ("[NN_LR_PE]outer", 2, 0),
        ("child", 4, 0),
        ("mark", 6, 1),
    ]
    assert conn.execute("SELECT DISTINCT key FROM args ORDER BY key").fetchall() == [
        ("args.n",),
        ("nnapi.function",),
    ]


def test_perfetto_slices_have_no_line(write_trace, tmp_path):
    """A Perfetto protobuf trace has no lines: the same slices as its ftrace text, ``line`` NULL."""
    from tests.perfetto_traces import systrace_to_perfetto

    text = write_trace(ROWS)
    pftrace = systrace_to_perfetto(text, tmp_path / "t.pftrace")
    sql = "SELECT ts, dur, name, depth, parent_id, layer, kind, arg_set_id, line FROM slice"
    from_text = open_trace(str(text)).execute(sql + " ORDER BY id").fetchall()
    from_perfetto = open_trace(str(pftrace)).execute(sql + " ORDER BY id").fetchall()
    assert [row[:-1] for row in from_perfetto] == [row[:-1] for row in from_text]
    assert [row[-1] for row in from_perfetto] == [None] * len(from_text)
    assert [row[-1] for row in from_text] == [3, 4, 5, 6, 7, 10]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no trace events: the file is blank"),
        ("<!DOCTYPE html>\n<html></html>\n", "no ftrace data found"),
        ("# tracer: nop\n#\n", "no slices found"),
        ('{"traceEvents": [}', "not a JSON trace"),
    ],
)
def test_nothing_to_load_raises(tmp_path: Path, text, message):
    """Empty input, HTML without ftrace, no marks or broken JSON raise TraceFormatError."""
    path = tmp_path / "t.in"
    path.write_text(text)
    with pytest.raises(TraceFormatError, match=message):
        open_trace(str(path))


def test_system_trace_events_of_a_json_document_have_no_line(tmp_path):
    """A Chrome JSON's ``systemTraceEvents`` rows load as ftrace, but ``line`` is NULL (no file line)."""
    from tests.unit.query.conftest import ftrace_text

    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": [], "systemTraceEvents": ftrace_text(ROWS)}))
    conn = open_trace(str(path))
    assert conn.execute("SELECT count(*), count(line) FROM slice").fetchone() == (6, 0)
