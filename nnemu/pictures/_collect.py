"""What the pictures show, taken out of a finished emulator as frozen values.

``collect`` reads the per-execution records a run keeps when it is asked to
(``run(..., keep_executions=True, inspect=...)``: ``app.records``,
``device.history``) and turns them into plain numbers, so the writers never touch
the emulator and another command (replay, a notebook) can build the same pictures
from the same values.

Each device job records the stretches it ran on a compute unit
(``Job.segments``: start, end, unit), so preempted jobs are drawn exactly.
"""

from __future__ import annotations

import collections
import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import attrs

from nnemu.scenario import CPU_DEVICE_NAME, DeviceSpec, RetrySpec, WorkloadKind, WorkloadSpec
from nnemu.tracer import Layer, Phase

if TYPE_CHECKING:
    from nnemu._emulator import Emulator
    from nnemu.driver import Job
    from nnemu.parser import ParseResult, RunStats
    from nnemu.pictures._layer_sink import LayerSink
    from nnemu.tracer import TraceSink


@attrs.frozen(kw_only=True)
class JobPicture:
    """One execution on a device, as drawn on its timeline."""

    app: str
    """Name of the app that issued it (``uid:<n>`` if no app has its uid)."""
    priority: str
    """Priority of the prepared model (``LOW``, ``MEDIUM``, ``HIGH``)."""
    arrived_ns: int
    """When it reached the device."""
    started_ns: int | None
    """When it first got a unit (None: still waiting when the run ended)."""
    finished_ns: int
    """When it left the device (the end of the run if it had not)."""
    segments: tuple[tuple[int, int, int], ...]
    """(start_ns, end_ns, lane) of each stretch it held a unit, in time order."""
    preempted: int
    """How many times it yielded its unit."""
    status: str
    """How it ended: ``NONE``, ``MISSED_DEADLINE_TRANSIENT``, ...; ``IN_FLIGHT`` if it had not."""
    deadline_ns: int | None
    """Its absolute deadline, if any."""

    @property
    def deadline_missed(self) -> bool:
        """Aborted for its deadline, or finished after it."""
        if self.status.startswith("MISSED_DEADLINE"):
            return True
        return self.deadline_ns is not None and self.finished_ns > self.deadline_ns


@attrs.frozen(kw_only=True)
class DevicePicture:
    """One device's jobs."""

    name: str
    """Device name."""
    units: int
    """Compute units (timeline lanes)."""
    preemption: str
    """Preemption kind of the device (``none``, ``checkpoint``, ``restart``)."""
    jobs: tuple[JobPicture, ...]
    """Every job that reached the device, in arrival order."""


@attrs.frozen(kw_only=True)
class ResultPicture:
    """One final result of an app's execution that was not ``NO_ERROR``."""

    arrival_ns: int
    """When the execution was submitted."""
    finished_ns: int
    """When the app got the result."""
    code: str
    """Result code name (``MISSED_DEADLINE_PERSISTENT``, ...)."""


@attrs.frozen(kw_only=True)
class ExecutionPicture:
    """One execution as its app saw it, from arrival to the final result."""

    arrival_ns: int
    """When the frame arrived (was submitted)."""
    started_ns: int | None
    """When its final attempt first started running on a device (or the runtime's CPU path);
    None if it never did (refused, rejected, or failed before any compute)."""
    finished_ns: int
    """When the app got the final result."""
    code: str
    """Final result code (``NO_ERROR``, ``MISSED_DEADLINE_TRANSIENT``, ...)."""
    late: bool
    """A ``NO_ERROR`` result that came after its deadline."""

    @property
    def deadline_missed(self) -> bool:
        """Refused or aborted for its deadline, or completed after it (the report's count)."""
        return self.late or self.code.startswith("MISSED_DEADLINE")


@attrs.frozen(kw_only=True)
class FaultPicture:
    """One injected fault of the scenario that has a time window."""

    device: str
    """Device it is injected into."""
    kind: str
    """``crash``, ``busy``, ``offline`` or ``slowdown`` (``transient_failure``: the whole run)."""
    start_ns: int
    """When it starts."""
    end_ns: int | None
    """When it ends (None: never; a crash lasts to the end of the run)."""
    factor: float
    """Slow-down factor (``slowdown``), else 1."""


