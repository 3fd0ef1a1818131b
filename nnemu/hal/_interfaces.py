"""The HAL's interfaces as typing Protocols: what a driver family implements, what the runtime calls.

These are the HIDL family's interfaces (``android.hardware.neuralnetworks@1.0``-``@1.3``),
one method per HIDL method under its HIDL name (``prepareModel_1_3``,
``executeSynchronously``), so that a driver written to them reads like its HIDL
declaration.  The runtime reaches a driver only through them, in the HIDL family's adapters
(``nnemu.runtime.VersionedIDevice``, ``VersionedIPreparedModel``) that implement the runtime's
one interface for every HAL family (``nnemu.runtime.CanonicalDevice``: AOSP's canonical
``nn::IDevice``); the AIDL family's interfaces sit beside these (``_aidl.py``).

What is not the HAL's own is left to the transport and named by type parameters, so that
this module imports nothing of nnemu: ``EndpointT`` is the process a HAL object lives in
(``nnemu.ipc.Endpoint``), ``CallbackT`` the binder reference to a client's callback object
that a driver is handed (``nnemu.ipc.CallbackRef``).  Besides the HIDL arguments a
preparation takes the calling app's ``uid``, as binder's ``getCallingUid`` gives it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from typing import Protocol, TypeVar, runtime_checkable

from nnemu.hal._enums import (
    DeviceType,
    ErrorStatus,
    HalVersion,
    MeasureTiming,
)
from nnemu.hal._fence import ISyncFence
from nnemu.hal._memory import BufferDesc, BufferRole, IBuffer
from nnemu.hal._types import Capabilities, Model, OutputShape, Request, Timing

EndpointT = TypeVar("EndpointT", covariant=True)
"""The transport's handle on the process a HAL object lives in."""
CallbackT = TypeVar("CallbackT", contravariant=True)
"""The transport's reference to a client's callback object, as a driver is handed it."""
PreparedT = TypeVar("PreparedT", contravariant=True)
"""The prepared model a preparation callback is notified of."""

ExecuteResult = tuple[ErrorStatus, tuple[OutputShape, ...], Timing]
"""What a synchronous execution answers: status, output shapes, timing."""


@runtime_checkable
class IFencedExecutionCallback(Protocol):
    """IFencedExecutionCallback (1.3): what ``executeFenced`` hands back with its fence."""

    @property
    def sync_fence(self) -> ISyncFence | None:
        """The sync fence ``executeFenced`` returned beside it (None: the empty handle, the
        work done inside the call)."""
        ...

    def get_execution_info(self) -> tuple[ErrorStatus, Timing, Timing]:
        """getExecutionInfo: status, timing from launch and timing from the fences
        (GENERAL_FAILURE and no timing before the fence signalled)."""
        ...


@runtime_checkable
class IBurst(Protocol):
    """IBurstContext (1.2+), the server side of a burst: one driver thread serving a client's FMQs.

    A request packet travels through shared memory, not binder; ``delivery_ns`` is what
    it takes to reach the server, ``serve`` what the server thread does with it.
    """

    def delivery_ns(self, now_ns: int, wake_ns: int) -> int:
        """Time for a request packet sent at ``now_ns`` to reach the server thread (``wake_ns``:
        what waking a sleeping thread costs)."""
        ...

    async def serve(self, request: Request, measure: MeasureTiming) -> ExecuteResult:
        """The server thread handles one request packet (no deadline, no loop timeout)."""
        ...


@runtime_checkable
class IPreparedModel(Protocol[EndpointT, CallbackT]):
    """IPreparedModel 1.0-1.3: a model prepared for one device, living in the driver process."""

    @property
    def endpoint(self) -> EndpointT:
        """The driver process the prepared model lives in."""
        ...

    @property
    def model(self) -> Model:
        """The model the driver prepared."""
        ...

    def release(self) -> None:
        """The client dropped its last reference: the driver frees the model's memory."""
        ...

    async def execute(self, request: Request, callback: CallbackT | None) -> ErrorStatus:
        """execute (1.0): launch; the answer comes through ``callback``."""
        ...

    async def execute_1_2(
        self, request: Request, measure: MeasureTiming, callback: CallbackT | None
    ) -> ErrorStatus:
        """execute_1_2."""
        ...

    async def execute_1_3(
        self,
        request: Request,
        measure: MeasureTiming,
        deadline_ns: int | None,
        loop_timeout_ns: int | None,
        callback: CallbackT | None,
    ) -> ErrorStatus:
        """execute_1_3."""
        ...

    def executeSynchronously(
        self, request: Request, measure: MeasureTiming
    ) -> Awaitable[ExecuteResult]:
        """executeSynchronously (1.2): the answer is the return value."""
        ...

    def executeSynchronously_1_3(
        self,
        request: Request,
        measure: MeasureTiming,
        deadline_ns: int | None,
        loop_timeout_ns: int | None,
    ) -> Awaitable[ExecuteResult]:
        """executeSynchronously_1_3."""
        ...

    async def configureExecutionBurst(
        self, callback: object, preference: int = ...
    ) -> tuple[ErrorStatus, IBurst | None]:
        """configureExecutionBurst (1.2): a burst server for this model."""
        ...

    async def executeFenced(
        self,
        request: Request,
        wait_for: Sequence[ISyncFence | None],
        measure: MeasureTiming,
        deadline_ns: int | None,
        loop_timeout_ns: int | None,
        duration_ns: int | None,
    ) -> tuple[ErrorStatus, IFencedExecutionCallback | None]:
        """executeFenced (1.3): the launch's status and the callback (with its fence)."""
        ...


