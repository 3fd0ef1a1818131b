"""Mutated trace rows never end in a traceback: parse, parse --json and the JSON reader."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nnemu.parser import parse_lines
from nnemu.tracer import Layer, Phase
from tests.commands import run_parse

REPO = Path(__file__).resolve().parents[3]
OMR1 = REPO / "tests" / "data" / "omr1.html"
NNEMU = REPO / "tests" / "diff" / "c12-two-clients" / "trace.txt"
CHROME = REPO / "tests" / "diff" / "c17-chrome-json" / "trace.json"


def _rows(path: Path, limit: int) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    rows = [line for line in lines if "tracing_mark_write" in line]
    return rows[:limit]


OMR1_ROWS = _rows(OMR1, 300)
NNEMU_ROWS = _rows(NNEMU, 100)
CHROME_TEXT = CHROME.read_text(encoding="utf-8")

_NASTY = st.sampled_from(
    [
        "1.5000000000",
        "9" * 40,
        "0." + "1" * 30,
        "NaN",
        "inf",
        "-1",
        "1e308",
        "\x00",
        "\ud800",
        "٣",
        "E|",
        "B||",
        "B|1|",
        "|",
        "[NN_LA_PO]",
        "[SW]",
        "[SUB]",
        "HIDL::IDevice::prepareModel_1_3::server",
        "HIDL::IExecutionCallback::notify::client",
        ": tracing_mark_write: ",
        "(-----)",
        "\n",
        "",
    ]
)


@st.composite
def _mutated(draw: st.DrawFn, rows: list[str]) -> list[str]:
    rows = list(rows)
    for _ in range(draw(st.integers(1, 6))):
        index = draw(st.integers(0, len(rows) - 1))
        row = rows[index]
        action = draw(st.integers(0, 4))
        if action == 0:
            rows.pop(index)
        elif action == 1:
            rows.insert(index, row)
        else:
            start = draw(st.integers(0, len(row)))
            end = draw(st.integers(start, min(len(row), start + 12)))
            text = draw(st.one_of(_NASTY, st.text(max_size=12)))
            rows[index] = row[:start] + text + row[end:]
        if not rows:
            rows = ["\n"]
    return rows


def _run(tmp_path: Path, name: str, text: str, *flags: str) -> tuple[int, str, str]:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    return run_parse(
        path,
        as_json="json" in flags,
        print_detail="detail" in flags,
        include_incomplete="incomplete" in flags,
    )


def _check(code: int, out: str, err: str, as_json: bool) -> None:
    assert code in (0, 2), err
    if code == 0 and as_json:
        assert isinstance(json.loads(out), list)
    for line in err.splitlines():
        assert ": warning: " in line or ": error: " in line, line


_SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@_SETTINGS
@given(rows=_mutated(OMR1_ROWS))
def test_mutated_omr1_rows(tmp_path: Path, rows: list[str]):
    """Mutated rows of a real device trace give tables or diagnostics, never a traceback."""
    text = "# tracer: nop\n#\n" + "".join(rows)
    for flags in ((), ("json", "incomplete"), ("detail",)):
        _check(*_run(tmp_path, "omr1.txt", text, *flags), as_json="json" in flags)


@_SETTINGS
@given(rows=_mutated(NNEMU_ROWS))
def test_mutated_nnemu_rows(tmp_path: Path, rows: list[str]):
    """Mutated rows of an nnemu trace give tables or diagnostics, never a traceback."""
    text = "# tracer: nop\n#\n" + "".join(rows)
    for flags in ((), ("json",)):
        _check(*_run(tmp_path, "nnemu.txt", text, *flags), as_json="json" in flags)


@_SETTINGS
@given(lines=_mutated(CHROME_TEXT.splitlines(keepends=True)))
def test_mutated_chrome_json(tmp_path: Path, lines: list[str]):
    """Mutated Chrome JSON traces give tables or diagnostics, never a traceback."""
    for flags in ((), ("json",)):
        _check(*_run(tmp_path, "trace.json", "".join(lines), *flags), as_json="json" in flags)


def test_deeply_nested_json_is_refused(tmp_path: Path):
    """A deeply nested JSON document is refused with a message, not a RecursionError."""
    code, _, err = _run(tmp_path, "deep.json", "[" * 200_000)
    assert code == 2
    assert "nested too deeply" in err


@pytest.mark.parametrize(
    ("stamp", "expected_ms"),
    [("1.5", 500.0), ("1.500000", 500.0), ("1.5000000000", 500.0), ("1.5" + "0" * 30, 500.0)],
)
def test_timestamp_fractions_of_any_length_are_read_exactly(stamp: str, expected_ms: float):
    """A timestamp's fraction is read exactly whatever its number of digits."""
    text = (
        "# tracer: nop\n"
        "  app-1 (    1) [000] ...1 1.000000: tracing_mark_write: B|1|[NN_LR_PC]f\n"
        f"  app-1 (    1) [000] ...1 {stamp}: tracing_mark_write: E|1\n"
    )
    (run,) = parse_lines(text.splitlines()).runs
    assert run.totals_ns(Layer.RUNTIME, Phase.COMPILATION) == expected_ms * 1_000_000


def test_timestamp_finer_than_a_nanosecond_is_refused():
    """A fraction with non-zero digits past the ns is refused with a diagnostic, never misread."""
    text = (
        "# tracer: nop\n"
        "  app-1 (    1) [000] ...1 1.000000: tracing_mark_write: B|1|[NN_LR_PC]f\n"
        "  app-1 (    1) [000] ...1 1.5000000001: tracing_mark_write: E|1\n"
        "  app-1 (    1) [000] ...1 2.000000: tracing_mark_write: E|1\n"
    )
    result = parse_lines(text.splitlines())
    (problem,) = result.diagnostics
    assert problem.line_number == 3
    assert "finer than a nanosecond" in problem.message
    assert result.runs[0].totals_ns(Layer.RUNTIME, Phase.COMPILATION) == 1_000_000_000


def test_gzip_trace_is_named_as_such(tmp_path: Path):
    """A gzip-compressed trace gets a message saying so, and exit 2."""
    path = tmp_path / "trace.html.gz"
    path.write_bytes(gzip.compress(OMR1.read_bytes()[:1000]))
    code, _, err = run_parse(path)
    assert code == 2
    assert err == f"{path}: error: the file is gzip-compressed; decompress it first (gunzip -k)\n"
