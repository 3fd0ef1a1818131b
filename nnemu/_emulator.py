"""Assembling and running an emulation: the one place that calls ``trio.run``.

``open_emulator`` builds the world a scenario describes (driver services, apps,
the transport, the tracer with its sinks and observers) inside a nursery it owns;
``run_virtual`` is the one ``trio.run`` (trio's ``MockClock``, or the wall clock),
with the signal handling that stops a run cleanly; ``run`` puts the two together
and returns the report ``build_report`` makes of the finished world.
"""

from __future__ import annotations

import collections
import random
import signal
import threading
import time
from array import array
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager, nullcontext
from types import FrameType
from typing import Any, NoReturn, TypeVar

import attrs
import structlog
import trio
import trio.testing

from nnemu.app import SPLIT_PARTS, Application
from nnemu.driver import AidlDevice, Device, DriverService, us
from nnemu.errors import Interrupted
from nnemu.hal import Model, build_chain, build_preset
from nnemu.ipc import Binder
from nnemu.report import Report, evaluate
from nnemu.scenario import ModelSpec, Scenario
from nnemu.sim import FileSystem, Kernel, ProcessTable
from nnemu.tracer import TraceObserver, Tracer, TraceSink

logger = structlog.get_logger(layer="emulator")

T = TypeVar("T")

EmulatorHook = Callable[["Emulator"], None]
"""Code a caller of ``run`` runs on the live emulator (see ``run``'s ``attach``,
``progress`` and ``inspect``)."""


def build_model(spec: ModelSpec) -> Model:
    """The HAL model a scenario's model spec describes."""
    if spec.preset is not None:
        model = build_preset(spec.preset, spec.dtype, dict(spec.params))
    else:
        model = build_chain(
            [(layer.type, layer.output, layer.filter) for layer in spec.layers], spec.dtype
        )
    model = attrs.evolve(model, name=spec.name, relax_computation_float32_to_float16=spec.relaxed)
    if spec.dynamic_outputs:
        main = model.main
        operands = list(main.operands)
        for index in main.output_indexes:
            operand = operands[index]
            operands[index] = attrs.evolve(operand, dimensions=(0,) * len(operand.dimensions))
        model = attrs.evolve(model, main=attrs.evolve(main, operands=tuple(operands)))
    return model


def output_dimensions(spec: ModelSpec) -> tuple[tuple[int, ...], ...]:
    """The dimensions an execution produces for each output of ``spec``'s model (those of
    the model without ``dynamic_outputs``)."""
    main = build_model(attrs.evolve(spec, dynamic_outputs=False)).main
    return tuple(main.operands[index].dimensions for index in main.output_indexes)


