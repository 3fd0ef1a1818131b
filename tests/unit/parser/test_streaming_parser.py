"""``StreamingParser``: the public parse of a trace fed as it is made (``nnemu run --html``)."""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

from nnemu.parser import StreamingParser, parse_file
from nnemu.trace import FtraceLines

REPO = Path(__file__).resolve().parents[3]
OMR1 = REPO / "tests/data/omr1.html"


def test_a_trace_fed_in_pieces_parses_as_the_file_does() -> None:
    """omr1's rows fed 50 at a time give the runs and diagnostics of ``parse_file`` on the file."""
    parser = StreamingParser()
    with OMR1.open(encoding="utf-8") as stream:
        rows = FtraceLines(stream, on_ftrace=parser.set_process_names)
        numbered = iter(rows)  # one reading (iter(rows) again would number from 1 again)
        fed = 0
        for piece in iter(lambda: list(itertools.islice(numbered, 50)), []):
            parser.feed(piece)
            fed += 1
    assert fed > 10
    result = parser.finish(last_line_number=rows.last_line_number)
    assert parser.problem is None
    assert result == parse_file(OMR1)
    assert parser.finish(last_line_number=0) is result  # once: later calls give the same


def test_a_trace_without_nnapi_marks_names_its_problem() -> None:
    """Fed ftrace rows with no NNAPI mark, the parse has no runs and says why, as parse_file raises."""
    parser = StreamingParser()
    parser.feed(
        [
            (1, "# tracer: nop\n"),
            (2, "  app-1 (    1) [000] ...1 1.000000: tracing_mark_write: B|1|other\n"),
            (3, "  app-1 (    1) [000] ...1 1.000100: tracing_mark_write: E|1\n"),
        ]
    )
    assert parser.finish(last_line_number=3).runs == ()
    assert parser.problem is not None
    assert parser.problem.startswith("no NNAPI trace marks found")


def test_pictures_use_only_the_parsers_public_names() -> None:
    """nnemu.pictures imports nothing from the parser's private modules (``nnemu.parser._*``)."""
    private = []
    for path in sorted((REPO / "nnemu/pictures").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "nnemu.parser._"
            ):
                private.append(f"{path.name}: {node.module}")
    assert private == []
