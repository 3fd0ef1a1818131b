"""The ``nnemu`` command: the only place that reads argv, prints, configures logging and exits.

Exit codes: 0 success (every expectation held), 1 an expectation failed,
2 bad input or output (a scenario or trace that cannot be used, a file that cannot
be written), 130 interrupted (Ctrl-C, SIGINT), 141 stdout closed early (a reader
such as ``head`` stopped reading: nnemu ends quietly, as Unix tools do), 143
terminated (SIGTERM).
"""

from __future__ import annotations

if __name__ == "__main__":  # python -m nnemu.cli: a Ctrl-C during the imports below is quiet
    import nnemu

    nnemu._quiet_start()

import argparse
import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any, Final, TextIO

from nnemu.errors import (
    ExitCode,
    Interrupted,
    NnemuError,
    ScenarioError,
    Terminated,
    TraceFormatError,
)

if TYPE_CHECKING:
    from nnemu.replay import Stepper
    from nnemu.replications import Replications
    from nnemu.report import Report
    from nnemu.scenario import Scenario
    from nnemu.tracer import TraceSink

_LOG_LEVELS = {-1: logging.WARNING, 0: logging.INFO, 1: logging.DEBUG}
_LOGGING_COMMANDS = frozenset({"run", "replay", "verify", "demo"})
_TRACE_IN = "systrace .html, ftrace text, Chrome .json or Perfetto protobuf (told by content)"
"""The help of the trace that replay, parse and query read (every format ``open_trace`` reads)."""
"""Commands that run an emulation, whose layers log; the readers (parse, query) log nothing
and get structlog (an import of ~50 ms) only when logging is asked for (``-v``, ``-q``,
``--log-format json``)."""


def _exit_code_of(exc: Interrupted) -> int:
    return ExitCode.TERMINATED if exc.signum == signal.SIGTERM else ExitCode.INTERRUPTED


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("nnemu")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def _add_virtual_time(_logger: Any, _name: str, event: dict[str, Any]) -> dict[str, Any]:
    """structlog processor: the emulation's virtual time in ms as ``vt``."""
    from nnemu.sim import virtual_time_ms

    now = virtual_time_ms()
    if now is not None:
        event["vt"] = round(now, 3)
    return event


def configure_logging(log_format: str, stream: TextIO, level: int = logging.INFO) -> None:
    """Configure structlog: console lines on a terminal, JSON with ``--log-format json``.

    ``level`` filters the events (``-v`` debug, ``-q`` warnings and errors only).
    """
    import structlog

    processors: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        _add_virtual_time,
    ]
    if log_format == "json":
        processors += [structlog.processors.dict_tracebacks, structlog.processors.JSONRenderer()]
    else:
        processors += [structlog.dev.ConsoleRenderer(colors=stream.isatty())]
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(stream),
        cache_logger_on_first_use=False,
    )


class _VersionAction(argparse.Action):
    """``--version``: the installed version and what runs compiled (``nnemu._native.describe``),
    looked up only when asked for (it costs imports)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        kwargs.update(nargs=0, default=argparse.SUPPRESS)
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_args: Any, **_kwargs: Any) -> None:
        from nnemu import _native

        sys.stdout.write(f"nnemu {_version()} ({_native.describe()})\n")
        parser.exit()


def _common_options(*, top: bool) -> argparse.ArgumentParser:
    """Options every command takes, before or after the command name."""
    common = argparse.ArgumentParser(add_help=False)
    # Defaults are set once, on the top parser: a subcommand's default would
    # overwrite a value given before the command name.
    default: object = argparse.SUPPRESS
    common.add_argument(
        "--log-format",
        choices=("console", "json"),
        default="console" if top else default,
        help="log lines as console text (default) or JSON",
    )
    verbosity = common.add_mutually_exclusive_group()
    verbosity.add_argument(
        "-v",
        "--verbose",
        dest="verbosity",
        action="store_const",
        const=1,
        default=0 if top else default,
        help="also log debug events",
    )
    verbosity.add_argument(
        "-q",
        "--quiet",
        dest="verbosity",
        action="store_const",
        const=-1,
        default=default,
        help="log warnings and errors only",
    )
    return common


_AddCommand = Callable[..., argparse.ArgumentParser]
"""Adds a command (name, argparse keywords) to ``nnemu``'s parser and returns its parser."""


def _positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        msg = f"expected an integer >= 1, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def _add_set(parser: argparse.ArgumentParser, text: str) -> None:
    """``--set KEY=VALUE`` (repeatable), read by ``nnemu.overrides`` in ``run`` and ``replay``."""
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help=text)


def _add_outputs(parser: argparse.ArgumentParser) -> None:
    """``--report`` and ``--executions``, the same in ``run`` and ``replay``."""
    parser.add_argument("--report", help="write the JSON report here")
    parser.add_argument(
        "--executions",
        help="write one row per execution here: .csv, or .parquet (needs pyarrow)",
    )


