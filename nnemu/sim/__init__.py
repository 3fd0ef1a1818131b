"""Emulated processes and threads in deterministic virtual time (the kernel under every layer).

The kernel (``Kernel``, ``SimEvent``, ``SimQueue``, ``ThreadPool``) is the one compiled by
mypyc with the tracer when built (``nnemu._native``: the ``tracer`` target), else the
pure-Python source; ``COMPILED`` says which.  Thread identities and the waits' awaitables
(``_threads``, ``_waits``) are never compiled, so both kernels share them.
"""

from typing import TYPE_CHECKING, Final

from nnemu import _native
from nnemu.sim._files import FileHandle, FileSystem
from nnemu.sim._process import ProcessTable, SimProcess
from nnemu.sim._threads import (
    KernelStopped,
    SimThread,
    as_thread,
    current_thread,
    enter_thread,
    leave_thread,
    virtual_time_ms,
)

if TYPE_CHECKING:
    from nnemu.sim._kernel import Kernel, SimEvent, SimQueue, ThreadPool, WakeHandle, us
else:
    _impl = _native.compiled("nnemu.sim._kernel")
    if _impl is None:
        from nnemu.sim import _kernel as _impl
    Kernel = _impl.Kernel
    SimEvent = _impl.SimEvent
    SimQueue = _impl.SimQueue
    ThreadPool = _impl.ThreadPool
    WakeHandle = _impl.WakeHandle
    us = _impl.us

COMPILED: Final[bool] = Kernel.__module__ != "nnemu.sim._kernel"
"""Whether the mypyc-compiled kernel runs (the compiled tracer needs it)."""

__all__ = [
    "COMPILED",
    "FileHandle",
    "FileSystem",
    "Kernel",
    "KernelStopped",
    "ProcessTable",
    "SimEvent",
    "SimProcess",
    "SimQueue",
    "SimThread",
    "ThreadPool",
    "WakeHandle",
    "as_thread",
    "current_thread",
    "enter_thread",
    "leave_thread",
    "us",
    "virtual_time_ms",
]
