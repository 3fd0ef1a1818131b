"""nnemu.query.TraceProcessor: Perfetto's Python API shape (query rows, DataFrame, Arrow, close)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import nnemu
from nnemu.errors import TraceFormatError
from nnemu.query import TraceProcessor, open_trace
from nnemu.tracer import open_trace_writer

ROOT = Path(__file__).resolve().parents[3]
QUICKSTART = ROOT / "scenarios/quickstart.yaml"
SQL = "SELECT name, count(*), sum(dur) AS total FROM slice GROUP BY name ORDER BY name"


@pytest.fixture(scope="module", name="trace")
def _trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The quickstart scenario's systrace."""
    path = tmp_path_factory.mktemp("api") / "quickstart.html"
    nnemu.run(nnemu.load_scenario(QUICKSTART), sinks=[open_trace_writer(path)])
    return path


def _expected(trace: Path) -> list[tuple[object, ...]]:
    conn = open_trace(str(trace))
    try:
        return conn.execute(SQL).fetchall()
    finally:
        conn.close()


def test_query_rows_have_the_columns_as_attributes(trace: Path):
    """Rows iterate in order, by attribute (names made identifiers) or position, as SQL gives them."""
    with TraceProcessor(trace=trace) as tp:
        result = tp.query(SQL)
    rows = list(result)
    assert [tuple(row) for row in rows] == _expected(trace)
    assert len(result) == len(rows) > 10
    assert result.column_names == ("name", "count(*)", "total")
    first = rows[0]
    assert (first.name, first.count___, first.total) == tuple(first)


def test_query_runs_every_statement_and_returns_the_last(trace: Path):
    """As `nnemu query`: earlier statements run (a view), the last one's rows come back."""
    with TraceProcessor(trace=trace) as tp:
        result = tp.query("CREATE VIEW v AS SELECT name FROM process; SELECT name, name FROM v")
    assert result.column_names == ("name", "name")
    assert {row.name_2 for row in result} >= {"camera"}


def test_as_arrow_has_the_columns_and_values(trace: Path):
    """as_arrow() is a pyarrow Table with SQL's column names and the rows' values."""
    pytest.importorskip("pyarrow")
    with TraceProcessor(trace=trace) as tp:
        table = tp.query(SQL).as_arrow()
    assert table.column_names == ["name", "count(*)", "total"]
    assert [tuple(r.values()) for r in table.to_pylist()] == _expected(trace)


def test_as_pandas_dataframe_has_the_columns_and_values(trace: Path):
    """as_pandas_dataframe() is a DataFrame with SQL's column names and the rows' values."""
    pytest.importorskip("pandas")
    with TraceProcessor(trace=trace) as tp:
        frame = tp.query(SQL).as_pandas_dataframe()
        empty = tp.query("SELECT name FROM slice WHERE 0").as_pandas_dataframe()
    assert list(frame.columns) == ["name", "count(*)", "total"]
    assert list(frame.itertuples(index=False, name=None)) == _expected(trace)
    assert list(empty.columns) == ["name"]
    assert len(empty) == 0


def test_table_functions_work_when_apsw_is_there(trace: Path):
    """ancestor_slice() answers as in `nnemu query` (apsw installed)."""
    pytest.importorskip("apsw")
    with TraceProcessor(trace=trace) as tp:
        deepest = tp.query("SELECT id, depth FROM slice ORDER BY depth DESC LIMIT 1")
        (row,) = list(deepest)
        ancestors = tp.query(f"SELECT depth FROM ancestor_slice({row.id}) ORDER BY depth")
    assert [a.depth for a in ancestors] == list(range(row.depth))


def test_close_frees_it_and_a_later_query_says_so(trace: Path):
    """close() may be called twice; a query after it raises ValueError, a bad statement sqlite3.Error."""
    tp = TraceProcessor(trace=trace)
    with pytest.raises(sqlite3.Error):
        tp.query("SELECT nope FROM slice")
    tp.close()
    tp.close()
    with pytest.raises(ValueError, match="closed"):
        tp.query("SELECT 1")


def test_a_file_that_is_no_trace_is_a_trace_format_error(tmp_path: Path):
    """Loading what is not a trace raises TraceFormatError, as open_trace does."""
    path = tmp_path / "empty.txt"
    path.write_text("hello\n", encoding="utf-8")
    with pytest.raises(TraceFormatError):
        TraceProcessor(trace=path)


def test_parse_trace_is_the_parser_tables(trace: Path):
    """nnemu.parse_trace gives the runs `nnemu parse` tabulates, as attrs values."""
    result = nnemu.parse_trace(trace)
    assert [run.process_name for run in result.runs] == ["camera"]
    assert result == nnemu.parser.parse_file(trace)
