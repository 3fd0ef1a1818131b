"""Systrace parser: rebuilds Android's NNAPI timing statistics from a trace.

``nnemu parse`` reads systrace HTML or ftrace text, follows the NNAPI tracing
contract (see ``docs/parser.md``) and prints the tables and JSON of Android's
own ``systrace_parser``. ``parse_file`` / ``parse_lines`` parse a trace there is;
``StreamingParser`` one fed as it is made (``nnemu run --html``'s per-layer tables).
"""

from nnemu.parser._api import (
    StreamingParser,
    parse_file,
    parse_lines,
    parse_trace,
    run_parse_command,
)
from nnemu.parser._format import format_json, format_text, template_inputs
from nnemu.parser._model import (
    LAYER_TOTAL,
    NEGATIVE_BY_CONTRACT,
    DetailItem,
    Diagnostic,
    ParseResult,
    RunStats,
    ThreadDetail,
)

__all__ = [
    "LAYER_TOTAL",
    "NEGATIVE_BY_CONTRACT",
    "DetailItem",
    "Diagnostic",
    "ParseResult",
    "RunStats",
    "StreamingParser",
    "ThreadDetail",
    "format_json",
    "format_text",
    "parse_file",
    "parse_lines",
    "parse_trace",
    "run_parse_command",
    "template_inputs",
]
