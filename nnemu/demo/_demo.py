"""``nnemu demo``: run a topic's scenario, record it, then narrate it step by step.

The whole run happens first, in virtual time (``nnemu._emulator.run_virtual``, so it
takes a fraction of a second and is deterministic); the narration and the pauses are
real I/O after it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import TextIO

import attrs
import trio
from rich.align import AlignMethod
from rich.cells import cell_len
from rich.console import Console
from rich.markup import escape
from rich.rule import Rule
from rich.text import Text

from nnemu._emulator import Emulator, build_model, build_report, open_emulator, run_virtual
from nnemu._text import counted
from nnemu.demo._record import CallLog, Mark, MarkRecorder, Note, Slice, describe
from nnemu.demo._topics import TOPICS, StepSpec, Topic
from nnemu.driver import CallbackRef, DriverService
from nnemu.errors import ExitCode
from nnemu.hal import ErrorStatus, ExecutionPreference, Model, Priority
from nnemu.ipc import Endpoint
from nnemu.report import Report
from nnemu.scenario import Scenario, load_scenario_text
from nnemu.sim import SimEvent, SimThread
from nnemu.tracer import TraceSink, open_trace_writer, raw_mark

SCENARIO_DIR: Traversable = resources.files("nnemu.demo") / "scenarios"
"""The demos' scenarios: package data (``nnemu/demo/scenarios/``), so an installed nnemu has them."""


def scenario_path(topic: Topic) -> str | None:
    """Where ``topic``'s scenario file is, for ``nnemu run`` (relative to the current directory
    when below it); None when the package is not on a file system (a zip)."""
    resource = SCENARIO_DIR / topic.scenario
    if not isinstance(resource, Path):
        return None
    try:
        return str(resource.relative_to(Path.cwd()))
    except ValueError:
        return str(resource)


def load_topic_scenario(topic: Topic) -> Scenario:
    """``topic``'s scenario, read through importlib.resources (works from any installation)."""
    resource = SCENARIO_DIR / topic.scenario
    source = scenario_path(topic) or f"nnemu/demo/scenarios/{topic.scenario}"
    return load_scenario_text(resource.read_text(encoding="utf-8"), source=source)


_EXECUTING = re.compile(r"PE\]|IPreparedModel::")
"""Sections worth a "running since" line at the start of a step: executions in progress."""

PROBE_START_NS = 50_000_000
"""When the VTS-style probe of the prepare demo starts (after the app is done)."""
PROBE_PROCESS = "vts_nnapi"
"""Process name of the probe (VtsHalNeuralnetworks is longer than a thread name may be)."""


@attrs.define
class DemoRun:
    """Everything a finished demo run left behind."""

    scenario: Scenario
    report: Report
    recorder: MarkRecorder
    notes: list[Note]
    roles: dict[int, str]
    """pid -> 'app <name>' / 'driver <device>' / 'vts'."""
    names: dict[str, int]
    """App, device and probe names -> pid."""
    facts: list[str]
    """Key results, one line each."""


# --------------------------------------------------------------------- the probe
class _Latch:
    """A client-side IPreparedModelCallback that counts its notifications."""

    def __init__(self, event: SimEvent) -> None:
        self.event = event
        self.calls: list[str] = []

    def notify(self, status: ErrorStatus, prepared: object) -> None:
        self.calls.append(status.name + (" + model" if prepared is not None else ", null model"))
        self.event.set(status)


def _invalid(model: Model) -> Model:
    """``model`` with its second operation reading an operand that does not exist."""
    main = model.main
    ops = list(main.operations)
    ops[1] = attrs.evolve(ops[1], inputs=(len(main.operands) + 5,))
    return attrs.evolve(model, main=attrs.evolve(main, operations=tuple(ops)))


