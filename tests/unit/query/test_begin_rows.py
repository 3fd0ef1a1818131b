"""Begin rows with no name or no tgid (``B|200``, ``B|200|``, ``B|abc|n``), or a tgid or kind
written loosely (``B|+200|n``, ``B| 200|n``, ``Bx|200|n``): query reads them as Perfetto's
trace processor does, and parse and replay keep every number they print."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.commands import run_cli, run_parse, run_query, trace_processor_shell
from tests.unit.replay.helpers import QUICKSTART, record

# What trace_processor_shell v58.2 makes of each row (then an E|200 on the same thread): the
# slice's name, or None for no slice (a systrace_parse_failure in its stats).
TRACE_PROCESSOR_NAMES = [
    ("B|200|n", "n"),
    ("B|200", "[empty slice name]"),
    ("B|200|", "[empty slice name]"),
    ("B|200|   ", "[empty slice name]"),
    ("B|200|n  ", "n"),
    ("B|200|  n", "  n"),
    ("B|200||x", "|x"),
    ("B|200|a|b", "a|b"),
    ("B", None),
    ("B|", None),
    ("B||n", None),
    ("B|abc|n", None),
    # The tgid is read as C's strtoul reads the whole field, the kind is the first field's
    # first character (ParseSystraceTracePoint).
    ("B|+200|n", "n"),
    ("B| 200|n", "n"),
    ("B|\t200|n", "n"),
    ("Bx|200|n", "n"),
    ("BEGIN|200|n", "n"),
    ("B |200|n", "n"),
    ("B|200 |n", None),
    ("B|+|n", None),
    ("B| |n", None),
    ("B|0x10|n", None),
    ("B|\u0663|n", None),
]


def _trace(path: Path, rows: list[str]) -> Path:
    """An ftrace text trace with each of ``rows`` and an ``E|200`` after it, on thread 200."""
    lines = ["# tracer: nop", "#"]
    for index, row in enumerate(rows):
        for offset, text in ((100, row), (200, "E|200")):
            stamp = f"100.{index * 1000 + offset:06d}"
            lines.append(
                f"           app-200   (  200) [000] ...1 {stamp}: tracing_mark_write: {text}"
            )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(("row", "name"), TRACE_PROCESSOR_NAMES)
def test_query_names_a_begin_row_as_perfettos_trace_processor(
    tmp_path: Path, row: str, name: str | None
) -> None:
    """A begin row with no name is a slice named "[empty slice name]" without a warning; one
    with no tgid is no slice, with a warning that says the row was skipped."""
    path = _trace(tmp_path / "t.txt", ["B|200|first", row])
    code, out, err = run_query(path, "SELECT name FROM slice ORDER BY ts", as_csv=True)
    assert code == 0, err
    names = out.splitlines()[1:]
    if name is None:
        assert names == ["first"]
        assert (
            f"{path}:5: warning: malformed begin mark: expected B|<tgid>|<name>; row skipped" in err
        )
    else:
        assert names == ["first", name]
        assert err == ""


def test_query_agrees_with_trace_processor_on_begin_rows(tmp_path: Path) -> None:
    """Every row of the table above, in one trace, gives the slices trace_processor_shell gives
    (ts, dur, name, depth): a skipped begin's E closes the slice it is in, as there."""
    shell = trace_processor_shell()
    rows = [row for row, _ in TRACE_PROCESSOR_NAMES]
    path = _trace(tmp_path / "t.txt", ["B|200|outer", *rows])
    sql = "SELECT ts, dur, name, depth FROM slice ORDER BY ts, depth"
    sql_file = tmp_path / "q.sql"
    sql_file.write_text(sql, encoding="utf-8")
    expected = subprocess.run(
        [shell, "-q", str(sql_file), str(path)], capture_output=True, text=True, check=True
    ).stdout
    code, out, err = run_query(path, sql, as_csv=True)
    assert code == 0, err
    rows_tp = [line.replace('"', "") for line in expected.strip().splitlines()[1:]]
    rows_ours = [line.replace('"', "") for line in out.strip().splitlines()[1:]]
    assert rows_ours == rows_tp


def _with_rows_in_executions(trace: str, row: str) -> str:
    """``trace`` with ``row`` and an ``E|707`` inside each of the camera's executions."""
    out = []
    for line in trace.splitlines(keepends=True):
        out.append(line)
        if "B|707|[NN_LA_PE]" in line:
            head = re.match(r".*?tracing_mark_write: ", line)
            assert head is not None
            out += [f"{head.group(0)}{row}\n", f"{head.group(0)}E|707\n"]
    return "".join(out)


@pytest.mark.parametrize("row", ["B|707", "B|707|", "B|abc|x"])
def test_a_begin_row_with_no_name_or_tgid_moves_no_number_of_parse_or_replay(
    tmp_path: Path, row: str
) -> None:
    """Inside every execution of a trace, such a row and its E leave parse's tables and replay's
    recorded latencies as they were (replay had ended the execution at that E: 0.000 ms);
    parse warns of a row with no tgid only."""
    plain = tmp_path / "plain.txt"
    record(QUICKSTART, plain)
    marked = tmp_path / "marked.txt"
    marked.write_text(_with_rows_in_executions(plain.read_text("utf-8"), row), "utf-8")
    _, plain_tables, _ = run_parse(plain)
    code, tables, err = run_parse(marked)
    assert code == 0
    assert tables == plain_tables
    assert ("malformed begin mark" in err) is (row == "B|abc|x")

    def recorded(path: Path) -> str:
        code, out, err = run_cli("replay", str(path), "-n")
        assert code == 0, err
        return next(line for line in out.splitlines() if "recorded" in line and "camera" in line)

    assert recorded(marked) == recorded(plain)
    assert "5.915     6.374     6.472" in recorded(marked)


@pytest.mark.parametrize("tgid", ["+707", " 707"])
def test_a_tgid_written_with_a_sign_or_a_space_is_read_by_parse_and_replay(
    tmp_path: Path, tgid: str
) -> None:
    """A trace whose begin rows write the tgid as ``B|+707|`` or ``B| 707|`` gives parse's
    tables and replay's recorded latencies of ``B|707|`` (both had skipped every such mark:
    parse found no NNAPI mark, replay no execution)."""
    plain = tmp_path / "plain.txt"
    record(QUICKSTART, plain)
    loose = tmp_path / "loose.txt"
    loose.write_text(plain.read_text("utf-8").replace("B|707|", f"B|{tgid}|"), "utf-8")
    _, plain_tables, _ = run_parse(plain)
    code, tables, err = run_parse(loose)
    assert code == 0, err
    assert tables == plain_tables.replace("B|707|[NN_LA_PO]", f"B|{tgid}|[NN_LA_PO]")
    assert "Application" in tables

    def recorded(path: Path) -> str:
        code, out, err = run_cli("replay", str(path), "-n")
        assert code == 0, err
        return next(line for line in out.splitlines() if "recorded" in line and "camera" in line)

    assert recorded(loose) == recorded(plain)
