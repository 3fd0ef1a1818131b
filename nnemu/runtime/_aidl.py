"""The AIDL family's adapters to the canonical interface: ``AidlIDevice``, ``AidlIPreparedModel``.

As ``packages/modules/NeuralNetworks/common/aidl/utils`` (``Device``, ``PreparedModel``)
put an AIDL driver behind the runtime's canonical ``nn::IDevice``, these put an
``nnemu.hal.IAidlDevice`` behind ``CanonicalDevice`` beside the HIDL family's
``VersionedIDevice``.  Each call crosses the binder as ``AIDL::ndk::<Iface>::<method>``;
the answers are turned into the runtime's: a service-specific error's code is the status,
no deadline is ``-1``, nanosecond timing (``-1`` unknown) becomes the runtime's Timing,
and ``outputSufficientSize`` false is OUTPUT_INSUFFICIENT_SIZE.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from nnemu.hal import (
    CACHE_TOKEN_BYTES,
    NO_DEADLINE,
    DeviceType,
    ErrorStatus,
    ExecutionPreference,
    HalVersion,
    IBurst,
    MeasureTiming,
    Model,
    Priority,
    Request,
    ServiceSpecificError,
    Timing,
)
from nnemu.ipc import DEAD, Binder, CallbackRef, DeadObject, Endpoint
from nnemu.runtime._canonical import NO_CACHE, CacheHandles
from nnemu.runtime._devices import (
    AidlDriverDevice,
    AidlDriverPreparedModel,
    DriverConnection,
    RuntimeDevice,
)
from nnemu.runtime._versioned import PreparedModelCallback, _wait_for_callback
from nnemu.sim import Kernel
from nnemu.tracer import Layer, Phase, Tracer, mark

if TYPE_CHECKING:
    from nnemu.runtime._canonical import CanonicalDevice, CanonicalPreparedModel


def _ns(value: int | None) -> int:
    """The runtime's optional nanoseconds as AIDL passes them: ``-1`` for none."""
    return NO_DEADLINE if value is None else value


class AidlIPreparedModel:
    """An AIDL IPreparedModel behind the canonical interface."""

    def __init__(
        self, prepared: AidlDriverPreparedModel, *, version: HalVersion, binder: Binder
    ) -> None:
        self.prepared = prepared
        self.version = version
        """The AIDL version of the driver."""
        self.model: Model = prepared.model
        self.endpoint: Endpoint = prepared.endpoint
        self._binder = binder
        self._iface = version.interface("IPreparedModel")

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
        """executeSynchronously (AIDL has no asynchronous execute)."""
        answer = await self._binder.call(
            self.endpoint,
            self._iface,
            "executeSynchronously",
            self.prepared.executeSynchronously,
            request,
            measure is MeasureTiming.YES,
            _ns(deadline_ns),
            loop_timeout_ns,
        )
        if isinstance(answer, DeadObject):
            return DEAD, None
        if isinstance(answer, ServiceSpecificError):
            return answer.status, None
        if not answer.output_sufficient_size:
            return ErrorStatus.OUTPUT_INSUFFICIENT_SIZE, None
        return ErrorStatus.NONE, answer.timing.to_hidl()

    async def execute_fenced(
        self,
        request: Request,
        measure: MeasureTiming,
        deadline_ns: int | None,
        loop_timeout_ns: int,
        duration_ns: int | None,
    ) -> tuple[ErrorStatus | DeadObject, Timing | None, Timing | None]:
        """executeFenced (no fences to wait for); the timings from the callback's getExecutionInfo."""
        answer = await self._binder.call(
            self.endpoint,
            self._iface,
            "executeFenced",
            partial(
                self.prepared.executeFenced,
                request,
                (),
                measure is MeasureTiming.YES,
                _ns(deadline_ns),
                loop_timeout_ns,
                _ns(duration_ns),
            ),
        )
        if isinstance(answer, DeadObject):
            return DEAD, None, None
        if isinstance(answer, ServiceSpecificError):
            return answer.status, None, None
        launched, fenced, status = answer.getExecutionInfo()
        if status is not ErrorStatus.NONE:
            return status, None, None
        return status, launched.to_hidl(), fenced.to_hidl()

    async def configure_execution_burst(self, callback: object, preference: int) -> IBurst | None:
        """No AIDL IBurst is emulated yet: the runtime runs a burst's executions one by one."""
        return None


