"""Where one execution attempt's time goes, measured where it is spent.

The app opens an ``ExecutionSplit`` around each attempt (``open_split``); the layers
below add to it as they spend the time: the transport its latencies and the wait for a
binder thread, the driver the wait for its worker thread and the device's queue, launch
and compute, the runtime its CPU executor.  The split travels in a context variable:
the runtime's threads and the binder's server side run in the app thread's context; a
driver worker thread, which does not, is handed the split explicitly (``open_split``
again around its task).  It lives in the transport because that is the lowest layer
that adds to it.  docs/report-schema.md defines each part.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar


class ExecutionSplit:
    """One execution attempt's time, by where it went (ns), and what it ran on."""

    __slots__ = (
        "compute_ns",
        "deadline_ns",
        "device_arrival_ns",
        "device_end_ns",
        "device_start_ns",
        "devices",
        "energy",
        "ipc_ns",
        "launch_ns",
        "preemptions",
        "queue_ns",
    )

    def __init__(self) -> None:
        self.queue_ns = 0
        """Waiting: for a binder thread, a driver worker thread, a compute unit (also
        after a preemption)."""
        self.ipc_ns = 0
        """Transport latencies on the execution's path: binder transactions, the
        callback's delivery, burst packets through their fast message queues."""
        self.launch_ns = 0
        """The driver's launch overhead on a compute unit (again after a restart)."""
        self.compute_ns = 0
        """Operations running on a compute unit, or on the runtime's CPU executor."""
        self.devices: list[str] = []
        """The devices the attempt ran on, in order (CPU fallback as nnapi-reference)."""
        self.device_arrival_ns: int | None = None
        """When the attempt first reached a device (its queue, or the CPU executor)."""
        self.device_start_ns: int | None = None
        """When it first started running on a device."""
        self.device_end_ns: int | None = None
        """When it last left a device."""
        self.preemptions = 0
        """How many times it yielded a compute unit."""
        self.deadline_ns: int | None = None
        """The execution's absolute deadline, if it had one."""
        self.energy = 0.0
        """Time on devices (ns) times each device's powerUsage ratio for the model."""

    def on_device(self, name: str, arrival_ns: int, start_ns: int | None, end_ns: int) -> None:
        """Note a stretch on device ``name``: reached at ``arrival_ns``, first ran at
        ``start_ns`` (None: never ran), left at ``end_ns``."""
        devices = self.devices
        if not devices or devices[-1] != name:
            devices.append(name)
        if self.device_arrival_ns is None:
            self.device_arrival_ns = arrival_ns
        if self.device_start_ns is None:
            self.device_start_ns = start_ns
        self.device_end_ns = end_ns


CURRENT_SPLIT: ContextVar[ExecutionSplit | None] = ContextVar("nnemu_split", default=None)
"""The split of the execution attempt the code works for (the app sets it per attempt)."""

current_split = CURRENT_SPLIT.get
"""The split of the execution attempt the caller works for (None outside one)."""


@contextmanager
def open_split(split: ExecutionSplit | None) -> Iterator[ExecutionSplit | None]:
    """Make ``split`` the current split for the block (None: no split)."""
    token = CURRENT_SPLIT.set(split)
    try:
        yield split
    finally:
        CURRENT_SPLIT.reset(token)
