"""Entry points: parse a trace file or lines, and the ``nnemu parse`` command."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import TextIO, cast

import attrs

from nnemu._progress import Progress
from nnemu.errors import TraceFormatError
from nnemu.parser._engine import BLOCK_ROWS, Engine
from nnemu.parser._format import Printout
from nnemu.parser._model import Diagnostic, ParseResult, RunStats
from nnemu.trace import (
    END,
    MAX_SORTED_BYTES,
    PROBLEM,
    PROCESS,
    RESTART,
    THREAD,
    TRUNCATED_HTML,
    Event,
    FtraceLines,
    TraceEvents,
    TraceFormat,
    numbered_blocks,
    open_trace,
    row_batches,
    task_name,
    time_ordered,
    time_ordered_events,
)


@attrs.frozen(kw_only=True)
class _Outcome:
    result: ParseResult
    usable: bool
    problem: Diagnostic | None
    byte_offsets: bool = False
    """Diagnostics are placed by byte offset (a Perfetto protobuf trace), not line."""
    out_of_order: int = 0
    """End marks earlier than their sections' begins (rows out of time order)."""
    first_out_of_order: tuple[int, str] = (0, "")
    """(line number, line) of the first."""


@attrs.frozen(kw_only=True)
class _JsonTrace:
    """The events of a Chrome JSON trace that parse reads, read whole before the parse
    (process names are known before a run ends, wherever their metadata is in the file)."""

    events: list[Event]
    """Its ``BEGIN``, ``END``, ``THREAD`` and ``PROBLEM`` events, in file order."""
    process_names: dict[str, str]
    """Process names by pid (the last ``PROCESS`` event of each)."""
    last_line: int
    """The line of its last event (``TraceEvents.last_line``)."""


def _json_trace(trace: TraceEvents) -> _JsonTrace:
    """What parse reads of a JSON trace (``trace``): its events from the last ``RESTART``
    (a file not of one event per line is read again as one document).

    Raises:
        TraceFormatError: The document is no JSON, or holds no list of events.
    """
    events: list[Event] = []
    names: dict[str, str] = {}
    keep = events.append
    for batch in trace.batches():
        for event in batch:
            kind = event[0]
            if kind <= END or kind in (THREAD, PROBLEM):
                keep(event)
            elif kind == PROCESS:
                names[str(event[3])] = event[5]
            elif kind == RESTART:
                events.clear()
                names.clear()
    return _JsonTrace(events=events, process_names=names, last_line=trace.last_line)


def _in_time_order(events: list[Event]) -> list[Event]:
    """``events`` (a JSON trace's, in file order) in time order (``time_ordered_events``),
    each ``BEGIN`` and ``END`` named with its thread's name where it is in the file
    (``task_name``), as ``Engine.feed_events`` names them in file order."""
    tasks: dict[int, str] = {}
    named: list[Event] = []
    for event in events:
        kind, ts, place, pid, tid, name, extra = event
        if kind <= END and extra is None:
            event = (kind, ts, place, pid, tid, name, tasks.get(tid, "<...>"))
        elif kind == THREAD and extra is True:
            tasks[tid] = task_name(name)
        named.append(event)
    return time_ordered_events(named)


def _run(
    lines: Iterable[str] | None,
    *,
    keep_detail: bool,
    include_incomplete: bool = False,
    chrome: _JsonTrace | None = None,
    on_run: Callable[[int, RunStats], None] | None = None,
    events: TraceEvents | None = None,
    out_of_order: tuple[int, int, str] | None = None,
) -> _Outcome:
    """Parse one of ``lines`` (text), ``chrome`` (a Chrome JSON trace's events) or
    ``events`` (a Perfetto trace's canonical events, placed at byte offsets); with
    ``out_of_order`` (count, line number, line: what reading them in file order found),
    their rows in time order (``time_ordered``, ``_in_time_order``)."""
    engine = Engine(keep_detail=keep_detail, on_run=on_run)
    if out_of_order is not None:
        engine.read_in_time_order(*out_of_order)
    found = True
    if events is not None:
        engine.feed_events(events.batches())
        last_line_number = -1  # no place in the file: the whole trace
    elif chrome is not None:
        engine.set_process_names(chrome.process_names)
        engine.feed_events(
            [chrome.events if out_of_order is None else _in_time_order(chrome.events)]
        )
        last_line_number = chrome.last_line
    else:
        # systrace writes its process dump before the ftrace block.
        source = FtraceLines(lines or (), on_ftrace=engine.set_process_names)
        blocks = (
            source.blocks(BLOCK_ROWS)
            if out_of_order is None
            else numbered_blocks(time_ordered(source), BLOCK_ROWS)
        )
        engine.feed_events(row_batches(blocks, texts=True))
        if source.truncated:
            engine.warn(TRUNCATED_HTML, source.last_line_number, "")
        found = source.found_ftrace
        last_line_number = source.last_line_number
    outcome = finish(
        engine,
        found=found,
        last_line_number=last_line_number,
        include_incomplete=include_incomplete,
        byte_offsets=events is not None,
    )
    if engine.out_of_order and out_of_order is None:
        outcome = attrs.evolve(
            outcome, out_of_order=engine.out_of_order, first_out_of_order=engine.first_out_of_order
        )
    return outcome


