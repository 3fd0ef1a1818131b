"""Entry points: parse a trace file or lines, and the ``nnemu parse`` command."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TextIO

import attrs

from nnemu.errors import TraceFormatError
from nnemu.parser._engine import Engine
from nnemu.parser._format import format_json, format_text
from nnemu.parser._model import Diagnostic, ParseResult
from nnemu.parser._reader import FtraceLines


@attrs.frozen(kw_only=True)
class _Outcome:
    result: ParseResult
    usable: bool
    problem: Diagnostic | None


def _run(lines: Iterable[str], *, keep_detail: bool) -> _Outcome:
    source = FtraceLines(lines)
    engine = Engine(keep_detail=keep_detail)
    engine.feed(source)
    if source.truncated:
        engine.warn(
            "the trace data block has no closing </script>: the file looks truncated",
            source.last_line_number,
            "",
        )
    engine.finish()
    problem: Diagnostic | None = None
    if not source.found_ftrace:
        problem = Diagnostic(
            line_number=source.last_line_number,
            severity="error",
            message="no ftrace data found (expected a systrace HTML trace-data block"
            " starting with '# tracer:' or plain ftrace text)",
            line="",
        )
    elif not engine.saw_nnapi:
        problem = Diagnostic(
            line_number=source.last_line_number,
            severity="error",
            message="no NNAPI trace marks found ([NN_...] tags or NNAPI HIDL server calls)",
            line="",
        )
    diagnostics = sorted(engine.diagnostics, key=lambda d: d.line_number)
    if problem is not None:
        diagnostics.append(problem)
    runs = tuple(engine.runs) if problem is None else ()
    return _Outcome(
        result=ParseResult(runs=runs, diagnostics=diagnostics),
        usable=problem is None,
        problem=problem,
    )


def _raise_if_unusable(outcome: _Outcome, source: str) -> ParseResult:
    if outcome.problem is not None:
        raise TraceFormatError(
            source, outcome.problem.line_number, outcome.problem.line, outcome.problem.message
        )
    return outcome.result


def parse_lines(
    lines: Iterable[str], source: str = "<string>", *, keep_detail: bool = False
) -> ParseResult:
    """Parse systrace HTML or ftrace text given as lines.

    Args:
        lines: The input, one line per item (line breaks optional).
        source: Name used in error messages.
        keep_detail: Keep per-thread contributions for ``--print-detail``.

    Returns:
        Statistics per run and the diagnostics found.

    Raises:
        TraceFormatError: Nothing usable: no ftrace data or no NNAPI marks.
    """
    return _raise_if_unusable(_run(lines, keep_detail=keep_detail), source)


def parse_file(path: str | os.PathLike[str], *, keep_detail: bool = False) -> ParseResult:
    """Parse a systrace ``.html`` file or an ftrace text file, streaming it.

    Raises:
        TraceFormatError: Nothing usable: no ftrace data or no NNAPI marks.
        OSError: The file cannot be read.
    """
    with open(path, encoding="utf-8", errors="replace") as stream:
        return _raise_if_unusable(_run(stream, keep_detail=keep_detail), os.fspath(path))


def run_parse_command(
    path: str,
    *,
    as_json: bool,
    per_execution: bool,
    total_times: bool,
    print_detail: bool,
    stdout: TextIO,
    stderr: TextIO,
) -> int:
    """Run ``nnemu parse``: print statistics and diagnostics, return the exit code.

    Returns 0 when statistics were printed, 2 when the file cannot be read or
    holds nothing usable.  Diagnostics go to ``stderr`` as
    ``FILE:LINE: warning|error: message``.
    """
    try:
        with open(path, encoding="utf-8", errors="replace") as stream:
            outcome = _run(stream, keep_detail=print_detail and not as_json)
    except OSError as err:
        stderr.write(f"{path}: error: cannot read the trace: {err.strerror or err}\n")
        return 2
    for diagnostic in outcome.result.diagnostics:
        stderr.write(
            f"{path}:{diagnostic.line_number}: {diagnostic.severity}: {diagnostic.message}\n"
        )
    if not outcome.usable:
        return 2
    if as_json:
        stdout.write(
            format_json(outcome.result, per_execution=per_execution, total_times=total_times)
        )
    else:
        stdout.write(
            format_text(
                outcome.result,
                per_execution=per_execution,
                total_times=total_times,
                print_detail=print_detail,
            )
        )
    return 0
