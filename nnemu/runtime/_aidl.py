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

from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from nnemu.hal import (
    CACHE_TOKEN_BYTES,
    BufferDesc,
    BufferRole,
    DeviceType,
    ErrorStatus,
    ExecutionPreference,
    HalVersion,
    ISyncFence,
    MeasureTiming,
    Model,
    PrepareModelConfig,
    Priority,
    Request,
    ServiceSpecificError,
    Timing,
    UnknownTransaction,
)
from nnemu.ipc import DEAD, Binder, CallbackRef, DeadObject, Endpoint
from nnemu.runtime._aidl_exec import (
    AidlIBurst,
    AidlIExecution,
    execution_answer,
    execution_config,
    fenced_launch_answer,
    left_pending,
    ns_or_none,
)
from nnemu.runtime._buffers import CanonicalBuffer, allocated
from nnemu.runtime._canonical import (
    NO_CACHE,
    CachedRequestExecution,
    CacheHandles,
    CanonicalExecution,
    FencedAnswer,
)
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


_ns = ns_or_none
"""The runtime's optional nanoseconds as AIDL passes them: ``-1`` for none."""


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
        """executeSynchronously (AIDL has no asynchronous execute); on a v4 driver
        executeSynchronouslyWithConfig, as ``aidl::utils::PreparedModel`` does from
        feature level 8."""
        measured = measure is MeasureTiming.YES
        if self.version is HalVersion.AIDL_V4:
            config = execution_config(measure, loop_timeout_ns)
            answer = await self._binder.call(
                self.endpoint,
                self._iface,
                "executeSynchronouslyWithConfig",
                self.prepared.executeSynchronouslyWithConfig,
                request,
                config,
                _ns(deadline_ns),
            )
        else:
            answer = await self._binder.call(
                self.endpoint,
                self._iface,
                "executeSynchronously",
                self.prepared.executeSynchronously,
                request,
                measured,
                _ns(deadline_ns),
                loop_timeout_ns,
            )
        return execution_answer(answer)

    async def execute_fenced(
        self,
        request: Request,
        measure: MeasureTiming,
        deadline_ns: int | None,
        loop_timeout_ns: int,
        duration_ns: int | None,
        wait_for: Sequence[ISyncFence] = (),
    ) -> FencedAnswer:
        """executeFenced (executeFencedWithConfig on a v4 driver); the timings from the
        callback's getExecutionInfo, or the FencedExecutionResult's fence and callback when
        its work is still under way."""
        measured = measure is MeasureTiming.YES
        if self.version is HalVersion.AIDL_V4:
            config = execution_config(measure, loop_timeout_ns)
            answer = await self._binder.call(
                self.endpoint,
                self._iface,
                "executeFencedWithConfig",
                partial(
                    self.prepared.executeFencedWithConfig,
                    request,
                    tuple(wait_for),
                    config,
                    _ns(deadline_ns),
                    _ns(duration_ns),
                ),
                reply_overlaps=left_pending,
            )
        else:
            answer = await self._binder.call(
                self.endpoint,
                self._iface,
                "executeFenced",
                partial(
                    self.prepared.executeFenced,
                    request,
                    tuple(wait_for),
                    measured,
                    _ns(deadline_ns),
                    loop_timeout_ns,
                    _ns(duration_ns),
                ),
                reply_overlaps=left_pending,
            )
        return fenced_launch_answer(answer)

    async def configure_execution_burst(
        self, callback: object, preference: int
    ) -> AidlIBurst | None:
        """configureExecutionBurst: the driver's IBurst, or None when it cannot burst (then the
        burst's executions go through the prepared model, as the runtime falls back)."""
        answer = await self._binder.call(
            self.endpoint,
            self._iface,
            "configureExecutionBurst",
            self.prepared.configureExecutionBurst,
        )
        if isinstance(answer, DeadObject | ServiceSpecificError):
            return None
        return AidlIBurst(answer, version=self.version, binder=self._binder, endpoint=self.endpoint)

    async def create_reusable_execution(
        self, request: Request, measure: MeasureTiming, loop_timeout_ns: int
    ) -> tuple[ErrorStatus | DeadObject, CanonicalExecution | None]:
        """``PreparedModel::createReusableExecution``: a v4 driver's IExecution (one
        createReusableExecution call), else the cached request (no call)."""
        if self.version is not HalVersion.AIDL_V4:
            return ErrorStatus.NONE, CachedRequestExecution(self, request, measure, loop_timeout_ns)
        config = execution_config(measure, loop_timeout_ns)
        answer = await self._binder.call(
            self.endpoint,
            self._iface,
            "createReusableExecution",
            self.prepared.createReusableExecution,
            request,
            config,
        )
        if isinstance(answer, DeadObject):
            return DEAD, None
        if isinstance(answer, ServiceSpecificError):
            return answer.status, None
        if isinstance(answer, UnknownTransaction):
            return ErrorStatus.GENERAL_FAILURE, None
        execution = AidlIExecution(
            answer, version=self.version, binder=self._binder, endpoint=self.endpoint
        )
        return ErrorStatus.NONE, execution


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
        if self.version is HalVersion.AIDL_V4:
            # Feature level 8: prepareModelWithConfig (aidl::utils::Device::prepareModel).
            config = PrepareModelConfig(
                preference=int(preference),
                priority=int(priority),
                deadline_ns=_ns(deadline_ns),
                model_cache=model_cache,
                data_cache=data_cache,
                cache_token=token,
            )
            with self.tracer.section(mark(Layer.IPC, Phase.COMPILATION, "prepareModel")):
                return await self._wait_prepared(
                    "prepareModelWithConfig",
                    lambda ref: self._with_config(model, config, ref),
                )
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

    async def _with_config(
        self, model: Model, config: PrepareModelConfig, ref: CallbackRef
    ) -> ServiceSpecificError | None:
        """The driver's prepareModelWithConfig; an unknown transaction is a GENERAL_FAILURE."""
        answer = await self.service.prepareModelWithConfig(model, config, ref, uid=self.uid)
        if isinstance(answer, UnknownTransaction):
            return ServiceSpecificError(ErrorStatus.GENERAL_FAILURE)
        return answer

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

    async def allocate(
        self,
        desc: BufferDesc,
        prepared_models: Sequence[CanonicalPreparedModel],
        input_roles: Sequence[BufferRole],
        output_roles: Sequence[BufferRole],
    ) -> tuple[ErrorStatus | DeadObject, CanonicalBuffer | None]:
        """allocate: ``DeviceBuffer{buffer, token}`` or the call's service-specific error."""
        models = [getattr(p, "prepared", p) for p in prepared_models]
        service = self.service
        answer = await self.call(
            "allocate",
            partial(service.allocate, desc, models, tuple(input_roles), tuple(output_roles)),
        )
        if isinstance(answer, DeadObject):
            return DEAD, None
        if isinstance(answer, ServiceSpecificError):
            return answer.status, None
        status, buffer, token = allocated(ErrorStatus.NONE, answer.buffer, answer.token)
        if buffer is None:
            return status, None
        return status, CanonicalBuffer(
            buffer, token, version=self.version, endpoint=service.endpoint, binder=self.binder
        )


if TYPE_CHECKING:

    def _adapts(
        device: AidlIDevice, prepared: AidlIPreparedModel
    ) -> tuple[CanonicalDevice, CanonicalPreparedModel]:
        """The AIDL family's adapters implement the canonical interface: mypy checks it here."""
        return device, prepared
