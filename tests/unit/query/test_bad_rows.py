"""Rows a loader cannot store are skipped with a warning naming their line; bad files are refused."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import pytest

from nnemu.cli import main

HEADER = "# tracer: nop\n#\n"


def row(timestamp: str, payload: str, tid: str = "42", tgid: str = "42") -> str:
    """One ftrace mark row with the TGID column."""
    return f"  app-{tid} ({tgid:>5}) [001] ...1 {timestamp}: tracing_mark_write: {payload}\n"


def query(path: Path, sql: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``nnemu query path sql --csv``."""
    out, err = io.StringIO(), io.StringIO()
    code = main(["query", str(path), sql, "--csv"], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_any_number_of_fraction_digits_is_read_to_the_ns(tmp_path: Path):
    """1.5000000000 is 1.5 s and 0.1234567894 rounds to 123456789 ns, not an IndexError or 1.0 s."""
    path = tmp_path / "t.txt"
    path.write_text(
        HEADER
        + row("1.5000000000", "B|42|[NN_LA_PE]a")
        + row("1.5000000004999", "E|42")
        + row("2.1234567894", "B|42|[NN_LA_PE]b")
        + row("2.12345678951234567", "E|42")
    )
    code, out, err = query(path, "SELECT ts, dur FROM slice ORDER BY ts")
    assert (code, err) == (0, "")
    assert out.splitlines()[1:] == ["1500000000,0", "2123456789,1"]


def test_out_of_range_rows_are_skipped_with_their_line(tmp_path: Path):
    """A 30-digit timestamp or tid (SQLite's INTEGER is 64-bit) is skipped; the rest is kept."""
    path = tmp_path / "t.txt"
    path.write_text(
        HEADER
        + row("1.000000", "B|42|[NN_LA_PE]kept")
        + row("1" * 30 + ".000000", "B|42|[NN_LA_PE]late")
        + row("1.000010", "B|99999999999999999999|x", tid="99999999999999999999", tgid="7")
        + row("1.000020", "E|42")
    )
    code, out, err = query(path, "SELECT name, dur FROM slice")
    assert code == 0
    assert out.splitlines()[1:] == ["[NN_LA_PE]kept,20000"]
    assert f"{path}:4: warning: timestamp {'1' * 30}.000000 out of range; row skipped" in err
    assert f"{path}:5: warning: thread id out of range" in err


def test_json_events_with_nan_or_huge_values(tmp_path: Path):
    """NaN and 1e308 times are skipped, a 2**70 arg is kept as text; the good event loads."""
    path = tmp_path / "t.json"
    events = [
        {"ph": "X", "pid": 1, "tid": 1, "ts": 10, "dur": 5, "name": "good", "args": {"n": 2**70}},
        {"ph": "B", "pid": 1, "tid": 1, "ts": 1e308, "name": "huge"},
        {"ph": "B", "pid": 1, "tid": 1, "ts": -1, "name": "nan"},
        {"ph": "X", "pid": 1, "tid": 2**40, "ts": 1, "dur": 1, "name": "tid"},
    ]
    text = json.dumps({"traceEvents": events})
    path.write_text(text.replace('"ts": -1', '"ts": NaN'))
    code, out, err = query(
        path,
        "SELECT s.name, s.dur, a.value FROM slice s JOIN args a ON a.arg_set_id = s.arg_set_id WHERE a.key = 'args.n'",
    )
    assert code == 0, err
    assert out.splitlines()[1:] == [f"good,5000,{2**70}"]
    assert query(path, "SELECT name FROM slice")[1].splitlines()[1:] == ["good"]


def test_deeply_nested_json_is_refused_with_a_message(tmp_path: Path):
    """A 100,000-deep JSON array ends in 'nested too deeply' and exit 2, not a RecursionError."""
    path = tmp_path / "t.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    code, _, err = query(path, "SELECT 1")
    assert code == 2
    assert err == f"{path}:1: error: not a JSON trace: nested too deeply\n"


def test_gzip_compressed_trace_is_named_as_such(tmp_path: Path):
    """A .gz trace is refused as gzip-compressed (the same words as parse), not as a trace without marks."""
    path = tmp_path / "t.html.gz"
    path.write_bytes(gzip.compress((HEADER + row("1.000000", "B|42|x")).encode()))
    for argv in (["query", str(path), "SELECT 1"], ["replay", "-n", str(path)]):
        out, err = io.StringIO(), io.StringIO()
        assert main(argv, out=out, err=err) == 2
        assert f"{path}: " in err.getvalue()
        assert "the file is gzip-compressed; decompress it first (gunzip -k)" in err.getvalue()


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        (
            '{"a": 1}\n',
            1,
            'not a Chrome trace: expected {"traceEvents": [...]} or a list of events',
        ),
        ('{"traceEvents": 5}\n', 1, 'not a Chrome trace: expected {"traceEvents": [...]}'),
        (
            '{"traceEvents": [\n{"ph": "B", "pid": 1, "tid": 1, "ts": 1, "name": "x"},\n',
            3,
            "not a JSON trace: Expecting value",
        ),
        ("[" * 100_000 + "]" * 100_000, 1, "not a JSON trace: nested too deeply"),
    ],
    ids=["object", "events-not-a-list", "cut-short", "too-deep"],
)
def test_parse_query_and_replay_refuse_a_bad_json_trace_with_one_line(
    tmp_path: Path, text: str, where: int, message: str
):
    """A JSON file that is not a trace gets the same ``FILE:LINE: error: ...`` and exit 2 from the three readers."""
    path = tmp_path / "t.json"
    path.write_text(text)
    errors = []
    for argv in (
        ["parse", str(path)],
        ["query", str(path), "SELECT 1"],
        ["replay", "-n", str(path)],
    ):
        out, err = io.StringIO(), io.StringIO()
        assert main(argv, out=out, err=err) == 2, argv
        errors.append(err.getvalue())
    assert errors[0] == errors[1] == errors[2]
    assert errors[0].startswith(f"{path}:{where}: error: {message}")
    assert errors[0].count("\n") == 1