def finish(
    engine: Engine,
    *,
    found: bool = True,
    last_line_number: int,
    include_incomplete: bool = False,
    byte_offsets: bool = False,
) -> _Outcome:
    """End the parse ``engine`` was fed (``found``: it saw an ftrace block) and say whether
    the trace is usable, as every reader of a trace does."""
    engine.finish()
    problem: Diagnostic | None = None
    if not found:
        problem = Diagnostic(
            line_number=last_line_number,
            severity="error",
            message="no ftrace data found (expected a systrace HTML trace-data block"
            " starting with '# tracer:', plain ftrace text or a Chrome JSON trace)",
            line="",
        )
    elif not engine.saw_nnapi:
        problem = Diagnostic(
            line_number=last_line_number,
            severity="error",
            message="no NNAPI trace marks found ([NN_...] tags or NNAPI HIDL server calls)",
            line="",
        )
    diagnostics = sorted(engine.diagnostics, key=lambda d: d.line_number)
    if problem is not None:
        diagnostics.append(problem)
    chosen = engine.all_runs if include_incomplete else engine.runs
    runs = tuple(chosen) if problem is None else ()
    return _Outcome(
        result=ParseResult(runs=runs, diagnostics=diagnostics),
        usable=problem is None,
        problem=problem,
        byte_offsets=byte_offsets,
    )


def _raise_if_unusable(outcome: _Outcome, source: str) -> ParseResult:
    if outcome.problem is not None:
        raise TraceFormatError(
            source,
            max(outcome.problem.line_number, 0),
            outcome.problem.line,
            outcome.problem.message,
        )
    return outcome.result


def _where(path: str, outcome: _Outcome, diagnostic: Diagnostic) -> str:
    """``path:LINE``, ``path: byte OFFSET`` (a Perfetto trace), or ``path`` (the whole file)."""
    if outcome.byte_offsets:
        return f"{path}: byte {diagnostic.line_number}" if diagnostic.line_number >= 0 else path
    return f"{path}:{diagnostic.line_number}" if diagnostic.line_number else path


class StreamingParser:
    """A parse fed piece by piece while the trace is being made, with no file to read.

    ``parse_lines`` for a systrace that does not exist yet (``nnemu run --html`` parses its
    run's trace as the run writes it: ``nnemu.pictures.LayerSink``): read the HTML head and
    ``PROCESS DUMP`` with ``FtraceLines(lines, on_ftrace=parser.set_process_names)`` and give
    them to ``feed`` as ``parse_file`` would, then ``feed`` the later lines numbered on from
    there, then ``finish``. The same engine as ``parse_file`` (compiled when built), so the
    result, diagnostics and line numbers are those of ``nnemu parse`` on the same text.
    """

    def __init__(self, *, keep_detail: bool = False, include_incomplete: bool = False) -> None:
        self._engine = Engine(keep_detail=keep_detail)
        self._include_incomplete = include_incomplete
        self._outcome: _Outcome | None = None

    def set_process_names(self, names: dict[str, str]) -> None:
        """Process names by tgid (a systrace's process dump: ``FtraceLines``' ``on_ftrace``)."""
        self._engine.set_process_names(names)

    def feed(self, numbered_lines: Iterable[tuple[int, str]]) -> None:
        """Parse the next lines, each with its line number in the (imagined) file, in order."""
        self._engine.feed(numbered_lines)

    def finish(self, *, last_line_number: int) -> ParseResult:
        """End the parse (once; later calls return the same) and return what ``parse_lines``
        returns; ``problem`` then says why the trace is not usable (no runs in the result)."""
        if self._outcome is None:
            self._outcome = finish(
                self._engine,
                last_line_number=last_line_number,
                include_incomplete=self._include_incomplete,
            )
        return self._outcome.result

    @property
    def problem(self) -> str | None:
        """After ``finish``: what ``parse_lines`` would raise (``TraceFormatError``'s message:
        no NNAPI marks), or None for a usable trace."""
        if self._outcome is None or self._outcome.problem is None:
            return None
        return self._outcome.problem.message


def parse_lines(
    lines: Iterable[str],
    source: str = "<string>",
    *,
    keep_detail: bool = False,
    include_incomplete: bool = False,
) -> ParseResult:
    """Parse systrace HTML or ftrace text given as lines.

    Args:
        lines: The input, one line per item (line breaks optional).
        source: Name used in error messages.
        keep_detail: Keep per-thread contributions for ``--print-detail``.
        include_incomplete: Also return a run the trace cuts off (``incomplete``).

    Returns:
        Statistics per (client process, run) and the diagnostics found.

    Raises:
        TraceFormatError: Nothing usable: no ftrace data or no NNAPI marks.
    """
    return _raise_if_unusable(
        _run(lines, keep_detail=keep_detail, include_incomplete=include_incomplete), source
    )


