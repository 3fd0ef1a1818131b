"""Emulated processes and threads in deterministic virtual time (the kernel under every layer)."""

from nnemu.sim._files import FileHandle, FileSystem
from nnemu.sim._kernel import (
    Kernel,
    KernelStopped,
    SimEvent,
    SimQueue,
    SimThread,
    ThreadPool,
    WakeHandle,
    as_thread,
    current_thread,
    enter_thread,
    leave_thread,
    us,
    virtual_time_ms,
)
from nnemu.sim._process import ProcessTable, SimProcess

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
    "ThreadPool",
    "WakeHandle",
    "as_thread",
    "current_thread",
    "enter_thread",
    "leave_thread",
    "us",
    "virtual_time_ms",
]
