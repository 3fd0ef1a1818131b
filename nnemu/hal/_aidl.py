"""The AIDL HAL (``android.hardware.neuralnetworks`` AIDL v1-v4): its values and interfaces.

What differs from the HIDL family (docs/hal-semantics.md, "The AIDL HAL"):

- an error is not a returned ``ErrorStatus`` but the call's ``ScopedAStatus`` carrying a
  service-specific error whose code is the ``ErrorStatus`` (``ServiceSpecificError`` here,
  returned as a value in place of the answer);
- there is no asynchronous ``execute``: only ``executeSynchronously`` and ``executeFenced``;
- a deadline is an ``int64`` of nanoseconds, ``-1`` for none; any other negative is
  INVALID_ARGUMENT, and so is a loop timeout below ``-1`` (``-1``: the default);
- ``Timing`` is in nanoseconds, ``-1`` for unknown;
- an output buffer too small is not an error: ``ExecutionResult.outputSufficientSize`` is
  false and the call succeeds.
- a burst is an ``IBurst`` binder object (one call per execution, each request pool named
  by a memory identifier token), not an FMQ ``IBurstContext``;
- v4 adds the ``*WithConfig`` calls and reusable ``IExecution``s (``_aidl_config`` has their
  values).

The interfaces are Protocols, one method per AIDL method under its AIDL name, as
``_interfaces`` does for HIDL.  ``EndpointT`` and ``CallbackT`` are the transport's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Protocol, runtime_checkable

import attrs

from nnemu.hal._aidl_config import ExecutionConfig, PrepareModelConfig, UnknownTransaction
from nnemu.hal._enums import DeviceType, ErrorStatus, HalVersion
from nnemu.hal._fence import ISyncFence
from nnemu.hal._interfaces import CallbackT, EndpointT
from nnemu.hal._memory import BufferDesc, BufferRole, SharedMemory
from nnemu.hal._types import UINT64_MAX, Capabilities, Model, OutputShape, Request, Timing

NO_DEADLINE: Final = -1
"""``deadlineNs`` of no deadline (and ``loopTimeoutDurationNs`` of the default timeout)."""
UNKNOWN_NS: Final = -1
"""A ``Timing`` field the driver did not measure."""


@attrs.frozen
class ServiceSpecificError:
    """``ScopedAStatus::fromServiceSpecificError(status)``: how an AIDL driver fails a call."""

    status: ErrorStatus
    """The ``ErrorStatus`` the status carries as its service-specific code."""


@attrs.frozen
class AidlTiming:
    """AIDL ``Timing``: nanoseconds, ``-1`` when unknown."""

    time_on_device_ns: int = UNKNOWN_NS
    time_in_driver_ns: int = UNKNOWN_NS

    @classmethod
    def from_hidl(cls, timing: Timing) -> AidlTiming:
        """The driver's microsecond Timing in nanoseconds (UINT64_MAX becomes -1)."""
        on_device, in_driver = timing.time_on_device_us, timing.time_in_driver_us
        return cls(
            UNKNOWN_NS if on_device == UINT64_MAX else on_device * 1000,
            UNKNOWN_NS if in_driver == UINT64_MAX else in_driver * 1000,
        )

    def to_hidl(self) -> Timing:
        """The same timing in whole microseconds, -1 as UINT64_MAX (the runtime's Timing)."""
        on_device, in_driver = self.time_on_device_ns, self.time_in_driver_ns
        return Timing(
            UINT64_MAX if on_device < 0 else on_device // 1000,
            UINT64_MAX if in_driver < 0 else in_driver // 1000,
        )


@attrs.frozen
class ExecutionResult:
    """AIDL ``ExecutionResult``: what ``executeSynchronously`` answers on success."""

    output_sufficient_size: bool
    """False when an output buffer is too small (the shapes then say what is needed)."""
    output_shapes: tuple[OutputShape, ...]
    timing: AidlTiming


def check_duration(value_ns: int) -> ServiceSpecificError | None:
    """A deadline or loop timeout as an AIDL driver checks it: ``-1`` (none, or the default)
    or a value >= 0; any other negative is INVALID_ARGUMENT."""
    if value_ns < NO_DEADLINE:
        return ServiceSpecificError(ErrorStatus.INVALID_ARGUMENT)
    return None


