"""Rows out of time order: an end mark (E) earlier than the begin of the section it would
close is skipped by ``nnemu parse``, ``query`` and ``replay`` alike, with one
``FILE:LINE: warning:`` per file, and never gives a negative duration (docs/parser.md)."""

from __future__ import annotations

import csv
import io
import re
import subprocess
from pathlib import Path

from nnemu.parser import format_text, parse_file
from nnemu.query import open_trace
from nnemu.trace import early_ends_warning
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


def test_query_skips_an_end_before_its_begin_and_leaves_the_section_open(tmp_path):
    """query stores no negative dur: the early E ends nothing, so its section stays open
    (dur -1) and the next section nests in it, as in Perfetto's slice table."""
    assert _slices(_trace(tmp_path, EDITED)) == [
        (1_500_000_000, -1, "[NN_LA_PE]first", 0),
        (1_750_000_000, 250_000_000, "[NN_LA_PE]second", 1),
        (2_125_000_000, -1, "[NN_LA_PE]third", 1),
    ]


def test_every_reader_says_it_once_at_the_first_early_end(tmp_path):
    """parse, query and replay each print the same one warning, at the first early E's line,
    counting both; before this it was silent and printed negative times."""
    path = _trace(tmp_path, EDITED)
    expected = f"{path}:6: warning: {early_ends_warning(2)}"
    for command, after in ((("parse",), ()), (("query",), ("select 1",)), (("replay", "-n"), ())):
        code, out, err = run_cli(*command, str(path), *after)
        assert code == 0, err
        assert [line for line in err.splitlines() if "earlier than" in line] == [expected]
        assert "earlier than" not in out


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
    assert recorded.split() == ["app", "recorded", "1", "0.100", "0.100", "0.100"]


def test_rows_in_time_order_give_no_warning(tmp_path):
    """An E at the same time as its B (a zero-length section) is in order: no warning."""
    path = _trace(tmp_path, [("1.000000", "B|100|[NN_LA_PE]zero"), ("1.000000", "E|100")])
    assert _slices(path) == [(1_000_000_000, 0, "[NN_LA_PE]zero", 0)]
    for command, after in ((("parse",), ()), (("query",), ("select 1",)), (("replay", "-n"), ())):
        _code, _out, err = run_cli(*command, str(path), *after)
        assert "earlier than" not in err


def test_query_gives_trace_processors_slices(tmp_path):
    """On the edited trace, query's slices are those of Perfetto's trace processor."""
    shell = trace_processor_shell()
    path = _trace(tmp_path, EDITED)
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
