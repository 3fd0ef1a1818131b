"""The mypyc-compiled engine: used only when built from the current source, and it parses alike."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given, settings

from nnemu import _native
from nnemu.parser import _api, _compile, _engine, parse_lines
from nnemu.parser._format import format_json, format_text
from tests.unit.parser.test_fast_path import _outcome
from tests.unit.parser.test_fast_path import _rows as varied_rows

REPO = Path(__file__).resolve().parents[3]
TRACES = [
    REPO / "tests" / "data" / "omr1.html",
    REPO / "tests" / "diff" / "c12-two-clients" / "trace.txt",
]
_MODULE = f"nnemu.parser.{_compile.COMPILED}"


class _Engine:
    """Stands for a compiled ``Engine`` class."""


def _fake_compiled(crc: int) -> types.ModuleType:
    module = types.ModuleType(_MODULE)
    module.SOURCE_CRC = crc  # type: ignore[attr-defined]
    module.Engine = _Engine  # type: ignore[attr-defined]
    return module


def test_compiled_engine_is_used_when_built_from_this_source(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A compiled module recording the current source's CRC-32 is the engine chosen."""
    monkeypatch.delenv(_compile.PURE_ENV, raising=False)
    monkeypatch.delenv(_native.PURE_ENV, raising=False)  # (a suite run with NNEMU_PURE=1)
    with mock.patch.dict(sys.modules, {_MODULE: _fake_compiled(_compile.source_crc())}):
        assert _compile.compiled_engine() is _Engine


def test_stale_compiled_engine_is_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    """After ``_engine.py`` is edited, the module compiled from the old source is not used."""
    monkeypatch.delenv(_compile.PURE_ENV, raising=False)
    stale = _fake_compiled(_compile.source_crc() ^ 1)
    with mock.patch.dict(sys.modules, {_MODULE: stale}):
        assert _compile.compiled_engine() is None


def test_pure_engine_can_be_forced(monkeypatch: pytest.MonkeyPatch) -> None:
    """``NNEMU_PURE_PARSER=1`` ignores even an up-to-date compiled engine."""
    monkeypatch.setenv(_compile.PURE_ENV, "1")
    with mock.patch.dict(sys.modules, {_MODULE: _fake_compiled(_compile.source_crc())}):
        assert _compile.compiled_engine() is None


def _parsed(path: Path, engine: type) -> tuple[str, str, list[str]]:
    with mock.patch.object(_api, "_engine_class", engine):
        result = parse_lines(path.read_text(encoding="utf-8").splitlines(True), keep_detail=True)
    return (
        format_text(result, per_execution=True, total_times=True, print_detail=True),
        format_json(result),
        [f"{d.line_number}: {d.severity}: {d.message}" for d in result.diagnostics],
    )


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_compiled_engine_parses_as_the_pure_one(path: Path) -> None:
    """Where the compiled engine is built, its tables, JSON and diagnostics equal the pure one's."""
    compiled = _compile.compiled_engine()
    if compiled is None:
        pytest.skip("the compiled engine is not built (python -m nnemu.parser._build)")
    assert _parsed(path, compiled) == _parsed(path, _engine.Engine)


@pytest.mark.skipif(
    _compile.compiled_engine() is None,
    reason="the compiled engine is not built (python -m nnemu.parser._build)",
)
@settings(max_examples=200, deadline=None)
@given(lines=varied_rows())
def test_compiled_engine_reads_varied_rows_as_the_pure_one(lines: list[str]) -> None:
    """Odd heads, stamps and payloads give the compiled engine the same runs and diagnostics."""
    compiled = _compile.compiled_engine()
    assert compiled is not None
    with mock.patch.object(_api, "_engine_class", compiled):
        fast = _outcome(lines)
    with mock.patch.object(_api, "_engine_class", _engine.Engine):
        pure = _outcome(lines)
    assert fast == pure