async def _probe(emulator: Emulator, endpoint: Endpoint, facts: list[str]) -> None:
    """Direct IDevice calls the runtime never makes (VTS ValidationTest style)."""
    kernel, tracer, binder = emulator.kernel, emulator.tracer, emulator.binder
    services = {service.name: service for service in emulator.services}
    model = build_model(emulator.scenario.models[0])
    await kernel.sleep_until(PROBE_START_NS)

    async def prepare(service: DriverService, sent: Model, label: str) -> None:
        latch = _Latch(SimEvent(kernel))
        ref = CallbackRef(endpoint, latch.notify)
        preference = int(ExecutionPreference.FAST_SINGLE_ANSWER)
        with tracer.section(raw_mark(f"VtsValidation::prepareModel_1_3({label})")):
            launch = await binder.call(
                service.endpoint,
                "IDevice",
                "prepareModel_1_3",
                lambda: service.prepareModel_1_3(
                    sent, preference, int(Priority.MEDIUM), None, (), (), b"\0" * 32, ref
                ),
            )
            await latch.event.wait()
        await kernel.sleep(1_000_000)  # a late second notify would have arrived by now
        facts.append(
            f"probe {label} -> {service.name}: launch returned {describe(launch)}; "
            f"callback notified {len(latch.calls)}x: {', '.join(latch.calls)}"
        )

    await prepare(services["npu"], _invalid(model), "invalid model")
    await prepare(services["conv-dsp"], model, "whole model")


# ------------------------------------------------------------------- the run
def _run(
    topic: Topic, scenario: Scenario, sinks: list[TraceSink], *, handle_signals: bool
) -> DemoRun:
    recorder = MarkRecorder()
    facts: list[str] = []

    async def main() -> DemoRun:
        async with open_emulator(
            scenario, sinks=[recorder, *sinks], keep_executions=True
        ) as emulator:
            log = CallLog(emulator.kernel)
            log.install(emulator.binder, emulator.services)
            roles = {app.process.pid: f"app {app.spec.name}" for app in emulator.apps}
            names = {app.spec.name: app.process.pid for app in emulator.apps}
            for service in emulator.services:
                roles[service.process.pid] = f"driver {service.name}"
                names[service.name] = service.process.pid
            async with trio.open_nursery() as nursery:
                if topic.probe:
                    table = emulator.services[0].process.table
                    process = table.spawn(PROBE_PROCESS, 1000)
                    endpoint = Endpoint(emulator.kernel, process, 1)
                    emulator.tracer.process(process.pid, process.name)
                    roles[process.pid] = "vts"
                    names["vts"] = process.pid
                    emulator.kernel.spawn(
                        nursery, _probe, emulator, endpoint, facts, thread=process.main_thread
                    )
                await emulator.run()
                nursery.cancel_scope.cancel()
            log.add_device_history(emulator.services)
            report = build_report(emulator)
            facts[:0] = _facts(emulator)
            return DemoRun(scenario, report, recorder, log.notes, roles, names, facts)

    # The demo drives its own world (the probe needs a task in it), under the same
    # virtual clock and signal handling as nnemu.run.
    return run_virtual(main, handle_signals=handle_signals)


def _facts(emulator: Emulator) -> list[str]:
    lines = []
    for app in emulator.apps:
        stats = app.stats
        if stats.compile_result.name != "NO_ERROR":
            lines.append(f"app {app.spec.name}: compilation {stats.compile_result.name}")
            continue
        errors = ", ".join(f"{code} x{n}" for code, n in sorted(stats.errors.items()))
        latency = f", max latency {stats.latency.max_us / 1000:.3f} ms" if stats.completed else ""
        lines.append(
            f"app {app.spec.name}: {stats.completed}/{stats.submitted} completed"
            + (f", failed: {errors}" if errors else "")
            + latency
        )
    for service in emulator.services:
        s = service.device.stats
        extra = [
            f"{label} {value}"
            for label, value in (
                ("preemptions", s.preemptions),
                ("rejected PERSISTENT (estimate)", s.rejected_persistent),
                ("rejected TRANSIENT (estimate)", s.rejected_transient),
                ("aborted at a checkpoint", s.deadline_aborts),
            )
            if value
        ]
        state = "" if service.endpoint.alive else ", process dead"
        lines.append(
            f"device {service.name} (HAL {service.version.value}): "
            f"{counted(s.executions, 'execution')}" + "".join(f", {item}" for item in extra) + state
        )
    cpu = sum(app.runtime.cpu_stats.executions for app in emulator.apps)
    if cpu:
        lines.append(f"device nnapi-reference (runtime CPU): {counted(cpu, 'execution')}")
    return lines


# -------------------------------------------------------------- the narration
def _window(run: DemoRun, step: StepSpec) -> tuple[int, int]:
    start, end = _anchor(run, step)
    return start, end + round(step.extend_ms * 1e6) if end >= start else end


