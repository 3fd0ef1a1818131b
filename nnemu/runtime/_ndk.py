"""The NNAPI runtime (libneuralnetworks) of one app process, shaped like the NDK C API.

``Runtime`` is ``ANeuralNetworks_*`` for one process; ``ModelBuilder``,
``Compilation``, ``Execution`` and ``Event`` are the NDK objects, and their
methods return ``ResultCode`` values exactly where the C functions return
``ANEURALNETWORKS_*`` codes.  Calls that can wait are ``async``.  Behaviour
follows the Android 11 runtime (hal-semantics.md §3 and §5): discovery,
partitioning, CPU fallback, status ↔ code mapping, sync/async/fenced modes.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import structlog
import trio

from nnemu.driver import (
    CACHE_TOKEN_BYTES,
    FMQ_TRANSFER_NS,
    BurstContext,
    CallbackRef,
    ComputePlan,
    DeviceStats,
    DriverService,
    PreparedModel,
    compute_plan,
    us,
)
from nnemu.hal import (
    LOOP_TIMEOUT_DEFAULT_NS,
    LOOP_TIMEOUT_MAXIMUM_NS,
    UINT64_MAX,
    DataLocation,
    DeviceType,
    ErrorStatus,
    ExecutionPreference,
    HalVersion,
    MeasureTiming,
    Model,
    OperationType,
    Priority,
    Request,
    RequestArgument,
    ResultCode,
    Timing,
    code_to_status,
    status_to_code,
    validate_model,
)
from nnemu.ipc import DEAD, Binder, DeadObject, Endpoint
from nnemu.runtime._devices import (
    CPU_CAPABILITIES,
    CPU_DEVICE_NAME,
    ExecutionCallback,
    RuntimeDevice,
    VersionedIDevice,
)
from nnemu.runtime._plan import Step, choose_devices, make_steps
from nnemu.scenario import CpuSpec
from nnemu.sim import FileHandle, FileSystem, Kernel, SimEvent, SimProcess, as_thread
from nnemu.tracer import Layer, Phase, Tracer

logger = structlog.get_logger(layer="runtime")

API_CALL_NS = 2_000
"""CPU time of a trivial NDK call (argument checks, bookkeeping)."""
PER_OP_NS = 1_000
"""Runtime CPU time per operation for model finish, partitioning and request building."""


class Runtime:
    """The NNAPI runtime inside one app process."""

    def __init__(
        self,
        *,
        kernel: Kernel,
        tracer: Tracer,
        binder: Binder,
        process: SimProcess,
        endpoint: Endpoint,
        services: Sequence[DriverService],
        cpu: CpuSpec,
        nursery: trio.Nursery,
        files: FileSystem | None = None,
    ) -> None:
        self.kernel = kernel
        self.files = files if files is not None else FileSystem()
        self.tracer = tracer
        self.binder = binder
        self.process = process
        self.endpoint = endpoint
        self.cpu = cpu
        self.nursery = nursery
        self._services = list(services)
        self._devices: list[RuntimeDevice] | None = None
        self._versioned: dict[str, VersionedIDevice] = {}
        self._log = logger.bind(process=process.name)
        self.cpu_device = RuntimeDevice(
            name=CPU_DEVICE_NAME,
            type=DeviceType.CPU,
            version_string="1",
            hal_version=HalVersion.V1_3,
            capabilities=CPU_CAPABILITIES,
        )
        self.async_threads = 0
        self._cpu_plans: dict[int, tuple[Model, ComputePlan]] = {}
        self.cpu_stats = DeviceStats()
        self._requests: dict[int, tuple[Model, Request]] = {}

    # -------------------------------------------------------------- devices
    async def _discover(self) -> list[RuntimeDevice]:
        """Device discovery (once per process): drop every device that fails a query."""
        if self._devices is None:
            self.tracer.begin(
                Layer.RUNTIME, Phase.INITIALIZATION, "DeviceManager::findAvailableDevices"
            )
            try:
                devices: list[RuntimeDevice] = []
                for service in self._services:
                    versioned = VersionedIDevice(
                        service,
                        kernel=self.kernel,
                        tracer=self.tracer,
                        binder=self.binder,
                        client=self.endpoint,
                        uid=self.process.uid,
                    )
                    device = await versioned.discover()
                    if device is not None:
                        devices.append(device)
                        self._versioned[device.name] = versioned
                devices.append(self.cpu_device)
                self._devices = devices
            finally:
                self.tracer.end()
        return self._devices

    async def get_devices(self) -> list[RuntimeDevice]:
        """ANeuralNetworks_getDeviceCount / getDevice: every device, the CPU device last."""
        return list(await self._discover())

    def cpu_plan(self, model: Model) -> ComputePlan:
        """The CPU executor's per-operation costs for ``model`` (computed once per model)."""
        entry = self._cpu_plans.get(id(model))
        if entry is None or entry[0] is not model:
            entry = (model, compute_plan(model, CPU_CAPABILITIES, self.cpu))
            self._cpu_plans[id(model)] = entry
        return entry[1]

    def forget(self, device: RuntimeDevice) -> None:
        """A device's driver died: later compilations no longer see it."""
        if self._devices is not None and device in self._devices:
            self._log.warning("device_lost", device=device.name)
            self._devices.remove(device)

    def request_for(self, model: Model) -> Request:
        """The request an execution of ``model`` sends (built once per model: it never changes)."""
        entry = self._requests.get(id(model))
        if entry is None or entry[0] is not model:
            entry = (model, _request_for(model))
            self._requests[id(model)] = entry
        return entry[1]

    def versioned(self, device: RuntimeDevice) -> VersionedIDevice:
        """The IDevice wrapper of a discovered driver device."""
        return self._versioned[device.name]

    def _api(self, phase: Phase, name: str) -> None:
        self.tracer.begin(Layer.RUNTIME, phase, name)
        self.kernel.work(API_CALL_NS)

    # -------------------------------------------------------------- objects
    async def create_model(self, model: Model) -> tuple[ResultCode, ModelBuilder | None]:
        """ANeuralNetworksModel_create + the add/identify calls + finish, for a built HAL model.

        Returns finish's result code and the finished model.
        """
        tracer = self.tracer
        self._api(Phase.PREPARATION, "ANeuralNetworksModel_create")
        try:
            await self._discover()  # one-time initialisation happens at first use
        finally:
            tracer.end()
        builder = ModelBuilder(self, model)
        self._api(Phase.PREPARATION, "ANeuralNetworksModel_addOperand")
        self.kernel.work(us(PER_OP_NS * len(model.main.operands) / 4))  # whole µs, as ftrace
        tracer.end()
        self._api(Phase.PREPARATION, "ANeuralNetworksModel_addOperation")
        self.kernel.work(us(PER_OP_NS * len(model.main.operations) / 2))
        tracer.end()
        self._api(Phase.PREPARATION, "ANeuralNetworksModel_identifyInputsAndOutputs")
        tracer.end()
        code = builder.finish()
        return code, builder if code is ResultCode.NO_ERROR else None


