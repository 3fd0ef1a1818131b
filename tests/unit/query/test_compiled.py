"""The mypyc-compiled query loader: chosen only when built from the current sources, loads alike."""

from __future__ import annotations

import sqlite3
import sys
import types
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nnemu import _native, run
from nnemu.query import _compile, _loader
from nnemu.query._schema import create_tables
from nnemu.scenario import load_scenario
from nnemu.tracer import open_trace_writer
from tests.unit.query.test_fast_path import _rows as varied_rows

REPO = Path(__file__).resolve().parents[3]
_TARGET = _native.target("query")
_MODULE = dict(_TARGET.modules)[_compile.LOADER_MODULE]
_TABLES = (
    "slice",
    "args",
    "thread",
    "process",
    "thread_track",
    "flow",
    "counter",
    "process_counter_track",
)
_NOT_BUILT = "the compiled loader is not built (python -m nnemu._build query)"


def _fake_compiled(crc: int) -> types.ModuleType:
    module = types.ModuleType(_MODULE)
    module.SOURCE_CRC = crc  # type: ignore[attr-defined]
    return module


def test_compiled_loader_is_used_when_built_from_these_sources(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A compiled module recording the current sources' CRC-32 is the loader chosen."""
    monkeypatch.delenv(_native.PURE_ENV, raising=False)
    fake = _fake_compiled(_native.source_crc(_TARGET))
    with mock.patch.dict(sys.modules, {_MODULE: fake}):
        assert _compile.compiled_loader() is fake


def test_stale_compiled_loader_is_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    """After a source of the target is edited, the module compiled from the old one is not used."""
    monkeypatch.delenv(_native.PURE_ENV, raising=False)
    stale = _fake_compiled(_native.source_crc(_TARGET) ^ 1)
    with mock.patch.dict(sys.modules, {_MODULE: stale}):
        assert _compile.compiled_loader() is None


@pytest.mark.parametrize("value", ["1", "query", "parser,query"])
def test_pure_loader_can_be_forced(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    """``NNEMU_PURE=1`` (or naming ``query``) ignores even an up-to-date compiled loader."""
    monkeypatch.setenv(_native.PURE_ENV, value)
    with mock.patch.dict(sys.modules, {_MODULE: _fake_compiled(_native.source_crc(_TARGET))}):
        assert _compile.compiled_loader() is None


def _tables(path: Path, module: types.ModuleType) -> tuple[object, ...]:
    conn = sqlite3.connect(":memory:")
    warnings: list[tuple[int, str]] = []
    summary = module.load_trace(
        str(path), conn, lambda line, message: warnings.append((line, message))
    )
    rows = tuple(
        conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall() for table in _TABLES
    )
    return summary, warnings, rows


@pytest.fixture(scope="module", name="traces")
def _traces(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """omr1, a two-client ftrace, and two_apps_one_npu written as HTML, JSON, text and Perfetto."""
    folder = tmp_path_factory.mktemp("compiled-loader")
    scenario = load_scenario(str(REPO / "scenarios/two_apps_one_npu.yaml"))
    written = [folder / f"t.{suffix}" for suffix in ("html", "json", "txt", "pftrace")]
    run(scenario, sinks=[open_trace_writer(path) for path in written])
    return [
        REPO / "tests/data/omr1.html",
        REPO / "tests/diff/c12-two-clients/trace.txt",
        *written,
    ]


def test_compiled_loader_loads_as_the_pure_one(traces: list[Path]) -> None:
    """Where the compiled loader is built, every table, warning and summary equals the pure one's."""
    compiled = _compile.compiled_loader()
    if compiled is None:
        pytest.skip(_NOT_BUILT)
    for path in traces:
        assert _tables(path, compiled) == _tables(path, _loader), path.name


def _load_rows(module: types.ModuleType, lines: list[str]) -> tuple[object, ...]:
    conn = sqlite3.connect(":memory:")
    create_tables(conn)
    warnings: list[tuple[int, str]] = []
    loader = module.Loader(conn, lambda line, message: warnings.append((line, message)))
    loader.load_ftrace(["# tracer: nop\n", *lines])
    loader.finish()
    rows = tuple(
        conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall() for table in _TABLES
    )
    return rows, warnings


@pytest.mark.skipif(_compile.compiled_loader() is None, reason=_NOT_BUILT)
@settings(max_examples=200, deadline=None)
@given(st.lists(varied_rows(), max_size=12))
def test_compiled_loader_reads_varied_rows_as_the_pure_one(lines: list[str]) -> None:
    """Odd heads, stamps and payloads give the compiled loader the same tables and warnings."""
    compiled = _compile.compiled_loader()
    assert compiled is not None
    assert _load_rows(compiled, lines) == _load_rows(_loader, lines)
