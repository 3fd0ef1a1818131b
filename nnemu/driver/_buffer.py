"""Device memory (HAL 1.3 memory domains): ``IDevice::allocate``'s buffers, tokens and checks.

As the sample driver (``SampleDriver::allocate``, ``SampleBuffer`` in ``SampleDriver.cpp``;
``ManagedBuffer`` and ``BufferTracker`` in ``common/BufferTracker.cpp``, Android 11): a
buffer is allocated for roles of the driver's own prepared models and named by a token
(1, 2, ...; a freed token is reused first); it starts *uninitialized*.  ``copyFrom`` (or an
execution writing it as an output) initializes it, a failed ``copyFrom`` uninitializes it;
``copyTo`` and an execution reading it as an input need it initialized (GENERAL_FAILURE
otherwise).  A request names it by token, checked against its roles when the execution
runs.  Copies cost the driver's memcpy time (``COPY_BYTES_PER_US``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

import attrs

from nnemu.hal import (
    INVALID_BUFFER_TOKEN,
    BufferDesc,
    BufferRole,
    DeviceBuffer,
    ErrorStatus,
    HalVersion,
    Model,
    OperandType,
    OutputShape,
    Request,
    ServiceSpecificError,
    SharedMemory,
    combine_dimensions,
    data_size,
    validate_memory_desc,
)
from nnemu.hal._memory import Role
from nnemu.ipc import Endpoint

if TYPE_CHECKING:
    from nnemu.driver._hidl import DriverHost

COPY_BYTES_PER_US: Final = 4096
"""memcpy bandwidth of a driver copying between shared memory and its device memory
(4 GB/s: bytes per microsecond); ``copy_ns`` prices one copy."""


def copy_ns(size: int) -> int:
    """Driver time to copy ``size`` bytes between shared and device memory."""
    return size * 1000 // COPY_BYTES_PER_US


@attrs.define(eq=False)
class ManagedBuffer:
    """``ManagedBuffer``: one device memory's size, roles, operand and state."""

    size: int
    """Bytes."""
    roles: frozenset[Role]
    """(prepared model, is an output, io index) it was allocated for."""
    operand_type: OperandType
    """The roles' operand type."""
    initial_dimensions: tuple[int, ...]
    """The dimensions allocated (the desc's combined with the roles')."""
    dimensions: tuple[int, ...] = attrs.field(init=False)
    """The dimensions last written (``mUpdatedDimensions``)."""
    initialized: bool = False
    """Whether it holds data (``copyFrom`` or an execution's output wrote it)."""

    def __attrs_post_init__(self) -> None:
        self.dimensions = self.initial_dimensions

    def validate_request(
        self, pool_index: int, request: Request, prepared: object
    ) -> ErrorStatus | None:
        """``ManagedBuffer::validateRequest``: the roles, the state and the dimensions of
        every argument of ``request`` in pool ``pool_index``; the error, or None."""
        as_input = as_output = False
        for i, argument in enumerate(request.inputs):
            if argument.has_no_value or argument.location.pool_index != pool_index:
                continue
            if (prepared, False, i) not in self.roles:
                return ErrorStatus.INVALID_ARGUMENT
            if not self.initialized:
                return ErrorStatus.GENERAL_FAILURE
            if combine_dimensions(self.dimensions, argument.dimensions) is None:
                return ErrorStatus.INVALID_ARGUMENT
            as_input = True
        for i, argument in enumerate(request.outputs):
            if argument.has_no_value or argument.location.pool_index != pool_index:
                continue
            if as_input or as_output:  # one memory: never input and output, nor two outputs
                return ErrorStatus.INVALID_ARGUMENT
            if (prepared, True, i) not in self.roles:
                return ErrorStatus.INVALID_ARGUMENT
            if combine_dimensions(self.initial_dimensions, argument.dimensions) is None:
                return ErrorStatus.INVALID_ARGUMENT
            as_output = True
        return None

    def validate_copy_from(self, dimensions: Sequence[int], size: int) -> ErrorStatus | None:
        """``validateCopyFrom``: the source's size and the dimensions given."""
        if size != self.size:
            return ErrorStatus.INVALID_ARGUMENT
        if self.operand_type.is_scalar:
            return ErrorStatus.INVALID_ARGUMENT if dimensions else None
        given = dimensions or self.initial_dimensions
        if not given or 0 in given:  # the dimensions must end up fully specified
            return ErrorStatus.INVALID_ARGUMENT
        if combine_dimensions(self.initial_dimensions, dimensions) is None:
            return ErrorStatus.INVALID_ARGUMENT
        return None

    def validate_copy_to(self, size: int) -> ErrorStatus | None:
        """``validateCopyTo``: the destination's size, then the state."""
        if size != self.size:
            return ErrorStatus.INVALID_ARGUMENT
        if not self.initialized:
            return ErrorStatus.GENERAL_FAILURE
        return None

    def update_dimensions(self, dimensions: Sequence[int]) -> bool:
        """``updateDimensions``: record what was written (False if it conflicts)."""
        combined = combine_dimensions(self.initial_dimensions, dimensions)
        if combined is None:
            return False
        self.dimensions = combined
        return True