def optional_ns(value_ns: int) -> int | None:
    """``-1`` as None (no deadline, the default loop timeout), else the value."""
    return None if value_ns == NO_DEADLINE else value_ns


@runtime_checkable
class IAidlFencedExecutionCallback(Protocol):
    """AIDL IFencedExecutionCallback."""

    @property
    def syncFence(self) -> ISyncFence | None:
        """FencedExecutionResult.syncFence (None: an invalid handle, the work done)."""
        ...

    def getExecutionInfo(self) -> tuple[AidlTiming, AidlTiming, ErrorStatus]:
        """getExecutionInfo: timingLaunched, timingFenced and the execution's ErrorStatus."""
        ...


@runtime_checkable
class IAidlBurst(Protocol):
    """AIDL IBurst (what ``IPreparedModel::configureExecutionBurst`` hands back): synchronous
    executions over binder, one at a time, each request pool named by a memory identifier
    token (-1: none) the driver may cache resources under until ``releaseMemoryResource``."""

    async def executeSynchronously(
        self,
        request: Request,
        memory_identifier_tokens: Sequence[int],
        measure_timing: bool,
        deadline_ns: int,
        loop_timeout_duration_ns: int,
    ) -> ExecutionResult | ServiceSpecificError:
        """executeSynchronously: one token per request pool, each >= -1."""
        ...

    async def executeSynchronouslyWithConfig(
        self,
        request: Request,
        memory_identifier_tokens: Sequence[int],
        config: ExecutionConfig,
        deadline_ns: int,
    ) -> ExecutionResult | ServiceSpecificError | UnknownTransaction:
        """executeSynchronouslyWithConfig (v4)."""
        ...

    async def releaseMemoryResource(
        self, memory_identifier_token: int
    ) -> ServiceSpecificError | None:
        """releaseMemoryResource: the client no longer uses the memory of that token."""
        ...


@runtime_checkable
class IAidlExecution(Protocol):
    """AIDL IExecution (v4): a reusable execution of one request and ExecutionConfig."""

    async def executeSynchronously(
        self, deadline_ns: int
    ) -> ExecutionResult | ServiceSpecificError:
        """executeSynchronously: the request and config given at creation, run again."""
        ...

    async def executeFenced(
        self, wait_for: Sequence[ISyncFence | None], deadline_ns: int, duration_ns: int
    ) -> IAidlFencedExecutionCallback | ServiceSpecificError:
        """executeFenced: as IPreparedModel's, with the creation's request and config."""
        ...


@runtime_checkable
class IAidlPreparedModel(Protocol[EndpointT]):
    """AIDL IPreparedModel: no asynchronous execute; errors as service-specific statuses."""

    @property
    def endpoint(self) -> EndpointT: ...

    @property
    def model(self) -> Model: ...

    def release(self) -> None:
        """The client dropped its last reference: the driver frees the model's memory."""
        ...

    async def executeSynchronously(
        self,
        request: Request,
        measure_timing: bool,
        deadline_ns: int,
        loop_timeout_duration_ns: int,
    ) -> ExecutionResult | ServiceSpecificError:
        """executeSynchronously: the ExecutionResult, or the call's service-specific error."""
        ...

    async def executeFenced(
        self,
        request: Request,
        wait_for: Sequence[ISyncFence | None],
        measure_timing: bool,
        deadline_ns: int,
        loop_timeout_duration_ns: int,
        duration_ns: int,
    ) -> IAidlFencedExecutionCallback | ServiceSpecificError:
        """executeFenced: FencedExecutionResult's callback (with its ``syncFence``), or the
        call's service-specific error."""
        ...

    async def configureExecutionBurst(self) -> IAidlBurst | ServiceSpecificError:
        """configureExecutionBurst: an IBurst for this prepared model."""
        ...

    async def executeSynchronouslyWithConfig(
        self, request: Request, config: ExecutionConfig, deadline_ns: int
    ) -> ExecutionResult | ServiceSpecificError | UnknownTransaction:
        """executeSynchronouslyWithConfig (v4)."""
        ...

    async def executeFencedWithConfig(
        self,
        request: Request,
        wait_for: Sequence[ISyncFence | None],
        config: ExecutionConfig,
        deadline_ns: int,
        duration_ns: int,
    ) -> IAidlFencedExecutionCallback | ServiceSpecificError | UnknownTransaction:
        """executeFencedWithConfig (v4)."""
        ...

    async def createReusableExecution(
        self, request: Request, config: ExecutionConfig
    ) -> IAidlExecution | ServiceSpecificError | UnknownTransaction:
        """createReusableExecution (v4): an IExecution of ``request`` and ``config``."""
        ...