@attrs.frozen(kw_only=True)
class AppPicture:
    """One app's executions."""

    name: str
    """App name."""
    uid: int
    """Linux uid."""
    priority: str
    """Compilation priority (``LOW``, ``MEDIUM``, ``HIGH``)."""
    latencies_ns: tuple[int, ...]
    """Arrival to completion of each completed execution, in completion order."""
    codes: tuple[tuple[str, int], ...]
    """(result code, count) of the final results, most frequent first."""
    failures: tuple[ResultPicture, ...]
    """Every final result other than ``NO_ERROR``, in completion order."""
    executions: tuple[ExecutionPicture, ...] = ()
    """Every execution that got a final result, in arrival order (dropped frames have none)."""
    timeout_ns: int | None = None
    """The execution timeout the app sets (its deadline after arrival), if any."""


@attrs.frozen(kw_only=True)
class RunPictures:
    """Everything the HTML page and the PNG figures draw."""

    scenario: str
    """Scenario name."""
    seed: int
    """Seed of the run."""
    end_ns: int
    """Virtual time at the end of the run."""
    apps: tuple[AppPicture, ...]
    """Apps in scenario order."""
    devices: tuple[DevicePicture, ...]
    """Driver devices in scenario order."""
    cpu: DevicePicture | None = None
    """The runtime's CPU path (``nnapi-reference``): each CPU execution a job, one lane per
    execution running at once (they run on the calling app threads)."""
    faults: tuple[FaultPicture, ...] = ()
    """The scenario's fault windows, by start time."""
    why: WhyPicture | None = None
    """What the page's "Why" section reads (configuration, CPU path, per-layer table)."""


def _device_picture(
    name: str,
    units: int,
    preemption: str,
    history: Iterable[Job],
    apps: dict[int, str],
    end_ns: int,
) -> DevicePicture:
    pictures = []
    for job in history:
        stretches = list(job.segments)
        if job.unit >= 0:  # still on its unit when the run stopped
            stretches.append((job._segment_start, end_ns, job.unit))
        status = "IN_FLIGHT" if job.status is None else job.status.name
        pictures.append(
            JobPicture(
                app=apps.get(job.uid, f"uid:{job.uid}"),
                priority=job.priority.name,
                arrived_ns=job.arrived_ns or 0,
                started_ns=job.started_ns,
                finished_ns=job.finished_ns if job.finished_ns is not None else end_ns,
                segments=tuple(stretches),
                preempted=job.preempted,
                status=status,
                deadline_ns=job.deadline_ns,
            )
        )
    return DevicePicture(name=name, units=units, preemption=preemption, jobs=tuple(pictures))


def _cpu_picture(
    runs: list[tuple[str, tuple[int, int, str, int | None]]], end_ns: int
) -> DevicePicture:
    """The runtime's CPU path as a device: a lane per CPU execution running at once."""
    lanes_free_at: list[int] = []
    jobs = []
    for app, (start, end, code, deadline) in sorted(runs, key=lambda run: (run[1][0], run[0])):
        lane = next((i for i, free in enumerate(lanes_free_at) if free <= start), None)
        if lane is None:
            lane = len(lanes_free_at)
            lanes_free_at.append(0)
        lanes_free_at[lane] = end
        jobs.append(
            JobPicture(
                app=app,
                priority="-",
                arrived_ns=start,
                started_ns=start,
                finished_ns=end if code != "IN_FLIGHT" else end_ns,
                segments=((start, end, lane),),
                preempted=0,
                status=code,
                deadline_ns=deadline,
            )
        )
    return DevicePicture(
        name=CPU_DEVICE_NAME,
        units=max(1, len(lanes_free_at)),
        preemption="none",
        jobs=tuple(jobs),
    )


def _faults(emulator: Emulator, end_ns: int) -> tuple[FaultPicture, ...]:
    faults = []
    for device in emulator.scenario.devices:
        for fault in device.faults:
            start = 0 if fault.at_ms is None else round(fault.at_ms * 1e6)
            if start > end_ns:
                continue  # after the run ended: it never happened
            faults.append(
                FaultPicture(
                    device=device.name,
                    kind=fault.kind.value,
                    start_ns=start,
                    end_ns=None if fault.until_ms is None else round(fault.until_ms * 1e6),
                    factor=fault.factor,
                )
            )
    return tuple(sorted(faults, key=lambda f: (f.start_ns, f.device, f.kind)))


