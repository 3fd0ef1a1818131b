"""The versioned HIDL wrappers: the R runtime's VersionedIDevice and VersionedIPreparedModel.

Each wrapper calls its driver object through the newest interface the driver
implements, over the binder, and hides the differences between HAL versions
from the runtime (method suffixes, callbacks vs synchronous calls, deadlines
only on 1.3; docs/hal-semantics.md §1 and §5).  The client-side callback
objects live here too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Final

from mypy_extensions import mypyc_attr

from nnemu.hal import (
    CACHE_TOKEN_BYTES,
    BufferDesc,
    BufferRole,
    DeviceType,
    ErrorStatus,
    ExecutionPreference,
    FenceState,
    HalVersion,
    IBurst,
    IExecutionCallback,
    IFencedExecutionCallback,
    IPreparedModelCallback,
    ISyncFence,
    MeasureTiming,
    Model,
    Priority,
    Request,
    Timing,
)
from nnemu.ipc import DEAD, Binder, CallbackRef, DeadObject, Endpoint
from nnemu.runtime._buffers import CanonicalBuffer, allocated
from nnemu.runtime._canonical import (
    NO_CACHE,
    CachedRequestExecution,
    CacheHandles,
    CanonicalDevice,
    CanonicalPreparedModel,
    FencedAnswer,
    FencedLaunch,
)
from nnemu.runtime._devices import (
    DriverConnection,
    DriverDevice,
    DriverPreparedModel,
    RuntimeDevice,
)
from nnemu.sim import Kernel, SimEvent
from nnemu.tracer import Layer, Phase, mark

_V1_3: Final = HalVersion.V1_3
"""``HalVersion.V1_3`` as a module constant: ``execute`` compares with it once an execution, and
on Python 3.11 an enum member's lookup on its class costs ~60 ns (bench/README.md)."""
_NONE: Final = ErrorStatus.NONE
"""``ErrorStatus.NONE`` likewise (``execute`` checks each answer's status)."""


def compliant(request: Request, version: HalVersion) -> bool:
    """``compliantWithV1_0`` / ``compliantWithV1_2`` (common/Utils.cpp): whether a request
    can cross a 1.0/1.1 or a 1.2 interface -- shared memory only, and no AHardwareBuffer
    before 1.2 (else VersionedIPreparedModel fails the execution with GENERAL_FAILURE)."""
    if any(token is not None for token in request.pool_tokens):
        return False
    return version.at_least(HalVersion.V1_2) or request.compliant_with_v1_0


class PreparedModelCallback:
    """IPreparedModelCallback, client side: latches the first notify."""

    def __init__(self, kernel: Kernel) -> None:
        self.event = SimEvent(kernel)
        self.notifications = 0

    def notify(self, status: ErrorStatus, prepared: DriverPreparedModel | None) -> None:
        """notify / notify_1_2 / notify_1_3: the first call wins, later ones are ignored."""
        self.notifications += 1
        self.event.set((status, prepared))

    def dead(self) -> None:
        """The driver died: release the waiter with DEAD_OBJECT."""
        self.event.set((DEAD, None))


class ExecutionCallback:
    """IExecutionCallback, client side: latches the first notify."""

    def __init__(self, kernel: Kernel) -> None:
        self.event = SimEvent(kernel)
        self.notifications = 0

    def notify(self, status: ErrorStatus, shapes: Any = (), timing: Any = None) -> None:
        """notify / notify_1_2 / notify_1_3: the first call wins.

        The results are checked as the R runtime's ``ExecutionCallback::notifyInternal``
        does: OUTPUT_INSUFFICIENT_SIZE without shapes, or another error with shapes, is
        GENERAL_FAILURE with no shapes and no timing (docs/hal-semantics.md §1.1).
        """
        self.notifications += 1
        if status is not ErrorStatus.NONE and (
            bool(shapes) is not (status is ErrorStatus.OUTPUT_INSUFFICIENT_SIZE)
        ):
            status, shapes, timing = ErrorStatus.GENERAL_FAILURE, (), None
        self.event.set((status, shapes, timing))

    def dead(self) -> None:
        """The driver died: release the waiter with DEAD_OBJECT."""
        self.event.set((DEAD, (), None))


