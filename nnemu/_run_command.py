"""``nnemu run SCENARIO``: check the outputs, run the scenario (or ``--replications`` of it),
print the summary, write the trace, report, executions and pictures; returns the exit code."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, TextIO

from nnemu._outputs import (
    Role,
    clash_problems,
    executions_output_problem,
    output_problem,
    refuse_outputs,
)
from nnemu._summary import replications_summary, summary
from nnemu.errors import ExitCode, Interrupted

if TYPE_CHECKING:
    from nnemu.replay import Stepper
    from nnemu.report import Report
    from nnemu.scenario import Scenario
    from nnemu.tracer import TraceSink


def _progress_printer(stream: TextIO) -> Any:
    def show(emulator: Any) -> None:
        stop = emulator.scenario.duration_ms
        if stop:
            fraction = min(1.0, emulator.kernel.clock_ns / (stop * 1e6))
        else:
            total = sum(app.spec.workload.executions or 0 for app in emulator.apps)
            done = sum(app.stats.completed + app.stats.failed for app in emulator.apps)
            fraction = done / total if total else 0.0
        bar = "#" * int(fraction * 30)
        stream.write(
            f"\r[{bar:<30}] {fraction * 100:5.1f}%  virtual {emulator.kernel.clock_ns / 1e6:.0f} ms"
        )
        stream.flush()

    return show


def _write_report(path: str, text: str, out: TextIO, err: TextIO) -> bool:
    """Write the report and say so; False (the reason printed) when it cannot be written."""
    from nnemu._files import write_text
    from nnemu.errors import OutputError

    try:
        write_text(path, text, "report")
    except OutputError as exc:
        err.write(f"{exc}\n")
        return False
    out.write(f"report written to {path}\n")
    return True


def _write_executions(args: argparse.Namespace, out: TextIO, err: TextIO) -> bool:
    """Write ``--executions`` (the rows ``inspect`` kept) and say so; False on failure."""
    from nnemu.errors import OutputError
    from nnemu.executions import write_executions

    rows = getattr(args, "execution_rows", [])
    try:
        write_executions(args.executions, rows)
    except OutputError as exc:
        err.write(f"{exc}\n")
        return False
    out.write(f"{len(rows)} executions written to {args.executions}\n")
    return True


def load_with_overrides(
    path: str,
    sets: Sequence[str],
    err: TextIO,
    warned: list[str] | None = None,
    loaded: list[Scenario] | None = None,
) -> Scenario | None:
    """The scenario at ``path`` with the ``--set`` changes (``run``'s and ``verify``'s); None
    (the problems printed) when a change cannot be applied.  A change that cannot move any number of the run gets a warning
    that says why (``ineffective_sets``); ``warned`` collects those keys, ``loaded`` the
    scenario as the file has it."""
    from nnemu.overrides import OverrideError, apply_overrides, ineffective_sets
    from nnemu.scenario import load_scenario

    scenario = load_scenario(path)
    if loaded is not None:
        loaded.append(scenario)
    try:
        changed = apply_overrides(scenario, sets)
    except OverrideError as exc:
        err.write("".join(f"{problem}\n" for problem in exc.problems))
        return None
    warnings = ineffective_sets(changed, sets, before=scenario)
    err.write("".join(f"{warning}\n" for warning in warnings))
    if warned is not None:
        warned.extend(warning.split()[2] for warning in warnings)
    return changed


def run_run_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``nnemu run`` with its parsed arguments (``nnemu.cli``'s ``run`` options): the exit code.

    The output paths are checked first (a refused run writes nothing); ``--replications``
    goes to ``_run_replications``; after a single run a SIGINT or SIGTERM waits until the
    summary, report and pictures are written."""
    from nnemu.tracer import open_trace_writer

    if refuse_outputs(
        err,
        output_problem("--trace", args.trace, "trace"),
        output_problem("--report", args.report, "report"),
        output_problem("--html", args.html, "pictures"),
        output_problem("--plots", args.plots, "pictures", directory=True),
        executions_output_problem(args.executions),
        *clash_problems(
            [
                Role(args.scenario, "scenario"),
                Role(args.trace, "trace", "--trace"),
                Role(args.report, "report", "--report"),
                Role(args.html, "pictures", "--html"),
                Role(args.executions, "executions", "--executions"),
                Role(args.plots, "pictures", "--plots", writes=("*.png",)),
            ]
        ),
    ):
        return ExitCode.BAD_INPUT
    warned: list[str] = []
    loaded: list[Scenario] = []
    scenario = load_with_overrides(args.scenario, args.set, err, warned, loaded)
    if scenario is None:
        return ExitCode.BAD_INPUT
    args.unused_sets = _UnusedSets(args.set, loaded[0], warned)
    if args.replications is not None:
        return _cmd_run_replications(args, scenario, out, err)
    if args.plots:  # before the trace is opened: a refused run leaves no file
        from nnemu.pictures import MISSING_MATPLOTLIB, plots_available

        if not plots_available():
            err.write(MISSING_MATPLOTLIB + "\n")
            return ExitCode.BAD_INPUT
    sinks: list[TraceSink] = []
    if args.trace is not None:
        try:
            sinks.append(open_trace_writer(args.trace))
        except OSError as exc:
            err.write(f"{args.trace}: cannot write the trace: {exc.strerror}\n")
            return ExitCode.BAD_INPUT
    stepper = None
    if args.step:
        from nnemu.replay import Stepper

        stepper = Stepper(sys.stdin, out, manual=True)
        sinks.append(stepper.new_sink())
    progress = (
        _progress_printer(err) if err.isatty() and not args.realtime and not stepper else None
    )
    pictures: list[Any] = []
    interrupted: Interrupted | None = None
    try:
        report = _run_scenario(scenario, args, sinks, stepper, progress, pictures)
    except Interrupted as exc:
        if exc.report is None:
            raise
        interrupted, report = exc, exc.report
    if interrupted is None and stepper is not None and stepper.interruption is not None:
        report = report.interrupted(stepper.interruption)  # q, or a Ctrl-C at the prompt
    # The run is over: a signal now lets the summary, report and pictures be written first.
    with _SignalsDeferred() as deferred:
        if progress is not None:
            err.write("\r" + " " * 60 + "\r")
        summary(dict(report.data), out)
        if not report.data.get("interrupted"):
            args.unused_sets.warn(scenario, err)
        code = _finish_run(args, report, interrupted, stepper, pictures, out, err)
    if deferred.signum is not None and code in (ExitCode.OK, ExitCode.FAILED):
        name = signal.Signals(deferred.signum).name
        err.write(f"interrupted by {name} after the run ended: its outputs were written\n")
        return _signal_exit_code(name)
    return code