class ModelBuilder:
    """ANeuralNetworksModel (after its operands and operations were added)."""

    def __init__(self, runtime: Runtime, model: Model) -> None:
        self.runtime = runtime
        self.model = model
        self.finished = False

    def finish(self) -> ResultCode:
        """ANeuralNetworksModel_finish: validate; BAD_DATA if invalid, BAD_STATE if finished."""
        runtime = self.runtime
        runtime._api(Phase.PREPARATION, "ANeuralNetworksModel_finish")
        try:
            if self.finished:
                return ResultCode.BAD_STATE
            runtime.tracer.begin(Layer.UTILITY, Phase.UNSPECIFIED, "validateModel")
            runtime.kernel.work(PER_OP_NS * len(self.model.main.operations))
            reason = validate_model(self.model, HalVersion.V1_3)
            runtime.tracer.end()
            if reason is not None:
                return ResultCode.BAD_DATA
            self.finished = True
            return ResultCode.NO_ERROR
        finally:
            runtime.tracer.end()


class Compilation:
    """ANeuralNetworksCompilation."""

    def __init__(
        self,
        model: ModelBuilder,
        devices: Sequence[RuntimeDevice] | None,
    ) -> None:
        self.runtime = model.runtime
        self.model = model
        self.explicit_devices = list(devices) if devices is not None else None
        self.preference = ExecutionPreference.FAST_SINGLE_ANSWER
        self.priority = Priority.MEDIUM
        self.timeout_ns: int | None = None
        self.cache_dir: str | None = None
        self.cache_token = b""
        self.finished = False
        self.steps: list[Step] = []
        self.prepared: dict[int, PreparedModel] = {}
        self.from_cache = 0
        """Steps prepared from the compilation cache (prepareModelFromCache succeeded)."""

    @classmethod
    async def create(cls, model: ModelBuilder) -> tuple[ResultCode, Compilation | None]:
        """ANeuralNetworksCompilation_create: all devices, with CPU fallback."""
        runtime = model.runtime
        runtime._api(Phase.COMPILATION, "ANeuralNetworksCompilation_create")
        try:
            if not model.finished:
                return ResultCode.BAD_STATE, None
            return ResultCode.NO_ERROR, cls(model, None)
        finally:
            runtime.tracer.end()

    @classmethod
    async def create_for_devices(
        cls, model: ModelBuilder, devices: Sequence[RuntimeDevice]
    ) -> tuple[ResultCode, Compilation | None]:
        """ANeuralNetworksCompilation_createForDevices: only these devices, no CPU fallback."""
        runtime = model.runtime
        runtime._api(Phase.COMPILATION, "ANeuralNetworksCompilation_createForDevices")
        try:
            if not devices or len({d.name for d in devices}) != len(devices):
                return ResultCode.BAD_DATA, None
            if not model.finished:
                return ResultCode.BAD_STATE, None
            return ResultCode.NO_ERROR, cls(model, devices)
        finally:
            runtime.tracer.end()

    @property
    def fallback_allowed(self) -> bool:
        """CPU fallback is allowed only for Compilation_create (all devices)."""
        return self.explicit_devices is None

    @property
    def single_device(self) -> bool:
        """Whether this compilation was created for exactly one device."""
        return self.explicit_devices is not None and len(self.explicit_devices) == 1

    def set_preference(self, preference: int) -> ResultCode:
        """ANeuralNetworksCompilation_setPreference."""
        self.runtime._api(Phase.COMPILATION, "ANeuralNetworksCompilation_setPreference")
        try:
            if self.finished:
                return ResultCode.BAD_STATE
            if preference not in tuple(ExecutionPreference):
                return ResultCode.BAD_DATA
            self.preference = ExecutionPreference(preference)
            return ResultCode.NO_ERROR
        finally:
            self.runtime.tracer.end()

    def set_priority(self, priority: int) -> ResultCode:
        """ANeuralNetworksCompilation_setPriority: 90/100/110 only (NDK values)."""
        self.runtime._api(Phase.COMPILATION, "ANeuralNetworksCompilation_setPriority")
        try:
            if self.finished:
                return ResultCode.BAD_STATE
            hal = Priority.from_ndk(priority)
            if hal is None:
                return ResultCode.BAD_DATA
            self.priority = hal
            return ResultCode.NO_ERROR
        finally:
            self.runtime.tracer.end()

    def set_caching(self, cache_dir: str, token: bytes) -> ResultCode:
        """ANeuralNetworksCompilation_setCaching: a cache directory and a 32-byte token."""
        self.runtime._api(Phase.COMPILATION, "ANeuralNetworksCompilation_setCaching")
        try:
            if self.finished:
                return ResultCode.BAD_STATE
            if len(token) != CACHE_TOKEN_BYTES:
                return ResultCode.BAD_DATA
            self.cache_dir = cache_dir
            self.cache_token = bytes(token)
            return ResultCode.NO_ERROR
        finally:
            self.runtime.tracer.end()

    def _cache_handles(
        self, step: Step, compound: bool
    ) -> tuple[tuple[FileHandle, ...], tuple[FileHandle, ...], bytes] | None:
        """The cache files and token of ``step`` on its device, or None when not caching.

        As the R runtime: the app's token is re-hashed with the device's name and version
        string, the preference and the priority (and the step's operations in a compound
        plan); file names are the directory, 64 letters from the hash ('A' + low nibble,
        'A' + high nibble per byte), then '1' (model) or '2' (data) and the index.
        """
        device = step.device
        if self.cache_dir is None or not any(device.cache_files):
            return None
        digest = hashlib.sha256()
        for part in (
            self.cache_token,
            device.name.encode(),
            device.version_string.encode(),
            bytes([int(self.preference), int(self.priority)]),
        ):
            digest.update(part)
        if compound:
            digest.update(",".join(str(i) for i in step.operations).encode())
        token = digest.digest()
        letters = "".join(chr(65 + (b & 0xF)) + chr(65 + (b >> 4)) for b in token)
        base = os.path.join(self.cache_dir, letters)
        files = self.runtime.files
        n_model, n_data = device.cache_files
        return (
            tuple(files.open(f"{base}1{i}") for i in range(n_model)),
            tuple(files.open(f"{base}2{i}") for i in range(n_data)),
            token,
        )

    def set_timeout(self, duration_ns: int) -> ResultCode:
        """ANeuralNetworksCompilation_setTimeout: single-device createForDevices only; 0 = none."""
        self.runtime._api(Phase.COMPILATION, "ANeuralNetworksCompilation_setTimeout")
        try:
            if self.finished:
                return ResultCode.BAD_STATE
            if not self.single_device:
                return ResultCode.BAD_DATA
            self.timeout_ns = duration_ns or None
            return ResultCode.NO_ERROR
        finally:
            self.runtime.tracer.end()

    async def finish(self) -> ResultCode:
        """ANeuralNetworksCompilation_finish: partition, prepare each step, fall back to CPU."""
        runtime = self.runtime
        runtime._api(Phase.COMPILATION, "ANeuralNetworksCompilation_finish")
        try:
            if self.finished:
                return ResultCode.BAD_STATE
            self.finished = True
            start = runtime.kernel.now()
            deadline = None
            if self.timeout_ns is not None and min(self.timeout_ns, UINT64_MAX) < UINT64_MAX:
                deadline = start + self.timeout_ns
            code = await self._plan_and_prepare(deadline)
            if code is ResultCode.NO_ERROR or code is ResultCode.BAD_DATA:
                return code
            if self.fallback_allowed and not self._has_oem():
                self._log_fallback(code)
                self.steps = [
                    Step(runtime.cpu_device, tuple(range(self._op_count())), self.model.model)
                ]
                self.prepared = {}
                return ResultCode.NO_ERROR
            return code
        finally:
            runtime.tracer.end()

    def free(self) -> None:
        """ANeuralNetworksCompilation_free: release the prepared models (drivers free their memory)."""
        runtime = self.runtime
        runtime._api(Phase.TERMINATION, "ANeuralNetworksCompilation_free")
        try:
            for prepared in self.prepared.values():
                prepared.release()
            self.prepared = {}
        finally:
            runtime.tracer.end()

    def _op_count(self) -> int:
        return len(self.model.model.main.operations)

    def _has_oem(self) -> bool:
        return any(
            op.type is OperationType.OEM_OPERATION for op in self.model.model.main.operations
        )

    def _log_fallback(self, code: ResultCode) -> None:
        self.runtime._log.info("compilation_fell_back_to_cpu", reason=code.name)

    async def _plan_and_prepare(self, deadline_ns: int | None) -> ResultCode:
        runtime = self.runtime
        model = self.model.model
        devices = (
            self.explicit_devices
            if self.explicit_devices is not None
            else await runtime.get_devices()
        )
        supported: dict[str, tuple[bool, ...]] = {}
        for device in devices:
            if device.is_cpu:
                supported[device.name] = tuple(
                    op.type is not OperationType.OEM_OPERATION for op in model.main.operations
                )
            else:
                answer = await runtime.versioned(device).get_supported_operations(model)
                if isinstance(answer, DeadObject):
                    runtime.forget(device)
                    if self.explicit_devices is not None:
                        return ResultCode.DEAD_OBJECT
                    answer = (False,) * len(model.main.operations)
                supported[device.name] = answer
        runtime.kernel.work(PER_OP_NS * len(model.main.operations))
        chosen = choose_devices(model, devices, supported, self.preference)
        if any(device is None for device in chosen):
            return ResultCode.BAD_DATA
        self.steps = make_steps(model, [d for d in chosen if d is not None])
        compound = len(self.steps) > 1
        for index, step in enumerate(self.steps):
            if step.device.is_cpu:
                continue
            versioned = runtime.versioned(step.device)
            cache = self._cache_handles(step, compound)
            status: ErrorStatus | DeadObject = ErrorStatus.GENERAL_FAILURE
            prepared: PreparedModel | None = None
            if cache is not None:
                # Try the cache first; on any failure prepare fully with the same handles.
                status, prepared = await versioned.prepare_model_from_cache(deadline_ns, cache)
                if status is ErrorStatus.NONE and prepared is not None:
                    self.from_cache += 1
            if prepared is None and not isinstance(status, DeadObject):
                status, prepared = await versioned.prepare_model(
                    step.model,
                    self.preference,
                    self.priority,
                    deadline_ns,
                    cache or ((), (), b""),
                )
            if isinstance(status, DeadObject):
                runtime.forget(step.device)
                return ResultCode.DEAD_OBJECT
            if status is not ErrorStatus.NONE or prepared is None:
                return (
                    status_to_code(status)
                    if status is not ErrorStatus.NONE
                    else ResultCode.OP_FAILED
                )
            self.prepared[index] = prepared
        return ResultCode.NO_ERROR


