"""Rows out of time order: when a row is earlier than the row before it on its thread (an end
mark before its section's begin, say), ``nnemu parse``, ``query`` and ``replay`` read the rows
again in time order, as Perfetto matches them, with one ``FILE:LINE: warning:`` per file; a
trace too big to sort in memory keeps file order, where such an end is skipped.  Never a
negative duration (docs/parser.md)."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
from pathlib import Path

import pytest

from nnemu.parser import _api as parser_api
from nnemu.parser import format_text, parse_file
from nnemu.query import _load as query_load
from nnemu.query import open_trace
from nnemu.replay import _extract as extract
from nnemu.trace import out_of_order_warning
from tests.commands import run_cli, trace_processor_shell

HEAD = """\
# tracer: nop
#
#           TASK-PID    TGID   CPU#  ||||    TIMESTAMP  FUNCTION
#              | |        |      |   ||||       |         |
"""
ROW = "             app-100   (  100) [000] ...1 {ts}: tracing_mark_write: {mark}\n"
# Times that are exact binary fractions of a second, so trace processor (which reads
# timestamps as doubles) gives the same ns.
EDITED = [
    ("1.500000", "B|100|[NN_LA_PE]first"),
    ("1.250000", "E|100"),  # line 6: earlier than its B
    ("1.750000", "B|100|[NN_LA_PE]second"),
    ("2.000000", "E|100"),
    ("2.125000", "B|100|[NN_LA_PE]third"),
    ("1.062500", "E|100"),  # line 10: earlier again, than every open section (one warning)
]


def _trace(tmp_path: Path, rows: list[tuple[str, str]], name: str = "edited.txt") -> Path:
    path = tmp_path / name
    path.write_text(HEAD + "".join(ROW.format(ts=ts, mark=mark) for ts, mark in rows))
    return path


def _slices(path: Path) -> list[tuple[int, int, str, int]]:
    conn = open_trace(str(path))
    try:
        return conn.execute("SELECT ts, dur, name, depth FROM slice ORDER BY ts").fetchall()
    finally:
        conn.close()


def test_query_matches_an_end_before_every_begin_with_nothing(tmp_path):
    """query stores no negative dur: in time order the early E ends nothing, so its section
    stays open (dur -1) and the next section nests in it, as in Perfetto's slice table."""
    assert _slices(_trace(tmp_path, EDITED)) == [
        (1_500_000_000, -1, "[NN_LA_PE]first", 0),
        (1_750_000_000, 250_000_000, "[NN_LA_PE]second", 1),
        (2_125_000_000, -1, "[NN_LA_PE]third", 1),
    ]


def test_every_reader_says_it_once_at_the_first_row_out_of_order(tmp_path):
    """parse, query and replay each print the same one warning, at the first early E's line,
    counting both; before this it was silent and printed negative times."""
    path = _trace(tmp_path, EDITED)
    expected = f"{path}:6: warning: {out_of_order_warning(2, sorted_again=True)}"
    for command, after in ((("parse",), ()), (("query",), ("select 1",)), (("replay", "-n"), ())):
        code, out, err = run_cli(*command, str(path), *after)
        assert code == 0, err
        assert [line for line in err.splitlines() if "earlier than" in line] == [expected]
        assert "earlier than" not in out


NESTED = [
    ("1.000000", "B|100|[NN_LA_PE]outer"),
    ("1.500000", "B|100|[NN_LR_PC]inner"),
    ("1.250000", "E|100"),  # line 7: in time order it ends outer, before inner begins
    ("2.000000", "E|100"),
]


def test_query_matches_the_rows_in_time_order(tmp_path):
    """An early E inside an enclosing section ends that section at its time (the rows in
    time order), and the section begun later is its sibling, as in Perfetto."""
    assert _slices(_trace(tmp_path, NESTED)) == [
        (1_000_000_000, 250_000_000, "[NN_LA_PE]outer", 0),
        (1_500_000_000, 500_000_000, "[NN_LR_PC]inner", 0),
    ]


MOVED = [
    ("1.000000", "B|100|[NN_LA_PE]outer"),
    ("1.500000", "B|100|[NN_LR_PC]child"),
    ("1.750000", "E|100"),
    ("1.250000", "E|100"),  # line 8: after its begin, but before the child's rows
]


def test_an_end_moved_before_a_childs_rows_is_matched_in_time_order(tmp_path):
    """An E earlier than the rows before it but not than its own B gives no negative time in
    file order, yet Perfetto ends outer before child begins: so does query, with the warning."""
    path = _trace(tmp_path, MOVED)
    assert _slices(path) == [
        (1_000_000_000, 250_000_000, "[NN_LA_PE]outer", 0),
        (1_500_000_000, 250_000_000, "[NN_LR_PC]child", 0),
    ]
    code, _out, err = run_cli("query", str(path), "select 1")
    assert code == 0, err
    assert err.splitlines() == [f"{path}:8: warning: {out_of_order_warning(1, sorted_again=True)}"]


