"""Device memory (HAL 1.3 memory domains): ``IDevice::allocate``'s buffers, tokens and checks.

As the sample driver (``SampleDriver::allocate``, ``SampleBuffer`` in ``SampleDriver.cpp``;
``ManagedBuffer`` and ``BufferTracker`` in ``common/BufferTracker.cpp``, Android 11): a
buffer is allocated for roles of the driver's own prepared models and named by a token
(1, 2, ...; a freed token is reused first); it starts *uninitialized*.  ``copyFrom`` (or an
execution writing it as an output) initializes it, a failed ``copyFrom`` uninitializes it;
``copyTo`` and an execution reading it as an input need it initialized (GENERAL_FAILURE
otherwise).  A request names it by token, checked against its roles when the execution
runs.  Copies cost the driver's memcpy time (``COPY_BYTES_PER_US``).  The bookkeeping
(``ManagedBuffer``, ``BufferTracker``) is ``_tracker``'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from nnemu.driver._tracker import ManagedBuffer
from nnemu.hal import (
    INVALID_BUFFER_TOKEN,
    BufferDesc,
    BufferRole,
    DeviceBuffer,
    ErrorStatus,
    HalVersion,
    Model,
    OperandType,
    ServiceSpecificError,
    SharedMemory,
    data_size,
    validate_memory_desc,
)
from nnemu.ipc import Endpoint

if TYPE_CHECKING:
    from nnemu.driver._hidl import DriverHost

COPY_BYTES_PER_US: Final = 4096
"""memcpy bandwidth of a driver copying between shared memory and its device memory
(4 GB/s: bytes per microsecond); ``copy_ns`` prices one copy."""


def copy_ns(size: int) -> int:
    """Driver time to copy ``size`` bytes between shared and device memory."""
    return size * 1000 // COPY_BYTES_PER_US


class SampleBuffer:
    """HIDL ``IBuffer`` of one device memory (the sample driver's ``SampleBuffer``)."""

    def __init__(self, service: DriverHost, buffer: ManagedBuffer, token: int) -> None:
        self.service = service
        self.buffer = buffer
        self.token = token
        self.endpoint: Endpoint = service.endpoint

    def release(self) -> None:
        """The client dropped its last reference: the token is freed, the memory returned."""
        service = self.service
        if service.buffers.get(self.token) is self.buffer:
            service.buffers.free(self.token)
            service.memory_used -= self.buffer.size
            service.trace_memory()

    async def copyTo(self, dst: SharedMemory) -> ErrorStatus:
        """IBuffer::copyTo: the buffer into ``dst`` (same size, initialized)."""
        error = self.buffer.validate_copy_to(dst.size)
        if error is not None:
            return error
        self.service.kernel.work(copy_ns(dst.size))
        return ErrorStatus.NONE

    async def copyFrom(self, src: SharedMemory, dimensions: Sequence[int]) -> ErrorStatus:
        """IBuffer::copyFrom: ``src`` into the buffer; initialized on success, else not."""
        buffer = self.buffer
        error = buffer.validate_copy_from(dimensions, src.size)
        if error is not None:
            buffer.initialized = False
            return error
        self.service.kernel.work(copy_ns(src.size))
        buffer.update_dimensions(dimensions)
        buffer.initialized = True
        return ErrorStatus.NONE


class AidlBuffer:
    """AIDL ``IBuffer`` over a ``SampleBuffer``: errors as service-specific statuses."""

    def __init__(self, buffer: SampleBuffer) -> None:
        self.buffer = buffer
        self.endpoint: Endpoint = buffer.endpoint

    def release(self) -> None:
        """The client dropped its last reference."""
        self.buffer.release()

    async def copyTo(self, dst: SharedMemory) -> ServiceSpecificError | None:
        """copyTo."""
        status = await self.buffer.copyTo(dst)
        return None if status is ErrorStatus.NONE else ServiceSpecificError(status)

    async def copyFrom(
        self, src: SharedMemory, dimensions: Sequence[int]
    ) -> ServiceSpecificError | None:
        """copyFrom."""
        status = await self.buffer.copyFrom(src, dimensions)
        return None if status is ErrorStatus.NONE else ServiceSpecificError(status)


def allocate(
    service: DriverHost,
    desc: BufferDesc,
    prepared_models: Sequence[object | None],
    input_roles: Sequence[BufferRole],
    output_roles: Sequence[BufferRole],
) -> tuple[ErrorStatus, SampleBuffer | None, int]:
    """``SampleDriver::allocate``: validate, size, reserve and register one device memory.

    INVALID_ARGUMENT when ``validateMemoryDesc`` refuses (a prepared model of another
    driver included); GENERAL_FAILURE for unknown dimensions (the sample driver allocates
    only fully specified ones), for a driver older than 1.3, or when the device memory is
    full.
    """
    refused = (ErrorStatus.GENERAL_FAILURE, None, INVALID_BUFFER_TOKEN)
    if not service.version.at_least(HalVersion.V1_3):
        return refused

    def resolve(prepared: object) -> tuple[object, Model] | None:
        own = getattr(prepared, "prepared", prepared)  # an AIDL IPreparedModel's own model
        if getattr(own, "service", None) is not service:
            return None  # not this driver's (a remote IPreparedModel)
        model: Model = own.model  # type: ignore[attr-defined]
        return own, model

    checked = validate_memory_desc(desc, prepared_models, input_roles, output_roles, resolve)
    if isinstance(checked, str):
        service.log.debug("allocate_rejected", reason=checked)
        return ErrorStatus.INVALID_ARGUMENT, None, INVALID_BUFFER_TOKEN
    roles, operand = checked
    size = data_size(OperandType(operand.type), operand.dimensions)
    capacity = int(service.spec.memory_mb * 1024 * 1024)
    if size == 0 or service.memory_used + size > capacity:
        return refused
    service.memory_used += size
    service.trace_memory()
    buffer = ManagedBuffer(size, roles, OperandType(operand.type), operand.dimensions)
    token = service.buffers.add(buffer)
    return ErrorStatus.NONE, SampleBuffer(service, buffer, token), token


def aidl_answer(
    answer: tuple[ErrorStatus, SampleBuffer | None, int],
) -> DeviceBuffer | ServiceSpecificError:
    """What AIDL's ``allocate`` answers for the HIDL family's."""
    status, buffer, token = answer
    if status is not ErrorStatus.NONE or buffer is None:
        return ServiceSpecificError(status)
    return DeviceBuffer(AidlBuffer(buffer), token)