class _SignalsDeferred:
    """SIGINT and SIGTERM held back for the block (main thread only; a custom SIGINT handler,
    such as the stepper's, is kept): the first is remembered (``signum``) while the block goes
    on, so that what it writes is complete; a second one of the same kind acts at once."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self._previous: dict[int, Any] = {}

    def _handle(self, signum: int, frame: object) -> None:
        if self.signum == signum:
            previous = self._previous.get(signum)
            self._restore()
            if callable(previous):
                previous(signum, frame)  # Python's KeyboardInterrupt, the CLI's Terminated
            else:
                signal.raise_signal(signum)  # the default action
            return
        if self.signum is None:
            self.signum = signum

    def _restore(self) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous.clear()

    def __enter__(self) -> _SignalsDeferred:
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                current = signal.getsignal(signum)
                if signum == signal.SIGINT and current is not signal.default_int_handler:
                    continue
                if current == signal.SIG_IGN:
                    continue
                self._previous[signum] = current
                signal.signal(signum, self._handle)
        return self

    def __exit__(self, *_exc: object) -> None:
        self._restore()


class _UnusedSets:
    """``nnemu run --set``'s warnings after the run(s): each change the runs never came to
    (``nnemu.overrides.unexercised_sets``), said once for all the replications."""

    def __init__(self, sets: Sequence[str], before: Scenario, warned: Sequence[str]) -> None:
        self.sets = list(sets)
        self.before = before
        self.warned = list(warned)
        self.uses: list[Any] = []

    def keep(self, emulator: Any) -> None:
        """Note what the finished run of ``emulator`` used (an ``inspect`` hook)."""
        from nnemu.overrides import run_use

        self.uses.append(run_use(emulator))

    def warn(self, scenario: Scenario, err: TextIO) -> None:
        """Print the warnings that hold for every run kept."""
        from nnemu.overrides import unexercised_sets

        warnings = unexercised_sets(
            scenario, self.sets, self.uses, before=self.before, skip=self.warned
        )
        err.write("".join(f"{warning}\n" for warning in warnings))


def _run_scenario(
    scenario: Scenario,
    args: argparse.Namespace,
    sinks: list[TraceSink],
    stepper: Stepper | None,
    progress: Callable[[Any], None] | None,
    pictures: list[Any],
) -> Report:
    """``nnemu run``'s run of ``scenario``; with ``--html``/``--plots`` its figures go to ``pictures``."""
    from nnemu._emulator import run

    inspect: Callable[[Any], None] | None = None
    if args.html or args.plots or args.executions or args.set:

        def keep_figures(emulator: Any) -> None:
            if args.set:
                args.unused_sets.keep(emulator)
            if args.html or args.plots:
                from nnemu.pictures import collect

                pictures.append(collect(emulator))
            if args.executions:
                from nnemu.executions import execution_rows

                args.execution_rows = execution_rows(
                    (app.spec.name, app.spec.uid, app.records or ()) for app in emulator.apps
                )

        inspect = keep_figures

    with contextlib.ExitStack() as stack:
        if stepper:
            stack.enter_context(stepper.handling_sigint())
        if args.html:
            # The page's per-layer tables: the run's --trace, else its systrace parsed in memory.
            from nnemu.pictures import LayerTrace

            layers = LayerTrace(args.trace)

            def add_layer_tables() -> None:  # after the run, its trace closed
                pictures[:] = [layers.attach(data) for data in pictures]

            stack.callback(add_layer_tables)
            sinks = [*sinks, *layers.sinks]
        return run(
            scenario,
            seed=args.seed,
            sinks=sinks,
            realtime=args.realtime,
            wall_time=args.wall_time,
            progress=progress,
            keep_executions=bool(args.html or args.plots or args.executions),
            inspect=inspect,
            attach=stepper.attach if stepper else None,
            handle_signals=True,
        )


