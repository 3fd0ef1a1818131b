"""``SyncFence``: an emulated Linux sync_file, signalled once, waited on with a timeout.

The object a fenced execution's ``hidl_handle`` points at (``nnemu.hal.ISyncFence``): a
driver that returns before its work ends hands one back and signals it when the work
ends -- in error when the work failed -- and a driver, or the runtime, given fences to wait
for waits on each with ``syncWait(fd, -1)`` before working (docs/hal-semantics.md §1.7).
Its waits are the kernel's own (``Kernel.park`` with a timer), so waiting costs no CPU.
"""

from __future__ import annotations

from collections.abc import Callable

from nnemu.errors import EmulatorBug
from nnemu.hal import FenceState
from nnemu.sim._kernel import Kernel, WakeHandle

_ACTIVE = FenceState.ACTIVE


class SyncFence:
    """A sync fence: ACTIVE until ``signal`` makes it SIGNALED or ERROR, once."""

    __slots__ = ("_callbacks", "_kernel", "_waiters", "name", "signalled_ns", "state")

    def __init__(self, kernel: Kernel, name: str = "") -> None:
        self._kernel = kernel
        self._waiters: list[WakeHandle] = []
        self._callbacks: list[Callable[[FenceState], None]] = []
        self.name = name
        """Who signals it (for logs and tests)."""
        self.state = _ACTIVE
        """Its state now (``poll``)."""
        self.signalled_ns: int | None = None
        """When it signalled (virtual ns), None while ACTIVE."""

    def __repr__(self) -> str:
        return f"SyncFence({self.name!r}, {self.state.name})"

    def poll(self) -> FenceState:
        """``syncWait(fd, 0)``: the state now."""
        return self.state

    def signal(self, ok: bool = True) -> None:
        """Signal the fence (in error unless ``ok``): wake its waiters, run its callbacks.

        Raises:
            EmulatorBug: the fence has signalled already (a sync_file signals once).
        """
        if self.state is not _ACTIVE:
            raise EmulatorBug(f"{self!r} signalled twice")
        kernel = self._kernel
        kernel.assert_synced()
        self.state = FenceState.SIGNALED if ok else FenceState.ERROR
        self.signalled_ns = kernel.clock_ns
        for handle in self._waiters:
            kernel.wake(handle, self.state)
        self._waiters.clear()
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(self.state)

    def on_signal(self, callback: Callable[[FenceState], None]) -> None:
        """Call ``callback(state)`` when the fence signals (now, if it has)."""
        if self.state is _ACTIVE:
            self._callbacks.append(callback)
        else:
            callback(self.state)

    async def wait(self, timeout_ns: int | None = None) -> FenceState:
        """``syncWait(fd, timeout)``: its state once it signalled or ``timeout_ns`` passed
        (None: no timeout, AOSP's ``-1``; 0: poll); ACTIVE when the timeout passed first."""
        if self.state is not _ACTIVE or timeout_ns == 0:
            return self.state
        kernel = self._kernel
        await kernel.sync()
        if self.state is not _ACTIVE:
            return self.state
        self._waiters.append(kernel.wait_handle())
        until = None if timeout_ns is None else kernel.clock_ns + timeout_ns
        await kernel.park(until)
        return self.state


def signalled_fence(kernel: Kernel, ok: bool = True, name: str = "") -> SyncFence:
    """A fence that has already signalled (in error unless ``ok``)."""
    fence = SyncFence(kernel, name)
    fence.state = FenceState.SIGNALED if ok else FenceState.ERROR
    fence.signalled_ns = kernel.clock_ns
    return fence
