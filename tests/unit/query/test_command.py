"""The ``nnemu query`` command: output formats, the shell, --db and errors."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import sqlite3

import pytest

from nnemu.cli import main
from nnemu.query import split_statements
from tests.commands import run_query

ROWS = [
    (0, "app", 100, 100, "[NN_LR_PE]compute"),
    (10, "app", 100, 100, "child"),
    (15, "app", 100, 100, "E"),
    (20, "app", 100, 100, "E"),
]
SQL = "SELECT id, name, dur, parent_id FROM slice ORDER BY id"


def test_text_table_is_aligned(write_trace):
    """The default output is a header, a rule and rows with numbers right-aligned and NULL shown."""
    code, out, err = run_query(write_trace(ROWS), SQL)
    assert (code, err) == (0, "")
    assert out == (
        "id  name               dur    parent_id\n"
        "--  -----------------  -----  ---------\n"
        " 0  [NN_LR_PE]compute  20000       NULL\n"
        " 1  child               5000          0\n"
    )


def test_csv_output(write_trace):
    """--csv writes a header row and empty fields for NULL."""
    code, out, _ = run_query(write_trace(ROWS), SQL, as_csv=True)
    assert code == 0
    assert list(csv.reader(io.StringIO(out))) == [
        ["id", "name", "dur", "parent_id"],
        ["0", "[NN_LR_PE]compute", "20000", ""],
        ["1", "child", "5000", "0"],
    ]


def test_json_output(write_trace):
    """--json writes an array of objects keyed by column name."""
    code, out, _ = run_query(write_trace(ROWS), SQL, as_json=True)
    assert code == 0
    assert json.loads(out) == [
        {"id": 0, "name": "[NN_LR_PE]compute", "dur": 20000, "parent_id": None},
        {"id": 1, "name": "child", "dur": 5000, "parent_id": 0},
    ]
    _, empty, _ = run_query(write_trace(ROWS), "SELECT 1 WHERE 0", as_json=True)
    assert json.loads(empty) == []


def test_several_statements_print_the_last_result(write_trace):
    """Statements run in order and only the last one's rows are printed."""
    code, out, _ = run_query(
        write_trace(ROWS), "CREATE VIEW v AS SELECT name FROM slice; SELECT count(*) AS n FROM v"
    )
    assert (code, out) == (0, "n\n-\n2\n")


def test_shell_reads_statements_from_stdin(write_trace):
    """Without SQL the shell reads ;-terminated statements and dot commands from stdin."""
    stdin = (
        ".tables\n"
        "SELECT count(*) AS n\n  FROM slice;\n"
        ".mode csv\n"
        "SELECT 'a;b' AS s; SELECT 2 AS t;\n"
        ".schema thread_track\n"
        ".quit\n"
        "SELECT 'not run';\n"
    )
    code, out, err = run_query(write_trace(ROWS), stdin=stdin)
    assert (code, err) == (0, "")
    assert out == (
        "args\ncounter\ncounter_track\nflow\nnnapi_layer\nnnapi_phase\nnnapi_slice\nprocess\n"
        "process_counter_track\nslice\nslice_ancestor\nslice_descendant\nthread\nthread_track\n"
        "n\n-\n2\n"
        "s\na;b\n"
        "t\n2\n"
        "CREATE TABLE thread_track (\n"
        "    id INTEGER PRIMARY KEY,\n"
        "    utid INTEGER REFERENCES thread(utid),\n"
        "    name TEXT\n"
        ");\n"
    )


def test_dot_command_as_the_query_runs_as_in_the_shell(write_trace):
    """A dot command given as the SQL argument (``nnemu query T .tables``) runs as the shell
    runs it, instead of failing as SQL; an unknown one exits 2 with the shell's message."""
    trace = write_trace(ROWS)
    code, out, err = run_query(trace, ".schema thread_track")
    assert (code, err) == (0, "")
    assert out.startswith("CREATE TABLE thread_track (\n")
    code, out, err = run_query(trace, " .tables")
    assert (code, err) == (0, "")
    assert "slice\n" in out.splitlines(keepends=True)
    code, out, err = run_query(trace, ".bogus")
    assert (code, out, err) == (2, "", "query: unknown command .bogus (try .help)\n")


def test_shell_reports_errors_and_continues(write_trace):
    """A failing statement in the shell prints query: <message>, the rest still run, exit is 2."""
    code, out, err = run_query(write_trace(ROWS), stdin="SELECT nope;\n.bogus\nSELECT 1 AS x;\n")
    assert code == 2
    assert err == "query: no such column: nope\nquery: unknown command .bogus (try .help)\n"
    assert out == "x\n-\n1\n"


def test_split_statements_respects_strings_and_comments():
    """A ; inside a string or comment does not end a statement; the unfinished rest is returned."""
    assert split_statements("SELECT ';'; -- a;b\nSELECT 2; SELECT") == (
        ["SELECT ';';", "-- a;b\nSELECT 2;"],
        " SELECT",
    )