if TYPE_CHECKING:

    def _implements(
        prepared: PreparedModelCallback, executed: ExecutionCallback
    ) -> tuple[IPreparedModelCallback[DriverPreparedModel], IExecutionCallback]:
        """The HAL callback interface each class implements: mypy checks each against it here."""
        return prepared, executed

    def _adapts(
        device: VersionedIDevice, prepared: VersionedIPreparedModel
    ) -> tuple[CanonicalDevice, CanonicalPreparedModel]:
        """The HIDL family's adapters implement the canonical interface: mypy checks it here."""
        return device, prepared


async def _wait_for_callback(
    binder: Binder,
    endpoint: Endpoint,
    iface: str,
    method: str,
    serve: Callable[[], Awaitable[ErrorStatus]],
    callback: PreparedModelCallback | ExecutionCallback,
) -> ErrorStatus | DeadObject | tuple[Any, ...]:
    """Launch an asynchronous HIDL method and wait for its callback (or the callee's death).

    Returns DEAD when the launch finds the callee dead, the launch status when it is
    not NONE (the driver has notified too; the launch status is the answer), else
    what the callback latched.
    """
    death = callback.dead
    endpoint.death_listeners.append(death)
    try:
        launch = await binder.call(endpoint, iface, method, serve, launches=callback.notify)
        if isinstance(launch, DeadObject):
            return DEAD
        if launch is not ErrorStatus.NONE:
            return launch
        latched: tuple[Any, ...] = await callback.event.wait()
        return latched
    finally:
        if death in endpoint.death_listeners:
            endpoint.death_listeners.remove(death)


