"""Over-long lines are refused with their line number, never read whole into memory."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from nnemu.errors import TraceFormatError
from nnemu.trace import MAX_LINE, FtraceLines, bounded_lines
from tests.commands import run_cli

_HEADER = "# tracer: nop\n#\n"


def test_a_line_of_max_line_characters_is_read() -> None:
    """A line of exactly MAX_LINE characters (plus its break) is a line like any other."""
    text = "a" * MAX_LINE + "\n" + "b" * MAX_LINE
    assert [len(line) for line in bounded_lines(io.StringIO(text))] == [MAX_LINE + 1, MAX_LINE]


def test_a_longer_line_is_refused_at_its_number(tmp_path: Path) -> None:
    """One character more than MAX_LINE without a line break is a TraceFormatError at that line."""
    path = tmp_path / "t.txt"
    path.write_text(_HEADER + "x" * (MAX_LINE + 1) + "\nrest\n")
    with path.open(encoding="utf-8") as stream, pytest.raises(TraceFormatError) as caught:
        list(FtraceLines(stream))
    assert (caught.value.source, caught.value.line_number) == (str(path), 3)
    assert caught.value.message == f"line longer than {MAX_LINE} bytes"


@pytest.mark.parametrize("command", [("parse",), ("query",), ("replay", "-n")])
def test_commands_refuse_a_file_without_line_breaks(tmp_path: Path, command: tuple[str, ...]) -> None:
    """parse, query and replay exit 2 with file:line: line longer than N bytes, no traceback."""
    path = tmp_path / "no-breaks.txt"
    path.write_text(_HEADER + "B|1|[NN_LA_PO]x " * (MAX_LINE // 8))
    code, out, err = run_cli(*command, str(path))
    assert code == 2
    assert out == ""
    assert err == f"{path}:3: error: line longer than {MAX_LINE} bytes\n"


def test_html_outside_the_ftrace_block_may_have_long_lines(tmp_path: Path) -> None:
    """A systrace HTML's viewer code may hold longer lines: they are skipped, the trace is read."""
    path = tmp_path / "t.html"
    row = "app-10  ( 10) [000] ...1 1.000000: tracing_mark_write: B|10|[NN_LA_PO]x\n"
    path.write_text(
        "<!DOCTYPE html>\n<html>\n<script>" + "v" * (3 * MAX_LINE) + "</script>\n"
        '<script class="trace-data" type="application/text">\n# tracer: nop\n'
        + row
        + "</script>\n</html>\n"
    )
    with path.open(encoding="utf-8") as stream:
        source = FtraceLines(stream)
        assert list(source) == [(6, row)]
    assert source.is_html
    assert source.found_ftrace