class Burst:
    """ANeuralNetworksBurst: reusable fast channels to the drivers of one compilation.

    One ``configureExecutionBurst`` per driver step (HAL 1.2+); a step whose driver
    cannot burst runs through the normal path, as the R runtime falls back.
    """

    def __init__(self, compilation: Compilation) -> None:
        self.compilation = compilation
        self.contexts: dict[int, BurstContext] = {}
        self.busy = False

    @classmethod
    async def create(cls, compilation: Compilation) -> tuple[ResultCode, Burst | None]:
        """ANeuralNetworksBurst_create: the compilation must be finished."""
        runtime = compilation.runtime
        runtime._api(Phase.PREPARATION, "ANeuralNetworksBurst_create")
        try:
            if not compilation.finished:
                return ResultCode.BAD_STATE, None
            burst = cls(compilation)
            preference = int(compilation.preference)
            for index, prepared in compilation.prepared.items():
                if not prepared.version.at_least(HalVersion.V1_2):
                    continue

                async def configure(
                    prepared: PreparedModel = prepared,
                ) -> tuple[ErrorStatus, BurstContext | None]:
                    return await prepared.configureExecutionBurst(burst, preference)

                answer = await runtime.binder.call(
                    prepared.endpoint, "IPreparedModel", "configureExecutionBurst", configure
                )
                if isinstance(answer, DeadObject):
                    continue
                status, context = answer
                if status is ErrorStatus.NONE and context is not None:
                    burst.contexts[index] = context
            return ResultCode.NO_ERROR, burst
        finally:
            runtime.tracer.end()

    def free(self) -> None:
        """ANeuralNetworksBurst_free: the driver's burst threads end."""
        runtime = self.compilation.runtime
        runtime._api(Phase.TERMINATION, "ANeuralNetworksBurst_free")
        self.contexts = {}
        runtime.tracer.end()