@runtime_checkable
class IAidlBuffer(Protocol):
    """AIDL ``IBuffer`` (``_memory.IBuffer``'s copies), failing with a service-specific error."""

    async def copyTo(self, dst: SharedMemory) -> ServiceSpecificError | None:
        """copyTo."""
        ...

    async def copyFrom(
        self, src: SharedMemory, dimensions: Sequence[int]
    ) -> ServiceSpecificError | None:
        """copyFrom."""
        ...


@attrs.frozen
class DeviceBuffer:
    """AIDL ``DeviceBuffer``: what ``IDevice::allocate`` answers, the buffer and its token."""

    buffer: IAidlBuffer
    """The driver's buffer object."""
    token: int
    """The token a request names the memory by (> 0)."""


@runtime_checkable
class IAidlDevice(Protocol[EndpointT, CallbackT]):
    """AIDL IDevice: a driver service registered as ``android.hardware.neuralnetworks.IDevice/<name>``."""

    @property
    def name(self) -> str: ...

    @property
    def version(self) -> HalVersion:
        """The AIDL version the service implements (``getInterfaceVersion``)."""
        ...

    @property
    def endpoint(self) -> EndpointT: ...

    async def getInterfaceVersion(self) -> int:
        """getInterfaceVersion (every AIDL interface has it): 1 to 4."""
        ...

    async def getCapabilities(self) -> Capabilities | ServiceSpecificError: ...

    async def getVersionString(self) -> str | ServiceSpecificError: ...

    async def getType(self) -> DeviceType | ServiceSpecificError: ...

    async def getNumberOfCacheFilesNeeded(self) -> tuple[int, int] | ServiceSpecificError:
        """NumberOfCacheFiles: numModelCache, numDataCache."""
        ...

    async def getSupportedOperations(self, model: Model) -> tuple[bool, ...] | ServiceSpecificError:
        """getSupportedOperations."""
        ...

    async def prepareModel(
        self,
        model: Model,
        preference: int,
        priority: int,
        deadline_ns: int,
        model_cache: Sequence[object],
        data_cache: Sequence[object],
        token: bytes,
        callback: CallbackT | None,
        *,
        uid: int = ...,
    ) -> ServiceSpecificError | None:
        """prepareModel: launch (None is an OK status); the model comes through ``callback``."""
        ...

    async def prepareModelFromCache(
        self,
        deadline_ns: int,
        model_cache: Sequence[object],
        data_cache: Sequence[object],
        token: bytes,
        callback: CallbackT | None,
        *,
        uid: int = ...,
    ) -> ServiceSpecificError | None:
        """prepareModelFromCache."""
        ...

    async def prepareModelWithConfig(
        self,
        model: Model,
        config: PrepareModelConfig,
        callback: CallbackT | None,
        *,
        uid: int = ...,
    ) -> ServiceSpecificError | UnknownTransaction | None:
        """prepareModelWithConfig (v4): prepareModel's arguments in a PrepareModelConfig."""
        ...

    async def allocate(
        self,
        desc: BufferDesc,
        prepared_models: Sequence[object | None],
        input_roles: Sequence[BufferRole],
        output_roles: Sequence[BufferRole],
    ) -> DeviceBuffer | ServiceSpecificError:
        """allocate: device memory for the roles (``DeviceBuffer{buffer, token}``)."""
        ...
