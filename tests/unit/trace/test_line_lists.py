"""``FtraceLines.blocks()``: the lines iteration gives, in lists, and what it remembers."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from nnemu.errors import TraceFormatError
from nnemu.trace import MAX_LINE, FtraceLines
from tests.unit.trace.test_blocks import DUMP, ROW, html

_TEXT = [
    "\n",
    "# tracer: nop\n",
    *[ROW] * 9,
    "app-10  ( 10) [000] ...1 1.2: tracing_mark_write: E|10",
]
"""Plain ftrace text after a blank line, its last line without a line break."""


def _state(source: FtraceLines) -> tuple[object, ...]:
    return (
        source.is_html,
        source.found_ftrace,
        source.truncated,
        source.last_line_number,
        source.last_line_unterminated,
        source.process_names,
    )


def _flattened(source: FtraceLines, size: int) -> list[tuple[int, str]]:
    numbered = []
    for first, lines in source.blocks(size):
        assert lines, "no empty list"
        numbered.extend(enumerate(lines, first))
    return numbered


@pytest.mark.parametrize("size", [1, 4, 4096])
@pytest.mark.parametrize(
    "make",
    [
        lambda: list(_TEXT),
        lambda: io.StringIO("".join(_TEXT)),
        lambda: iter(_TEXT),
        lambda: html(DUMP, "# tracer: nop\n" + ROW * 7),
        lambda: html("# tracer: nop\n" + ROW * 5, close_last=False),
        lambda: ["\n", "   \n"],
    ],
    ids=["list", "stream", "iterator", "html", "html-truncated", "blank"],
)
def test_blocks_give_the_numbered_lines_of_iteration(make, size: int) -> None:
    """Lists of consecutive lines, numbered from their first, equal iteration's lines and state."""
    by_line = FtraceLines(make())
    expected = list(by_line)
    in_lists = FtraceLines(make())
    assert _flattened(in_lists, size) == expected
    assert _state(in_lists) == _state(by_line)


def test_blocks_of_an_iterator_come_a_line_at_a_time() -> None:
    """An iterator's lines (which may come with callbacks) are not read ahead of the rows given."""
    given: list[str] = []

    def lines():
        for line in _TEXT:
            given.append(line)
            yield line

    for first, block in FtraceLines(lines()).blocks(4096):
        assert len(block) == 1
        assert given[-1] == block[0]
        assert len(given) == first


def test_blocks_refuse_a_long_line_inside_a_list_at_its_number(tmp_path: Path) -> None:
    """A line longer than ``MAX_LINE`` in the middle of a list is refused at its line number."""
    path = tmp_path / "t.txt"
    path.write_text("# tracer: nop\n" + ROW * 5 + "x" * (MAX_LINE + 5) + "\n" + ROW)
    with path.open(encoding="utf-8") as stream, pytest.raises(TraceFormatError) as caught:
        list(FtraceLines(stream).blocks(4096))
    assert caught.value.line_number == 7
