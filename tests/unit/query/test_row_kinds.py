"""Three kinds of odd systrace row, read alike by the text reader and by ``nnemu query``.

The text reader (``nnemu.trace``'s ``row_batches``: the events replay reads, and parse) and
``nnemu query`` (whose loader, ``query/_loader.py``, is fed the same reader's rows:
``feed_rows``) read each row as Perfetto's trace processor reads it (``systrace_line_tokenizer.cc``, ``systrace_line_parser.cc``, ``systrace_parser.cc``);
where nnemu departs from it (a pid beyond pid_t), both depart alike (docs/query.md).
"""

from __future__ import annotations

import csv
import io
import subprocess
from pathlib import Path

from nnemu.cli import main
from nnemu.trace import BEGIN, END, MALFORMED_ROW, PROBLEM, TraceEvents
from tests.commands import trace_processor_shell

HEADER = "# tracer: nop\n#\n"
THREADS = "SELECT t.tid, p.pid FROM thread t LEFT JOIN process p USING (upid) ORDER BY t.tid"
SLICES = (
    "SELECT s.name, t.tid, p.pid FROM slice s JOIN thread_track tt ON s.track_id = tt.id"
    " JOIN thread t USING (utid) LEFT JOIN process p USING (upid) ORDER BY s.name"
)


def row(tid: int, column: str | None, stamp: str, payload: str) -> str:
    """A mark row, with a ``( TGID)`` column unless ``column`` is None."""
    tgid = "" if column is None else f"({column:>5}) "
    return f"           app-{tid}  {tgid}[001] ...1  {stamp}: tracing_mark_write: {payload}\n"


def write(tmp_path: Path, *rows: str) -> Path:
    path = tmp_path / "t.txt"
    path.write_text(HEADER + "".join(rows))
    return path


def reader(path: Path) -> list[tuple[int, int, int, int]]:
    """(kind, line, pid, tid) of the reader's begins, ends and problems (replay's events)."""
    return [
        (kind, line, pid, tid)
        for kind, _, line, pid, tid, _, _ in TraceEvents(path).events()
        if kind in (BEGIN, END, PROBLEM)
    ]


def query(path: Path, sql: str) -> tuple[list[list[str]], str]:
    """The rows ``nnemu query path sql --csv`` prints (no header), and its warnings."""
    out, err = io.StringIO(), io.StringIO()
    assert main(["query", str(path), sql, "--csv"], out=out, err=err) == 0
    return list(csv.reader(io.StringIO(out.getvalue())))[1:], err.getvalue()