def _add_run(add: _AddCommand) -> None:
    """The options of ``nnemu run``."""
    run = add("run", help="run a scenario; print a summary, write a trace and a report")
    run.add_argument("scenario", help="scenario YAML file")
    run.add_argument("--seed", type=int, help="override the scenario's seed")
    _add_set(run, "change the scenario, e.g. apps.<app>.priority=high (repeatable)")
    run.add_argument(
        "--replications",
        type=_positive_int,
        metavar="N",
        help="run N times (seeds SEED, SEED+1, ...): mean and 95%% CI per metric",
    )
    run.add_argument(
        "--trace",
        help="write a trace: .html (systrace), .json (Chrome), .pftrace (Perfetto), else ftrace text",
    )
    _add_outputs(run)
    run.add_argument(
        "--realtime", action="store_true", help="run on the wall clock, not virtual time"
    )
    run.add_argument(
        "--wall-time",
        action="store_true",
        help="record wall_s in the report (reports are otherwise byte-identical across runs)",
    )
    run.add_argument("--html", help="write a self-contained HTML page with the run's figures")
    run.add_argument("--plots", help="write the figures as PNG files into this directory")
    run.add_argument(
        "--step",
        action="store_true",
        help="start in manual control (a gdb-like prompt; h for help)",
    )


def _add_replay(add: _AddCommand) -> None:
    """The options of ``nnemu replay``."""
    replay = add(
        "replay", help="re-drive the emulator from a recorded trace (nnemu's or a device's)"
    )
    replay.add_argument("trace", help=_TRACE_IN)
    replay.add_argument("-n", action="store_true", help="ignore the timestamps: run flat out")
    replay.add_argument(
        "-l",
        nargs="?",
        type=int,
        const=0,
        metavar="N",
        help="loop the replay N times (no N: until Ctrl-C; put -l after TRACE)",
    )
    replay.add_argument(
        "-s", type=float, metavar="TIMESTAMP", help="run to this virtual time (s), then step"
    )
    replay.add_argument("-m", action="store_true", help="start in manual control")
    _add_set(replay, "change the replay scenario, e.g. apps.<app>.priority=high")
    replay.add_argument("--seed", type=int, help="override the seed")
    replay.add_argument(
        "--trace",
        dest="trace_out",
        help="write the replay's trace (.html, .json, .pftrace, else text)",
    )
    _add_outputs(replay)
    replay.add_argument("--save-scenario", help="write the scenario the replay built here")
    replay.add_argument("--realtime", action="store_true", help="run on the wall clock")


def _add_parse(add: _AddCommand) -> None:
    """The options of ``nnemu parse``."""
    parse = add("parse", help="NNAPI timing statistics of a trace (as Android's parser)")
    parse.add_argument("trace", help=_TRACE_IN)
    parse.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parse.add_argument("--per-execution", action="store_true", help="per-execution figures")
    parse.add_argument("--total-times", action="store_true", help="total instead of self times")
    parse.add_argument("--print-detail", action="store_true", help="per-thread detail")
    parse.add_argument(
        "--include-incomplete",
        action="store_true",
        help="also print a run the trace cuts off (marked incomplete)",
    )


def _add_verify(add: _AddCommand) -> None:
    """The options of ``nnemu verify``."""
    verify = add(
        "verify", help="run a scenario, parse its trace back, compare with the ground truth"
    )
    verify.add_argument("scenario", help="scenario YAML file")
    verify.add_argument("--seed", type=int, help="override the scenario's seed")
    verify.add_argument("--trace", help="keep the trace here (default: a temporary file)")


def _add_query(add: _AddCommand) -> None:
    """The options of ``nnemu query``."""
    query = add("query", help="SQL over a trace (Perfetto-like tables)")
    query.add_argument("trace", help=_TRACE_IN)
    query.add_argument(
        "sql",
        nargs="?",
        help="the query (or a shell command: .tables, .schema NAME); omit for an interactive shell",
    )
    query.add_argument("--csv", action="store_true", help="print CSV")
    query.add_argument("--json", action="store_true", help="print JSON")
    query.add_argument("--db", help="keep the SQLite database at this path")


def _add_demo(add: _AddCommand) -> None:
    """The options of ``nnemu demo``."""
    demo = add("demo", help="narrated step-by-step walkthroughs of the HAL semantics")
    demo.add_argument("topic", nargs="?", help="the topic; omit (or --list) to list the topics")
    demo.add_argument("--list", action="store_true", help="list the topics")
    demo.add_argument("--out", help="directory for the demo's trace (default: the current one)")
    demo.add_argument("--pause", action="store_true", help="wait for Enter between steps")