def _anchor(run: DemoRun, step: StepSpec) -> tuple[int, int]:
    pid = run.names[step.process]
    pattern = re.compile(step.anchor)
    found = [s for s in run.recorder.slices if s.thread.pid == pid and pattern.search(s.name)]
    found.sort(key=lambda s: (s.start_ns, s.end_ns))
    if not found:
        return 0, -1
    if step.span_all:
        return found[0].start_ns, max(s.end_ns for s in found)
    if step.at_ms is not None:
        at = round(step.at_ms * 1e6)
        found = [s for s in found if s.start_ns <= at <= s.end_ns] or found
        return found[0].start_ns, found[0].end_ns
    chosen = found[step.occurrence] if -len(found) <= step.occurrence < len(found) else found[-1]
    return chosen.start_ns, chosen.end_ns


def _ms(ts_ns: int) -> str:
    return f"t={ts_ns / 1e6:8.3f} ms"


def _who(run: DemoRun, thread: SimThread) -> str:
    return f"{thread.name:<15} ({run.roles.get(thread.pid, '?')})"


def _step_lines(run: DemoRun, step: StepSpec) -> list[str]:
    start, end = _window(run, step)
    if end < start:
        return ["(nothing recorded for this step)"]
    pids = {run.names[name] for name in step.processes} if step.processes else None
    show = re.compile(step.show)

    def wanted(thread: SimThread | None) -> bool:
        return thread is None or pids is None or thread.pid in pids

    def wanted_pid(pid: int) -> bool:
        return pids is None or pid in pids

    notes: dict[tuple[int, int, int, str], list[str]] = {}
    loose: list[Note] = []
    for note in run.notes:
        if not start <= note.ts_ns <= end or not wanted_pid(note.pid):
            continue
        if note.thread is None:
            loose.append(note)
        else:
            key = (note.ts_ns, note.thread.pid, note.thread.tid, note.key)
            notes.setdefault(key, []).append(note.text)

    lines: list[str] = []
    running: Iterable[Slice] = (
        s
        for s in run.recorder.slices
        if s.start_ns < start < s.end_ns
        and wanted(s.thread)
        and show.search(s.name)
        and _EXECUTING.search(s.name)
    )
    for s in sorted(running, key=lambda s: (s.start_ns, s.thread.tid)):
        lines.append(
            f"{_ms(start)}  {_who(run, s.thread)}  … {s.name}  (running since {_ms(s.start_ns)[2:]})"
        )
    items: list[tuple[int, int, str]] = []
    for note in loose:
        items.append((note.ts_ns, -1, f"{_ms(note.ts_ns)}  {note.key} {note.text}"))
    for mark in run.recorder.marks:
        # Begins in [start, end), ends in (start, end]: the next step's first mark stays out.
        inside = start <= mark.ts_ns < end if mark.name is not None else start < mark.ts_ns <= end
        if not inside or not wanted(mark.thread):
            continue
        line = _mark_line(run, mark, notes, show)
        if line is not None:
            items.append((mark.ts_ns, mark.seq, line))
    items.sort()
    lines.extend(text for _, _, text in items)
    if len(lines) > step.max_lines:
        hidden = len(lines) - step.max_lines
        lines = [*lines[: step.max_lines], f"… {hidden} more marks in the trace"]
    return lines


def _mark_line(
    run: DemoRun,
    mark: Mark,
    notes: dict[tuple[int, int, int, str], list[str]],
    show: re.Pattern[str],
) -> str | None:
    key = (mark.ts_ns, mark.thread.pid, mark.thread.tid, mark.opened)
    prefix = f"{_ms(mark.ts_ns)}  {_who(run, mark.thread)}  "
    if mark.name is None:
        # Ends are shown only where they carry a value (a HIDL call returning).
        if mark.opened.endswith("::client") and "notify" not in mark.opened and key in notes:
            return prefix + f"E {mark.opened}  -> " + "; ".join(notes.pop(key))
        return None
    if not show.search(mark.name):
        return None
    extra = ""
    if "notify" in mark.name and key in notes:
        extra = "  " + "; ".join(notes.pop(key))
    return prefix + f"B {mark.name}{extra}"


def _trace_name(topic: Topic) -> str:
    return f"nnemu-demo-{topic.name}.html"


def run_topic(topic: Topic, out_dir: Path, *, handle_signals: bool = False) -> tuple[DemoRun, Path]:
    """Run ``topic``'s scenario (plus its probe), writing the trace into ``out_dir``.

    ``handle_signals`` (the CLI) stops the run cleanly on SIGINT/SIGTERM: the trace is
    closed well formed and ``nnemu.errors.Interrupted`` is raised.
    """
    scenario = load_topic_scenario(topic)
    path = out_dir / _trace_name(topic)
    writer: TraceSink = open_trace_writer(path)
    return _run(topic, scenario, [writer], handle_signals=handle_signals), path


