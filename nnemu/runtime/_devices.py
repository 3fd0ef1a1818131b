"""Device discovery and the versioned IDevice wrapper (the R runtime's Manager/VersionedInterfaces)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from nnemu.driver import CACHE_TOKEN_BYTES, CallbackRef, DriverService, PreparedModel
from nnemu.hal import (
    Capabilities,
    DeviceType,
    ErrorStatus,
    ExecutionPreference,
    HalVersion,
    Model,
    OperandType,
    PerformanceInfo,
    Priority,
)
from nnemu.ipc import DEAD, Binder, DeadObject, Endpoint
from nnemu.sim import FileHandle, Kernel, SimEvent
from nnemu.tracer import Layer, Phase, Tracer

CPU_DEVICE_NAME = "nnapi-reference"
"""Name of the runtime's own CPU device."""

CPU_CAPABILITIES = Capabilities(
    relaxed_float32_to_float16_scalar=PerformanceInfo(1.0, 1.0),
    relaxed_float32_to_float16_tensor=PerformanceInfo(1.0, 1.0),
    operand_performance=[
        (kind, PerformanceInfo(1.0, 1.0))
        for kind in OperandType
        if kind not in (OperandType.SUBGRAPH, OperandType.OEM, OperandType.TENSOR_OEM_BYTE)
    ],
)
"""The CPU device's capabilities: 1.0 for everything, by definition of the ratios."""


def _suffix(version: HalVersion) -> str:
    return "" if version is HalVersion.V1_0 else "_" + version.value.replace(".", "_")


class PreparedModelCallback:
    """IPreparedModelCallback, client side: latches the first notify."""

    def __init__(self, kernel: Kernel) -> None:
        self.event = SimEvent(kernel)
        self.notifications = 0

    def notify(self, status: ErrorStatus, prepared: PreparedModel | None) -> None:
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
        """notify / notify_1_2 / notify_1_3: the first call wins."""
        self.notifications += 1
        self.event.set((status, shapes, timing))

    def dead(self) -> None:
        """The driver died: release the waiter with DEAD_OBJECT."""
        self.event.set((DEAD, (), None))


@attrs.define(eq=False)
class RuntimeDevice:
    """ANeuralNetworksDevice: a discovered driver, or the CPU device."""

    name: str
    """Device name."""
    type: DeviceType
    """Device type."""
    version_string: str
    """Driver version string."""
    hal_version: HalVersion
    """Newest HAL interface the driver implements (1.3 for the CPU device)."""
    capabilities: Capabilities
    """Cached capabilities."""
    service: DriverService | None = None
    """The driver service; None for the CPU device."""
    cache_files: tuple[int, int] = (0, 0)
    """getNumberOfCacheFilesNeeded (model, data); (0, 0) = the driver does not cache."""

    @property
    def is_cpu(self) -> bool:
        """Whether this is the runtime's own CPU device (nnapi-reference)."""
        return self.service is None

    @property
    def feature_level(self) -> int:
        """ANeuralNetworksDevice_getFeatureLevel."""
        return self.hal_version.feature_level

    def performance(self, preference: ExecutionPreference, info: PerformanceInfo) -> float:
        """The figure partitioning minimises for ``preference``."""
        if preference is ExecutionPreference.LOW_POWER:
            return info.power_usage
        return info.exec_time