def _read(
    path: str,
    *,
    keep_detail: bool,
    include_incomplete: bool,
    on_run: Callable[[int, RunStats], None] | None = None,
    on_restart: Callable[[], None] | None = None,
    progress: TextIO | None = None,
) -> _Outcome:
    """Parse a file of any format nnemu reads (the format is told by its first bytes);
    a progress bar goes to ``progress`` if it is a terminal and the text trace is big.

    With ``on_run``, each run goes there as it finishes (the outcome then has no runs).
    A text or JSON trace whose rows are out of time order (an end before its section's
    begin) is parsed again with its rows in time order, as Perfetto matches them, when
    it is at most ``MAX_SORTED_BYTES``: ``on_restart`` is called first (the runs given
    to ``on_run`` so far are void).

    Raises:
        TraceFormatError: A format it cannot read (compressed, binary, not a trace).
        OSError: The file cannot be read.
    """
    trace = TraceEvents(path, strict_lines=True, slices_only=True)
    if trace.kind is TraceFormat.JSON:
        chrome = _json_trace(trace)
        outcome = _run(
            None,
            keep_detail=keep_detail,
            include_incomplete=include_incomplete,
            chrome=chrome,
            on_run=on_run,
        )
        if not outcome.out_of_order:
            return outcome
        if on_restart is not None:
            on_restart()
        return _run(
            None,
            keep_detail=keep_detail,
            include_incomplete=include_incomplete,
            chrome=chrome,
            on_run=on_run,
            out_of_order=(outcome.out_of_order, *outcome.first_out_of_order),
        )
    if trace.kind is TraceFormat.PERFETTO:  # (told once, by the reader)
        return _run(
            None,
            keep_detail=keep_detail,
            include_incomplete=include_incomplete,
            on_run=on_run,
            events=trace,
        )
    with open_trace(path) as source:
        text = cast("TextIO", source)  # neither Perfetto nor JSON: the text stream
        label = f"parsing {os.path.basename(path)}"
        with Progress(path, text, progress, label=label) as bar:
            outcome = _run(
                bar.lines(text),
                keep_detail=keep_detail,
                include_incomplete=include_incomplete,
                on_run=on_run,
            )
        if not outcome.out_of_order or os.path.getsize(path) > MAX_SORTED_BYTES:
            return outcome
        if on_restart is not None:
            on_restart()
        text.seek(0)
        return _run(
            text,
            keep_detail=keep_detail,
            include_incomplete=include_incomplete,
            on_run=on_run,
            out_of_order=(outcome.out_of_order, *outcome.first_out_of_order),
        )


def parse_file(
    path: str | os.PathLike[str], *, keep_detail: bool = False, include_incomplete: bool = False
) -> ParseResult:
    """Parse a systrace ``.html``, ftrace text, Chrome JSON or Perfetto protobuf trace file.

    Raises:
        TraceFormatError: Nothing usable: not a trace format nnemu reads, no
            ftrace data or no NNAPI marks.
        OSError: The file cannot be read.
    """
    name = os.fspath(path)
    return _raise_if_unusable(
        _read(name, keep_detail=keep_detail, include_incomplete=include_incomplete), name
    )


parse_trace = parse_file
"""``nnemu.parse_trace(path)``: ``parse_file`` under the name the top-level package gives it."""


def run_parse_command(
    path: str,
    *,
    as_json: bool,
    per_execution: bool,
    total_times: bool,
    print_detail: bool,
    stdout: TextIO,
    stderr: TextIO,
    include_incomplete: bool = False,
) -> int:
    """Run ``nnemu parse``: print statistics and diagnostics, return the exit code.

    Returns 0 when statistics were printed, 2 when the file cannot be read or
    holds nothing usable.  Diagnostics go to ``stderr`` as
    ``FILE:LINE: warning|error: message`` (``FILE: byte OFFSET: ...`` for a
    Perfetto protobuf trace).
    """
    with Printout(
        as_json=as_json,
        per_execution=per_execution,
        total_times=total_times,
        print_detail=print_detail and not as_json,
        include_incomplete=include_incomplete,
    ) as printout:
        try:
            outcome = _read(
                path,
                keep_detail=print_detail and not as_json,
                include_incomplete=include_incomplete,
                on_run=printout.add,
                on_restart=printout.clear,
                progress=stderr,
            )
        except TraceFormatError as err:
            stderr.write(f"{err.where}: error: {err.message}\n")
            return 2
        except OSError as err:
            stderr.write(f"{path}: error: cannot read the trace: {err.strerror or err}\n")
            return 2
        for diagnostic in outcome.result.diagnostics:
            where = _where(path, outcome, diagnostic)
            stderr.write(f"{where}: {diagnostic.severity}: {diagnostic.message}\n")
        if not outcome.usable:
            return 2
        printout.write(stdout)
    return 0
