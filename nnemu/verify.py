"""``nnemu verify``: run a scenario, parse its trace back, compare with the ground truth.

The closed loop that checks the tracer and the parser against each other: the
emulator runs with the systrace writer and a ``GroundTruth`` observer attached
to the same tracer; the trace is parsed with ``nnemu.parser.parse_file``; every
layer x phase cell of every run must agree with the ground truth within 1 µs.
Cells the trace cannot reconstruct (time of a section open across a run
boundary, which the parser drops) are listed with the reason, never skipped.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from typing import Final, TextIO

import attrs

from nnemu._text import counted
from nnemu.errors import ExitCode, Interrupted, NnemuError
from nnemu.parser import NEGATIVE_BY_CONTRACT, Diagnostic, ParseResult, RunStats, parse_file
from nnemu.scenario import Scenario
from nnemu.tracer import (
    CELL_LAYERS,
    CELL_PHASES,
    GroundTruth,
    Layer,
    Phase,
    RunTruth,
    TraceSink,
    open_trace_writer,
)

TOLERANCE_NS: Final = 1_000
"""Largest difference accepted between the parsed and the true value of a cell."""

_ROWS: Final = {
    Layer.APPLICATION: "Application",
    Layer.RUNTIME: "Runtime",
    Layer.IPC: "IPC",
    Layer.DRIVER: "Driver",
    Layer.CPU: "CPU",
}
"""The rows of ``nnemu parse``'s table."""

_COLUMNS: Final = {
    Phase.INITIALIZATION: "Initialization",
    Phase.PREPARATION: "Preparation",
    Phase.COMPILATION: "Compilation",
    Phase.INPUTS_AND_OUTPUTS: "I/O",
    Phase.RESULTS: "Results",
    Phase.EXECUTION: "Ex. total",
    Phase.TERMINATION: "Termination",
    Phase.OVERALL: "Total",
}
"""The columns of ``nnemu parse``'s table that are a phase's total (Compute is derived)."""


# Parser diagnostics that a run boundary cutting sections explains (the cells
# involved are listed as not reconstructable); any other diagnostic means the
# stack's marks break the contract.
_BOUNDARY_DIAGNOSTICS: Final = (
    "section still open when a new run starts",
    "asynchronous execution never notified its callback before a new run starts",
)


# An asynchronous execution whose driver died is never notified: explained when the
# ground truth saw the driver die with it in flight.
_DEAD_DRIVER_DIAGNOSTIC: Final = "asynchronous execution never notified its callback"


@attrs.frozen(kw_only=True)
class CellResult:
    """One layer x phase cell of one run."""

    run: int
    """0-based position of the run in the ground truth (``run_labels`` names it as
    ``nnemu parse`` does, from 1)."""
    layer: Layer
    """Layer of the cell."""
    phase: Phase
    """Phase of the cell."""
    parsed_ns: int
    """What the parser reconstructed from the trace (0 for n/a)."""
    truth_ns: int
    """What the ground truth recorded."""
    reasons: tuple[str, ...]
    """Why the contract cannot reconstruct the cell (empty when it can)."""
    self_time: bool = False
    """The Application's Total self time (``PO`` span minus the wall-clock time of
    runtime work), not a layer's total."""

    @property
    def label(self) -> str:
        """``LAYER_PHASE`` as the table names it (``LA_PO self`` for the self time)."""
        return f"{self.layer.value}_{self.phase.value}" + (" self" if self.self_time else "")

    @property
    def where(self) -> str:
        """The cell's row and column in ``nnemu parse --total-times``'s table (the self-time
        table for ``LA_PO self``; sub-phases the table has no column for: ``--json``)."""
        column = _COLUMNS.get(self.phase)
        row = _ROWS.get(self.layer, self.layer.value)
        if self.self_time:
            return f"{row}, {column} in the self-time table"
        if column is None:
            return f"{row}, {self.phase.value} in --json --total-times"
        return f"{row}, {column}"

    @property
    def agrees(self) -> bool:
        """Within ``TOLERANCE_NS``."""
        return abs(self.parsed_ns - self.truth_ns) <= TOLERANCE_NS