@runtime_checkable
class IDevice(Protocol[EndpointT, CallbackT]):
    """IDevice 1.0-1.3: a driver service, its queries and its preparations."""

    @property
    def name(self) -> str:
        """The name the service is registered under."""
        ...

    @property
    def version(self) -> HalVersion:
        """The newest interface the service implements."""
        ...

    @property
    def endpoint(self) -> EndpointT:
        """The driver's process."""
        ...

    async def getCapabilities(self) -> tuple[ErrorStatus, Capabilities]:
        """getCapabilities (and _1_1, _1_2, _1_3)."""
        ...

    async def getVersionString(self) -> tuple[ErrorStatus, str]:
        """getVersionString (1.2)."""
        ...

    async def getType(self) -> tuple[ErrorStatus, DeviceType]:
        """getType (1.2)."""
        ...

    async def getSupportedExtensions(self) -> tuple[ErrorStatus, tuple[()]]:
        """getSupportedExtensions (1.2)."""
        ...

    async def getNumberOfCacheFilesNeeded(self) -> tuple[ErrorStatus, int, int]:
        """getNumberOfCacheFilesNeeded (1.2): model and data cache files."""
        ...

    async def getSupportedOperations(
        self, model: Model, version: HalVersion = ...
    ) -> tuple[ErrorStatus, tuple[bool, ...]]:
        """getSupportedOperations (the _1_x variants pass their version)."""
        ...

    async def prepareModel(
        self, model: Model, callback: CallbackT | None, *, uid: int = ...
    ) -> ErrorStatus:
        """prepareModel (1.0): launch; the prepared model comes through ``callback``."""
        ...

    async def prepareModel_1_1(
        self, model: Model, preference: int, callback: CallbackT | None, *, uid: int = ...
    ) -> ErrorStatus:
        """prepareModel_1_1."""
        ...

    async def prepareModel_1_2(
        self,
        model: Model,
        preference: int,
        model_cache: Sequence[object],
        data_cache: Sequence[object],
        token: bytes,
        callback: CallbackT | None,
        *,
        uid: int = ...,
    ) -> ErrorStatus:
        """prepareModel_1_2 (with the compilation cache's files and token)."""
        ...

    async def prepareModel_1_3(
        self,
        model: Model,
        preference: int,
        priority: int,
        deadline_ns: int | None,
        model_cache: Sequence[object],
        data_cache: Sequence[object],
        token: bytes,
        callback: CallbackT | None,
        *,
        uid: int = ...,
    ) -> ErrorStatus:
        """prepareModel_1_3."""
        ...

    async def prepareModelFromCache(
        self,
        model_cache: Sequence[object],
        data_cache: Sequence[object],
        token: bytes,
        callback: CallbackT | None,
        *,
        uid: int = ...,
    ) -> ErrorStatus:
        """prepareModelFromCache (1.2)."""
        ...

    async def prepareModelFromCache_1_3(
        self,
        deadline_ns: int | None,
        model_cache: Sequence[object],
        data_cache: Sequence[object],
        token: bytes,
        callback: CallbackT | None,
        *,
        uid: int = ...,
    ) -> ErrorStatus:
        """prepareModelFromCache_1_3."""
        ...

    async def allocate(
        self,
        desc: BufferDesc,
        prepared_models: Sequence[object | None],
        input_roles: Sequence[BufferRole],
        output_roles: Sequence[BufferRole],
    ) -> tuple[ErrorStatus, IBuffer | None, int]:
        """allocate (1.3): device memory for the roles; (status, buffer, token > 0)."""
        ...


class IPreparedModelCallback(Protocol[PreparedT]):
    """IPreparedModelCallback, implemented by the client: the driver notifies it once."""

    def notify(self, status: ErrorStatus, prepared: PreparedT | None) -> None:
        """notify / notify_1_2 / notify_1_3."""
        ...


class IExecutionCallback(Protocol):
    """IExecutionCallback, implemented by the client: the driver notifies it once."""

    def notify(
        self,
        status: ErrorStatus,
        shapes: tuple[OutputShape, ...] = ...,
        timing: Timing | None = ...,
    ) -> None:
        """notify / notify_1_2 / notify_1_3."""
        ...
