"""Emulated processes and threads in deterministic virtual time (the kernel under every layer)."""

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
)

__all__ = [
    "Kernel",
    "KernelStopped",
    "SimEvent",
    "SimQueue",
    "SimThread",
    "ThreadPool",
    "WakeHandle",
    "as_thread",
    "current_thread",
]