class AidlIDevice(DriverConnection[AidlDriverDevice]):
    """An AIDL IDevice behind the canonical interface, over the binder."""

    def __init__(
        self,
        service: AidlDriverDevice,
        *,
        kernel: Kernel,
        tracer: Tracer,
        binder: Binder,
        client: Endpoint,
        uid: int,
    ) -> None:
        super().__init__(
            service, kernel=kernel, tracer=tracer, binder=binder, client=client, uid=uid
        )
        self._iface = service.version.interface("IDevice")

    async def call(self, method: str, serve: Callable[[], Awaitable[Any]]) -> Any:
        """One synchronous call to the driver's IDevice."""
        return await self.binder.call(self.service.endpoint, self._iface, method, serve)

    async def discover(self) -> RuntimeDevice | None:
        """getInterfaceVersion, then the queries; any error or a dead driver drops the device."""
        tracer, service = self.tracer, self.service
        answers: list[Any] = []
        for method, serve in (
            ("getInterfaceVersion", service.getInterfaceVersion),
            ("getCapabilities", service.getCapabilities),
            ("getVersionString", service.getVersionString),
            ("getType", service.getType),
            ("getNumberOfCacheFilesNeeded", service.getNumberOfCacheFilesNeeded),
        ):
            with tracer.section(mark(Layer.IPC, Phase.INITIALIZATION, method)):
                answer = await self.call(method, serve)
            if isinstance(answer, DeadObject | ServiceSpecificError):
                return None
            answers.append(answer)
        cache_files: tuple[int, int] = answers[4]
        if cache_files[0] > 32 or cache_files[1] > 32:
            return None
        return RuntimeDevice(
            name=service.name,
            type=answers[3] if isinstance(answers[3], DeviceType) else DeviceType.UNKNOWN,
            version_string=answers[2],
            hal_version=self.version,
            capabilities=answers[1],
            service=service,
            cache_files=cache_files,
        )

    async def get_supported_operations(self, model: Model) -> tuple[bool, ...] | DeadObject:
        """Per-operation support; an error or a wrong-length answer means 'none supported'."""
        with self.tracer.section(mark(Layer.IPC, Phase.COMPILATION, "getSupportedOperations")):
            answer = await self.call(
                "getSupportedOperations", partial(self.service.getSupportedOperations, model)
            )
        count = len(model.main.operations)
        if isinstance(answer, DeadObject):
            return DEAD
        if isinstance(answer, ServiceSpecificError) or len(answer) != count:
            return (False,) * count
        return tuple(answer)

    async def _wait_prepared(
        self,
        method: str,
        launch: Callable[[CallbackRef], Awaitable[ServiceSpecificError | None]],
    ) -> tuple[ErrorStatus | DeadObject, AidlIPreparedModel | None]:
        """Launch a preparation (``launch`` given the callback) and wait for its callback (or
        the driver's death); a launch's service-specific error is its status."""
        callback = PreparedModelCallback(self.kernel)
        ref = CallbackRef(self.client, callback.notify)

        async def serve() -> ErrorStatus:
            refused = await launch(ref)
            return ErrorStatus.NONE if refused is None else refused.status

        answer = await _wait_for_callback(
            self.binder, self.service.endpoint, self._iface, method, serve, callback
        )
        if not isinstance(answer, tuple):
            return answer, None
        status, prepared = answer
        if prepared is None:
            return status, None
        return status, AidlIPreparedModel(prepared, version=self.version, binder=self.binder)

    async def prepare_model(
        self,
        model: Model,
        preference: ExecutionPreference,
        priority: Priority,
        deadline_ns: int | None,
        cache: CacheHandles = NO_CACHE,
    ) -> tuple[ErrorStatus | DeadObject, AidlIPreparedModel | None]:
        """prepareModel; waits for the callback."""
        model_cache, data_cache, token = cache
        token = token or b"\0" * CACHE_TOKEN_BYTES
        with self.tracer.section(mark(Layer.IPC, Phase.COMPILATION, "prepareModel")):
            return await self._wait_prepared(
                "prepareModel",
                lambda ref: self.service.prepareModel(
                    model,
                    preference,
                    priority,
                    _ns(deadline_ns),
                    model_cache,
                    data_cache,
                    token,
                    ref,
                    uid=self.uid,
                ),
            )

    async def prepare_model_from_cache(
        self, deadline_ns: int | None, cache: CacheHandles
    ) -> tuple[ErrorStatus | DeadObject, AidlIPreparedModel | None]:
        """prepareModelFromCache; waits for the callback."""
        model_cache, data_cache, token = cache
        with self.tracer.section(mark(Layer.IPC, Phase.COMPILATION, "prepareModelFromCache")):
            return await self._wait_prepared(
                "prepareModelFromCache",
                lambda ref: self.service.prepareModelFromCache(
                    _ns(deadline_ns), model_cache, data_cache, token, ref, uid=self.uid
                ),
            )


if TYPE_CHECKING:

    def _adapts(
        device: AidlIDevice, prepared: AidlIPreparedModel
    ) -> tuple[CanonicalDevice, CanonicalPreparedModel]:
        """The AIDL family's adapters implement the canonical interface: mypy checks it here."""
        return device, prepared