def _add_compare(add: _AddCommand) -> None:
    """The options of ``nnemu compare``."""
    compare = add(
        "compare",
        help="compare two reports, replications reports or sweep directories, metric by metric",
    )
    compare.add_argument("a", metavar="A", help="report JSON, replications report or sweep DIR")
    compare.add_argument("b", metavar="B", help="the same for the other side")
    compare.add_argument(
        "--metrics",
        nargs="+",
        action="extend",
        default=[],
        metavar="PATH",
        help="metrics to compare (default: latency quantiles, miss and error rates, busy fractions)",
    )
    compare.add_argument(
        "--fail-if",
        action="append",
        default=[],
        metavar="'PATH OP VALUE'",
        help="exit 1 if it holds, e.g. 'apps.camera.latency_ms.p99 > +5%%' (repeatable)",
    )


def _add_sweep(add: _AddCommand) -> None:
    """The options of ``nnemu sweep``."""
    sweep = add(
        "sweep", help="run an experiment: a scenario's variants and replications, in parallel"
    )
    sweep.add_argument("experiment", help="experiment YAML file (docs/experiments.md)")
    sweep.add_argument("--out", help="directory of the results (default: <experiment>.sweep)")
    sweep.add_argument(
        "--engine", choices=("local", "dask"), default="local", help="process pool or Dask"
    )
    sweep.add_argument("--workers", type=int, help="worker processes (default: the CPU count)")
    sweep.add_argument("--address", help="with --engine dask: a running scheduler, tcp://HOST:PORT")
    sweep.add_argument(
        "--resume",
        action="store_true",
        help="keep the results already in the directory and run the rest, and again the "
        "variants that crashed (their worker died); failed ones (the scenario raised) are kept",
    )
    sweep.add_argument(
        "--retry-failed",
        action="store_true",
        help="with --resume (implied): also run again the variants that failed",
    )
    sweep.add_argument(
        "--plot", action="store_true", help="one PNG per metric against the first numeric key"
    )


class _Parser(argparse.ArgumentParser):
    """argparse's parser, except that a help or usage text that cannot be written (stdout on
    a full device) raises the OSError, which ``main`` reports (argparse drops it: exit 0)."""

    def _print_message(self, message: str, file: Any = None) -> None:
        if message:
            (file or sys.stderr).write(message)


def _parser() -> argparse.ArgumentParser:
    """``nnemu``'s argument parser: the common options, then each command's."""
    parser: argparse.ArgumentParser = _Parser(
        prog="nnemu",
        description="Emulate the Android NNAPI stack (app, runtime, HIDL IPC, driver) in virtual time.",
        parents=[_common_options(top=True)],
    )
    parser.add_argument("--version", action=_VersionAction, help="show the version and exit")
    sub = parser.add_subparsers(dest="command", required=True)
    common = _common_options(top=False)

    def add_command(name: str, **kwargs: Any) -> argparse.ArgumentParser:
        return sub.add_parser(name, parents=[common], **kwargs)

    for add_options in (
        _add_run,
        _add_replay,
        _add_parse,
        _add_verify,
        _add_query,
        _add_demo,
        _add_compare,
        _add_sweep,
    ):
        add_options(add_command)
    return parser


def _summary(data: dict[str, Any], out: TextIO) -> None:
    """The run's summary tables: per app (submitted = completed + failed + dropped + in flight)
    and per device.  Latency percentiles are "-" for an app with no completion; a p95 or p99
    that is only the slowest execution is marked, with a footnote (``nnemu._tails``)."""
    from nnemu._tails import footnote, marked_cells, slowest_only
    from nnemu._text import cells, right

    out.write(
        f"scenario {data['scenario']}  seed {data['seed']}  virtual {data['virtual_ms']:.3f} ms\n"
    )
    how = data.get("interrupted")
    if how:
        from nnemu._text import ending

        out.write(f"{ending(how)}: the figures cover the run so far\n")
    out.write("\n")
    width = max([3, *(len(name) for name in data["apps"])]) + 2
    out.write(
        f"{'app':<{width}}{'submitted':>10}{'completed':>11}{'failed':>8}{'dropped':>9}"
        f"{'in flight':>11}{'p50 ms':>10}{'p95 ms':>10}{'p99 ms':>10}  errors\n"
    )
    marked: set[str] = set()
    for name, app in data["apps"].items():
        lat = app["latency_ms"]
        errors = ", ".join(f"{code}:{count}" for code, count in app["errors"].items()) or "-"
        if app["compile_result"] != "NO_ERROR":
            errors = f"compilation {app['compile_result']}"
        done = app["completed"]
        slowest = {q for q in ("p95", "p99") if slowest_only(q, done)}
        marked |= slowest
        quantiles, carry = marked_cells(
            [(f"{lat[q]:.3f}" if done else "-", 10, q in slowest) for q in ("p50", "p95", "p99")]
        )
        counts = cells(
            (app["submitted"], 10),
            (app["completed"], 11),
            (app["failed"], 8),
            (app["dropped"], 9),
            (app["in_flight"], 11),
        )
        out.write(f"{name:<{width}}{counts}{quantiles}{' ' * (2 - carry)}{errors}\n")
    if marked:
        out.write(footnote(marked) + "\n")
    _split_summary(data["apps"], out)
    width = max([6, *(len(name) for name in data["devices"])]) + 2
    out.write(
        f"\n{'device':<{width}}{'executions':>11}{'busy':>9}{'preemptions':>13}{'energy':>10}\n"
    )
    for name, device in data["devices"].items():
        busy = right(f"{device['busy_fraction'] * 100:.1f}", 8)
        counts = cells((device["preemptions"], 13), (f"{device.get('energy', 0.0):.1f}", 10))
        out.write(f"{name:<{width}}{right(device['executions'], 11)}{busy}%{counts}\n")
    if data["expectations"]:
        out.write("\nexpectations\n")
        for result in data["expectations"]:
            mark = "ok  " if result["passed"] else "FAIL"
            why = f"  ({result['why']})" if "why" in result else ""
            out.write(f"  {mark} {result['text']}{why}\n")


