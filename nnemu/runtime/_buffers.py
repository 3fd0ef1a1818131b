"""The runtime's side of device memory: a driver's ``IBuffer`` behind one canonical interface.

As the canonical ``nn::IBuffer`` (``copyTo``/``copyFrom`` answering a status), over either HAL
family's ``IBuffer``: HIDL 1.3's returns its ``ErrorStatus``, AIDL's fails with a
service-specific error.  Each call crosses the binder (``HIDL::IBuffer::copyTo::client`` ...,
``AIDL::ndk::IBuffer::copyTo::client``).  ``allocated`` checks what ``allocate`` answered as
``VersionedIDevice::allocate`` does: NONE without a buffer or with token 0 is GENERAL_FAILURE.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from functools import partial

from nnemu.hal import (
    INVALID_BUFFER_TOKEN,
    ErrorStatus,
    HalVersion,
    IAidlBuffer,
    IBuffer,
    ServiceSpecificError,
    SharedMemory,
)
from nnemu.ipc import DEAD, Binder, DeadObject, Endpoint


class CanonicalBuffer:
    """A driver's device memory as the runtime copies to and from it."""

    def __init__(
        self,
        buffer: IBuffer | IAidlBuffer,
        token: int,
        *,
        version: HalVersion,
        endpoint: Endpoint,
        binder: Binder,
    ) -> None:
        self.buffer = buffer
        self.token = token
        """What a request names the memory by."""
        self.version = version
        self.endpoint = endpoint
        """The driver process the buffer lives in."""
        self._binder = binder
        self._iface = version.interface("IBuffer")

    def release(self) -> None:
        """The last reference is dropped: the driver frees the memory and its token."""
        release = getattr(self.buffer, "release", None)
        if release is not None:
            release()

    async def _call(
        self, method: str, serve: Callable[[], Awaitable[ErrorStatus | ServiceSpecificError | None]]
    ) -> ErrorStatus | DeadObject:
        answer = await self._binder.call(self.endpoint, self._iface, method, serve)
        if isinstance(answer, DeadObject):
            return DEAD
        if answer is None:
            return ErrorStatus.NONE  # an AIDL call's OK status
        if isinstance(answer, ServiceSpecificError):
            return answer.status
        assert isinstance(answer, ErrorStatus)
        return answer

    async def copy_to(self, size: int) -> ErrorStatus | DeadObject:
        """IBuffer::copyTo into shared memory of ``size`` bytes."""
        return await self._call("copyTo", partial(self.buffer.copyTo, SharedMemory(size)))

    async def copy_from(self, size: int, dimensions: Sequence[int]) -> ErrorStatus | DeadObject:
        """IBuffer::copyFrom shared memory of ``size`` bytes, with its dimensions."""
        return await self._call(
            "copyFrom", partial(self.buffer.copyFrom, SharedMemory(size), tuple(dimensions))
        )


def allocated(
    status: ErrorStatus, buffer: IBuffer | IAidlBuffer | None, token: int
) -> tuple[ErrorStatus, IBuffer | IAidlBuffer | None, int]:
    """What the runtime accepts of an ``allocate`` answer (``VersionedIDevice::allocate``):
    a success without a buffer or with the invalid token is GENERAL_FAILURE."""
    if status is ErrorStatus.NONE and (buffer is None or token == INVALID_BUFFER_TOKEN):
        return ErrorStatus.GENERAL_FAILURE, None, INVALID_BUFFER_TOKEN
    if status is not ErrorStatus.NONE:
        return status, None, INVALID_BUFFER_TOKEN
    return status, buffer, token
