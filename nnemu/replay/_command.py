"""``nnemu replay TRACE``: extract, print the plan, build the scenario, run it."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, TextIO

from nnemu._emulator import run
from nnemu._files import write_text
from nnemu._malloc import map_large_blocks
from nnemu._summary import summary
from nnemu.errors import ExitCode, Interrupted, OutputError
from nnemu.executions import execution_rows, write_executions
from nnemu.overrides import OverrideError, apply_overrides, unchosen_sets
from nnemu.replay._build import build_replay, describe_build, describe_plan, loop_problem
from nnemu.replay._extract import extract_plan
from nnemu.replay._plan import TracePlan
from nnemu.replay._stepper import Stepper
from nnemu.replay._whatif import fidelity_lines, ineffective_sets
from nnemu.report import Report
from nnemu.scenario import Scenario, dump_scenario
from nnemu.tracer import TraceSink, open_trace_writer


def _write_file(path: str, text: str, what: str, stderr: TextIO) -> bool:
    """Write an output file; False (the reason printed) when it cannot be written."""
    try:
        write_text(path, text, what)
    except OutputError as exc:
        stderr.write(f"{exc}\n")
        return False
    return True


def run_replay_command(
    trace_path: str,
    *,
    fast: bool = False,
    loop: int | None = None,
    stop_at_s: float | None = None,
    manual: bool = False,
    sets: Sequence[str] = (),
    seed: int | None = None,
    trace: str | None = None,
    report: str | None = None,
    save_scenario: str | None = None,
    realtime: bool = False,
    executions: str | None = None,
    stdin: TextIO,
    stdout: TextIO,
    stderr: TextIO,
) -> int:
    """Replay ``trace_path``; returns the exit code.

    Args:
        loop: None = play once; N >= 1 = the arrivals repeated N times in one run;
            0 = loop forever (one run per loop, until Ctrl-C twice or ``q``).
        stop_at_s: run to this virtual time, then switch to manual control.
        manual: start in manual control.
        sets: ``KEY=VALUE`` changes to the scenario (``--set``).
        executions: write one row per finished execution here (``.csv``/``.parquet``;
            the last run's, as ``--report``).
    """
    if loop is not None and loop < 0:
        stderr.write(f"-l: expected a loop count >= 1 (or none: forever), got {loop}\n")
        return ExitCode.BAD_INPUT
    if stop_at_s is not None and not stop_at_s >= 0:
        stderr.write(f"-s: expected a virtual time in seconds >= 0, got {stop_at_s}\n")
        return ExitCode.BAD_INPUT
    forever = loop == 0
    map_large_blocks()  # the columns freed as the plan is built go back to the system
    try:
        prepared = _prepare(
            trace_path,
            fast=fast,
            loop=loop,
            sets=sets,
            save_scenario=save_scenario,
            stdout=stdout,
            stderr=stderr,
        )
        if isinstance(prepared, int):
            return prepared
        plan, scenario, warned = prepared
        stepper = Stepper(stdin, stdout, manual=manual, stop_at_s=stop_at_s)
        round_number = 0
        while True:
            round_number += 1
            if forever:
                stdout.write(f"loop {round_number}\n")
            result = _play(
                scenario,
                plan,
                stepper,
                seed=seed,
                trace=trace,
                report=report,
                realtime=realtime,
                executions=executions,
                sets=sets,
                warned=warned,
                stdout=stdout,
                stderr=stderr,
            )
            if isinstance(result, int):
                return result
            if stepper.aborted or not forever:
                break
            stdout.write("\n")
    except KeyboardInterrupt:
        stderr.write("\ninterrupted by SIGINT\n")
        return ExitCode.INTERRUPTED
    return _ending(result, stepper, trace=trace, stdout=stdout, stderr=stderr)


def _ending(
    result: Report, stepper: Stepper, *, trace: str | None, stdout: TextIO, stderr: TextIO
) -> int:
    """The exit code of a replay whose runs ended (the last run's ``result``), said in words."""
    if stepper.aborted:
        so_far = f"; the trace so far is in {trace}" if trace else ""
        stderr.write(f"{stepper.ending()}{so_far}\n")
        return ExitCode.INTERRUPTED
    if trace:
        stdout.write(f"\ntrace written to {trace}\n")
    if not result.passed:
        failed = [r.describe() for r in result.expectations if not r.passed]
        stderr.write("expectation failed: " + "; ".join(failed) + "\n")
        return ExitCode.FAILED
    return ExitCode.OK


def _prepare(
    trace_path: str,
    *,
    fast: bool,
    loop: int | None,
    sets: Sequence[str],
    save_scenario: str | None,
    stdout: TextIO,
    stderr: TextIO,
) -> tuple[TracePlan, Scenario, list[str]] | int:
    """Extract the plan, build the scenario with the ``--set`` changes, print both (and save
    the scenario), with the ``--set`` keys warned of as unable to change the result; the
    exit code instead when a change or the saving fails."""
    try:
        plan = extract_plan(trace_path, progress=stderr)
    except OSError as err:  # as parse and query say it
        stderr.write(f"{trace_path}: error: cannot read the trace: {err.strerror or err}\n")
        return ExitCode.BAD_INPUT
    for warning in plan.warnings:
        stderr.write(warning + "\n")
    problem = loop_problem(plan, fast=fast, loops=loop or 1)
    if problem:
        stderr.write(problem + "\n")
        return ExitCode.BAD_INPUT
    name = "replay-" + os.path.splitext(os.path.basename(trace_path))[0]
    built = build_replay(plan, fast=fast, loops=loop or 1, name=name)
    try:
        scenario = apply_overrides(built.scenario, sets)
    except OverrideError as exc:
        for problem in exc.problems:
            stderr.write(problem + "\n")
        return ExitCode.BAD_INPUT
    for warning in built.warnings:
        stderr.write(f"warning: {warning}\n")
    ineffective = ineffective_sets(scenario, sets, before=built.scenario)
    for warning in ineffective:
        stderr.write(warning + "\n")
    lines = describe_plan(plan) + describe_build(built, sets)
    if loop == 0:
        lines.append("looping until Ctrl-C twice (or q at the prompt)")
    stdout.write("\n".join(lines) + "\n\n")
    if save_scenario:
        header = f"# Written by nnemu replay from {trace_path}; edit and `nnemu run` it.\n"
        if not _write_file(save_scenario, header + dump_scenario(scenario), "scenario", stderr):
            return ExitCode.BAD_INPUT
        stdout.write(f"scenario written to {save_scenario}\n\n")
    return plan, scenario, [warning.split()[2] for warning in ineffective]


def _play(
    scenario: Scenario,
    plan: TracePlan,
    stepper: Stepper,
    *,
    seed: int | None,
    trace: str | None,
    report: str | None,
    realtime: bool,
    executions: str | None,
    sets: Sequence[str],
    warned: list[str],
    stdout: TextIO,
    stderr: TextIO,
) -> Report | int:
    """One run of the replay scenario under the stepper: its summary, recorded vs replayed
    latency and report; the exit code instead when the trace or report cannot be written or
    a signal stopped the run (its summary printed, its report written). A run ended at the
    prompt (``q``, a Ctrl-C) has ``"interrupted"`` in its report, as one a signal stopped.

    A ``--set`` of a scheduler or a priority that the run shows changed nothing (no device
    it concerns ever had two executions waiting at once: ``unchosen_sets``, as ``nnemu run``
    says it) is warned of after the summary, once (its key then joins ``warned``)."""
    sinks: list[TraceSink] = [stepper.new_sink()]
    if trace:
        try:
            sinks.append(open_trace_writer(trace))
        except OSError as exc:
            stderr.write(f"{trace}: cannot write the trace: {exc.strerror}\n")
            return ExitCode.BAD_INPUT
    rows: list[tuple[Any, ...]] = []

    choices: dict[str, int] = {}
    orders = any(
        text.partition("=")[0].strip().endswith((".scheduler", ".priority")) for text in sets
    )

    def keep_figures(emulator: Any) -> None:
        if executions is not None:
            rows[:] = execution_rows(
                (app.spec.name, app.spec.uid, app.records or ()) for app in emulator.apps
            )
        if orders:
            choices.update(
                {service.name: service.device.stats.choices for service in emulator.services}
            )

    try:
        with stepper.handling_sigint():
            # The stepper handles Ctrl-C; SIGTERM stops the kernel cleanly.
            result = run(
                scenario,
                seed=seed,
                sinks=sinks,
                realtime=realtime,
                attach=stepper.attach,
                handle_signals=True,
                keep_executions=executions is not None,
                inspect=keep_figures if executions is not None or orders else None,
            )
    except Interrupted as exc:
        if exc.report is not None:
            summary(dict(exc.report.data), stdout)
            if report and not _write_file(report, exc.report.to_json(), "report", stderr):
                return ExitCode.BAD_INPUT
        if executions is not None and not _write_rows(executions, rows, stdout, stderr):
            return ExitCode.BAD_INPUT
        so_far = f"; the trace so far is in {trace}" if trace else ""
        stderr.write(f"interrupted by {exc.signal_name}{so_far}\n")
        return ExitCode.TERMINATED if exc.signal_name == "SIGTERM" else ExitCode.INTERRUPTED
    if stepper.interruption is not None:
        result = result.interrupted(stepper.interruption)  # q, or a Ctrl-C at the prompt
    summary(dict(result.data), stdout)
    cut = stepper.aborted  # a run cut short says nothing of what a --set did not change
    for warning in (
        unchosen_sets(scenario, sets, choices, skip=warned) if orders and not cut else ()
    ):
        stderr.write(warning + "\n")
        warned.append(warning.split()[2])
    stdout.write("\n" + "\n".join(fidelity_lines(plan, result.data)) + "\n")
    if report and not _write_file(report, result.to_json(), "report", stderr):
        return ExitCode.BAD_INPUT
    if executions is not None and not _write_rows(executions, rows, stdout, stderr):
        return ExitCode.BAD_INPUT
    return result


def _write_rows(path: str, rows: list[tuple[Any, ...]], stdout: TextIO, stderr: TextIO) -> bool:
    """Write ``--executions`` and say so; False (the reason printed) when it cannot."""
    try:
        write_executions(path, rows)
    except OutputError as exc:
        stderr.write(f"{exc}\n")
        return False
    stdout.write(f"{len(rows)} executions written to {path}\n")
    return True