def test_parse_and_replay_read_the_rows_in_time_order(tmp_path):
    """parse counts inner's 500 ms as compilation (not outer's 1000 ms less it) and replay's
    recorded execution is outer's 250 ms, the rows read in time order."""
    path = _trace(tmp_path, NESTED)
    code, out, err = run_cli("parse", str(path))
    assert code == 0, err
    runtime = next(line for line in out.splitlines() if line.startswith("Runtime"))
    assert runtime.split()[3] == "500.00"
    code, out, err = run_cli("replay", "-n", str(path))
    assert code == 0, err
    recorded = next(line for line in out.splitlines() if line.split()[1:2] == ["recorded"])
    assert recorded.split()[2:] == ["1", "250.000", "250.000*", "250.000"]  # * one execution


def test_a_trace_too_big_to_sort_has_its_out_of_order_skipped(tmp_path, monkeypatch):
    """Past MAX_SORTED_BYTES the rows stay in file order: the early E is skipped, its
    section left open (no negative time), and the warning says that instead."""
    monkeypatch.setattr(parser_api, "MAX_SORTED_BYTES", 10)
    monkeypatch.setattr(extract, "MAX_SORTED_BYTES", 10)
    path = _trace(tmp_path, NESTED)
    expected = f"{path}:7: warning: {out_of_order_warning(1, sorted_again=False)}"
    monkeypatch.setattr(query_load, "MAX_SORTED_BYTES", 10)
    commands = [(("parse",), ()), (("replay", "-n"), ()), (("query",), ("select 1",))]
    assert _slices(path) == [
        (1_000_000_000, -1, "[NN_LA_PE]outer", 0),
        (1_500_000_000, 500_000_000, "[NN_LR_PC]inner", 1),
    ]
    for command, after in commands:
        code, out, err = run_cli(*command, str(path), *after)
        assert code == 0, err
        assert expected in err.splitlines(), command
        assert not re.search(r"\s-\d", out)


def test_parse_and_replay_print_no_negative_time(tmp_path):
    """parse's table and replay's recorded latencies hold no negative figure (they printed
    -0.10 ms and -0.200 ms for an E 0.2 ms before its B)."""
    rows = [
        ("1.000500", "B|100|[NN_LA_PE][foo]"),
        ("1.000300", "E|100"),
        ("1.000600", "B|100|[NN_LA_PE][ok]"),
        ("1.000700", "E|100"),
    ]
    path = _trace(tmp_path, rows)
    assert not re.search(r"\s-\d", format_text(parse_file(path)))
    code, out, err = run_cli("parse", str(path))
    assert code == 0, err
    assert not re.search(r"\s-\d", out)
    code, out, err = run_cli("replay", "-n", str(path))
    assert code == 0, err
    recorded = next(line for line in out.splitlines() if line.split()[1:2] == ["recorded"])
    assert recorded.split() == ["app", "recorded", "1", "0.100", "0.100*", "0.100"]


def test_rows_in_time_order_give_no_warning(tmp_path):
    """An E at the same time as its B (a zero-length section) is in order: no warning."""
    path = _trace(tmp_path, [("1.000000", "B|100|[NN_LA_PE]zero"), ("1.000000", "E|100")])
    assert _slices(path) == [(1_000_000_000, 0, "[NN_LA_PE]zero", 0)]
    for command, after in ((("parse",), ()), (("query",), ("select 1",)), (("replay", "-n"), ())):
        _code, _out, err = run_cli(*command, str(path), *after)
        assert "earlier than" not in err


def _json_trace(tmp_path: Path, rows: list[tuple[str, str]]) -> Path:
    """``rows`` as Chrome JSON events, one a line (ts in µs)."""
    events = []
    for ts, mark in rows:
        seconds, fraction = ts.split(".")
        event = {"ph": mark[0], "pid": 100, "tid": 100, "ts": int(seconds + fraction)}
        if mark[0] == "B":
            event["name"] = mark.split("|", 2)[2]
        events.append(json.dumps(event))
    path = tmp_path / "edited.json"
    path.write_text('{"traceEvents": [\n' + ",\n".join(events) + "\n]}\n")
    return path


@pytest.mark.parametrize(
    "rows", [EDITED, NESTED, MOVED], ids=["before-every-begin", "nested", "moved"]
)
@pytest.mark.parametrize("kind", ["ftrace", "json"])
def test_query_gives_trace_processors_slices(tmp_path, rows, kind):
    """On edited traces (ftrace text and JSON), query's slices are those of Perfetto's trace
    processor, which sorts the rows by time before matching them."""
    shell = trace_processor_shell()
    path = _trace(tmp_path, rows) if kind == "ftrace" else _json_trace(tmp_path, rows)
    sql = tmp_path / "q.sql"
    sql.write_text("SELECT ts, dur, name, depth FROM slice ORDER BY ts")
    done = subprocess.run(
        [shell, "-q", str(sql), str(path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip("\n").splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith('"'))
    reader = csv.reader(io.StringIO("\n".join(lines[header + 1 :])), quoting=csv.QUOTE_NONNUMERIC)
    perfetto = [(int(ts), int(dur), name, int(depth)) for ts, dur, name, depth in reader]
    assert _slices(path) == perfetto
