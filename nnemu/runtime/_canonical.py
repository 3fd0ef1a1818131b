"""The runtime's one interface to a driver, whatever its HAL family: AOSP's canonical ``nn::IDevice``.

Compilations and executions call a driver only through these Protocols (as the S runtime
calls ``nn::IDevice`` / ``nn::IPreparedModel`` of ``packages/modules/NeuralNetworks/common/
types/include/nnapi/``).  A HAL family's adapter implements them over that family's own
interfaces: the HIDL 1.0-1.3 family's is ``VersionedIDevice`` / ``VersionedIPreparedModel``
(``_versioned.py``, over ``nnemu.hal``'s ``IDevice`` / ``IPreparedModel``); the AIDL
family's is ``AidlIDevice`` / ``AidlIPreparedModel`` beside it (``_aidl.py``, over
``IAidlDevice`` / ``IAidlPreparedModel``).  A burst is a ``CanonicalBurst`` (AIDL's IBurst)
or, for a HIDL driver, the FMQ ``IBurst`` context the R runtime's ExecutionBurstController
drives; a reusable execution's step is a ``CanonicalExecution`` (``nn::IExecution``): an
AIDL v4 driver's IExecution, or ``CachedRequestExecution`` for every other driver, as
AOSP's ``ExecutionWithCachedRequest`` runs the cached request through the prepared model.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

import attrs

from nnemu.hal import (
    BufferDesc,
    BufferRole,
    ErrorStatus,
    ExecutionPreference,
    HalVersion,
    IBurst,
    ISyncFence,
    MeasureTiming,
    Model,
    Priority,
    Request,
    Timing,
)
from nnemu.ipc import DeadObject, Endpoint
from nnemu.runtime._buffers import CanonicalBuffer
from nnemu.runtime._devices import RuntimeDevice
from nnemu.sim import FileHandle

CacheHandles = tuple[tuple[FileHandle, ...], tuple[FileHandle, ...], bytes]
"""(model cache files, data cache files, token) given to prepareModel(FromCache)."""

NO_CACHE: CacheHandles = ((), (), b"")
"""No cache files and no token."""


@attrs.frozen
class FencedLaunch:
    """A driver's ``executeFenced`` that returned before its work ended."""

    sync_fence: ISyncFence
    """The fence the driver signals when the work ends (in error when it fails)."""
    info: Callable[[], tuple[ErrorStatus, Timing, Timing]]
    """Its callback's getExecutionInfo: status, timingLaunched, timingFenced."""


FencedAnswer = tuple[ErrorStatus | DeadObject, Timing | None, Timing | None, FencedLaunch | None]
"""What ``execute_fenced`` answers: status, timing from launch, timing from the fences, and
the fence and callback of work still under way."""


class CanonicalPreparedModel(Protocol):
    """``nn::IPreparedModel``: a model a driver prepared, as the runtime executes it."""

    @property
    def version(self) -> HalVersion:
        """The HAL version of the driver's prepared model."""
        ...

    @property
    def model(self) -> Model:
        """The model the driver prepared."""
        ...

    @property
    def endpoint(self) -> Endpoint:
        """The driver process the model lives in."""
        ...

    def release(self) -> None:
        """The last reference is dropped: the driver frees the model's memory."""
        ...

    async def execute(
        self,
        request: Request,
        measure: MeasureTiming,
        deadline_ns: int | None,
        loop_timeout_ns: int,
    ) -> tuple[ErrorStatus | DeadObject, Timing | None]:
        """One execution: its status (DEAD when the driver died) and the driver's timing."""
        ...

    async def execute_fenced(
        self,
        request: Request,
        measure: MeasureTiming,
        deadline_ns: int | None,
        loop_timeout_ns: int,
        duration_ns: int | None,
        wait_for: Sequence[ISyncFence] = (),
    ) -> FencedAnswer:
        """One fenced execution waiting for ``wait_for``: its status, the timing from the
        launch, the timing from the input fences signalling, and -- when the driver
        returned before its work ended -- its fence and callback (the timings then None)."""
        ...

    async def configure_execution_burst(
        self, callback: object, preference: int
    ) -> IBurst | CanonicalBurst | None:
        """A burst's server side, or None when the driver cannot burst."""
        ...

    async def create_reusable_execution(
        self, request: Request, measure: MeasureTiming, loop_timeout_ns: int
    ) -> tuple[ErrorStatus | DeadObject, CanonicalExecution | None]:
        """``nn::IPreparedModel::createReusableExecution``: the step of a reusable execution."""
        ...