def collect(emulator: Emulator) -> RunPictures:
    """Take the pictures' data out of a finished emulator (``run``'s ``inspect`` hook, with
    ``keep_executions=True``; or ``open_emulator(..., keep_executions=True)``).

    Raises:
        ValueError: the emulator kept no per-execution records.
    """
    end_ns = emulator.kernel.clock_ns
    uids: dict[int, str] = {}
    for app in emulator.apps:
        uids.setdefault(app.spec.uid, app.spec.name)
    devices = []
    for service in emulator.services:
        device = service.device
        devices.append(
            _device_picture(
                service.name,
                device.units,
                device.preemption.value,
                device.history or (),
                uids,
                end_ns,
            )
        )
    apps = []
    cpu_runs: list[tuple[str, tuple[int, int, str, int | None]]] = []
    for app in emulator.apps:
        if app.records is None:
            msg = (
                "collect() needs per-execution records:"
                " call it from run(..., keep_executions=True, inspect=...)"
            )
            raise ValueError(msg)
        name = app.spec.name
        runs = app.runtime.cpu_history or []
        cpu_runs += [(name, run) for run in runs]
        counts: dict[str, int] = {}
        latencies = []
        failures = []
        for record in app.records:
            code = record.code.name
            counts[code] = counts.get(code, 0) + 1
            if code == "NO_ERROR":
                latencies.append(record.finished_ns - record.arrival_ns)
            else:
                failures.append(
                    ResultPicture(
                        arrival_ns=record.arrival_ns, finished_ns=record.finished_ns, code=code
                    )
                )
        records = sorted(app.records, key=lambda r: (r.arrival_ns, r.finished_ns))
        timeouts = {r.timeout_ns for r in records if r.timeout_ns is not None}
        apps.append(
            AppPicture(
                name=name,
                uid=app.spec.uid,
                priority=app.spec.priority.name,
                latencies_ns=tuple(latencies),
                codes=tuple(sorted(counts.items(), key=lambda item: (-item[1], item[0]))),
                failures=tuple(failures),
                executions=tuple(
                    ExecutionPicture(
                        arrival_ns=r.arrival_ns,
                        started_ns=r.device_start_ns,
                        finished_ns=r.finished_ns,
                        code=r.code.name,
                        late=r.code.name == "NO_ERROR"
                        and r.deadline_ns is not None
                        and r.finished_ns > r.deadline_ns,
                    )
                    for r in records
                ),
                timeout_ns=min(timeouts) if timeouts else None,
            )
        )
    return RunPictures(
        scenario=emulator.scenario.name,
        seed=emulator.scenario.seed,
        end_ns=end_ns,
        apps=tuple(apps),
        devices=tuple(devices),
        cpu=_cpu_picture(cpu_runs, end_ns),
        faults=_faults(emulator, end_ns),
        why=why_picture(emulator),
    )


# ---------------------------------------------------------------- the "Why" section
# What the page's "Why" section (``nnemu.pictures._why``) reads besides the report: each
# device's configuration as the scenario gives it, the runtime's CPU path, each app's
# settings, and the NNAPI per-layer table of the run's trace (what ``nnemu parse`` prints).

LAYER_COLUMNS = (
    "Initialization",
    "Preparation",
    "Compilation",
    "I/O",
    "Compute",
    "Results",
    "Ex. total",
    "Termination",
    "Total",
)
"""Columns of the per-layer table, as ``nnemu parse`` heads them."""


@attrs.frozen(kw_only=True)
class FaultConfig:
    """One fault the scenario injects into a device."""

    kind: str
    """``crash``, ``busy``, ``offline``, ``transient_failure`` or ``slowdown``."""
    at_ms: float | None
    """When it starts (virtual ms), if it has a start."""
    until_ms: float | None
    """When it ends (None: never, or a kind without a window)."""
    probability: float | None
    """Per-execution probability (``transient_failure``)."""
    factor: float
    """Slow-down factor (``slowdown``; 1 otherwise)."""


@attrs.frozen(kw_only=True)
class DeviceConfig:
    """A driver device's configuration, as the scenario gives it."""

    name: str
    """Device name."""
    hal_version: str
    """HIDL interface version (``1.0`` .. ``1.3``)."""
    type: str
    """Device type (``ACCELERATOR``, ``GPU``, ``CPU``, ...)."""
    scheduler: str
    """Order of waiting executions (``fifo``, ``per_app_priority``, ``global_priority``)."""
    preemption: str
    """Preemption of running lower-priority work (``none``, ``checkpoint``, ``restart``)."""
    deadline_policy: str
    """``abort`` (refuse or stop what cannot make its deadline) or ``ignore``."""
    queue_limit: int | None
    """Most executions waiting for a unit (None: unbounded)."""
    compute_units: int
    """Executions the device runs at once."""
    performance: tuple[tuple[str, float, float], ...]
    """(operand kind, exec_time ratio, power_usage ratio) for ``float32`` and ``quant8``."""
    launch_us: float
    """Driver overhead per execution before its first operation."""
    jitter: float
    """Log-normal sigma of each execution's compute time (0: deterministic)."""
    faults: tuple[FaultConfig, ...]
    """Injected faults, in scenario order."""
    binder_threads: int = 4
    """Binder threads of the driver's process: synchronous calls at once (docs/qos.md)."""


