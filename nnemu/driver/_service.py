"""An emulated NNAPI driver service: IDevice and IPreparedModel for HAL 1.0-1.3.

The structure, checks and trace marks follow the AOSP sample driver
(``frameworks/ml/nn/driver/sample/SampleDriver.cpp``, Android 11), which is what
the HAL's reference behaviour is; hal-semantics.md §1 and §4 condense it.  Each
public method is the *server side* of one HIDL method: the runtime reaches it
through ``Binder.call`` on one of the service's binder threads.  Methods exist
only on the versions that define them (``versions()``).
"""

from __future__ import annotations

import functools
import random
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import attrs
import structlog
import trio

from nnemu.driver._device import ComputePlan, Device, Job
from nnemu.hal import (
    NO_TIMING,
    Capabilities,
    DeviceStatus,
    DeviceType,
    ErrorStatus,
    ExecutionPreference,
    HalVersion,
    MeasureTiming,
    Model,
    OperandType,
    Operation,
    OperationType,
    OutputShape,
    PerformanceInfo,
    Priority,
    Request,
    Subgraph,
    Timing,
    model_memory_bytes,
    operation_work,
    supported_by,
    validate_model,
    validate_request,
)
from nnemu.hal.presets import loop_iterations
from nnemu.ipc import Binder, Endpoint
from nnemu.scenario import (
    CpuSpec,
    DeadlinePolicy,
    DeviceSpec,
    FaultKind,
    PerformanceSpec,
    PerfSpec,
)
from nnemu.sim import FileHandle, Kernel, ProcessTable, SimQueue, SimThread, us
from nnemu.tracer import Layer, Phase, Tracer

logger = structlog.get_logger(layer="driver")

VALIDATE_NS_PER_OP = 2_000
"""Driver-side model validation cost per operation."""

AIDL_SYSTEM_UID = 1000


CACHE_TOKEN_BYTES = 32
"""Length of a compilation cache token (HAL 1.2 Constant::BYTE_SIZE_OF_CACHE_TOKEN)."""


@attrs.frozen
class _CacheEntry:
    """What a caching driver writes into every cache file of a compilation."""

    device: str
    token: bytes
    model: Model
    priority: Priority


@attrs.frozen
class CallbackRef:
    """A client's callback object as the driver holds it: where it lives and what to call."""

    endpoint: Endpoint
    """The client process."""
    target: Callable[..., None]
    """The client-side ``notify`` implementation (latches the first call)."""


def capabilities_from(spec: PerformanceSpec) -> Capabilities:
    """The HAL 1.3 Capabilities value a device spec describes."""

    def info(p: PerfSpec) -> PerformanceInfo:
        return PerformanceInfo(p.exec_time, p.power_usage)

    relaxed = info(spec.relaxed or spec.float32)
    table: list[tuple[OperandType, PerformanceInfo]] = []
    for kind in OperandType:
        if kind in (OperandType.SUBGRAPH, OperandType.OEM, OperandType.TENSOR_OEM_BYTE):
            continue
        if kind in (OperandType.FLOAT32, OperandType.TENSOR_FLOAT32):
            table.append((kind, info(spec.float32)))
        elif kind in (
            OperandType.TENSOR_QUANT8_ASYMM,
            OperandType.TENSOR_QUANT8_ASYMM_SIGNED,
            OperandType.TENSOR_QUANT8_SYMM,
            OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL,
        ):
            table.append((kind, info(spec.quant8)))
        else:
            table.append((kind, info(spec.other)))
    return Capabilities(
        relaxed_float32_to_float16_scalar=relaxed,
        relaxed_float32_to_float16_tensor=relaxed,
        operand_performance=table,
        if_performance=info(spec.if_),
        while_performance=info(spec.while_),
    )


def compute_plan(model: Model, capabilities: Capabilities, cpu: CpuSpec) -> ComputePlan:
    """Per-operation cost of ``model`` on a device with ``capabilities``.

    An operation costs what it costs on the reference CPU (``cpu``: ns per MAC and per
    output element) times the device's execTime ratio for its first input's type.
    """
    relaxed = model.relax_computation_float32_to_float16

    def op_cost(subgraph: Subgraph, op: Operation) -> float:
        work = operation_work(model, subgraph, op)
        base = work.macs * cpu.ns_per_mac + work.elements * cpu.ns_per_element
        if op.type is OperationType.WHILE:
            # WHILE = while + cond sum + body sum, per iteration (hal-semantics.md §2).
            cond, body = (_referenced(model, subgraph, i) for i in op.inputs[:2])
            inner = subgraph_cost(cond) + subgraph_cost(body)
            return base * capabilities.while_performance.exec_time + inner
        if op.type is OperationType.IF:
            # IF = if + mean(then, else).
            branches = [_referenced(model, subgraph, i) for i in op.inputs[1:3]]
            inner = sum(subgraph_cost(b) for b in branches) / max(1, len(branches))
            return base * capabilities.if_performance.exec_time + inner
        info = capabilities.performance(work.first_input_type, relaxed=relaxed)
        return base * info.exec_time

    def subgraph_cost(subgraph: Subgraph | None) -> float:
        if subgraph is None:
            return 0.0
        return sum(op_cost(subgraph, op) for op in subgraph.operations)

    op_ns: list[int] = []
    iterations: list[int] = []
    for op in model.main.operations:
        count = loop_iterations(model, op) if op.type is OperationType.WHILE else 1
        per_iteration = op_cost(model.main, op)
        op_ns.append(us(max(per_iteration * count, 1000.0)))
        iterations.append(count)
    return ComputePlan(
        tuple(op_ns),
        tuple(iterations) if any(n > 1 for n in iterations) else (),
        tuple(_trace_names(model, op) for op in model.main.operations),
    )


