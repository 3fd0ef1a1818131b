"""Emulated processes and threads in deterministic virtual time (the kernel under every layer).

A wheel carries the kernel (``Kernel``, ``SimEvent``, ``SimQueue``, ``ThreadPool``) compiled
by mypyc with the tracer (``nnemu._native``).  Thread identities and the waits' awaitables
(``_threads``, ``_waits``) are never compiled.
"""

from nnemu.sim._fence import SyncFence, signalled_fence
from nnemu.sim._files import FileHandle, FileSystem
from nnemu.sim._kernel import Kernel, SimEvent, SimQueue, ThreadPool, WakeHandle, us
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

__all__ = [
    "FileHandle",
    "FileSystem",
    "Kernel",
    "KernelStopped",
    "ProcessTable",
    "SimEvent",
    "SimProcess",
    "SimQueue",
    "SimThread",
    "SyncFence",
    "ThreadPool",
    "WakeHandle",
    "as_thread",
    "current_thread",
    "enter_thread",
    "leave_thread",
    "signalled_fence",
    "us",
    "virtual_time_ms",
]