_SPLIT_HEADS = {
    "app_wait": "app",
    "binder_wait": "binder",
    "device_queue": "queue",
    "preempted": "preempt",
    "ipc": "ipc",
    "driver_launch": "launch",
    "compute": "compute",
    "retry": "retry",
    "runtime": "runtime",
}
"""The summary's column heads for the parts of ``latency_split_ms``."""


def _split_summary(apps: dict[str, Any], out: TextIO) -> None:
    """Where each app's mean latency went (ms, ``latency_split_ms``): one line per app with a
    completion (none for report data without the split)."""
    from nnemu._text import cells

    shown = {
        name: app for name, app in apps.items() if app["completed"] and "latency_split_ms" in app
    }
    if not shown:
        return
    width = max([3, *(len(name) for name in shown)]) + 2
    heads = "".join(f"{head:>9}" for head in _SPLIT_HEADS.values())
    out.write(f"\n{'mean ms':<{width}}{'latency':>9}{heads}\n")
    for name, app in shown.items():
        split = app["latency_split_ms"]
        mean = f"{app['latency_ms']['mean']:.3f}"
        parts = cells((mean, 9), *((f"{split[part]:.3f}", 9) for part in _SPLIT_HEADS))
        out.write(f"{name:<{width}}{parts}\n")


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


def _output_problem(option: str, path: str | None, what: str, *, directory: bool = False) -> str:
    """Why ``path`` cannot take the output of ``option`` ("" when it can), checked before a run.

    The check writes as the output will (permission bits say nothing for root, or on /proc or a
    read-only mount): a file or directory it has to create for that is removed again at once,
    and one already there is opened to write without being changed.
    """
    if path is None:
        return ""
    if not path.strip():
        return f"{option}: expected a path to write the {what} to, got {path!r}"
    if directory:
        reason = _directory_problem(path)
    elif os.path.isdir(path):
        reason = "is a directory"
    else:
        parent = os.path.dirname(os.path.abspath(path))
        reason = f"no such directory {parent}" if not os.path.isdir(parent) else _file_problem(path)
    return f"{path}: cannot write the {what}: {reason}" if reason else ""


def _write_problem(exc: OSError) -> str:
    """The reason an output could not be written, as the pre-run checks say it."""
    if isinstance(exc, PermissionError):
        return "permission denied"
    return exc.strerror or str(exc)


def _file_problem(path: str) -> str:
    """Why the file ``path`` (its directory exists) cannot be written ("" when it can)."""
    try:
        handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except FileExistsError:
        return _existing_file_problem(path)
    except OSError as exc:
        return _write_problem(exc)
    os.close(handle)
    os.unlink(path)
    return ""


def _existing_file_problem(path: str) -> str:
    """Why ``path``, which exists, cannot be written: a regular file is opened to write (not
    truncated); a pipe or device only asks for permission (opening it could block or act)."""
    import stat

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return "" if os.access(path, os.W_OK) else "permission denied"
        handle = os.open(path, os.O_WRONLY)
    except OSError as exc:
        return _write_problem(exc)
    os.close(handle)
    return ""


def _directory_problem(path: str) -> str:
    """Why the directory ``path`` (created with its parents when missing) cannot take files."""
    existing = os.path.abspath(path)
    missing = ""
    while not os.path.exists(existing):
        existing, missing = os.path.dirname(existing), existing
    if not os.path.isdir(existing):
        return f"{existing} is not a directory"
    try:
        if missing:
            os.mkdir(missing)  # the first directory that the output will create
            os.rmdir(missing)
        else:
            probe = os.path.join(existing, f".nnemu-write-check-{os.getpid()}")
            os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            os.unlink(probe)
    except OSError as exc:
        return _write_problem(exc)
    return ""


def _refuse_outputs(err: TextIO, *problems: str) -> bool:
    """Print the problems with output paths found before a run; True if there were any."""
    found = [problem for problem in problems if problem]
    err.write("".join(f"{problem}\n" for problem in found))
    return bool(found)


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


def _executions_problem(path: str | None) -> str:
    """What is wrong with ``--executions PATH`` before a run ("" if nothing)."""
    if path is None:
        return ""
    from nnemu.executions import executions_problem

    return _output_problem("--executions", path, "executions") or executions_problem(path)


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