# The CpuExecutor's marks per operation: transformation (PTR) then computation (PCO),
# named after the functions AOSP traces (hal-semantics.md §6); others use the op name.
_TRACE_NAMES: dict[OperationType, tuple[str, str]] = {
    OperationType.CONV_2D: ("convFloat32", "optimized_ops::Conv"),
    OperationType.DEPTHWISE_CONV_2D: ("depthwiseConvFloat32", "optimized_ops::DepthwiseConv"),
    OperationType.ADD: ("addFloat32", "optimized_ops::Add"),
    OperationType.AVERAGE_POOL_2D: ("averagePoolFloat32", "optimized_ops::AveragePool"),
    OperationType.MAX_POOL_2D: ("maxPoolFloat32", "optimized_ops::MaxPool"),
    OperationType.FULLY_CONNECTED: ("fullyConnectedFloat32", "optimized_ops::FullyConnected"),
    OperationType.SOFTMAX: ("softmaxFloat32", "optimized_ops::Softmax"),
    OperationType.LSTM: ("LSTMCell::Prepare", "LSTMCell::LSTMEvalFloat32"),
    OperationType.RNN: ("RNN::Prepare", "RNN::Eval"),
    OperationType.TANH: ("tanhPrepare", "tanhFloat32"),
}


def _trace_names(model: Model, op: Operation) -> tuple[str, str]:
    names = _TRACE_NAMES.get(op.type)
    if names is None:
        name = op.type.name.lower() if isinstance(op.type, OperationType) else f"op{op.type}"
        return (name, name)
    quantized = any(
        model.main.operands[i].type is OperandType.TENSOR_QUANT8_ASYMM
        for i in op.inputs[:1]
        if i < len(model.main.operands)
    )
    if quantized:
        return (names[0].replace("Float32", "Quant8"), names[1])
    return names


def _referenced(model: Model, subgraph: Subgraph, operand_index: int) -> Subgraph | None:
    """The subgraph a SUBGRAPH operand refers to (None if it is not one)."""
    if operand_index >= len(subgraph.operands):
        return None
    operand = subgraph.operands[operand_index]
    if operand.type is not OperandType.SUBGRAPH:
        return None
    index = operand.location.offset
    return model.referenced[index] if index < len(model.referenced) else None


class PreparedModel:
    """IPreparedModel: a model prepared for one device, living in the driver process."""

    def __init__(
        self,
        service: DriverService,
        model: Model,
        version: HalVersion,
        priority: Priority,
        uid: int,
        plan: ComputePlan,
        memory_bytes: int,
    ) -> None:
        self.service = service
        self.model = model
        self.version = version
        self.priority = priority
        self.uid = uid
        self.plan = plan
        self.memory_bytes = memory_bytes
        # The last request that passed validation: runtimes send the same request
        # object for every execution of a step, and validation is a pure function.
        self.validated_request: Request | None = None

    @property
    def endpoint(self) -> Endpoint:
        """The driver process the prepared model lives in."""
        return self.service.endpoint

    def release(self) -> None:
        """The client dropped its last reference: the driver frees the model's memory."""
        if self.memory_bytes:
            self.service.memory_used -= self.memory_bytes
            self.memory_bytes = 0

    # The HIDL methods. ------------------------------------------------------
    async def execute(self, request: Request, callback: CallbackRef | None) -> ErrorStatus:
        """IPreparedModel::execute (1.0)."""
        return await self.service._execute_async(
            self, request, MeasureTiming.NO, None, None, callback, HalVersion.V1_0
        )

    async def execute_1_2(
        self, request: Request, measure: MeasureTiming, callback: CallbackRef | None
    ) -> ErrorStatus:
        """IPreparedModel::execute_1_2."""
        return await self.service._execute_async(
            self, request, measure, None, None, callback, HalVersion.V1_2
        )

    async def execute_1_3(
        self,
        request: Request,
        measure: MeasureTiming,
        deadline_ns: int | None,
        loop_timeout_ns: int | None,
        callback: CallbackRef | None,
    ) -> ErrorStatus:
        """IPreparedModel::execute_1_3."""
        return await self.service._execute_async(
            self, request, measure, deadline_ns, loop_timeout_ns, callback, HalVersion.V1_3
        )

    async def executeSynchronously(
        self, request: Request, measure: MeasureTiming
    ) -> tuple[ErrorStatus, tuple[OutputShape, ...], Timing]:
        """IPreparedModel::executeSynchronously (1.2)."""
        return await self.service._execute_sync(self, request, measure, None, None, HalVersion.V1_2)

    async def executeSynchronously_1_3(
        self,
        request: Request,
        measure: MeasureTiming,
        deadline_ns: int | None,
        loop_timeout_ns: int | None,
    ) -> tuple[ErrorStatus, tuple[OutputShape, ...], Timing]:
        """IPreparedModel::executeSynchronously_1_3."""
        return await self.service._execute_sync(
            self, request, measure, deadline_ns, loop_timeout_ns, HalVersion.V1_3
        )

    async def configureExecutionBurst(
        self, callback: object, preference: int = 1
    ) -> tuple[ErrorStatus, BurstContext | None]:
        """IPreparedModel::configureExecutionBurst (1.2): a burst server thread for this model."""
        return await self.service._configure_burst(self, callback, preference)

    async def executeFenced(
        self,
        request: Request,
        wait_for: Sequence[object | None],
        measure: MeasureTiming,
        deadline_ns: int | None,
        loop_timeout_ns: int | None,
        duration_ns: int | None,
    ) -> tuple[ErrorStatus, FencedResult | None]:
        """IPreparedModel::executeFenced (1.3): runs inside the call, like the sample driver."""
        return await self.service._execute_fenced(
            self, request, wait_for, measure, deadline_ns, loop_timeout_ns, duration_ns
        )