@attrs.frozen(kw_only=True)
class CpuConfig:
    """The runtime's CPU path (``nnapi-reference``): it runs on each calling thread."""

    ns_per_mac: float
    """Cost of a multiply-accumulate."""
    ns_per_element: float
    """Cost of an element of an elementwise operation."""


@attrs.frozen(kw_only=True)
class AppConfig:
    """An app's settings that bear on its latency, as the scenario gives them."""

    name: str
    """App name."""
    priority: str
    """Compilation priority (``LOW``, ``MEDIUM``, ``HIGH``)."""
    execution_mode: str
    """``sync``, ``async``, ``fenced`` or ``burst``."""
    threads: int
    """Executor threads: how many of its executions the app has under way at once."""
    workload: str
    """Arrival process in a few words (``periodic 33.3 ms``, ``closed_loop think 5 ms``)."""
    timeout_ms: float | None
    """Execution deadline relative to its start (None: none)."""
    devices: tuple[str, ...] | None
    """Devices the app asks for (None: the runtime chooses)."""
    retry: str
    """Retry policy of TRANSIENT errors in a few words (``up to 6 retries, back-off 2 ms
    x2``), or ``none``."""
    cpu_executions: int
    """Executions (or partitions) of this app that ran on the runtime's CPU path."""


@attrs.frozen(kw_only=True)
class LayerRow:
    """One row of the per-layer table: a layer (or ``Total``) and its cells as printed."""

    layer: str
    """``Application``, ``Runtime``, ``IPC``, ``Driver``, ``CPU`` or ``Total``."""
    cells: tuple[str, ...]
    """One per ``LAYER_COLUMNS``, as ``nnemu parse`` prints them (``-``, ``n/a``, ``*``)."""


@attrs.frozen(kw_only=True)
class LayerRun:
    """The per-layer table of one run of one client process."""

    pid: str
    """Process id of the client."""
    process_name: str
    """Its name, as the trace gives it."""
    ordinal: tuple[int, int]
    """(k, n): this is the k-th of the process's n runs."""
    starting_mark: str
    """The trace row that started the run (``B|pid|[NN_LA_PO]...``)."""
    executions: int
    """Executions the run counted."""
    rows: tuple[LayerRow, ...]
    """The table's layer rows, then ``Total``."""


@attrs.frozen(kw_only=True)
class LayerTables:
    """The NNAPI per-layer timing tables of a run's trace, or why there are none."""

    source: str
    """Which trace was parsed (the ``--trace`` file, or the run's systrace parsed in memory)."""
    runs: tuple[LayerRun, ...] = ()
    """One table per (client process, run), in the order the runs started."""
    warnings: tuple[str, ...] = ()
    """The parser's diagnostics (``line N: message``)."""
    problem: str | None = None
    """Why no table could be built (None: the tables are there)."""


@attrs.frozen(kw_only=True)
class WhyPicture:
    """Everything the "Why" section reads besides the report."""

    devices: tuple[DeviceConfig, ...]
    """Driver devices in scenario order."""
    cpu: CpuConfig
    """The runtime's CPU path."""
    apps: tuple[AppConfig, ...]
    """Apps in scenario order."""
    layers: LayerTables | None = None
    """The per-layer tables (None: not built; ``with_layer_tables`` adds them)."""


def _workload_text(spec: WorkloadSpec) -> str:
    kind = spec.kind.value
    if spec.kind is WorkloadKind.PERIODIC:
        return f"{kind} {spec.period_ms:g} ms"
    if spec.kind is WorkloadKind.POISSON:
        return f"{kind} {spec.rate_hz:g} Hz"
    if spec.kind is WorkloadKind.CLOSED_LOOP:
        return f"{kind} think {spec.think_ms:g} ms"
    if spec.kind is WorkloadKind.BURST:
        return f"{kind} {spec.burst_size} every {spec.burst_interval_ms:g} ms"
    return f"{kind} {len(spec.arrivals_ms)} arrivals"