def _load_with_overrides(
    path: str,
    sets: Sequence[str],
    err: TextIO,
    warned: list[str] | None = None,
    loaded: list[Scenario] | None = None,
) -> Scenario | None:
    """The scenario at ``path`` with the ``--set`` changes; None (the problems printed) when a
    change cannot be applied.  A change that cannot move any number of the run gets a warning
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


def _cmd_run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from nnemu._outputs import Role, clash_problems
    from nnemu.tracer import open_trace_writer

    if _refuse_outputs(
        err,
        _output_problem("--trace", args.trace, "trace"),
        _output_problem("--report", args.report, "report"),
        _output_problem("--html", args.html, "pictures"),
        _output_problem("--plots", args.plots, "pictures", directory=True),
        _executions_problem(args.executions),
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
    scenario = _load_with_overrides(args.scenario, args.set, err, warned, loaded)
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
        _summary(dict(report.data), out)
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
        return _exit_code_of(interrupted)
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
    _replications_summary(replications, out)
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


def _replications_summary(replications: Replications, out: TextIO) -> None:
    """``nnemu run --replications``'s summary: the tables of ``_summary`` with, per figure,
    the mean over the replications and below it the half-width of its 95% interval."""
    from nnemu._tails import MARK, footnote, marked_cells, slowest_only
    from nnemu._text import counted, seed_span

    intervals = replications.intervals()
    seeds = replications.seeds
    count = len(seeds)
    span = seed_span(seeds[0], count)
    virtual = intervals.get("virtual_ms")
    out.write(
        f"scenario {replications.scenario.name}  {span} ({counted(count, 'replication')})"
        + (f"  virtual {virtual.mean:.3f} ms" if virtual else "")
        + "\n"
    )
    if replications.interrupted:
        out.write(
            f"interrupted by {replications.interrupted}: {count} of "
            f"{replications.requested} replications finished\n"
        )
    out.write(
        "each figure: the mean over the replications; below it, ± the half-width "
        "of its 95% confidence interval (Student t)\n\n"
    )

    def cells(
        paths: Sequence[str],
        widths: Sequence[int],
        digits: Sequence[int],
        marked: Collection[str] = (),
    ) -> tuple[str, str]:
        """The row of means (those of ``marked`` paths followed by ``*``) and of half-widths."""
        means: list[tuple[str, int, bool]] = []
        halves = ""
        for path, width, places in zip(paths, widths, digits, strict=True):
            interval = intervals.get(path)
            if interval is None:
                means.append(("-", width, False))
                halves += f"{'':>{width}}"
                continue
            scale = 100.0 if path.endswith("busy_fraction") else 1.0
            unit = "%" if scale != 1.0 else ""
            means.append((f"{interval.mean * scale:.{places}f}{unit}", width, path in marked))
            if interval.n < 2:  # one value has no spread to estimate: no interval, not 0
                halves += f"{'-':>{width}}"
            else:
                halves += f"{interval.half_width * scale:>{width - len(unit)}.{places}f}{unit}"
        return marked_cells(means)[0], halves

    apps = sorted({path.split(".")[1] for path in intervals if path.startswith("apps.")})
    names = [str(name) for name in replications.reports[0].data.get("apps", {})]
    apps = [name for name in names if name in apps] + [n for n in apps if n not in names]
    width = max([10, *(len(name) for name in apps)]) + 2
    columns = ("submitted", "completed", "failed", "dropped", "in_flight")
    quantiles = ("p50", "p95", "p99")
    out.write(
        f"{'app':<{width}}{'submitted':>10}{'completed':>11}{'failed':>8}{'dropped':>9}"
        f"{'in flight':>11}{'p50 ms':>10}{'p95 ms':>10}{'p99 ms':>10}  errors\n"
    )
    notes: list[str] = []
    marked: set[str] = set()
    for name in apps:
        paths = [f"apps.{name}.{c}" for c in columns] + [
            f"apps.{name}.latency_ms.{q}" for q in quantiles
        ]
        completed = [
            report.data["apps"][name].get("completed", 0)
            for report in replications.reports
            if name in report.data.get("apps", {})
        ]
        # A quantile's mean is marked when it was the slowest execution in any replication.
        slowest = {q for q in quantiles if any(slowest_only(q, n) for n in completed)}
        marked |= slowest
        means, halves = cells(
            paths,
            (10, 11, 8, 9, 11, 10, 10, 10),
            (1,) * 5 + (3,) * 3,
            marked={f"apps.{name}.latency_ms.{q}" for q in slowest},
        )
        prefix = f"apps.{name}.errors."
        errors = ", ".join(
            f"{path.removeprefix(prefix)}:{interval.mean:.1f}"
            for path, interval in intervals.items()
            if path.startswith(prefix)
        )
        compile_results = [
            report.data["apps"][name].get("compile_result", "NO_ERROR")
            for report in replications.reports
            if name in report.data.get("apps", {})
        ]
        failed = sorted({result for result in compile_results if result != "NO_ERROR"})
        if failed:
            times = sum(result != "NO_ERROR" for result in compile_results)
            errors = f"compilation {'/'.join(failed)}" + (
                f" in {times} of {count}" if times < count else ""
            )
        gap = " " if means.endswith(MARK) else "  "  # a mark takes a column of the gap
        out.write(f"{name:<{width}}{means}{gap}{errors or '-'}\n")
        out.write(f"{'  ± 95% CI':<{width}}{halves}".rstrip() + "\n")
        latency = intervals.get(f"apps.{name}.latency_ms.p50")
        if latency is not None and latency.n < count:
            notes.append(
                f"{name}: latency over the {latency.n} of {count} replications "
                f"where it completed something"
            )
    if marked:
        out.write(footnote(marked, " in at least one replication") + "\n")
    split = [name for name in apps if f"apps.{name}.latency_split_ms.compute" in intervals]
    if split:
        heads = "".join(f"{head:>9}" for head in _SPLIT_HEADS.values())
        out.write(f"\n{'mean ms':<{width}}{'latency':>9}{heads}\n")
        for name in split:
            paths = [f"apps.{name}.latency_ms.mean"] + [
                f"apps.{name}.latency_split_ms.{part}" for part in _SPLIT_HEADS
            ]
            means, halves = cells(paths, (9,) * len(paths), (3,) * len(paths))
            out.write(f"{name:<{width}}{means}\n")
            out.write(f"{'  ± 95% CI':<{width}}{halves}".rstrip() + "\n")
    devices = sorted({path.split(".")[1] for path in intervals if path.startswith("devices.")})
    names = [str(name) for name in replications.reports[0].data.get("devices", {})]
    devices = [name for name in names if name in devices] + [n for n in devices if n not in names]
    width = max([10, *(len(name) for name in devices)]) + 2
    out.write(
        f"\n{'device':<{width}}{'executions':>11}{'busy':>9}{'preemptions':>13}{'energy':>10}\n"
    )
    for name in devices:
        paths = [
            f"devices.{name}.{key}"
            for key in ("executions", "busy_fraction", "preemptions", "energy")
        ]
        means, halves = cells(paths, (11, 9, 13, 10), (1, 1, 1, 1))
        out.write(f"{name:<{width}}{means}\n" + f"{'  ± 95% CI':<{width}}{halves}".rstrip() + "\n")
    if notes:
        out.write("\n" + "".join(f"{note}\n" for note in notes))
    expectations = replications.expectations()
    if expectations:
        out.write(f"\nexpectations (on the means over {counted(count, 'replication')})\n")
        for result in expectations:
            mark = "ok  " if result.passed else "FAIL"
            if result.why is not None:
                mean = f"  ({result.why})"
            else:
                mean = "" if result.actual is None else f"  (mean {result.actual:g})"
            out.write(f"  {mark} {result.text}{mean}\n")


def _cmd_replay(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from nnemu._outputs import Role, clash_problems
    from nnemu.replay import run_replay_command

    if _refuse_outputs(
        err,
        _output_problem("--trace", args.trace_out, "trace"),
        _output_problem("--report", args.report, "report"),
        _output_problem("--save-scenario", args.save_scenario, "scenario"),
        _executions_problem(args.executions),
        *clash_problems(
            [
                Role(args.trace, "trace"),
                Role(args.trace_out, "trace", "--trace"),
                Role(args.report, "report", "--report"),
                Role(args.save_scenario, "scenario", "--save-scenario"),
                Role(args.executions, "executions", "--executions"),
            ]
        ),
    ):
        return ExitCode.BAD_INPUT
    return run_replay_command(
        args.trace,
        fast=args.n,
        loop=args.l,
        stop_at_s=args.s,
        manual=args.m,
        sets=args.set,
        seed=args.seed,
        trace=args.trace_out,
        report=args.report,
        save_scenario=args.save_scenario,
        realtime=args.realtime,
        executions=args.executions,
        stdin=sys.stdin,
        stdout=out,
        stderr=err,
        summary=_summary,
    )


def _cmd_parse(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from nnemu.parser import run_parse_command

    return run_parse_command(
        args.trace,
        as_json=args.json,
        per_execution=args.per_execution,
        total_times=args.total_times,
        print_detail=args.print_detail,
        stdout=out,
        stderr=err,
        include_incomplete=args.include_incomplete,
    )


def _cmd_verify(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from nnemu._outputs import Role, clash_problems
    from nnemu.verify import run_verify_command

    if _refuse_outputs(
        err,
        _output_problem("--trace", args.trace, "trace"),
        *clash_problems([Role(args.scenario, "scenario"), Role(args.trace, "trace", "--trace")]),
    ):
        return ExitCode.BAD_INPUT
    return run_verify_command(
        args.scenario, seed=args.seed, trace=args.trace, stdout=out, stderr=err
    )


def _cmd_query(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from nnemu._outputs import Role, clash_problems
    from nnemu.query import run_query_command

    if _refuse_outputs(
        err,
        _output_problem("--db", args.db, "database"),
        *clash_problems([Role(args.trace, "trace"), Role(args.db, "database", "--db")]),
    ):
        return ExitCode.BAD_INPUT
    return run_query_command(
        args.trace,
        args.sql,
        as_csv=args.csv,
        as_json=args.json,
        db=args.db,
        stdin=sys.stdin,
        stdout=out,
        stderr=err,
    )


def _cmd_demo(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from nnemu.demo import run_demo_command

    if _refuse_outputs(err, _output_problem("--out", args.out, "trace", directory=True)):
        return ExitCode.BAD_INPUT
    return run_demo_command(
        None if args.list else args.topic,
        out_dir=args.out,
        pause=args.pause and sys.stdin.isatty(),
        stdin=sys.stdin,
        stdout=out,
        stderr=err,
    )


def _cmd_compare(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from nnemu.compare import compare, format_comparison, load_side, parse_condition

    try:
        conditions = [parse_condition(text) for text in args.fail_if]
    except ValueError as exc:
        err.write(f"{exc}\n")
        return ExitCode.BAD_INPUT
    sides = load_side(args.a), load_side(args.b)
    try:
        comparison = compare(*sides, metrics=args.metrics, conditions=conditions)
    except ValueError as exc:
        err.write(f"{exc}\n")
        return ExitCode.BAD_INPUT
    out.write(format_comparison(comparison))
    held = comparison.held()
    if held:
        err.write("fail-if held: " + "; ".join(sorted({c.text for c, _, _ in held})) + "\n")
        return ExitCode.FAILED
    return ExitCode.OK


def _cmd_sweep(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from nnemu.sweep import run_sweep_command

    if _refuse_outputs(err, _output_problem("--out", args.out, "results", directory=True)):
        return ExitCode.BAD_INPUT
    return run_sweep_command(
        args.experiment,
        out_dir=args.out,
        engine=args.engine,
        workers=args.workers,
        address=args.address,
        resume=args.resume,
        retry_failed=args.retry_failed,
        plot=args.plot,
        stdout=out,
        stderr=err,
    )


_COMMANDS = {
    "run": _cmd_run,
    "replay": _cmd_replay,
    "parse": _cmd_parse,
    "verify": _cmd_verify,
    "query": _cmd_query,
    "demo": _cmd_demo,
    "compare": _cmd_compare,
    "sweep": _cmd_sweep,
}


def _quiet_stdout() -> None:
    """Point stdout at /dev/null: the reader went away, and Python's exit-time flush must not complain."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is no real file (a test's StringIO)
        pass
    finally:
        os.close(devnull)


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line, parsed; ``nnemu query TRACE --json SQL`` reads SQL as the query.

    argparse gives an optional positional its (empty) value as soon as it passes it, so an
    option between ``TRACE`` and ``SQL`` would leave ``SQL`` unrecognised.
    """
    parser = _parser()
    args, extras = parser.parse_known_args(argv)
    if (
        getattr(args, "command", None) == "query"
        and args.sql is None
        and extras
        and not extras[0].startswith("-")
    ):
        args.sql = extras.pop(0)
    if extras:
        parser.error(f"unrecognized arguments: {' '.join(extras)}")
    return args


def main(
    argv: Sequence[str] | None = None, *, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Entry point of the ``nnemu`` console script; returns the exit code when called directly."""
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        try:
            args = _parse_args(argv)
        except SystemExit:
            # --help, --version: their text is still in stdout's buffer; a reader that has
            # gone is a broken pipe (141) here too, not Python's "Exception ignored" at exit.
            sys.stdout.flush()
            raise
        log_format = getattr(args, "log_format", "console")
        verbosity = getattr(args, "verbosity", 0)
        if args.command in _LOGGING_COMMANDS or log_format != "console" or verbosity:
            level = _LOG_LEVELS[verbosity]
            if args.command == "demo" and verbosity < 1:
                # A demo narrates its events; their log lines (printed as the run goes,
                # before the narration's title) are for -v.
                level = logging.CRITICAL
            configure_logging(log_format, err, level)
        try:
            code = _COMMANDS[args.command](args, out, err)
        except BaseExceptionGroup as group:
            # run_virtual already raises the one real error out of trio's groups; a group
            # that still gets here (a library hook, a future command) is acted on the same way.
            from nnemu._emulator import raise_unwrapped

            raise_unwrapped(group)
        out.flush()
        return code
    except ScenarioError as exc:
        for problem in exc.problems:
            err.write(f"{problem}\n")
        return ExitCode.BAD_INPUT
    except Interrupted as exc:
        err.write(f"{_line_end(err)}interrupted by {exc.signal_name}\n")
        return _exit_code_of(exc)
    except KeyboardInterrupt:
        err.write(f"{_line_end(err)}interrupted by SIGINT\n")
        return ExitCode.INTERRUPTED
    except Terminated:
        err.write(f"{_line_end(err)}interrupted by SIGTERM\n")
        return ExitCode.TERMINATED
    except BrokenPipeError:
        # The reader of stdout (``| head``) has gone: end quietly, as Unix tools do.
        _quiet_stdout()
        return ExitCode.BROKEN_PIPE
    except FileNotFoundError as exc:
        err.write(f"{exc.filename}: no such file\n")
        return ExitCode.BAD_INPUT
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as exc:
        err.write(f"{getattr(exc, 'filename', '')}: cannot read: {exc}\n")
        return ExitCode.BAD_INPUT
    except OSError as exc:
        # A write failed (a full disk, stdout on /dev/full): say so instead of a traceback.
        where = exc.filename or ("standard output" if exc.errno is not None else "")
        err.write(f"{where}: cannot write: {exc.strerror or exc}\n")
        if where == "standard output":
            _quiet_stdout()
        return ExitCode.BAD_INPUT
    except TraceFormatError as exc:  # replay's and verify's; parse and query say it alike
        err.write(f"{exc.where}: error: {exc.message}\n")
        return ExitCode.BAD_INPUT
    except NnemuError as exc:
        err.write(f"{exc}\n")
        return ExitCode.BAD_INPUT