@attrs.frozen(kw_only=True)
class Verification:
    """Outcome of comparing a parsed trace with the ground truth."""

    cells: tuple[CellResult, ...]
    """Every compared cell."""
    run_count_problem: str | None
    """Set when the runs do not pair up: different numbers of runs, another process,
    another execution count, or no data for an app that executed (one problem a line)."""
    contract_diagnostics: tuple[Diagnostic, ...]
    """Parser diagnostics not explained by run boundaries (broken contract rules)."""

    @property
    def passed(self) -> bool:
        """Every reconstructable cell agrees, the runs match and no contract rule is broken."""
        return (
            self.run_count_problem is None
            and not self.contract_diagnostics
            and all(c.agrees or c.reasons for c in self.cells)
        )


def _parsed(run: RunStats, layer: Layer, phase: Phase) -> int:
    value = run.totals_ns(layer, phase)
    return 0 if value is None else value


def _run_cells(index: int, run: RunStats, true_run: RunTruth) -> list[CellResult]:
    """Every cell of one run, parsed against true, and the Application's Total self time."""
    run_cells = []
    for layer in CELL_LAYERS:
        for phase in CELL_PHASES:
            run_cells.append(
                CellResult(
                    run=index,
                    layer=layer,
                    phase=phase,
                    parsed_ns=_parsed(run, layer, phase),
                    truth_ns=true_run.cell_ns(layer, phase),
                    reasons=true_run.unreconstructable.get((layer, phase), ()),
                )
            )
    # The Application's Total self time: what the parser derives (counting
    # runtime work on several threads at once once) against the truth's sweep.
    parsed_self = run.application_total_self_ns()
    true_self = true_run.application_total_self_ns()
    self_reasons = tuple(
        dict.fromkeys(
            reason
            for cell in (
                (Layer.APPLICATION, Phase.OVERALL),
                (Layer.RUNTIME, Phase.OVERALL),
            )
            for reason in true_run.unreconstructable.get(cell, ())
        )
    )
    run_cells.append(
        CellResult(
            run=index,
            layer=Layer.APPLICATION,
            phase=Phase.OVERALL,
            parsed_ns=0 if parsed_self is None else parsed_self,
            truth_ns=0 if true_self is None else true_self,
            reasons=self_reasons,
            self_time=True,
        )
    )
    return run_cells


def compare(
    parsed: ParseResult, truth: tuple[RunTruth, ...], *, dead_driver_executions: int = 0
) -> Verification:
    """Compare every cell of every (client process, run) of ``parsed`` with ``truth``.

    Runs are paired in the order they start; each pair must be the same
    client process and count the same executions, and a run of an app that
    executed must have data (a run the parser left empty is a failure, not a
    table of agreeing zeros).  ``dead_driver_executions`` asynchronous
    executions were never notified because their driver died (the ground truth
    flags their cells); as many "never notified" parser diagnostics are
    explained by that and are not contract breaks.
    """
    problems = []
    labels = run_labels(truth)
    if len(parsed.runs) != len(truth):
        problems.append(
            f"the parser found {counted(len(parsed.runs), 'run')},"
            f" the ground truth has {len(truth)}"
        )
    cells = []
    for index, (run, true_run) in enumerate(zip(parsed.runs, truth, strict=False)):
        label = labels[index]
        if true_run.pid is not None and run.pid != str(true_run.pid):
            problems.append(
                f"{label}: the parser's run is of process {run.pid or '(none)'},"
                f" the ground truth's of pid {true_run.pid}"
            )
        parsed_executions = sum(run.execution_counts.values())
        if parsed_executions != true_run.executions:
            problems.append(
                f"{label}: the parser counts {parsed_executions} executions,"
                f" the ground truth {true_run.executions}"
            )
        run_cells = _run_cells(index, run, true_run)
        if true_run.executions and not any(
            c.parsed_ns for c in run_cells if not c.reasons and not c.self_time
        ):
            problems.append(
                f"{label}: no data in the trace for an app that executed"
                f" {true_run.executions} times"
            )
        cells.extend(run_cells)
    return Verification(
        cells=tuple(cells),
        run_count_problem="\n".join(problems) or None,
        contract_diagnostics=_contract_diagnostics(parsed, dead_driver_executions),
    )