class CachedMemory(Protocol):
    """A runtime memory a burst may cache (``RuntimeMemory::hold``)."""

    def hold(self, release: Callable[[], Awaitable[None]]) -> None:
        """Keep ``release`` until the memory is freed, then await it."""
        ...


class CanonicalBurst(Protocol):
    """``nn::IBurst`` of a driver whose burst is a binder object (AIDL's IBurst)."""

    async def execute(
        self,
        request: Request,
        measure: MeasureTiming,
        deadline_ns: int | None,
        loop_timeout_ns: int,
        pool_memories: Sequence[CachedMemory | None] = (),
    ) -> tuple[ErrorStatus | DeadObject, Timing | None]:
        """One execution through the burst: its status and the driver's timing;
        ``pool_memories`` names the runtime memory each request pool is (None: not one)."""
        ...

    def close(self) -> None:
        """ANeuralNetworksBurst_free: the burst, and its memory cache, are gone."""
        ...


class CanonicalExecution(Protocol):
    """``nn::IExecution``: one driver step of a reusable execution, computed again and again."""

    async def compute(
        self, deadline_ns: int | None
    ) -> tuple[ErrorStatus | DeadObject, Timing | None]:
        """One computation: its status and the driver's timing."""
        ...

    async def compute_fenced(
        self, deadline_ns: int | None, duration_ns: int | None, wait_for: Sequence[ISyncFence]
    ) -> FencedAnswer:
        """One fenced computation after ``wait_for`` (as ``CanonicalPreparedModel``'s
        ``execute_fenced`` answers)."""
        ...


class CachedRequestExecution:
    """A reusable execution of a driver that has no IExecution: each computation executes
    the cached request through the prepared model, as ``ExecutionWithCachedRequest``
    (``hardware/interfaces/neuralnetworks/aidl/utils/src/Execution.cpp``, AIDL v1-v3) and the
    HIDL utils' ``Execution`` (``1.3/utils/src/PreparedModel.cpp``
    ``createReusableExecution``) do."""

    def __init__(
        self,
        prepared: CanonicalPreparedModel,
        request: Request,
        measure: MeasureTiming,
        loop_timeout_ns: int,
    ) -> None:
        self.prepared = prepared
        self.request = request
        self.measure = measure
        self.loop_timeout_ns = loop_timeout_ns

    async def compute(
        self, deadline_ns: int | None
    ) -> tuple[ErrorStatus | DeadObject, Timing | None]:
        """The prepared model's execute."""
        return await self.prepared.execute(
            self.request, self.measure, deadline_ns, self.loop_timeout_ns
        )

    async def compute_fenced(
        self, deadline_ns: int | None, duration_ns: int | None, wait_for: Sequence[ISyncFence]
    ) -> FencedAnswer:
        """The prepared model's execute_fenced."""
        return await self.prepared.execute_fenced(
            self.request, self.measure, deadline_ns, self.loop_timeout_ns, duration_ns, wait_for
        )


class CanonicalDevice(Protocol):
    """``nn::IDevice``: a driver as the runtime discovers it and prepares models on it."""

    async def discover(self) -> RuntimeDevice | None:
        """The device's queries; None drops the device."""
        ...

    async def get_supported_operations(self, model: Model) -> tuple[bool, ...] | DeadObject:
        """Per-operation support (DEAD when the driver process is dead)."""
        ...

    async def prepare_model(
        self,
        model: Model,
        preference: ExecutionPreference,
        priority: Priority,
        deadline_ns: int | None,
        cache: CacheHandles = ...,
    ) -> tuple[ErrorStatus | DeadObject, CanonicalPreparedModel | None]:
        """Prepare ``model``: the status and the prepared model."""
        ...

    async def prepare_model_from_cache(
        self, deadline_ns: int | None, cache: CacheHandles
    ) -> tuple[ErrorStatus | DeadObject, CanonicalPreparedModel | None]:
        """Prepare from the compilation cache: the status and the prepared model."""
        ...

    async def allocate(
        self,
        desc: BufferDesc,
        prepared_models: Sequence[CanonicalPreparedModel],
        input_roles: Sequence[BufferRole],
        output_roles: Sequence[BufferRole],
    ) -> tuple[ErrorStatus | DeadObject, CanonicalBuffer | None]:
        """IDevice::allocate (1.3, AIDL): device memory for the roles, or why not."""
        ...