class VersionedIPreparedModel:
    """An IPreparedModel called through the newest interface its driver implements."""

    def __init__(
        self,
        prepared: DriverPreparedModel,
        *,
        version: HalVersion,
        kernel: Kernel,
        binder: Binder,
        client: Endpoint,
    ) -> None:
        self.prepared = prepared
        """The driver's prepared model."""
        self.version = version
        """The HAL version of the driver's IPreparedModel."""
        self.model: Model = prepared.model
        """The model the driver prepared."""
        self.endpoint: Endpoint = prepared.endpoint
        """The driver process's binder endpoint."""
        self._execute_synchronously = (
            version.method("executeSynchronously", since=HalVersion.V1_2)
            if version.at_least(HalVersion.V1_2)
            else ""
        )
        self._kernel = kernel
        self._binder = binder
        self._client = client
        self._synchronous = version.at_least(HalVersion.V1_2)

    def release(self) -> None:
        """The last reference is dropped: the driver frees the model's memory."""
        self.prepared.release()

    async def execute(
        self,
        request: Request,
        measure: MeasureTiming,
        deadline_ns: int | None,
        loop_timeout_ns: int,
    ) -> tuple[ErrorStatus | DeadObject, Timing | None]:
        """One execution: executeSynchronously(_1_3) on 1.2+, execute + callback on 1.0/1.1.

        With debug.nn.syncexec-hal=1, as the R runtime runs by default.  The deadline
        and loop timeout reach only a 1.3 driver.  Returns the status (DEAD when the
        driver died) and the driver's timing when it gave one.
        """
        prepared, version = self.prepared, self.version
        if version is not _V1_3 and not compliant(request, version):
            return ErrorStatus.GENERAL_FAILURE, None  # "Could not handle execute"
        if not self._synchronous:  # 1.0 and 1.1 have no executeSynchronously
            return await self._execute_with_callback(request), None
        if version is _V1_3:
            answer = await self._binder.call(
                self.endpoint,
                "IPreparedModel",
                self._execute_synchronously,
                prepared.executeSynchronously_1_3,
                request,
                measure,
                deadline_ns,
                loop_timeout_ns,
            )
        else:
            answer = await self._binder.call(
                self.endpoint,
                "IPreparedModel",
                self._execute_synchronously,
                prepared.executeSynchronously,
                request,
                measure,
            )
        if isinstance(answer, DeadObject):
            return DEAD, None
        status, _, timing = answer
        if status is not _NONE:
            # getExecutionResult (common/Utils.cpp): the status stands; shapes it should not
            # carry and any timing are dropped (the callback path repairs instead).
            return status, None
        return status, timing

    async def _execute_with_callback(self, request: Request) -> ErrorStatus | DeadObject:
        """HAL 1.0/1.1: launch ``execute`` and wait for the callback."""
        callback = ExecutionCallback(self._kernel)
        answer = await _wait_for_callback(
            self._binder,
            self.endpoint,
            "IPreparedModel",
            "execute",
            partial(self.prepared.execute, request, CallbackRef(self._client, callback.notify)),
            callback,
        )
        if isinstance(answer, tuple):
            status: ErrorStatus | DeadObject = answer[0]  # (status, shapes, timing)
            return status
        return answer

    async def execute_fenced(
        self,
        request: Request,
        measure: MeasureTiming,
        deadline_ns: int | None,
        loop_timeout_ns: int,
        duration_ns: int | None,
        wait_for: Sequence[ISyncFence] = (),
    ) -> FencedAnswer:
        """executeFenced on 1.3; older drivers: wait for the fences, then run ``execute``.

        As ``VersionedIPreparedModel::executeFenced``: a 1.3 driver's error comes back from
        the call itself; on success its callback's getExecutionInfo gives both timings when
        the work was done inside the call (an empty sync fence), else the fence and the
        callback come back for the runtime to wait on.  Before 1.3 the runtime waits for
        each fence itself (one that does not signal: GENERAL_FAILURE, OP_FAILED to the
        app) and executes synchronously; the one timing stands for both.
        """
        if self.version is not HalVersion.V1_3:
            for fence in wait_for:
                if await fence.wait() is not FenceState.SIGNALED:
                    return ErrorStatus.GENERAL_FAILURE, None, None, None
            status, timing = await self.execute(request, measure, deadline_ns, loop_timeout_ns)
            return status, timing, timing, None
        answer = await self._binder.call(
            self.endpoint,
            "IPreparedModel",
            "executeFenced",
            partial(
                self.prepared.executeFenced,
                request,
                tuple(wait_for),
                measure,
                deadline_ns,
                loop_timeout_ns,
                duration_ns,
            ),
            reply_overlaps=_left_pending,
        )
        if isinstance(answer, DeadObject):
            return DEAD, None, None, None
        status, fenced_callback = answer[0], answer[1]
        if status is not ErrorStatus.NONE or fenced_callback is None:
            return status, None, None, None
        returned = fenced_callback.sync_fence
        if returned is not None:
            return status, None, None, FencedLaunch(returned, fenced_callback.get_execution_info)
        info_status, launched, fenced = fenced_callback.get_execution_info()
        return info_status, launched, fenced, None

    async def create_reusable_execution(
        self, request: Request, measure: MeasureTiming, loop_timeout_ns: int
    ) -> tuple[ErrorStatus, CachedRequestExecution]:
        """The HIDL utils' ``createReusableExecution``: the cached request, no driver call."""
        return ErrorStatus.NONE, CachedRequestExecution(self, request, measure, loop_timeout_ns)

    async def configure_execution_burst(self, callback: object, preference: int) -> IBurst | None:
        """configureExecutionBurst (1.2+): the burst context, or None when the driver cannot burst."""
        if not self.version.at_least(HalVersion.V1_2):
            return None
        answer = await self._binder.call(
            self.endpoint,
            "IPreparedModel",
            "configureExecutionBurst",
            partial(self.prepared.configureExecutionBurst, callback, preference),
        )
        if isinstance(answer, DeadObject):
            return None
        status, context = answer
        return context if status is ErrorStatus.NONE else None