class VersionedIDevice:
    """Calls a driver through the newest interface it implements, over the binder."""

    def __init__(
        self,
        service: DriverService,
        *,
        kernel: Kernel,
        tracer: Tracer,
        binder: Binder,
        client: Endpoint,
        uid: int,
    ) -> None:
        self.service = service
        self.version = service.version
        self.kernel = kernel
        self.tracer = tracer
        self.binder = binder
        self.client = client
        self.uid = uid

    async def call(self, iface: str, method: str, serve: Callable[[], Any]) -> Any:
        """One synchronous HIDL call to the driver."""
        return await self.binder.call(self.service.endpoint, iface, method, serve)

    async def discover(self) -> RuntimeDevice | None:
        """Query capabilities, version string, type, extensions, cache counts; None drops the device."""
        tracer, service, version = self.tracer, self.service, self.version
        suffix = _suffix(version)
        tracer.begin(Layer.IPC, Phase.INITIALIZATION, f"getCapabilities{suffix}")
        try:
            result = await self.call("IDevice", f"getCapabilities{suffix}", service.getCapabilities)
        finally:
            tracer.end()
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
                    tracer.begin(Layer.IPC, Phase.INITIALIZATION, method)
                try:
                    answer = await self.call("IDevice", method, serve)
                finally:
                    if method == "getSupportedExtensions":
                        tracer.end()
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
        suffix = _suffix(version)
        tracer.begin(Layer.IPC, Phase.COMPILATION, f"getSupportedOperations{suffix}")
        try:
            result = await self.call(
                "IDevice",
                f"getSupportedOperations{suffix}",
                lambda: service.getSupportedOperations(model, version),
            )
        finally:
            tracer.end()
        count = len(model.main.operations)
        if isinstance(result, DeadObject):
            return DEAD
        if result[0] is not ErrorStatus.NONE or len(result[1]) != count:
            return (False,) * count
        return tuple(result[1])

    async def _wait_prepared(
        self, method: str, serve: Callable[[], Any], callback: PreparedModelCallback
    ) -> tuple[ErrorStatus | DeadObject, PreparedModel | None]:
        """Launch a preparation with ``serve`` and wait for its callback (or the driver's death)."""
        service = self.service
        death = callback.dead
        service.endpoint.death_listeners.append(death)
        try:
            launch = await self.call("IDevice", method, serve)
            if isinstance(launch, DeadObject):
                return DEAD, None
            if launch is not ErrorStatus.NONE:
                # The driver has notified too; the launch status is the answer.
                return launch, None
            status, prepared = await callback.event.wait()
            return status, prepared
        finally:
            if death in service.endpoint.death_listeners:
                service.endpoint.death_listeners.remove(death)

    async def prepare_model(
        self,
        model: Model,
        preference: ExecutionPreference,
        priority: Priority,
        deadline_ns: int | None,
        cache: tuple[tuple[FileHandle, ...], tuple[FileHandle, ...], bytes] = ((), (), b""),
    ) -> tuple[ErrorStatus | DeadObject, PreparedModel | None]:
        """prepareModel through the newest interface (with cache handles for 1.2+); waits for the callback."""
        tracer, kernel, service, version = self.tracer, self.kernel, self.service, self.version
        suffix = _suffix(version)
        callback = PreparedModelCallback(kernel)
        ref = CallbackRef(self.client, callback.notify)
        model_cache, data_cache, token = cache
        token = token or b"\0" * CACHE_TOKEN_BYTES
        tracer.begin(Layer.IPC, Phase.COMPILATION, "prepareModel")
        try:
            tracer.subtract(
                Layer.RUNTIME, Phase.COMPILATION, f"VersionedIDevice::prepareModel{suffix}"
            )
            kernel.work(10_000)  # converting the model to the driver's HAL version
            tracer.end()
            uid = self.uid
            serve: Callable[[], Any]
            if version is HalVersion.V1_3:
                serve = lambda: service.prepareModel_1_3(  # noqa: E731
                    model,
                    preference,
                    priority,
                    deadline_ns,
                    model_cache,
                    data_cache,
                    token,
                    ref,
                    uid=uid,
                )
            elif version is HalVersion.V1_2:
                serve = lambda: service.prepareModel_1_2(  # noqa: E731
                    model, preference, model_cache, data_cache, token, ref, uid=uid
                )
            elif version is HalVersion.V1_1:
                serve = lambda: service.prepareModel_1_1(model, preference, ref, uid=uid)  # noqa: E731
            else:
                serve = lambda: service.prepareModel(model, ref, uid=uid)  # noqa: E731
            return await self._wait_prepared(f"prepareModel{suffix}", serve, callback)
        finally:
            tracer.end()

    async def prepare_model_from_cache(
        self,
        deadline_ns: int | None,
        cache: tuple[tuple[FileHandle, ...], tuple[FileHandle, ...], bytes],
    ) -> tuple[ErrorStatus | DeadObject, PreparedModel | None]:
        """prepareModelFromCache(_1_3) (HAL 1.2+); waits for the callback."""
        tracer, kernel, service, version = self.tracer, self.kernel, self.service, self.version
        callback = PreparedModelCallback(kernel)
        ref = CallbackRef(self.client, callback.notify)
        model_cache, data_cache, token = cache
        uid = self.uid
        tracer.begin(Layer.IPC, Phase.COMPILATION, "prepareModelFromCache")
        try:
            serve: Callable[[], Any]
            if version is HalVersion.V1_3:
                method = "prepareModelFromCache_1_3"
                serve = lambda: service.prepareModelFromCache_1_3(  # noqa: E731
                    deadline_ns, model_cache, data_cache, token, ref, uid=uid
                )
            else:
                method = "prepareModelFromCache"
                serve = lambda: service.prepareModelFromCache(  # noqa: E731
                    model_cache, data_cache, token, ref, uid=uid
                )
            return await self._wait_prepared(method, serve, callback)
        finally:
            tracer.end()