def _line_end(err: TextIO) -> str:
    """A line break that ends what a terminal shows before a message (``^C``, a progress
    line); nothing when ``err`` is a file or a pipe, whose lines are whole."""
    try:
        return "\n" if err.isatty() else ""
    except (OSError, ValueError):
        return ""


def _terminate(signum: int, frame: object) -> None:
    raise Terminated


_LOST_SIGNALS: list[str] = []
"""Signals whose exception CPython could not raise (``_note_lost_signal``), in order."""


def _exit_terminated(signum: int, frame: object) -> None:
    """SIGTERM handler once ``console_main`` has its exit code: the outputs are written, so
    say so and exit 143 at once (raising, while Python shuts down, would only be ignored)."""
    os.write(2, b"interrupted by SIGTERM after the command's work: its outputs were written\n")
    os._exit(ExitCode.TERMINATED)


def _note_lost_signal(previous: Callable[[Any], object], unraisable: Any) -> None:
    """``sys.unraisablehook`` while the command line runs: a Ctrl-C (or SIGTERM) that lands in a
    callback CPython cannot raise from (a weakref's, such as the import system's module-lock
    cleanup; a ``__del__``) is noted for ``console_main`` to report as an interruption, not
    printed as ``Exception ignored in ... Traceback ... KeyboardInterrupt`` and forgotten.
    Anything else goes to ``previous``."""
    kind = unraisable.exc_type
    if isinstance(kind, type) and issubclass(kind, KeyboardInterrupt | Terminated):
        _LOST_SIGNALS.append("SIGINT" if issubclass(kind, KeyboardInterrupt) else "SIGTERM")
        return
    previous(unraisable)