def _retry_text(spec: RetrySpec) -> str:
    if not spec.max_attempts:
        return "none"
    plural = "y" if spec.max_attempts == 1 else "ies"
    return (
        f"up to {spec.max_attempts} retr{plural}, back-off {spec.backoff_ms:g} ms"
        f" x{spec.backoff_factor:g}"
    )


def _device_config(spec: DeviceSpec, binder_threads: int) -> DeviceConfig:
    perf = spec.performance
    return DeviceConfig(
        name=spec.name,
        binder_threads=binder_threads,
        hal_version=spec.hal_version.value,
        type=spec.type.name,
        scheduler=spec.scheduler.value,
        preemption=spec.preemption.value,
        deadline_policy=spec.deadline_policy.value,
        queue_limit=spec.queue_limit,
        compute_units=spec.compute_units,
        performance=(
            ("float32", perf.float32.exec_time, perf.float32.power_usage),
            ("quant8", perf.quant8.exec_time, perf.quant8.power_usage),
        ),
        launch_us=spec.cost.launch_us,
        jitter=spec.cost.jitter,
        faults=tuple(
            FaultConfig(
                kind=fault.kind.value,
                at_ms=fault.at_ms,
                until_ms=fault.until_ms,
                probability=fault.probability,
                factor=fault.factor,
            )
            for fault in spec.faults
        ),
    )


def why_picture(emulator: Emulator) -> WhyPicture:
    """The "Why" section's values of an emulator (its scenario and the runtimes' CPU paths)."""
    scenario = emulator.scenario
    apps = tuple(
        AppConfig(
            name=app.spec.name,
            priority=app.spec.priority.name,
            execution_mode=app.spec.execution_mode.value,
            threads=app.spec.threads,
            workload=_workload_text(app.spec.workload),
            timeout_ms=app.spec.execution_timeout_ms,
            devices=app.spec.devices,
            retry=_retry_text(app.spec.retry),
            cpu_executions=app.runtime.cpu_stats.executions,
        )
        for app in emulator.apps
    )
    return WhyPicture(
        devices=tuple(
            _device_config(service.device.spec, len(service.endpoint.pool.threads))
            for service in emulator.services
        ),
        cpu=CpuConfig(
            ns_per_mac=scenario.cpu.ns_per_mac, ns_per_element=scenario.cpu.ns_per_element
        ),
        apps=apps,
    )


def _cell(value: float) -> str:
    """A table value as ``nnemu parse`` prints it: two decimals, ``-`` for 0, ``n/a`` for none."""
    text = f" {value:.2f}".replace(" 0.00", " -").replace(" nan", " n/a")
    return text.strip()


def _layer_run(run: RunStats, ordinal: tuple[int, int]) -> LayerRun:
    """The rows of ``run``'s table, from the values Android's parser fills its template with."""
    from nnemu.parser import LAYER_TOTAL, template_inputs

    values = template_inputs(run)
    layers: list[Layer] = [layer for layer in _TABLE_ROWS if layer is not Layer.CPU]
    if any(values[f"{Layer.CPU.value}_{key}"] > 0.0 for key in _CPU_KEYS):
        layers.append(Layer.CPU)  # as the parser: a CPU row only when the CPU path ran
    rows = []
    for layer in layers:
        cells = [_cell(values[f"{layer.value}_{key}"]) for key in _COLUMN_KEYS]
        if layer is Layer.APPLICATION:
            cells[-1] += "*"
        rows.append(LayerRow(layer=_LAYER_NAMES[layer], cells=tuple(cells)))
    total = tuple(_cell(values[f"{LAYER_TOTAL}_{key}"]) + "*" for key in _COLUMN_KEYS)
    rows.append(LayerRow(layer="Total", cells=total))
    return LayerRun(
        pid=run.pid,
        process_name=run.process_name,
        ordinal=ordinal,
        starting_mark=run.starting_mark,
        executions=run.execution_counts.get(Phase.OVERALL, 0),
        rows=tuple(rows),
    )