def _left_pending(answer: tuple[ErrorStatus, IFencedExecutionCallback | None]) -> bool:
    """Whether an executeFenced answer's fence has yet to signal (its work under way)."""
    callback = answer[1]
    fence = callback.sync_fence if callback is not None else None
    return fence is not None and fence.poll() is FenceState.ACTIVE


@mypyc_attr(native_class=False)  # compiled, its base (``_devices``, Python) is not
class VersionedIDevice(DriverConnection[DriverDevice]):
    """Calls a driver through the newest interface it implements, over the binder."""

    async def call(self, iface: str, method: str, serve: Callable[[], Awaitable[Any]]) -> Any:
        """One synchronous HIDL call to the driver."""
        return await self.binder.call(self.service.endpoint, iface, method, serve)

    async def discover(self) -> RuntimeDevice | None:
        """Query capabilities, version string, type, extensions, cache counts; None drops the device."""
        tracer, service, version = self.tracer, self.service, self.version
        method = version.method("getCapabilities")
        with tracer.section(mark(Layer.IPC, Phase.INITIALIZATION, method)):
            result = await self.call("IDevice", method, service.getCapabilities)
        if isinstance(result, DeadObject) or result[0] is not ErrorStatus.NONE:
            return None
        capabilities = result[1]
        version_string, device_type = "UNKNOWN", DeviceType.UNKNOWN
        cache_files = (0, 0)
        if version.at_least(HalVersion.V1_2):
            answers = []
            for method, serve in (
                ("getVersionString", service.getVersionString),
                ("getType", service.getType),
                ("getSupportedExtensions", service.getSupportedExtensions),
                ("getNumberOfCacheFilesNeeded", service.getNumberOfCacheFilesNeeded),
            ):
                if method == "getSupportedExtensions":
                    with tracer.section(mark(Layer.IPC, Phase.INITIALIZATION, method)):
                        answer = await self.call("IDevice", method, serve)
                else:
                    answer = await self.call("IDevice", method, serve)
                if isinstance(answer, DeadObject) or answer[0] is not ErrorStatus.NONE:
                    return None
                answers.append(answer)
            version_string, device_type = answers[0][1], answers[1][1]
            cache_files = (answers[3][1], answers[3][2])
            if cache_files[0] > 32 or cache_files[1] > 32:
                return None
        return RuntimeDevice(
            name=service.name,
            type=device_type,
            version_string=version_string,
            hal_version=version,
            capabilities=capabilities,
            service=service,
            cache_files=cache_files,
        )

    async def get_supported_operations(self, model: Model) -> tuple[bool, ...] | DeadObject:
        """Per-operation support; an error or a wrong-length answer means 'none supported'.

        DEAD when the driver process is dead (the caller decides what that means).
        """
        tracer, service, version = self.tracer, self.service, self.version
        method = version.method("getSupportedOperations")
        with tracer.section(mark(Layer.IPC, Phase.COMPILATION, method)):
            result = await self.call(
                "IDevice", method, partial(service.getSupportedOperations, model, version)
            )
        count = len(model.main.operations)
        if isinstance(result, DeadObject):
            return DEAD
        if result[0] is not ErrorStatus.NONE or len(result[1]) != count:
            return (False,) * count
        return tuple(result[1])

    async def _wait_prepared(
        self,
        method: str,
        serve: Callable[[], Awaitable[ErrorStatus]],
        callback: PreparedModelCallback,
    ) -> tuple[ErrorStatus | DeadObject, VersionedIPreparedModel | None]:
        """Launch a preparation with ``serve`` and wait for its callback (or the driver's death)."""
        answer = await _wait_for_callback(
            self.binder, self.service.endpoint, "IDevice", method, serve, callback
        )
        if not isinstance(answer, tuple):
            return answer, None
        status, prepared = answer
        if prepared is None:
            return status, None
        return status, VersionedIPreparedModel(
            prepared,
            version=self.version,
            kernel=self.kernel,
            binder=self.binder,
            client=self.client,
        )

    async def prepare_model(
        self,
        model: Model,
        preference: ExecutionPreference,
        priority: Priority,
        deadline_ns: int | None,
        cache: CacheHandles = NO_CACHE,
    ) -> tuple[ErrorStatus | DeadObject, VersionedIPreparedModel | None]:
        """prepareModel through the newest interface (with cache handles for 1.2+); waits for the callback."""
        tracer, kernel, service, version = self.tracer, self.kernel, self.service, self.version
        method = version.method("prepareModel")
        callback = PreparedModelCallback(kernel)
        ref = CallbackRef(self.client, callback.notify)
        model_cache, data_cache, token = cache
        token = token or b"\0" * CACHE_TOKEN_BYTES
        uid = self.uid
        with tracer.section(mark(Layer.IPC, Phase.COMPILATION, "prepareModel")):
            with tracer.section(
                mark(Layer.RUNTIME, Phase.COMPILATION, f"VersionedIDevice::{method}", subtract=True)
            ):
                kernel.work(10_000)  # converting the model to the driver's HAL version
            serve: Callable[[], Awaitable[ErrorStatus]]
            caching = (model_cache, data_cache, token, ref)
            if version is HalVersion.V1_3:
                serve = partial(
                    service.prepareModel_1_3,
                    model,
                    preference,
                    priority,
                    deadline_ns,
                    *caching,
                    uid=uid,
                )
            elif version is HalVersion.V1_2:
                serve = partial(service.prepareModel_1_2, model, preference, *caching, uid=uid)
            elif version is HalVersion.V1_1:
                serve = partial(service.prepareModel_1_1, model, preference, ref, uid=uid)
            else:
                serve = partial(service.prepareModel, model, ref, uid=uid)
            return await self._wait_prepared(method, serve, callback)

    async def prepare_model_from_cache(
        self, deadline_ns: int | None, cache: CacheHandles
    ) -> tuple[ErrorStatus | DeadObject, VersionedIPreparedModel | None]:
        """prepareModelFromCache(_1_3) (HAL 1.2+); waits for the callback."""
        tracer, kernel, service, version = self.tracer, self.kernel, self.service, self.version
        callback = PreparedModelCallback(kernel)
        ref = CallbackRef(self.client, callback.notify)
        model_cache, data_cache, token = cache
        uid = self.uid
        method = version.method("prepareModelFromCache", since=HalVersion.V1_2)
        with tracer.section(mark(Layer.IPC, Phase.COMPILATION, "prepareModelFromCache")):
            serve: Callable[[], Awaitable[ErrorStatus]]
            caching = (model_cache, data_cache, token, ref)
            if version is HalVersion.V1_3:
                serve = partial(service.prepareModelFromCache_1_3, deadline_ns, *caching, uid=uid)
            else:
                serve = partial(service.prepareModelFromCache, *caching, uid=uid)
            return await self._wait_prepared(method, serve, callback)

    async def allocate(
        self,
        desc: BufferDesc,
        prepared_models: Sequence[CanonicalPreparedModel],
        input_roles: Sequence[BufferRole],
        output_roles: Sequence[BufferRole],
    ) -> tuple[ErrorStatus | DeadObject, CanonicalBuffer | None]:
        """IDevice::allocate (1.3; an older driver has none: GENERAL_FAILURE, no call)."""
        if not self.version.at_least(HalVersion.V1_3):
            return ErrorStatus.GENERAL_FAILURE, None
        models = [getattr(p, "prepared", p) for p in prepared_models]
        service = self.service
        answer = await self.call(
            "IDevice",
            "allocate",
            partial(service.allocate, desc, models, tuple(input_roles), tuple(output_roles)),
        )
        if isinstance(answer, DeadObject):
            return DEAD, None
        status, buffer, token = allocated(*answer)
        if buffer is None:
            return status, None
        return status, CanonicalBuffer(
            buffer, token, version=self.version, endpoint=service.endpoint, binder=self.binder
        )