def console_main() -> None:
    """The console script: exit with main()'s code (SIGTERM ends it like Ctrl-C, exit 143)."""
    import functools

    signal.signal(signal.SIGTERM, _terminate)
    sys.unraisablehook = functools.partial(_note_lost_signal, sys.unraisablehook)
    import nnemu

    try:
        if signal.getsignal(signal.SIGINT) is nnemu._exit_interrupted:
            # Loaded (nnemu/__init__.py): from here a Ctrl-C is a KeyboardInterrupt main() reports.
            signal.signal(signal.SIGINT, signal.default_int_handler)
        code = main()
    except KeyboardInterrupt:  # in the instant main() was ending (writing a message, returning)
        code = ExitCode.INTERRUPTED
    except Terminated:
        code = ExitCode.TERMINATED
    if _LOST_SIGNALS and code in (ExitCode.OK, ExitCode.FAILED):
        # The signal could not stop the command where it landed, so it ran to its end.
        name = _LOST_SIGNALS[0]
        with contextlib.suppress(OSError):
            sys.stderr.write(
                f"interrupted by {name} after the command's work: its outputs were written\n"
            )
            sys.stderr.flush()
        code = ExitCode.TERMINATED if name == "SIGTERM" else ExitCode.INTERRUPTED
    # Done: a Ctrl-C now must not turn the exit status into 130 with nothing said; a SIGTERM
    # while Python shuts down (~20 ms) exits 143 at once, not killed by the signal (-15).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _exit_terminated)
    _forget_unhandled_interrupt()
    sys.exit(code)


def _forget_unhandled_interrupt() -> None:
    """Clear CPython's note that a KeyboardInterrupt left an ``exec`` or ``eval`` of source text.

    A Ctrl-C while a class is built from source text (``dataclasses``, ``namedtuple``, during an
    import) leaves that note even though ``main`` caught the KeyboardInterrupt and said
    ``interrupted``; ``python -m nnemu`` would then end by SIGINT at exit (a parent sees -2, not
    130). Each exec of source text clears the note before it runs, so an empty one forgets it.
    """
    exec("")


if __name__ == "__main__":
    console_main()
