"""Test worlds: emulated driver services and clients in virtual time, for driver and runtime tests.

``DriverWorld`` is one driver service plus a client process that calls it over a binder
without jitter (what a VTS binary does); ``RuntimeWorld`` is driver services plus an app
process with its ``Runtime`` (what a CTS app does). Both run on the simulation kernel:
``run`` spawns the client's coroutine on its main thread and returns once everything is
idle. ``prepare_call`` / ``execute_call`` give the server side of one HIDL entry point of
a HAL version, to pass to ``DriverWorld.call``.

Used by tests/unit/driver/test_hal_contract.py, tests/unit/runtime/test_runtime.py and
the conformance suite (tests/conformance/_harness.py); import it as ``tests.worlds``.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Iterable

import trio

from nnemu.driver import AidlDevice, CallbackRef, DriverService, PreparedModel
from nnemu.hal import HalVersion, MeasureTiming, Model, Request
from nnemu.ipc import Binder, Endpoint
from nnemu.runtime import Runtime
from nnemu.scenario import CpuSpec, DeviceSpec, IpcSpec
from nnemu.sim import Kernel, ProcessTable
from nnemu.tracer import Tracer, TraceSink

V10, V11, V12, V13 = HalVersion.V1_0, HalVersion.V1_1, HalVersion.V1_2, HalVersion.V1_3


class _World:
    """A kernel, a tracer and a binder without jitter, plus the driver services."""

    def __init__(self, sinks: Iterable[TraceSink] = ()) -> None:
        self.kernel = Kernel()
        self.tracer = Tracer(self.kernel, list(sinks))
        self.binder = Binder(self.kernel, self.tracer, IpcSpec(), random.Random(0))
        self.table = ProcessTable()

    def _service(self, spec: DeviceSpec) -> DriverService:
        return DriverService(
            spec,
            kernel=self.kernel,
            tracer=self.tracer,
            binder=self.binder,
            processes=self.table,
            cpu=CpuSpec(),
            ipc_binder_threads=4,
            seed=0,
        )


class Recorder:
    """A client-side callback object that records every notify it receives."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.calls: list[tuple[int, tuple[object, ...]]] = []
        """(virtual time in ns, notify arguments) of every notify, in order."""

    def target(self, *args: object) -> None:
        self.calls.append((self.kernel.clock_ns, args))

    @property
    def notifies(self) -> list[tuple[object, ...]]:
        """The arguments of every notify, in order (without the times)."""
        return [args for _, args in self.calls]


class DriverWorld(_World):
    """One driver service and one client process, connected by a binder without jitter."""

    def __init__(
        self,
        version: HalVersion = V13,
        *,
        device_name: str = "npu",
        client_name: str = "client",
        sinks: Iterable[TraceSink] = (),
        **spec_fields: object,
    ) -> None:
        super().__init__(sinks)
        spec = DeviceSpec(name=device_name, hal_version=version, **spec_fields)  # type: ignore[arg-type]
        self.service = self._service(spec)
        self.client_proc = self.table.spawn(client_name, 10001)
        self.client = Endpoint(self.kernel, self.client_proc, 2)

    def callback(self) -> tuple[Recorder, CallbackRef]:
        """A fresh callback object and the reference the driver gets."""
        recorder = Recorder(self.kernel)
        return recorder, CallbackRef(self.client, recorder.target)

    async def call(
        self, method: str, serve: Callable[[], Awaitable[object]], iface: str = "IDevice"
    ) -> object:
        """One HIDL call from the client to the service."""
        return await self.binder.call(self.service.endpoint, iface, method, serve)

    async def run(self, fn: Callable[[], Awaitable[None]]) -> None:
        """Run ``fn`` on the client's main thread until everything is idle."""
        async with trio.open_nursery() as nursery:
            self.service.start(nursery)
            self.kernel.spawn(nursery, fn, thread=self.client_proc.main_thread)
            await self.kernel.run()
            nursery.cancel_scope.cancel()


class RuntimeWorld(_World):
    """Driver services and one app process with its Runtime, no app workload."""

    def __init__(
        self, *specs: DeviceSpec, app_name: str = "app", sinks: Iterable[TraceSink] = ()
    ) -> None:
        super().__init__(sinks)
        self.services = [self._service(spec) for spec in specs]
        self.process = self.table.spawn(app_name, 10001)
        self.endpoint = Endpoint(self.kernel, self.process, 2)
        self.runtime: Runtime | None = None

    def service(self, name: str) -> DriverService:
        """The driver service of device ``name``."""
        return next(s for s in self.services if s.name == name)

    async def run(self, fn: Callable[[Runtime], Awaitable[None]]) -> None:
        """Run ``fn(runtime)`` on the app's main thread until everything is idle."""
        async with trio.open_nursery() as nursery:
            self.runtime = Runtime(
                kernel=self.kernel,
                tracer=self.tracer,
                binder=self.binder,
                process=self.process,
                endpoint=self.endpoint,
                # An AIDL driver is reached through its AIDL IDevice, as nnemu.run does.
                services=[AidlDevice(s) if s.version.aidl else s for s in self.services],
                cpu=CpuSpec(),
                nursery=nursery,
            )
            for service in self.services:
                service.start(nursery)
            runtime = self.runtime
            self.kernel.spawn(nursery, lambda: fn(runtime), thread=self.process.main_thread)
            await self.kernel.run()
            nursery.cancel_scope.cancel()


def prepare_call(
    service: DriverService,
    version: HalVersion,
    model: Model,
    callback: CallbackRef | None,
    *,
    preference: int = 1,
    priority: int = 1,
    deadline_ns: int | None = None,
) -> Callable[[], Awaitable[object]]:
    """The server side of prepareModel* of HAL ``version``."""
    if version is V10:
        return lambda: service.prepareModel(model, callback)
    if version is V11:
        return lambda: service.prepareModel_1_1(model, preference, callback)
    if version is V12:
        return lambda: service.prepareModel_1_2(model, preference, (), (), b"\0" * 32, callback)
    return lambda: service.prepareModel_1_3(
        model, preference, priority, deadline_ns, (), (), b"\0" * 32, callback
    )


def execute_call(
    prepared: PreparedModel,
    version: HalVersion,
    request: Request,
    callback: CallbackRef | None,
    *,
    measure: MeasureTiming = MeasureTiming.NO,
    deadline_ns: int | None = None,
    loop_timeout_ns: int | None = None,
) -> Callable[[], Awaitable[object]]:
    """The server side of the async execute* of HAL ``version`` (1.0 and 1.1: ``execute``)."""
    if version in (V10, V11):
        return lambda: prepared.execute(request, callback)
    if version is V12:
        return lambda: prepared.execute_1_2(request, measure, callback)
    return lambda: prepared.execute_1_3(request, measure, deadline_ns, loop_timeout_ns, callback)
