"""Assembling and running an emulation: the one place that calls ``trio.run``.

``open_emulator`` builds the world a scenario describes (driver services, apps,
the transport) inside a nursery it owns; ``run`` drives it to the end under
trio's ``MockClock`` (virtual time) or the wall clock, and returns the report.
"""

from __future__ import annotations

import contextlib
import random
import signal
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from types import FrameType
from typing import Any, NoReturn

import attrs
import structlog
import trio
import trio.testing

from nnemu.app import Application
from nnemu.driver import Device, DriverService, us
from nnemu.errors import Interrupted
from nnemu.hal import Model, build_chain, build_preset
from nnemu.ipc import Binder
from nnemu.report import Report, build_report
from nnemu.scenario import ModelSpec, Scenario
from nnemu.sim import FileSystem, Kernel, ProcessTable
from nnemu.tracer import Tracer, TraceSink

logger = structlog.get_logger(layer="emulator")


def build_model(spec: ModelSpec) -> Model:
    """The HAL model a scenario's model spec describes."""
    if spec.preset is not None:
        model = build_preset(spec.preset, spec.dtype, dict(spec.params))
    else:
        model = build_chain(
            [(layer.type, layer.output, layer.filter) for layer in spec.layers], spec.dtype
        )
    return attrs.evolve(model, name=spec.name, relax_computation_float32_to_float16=spec.relaxed)


@attrs.define
class Emulator:
    """A scenario's world, ready to run."""

    scenario: Scenario
    kernel: Kernel
    tracer: Tracer
    services: list[DriverService]
    apps: list[Application]
    binder: Binder

    async def run(self, *, progress: Callable[[Emulator], None] | None = None) -> None:
        """Run until every app is done or the scenario's duration has passed."""
        stop = us(self.scenario.duration_ms * 1e6) if self.scenario.duration_ms else None
        if progress is not None:
            self._schedule_progress(progress, stop)
        await self.kernel.run(stop_ns=stop)

    def _schedule_progress(self, progress: Callable[[Emulator], None], stop: int | None) -> None:
        step = max(1_000_000, (stop or 10_000_000_000) // 100)

        def tick() -> None:
            progress(self)
            if not all(app.finished for app in self.apps):
                self.kernel.call_at(self.kernel.now_ns + step, tick)

        self.kernel.call_at(step, tick)


@asynccontextmanager
async def open_emulator(
    scenario: Scenario,
    *,
    seed: int | None = None,
    sinks: list[TraceSink] | None = None,
    realtime: bool = False,
    keep_executions: bool = False,
    device_types: Mapping[str, type[Device]] | None = None,
) -> AsyncIterator[Emulator]:
    """Build the emulated world in a nursery owned by this context manager.

    On exit the tracer is closed (every open section ended) and every emulated
    task is cancelled, however the block was left.
    """
    if seed is not None:
        scenario = attrs.evolve(scenario, seed=seed)
    kernel = Kernel(realtime=realtime)
    tracer = Tracer(kernel, sinks)
    processes = ProcessTable()
    files = FileSystem()  # the device's storage: compilation caches survive app restarts
    binder = Binder(kernel, tracer, scenario.ipc, random.Random(f"{scenario.seed}:ipc"))
    structlog.contextvars.bind_contextvars(scenario=scenario.name)
    try:
        async with trio.open_nursery() as nursery:
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
                    device_type=(device_types or {}).get(spec.name, Device),
                )
                for spec in scenario.devices
            ]
            models = {spec.name: build_model(spec) for spec in scenario.models}
            apps = [
                Application(
                    spec,
                    models[spec.model],
                    scenario,
                    kernel=kernel,
                    tracer=tracer,
                    binder=binder,
                    processes=processes,
                    services=services,
                    nursery=nursery,
                    files=files,
                )
                for spec in scenario.apps
            ]
            if keep_executions:
                for app in apps:
                    app.records = []
                for service in services:
                    service.device.history = []
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


def run(
    scenario: Scenario,
    *,
    seed: int | None = None,
    sinks: list[TraceSink] | None = None,
    realtime: bool = False,
    wall_time: bool = False,
    progress: Callable[[Emulator], None] | None = None,
    inspect: Callable[[Emulator], None] | None = None,
    device_types: Mapping[str, type[Device]] | None = None,
    attach: Callable[[Emulator], None] | None = None,
    handle_signals: bool = False,
) -> Report:
    """Run ``scenario`` to the end and return its report (virtual time unless ``realtime``).

    ``inspect``, if given, is called with the finished emulator before it is torn down,
    with per-execution records kept (``app.records``, ``service.device.history``).
    ``device_types`` maps device names to ``Device`` subclasses (custom driver policies).
    ``attach``, if given, is called with the built emulator before it runs (a stepper
    hooks ``kernel.observer`` and ``binder.on_call`` there).

    Errors raised inside the emulated tasks reach the caller as themselves
    (``ScenarioError``, ``EmulatorBug``, an ``OSError`` of a trace file), never
    wrapped in an exception group.  With ``handle_signals`` (the CLI; main thread
    only) SIGINT and SIGTERM stop the run cleanly between two kernel steps: the
    trace is closed well formed and ``Interrupted`` is raised carrying the report
    of the run so far.  Without it, Ctrl-C raises ``KeyboardInterrupt`` as usual.
    """
    stopper = _SignalStop() if handle_signals else None

    async def main() -> Report:
        started = time.perf_counter()
        async with open_emulator(
            scenario,
            seed=seed,
            sinks=sinks,
            realtime=realtime,
            keep_executions=inspect is not None,
            device_types=device_types,
        ) as emulator:
            if stopper is not None:
                stopper.attach(emulator.kernel)
            if attach is not None:
                attach(emulator)
            await emulator.run(progress=progress)
            wall = time.perf_counter() - started if wall_time else None
            if inspect is not None:
                inspect(emulator)
            return build_report(emulator, wall_s=wall)

    clock = None if realtime else trio.testing.MockClock(autojump_threshold=0)
    with stopper.installed() if stopper is not None else contextlib.nullcontext():
        try:
            report = trio.run(main, clock=clock)
        except BaseExceptionGroup as group:
            raise_unwrapped(group)
    if stopper is not None and stopper.signum is not None:
        name = signal.Signals(stopper.signum).name
        report = attrs.evolve(report, data={**report.data, "interrupted": name})
        raise Interrupted(stopper.signum, report)
    return report