class _Console(Console):
    """rich's console, but a closed pipe (``| head``) ends the command as everywhere else in nnemu.

    rich exits with status 1 on a broken pipe; the CLI's own handling gives 141, quietly.
    """

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


def _list_topics(console: Console) -> None:
    console.print("Topics (nnemu demo TOPIC):")
    for topic in TOPICS.values():
        console.print(f"  {topic.name:<16} {escape(topic.teaches)}")


def run_demo_command(
    topic: str | None,
    *,
    out_dir: str | os.PathLike[str] | None,
    pause: bool,
    stdin: TextIO,
    stdout: TextIO,
    stderr: TextIO | None = None,
) -> int:
    """The ``nnemu demo`` command; returns the exit code.

    Args:
        topic: A topic name; None lists the topics.
        out_dir: Where the trace goes (default: the current directory).
        pause: Wait for Enter on ``stdin`` between steps (stops waiting at end of input).
        stdin: Where Enter is read.
        stdout: Where the narration is printed (with colour only on a terminal).
        stderr: Where an unknown topic (with the list) or an output directory that cannot be
            made is reported (default: ``stdout``).

    Raises:
        Interrupted: SIGINT or SIGTERM stopped the run (the trace is closed well formed;
            nothing is narrated).
    """
    console = _Console(file=stdout, highlight=False, soft_wrap=True, emoji=False)
    if topic is None:
        _list_topics(console)
        return ExitCode.OK
    errors = (
        console
        if stderr is None
        else _Console(file=stderr, highlight=False, soft_wrap=True, emoji=False)
    )
    chosen = TOPICS.get(topic)
    if chosen is None:
        errors.print(f"unknown demo topic {escape(repr(topic))}")
        _list_topics(errors)
        return ExitCode.BAD_INPUT
    directory = Path(out_dir) if out_dir is not None else Path.cwd()
    try:  # made if missing, as --plots and sweep --out are
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        errors.print(
            f"{escape(str(directory))}: cannot write the trace: {escape(str(exc.strerror))}"
        )
        return ExitCode.BAD_INPUT
    run, trace = run_topic(chosen, directory, handle_signals=True)
    _narrate(console, chosen, run, trace, pause=pause, stdin=stdin)
    return ExitCode.OK


def _heading(console: Console, title: str, *, align: AlignMethod = "center") -> None:
    """``title`` (console markup) in a rule across the console; one too long for the rule
    (which would cut it short with an ellipsis) is printed whole, above a plain rule."""
    if cell_len(Text.from_markup(title).plain) + 6 <= console.width:
        console.print(Rule(title, align=align))
        return
    console.print(title)
    console.print(Rule())


def _narrate(
    console: Console, topic: Topic, run: DemoRun, trace: Path, *, pause: bool, stdin: TextIO
) -> None:
    _heading(console, f"[bold]nnemu demo {escape(topic.name)}: {escape(topic.title)}[/bold]")
    console.print(escape(topic.intro))
    console.print(
        "Each line: virtual time, emulated thread (its process), B = a trace mark begins, "
        "E = a HIDL call returns (with what it returned)."
    )
    waiting = pause
    for index, step in enumerate(topic.steps, 1):
        if waiting:
            console.print("[dim]\\[Enter] next step[/dim]", end="")
            waiting = stdin.readline() != ""
            console.print()
        _heading(console, f"Step {index}/{len(topic.steps)}: {escape(step.title)}", align="left")
        console.print(f"[italic]{escape(step.text)}[/italic]")
        for line in _step_lines(run, step):
            console.print(escape(line))
    _heading(console, "What happened", align="left")
    for fact in run.facts:
        console.print(f"  {escape(fact)}")
    held = all(result.passed for result in run.report.expectations)
    console.print(
        f"\nTrace written to {escape(str(trace))} (open it in Perfetto UI, or "
        f"`nnemu parse {escape(str(trace))}`)."
    )
    console.print(
        f"Reproduce it: nnemu run {escape(scenario_path(topic) or topic.scenario)} "
        f"({len(run.report.expectations)} expectations, "
        + ("all held" if held else "SOME FAILED")
        + ")"
        + (
            "; the VTS-style probe calls are the demo's own (a scenario cannot describe "
            "an invalid model)."
            if topic.probe
            else "."
        )
    )