class BufferTracker:
    """``BufferTracker``: the driver's token -> buffer table (token 0 is never handed out)."""

    def __init__(self) -> None:
        self._buffers: list[ManagedBuffer | None] = [None]
        self._free: list[int] = []

    def add(self, buffer: ManagedBuffer) -> int:
        """A token for ``buffer``: the most recently freed one, else the next."""
        if self._free:
            token = self._free.pop()
            self._buffers[token] = buffer
        else:
            token = len(self._buffers)
            self._buffers.append(buffer)
        return token

    def get(self, token: int | None) -> ManagedBuffer | None:
        """The buffer of ``token``, None for an unknown one."""
        if token is None or not 0 <= token < len(self._buffers):
            return None
        return self._buffers[token]

    def free(self, token: int) -> None:
        """The buffer's last reference is gone: its token can be handed out again."""
        if self.get(token) is not None:
            self._buffers[token] = None
            self._free.append(token)

    @property
    def live(self) -> int:
        """How many buffers are allocated."""
        return sum(buffer is not None for buffer in self._buffers)

    def pools(
        self, request: Request, prepared: object
    ) -> tuple[ErrorStatus | None, tuple[ManagedBuffer | None, ...]]:
        """``createRunTimePoolInfos``: each pool's buffer (None: shared memory), or the first
        error (an unknown token is INVALID_ARGUMENT)."""
        buffers: list[ManagedBuffer | None] = []
        for index, token in enumerate(request.pool_tokens):
            if token is None:
                buffers.append(None)
                continue
            buffer = self.get(token)
            if buffer is None:
                return ErrorStatus.INVALID_ARGUMENT, ()
            error = buffer.validate_request(index, request, prepared)
            if error is not None:
                return error, ()
            buffers.append(buffer)
        return None, tuple(buffers)


def update_device_memories(
    request: Request, buffers: tuple[ManagedBuffer | None, ...], shapes: Sequence[OutputShape]
) -> ErrorStatus | None:
    """``updateDeviceMemories`` after a successful execution: each output device memory takes
    its produced dimensions (GENERAL_FAILURE if they conflict) and becomes initialized."""
    written = [
        (buffers[argument.location.pool_index], i)
        for i, argument in enumerate(request.outputs)
        if not argument.has_no_value and buffers[argument.location.pool_index] is not None
    ]
    for buffer, i in written:
        assert buffer is not None
        if i < len(shapes) and not buffer.update_dimensions(shapes[i].dimensions):
            return ErrorStatus.GENERAL_FAILURE
    for buffer, _ in written:
        assert buffer is not None
        buffer.initialized = True
    return None


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