def test_db_keeps_the_database(write_trace, tmp_path):
    """--db writes an SQLite file with the tables and views, replacing an older one."""
    db = tmp_path / "t.db"
    for _ in range(2):
        code, _, _ = run_query(write_trace(ROWS), "SELECT 1", db=str(db))
        assert code == 0
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*) FROM slice_descendant").fetchone() == (1,)


def test_db_refuses_to_replace_other_files(write_trace, tmp_path):
    """--db does not overwrite a file that is not an SQLite database."""
    other = tmp_path / "notes.txt"
    other.write_text("keep me")
    code, _, err = run_query(write_trace(ROWS), "SELECT 1", db=str(other))
    assert code == 2
    assert err == f"query: --db {other}: exists and is not an SQLite database; not replacing it\n"
    assert other.read_text() == "keep me"


def test_sql_error_exits_2_with_one_line(write_trace):
    """A bad statement gives 'query: <sqlite message>' and exit code 2."""
    code, out, err = run_query(write_trace(ROWS), "SELEC 1")
    assert (code, out) == (2, "")
    assert err == 'query: near "SELEC": syntax error\n'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (None, ": error: cannot read the trace: No such file or directory\n"),
        ("", ":0: error: no trace events: the file is blank"),
        ("# tracer: nop\n", ":1: error: no slices found"),
    ],
)
def test_bad_trace_exits_2_with_one_line(tmp_path, text, expected):
    """A missing file or one with nothing to load gives one error line and exit code 2."""
    path = tmp_path / "t.txt"
    if text is not None:
        path.write_text(text)
    code, out, err = run_query(path, "SELECT 1")
    assert (code, out) == (2, "")
    assert err.startswith(str(path) + expected.replace(":0:", ":"))
    assert err.count("\n") == 1


def test_cli_routes_query_and_rejects_two_formats(write_trace):
    """nnemu query runs through the CLI; --csv with --json is refused with exit code 2."""
    trace = str(write_trace(ROWS))
    out, err = io.StringIO(), io.StringIO()
    assert main(["query", trace, "SELECT count(*) AS n FROM slice", "--csv"], out=out, err=err) == 0
    assert out.getvalue() == "n\n2\n"
    out, err = io.StringIO(), io.StringIO()
    assert main(["query", trace, "SELECT 1", "--csv", "--json"], out=out, err=err) == 2
    assert err.getvalue() == "query: --csv and --json cannot be used together\n"


def test_warnings_are_capped(write_trace):
    """Past 20 warnings the rest are counted in one line."""
    rows = [(i, "app", 100, 100, "E") for i in range(25)] + [(30, "app", 100, 100, "x")]
    rows.append((31, "app", 100, 100, "E"))
    code, _, err = run_query(write_trace(rows), "SELECT 1")
    assert code == 0
    lines = err.splitlines()
    assert len(lines) == 21
    assert lines[0].endswith(
        "t.txt:3: warning: end mark (E) with no open section on this thread; skipped"
    )
    assert lines[-1].endswith("t.txt: warning: 5 more warnings not shown")


def test_cli_reads_the_query_after_an_option(write_trace, capsys):
    """``nnemu query TRACE --csv SQL`` runs SQL (an option may sit between the trace and the query)."""
    trace = str(write_trace(ROWS))
    out, err = io.StringIO(), io.StringIO()
    assert main(["query", trace, "--csv", "SELECT count(*) AS n FROM slice"], out=out, err=err) == 0
    assert out.getvalue() == "n\n2\n"
    with pytest.raises(SystemExit) as exit_info:
        main(["query", trace, "--csv", "SELECT 1", "extra"], out=io.StringIO(), err=io.StringIO())
    assert exit_info.value.code == 2
    assert "unrecognized arguments: extra" in capsys.readouterr().err


def test_warnings_of_a_trace_read_again_come_once_and_by_line(tmp_path):
    """A trace read again in time order prints the warnings of that reading only (not the
    first reading's end mark with no open section), each once, sorted by line as parse
    sorts them, whatever order the time-ordered reading found them in."""
    rows = [
        (0, 100, "B|100|[NN_LR_PE]compute"),
        (50, 100, "E|100"),  # line 4: before its begin in the file
        (40, 100, "B|100|late"),  # line 5: out of time order
        (90, 100, "B|"),  # line 6: malformed (no slice), found late in time order
        (95, 100, "C|100|c|1"),
        (5, 101, "B|"),  # line 8: malformed (no slice), found early in time order
        (6, 101, "C|100|c|2"),
        (99, 100, "E|100"),
    ]
    path = tmp_path / "t.txt"
    path.write_text(
        "# tracer: nop\n#\n"
        + "".join(
            f"app-{tid} (  100) [000] ...1 1.{us:06d}: tracing_mark_write: {text}\n"
            for us, tid, text in rows
        )
    )
    code, _, err = run_query(path, "SELECT 1")
    assert code == 0
    places = [line.split(": warning: ")[0].rsplit(":", 1)[-1] for line in err.splitlines()]
    assert places == ["5", "6", "8"]
    assert "end mark (E) with no open section" not in err
    assert "rows out of time order; the first is here" in err.splitlines()[0]