BURST_POLL_NS = 50_000
"""How long the sample driver's burst server spins on the request queue before it sleeps."""
FMQ_TRANSFER_NS = 5_000
"""Moving a packet through a fast message queue to a thread that is spinning on it."""


class BurstContext:
    """IBurstContext: a burst's server side — a driver thread serving one client's FMQ.

    Requests and results travel over fast message queues in shared memory, not binder:
    a packet reaches a server that is still spinning (within 50 µs of its last packet,
    never for LOW_POWER bursts) in a few µs; otherwise the server sleeps on a futex and
    waking it costs a context switch (modelled as one IPC latency).
    """

    def __init__(self, prepared: PreparedModel, thread: SimThread, polls: bool) -> None:
        self.prepared = prepared
        self.thread = thread
        self.polls = polls
        self.last_packet_ns: int | None = None
        self.slots: set[int] = set()
        self.busy = False

    def delivery_ns(self, now_ns: int, wake_ns: int) -> int:
        """Time for a request packet to reach the server thread."""
        last = self.last_packet_ns
        if self.polls and last is not None and now_ns - last <= BURST_POLL_NS:
            return FMQ_TRANSFER_NS
        return wake_ns

    def freeMemory(self, slot: int) -> None:
        """IBurstContext::freeMemory: the client dropped a memory slot from its cache."""
        self.slots.discard(slot)


@attrs.frozen
class FencedResult:
    """What executeFenced hands back: the (already signalled) fence and the callback's answers."""

    status: ErrorStatus
    """Status of the execution (what the sync fence reports)."""
    timing_launched: Timing
    """Call to fence signal."""
    timing_fenced: Timing
    """Inputs signalled to fence signal."""

    def get_execution_info(self) -> tuple[ErrorStatus, Timing, Timing]:
        """IFencedExecutionCallback::getExecutionInfo."""
        return self.status, self.timing_launched, self.timing_fenced


def _valid_preference(value: int) -> bool:
    return value in tuple(ExecutionPreference)


def _valid_priority(value: int) -> bool:
    return value in tuple(Priority)