_TABLE_ROWS = (Layer.APPLICATION, Layer.RUNTIME, Layer.IPC, Layer.DRIVER, Layer.CPU)
_LAYER_NAMES = {
    Layer.APPLICATION: "Application",
    Layer.RUNTIME: "Runtime",
    Layer.IPC: "IPC",
    Layer.DRIVER: "Driver",
    Layer.CPU: "CPU",
}
_COMPUTE_KEY = "PEO"
"""The parser's derived "execution only" value (execution less I/O and results)."""
_COLUMN_KEYS = (
    Phase.INITIALIZATION.value,
    Phase.PREPARATION.value,
    Phase.COMPILATION.value,
    Phase.INPUTS_AND_OUTPUTS.value,
    _COMPUTE_KEY,
    Phase.RESULTS.value,
    Phase.EXECUTION.value,
    Phase.TERMINATION.value,
    Phase.OVERALL.value,
)
"""The ``template_inputs`` key of each of ``LAYER_COLUMNS``."""
_CPU_KEYS = (
    Phase.INITIALIZATION.value,
    Phase.PREPARATION.value,
    Phase.COMPILATION.value,
    Phase.EXECUTION.value,
    Phase.TERMINATION.value,
    Phase.INPUTS_AND_OUTPUTS.value,
    Phase.RESULTS.value,
)


def layer_tables(path: str | os.PathLike[str], source: str | None = None) -> LayerTables:
    """Parse the trace at ``path`` as ``nnemu parse`` does and keep its tables.

    Never raises for a trace it cannot use: the tables then say why (``problem``), so a
    page is still written.
    """
    from nnemu.errors import TraceFormatError
    from nnemu.parser import parse_file

    label = source if source is not None else os.fspath(path)
    try:
        result = parse_file(path)
    except TraceFormatError as exc:
        return LayerTables(source=label, problem=exc.message)
    except OSError as exc:
        return LayerTables(source=label, problem=f"cannot read the trace: {exc.strerror or exc}")
    return tables_of(result, label)


def tables_of(result: ParseResult, source: str) -> LayerTables:
    """The per-layer tables of a parse of the trace ``source`` names."""
    counts = collections.Counter(run.pid for run in result.runs)
    seen: collections.Counter[str] = collections.Counter()
    runs = []
    for run in result.runs:
        seen[run.pid] += 1
        runs.append(_layer_run(run, (seen[run.pid], counts[run.pid])))
    warnings = tuple(
        f"line {d.line_number}: {d.message}" if d.line_number else d.message
        for d in result.diagnostics
    )
    return LayerTables(source=source, runs=tuple(runs), warnings=warnings)


def with_layer_tables(
    data: RunPictures, path: str | os.PathLike[str], source: str | None = None
) -> RunPictures:
    """``data`` with the per-layer tables of the run's trace at ``path`` (``layer_tables``)."""
    return _with_tables(data, lambda: layer_tables(path, source))


def _with_tables(data: RunPictures, tables: Callable[[], LayerTables]) -> RunPictures:
    """``data`` with the tables ``tables`` builds (only when it has a "Why" section)."""
    why = data.why
    if why is None:
        return data
    return attrs.evolve(data, why=attrs.evolve(why, layers=tables()))


class LayerTrace:
    """Where a run's per-layer tables come from, for ``nnemu run --html``.

    If the run writes a trace file (``--trace``), that file is parsed after the run; else
    the run's systrace is parsed in memory as the run goes (``sinks``: a ``LayerSink``, no
    file).  Either way the page's tables are what ``nnemu parse`` prints for the run's
    trace, and the run's report and trace bytes are those of a run without it.
    """

    def __init__(self, trace: str | None) -> None:
        self.sinks: list[TraceSink] = []
        """Sinks to add to the run's (none when the run's own trace is parsed)."""
        self.path: str | None = None
        """The trace file parsed after the run (None: parsed in memory)."""
        self._sink: LayerSink | None = None
        if trace is not None and (os.path.isfile(trace) or not os.path.exists(trace)):
            self.path = trace
            self.source = f"the run's trace, {trace}"
            """How the page names the trace parsed."""
            return
        from nnemu.pictures._layer_sink import LayerSink

        self.source = "a systrace of the run, parsed as it ran (not kept)"
        self._sink = LayerSink()
        self.sinks.append(self._sink)

    def attach(self, data: RunPictures) -> RunPictures:
        """``data`` with the tables of the finished run's trace."""
        return _with_tables(data, self._tables)

    def _tables(self) -> LayerTables:
        if self._sink is None:
            assert self.path is not None
            return layer_tables(self.path, self.source)
        self._sink.close()  # a no-op if the run closed it
        if self._sink.problem is not None:
            return LayerTables(source=self.source, problem=self._sink.problem)
        return tables_of(self._sink.result, self.source)