def _contract_diagnostics(
    parsed: ParseResult, dead_driver_executions: int
) -> tuple[Diagnostic, ...]:
    """The parser's diagnostics that break the contract: not those of the run boundary, nor
    one "never notified" per execution a dead driver explains, nor a negative cell below
    the Application (the contract's own rules give one: the cells are compared)."""
    diagnostics = []
    unexplained_dead = dead_driver_executions
    for d in parsed.diagnostics:
        if any(d.message.startswith(text) for text in _BOUNDARY_DIAGNOSTICS):
            continue
        if d.message.endswith(NEGATIVE_BY_CONTRACT):
            continue
        if unexplained_dead and d.message.startswith(_DEAD_DRIVER_DIAGNOSTIC):
            unexplained_dead -= 1
            continue
        diagnostics.append(d)
    return tuple(diagnostics)


def _us(value_ns: int) -> str:
    return f"{value_ns / 1000:.3f}"


def run_labels(truth: tuple[RunTruth, ...]) -> list[str]:
    """Each run's name as ``nnemu parse`` titles it: ``camera (pid 707), run 1 of 2``.

    Runs are numbered from 1 within their process, as the parser numbers them; runs
    before any ``[NN_LA_PO]`` mark are "sections outside any run".
    """
    counts: dict[int | None, int] = {}
    for true_run in truth:
        counts[true_run.pid] = counts.get(true_run.pid, 0) + 1
    seen: dict[int | None, int] = {}
    labels = []
    for true_run in truth:
        seen[true_run.pid] = seen.get(true_run.pid, 0) + 1
        if true_run.pid is None:
            who = "sections outside any run"
        else:
            app = f"{true_run.starting_app} " if true_run.starting_app else ""
            who = f"{app}(pid {true_run.pid})"
        labels.append(f"{who}, run {seen[true_run.pid]} of {counts[true_run.pid]}")
    return labels


def format_verification(result: Verification, truth: tuple[RunTruth, ...], out: TextIO) -> None:
    """Write the per-run summary and the table of differences."""
    labels = run_labels(truth)
    for index, true_run in enumerate(truth):
        cells = [c for c in result.cells if c.run == index]
        if not cells:
            continue
        agree = [c for c in cells if c.agrees and not c.reasons]
        nonzero = sum(1 for c in agree if c.truth_ns)
        differ = [c for c in cells if not c.agrees and not c.reasons]
        unknown = [c for c in cells if c.reasons]
        out.write(
            f"{labels[index]}: {counted(true_run.executions, 'execution')},"
            f" {len(agree)} cells agree ({nonzero} non-zero), {len(differ)} differ,"
            f" {len(unknown)} not reconstructable\n"
        )
    shown = [c for c in result.cells if not c.agrees or c.reasons]
    if shown:
        width = max(len(labels[c.run]) for c in shown)
        names = {id(c): f"{c.label} ({c.where})" for c in shown}
        cell_width = max(len(name) for name in names.values()) + 2
        out.write(
            f"\n{'run':<{width}}  {'cell':<{cell_width}}{'trace us':>15}{'truth us':>15}"
            f"{'diff us':>15}  status\n"
        )
        for c in shown:
            status = "not reconstructable" if c.reasons else "DIFFERS"
            out.write(
                f"{labels[c.run]:<{width}}  {names[id(c)]:<{cell_width}}{_us(c.parsed_ns):>15}"
                f"{_us(c.truth_ns):>15}{_us(c.parsed_ns - c.truth_ns):>15}  {status}\n"
            )
            for reason in c.reasons:
                out.write(f"{'':>{width + 2 + cell_width}}because {reason}\n")
    if result.run_count_problem:
        out.write(f"\n{result.run_count_problem}\n")
    if result.contract_diagnostics:
        out.write("\nthe trace breaks the contract:\n")
        for d in result.contract_diagnostics:
            out.write(f"  line {d.line_number}: {d.message}: {d.line.strip()}\n")
    out.write("\nverify: " + ("ok" if result.passed else "FAILED") + "\n")