class Event:
    """ANeuralNetworksEvent: completion of an asynchronous or fenced execution."""

    def __init__(self, runtime: Runtime, execution: Execution) -> None:
        self.runtime = runtime
        self.execution = execution
        self._done = SimEvent(runtime.kernel)

    def _signal(self, code: ResultCode) -> None:
        self._done.set(code)

    async def wait(self) -> ResultCode:
        """ANeuralNetworksEvent_wait: block (no timeout) and return the execution's code."""
        runtime = self.runtime
        runtime._api(Phase.EXECUTION, "ANeuralNetworksEvent_wait")
        try:
            await runtime.kernel.sync()
            code: ResultCode = await self._done.wait()
            return code
        finally:
            runtime.tracer.end()


class Execution:
    """ANeuralNetworksExecution."""

    def __init__(self, compilation: Compilation) -> None:
        self.compilation = compilation
        self.runtime = compilation.runtime
        self.timeout_ns: int | None = None
        self.loop_timeout_ns = LOOP_TIMEOUT_DEFAULT_NS
        self.measure = False
        self.started = False
        self.finished_code: ResultCode | None = None
        self.timing: Timing | None = None
        self.deadline_ns: int | None = None
        self.fell_back = False

    @classmethod
    def create(cls, compilation: Compilation) -> tuple[ResultCode, Execution | None]:
        """ANeuralNetworksExecution_create: the compilation must be finished."""
        runtime = compilation.runtime
        runtime._api(Phase.EXECUTION, "ANeuralNetworksExecution_create")
        try:
            if not compilation.finished:
                return ResultCode.BAD_STATE, None
            return ResultCode.NO_ERROR, cls(compilation)
        finally:
            runtime.tracer.end()

    def set_io(self) -> ResultCode:
        """ANeuralNetworksExecution_setInput/setOutput for every model input and output."""
        runtime = self.runtime
        main = self.compilation.model.model.main
        for name, count in (
            ("ANeuralNetworksExecution_setInput", len(main.input_indexes)),
            ("ANeuralNetworksExecution_setOutput", len(main.output_indexes)),
        ):
            for _ in range(count):
                runtime.tracer.begin(Layer.RUNTIME, Phase.INPUTS_AND_OUTPUTS, name)
                runtime.kernel.work(API_CALL_NS)
                runtime.tracer.end()
        return ResultCode.BAD_STATE if self.started else ResultCode.NO_ERROR

    def set_timeout(self, duration_ns: int) -> ResultCode:
        """ANeuralNetworksExecution_setTimeout: single-device compilations; BAD_STATE once started."""
        self.runtime._api(Phase.EXECUTION, "ANeuralNetworksExecution_setTimeout")
        try:
            if self.started:
                return ResultCode.BAD_STATE
            if not self.compilation.single_device:
                return ResultCode.BAD_DATA
            self.timeout_ns = duration_ns or None
            return ResultCode.NO_ERROR
        finally:
            self.runtime.tracer.end()

    def set_loop_timeout(self, duration_ns: int) -> ResultCode:
        """ANeuralNetworksExecution_setLoopTimeout: clamped to 15 s; BAD_STATE once started."""
        self.runtime._api(Phase.EXECUTION, "ANeuralNetworksExecution_setLoopTimeout")
        try:
            if self.started:
                return ResultCode.BAD_STATE
            self.loop_timeout_ns = min(duration_ns, LOOP_TIMEOUT_MAXIMUM_NS)
            return ResultCode.NO_ERROR
        finally:
            self.runtime.tracer.end()

    def set_measure_timing(self, measure: bool) -> ResultCode:
        """ANeuralNetworksExecution_setMeasureTiming: single-device only; BAD_STATE once started."""
        self.runtime._api(Phase.EXECUTION, "ANeuralNetworksExecution_setMeasureTiming")
        try:
            if self.started:
                return ResultCode.BAD_STATE
            if not self.compilation.single_device:
                return ResultCode.BAD_DATA
            self.measure = measure
            return ResultCode.NO_ERROR
        finally:
            self.runtime.tracer.end()

    def get_duration(self, code: int) -> tuple[ResultCode, int]:
        """ANeuralNetworksExecution_getDuration in ns; BAD_STATE + UINT64_MAX when unavailable."""
        self.runtime._api(Phase.EXECUTION, "ANeuralNetworksExecution_getDuration")
        try:
            if self.finished_code is not ResultCode.NO_ERROR or not self.measure:
                return ResultCode.BAD_STATE, UINT64_MAX
            timing = self.timing or Timing()
            value = timing.time_on_device_us if code in (0, 2) else timing.time_in_driver_us
            return ResultCode.NO_ERROR, UINT64_MAX if value == UINT64_MAX else value * 1000
        finally:
            self.runtime.tracer.end()

    def _start(self) -> ResultCode:
        if self.started:
            return ResultCode.BAD_STATE
        self.started = True
        if self.timeout_ns is not None:
            self.deadline_ns = self.runtime.kernel.now() + self.timeout_ns
        return ResultCode.NO_ERROR

    def free(self) -> None:
        """ANeuralNetworksExecution_free."""
        self.runtime._api(Phase.EXECUTION, "ANeuralNetworksExecution_free")
        self.runtime.tracer.end()

    # ------------------------------------------------------------ modes
    async def compute(self) -> ResultCode:
        """ANeuralNetworksExecution_compute: run the plan on the calling thread."""
        runtime = self.runtime
        runtime._api(Phase.EXECUTION, "ANeuralNetworksExecution_compute")
        try:
            code = self._start()
            if code is not ResultCode.NO_ERROR:
                return code
            code = await self._run_plan()
            self.finished_code = code
            return code
        finally:
            runtime.tracer.end()

    async def start_compute(self) -> tuple[ResultCode, Event | None]:
        """ANeuralNetworksExecution_startCompute: run the plan on a new thread; return an Event."""
        runtime = self.runtime
        runtime._api(Phase.EXECUTION, "ANeuralNetworksExecution_startCompute")
        try:
            code = self._start()
            if code is not ResultCode.NO_ERROR:
                return code, None
            event = Event(runtime, self)
            runtime.async_threads += 1
            thread = runtime.process.new_thread(f"nn-async-{runtime.async_threads}")
            await runtime.kernel.sync()

            async def run() -> None:
                code = await self._run_plan()
                self.finished_code = code
                await runtime.kernel.sync()
                event._signal(code)

            runtime.kernel.spawn(runtime.nursery, run, thread=thread)
            return ResultCode.NO_ERROR, event
        finally:
            runtime.tracer.end()

    async def start_compute_with_dependencies(
        self, dependencies: Sequence[Event], duration_ns: int = 0
    ) -> tuple[ResultCode, Event | None]:
        """ANeuralNetworksExecution_startComputeWithDependencies (fenced execution).

        Waits for the dependencies' fences, then runs: ``executeFenced`` on 1.3
        drivers, a synchronous execution otherwise.  Returns an Event over the
        result fence (already signalled: the emulated drivers run inside the call,
        as the sample driver does).
        """
        runtime = self.runtime
        runtime._api(Phase.EXECUTION, "ANeuralNetworksExecution_startComputeWithDependencies")
        try:
            code = self._start()
            if code is not ResultCode.NO_ERROR:
                return code, None
            for dependency in dependencies:
                dep_code = await dependency._done.wait()
                if dep_code is not ResultCode.NO_ERROR:
                    return ResultCode.BAD_DATA, None
            code = await self._run_plan(fenced=True, duration_ns=duration_ns or None)
            self.finished_code = code
            event = Event(runtime, self)
            await runtime.kernel.sync()
            event._signal(code)
            return ResultCode.NO_ERROR, event
        finally:
            runtime.tracer.end()

    # ------------------------------------------------------------ the plan
    async def _run_plan(
        self,
        *,
        fenced: bool = False,
        duration_ns: int | None = None,
        burst: Burst | None = None,
    ) -> ResultCode:
        """Run every step; CPU fallback as the R runtime does it."""
        compilation = self.compilation
        steps = compilation.steps
        compound = len(steps) > 1
        for index, step in enumerate(steps):
            context = burst.contexts.get(index) if burst is not None else None
            if step.device.is_cpu:
                code = await self._run_on_cpu(step.model)
            elif context is not None:
                code = await self._run_on_burst(compilation.prepared[index], context)
            else:
                code = await self._run_on_driver(
                    compilation.prepared[index], step.device, fenced, duration_ns
                )
            if code is ResultCode.NO_ERROR:
                continue
            if code is ResultCode.OUTPUT_INSUFFICIENT_SIZE or not compilation.fallback_allowed:
                return _app_visible(code)
            if code.is_deadline_miss:
                return code
            self.fell_back = True
            if step.device.is_cpu:
                if compound:
                    return await self._full_cpu_fallback()
                return _app_visible(code)
            code = await self._partial_cpu_fallback(step)
            if code is not ResultCode.NO_ERROR:
                if compound:
                    return await self._full_cpu_fallback()
                return _app_visible(code)
        return ResultCode.NO_ERROR

    async def _partial_cpu_fallback(self, step: Step) -> ResultCode:
        runtime = self.runtime
        runtime.tracer.begin(Layer.RUNTIME, Phase.EXECUTION, "cpuFallbackPartial")
        try:
            return await self._run_on_cpu(step.model)
        finally:
            runtime.tracer.end()

    async def _full_cpu_fallback(self) -> ResultCode:
        runtime = self.runtime
        runtime.tracer.begin(Layer.RUNTIME, Phase.EXECUTION, "cpuFallbackFull")
        try:
            return _app_visible(await self._run_on_cpu(self.compilation.model.model))
        finally:
            runtime.tracer.end()

    async def _run_on_cpu(self, model: Model) -> ResultCode:
        """Run ``model`` with the CPU executor on the calling thread (nnapi-reference)."""
        runtime = self.runtime
        kernel, tracer = runtime.kernel, runtime.tracer
        tracer.begin(Layer.RUNTIME, Phase.EXECUTION, "StepExecutor::computeOnCpu")
        try:
            plan = runtime.cpu_plan(model)
            runtime.cpu_stats.executions += 1
            started = kernel.now()
            tracer.begin(Layer.CPU, Phase.EXECUTION, "run")
            try:
                deadline = self.deadline_ns
                for index, op_ns in enumerate(plan.op_ns):
                    if deadline is not None and kernel.now() >= deadline:
                        return ResultCode.MISSED_DEADLINE_TRANSIENT
                    ptr, pco = plan.names_of(index)
                    iterations = plan.iterations_of(index)
                    if iterations > 1:
                        # The runtime's WHILE interpreter checks the loop timeout after each
                        # iteration (CpuExecutor): past it, MISSED_DEADLINE_TRANSIENT.
                        per_iteration = op_ns / iterations
                        needed = int(self.loop_timeout_ns // per_iteration) + 1
                        if needed < iterations:
                            tracer.begin(Layer.CPU, Phase.COMPUTATION, pco)
                            kernel.work(us(needed * per_iteration))
                            tracer.end()
                            await kernel.sync()
                            return ResultCode.MISSED_DEADLINE_TRANSIENT
                    transform = us(op_ns * 0.1)
                    tracer.begin(Layer.CPU, Phase.TRANSFORMATION, ptr)
                    kernel.work(transform)
                    tracer.switch(Layer.CPU, Phase.COMPUTATION, pco)
                    kernel.work(op_ns - transform)
                    tracer.end(2)
                    # The CPU executor is the calling thread: other threads run meanwhile.
                    await kernel.sync()
            finally:
                runtime.cpu_stats.busy_ns += kernel.now() - started
                tracer.end()
            return ResultCode.NO_ERROR
        finally:
            tracer.end()

    async def _run_on_burst(self, prepared: PreparedModel, context: BurstContext) -> ResultCode:
        """ExecutionBurstController::compute: one request packet over the burst's FMQs."""
        runtime = self.runtime
        kernel, tracer = runtime.kernel, runtime.tracer
        request = runtime.request_for(prepared.model)
        measure = MeasureTiming.YES if self.measure else MeasureTiming.NO
        service = prepared.service
        tracer.begin(Layer.IPC, Phase.EXECUTION, "ExecutionBurstController::compute")
        try:
            # The request packet reaches a spinning server at once; a sleeping one is woken.
            wake_ns = runtime.binder.latency_ns()
            await kernel.sleep(context.delivery_ns(kernel.now(), wake_ns))
            if not prepared.endpoint.alive:
                return ResultCode.DEAD_OBJECT
            with as_thread(context.thread):
                status, _, timing = await service.serve_burst(context, request, measure)
            await kernel.sync()
            if not prepared.endpoint.alive:
                return ResultCode.DEAD_OBJECT
            await kernel.sleep(FMQ_TRANSFER_NS)  # the client spins on the result queue
        finally:
            tracer.end()
        self.timing = timing
        return status_to_code(status)

    async def burst_compute(self, burst: Burst) -> ResultCode:
        """ANeuralNetworksExecution_burstCompute: run through a burst (one execution at a time)."""
        runtime = self.runtime
        runtime._api(Phase.EXECUTION, "ANeuralNetworksExecution_burstCompute")
        try:
            if burst.compilation is not self.compilation:
                return ResultCode.BAD_DATA
            if burst.busy:
                return ResultCode.BAD_STATE
            code = self._start()
            if code is not ResultCode.NO_ERROR:
                return code
            burst.busy = True
            try:
                code = await self._run_plan(burst=burst)
            finally:
                burst.busy = False
            self.finished_code = code
            return code
        finally:
            runtime.tracer.end()

    async def _run_on_driver(
        self,
        prepared: PreparedModel,
        device: RuntimeDevice,
        fenced: bool,
        duration_ns: int | None,
    ) -> ResultCode:
        """DriverPreparedModel::execute(Fenced): one step on a driver, over the binder."""
        runtime = self.runtime
        kernel, tracer, binder = runtime.kernel, runtime.tracer, runtime.binder
        versioned = runtime.versioned(device)
        version = versioned.version
        name = "DriverPreparedModel::executeFenced" if fenced else "DriverPreparedModel::execute"
        request = runtime.request_for(prepared.model)
        measure = MeasureTiming.YES if self.measure else MeasureTiming.NO
        deadline = self.deadline_ns if version is HalVersion.V1_3 else None
        loop_timeout = self.loop_timeout_ns
        tracer.begin(Layer.RUNTIME, Phase.INPUTS_AND_OUTPUTS, name)
        kernel.work(PER_OP_NS * (len(request.inputs) + len(request.outputs)))
        tracer.switch(Layer.IPC, Phase.EXECUTION, name + ("" if fenced else "::execute"))
        try:
            status: ErrorStatus | DeadObject
            timing: Timing | None = None
            endpoint = prepared.endpoint
            if fenced and version is HalVersion.V1_3:
                answer = await binder.call(
                    endpoint,
                    "IPreparedModel",
                    "executeFenced",
                    lambda: prepared.executeFenced(
                        request, (), measure, deadline, loop_timeout, duration_ns
                    ),
                )
                if isinstance(answer, DeadObject):
                    status = DEAD
                elif answer[0] is not ErrorStatus.NONE or answer[1] is None:
                    status = answer[0]
                else:
                    status, timing, _ = answer[1].get_execution_info()
            elif version.at_least(HalVersion.V1_2):
                # debug.nn.syncexec-hal=1: 1.2+ drivers get executeSynchronously*.
                if version is HalVersion.V1_3:
                    serve: Callable[[], Awaitable[Any]]
                    method = "executeSynchronously_1_3"
                    serve = lambda: prepared.executeSynchronously_1_3(  # noqa: E731
                        request, measure, deadline, loop_timeout
                    )
                else:
                    method = "executeSynchronously"
                    serve = lambda: prepared.executeSynchronously(request, measure)  # noqa: E731
                sync_answer = await binder.call(endpoint, "IPreparedModel", method, serve)
                if isinstance(sync_answer, DeadObject):
                    status = DEAD
                else:
                    status, _, timing = sync_answer
            else:
                status = await self._execute_with_callback(prepared, request, versioned)
        finally:
            tracer.switch(Layer.RUNTIME, Phase.RESULTS, name)
            kernel.work(API_CALL_NS)
            tracer.end(3)
        self.timing = timing
        if isinstance(status, DeadObject):
            runtime.forget(device)
            return ResultCode.DEAD_OBJECT
        return status_to_code(status)

    async def _execute_with_callback(
        self, prepared: PreparedModel, request: Request, versioned: VersionedIDevice
    ) -> ErrorStatus | DeadObject:
        """HAL 1.0/1.1: launch ``execute`` and wait for the callback."""
        runtime = self.runtime
        callback = ExecutionCallback(runtime.kernel)
        endpoint = prepared.endpoint
        endpoint.death_listeners.append(callback.dead)
        try:
            launch = await runtime.binder.call(
                endpoint,
                "IPreparedModel",
                "execute",
                lambda: prepared.execute(request, CallbackRef(runtime.endpoint, callback.notify)),
            )
            if isinstance(launch, DeadObject):
                return DEAD
            if launch is not ErrorStatus.NONE:
                return launch
            status, _, _ = await callback.event.wait()
            return status  # type: ignore[no-any-return]
        finally:
            if callback.dead in endpoint.death_listeners:
                endpoint.death_listeners.remove(callback.dead)


def _app_visible(code: ResultCode) -> ResultCode:
    """What a failed driver step becomes for the app: code → status → code (DEAD_OBJECT → OP_FAILED)."""
    return status_to_code(code_to_status(code))


def _request_for(model: Model) -> Request:
    """A request with one buffer per model input and output, in two pools."""
    main = model.main

    def arguments(indexes: tuple[int, ...]) -> tuple[list[RequestArgument], int]:
        args, offset = [], 0
        for index in indexes:
            size = main.operands[index].byte_size
            args.append(
                RequestArgument(location=DataLocation(pool_index=0, offset=offset, length=size))
            )
            offset += size
        return args, offset

    inputs, in_size = arguments(main.input_indexes)
    outputs, out_size = arguments(main.output_indexes)
    outputs = [
        RequestArgument(
            location=DataLocation(pool_index=1, offset=a.location.offset, length=a.location.length)
        )
        for a in outputs
    ]
    return Request(inputs=tuple(inputs), outputs=tuple(outputs), pool_sizes=(in_size, out_size))
