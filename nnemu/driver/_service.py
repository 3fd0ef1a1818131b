"""An emulated NNAPI driver service: its process, threads and faults, and IDevice.

The structure, checks and trace marks follow the AOSP sample driver
(``frameworks/ml/nn/driver/sample/SampleDriver.cpp``, Android 11), which is what
the HAL's reference behaviour is; docs/hal-semantics.md §1 and §4 condense it.  Each
public method is the *server side* of one HIDL method: the runtime reaches it
through ``Binder.call`` on one of the service's binder threads.  Preparation
hands out ``PreparedModel`` objects (``_prepared.py``: the IPreparedModel side);
what they cost comes from ``nnemu.cost``.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import attrs
import structlog
import trio

from nnemu.cost import capabilities_from, compute_plan
from nnemu.driver._aidl_prepared import AidlPreparedModel
from nnemu.driver._buffer import SampleBuffer, allocate
from nnemu.driver._device import Device
from nnemu.driver._hidl import VALIDATE_NS_PER_OP, CallbackRef
from nnemu.driver._prepared import PreparedModel
from nnemu.driver._tracker import BufferTracker
from nnemu.hal import (
    CACHE_TOKEN_BYTES,
    BufferDesc,
    BufferRole,
    Capabilities,
    DeviceStatus,
    DeviceType,
    ErrorStatus,
    ExecutionPreference,
    HalVersion,
    Model,
    Priority,
    model_memory_bytes,
    supported_by,
    validate_model,
)
from nnemu.ipc import Binder, Endpoint, ExecutionSplit
from nnemu.scenario import CpuSpec, DeadlinePolicy, DeviceSpec, FaultKind
from nnemu.sim import FileHandle, Kernel, ProcessTable, SimQueue, as_thread, us
from nnemu.tracer import Layer, Phase, Section, Tracer, mark, raw_mark

logger = structlog.get_logger(layer="driver")

AIDL_SYSTEM_UID = 1000

DIED_MARK = "nnemu::died"
"""The name of an empty section on a driver process's main thread at the instant the process
dies (a ``crash`` fault): ftrace has no mark for a process's death, and Android's parser
ignores a section with no NNTRACE tag (replay reads it: the replayed driver dies then)."""


@attrs.frozen
class _CacheEntry:
    """What a caching driver writes into every cache file of a compilation."""

    device: str
    token: bytes
    model: Model
    priority: Priority


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
            # An AIDL service's binary carries no version: android.hardware.neuralnetworks-service-*
            f"android.hardware.neuralnetworks-service-{spec.name}"
            if spec.hal_version.aidl
            else f"android.hardware.neuralnetworks@{spec.hal_version.value}-service-{spec.name}",
            AIDL_SYSTEM_UID,
        )
        self.endpoint = Endpoint(kernel, self.process, spec.binder_threads or ipc_binder_threads)
        self.capabilities = capabilities_from(spec.performance)
        self.device = device_type(kernel, spec, random.Random(f"{seed}:device:{spec.name}"), tracer)
        self.device.trace_pid = self.process.pid
        self.supported = (
            frozenset(spec.supported_operations) if spec.supported_operations is not None else None
        )
        self.status = DeviceStatus.AVAILABLE
        self.memory_used = 0
        self.buffers = BufferTracker()
        """The device memories ``allocate`` handed out, by token."""
        self._jobs: SimQueue = SimQueue(kernel)
        self._workers = [
            self.process.new_thread(f"nn-worker-{i + 1}") for i in range(spec.worker_threads)
        ]
        self.prepared_models = 0
        self.log = logger.bind(device=spec.name)
        self.failure_probability = 0.0
        """The chance that the scenario's transient failure hits an execution (0: none)."""
        self.bursts = 0
        self._fault_rng = random.Random(f"{seed}:faults:{spec.name}")

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
                self.failure_probability = fault.probability or 0.0
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

    def injected_failure(self) -> bool:
        """Whether the scenario's transient failure hits this execution (one draw of the fault RNG)."""
        return bool(self.failure_probability) and (
            self._fault_rng.random() < self.failure_probability
        )

    def _set_status(self, status: DeviceStatus) -> None:
        self.log.info("device_status_changed", status=status.name)
        self.status = status

    def _set_slowdown(self, factor: float) -> None:
        self.log.info("device_slowdown", factor=factor)
        self.device.slowdown = factor

    def crash(self) -> None:
        """The driver process dies: calls in flight and later get DEAD_OBJECT."""
        if not self.endpoint.alive:
            return
        self.log.warning("driver_died")
        self.tracer.process_died(self.process.pid)
        with as_thread(self.process.main_thread), self.tracer.section(raw_mark(DIED_MARK)):
            pass
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

    def _notify(
        self,
        callback: CallbackRef,
        iface: str,
        method: str,
        *args: Any,
        split: ExecutionSplit | None = None,
    ) -> None:
        """Call the client's callback (oneway, exactly once per launch); ``split``: the
        execution it ends."""
        if not self.endpoint.alive:
            return  # a dead process sends nothing; the client's death recipient answers
        self.binder.oneway(
            callback.endpoint,
            iface,
            method,
            lambda: callback.target(*args),
            completes=callback.target,
            split=split,
        )

    def trace_memory(self) -> None:
        """Write the ``memory in use`` counter (bytes of prepared models) of this service."""
        self.tracer.counter(self.process.pid, "memory in use", self.memory_used)

    # ------------------------------------------------------------- IDevice
    def _driver_section(self, phase: Phase, detail: str) -> Section:
        """A scoped ``[NN_LD_<phase>]SampleDriver::<detail>`` section."""
        return self.tracer.section(mark(Layer.DRIVER, phase, f"SampleDriver::{detail}"))

    async def getCapabilities(self) -> tuple[ErrorStatus, Capabilities]:
        """IDevice::getCapabilities (and _1_1/_1_2/_1_3: the same value in this model)."""
        with self._driver_section(Phase.INITIALIZATION, "getCapabilities"):
            self.kernel.work(5_000)
            if self.status is DeviceStatus.OFFLINE:
                return ErrorStatus.DEVICE_UNAVAILABLE, self.capabilities
            return ErrorStatus.NONE, self.capabilities

    async def getVersionString(self) -> tuple[ErrorStatus, str]:
        """IDevice::getVersionString (1.2)."""
        with self._driver_section(Phase.INITIALIZATION, "getVersionString"):
            return ErrorStatus.NONE, self.spec.version_string

    async def getType(self) -> tuple[ErrorStatus, DeviceType]:
        """IDevice::getType (1.2)."""
        with self._driver_section(Phase.INITIALIZATION, "getType"):
            return ErrorStatus.NONE, self.spec.type

    async def getSupportedExtensions(self) -> tuple[ErrorStatus, tuple[()]]:
        """IDevice::getSupportedExtensions (1.2): none."""
        with self._driver_section(Phase.INITIALIZATION, "getSupportedExtensions"):
            return ErrorStatus.NONE, ()

    async def getNumberOfCacheFilesNeeded(self) -> tuple[ErrorStatus, int, int]:
        """IDevice::getNumberOfCacheFilesNeeded (1.2): the scenario's ``cache_files``."""
        with self._driver_section(Phase.INITIALIZATION, "getNumberOfCacheFilesNeeded"):
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
        with self._driver_section(Phase.UNSPECIFIED, "getStatus"):
            return self.status

    async def getSupportedOperations(
        self, model: Model, version: HalVersion = HalVersion.V1_0
    ) -> tuple[ErrorStatus, tuple[bool, ...]]:
        """IDevice::getSupportedOperations (the _1_x variants pass their version)."""
        with self._driver_section(Phase.COMPILATION, version.method("getSupportedOperations")):
            self.kernel.work(VALIDATE_NS_PER_OP * len(model.main.operations))
            if self.status is DeviceStatus.OFFLINE:
                return ErrorStatus.DEVICE_UNAVAILABLE, ()
            if validate_model(model, version) is not None:
                return ErrorStatus.INVALID_ARGUMENT, ()
            return ErrorStatus.NONE, supported_by(model, self.supported)

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

    async def allocate(
        self,
        desc: BufferDesc,
        prepared_models: Sequence[object | None],
        input_roles: Sequence[BufferRole],
        output_roles: Sequence[BufferRole],
    ) -> tuple[ErrorStatus, SampleBuffer | None, int]:
        """IDevice::allocate (1.3): device memory for the roles, as ``SampleDriver::allocate``."""
        return allocate(self, desc, prepared_models, input_roles, output_roles)

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
        method = version.method("prepareModelFromCache", since=HalVersion.V1_2)
        with self._driver_section(Phase.COMPILATION, method):
            if callback is None:
                return ErrorStatus.INVALID_ARGUMENT
            if not self.caches:
                return self._refuse(callback, version, ErrorStatus.GENERAL_FAILURE)
            if not self._cache_args_ok(model_cache, data_cache, token):
                return self._refuse(callback, version, ErrorStatus.INVALID_ARGUMENT)
            if self.status is not DeviceStatus.AVAILABLE:
                return self._refuse(callback, version, ErrorStatus.DEVICE_UNAVAILABLE)
            if deadline_ns is not None and self.kernel.task_now_ns() >= deadline_ns:
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
        with tracer.section(
            mark(Layer.DRIVER, Phase.COMPILATION, "SamplePreparedModel::loadFromCache")
        ):
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
                and kernel.clock_ns > deadline_ns
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

    def _reserve(self, memory: int) -> ErrorStatus | None:
        """Reserve device memory for a prepared model; the error status if it cannot fit."""
        capacity = int(self.spec.memory_mb * 1024 * 1024)
        if memory > capacity:
            return ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT  # too large, whatever is loaded
        if self.memory_used + memory > capacity:
            return ErrorStatus.RESOURCE_EXHAUSTED_TRANSIENT  # fits once others are released
        self.memory_used += memory
        self.trace_memory()
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
        """A launch that fails: notify ``status`` with a null model and return it too.

        The launch/notify contract of docs/hal-semantics.md §1.1.
        """
        self._notify_prepared(callback, version, status, None)
        return status

    def _notify_prepared(
        self,
        callback: CallbackRef,
        version: HalVersion,
        status: ErrorStatus,
        prepared: PreparedModel | None,
    ) -> None:
        model: object = prepared
        if prepared is not None and version.aidl:
            model = AidlPreparedModel(prepared)  # what AIDL's notify hands: its IPreparedModel
        self._notify(
            callback,
            version.interface("IPreparedModelCallback"),
            version.notify_method,
            status.downgraded(version),
            model,
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
        with self._driver_section(Phase.COMPILATION, version.method("prepareModel")):
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
                self.log.debug("prepare_rejected", reason=reason)
                return self._refuse(callback, version, ErrorStatus.INVALID_ARGUMENT)
            if self.status is DeviceStatus.OFFLINE:
                return self._refuse(callback, version, ErrorStatus.DEVICE_UNAVAILABLE)
            if version.at_least(HalVersion.V1_3) and not all(supported_by(model, self.supported)):
                # A partial driver's prepareModel_1_3 refuses what it does not fully support
                # (SampleDriverPartial.cpp overrides only the 1.3 entry point; the older ones
                # prepare the whole model, as SampleDriver does).
                self._notify_prepared(callback, version, ErrorStatus.INVALID_ARGUMENT, None)
                return ErrorStatus.NONE
            if deadline_ns is not None and kernel.task_now_ns() >= deadline_ns:
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
        with tracer.section(
            mark(Layer.DRIVER, Phase.COMPILATION, "SamplePreparedModel::initialize")
        ):
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
                and kernel.clock_ns > deadline_ns
            ):
                status = ErrorStatus.MISSED_DEADLINE_TRANSIENT
            if status is not ErrorStatus.NONE:
                self.memory_used -= memory
                self.trace_memory()
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