def verify_scenario(
    path: str | Scenario,
    *,
    seed: int | None = None,
    trace: str | None = None,
    handle_signals: bool = False,
) -> tuple[Verification, tuple[RunTruth, ...]]:
    """Run the scenario (at ``path``, or a loaded one) with tracing and the ground truth,
    parse, compare.

    Raises:
        ScenarioError: The scenario is malformed.
        TraceFormatError: The trace has nothing usable.
        OSError: The trace cannot be written or read.
        Interrupted: A signal stopped the run (``handle_signals`` only).
    """
    from nnemu.scenario import load_scenario

    scenario = load_scenario(path) if isinstance(path, str) else path
    temporary = None
    if trace is None:
        handle, temporary = tempfile.mkstemp(prefix="nnemu-verify-", suffix=".html")
        os.close(handle)
        trace = temporary
    try:
        truth = GroundTruth()
        run_with_truth(scenario, truth, seed=seed, trace=trace, handle_signals=handle_signals)
        parsed = parse_file(trace)
    finally:
        if temporary is not None:
            os.unlink(temporary)
    return (
        compare(parsed, truth.runs, dead_driver_executions=truth.executions_lost_to_dead_drivers),
        truth.runs,
    )


def run_with_truth(
    scenario: Scenario,
    truth: GroundTruth,
    *,
    seed: int | None = None,
    trace: str | None = None,
    handle_signals: bool = False,
) -> None:
    """Run ``scenario`` in virtual time with ``truth`` observing the tracer (and a trace writer).

    ``handle_signals`` (the CLI) stops the run cleanly on SIGINT/SIGTERM, as ``nnemu.run``
    does: the trace is closed well formed and ``Interrupted`` is raised.
    """
    from nnemu._emulator import run

    sinks: list[TraceSink] = [open_trace_writer(trace)] if trace is not None else []
    run(scenario, seed=seed, sinks=sinks, observers=[truth], handle_signals=handle_signals)


def run_verify_command(
    scenario: str,
    *,
    seed: int | None,
    trace: str | None,
    stdout: TextIO,
    stderr: TextIO,
    sets: Sequence[str] = (),
) -> int:
    """Exit code of ``nnemu verify``: 0 every cell agrees, 1 disagreement, 2 bad input.

    ``sets``: ``--set KEY=VALUE`` changes to the scenario, as ``nnemu run`` takes them.
    SIGINT/SIGTERM stop the run cleanly and raise ``Interrupted`` (the CLI exits 130/143).
    """
    from nnemu._run_command import load_with_overrides
    from nnemu.errors import ScenarioError

    try:
        changed = load_with_overrides(scenario, sets, stderr)
        if changed is None:
            return ExitCode.BAD_INPUT
        result, truth = verify_scenario(changed, seed=seed, trace=trace, handle_signals=True)
    except ScenarioError as exc:
        for problem in exc.problems:
            stderr.write(f"{problem}\n")
        return ExitCode.BAD_INPUT
    except FileNotFoundError as exc:
        stderr.write(f"{exc.filename}: no such file\n")
        return ExitCode.BAD_INPUT
    except OSError as exc:
        stderr.write(f"{exc.filename or trace}: {exc.strerror}\n")
        return ExitCode.BAD_INPUT
    except Interrupted:
        raise  # the CLI's exit 130/143; the trace (if kept) is whole
    except NnemuError as exc:
        stderr.write(f"{exc}\n")
        return ExitCode.BAD_INPUT
    format_verification(result, truth, stdout)
    return ExitCode.OK if result.passed else ExitCode.FAILED