def test_a_warning_is_a_line_of_its_own_under_the_progress_bar(tmp_path, monkeypatch):
    """A warning met while the progress bar is drawn (a trace too big to read again) erases
    the bar first: it starts a line of its own, never glued to the bar."""
    import nnemu._progress as progress
    from nnemu.query import _load

    monkeypatch.setattr(progress, "MIN_BYTES", 0)
    monkeypatch.setattr(progress, "_INTERVAL_S", 0.0)
    monkeypatch.setattr(progress, "_EVERY_LINES", 1)
    monkeypatch.setattr(_load, "MAX_SORTED_BYTES", 0)  # read once

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    rows = ["# tracer: nop", "#"]
    rows += [
        f"app-100 (  100) [000] ...1 1.{i:06d}: tracing_mark_write: {'B|100|s' if i % 2 else 'E|100'}"
        for i in range(1, 200)
    ]
    rows.insert(150, "app-100 (  100) [000] ...1 1.000150: tracing_mark_write: B|")
    path = tmp_path / "t.txt"
    path.write_text("\n".join(rows) + "\n")
    terminal = Terminal()

    def warn(line: int, message: str) -> None:
        terminal.write(f"{path}:{line}: warning: {message}\n")

    _load.load_trace(str(path), sqlite3.connect(":memory:"), warn, progress=terminal)
    text = terminal.getvalue()
    assert "loading t.txt [" in text
    at = text.index(f"{path}:151: warning: malformed begin mark")
    assert text[at - 1] in "\r\n"
    assert text[: at - 1].rsplit("\r", 1)[-1].strip() == ""  # the bar's line was blanked


def test_db_refuses_to_replace_a_database_nnemu_did_not_write(write_trace, tmp_path):
    """--db replaces only a database nnemu wrote (its application id): another is kept."""
    mine = tmp_path / "mine.db"
    with contextlib.closing(sqlite3.connect(mine)) as conn:
        conn.execute("CREATE TABLE notes (text)")
        conn.execute("INSERT INTO notes VALUES ('keep me')")
        conn.commit()
    before = mine.read_bytes()
    code, _, err = run_query(write_trace(ROWS), "SELECT 1", db=str(mine))
    assert code == 2
    assert err == (
        f"query: --db {mine}: is an SQLite database nnemu did not write; not replacing it\n"
    )
    assert mine.read_bytes() == before
    ours = tmp_path / "ours.db"
    assert run_query(write_trace(ROWS), "SELECT 1", db=str(ours))[0] == 0
    with contextlib.closing(sqlite3.connect(ours)) as conn:
        assert conn.execute("PRAGMA application_id").fetchone() == (0x6E6E656D,)


def test_input_that_is_not_utf8_is_a_message(write_trace):
    """A byte that is not UTF-8 on standard input (kept by Python as a surrogate) drops its
    statement with a message, exit 2; in the SQL argument too (it was UnicodeEncodeError)."""
    trace = write_trace(ROWS)
    bad = b'select "\xff";'.decode("utf-8", "surrogateescape")
    code, out, err = run_query(trace, stdin=f"select 1;\n{bad}\nselect 2;\n", as_csv=True)
    assert (code, out) == (2, "1\n1\n2\n2\n")
    assert err == "query: standard input line 2: expected UTF-8 text, got byte 0xff\n"
    code, out, err = run_query(trace, bad)
    assert (code, out) == (2, "")
    assert err == "query: the SQL argument: expected UTF-8 text, got byte 0xff\n"


def test_the_text_table_streams_past_its_sample(write_trace):
    """The table sizes its columns on the first rows and writes the rest as they come (it held
    every row: a 30M-row join ran out of memory); a huge blob's cell is cut, not hexed whole."""
    from nnemu.query import _output

    class Counting:
        """Rows that say how many were taken before each line was written."""

        def __init__(self, out: io.StringIO) -> None:
            self.taken = 0
            self.out = out
            self.lines_when_taken: list[int] = []

        def __iter__(self):
            for index in range(_output.TABLE_SAMPLE_ROWS + 5):
                self.taken += 1
                self.lines_when_taken.append(self.out.getvalue().count("\n"))
                yield (index, "x")

    out = io.StringIO()
    rows = Counting(out)
    _output.write_table(["n", "s"], rows, out)
    assert rows.lines_when_taken[-1] > _output.TABLE_SAMPLE_ROWS  # written before the last row
    assert out.getvalue().count("\n") == _output.TABLE_SAMPLE_ROWS + 5 + 2
    code, out_text, _ = run_query(write_trace(ROWS), "select randomblob(10000000) as b")
    assert code == 0
    assert len(out_text.splitlines()[2]) == _output.MAX_CELL
    assert out_text.splitlines()[2].endswith("…")


def test_sql_with_a_lone_surrogate_is_a_message(write_trace):
    """SQL holding a lone surrogate that is no escaped byte (a library caller's str; the fuzz
    campaign's '\\ud800') is refused with a message, exit 2 (it was UnicodeEncodeError)."""
    code, out, err = run_query(write_trace(ROWS), "SELECT '\ud800'")
    assert (code, out) == (2, "")
    assert err == "query: the SQL argument: expected text without lone surrogates, got U+D800\n"