def _finish_run(
    args: argparse.Namespace,
    report: Report,
    interrupted: Interrupted | None,
    stepper: Stepper | None,
    pictures: list[Any],
    out: TextIO,
    err: TextIO,
) -> int:
    """After ``nnemu run``'s summary: write the report and pictures, say what was written, and
    return the exit code (interrupted, an expectation failed, or ok)."""
    so_far = f"; the trace so far is in {args.trace}" if args.trace else ""
    if args.report and not _write_report(args.report, report.to_json(), out, err):
        return ExitCode.BAD_INPUT
    if args.executions and not _write_executions(args, out, err):
        return ExitCode.BAD_INPUT
    if args.trace:
        out.write(f"trace written to {args.trace}\n")
    if pictures:
        from nnemu.pictures import write_html, write_plots

        for target, write in ((args.html, write_html), (args.plots, write_plots)):
            if target:
                try:
                    write(pictures[0], report, target)
                except OSError as exc:
                    err.write(f"{target}: cannot write the pictures: {exc.strerror}\n")
                    return ExitCode.BAD_INPUT
                out.write(f"pictures written to {target}\n")
    if interrupted is not None:
        err.write(f"interrupted by {interrupted.signal_name}{so_far}\n")
        return _signal_exit_code(interrupted.signal_name)
    if stepper is not None and stepper.aborted:  # q, or a Ctrl-C at the prompt
        err.write(f"{stepper.ending()}{so_far}\n")
        return ExitCode.INTERRUPTED
    if not report.passed:
        failed = [r.describe() for r in report.expectations if not r.passed]
        err.write("expectation failed: " + "; ".join(failed) + "\n")
        return ExitCode.FAILED
    return ExitCode.OK


_SINGLE_RUN_OPTIONS: Final = (
    ("trace", "--trace"),
    ("html", "--html"),
    ("plots", "--plots"),
    ("executions", "--executions"),
    ("step", "--step"),
    ("realtime", "--realtime"),
)
"""``nnemu run`` options about one run, which ``--replications`` refuses."""


def _cmd_run_replications(
    args: argparse.Namespace, scenario: Scenario, out: TextIO, err: TextIO
) -> int:
    """``nnemu run --replications N``: run the seeds in turn, print the means with their
    confidence intervals, write the replications report; the exit code."""
    from nnemu._text import counted
    from nnemu.replications import run_replications

    refused = [option for attr, option in _SINGLE_RUN_OPTIONS if getattr(args, attr)]
    if refused:
        for option in refused:
            err.write(
                f"{option}: not with --replications (it shows one run: "
                f"add it to `nnemu run --seed SEED` for the replication of that seed)\n"
            )
        return ExitCode.BAD_INPUT
    started = None
    if err.isatty():

        def started(index: int, seed: int) -> None:
            err.write(f"\rreplication {index + 1}/{args.replications}  seed {seed}  ")
            err.flush()

    unused: _UnusedSets = args.unused_sets
    replications = run_replications(
        scenario,
        args.replications,
        seed=args.seed,
        wall_time=args.wall_time,
        started=started,
        inspect=unused.keep if args.set else None,
    )
    if started is not None:
        err.write("\r" + " " * 60 + "\r")
    if not replications.reports:
        err.write(f"interrupted by {replications.interrupted} before a replication finished\n")
        return _signal_exit_code(replications.interrupted)
    replications_summary(replications, out)
    if replications.interrupted is None:
        unused.warn(scenario, err)
    if args.report and not _write_report(args.report, replications.to_json(), out, err):
        return ExitCode.BAD_INPUT
    if replications.interrupted is not None:
        err.write(
            f"interrupted by {replications.interrupted}: the summary covers the "
            f"{counted(len(replications.reports), 'replication')} finished\n"
        )
        return _signal_exit_code(replications.interrupted)
    if not replications.passed:
        failed = [r.describe() for r in replications.expectations() if not r.passed]
        err.write("expectation failed (on the means): " + "; ".join(failed) + "\n")
        return ExitCode.FAILED
    return ExitCode.OK


def _signal_exit_code(signal_name: str | None) -> int:
    return ExitCode.TERMINATED if signal_name == "SIGTERM" else ExitCode.INTERRUPTED