class DriverService:
    """One driver service process: IDevice, its prepared models, its device and threads."""

    def __init__(
        self,
        spec: DeviceSpec,
        *,
        kernel: Kernel,
        tracer: Tracer,
        binder: Binder,
        processes: ProcessTable,
        cpu: CpuSpec,
        ipc_binder_threads: int,
        seed: int,
        device_type: type[Device] = Device,
    ) -> None:
        self.spec = spec
        self.name = spec.name
        self.version = spec.hal_version
        self.kernel = kernel
        self.tracer = tracer
        self.binder = binder
        self.cpu = cpu
        self.process = processes.spawn(
            f"android.hardware.neuralnetworks@{spec.hal_version.value}-service-{spec.name}",
            AIDL_SYSTEM_UID,
        )
        self.endpoint = Endpoint(kernel, self.process, spec.binder_threads or ipc_binder_threads)
        self.capabilities = capabilities_from(spec.performance)
        self.device = device_type(kernel, spec, random.Random(f"{seed}:device:{spec.name}"), tracer)
        self.supported = (
            frozenset(spec.supported_operations) if spec.supported_operations is not None else None
        )
        self.status = DeviceStatus.AVAILABLE
        self.memory_used = 0
        self._jobs: SimQueue = SimQueue(kernel)
        self._workers = [
            self.process.new_thread(f"nn-worker-{i + 1}") for i in range(spec.worker_threads)
        ]
        self.prepared_models = 0
        self._log = logger.bind(device=spec.name)
        self._failure_probability = 0.0
        self.bursts = 0
        self._fault_rng = random.Random(f"{seed}:faults:{spec.name}")

    def versions(self) -> tuple[HalVersion, ...]:
        """HAL versions whose methods this service implements (its own and older)."""
        return tuple(v for v in HalVersion if self.version.at_least(v))

    # ------------------------------------------------------------- threads
    def start(self, nursery: trio.Nursery) -> None:
        """Start the driver's worker threads in ``nursery``."""
        self.tracer.process(self.process.pid, self.process.name)
        for thread in self._workers:
            self.kernel.spawn(nursery, self._worker, thread=thread)
        self._schedule_faults()

    # -------------------------------------------------------------- faults
    def _schedule_faults(self) -> None:
        kernel = self.kernel
        for fault in self.spec.faults:
            if fault.kind is FaultKind.TRANSIENT_FAILURE:
                self._failure_probability = fault.probability or 0.0
                continue
            at = us((fault.at_ms or 0.0) * 1e6)
            until = us(fault.until_ms * 1e6) if fault.until_ms is not None else None
            if fault.kind is FaultKind.CRASH:
                kernel.call_at(at, self.crash)
            elif fault.kind in (FaultKind.BUSY, FaultKind.OFFLINE):
                state = DeviceStatus.BUSY if fault.kind is FaultKind.BUSY else DeviceStatus.OFFLINE
                kernel.call_at(at, functools.partial(self._set_status, state))
                if until is not None:
                    kernel.call_at(until, lambda: self._set_status(DeviceStatus.AVAILABLE))
            elif fault.kind is FaultKind.SLOWDOWN:
                kernel.call_at(at, functools.partial(self._set_slowdown, fault.factor))
                if until is not None:
                    kernel.call_at(until, lambda: self._set_slowdown(1.0))

    def _set_status(self, status: DeviceStatus) -> None:
        self._log.info("device_status_changed", status=status.name)
        self.status = status

    def _set_slowdown(self, factor: float) -> None:
        self._log.info("device_slowdown", factor=factor)
        self.device.slowdown = factor

    def crash(self) -> None:
        """The driver process dies: calls in flight and later get DEAD_OBJECT."""
        if not self.endpoint.alive:
            return
        self._log.warning("driver_died")
        self.tracer.process_died(self.process.pid)
        self.status = DeviceStatus.UNKNOWN
        self.device.die()
        self.endpoint.kill()

    async def _worker(self) -> None:
        while True:
            job: Callable[[], Awaitable[None]] = await self._jobs.get()
            await job()

    def _launch(self, job: Callable[[], Awaitable[None]]) -> bool:
        """Hand ``job`` to a worker thread; False if the task cannot be started."""
        if not self.endpoint.alive:
            return False
        self._jobs.put_nowait(job)
        return True

    def _notify(self, callback: CallbackRef, iface: str, method: str, *args: Any) -> None:
        """Call the client's callback (oneway, exactly once per launch)."""
        if not self.endpoint.alive:
            return  # a dead process sends nothing; the client's death recipient answers
        self.binder.oneway(callback.endpoint, iface, method, lambda: callback.target(*args))

    # ------------------------------------------------------------- IDevice
    def _driver_trace(self, phase: Phase, detail: str) -> None:
        self.tracer.begin(Layer.DRIVER, phase, f"SampleDriver::{detail}")

    async def getCapabilities(self) -> tuple[ErrorStatus, Capabilities]:
        """IDevice::getCapabilities (and _1_1/_1_2/_1_3: the same value in this model)."""
        self._driver_trace(Phase.INITIALIZATION, "getCapabilities")
        self.kernel.work(5_000)
        self.tracer.end()
        if self.status is DeviceStatus.OFFLINE:
            return ErrorStatus.DEVICE_UNAVAILABLE, self.capabilities
        return ErrorStatus.NONE, self.capabilities

    async def getVersionString(self) -> tuple[ErrorStatus, str]:
        """IDevice::getVersionString (1.2)."""
        self._driver_trace(Phase.INITIALIZATION, "getVersionString")
        self.tracer.end()
        return ErrorStatus.NONE, self.spec.version_string

    async def getType(self) -> tuple[ErrorStatus, DeviceType]:
        """IDevice::getType (1.2)."""
        self._driver_trace(Phase.INITIALIZATION, "getType")
        self.tracer.end()
        return ErrorStatus.NONE, self.spec.type

    async def getSupportedExtensions(self) -> tuple[ErrorStatus, tuple[()]]:
        """IDevice::getSupportedExtensions (1.2): none."""
        self._driver_trace(Phase.INITIALIZATION, "getSupportedExtensions")
        self.tracer.end()
        return ErrorStatus.NONE, ()

    async def getNumberOfCacheFilesNeeded(self) -> tuple[ErrorStatus, int, int]:
        """IDevice::getNumberOfCacheFilesNeeded (1.2): the scenario's ``cache_files``."""
        self._driver_trace(Phase.INITIALIZATION, "getNumberOfCacheFilesNeeded")
        self.tracer.end()
        n_model, n_data = self.spec.cache_files
        return ErrorStatus.NONE, n_model, n_data

    @property
    def caches(self) -> bool:
        """Whether the driver caches compilations (asks for at least one cache file)."""
        return any(self.spec.cache_files) and self.version.at_least(HalVersion.V1_2)

    def _cache_args_ok(
        self, model_cache: Sequence[object], data_cache: Sequence[object], token: bytes
    ) -> bool:
        n_model, n_data = self.spec.cache_files
        return (
            len(model_cache) == n_model
            and len(data_cache) == n_data
            and len(token) == CACHE_TOKEN_BYTES
            and all(isinstance(handle, FileHandle) for handle in (*model_cache, *data_cache))
        )

    async def getStatus(self) -> DeviceStatus:
        """IDevice::getStatus."""
        self._driver_trace(Phase.UNSPECIFIED, "getStatus")
        self.tracer.end()
        return self.status

    async def getSupportedOperations(
        self, model: Model, version: HalVersion = HalVersion.V1_0
    ) -> tuple[ErrorStatus, tuple[bool, ...]]:
        """IDevice::getSupportedOperations (the _1_x variants pass their version)."""
        self._driver_trace(Phase.COMPILATION, version.method("getSupportedOperations"))
        try:
            self.kernel.work(VALIDATE_NS_PER_OP * len(model.main.operations))
            if self.status is DeviceStatus.OFFLINE:
                return ErrorStatus.DEVICE_UNAVAILABLE, ()
            if validate_model(model, version) is not None:
                return ErrorStatus.INVALID_ARGUMENT, ()
            return ErrorStatus.NONE, supported_by(model, self.supported)
        finally:
            self.tracer.end()

    async def prepareModel(
        self, model: Model, callback: CallbackRef | None, *, uid: int = 0
    ) -> ErrorStatus:
        """IDevice::prepareModel (1.0)."""
        return await self._prepare(
            HalVersion.V1_0,
            model,
            ExecutionPreference.FAST_SINGLE_ANSWER,
            Priority.MEDIUM,
            None,
            callback,
            uid,
        )

    async def prepareModel_1_1(
        self, model: Model, preference: int, callback: CallbackRef | None, *, uid: int = 0
    ) -> ErrorStatus:
        """IDevice::prepareModel_1_1."""
        return await self._prepare(
            HalVersion.V1_1, model, preference, Priority.MEDIUM, None, callback, uid
        )

    async def prepareModel_1_2(
        self,
        model: Model,
        preference: int,
        model_cache: Sequence[object],
        data_cache: Sequence[object],
        token: bytes,
        callback: CallbackRef | None,
        *,
        uid: int = 0,
    ) -> ErrorStatus:
        """IDevice::prepareModel_1_2 (a caching driver saves the compiled model in the caches)."""
        return await self._prepare(
            HalVersion.V1_2,
            model,
            preference,
            Priority.MEDIUM,
            None,
            callback,
            uid,
            cache=(model_cache, data_cache, token),
        )

    async def prepareModel_1_3(
        self,
        model: Model,
        preference: int,
        priority: int,
        deadline_ns: int | None,
        model_cache: Sequence[object],
        data_cache: Sequence[object],
        token: bytes,
        callback: CallbackRef | None,
        *,
        uid: int = 0,
    ) -> ErrorStatus:
        """IDevice::prepareModel_1_3."""
        return await self._prepare(
            HalVersion.V1_3,
            model,
            preference,
            priority,
            deadline_ns,
            callback,
            uid,
            cache=(model_cache, data_cache, token),
        )

    async def prepareModelFromCache(
        self,
        model_cache: Sequence[object],
        data_cache: Sequence[object],
        token: bytes,
        callback: CallbackRef | None,
        *,
        uid: int = 0,
    ) -> ErrorStatus:
        """IDevice::prepareModelFromCache (1.2)."""
        return await self._from_cache(
            HalVersion.V1_2, None, model_cache, data_cache, token, callback, uid=uid
        )

    async def prepareModelFromCache_1_3(
        self,
        deadline_ns: int | None,
        model_cache: Sequence[object],
        data_cache: Sequence[object],
        token: bytes,
        callback: CallbackRef | None,
        *,
        uid: int = 0,
    ) -> ErrorStatus:
        """IDevice::prepareModelFromCache_1_3 (the priority is implied by the cache)."""
        return await self._from_cache(
            HalVersion.V1_3, deadline_ns, model_cache, data_cache, token, callback, uid=uid
        )

    async def _from_cache(
        self,
        version: HalVersion,
        deadline_ns: int | None,
        model_cache: Sequence[object],
        data_cache: Sequence[object],
        token: bytes,
        callback: CallbackRef | None,
        *,
        uid: int,
    ) -> ErrorStatus:
        """prepareModelFromCache*: validate, then load the compiled model in the background.

        A driver that does not cache fails with GENERAL_FAILURE, as the sample driver does.
        """
        self._driver_trace(
            Phase.COMPILATION, version.method("prepareModelFromCache", since=HalVersion.V1_2)
        )
        try:
            if callback is None:
                return ErrorStatus.INVALID_ARGUMENT
            if not self.caches:
                return self._refuse(callback, version, ErrorStatus.GENERAL_FAILURE)
            if not self._cache_args_ok(model_cache, data_cache, token):
                return self._refuse(callback, version, ErrorStatus.INVALID_ARGUMENT)
            if self.status is not DeviceStatus.AVAILABLE:
                return self._refuse(callback, version, ErrorStatus.DEVICE_UNAVAILABLE)
            if deadline_ns is not None and self.kernel.now() >= deadline_ns:
                self._notify_prepared(
                    callback, version, ErrorStatus.MISSED_DEADLINE_PERSISTENT, None
                )
                return ErrorStatus.NONE
            await self.kernel.sync()
            handles = tuple(h for h in (*model_cache, *data_cache) if isinstance(h, FileHandle))
            launched = self._launch(
                lambda: self._from_cache_task(version, deadline_ns, handles, token, callback, uid)
            )
            if not launched:
                return self._refuse(callback, version, ErrorStatus.GENERAL_FAILURE)
            return ErrorStatus.NONE
        finally:
            self.tracer.end()

    async def _from_cache_task(
        self,
        version: HalVersion,
        deadline_ns: int | None,
        handles: tuple[FileHandle, ...],
        token: bytes,
        callback: CallbackRef,
        uid: int,
    ) -> None:
        kernel, tracer = self.kernel, self.tracer
        tracer.begin(Layer.DRIVER, Phase.COMPILATION, "SamplePreparedModel::loadFromCache")
        try:
            await kernel.sleep(us(self.spec.cost.prepare_from_cache_ms * 1e6))
            if not self.endpoint.alive:
                return
            entries = [handle.read() for handle in handles]
            first = entries[0] if entries else None
            if not isinstance(first, _CacheEntry) or any(entry != first for entry in entries):
                # Empty, foreign or tampered cache files: a full preparation is needed.
                self._notify_prepared(callback, version, ErrorStatus.GENERAL_FAILURE, None)
                return
            if first.token != token or first.device != self.name:
                self._notify_prepared(callback, version, ErrorStatus.GENERAL_FAILURE, None)
                return
            if (
                deadline_ns is not None
                and self.spec.deadline_policy is DeadlinePolicy.ABORT
                and kernel.now_ns > deadline_ns
            ):
                self._notify_prepared(
                    callback, version, ErrorStatus.MISSED_DEADLINE_TRANSIENT, None
                )
                return
            memory = model_memory_bytes(first.model)
            refused = self._reserve(memory)
            if refused is not None:
                self._notify_prepared(callback, version, refused, None)
                return
            # The calling app's uid (getCallingUid); the priority is the cached one.
            prepared = self._build(first.model, version, first.priority, uid, memory)
            self._notify_prepared(callback, version, ErrorStatus.NONE, prepared)
        finally:
            tracer.end()

    def _reserve(self, memory: int) -> ErrorStatus | None:
        """Reserve device memory for a prepared model; the error status if it cannot fit."""
        capacity = int(self.spec.memory_mb * 1024 * 1024)
        if memory > capacity:
            return ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT  # too large, whatever is loaded
        if self.memory_used + memory > capacity:
            return ErrorStatus.RESOURCE_EXHAUSTED_TRANSIENT  # fits once others are released
        self.memory_used += memory
        return None

    def _build(
        self, model: Model, version: HalVersion, priority: Priority, uid: int, memory: int
    ) -> PreparedModel:
        plan = compute_plan(model, self.capabilities, self.cpu)
        self.prepared_models += 1
        return PreparedModel(self, model, version, priority, uid, plan, memory)

    def _refuse(
        self, callback: CallbackRef, version: HalVersion, status: ErrorStatus
    ) -> ErrorStatus:
        """A launch that fails: notify ``status`` with a null model and return it too (§1.1)."""
        self._notify_prepared(callback, version, status, None)
        return status

    def _notify_prepared(
        self,
        callback: CallbackRef,
        version: HalVersion,
        status: ErrorStatus,
        prepared: PreparedModel | None,
    ) -> None:
        self._notify(
            callback,
            "IPreparedModelCallback",
            version.notify_method,
            status.downgraded(version),
            prepared,
        )

    async def _prepare(
        self,
        version: HalVersion,
        model: Model,
        preference: int,
        priority: int,
        deadline_ns: int | None,
        callback: CallbackRef | None,
        uid: int,
        *,
        cache: tuple[Sequence[object], Sequence[object], bytes] = ((), (), b""),
    ) -> ErrorStatus:
        self._driver_trace(Phase.COMPILATION, version.method("prepareModel"))
        try:
            kernel = self.kernel
            kernel.work(VALIDATE_NS_PER_OP * len(model.main.operations))
            if callback is None:
                return ErrorStatus.INVALID_ARGUMENT
            reason = validate_model(model, version)
            if reason is None and not _valid_preference(preference):
                reason = f"invalid execution preference {preference}"
            if reason is None and not _valid_priority(priority):
                reason = f"invalid priority {priority}"
            if reason is not None:
                self._log.debug("prepare_rejected", reason=reason)
                return self._refuse(callback, version, ErrorStatus.INVALID_ARGUMENT)
            if self.status is DeviceStatus.OFFLINE:
                return self._refuse(callback, version, ErrorStatus.DEVICE_UNAVAILABLE)
            if not all(supported_by(model, self.supported)):
                # A partial driver cannot prepare what it does not fully support.
                self._notify_prepared(callback, version, ErrorStatus.INVALID_ARGUMENT, None)
                return ErrorStatus.NONE
            if deadline_ns is not None and kernel.now() >= deadline_ns:
                self._notify_prepared(
                    callback, version, ErrorStatus.MISSED_DEADLINE_PERSISTENT, None
                )
                return ErrorStatus.NONE
            await kernel.sync()
            launched = self._launch(
                lambda: self._prepare_task(
                    version, model, Priority(priority), deadline_ns, callback, uid, cache
                )
            )
            if not launched:
                return self._refuse(callback, version, ErrorStatus.GENERAL_FAILURE)
            return ErrorStatus.NONE
        finally:
            self.tracer.end()

    async def _prepare_task(
        self,
        version: HalVersion,
        model: Model,
        priority: Priority,
        deadline_ns: int | None,
        callback: CallbackRef,
        uid: int,
        cache: tuple[Sequence[object], Sequence[object], bytes],
    ) -> None:
        """The background preparation (a detached thread in the sample driver)."""
        kernel, tracer = self.kernel, self.tracer
        tracer.begin(Layer.DRIVER, Phase.COMPILATION, "SamplePreparedModel::initialize")
        try:
            cost = self.spec.cost
            prepare_ns = us(
                (cost.prepare_ms + cost.prepare_ms_per_op * len(model.main.operations)) * 1e6
            )
            memory = model_memory_bytes(model)
            refused = self._reserve(memory)
            if refused is not None:
                self._notify_prepared(callback, version, refused, None)
                return
            await kernel.sleep(prepare_ns)
            if not self.endpoint.alive:
                return  # the client's death recipient has released its callback
            status = ErrorStatus.NONE
            if (
                deadline_ns is not None
                and self.spec.deadline_policy is DeadlinePolicy.ABORT
                and kernel.now_ns > deadline_ns
            ):
                status = ErrorStatus.MISSED_DEADLINE_TRANSIENT
            if status is not ErrorStatus.NONE:
                self.memory_used -= memory
                self._notify_prepared(callback, version, status, None)
                return
            prepared = self._build(model, version, priority, uid, memory)
            model_cache, data_cache, token = cache
            if self.caches and self._cache_args_ok(model_cache, data_cache, token):
                # Save the compilation; trouble with the caches never fails preparation.
                entry = _CacheEntry(self.name, token, model, priority)
                for handle in (*model_cache, *data_cache):
                    if isinstance(handle, FileHandle):
                        handle.write(entry)
            self._notify_prepared(callback, version, ErrorStatus.NONE, prepared)
        finally:
            tracer.end()

    # ------------------------------------------------------ IPreparedModel
    def _check_request(
        self, prepared: PreparedModel, request: Request, deadline_ns: int | None
    ) -> ErrorStatus | None:
        reason = None
        if request is not prepared.validated_request:
            reason = validate_request(request, prepared.model)
            if reason is None:
                prepared.validated_request = request
        if reason is not None:
            self._log.debug("request_rejected", reason=reason)
            return ErrorStatus.INVALID_ARGUMENT
        if deadline_ns is not None and self.kernel.now() >= deadline_ns:
            self.device.stats.refused_by_uid[prepared.uid] += 1
            return ErrorStatus.MISSED_DEADLINE_PERSISTENT
        return None

    async def _compute(
        self, prepared: PreparedModel, deadline_ns: int | None, loop_timeout_ns: int | None
    ) -> tuple[ErrorStatus, int]:
        """Run on the device; returns status and time on device (ns)."""
        kernel, device, spec = self.kernel, self.device, self.spec
        if self.status is not DeviceStatus.AVAILABLE:
            return ErrorStatus.DEVICE_UNAVAILABLE, 0
        launch_ns = us(spec.cost.launch_us * 1000)
        job = Job(
            uid=prepared.uid,
            priority=prepared.priority,
            plan=prepared.plan,
            scale=device.jitter(),
            deadline_ns=deadline_ns,
            loop_timeout_ns=loop_timeout_ns,
        )
        await kernel.sync()
        now = kernel.now_ns
        if deadline_ns is not None and spec.deadline_policy is DeadlinePolicy.ABORT:
            # Refuse before starting when the driver's own estimate cannot make it:
            # PERSISTENT if even an idle device could not, TRANSIENT if a busy one cannot.
            idle_ns = launch_ns + us(prepared.plan.total_ns * device.slowdown)
            if now + idle_ns > deadline_ns:
                device.stats.rejected_persistent += 1
                device.stats.refused_by_uid[prepared.uid] += 1
                return ErrorStatus.MISSED_DEADLINE_PERSISTENT, 0
            if now + device.backlog_ns(job) + idle_ns > deadline_ns:
                device.stats.rejected_transient += 1
                device.stats.refused_by_uid[prepared.uid] += 1
                return ErrorStatus.MISSED_DEADLINE_TRANSIENT, 0
        if (
            spec.queue_limit is not None
            and device.all_units_busy
            and device.queue_length >= spec.queue_limit
        ):
            return ErrorStatus.RESOURCE_EXHAUSTED_TRANSIENT, 0
        status = await device.execute(job, launch_ns=launch_ns)
        if (
            status is ErrorStatus.NONE
            and self._failure_probability
            and self._fault_rng.random() < self._failure_probability
        ):
            status = ErrorStatus.GENERAL_FAILURE
        return status, kernel.now_ns - now

    def _shapes(self, prepared: PreparedModel) -> tuple[OutputShape, ...]:
        main = prepared.model.main
        return tuple(OutputShape(main.operands[i].dimensions) for i in main.output_indexes)

    async def _execute_async(
        self,
        prepared: PreparedModel,
        request: Request,
        measure: MeasureTiming,
        deadline_ns: int | None,
        loop_timeout_ns: int | None,
        callback: CallbackRef | None,
        version: HalVersion,
    ) -> ErrorStatus:
        tracer = self.tracer
        method = version.notify_method
        tracer.begin(Layer.DRIVER, Phase.EXECUTION, "SampleDriver::executeBase")
        try:
            entered = self.kernel.now()
            self.kernel.work(VALIDATE_NS_PER_OP)
            if callback is None:
                return ErrorStatus.INVALID_ARGUMENT
            error = self._check_request(prepared, request, deadline_ns)
            if error is ErrorStatus.INVALID_ARGUMENT:
                self._notify(callback, "IExecutionCallback", method, error, (), NO_TIMING)
                return error
            if error is not None:
                self._notify(
                    callback, "IExecutionCallback", method, error.downgraded(version), (), NO_TIMING
                )
                return ErrorStatus.NONE
            await self.kernel.sync()

            async def task() -> None:
                tracer.begin(Layer.DRIVER, Phase.INPUTS_AND_OUTPUTS, "SampleDriver::asyncExecute")
                tracer.switch(Layer.DRIVER, Phase.EXECUTION, "SampleDriver::asyncExecute")
                try:
                    status, on_device = await self._compute(prepared, deadline_ns, loop_timeout_ns)
                finally:
                    tracer.end(2)
                shapes = self._shapes(prepared) if status is ErrorStatus.NONE else ()
                timing = NO_TIMING
                if measure is MeasureTiming.YES and status is ErrorStatus.NONE:
                    timing = Timing(on_device // 1000, (self.kernel.now_ns - entered) // 1000)
                self._notify(
                    callback,
                    "IExecutionCallback",
                    method,
                    status.downgraded(version),
                    shapes,
                    timing,
                )

            if not self._launch(task):
                self._notify(
                    callback,
                    "IExecutionCallback",
                    method,
                    ErrorStatus.GENERAL_FAILURE,
                    (),
                    NO_TIMING,
                )
                return ErrorStatus.GENERAL_FAILURE
            return ErrorStatus.NONE
        finally:
            tracer.end()

    async def _execute_sync(
        self,
        prepared: PreparedModel,
        request: Request,
        measure: MeasureTiming,
        deadline_ns: int | None,
        loop_timeout_ns: int | None,
        version: HalVersion,
    ) -> tuple[ErrorStatus, tuple[OutputShape, ...], Timing]:
        tracer, kernel = self.tracer, self.kernel
        tracer.begin(Layer.DRIVER, Phase.EXECUTION, "SampleDriver::executeSynchronouslyBase")
        try:
            entered = kernel.now()
            kernel.work(VALIDATE_NS_PER_OP)
            error = self._check_request(prepared, request, deadline_ns)
            if error is not None:
                return error.downgraded(version), (), NO_TIMING
            tracer.switch(
                Layer.DRIVER, Phase.INPUTS_AND_OUTPUTS, "SampleDriver::executeSynchronouslyBase"
            )
            tracer.switch(Layer.DRIVER, Phase.EXECUTION, "SampleDriver::executeSynchronouslyBase")
            try:
                status, on_device = await self._compute(prepared, deadline_ns, loop_timeout_ns)
            finally:
                tracer.end(2)
            shapes = self._shapes(prepared) if status is ErrorStatus.NONE else ()
            timing = NO_TIMING
            if measure is MeasureTiming.YES and status is ErrorStatus.NONE:
                timing = Timing(on_device // 1000, (kernel.now() - entered) // 1000)
            return status.downgraded(version), shapes, timing
        finally:
            tracer.end()

    async def _configure_burst(
        self, prepared: PreparedModel, callback: object, preference: int
    ) -> tuple[ErrorStatus, BurstContext | None]:
        # §6 lists this mark under PE; it runs once, inside ANeuralNetworksBurst_create
        # (LR PP), where PE may not nest, so nnemu files it as initialization (PI), the
        # phase Android's parser gives the HIDL call itself.
        self._driver_trace(Phase.INITIALIZATION, "configureExecutionBurst")
        try:
            if callback is None:
                return ErrorStatus.INVALID_ARGUMENT, None
            if not self.version.at_least(HalVersion.V1_2):
                return ErrorStatus.GENERAL_FAILURE, None
            self.bursts += 1
            thread = self.process.new_thread(f"burst-{self.bursts}")
            polls = preference != int(ExecutionPreference.LOW_POWER)
            return ErrorStatus.NONE, BurstContext(prepared, thread, polls)
        finally:
            self.tracer.end()

    async def serve_burst(
        self, burst: BurstContext, request: Request, measure: MeasureTiming
    ) -> tuple[ErrorStatus, tuple[OutputShape, ...], Timing]:
        """The burst server thread handles one request packet (no deadline, no loop timeout).

        Runs as ``burst.thread``; the caller has already paid the packet's delivery.
        """
        tracer, kernel = self.tracer, self.kernel
        prepared = burst.prepared
        tracer.begin(Layer.IPC, Phase.EXECUTION, "ExecutionBurstServer getting packet")
        kernel.work(FMQ_TRANSFER_NS)
        tracer.end()
        tracer.begin(
            Layer.IPC,
            Phase.EXECUTION,
            "ExecutionBurstServer getting memory, executing, and returning results",
        )
        try:
            entered = kernel.now()
            tracer.begin(Layer.DRIVER, Phase.EXECUTION, "BurstExecutorWithCache::execute")
            try:
                kernel.work(VALIDATE_NS_PER_OP)
                error = self._check_request(prepared, request, None)
                if error is not None:
                    return error.downgraded(self.version), (), NO_TIMING
                status, on_device = await self._compute(prepared, None, None)
            finally:
                tracer.end()
            shapes = self._shapes(prepared) if status is ErrorStatus.NONE else ()
            timing = NO_TIMING
            if measure is MeasureTiming.YES and status is ErrorStatus.NONE:
                timing = Timing(on_device // 1000, (kernel.now() - entered) // 1000)
            return status.downgraded(self.version), shapes, timing
        finally:
            tracer.end()
            burst.last_packet_ns = kernel.now()

    async def _execute_fenced(
        self,
        prepared: PreparedModel,
        request: Request,
        wait_for: Sequence[object | None],
        measure: MeasureTiming,
        deadline_ns: int | None,
        loop_timeout_ns: int | None,
        duration_ns: int | None,
    ) -> tuple[ErrorStatus, FencedResult | None]:
        tracer, kernel = self.tracer, self.kernel
        tracer.begin(Layer.DRIVER, Phase.EXECUTION, "SamplePreparedModel::executeFenced")
        try:
            entered = kernel.now()
            kernel.work(VALIDATE_NS_PER_OP)
            if any(fence is None for fence in wait_for):
                return ErrorStatus.INVALID_ARGUMENT, None
            main = prepared.model.main
            if any(0 in main.operands[i].dimensions for i in main.output_indexes):
                return ErrorStatus.INVALID_ARGUMENT, None  # outputs must be fully specified
            error = self._check_request(prepared, request, deadline_ns)
            if error is not None:
                return error, None
            bound = deadline_ns
            if duration_ns is not None:
                end = kernel.now() + duration_ns
                bound = end if bound is None else min(bound, end)
            tracer.switch(
                Layer.DRIVER, Phase.INPUTS_AND_OUTPUTS, "SamplePreparedModel::executeFenced"
            )
            tracer.switch(Layer.DRIVER, Phase.EXECUTION, "SamplePreparedModel::executeFenced")
            try:
                status, on_device = await self._compute(prepared, bound, loop_timeout_ns)
            finally:
                tracer.end(2)
            timing = NO_TIMING
            if measure is MeasureTiming.YES and status is ErrorStatus.NONE:
                timing = Timing(on_device // 1000, (kernel.now() - entered) // 1000)
            return ErrorStatus.NONE, FencedResult(status, timing, timing)
        finally:
            tracer.end()
