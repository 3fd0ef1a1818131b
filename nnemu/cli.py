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
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from nnemu.errors import (
    ExitCode,
    Interrupted,
    NnemuError,
    ScenarioError,
    Terminated,
    TraceFormatError,
)

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
    """``--set KEY=VALUE`` (repeatable), read by ``nnemu.overrides`` in ``run``, ``replay`` and
    ``verify``."""
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
    _add_set(verify, "change the scenario before the run, as nnemu run --set (repeatable)")


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


def _cmd_run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from nnemu._run_command import run_run_command

    return run_run_command(args, out, err)


def _cmd_replay(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from nnemu._outputs import (
        Role,
        clash_problems,
        executions_output_problem,
        output_problem,
        refuse_outputs,
    )
    from nnemu.replay import run_replay_command

    if refuse_outputs(
        err,
        output_problem("--trace", args.trace_out, "trace"),
        output_problem("--report", args.report, "report"),
        output_problem("--save-scenario", args.save_scenario, "scenario"),
        executions_output_problem(args.executions),
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
    from nnemu._outputs import Role, clash_problems, output_problem, refuse_outputs
    from nnemu.verify import run_verify_command

    if refuse_outputs(
        err,
        output_problem("--trace", args.trace, "trace"),
        *clash_problems([Role(args.scenario, "scenario"), Role(args.trace, "trace", "--trace")]),
    ):
        return ExitCode.BAD_INPUT
    return run_verify_command(
        args.scenario, seed=args.seed, trace=args.trace, stdout=out, stderr=err, sets=args.set
    )


def _cmd_query(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from nnemu._outputs import Role, clash_problems, output_problem, refuse_outputs
    from nnemu.query import run_query_command

    if refuse_outputs(
        err,
        output_problem("--db", args.db, "database"),
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
    from nnemu._outputs import output_problem, refuse_outputs
    from nnemu.demo import run_demo_command

    if refuse_outputs(err, output_problem("--out", args.out, "trace", directory=True)):
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
    from nnemu.compare import run_compare_command

    return run_compare_command(
        args.a, args.b, metrics=args.metrics, fail_if=args.fail_if, stdout=out, stderr=err
    )


def _cmd_sweep(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from nnemu._outputs import output_problem, refuse_outputs
    from nnemu.sweep import run_sweep_command

    if refuse_outputs(err, output_problem("--out", args.out, "results", directory=True)):
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
