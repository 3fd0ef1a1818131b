"""Sync fences: the ``hidl_handle`` / ``ParcelFileDescriptor`` of a fenced execution.

A sync fence (a Linux ``sync_file``) is how ``executeFenced`` hands work to a driver that
waits for other work, and how it says when its own work ends.  AOSP reads one with
``syncWait(fd, timeout)`` (``common/Utils.cpp``), which answers a ``FenceState``.  This module
declares what the HAL layers see of one; ``nnemu.sim.SyncFence`` is the emulated object.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Protocol, runtime_checkable


class FenceState(enum.Enum):
    """What ``syncWait`` answers (AOSP ``FenceState``, less UNKNOWN: an emulated fence is
    never an invalid file descriptor)."""

    ACTIVE = "active"
    """Not signalled yet (``syncWait`` timed out)."""
    SIGNALED = "signaled"
    """Signalled: the work it stands for completed."""
    ERROR = "error"
    """Signalled in error: the work it stands for failed (``POLLERR``)."""


@runtime_checkable
class ISyncFence(Protocol):
    """A sync fence as a driver or the runtime holds it (a file descriptor to a sync_file)."""

    def poll(self) -> FenceState:
        """``syncWait(fd, 0)``: the state now, without waiting."""
        ...

    def on_signal(self, callback: Callable[[FenceState], None]) -> None:
        """Call ``callback(state)`` when it signals (now, if it has): the kernel's fence
        callback, which the runtime uses for what AOSP learns by polling (``isFinished``)."""
        ...

    async def wait(self, timeout_ns: int | None = None) -> FenceState:
        """``syncWait(fd, timeout)``: wait until it signals or ``timeout_ns`` passes (None:
        forever, as AOSP's ``-1``); ACTIVE when the timeout passed first."""
        ...