def trace_processor(path: Path, sql: str) -> list[list[str]]:
    """The rows Perfetto's trace processor gives (NULL as nnemu's CSV writes it: empty)."""
    done = subprocess.run(
        [trace_processor_shell(), "-q", "/dev/stdin", str(path)],
        input=sql,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    rows = list(csv.reader(io.StringIO(done.stdout.strip())))[1:]
    return [["" if cell == "[NULL]" else cell for cell in r] for r in rows]


def test_a_mark_row_without_its_separator_is_malformed_to_both(tmp_path: Path) -> None:
    """``app-1000 garbage tracing_mark_write: B|1000|bad`` is no row (trace processor's
    tokenizer regex does not match it: ``systrace_parse_failure``); both readers warn of it
    at its line (query used to skip it without a word) and read the rows around it."""
    path = write(
        tmp_path,
        row(1000, "1000", "1.000000", "B|1000|ok"),
        "           app-1000 garbage tracing_mark_write: B|1000|bad\n",
        row(1000, "1000", "1.000100", "E|1000"),
    )
    assert reader(path) == [(BEGIN, 3, 1000, 1000), (PROBLEM, 4, 0, 0), (END, 5, 1000, 1000)]
    rows, warnings = query(path, "SELECT name, dur FROM slice")
    assert rows == [["ok", "100000"]]
    assert warnings == f"{path}:4: warning: {MALFORMED_ROW}\n"


def test_a_tgid_column_beyond_32_bits_names_its_wrapped_pid_to_both(tmp_path: Path) -> None:
    """A ``( TGID)`` column is read as ``systrace_line_parser.cc`` reads it
    (``StringToUInt32``: ``strtoul`` cast to 32 bits): ``99999999999`` is process
    1215752191, for a begin and an end alike (the reader gave a begin the tid, an end 0;
    query no process)."""
    path = write(
        tmp_path,
        row(1000, "99999999999", "1.000000", "B|99999999999|a"),
        row(1000, "99999999999", "1.000100", "E|99999999999"),
    )
    assert reader(path) == [(BEGIN, 3, 1215752191, 1000), (END, 4, 1215752191, 1000)]
    rows, warnings = query(path, SLICES)
    assert (rows, warnings) == ([["a", "1000", "1215752191"]], "")


def test_a_tgid_column_beyond_pid_t_is_no_process_to_both(tmp_path: Path) -> None:
    """A column that names a pid beyond pid_t (``3000000000``; trace processor keeps it as a
    32-bit pid) names no process here, as a mark's tgid beyond it names none: the reader's
    begin and end have no pid (-1), query's thread no process (docs/query.md)."""
    path = write(
        tmp_path,
        row(1000, "3000000000", "1.000000", "B|3000000000|a"),
        row(1000, "3000000000", "1.000100", "E"),
    )
    assert reader(path) == [(BEGIN, 3, -1, 1000), (END, 4, -1, 1000)]
    assert query(path, SLICES) == ([["a", "1000", ""]], "")


def test_a_begin_of_tgid_0_without_a_column_is_no_process_to_both(tmp_path: Path) -> None:
    """Without a TGID column, ``B|0|a`` begins a slice of a thread with no process, as
    ``systrace_parser.cc`` begins it (a tgid of 0: ``GetOrCreateThread(pid)`` only); the
    reader gave it process 0.  ``B|3000000000|b`` (beyond pid_t: trace processor's process
    3000000000) is no process either, as query reads it (the reader gave it the tid)."""
    path = write(
        tmp_path,
        row(1000, None, "1.000000", "B|0|a"),
        row(1000, None, "1.000100", "E"),
        row(1001, None, "1.000000", "B|3000000000|b"),
        row(1001, None, "1.000100", "E"),
    )
    assert reader(path) == [
        (BEGIN, 3, -1, 1000),
        (END, 4, -1, 1000),
        (BEGIN, 5, -1, 1001),
        (END, 6, -1, 1001),
    ]
    assert query(path, SLICES) == ([["a", "1000", ""], ["b", "1001", ""]], "")


def test_trace_processor_gives_these_rows_the_processes_query_gives(tmp_path: Path) -> None:
    """Perfetto's trace processor (``NNEMU_TRACE_PROCESSOR``) on the rows above where nnemu
    does not depart from it: the same slices, on threads of the same processes, and one
    ``systrace_parse_failure`` for the row without its separator."""
    path = write(
        tmp_path,
        row(1000, "99999999999", "1.000000", "B|99999999999|wrapped"),
        row(1000, "99999999999", "1.000100", "E|99999999999"),
        "           app-1000 garbage tracing_mark_write: B|1000|bad\n",
        row(1001, None, "1.000000", "B|0|zero"),
        row(1001, None, "1.000100", "E"),
    )
    expected = [["wrapped", "1000", "1215752191"], ["zero", "1001", ""]]
    assert trace_processor(path, SLICES) == expected
    failures = "SELECT value FROM stats WHERE name = 'systrace_parse_failure'"
    assert trace_processor(path, failures) == [["1"]]
    rows, warnings = query(path, SLICES)
    assert rows == expected
    assert warnings == f"{path}:5: warning: {MALFORMED_ROW}\n"