@attrs.define
class Emulator:
    """A scenario's world, ready to run."""

    scenario: Scenario
    kernel: Kernel
    tracer: Tracer
    services: list[DriverService]
    apps: list[Application]
    binder: Binder

    async def run(self, *, progress: EmulatorHook | None = None) -> None:
        """Run until every app is done or the scenario's duration has passed."""
        stop = us(self.scenario.duration_ms * 1e6) if self.scenario.duration_ms else None
        if progress is not None:
            self._schedule_progress(progress, stop)
        await self.kernel.run(stop_ns=stop)

    def _schedule_progress(self, progress: EmulatorHook, stop: int | None) -> None:
        step = max(1_000_000, (stop or 10_000_000_000) // 100)

        def tick() -> None:
            progress(self)
            if not all(app.finished for app in self.apps):
                self.kernel.call_at(self.kernel.clock_ns + step, tick)

        self.kernel.call_at(step, tick)


def _build_world(
    scenario: Scenario,
    *,
    kernel: Kernel,
    tracer: Tracer,
    binder: Binder,
    processes: ProcessTable,
    files: FileSystem,
    nursery: trio.Nursery,
    device_types: Mapping[str, type[Device]],
    keep_executions: bool,
) -> tuple[list[DriverService], list[Application]]:
    """The scenario's driver services and apps, built but not started."""
    services = [
        DriverService(
            spec,
            kernel=kernel,
            tracer=tracer,
            binder=binder,
            processes=processes,
            cpu=scenario.cpu,
            ipc_binder_threads=scenario.ipc.binder_threads,
            seed=scenario.seed,
            device_type=device_types.get(spec.name, Device),
        )
        for spec in scenario.devices
    ]
    models = {spec.name: build_model(spec) for spec in scenario.models}
    # What an app's runtime reaches: the service itself (HIDL) or its AIDL IDevice.
    faces = [AidlDevice(service) if service.version.aidl else service for service in services]
    produced = {spec.name: output_dimensions(spec) for spec in scenario.models}
    apps = [
        Application(
            spec,
            models[spec.model],
            scenario,
            output_dims=produced[spec.model],
            kernel=kernel,
            tracer=tracer,
            binder=binder,
            processes=processes,
            services=faces,
            nursery=nursery,
            files=files,
        )
        for spec in scenario.apps
    ]
    if keep_executions:
        for app in apps:
            app.records = []
            app.runtime.cpu_history = []
        for service in services:
            service.device.history = []
    return services, apps


@asynccontextmanager
async def open_emulator(
    scenario: Scenario,
    *,
    seed: int | None = None,
    sinks: Sequence[TraceSink] = (),
    observers: Sequence[TraceObserver] = (),
    realtime: bool = False,
    keep_executions: bool = False,
    device_types: Mapping[str, type[Device]] | None = None,
) -> AsyncIterator[Emulator]:
    """Build the emulated world in a nursery owned by this context manager.

    Args:
        scenario: What to build.
        seed: Replaces the scenario's seed.
        sinks: Trace writers (``open_trace_writer``) and other receivers of the marks.
        observers: Receivers of the marks with their layer and phase (``GroundTruth``),
            attached before anything is built, so they see every process announced.
        realtime: The kernel waits on the wall clock (run under ``run_virtual(...,
            realtime=True)``).
        keep_executions: Keep every execution's record (``app.records``) and every
            device job (``service.device.history``), as ``nnemu.pictures.collect``
            needs; off, a run keeps only counters.
        device_types: Device names mapped to ``Device`` subclasses (custom driver policies).

    Under ``run_virtual(..., handle_signals=True)`` a signal stops this world's
    kernel between two of its steps.  On exit the tracer is closed (every open
    section ended) and every emulated task is cancelled, however the block was left.
    """
    if seed is not None:
        scenario = attrs.evolve(scenario, seed=seed)
    kernel = Kernel(realtime=realtime)
    stopper = _SIGNALS.get()
    if stopper is not None:
        stopper.attach(kernel)
    tracer = Tracer(kernel, list(sinks))
    for observer in observers:
        tracer.add_observer(observer)
    processes = ProcessTable()
    files = FileSystem()  # the device's storage: compilation caches survive app restarts
    binder = Binder(kernel, tracer, scenario.ipc, random.Random(f"{scenario.seed}:ipc"))
    structlog.contextvars.bind_contextvars(scenario=scenario.name)
    try:
        async with trio.open_nursery() as nursery:
            services, apps = _build_world(
                scenario,
                kernel=kernel,
                tracer=tracer,
                binder=binder,
                processes=processes,
                files=files,
                nursery=nursery,
                device_types=device_types or {},
                keep_executions=keep_executions,
            )
            for service in services:
                service.start(nursery)
            for app in apps:
                app.start()
            try:
                yield Emulator(scenario, kernel, tracer, services, apps, binder)
            finally:
                kernel.close()
                # End the open sections now, in the tracer's own (pid, tid, depth) order,
                # before the cancelled tasks' cleanup runs in trio's (randomised) order:
                # the tracer ignores whatever they would write after this.
                try:
                    tracer.close()
                finally:
                    nursery.cancel_scope.cancel()
    finally:
        tracer.close()
        structlog.contextvars.unbind_contextvars("scenario")


def _ms(us: int) -> float:
    return round(us / 1000.0, 3)


def _app_data(app: Application, refused: int, aborted: int) -> dict[str, Any]:
    """One app's entry of the report (``refused``/``aborted``: its jobs the devices
    refused or aborted for their deadline)."""
    stats = app.stats
    latency = stats.latency
    submitted = stats.submitted
    return {
        "submitted": submitted,
        "completed": stats.completed,
        "failed": stats.failed,
        "dropped": stats.dropped,
        "retries": stats.retries,
        "in_flight": submitted - stats.completed - stats.failed - stats.dropped,
        "errors": dict(sorted(stats.errors.items())),
        "deadline_misses": stats.deadline_misses,
        "completed_late": stats.completed_late,
        "deadline_refused": refused,
        "deadline_aborted": aborted,
        "deadline_miss_rate": round(stats.deadline_misses / submitted, 6) if submitted else 0.0,
        "error_rate": round(stats.failed / submitted, 6) if submitted else 0.0,
        "compile_result": stats.compile_result.name,
        "compilations": {
            "count": len(stats.compile_ns),
            "from_cache": stats.compilations_from_cache,
            "first_ms": round(stats.compile_ns[0] / 1e6, 3) if stats.compile_ns else 0.0,
            "last_ms": round(stats.compile_ns[-1] / 1e6, 3) if stats.compile_ns else 0.0,
        },
        "latency_ms": {
            "p50": _ms(latency.quantile_us(0.50)),
            "p95": _ms(latency.quantile_us(0.95)),
            "p99": _ms(latency.quantile_us(0.99)),
            "max": _ms(latency.max_us),
            "mean": latency.mean_ms(),
        },
        "energy": round(stats.energy / 1e6, 3),
        "energy_per_execution": (
            round(stats.energy / stats.completed / 1e6, 6) if stats.completed else 0.0
        ),
        "latency_split_ms": {
            part: round(part_ns / stats.completed / 1e6, 3) if stats.completed else 0.0
            for part, part_ns in zip(SPLIT_PARTS, stats.split_ns, strict=True)
        },
    }


def _union_ns(spans: list[array[int]]) -> int:
    """The time (ns) covered by at least one of the flat (start, end) pairs of ``spans``.

    The runtime's CPU executor runs on each calling thread, and nnemu does not model CPU
    cores: any number of threads run the CPU path at once, each at full speed.  So
    nnapi-reference is "busy" while at least one of them does, never more than all the time
    (the sum of the spans would read 5000% for 50 threads at once).
    """
    pairs = sorted((flat[i], flat[i + 1]) for flat in spans for i in range(0, len(flat), 2))
    busy = 0
    start = end = 0
    for begin, finish in pairs:
        if begin > end:
            busy += end - start
            start = begin
        if finish > end:
            end = finish
    return busy + end - start


def build_report(emulator: Emulator, *, wall_s: float | None = None) -> Report:
    """Aggregate the emulator's counters into a report and evaluate the expectations."""
    scenario = emulator.scenario
    elapsed = emulator.kernel.clock_ns
    refused: collections.Counter[int] = collections.Counter()
    aborted: collections.Counter[int] = collections.Counter()
    for service in emulator.services:
        refused.update(service.device.stats.refused_by_uid)
        aborted.update(service.device.stats.aborted_by_uid)
    apps: dict[str, Any] = {}
    cpu_executions = 0
    cpu_energy = 0.0
    for app in emulator.apps:
        apps[app.spec.name] = _app_data(app, refused[app.spec.uid], aborted[app.spec.uid])
        cpu_executions += app.runtime.cpu_stats.executions
        cpu_energy += app.runtime.cpu_stats.energy
    # (A CPU execution cut by the run's end may carry its task's time past the clock.)
    cpu_busy_ns = min(_union_ns([app.runtime.cpu_spans for app in emulator.apps]), elapsed)
    devices: dict[str, Any] = {}
    for service in emulator.services:
        device = service.device
        device_stats = device.stats
        devices[service.name] = {
            "hal": service.version.value,
            "executions": device_stats.executions,
            "busy_fraction": round(device.busy_fraction(elapsed), 6),
            "energy": round(device.energy() / 1e6, 3),
            "preemptions": device_stats.preemptions,
            "deadline_aborts": device_stats.deadline_aborts,
            "loop_timeouts": device_stats.loop_timeouts,
            "rejected_persistent": device_stats.rejected_persistent,
            "rejected_transient": device_stats.rejected_transient,
        }
    devices["nnapi-reference"] = {
        "executions": cpu_executions,
        "busy_fraction": round(cpu_busy_ns / elapsed, 6) if elapsed else 0.0,
        "energy": round(cpu_energy / 1e6, 3),
        "preemptions": 0,
        "deadline_aborts": 0,
        "loop_timeouts": 0,
        "rejected_persistent": 0,
        "rejected_transient": 0,
    }
    data: dict[str, Any] = {
        "scenario": scenario.name,
        "seed": scenario.seed,
        "virtual_ms": round(elapsed / 1e6, 6),
        "wall_s": None if wall_s is None else round(wall_s, 3),
        "apps": apps,
        "devices": devices,
    }
    results = tuple(evaluate(data, expectation) for expectation in scenario.expect)
    data["expectations"] = [
        {"text": r.text, "passed": r.passed} | ({} if r.why is None else {"why": r.why})
        for r in results
    ]
    return Report(data, results)


class _SignalStop:
    """SIGINT/SIGTERM handlers that stop the kernel between two of its steps.

    The handler only sets flags (``Kernel.interrupt``): no exception is raised in the
    middle of emulated code or of a trace writer, so the trace stays well formed.  A
    second signal of the same kind restores Python's behaviour (a KeyboardInterrupt,
    or the default action of SIGTERM): a stuck teardown can still be killed.
    """

    def __init__(self) -> None:
        self.signum: int | None = None
        self.kernel: Kernel | None = None
        self._previous: dict[int, Any] = {}

    def handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signum == signum:
            self._restore()
            if signum == signal.SIGINT:
                raise KeyboardInterrupt
            signal.raise_signal(signum)  # the previous handler, or the default action
            return
        if self.signum is None:
            self.signum = signum
        if self.kernel is not None:
            self.kernel.interrupt(signum)

    def attach(self, kernel: Kernel) -> None:
        self.kernel = kernel
        if self.signum is not None:
            kernel.interrupt(self.signum)

    def _restore(self) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous.clear()

    @contextmanager
    def installed(self) -> Iterator[None]:
        """Install the handlers for the block (main thread only; a custom SIGINT handler is kept)."""
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                current = signal.getsignal(signum)
                if signum == signal.SIGINT and current is not signal.default_int_handler:
                    continue  # someone (the stepper) handles Ctrl-C itself
                self._previous[signum] = current
                signal.signal(signum, self.handle)
        try:
            yield
        finally:
            self._restore()


def raise_unwrapped(group: BaseExceptionGroup[BaseException]) -> NoReturn:
    """Raise the one real exception inside a group trio built (Cancelled leaves aside)."""
    leaves: list[BaseException] = []

    def collect(exc: BaseException) -> None:
        if isinstance(exc, BaseExceptionGroup):
            for inner in exc.exceptions:
                collect(inner)
        elif not isinstance(exc, trio.Cancelled):
            leaves.append(exc)

    collect(group)
    for leaf in leaves:
        if isinstance(leaf, KeyboardInterrupt):
            raise leaf from None
    if len(leaves) == 1:
        raise leaves[0] from None
    raise group


_SIGNALS: trio.lowlevel.RunVar[_SignalStop | None] = trio.lowlevel.RunVar(
    "nnemu_signals", default=None
)
"""The signal handlers of the current ``run_virtual`` (None without ``handle_signals``);
``open_emulator`` hands them its kernel."""


def run_virtual(
    main: Callable[[], Awaitable[T]], *, realtime: bool = False, handle_signals: bool = False
) -> T:
    """Run ``main`` in trio and return its result: the one ``trio.run`` of nnemu.

    Virtual time (trio's ``MockClock(autojump_threshold=0)``, which the kernel jumps
    along) unless ``realtime`` (the wall clock; build the world with ``open_emulator(...,
    realtime=True)`` then).  ``main`` builds its world with ``open_emulator``.

    Errors raised inside the emulated tasks reach the caller as themselves
    (``ScenarioError``, ``EmulatorBug``, an ``OSError`` of a trace file), never
    wrapped in an exception group.  With ``handle_signals`` (the CLI; main thread
    only) SIGINT and SIGTERM stop the kernel of each world ``main`` opens between two
    of its steps, so ``main`` finishes with the trace closed well formed, and then
    ``Interrupted`` is raised instead of returning.  Without it, Ctrl-C raises
    ``KeyboardInterrupt`` as usual.

    Raises:
        Interrupted: A signal stopped the run (``handle_signals`` only).
    """
    stopper = _SignalStop() if handle_signals else None

    async def guarded() -> T:
        if stopper is not None:
            _SIGNALS.set(stopper)
        return await main()

    clock = None if realtime else trio.testing.MockClock(autojump_threshold=0)
    with stopper.installed() if stopper is not None else nullcontext():
        try:
            result = trio.run(guarded, clock=clock)
        except BaseExceptionGroup as group:
            raise_unwrapped(group)
    if stopper is not None and stopper.signum is not None:
        raise Interrupted(stopper.signum)
    return result


def run(
    scenario: Scenario,
    *,
    seed: int | None = None,
    sinks: Sequence[TraceSink] = (),
    observers: Sequence[TraceObserver] = (),
    realtime: bool = False,
    wall_time: bool = False,
    keep_executions: bool = False,
    device_types: Mapping[str, type[Device]] | None = None,
    attach: EmulatorHook | None = None,
    progress: EmulatorHook | None = None,
    inspect: EmulatorHook | None = None,
    handle_signals: bool = False,
) -> Report:
    """Run ``scenario`` to the end and return its report (virtual time unless ``realtime``).

    Args:
        scenario: What to run.
        seed: Replaces the scenario's seed.
        sinks: Trace writers (``open_trace_writer``) and other receivers of the marks.
        observers: Receivers of the marks with their layer and phase (``GroundTruth``).
        realtime: Pace virtual time by the wall clock.
        wall_time: Put the run's wall-clock seconds into the report (``wall_s``).
        keep_executions: Keep every execution's record and device job for ``inspect``
            (``app.records``, ``service.device.history``; ``nnemu.pictures.collect``
            needs them).
        device_types: Device names mapped to ``Device`` subclasses (custom driver policies).
        attach: Called with the built emulator before it runs (a stepper hooks
            ``kernel.observer`` and ``binder.on_call`` there).
        progress: Called with the running emulator every 1% of the scenario's duration
            (of 10 s without one).
        inspect: Called with the finished emulator before it is torn down.
        handle_signals: SIGINT and SIGTERM stop the run cleanly between two kernel
            steps (the CLI; main thread only), see ``run_virtual``.

    Raises:
        Interrupted: A signal stopped the run (``handle_signals`` only); the trace is
            closed well formed and the exception carries the report of the run so
            far, which says ``"interrupted"``.
    """
    finished: list[Report] = []

    async def main() -> Report:
        started = time.perf_counter()
        async with open_emulator(
            scenario,
            seed=seed,
            sinks=sinks,
            observers=observers,
            realtime=realtime,
            keep_executions=keep_executions,
            device_types=device_types,
        ) as emulator:
            if attach is not None:
                attach(emulator)
            await emulator.run(progress=progress)
            wall = time.perf_counter() - started if wall_time else None
            if inspect is not None:
                inspect(emulator)
            finished.append(build_report(emulator, wall_s=wall))
            return finished[0]

    try:
        return run_virtual(main, realtime=realtime, handle_signals=handle_signals)
    except Interrupted as exc:
        if not finished:
            raise
        raise Interrupted(exc.signum, finished[0].interrupted(exc.signal_name)) from None
