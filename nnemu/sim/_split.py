"""Where one execution attempt's time goes, measured where it is spent.

The app makes an ``ExecutionSplit`` the running task's split around each attempt
(``Kernel.split``); the layers below add to it as they spend the time: the transport
its latencies and the wait for a binder thread, the driver the wait for its worker
thread and the device's queue, the time set aside by preemption, launch and compute, the
runtime its CPU executor.  The
split travels with the task (the kernel saves and loads it at switches): the runtime's
code and the binder's server side run in the app thread's task; a driver worker thread,
which does not, is handed the split explicitly (it sets it around its task).  It lives
beside the kernel, which holds it typed, so that the compiled path reads and sets its
fields natively (a wheel compiles it in a group of its own, ``nnemu._native``); the
transport, the lowest layer that adds to it, exports it (``nnemu.ipc.ExecutionSplit``).
docs/report-schema.md defines each part."""

from __future__ import annotations


class ExecutionSplit:
    """One execution attempt's time, by where it went (ns), and what it ran on."""

    __slots__ = (
        "binder_ns",
        "compute_ns",
        "deadline_ns",
        "detailed",
        "device_arrival_ns",
        "device_end_ns",
        "device_queue_ns",
        "device_start_ns",
        "devices",
        "energy",
        "ipc_ns",
        "launch_ns",
        "preempted_ns",
        "preemptions",
    )

    def __init__(self, detailed: bool = False) -> None:
        self.binder_ns = 0
        """Waiting for a free binder thread of the called process (the driver's, or the
        client's)."""
        self.device_queue_ns = 0
        """Waiting in the driver to start: for a driver worker thread (HAL 1.0/1.1
        ``execute``), then for a compute unit until it first gets one."""
        self.preempted_ns = 0
        """Preemption's cost: off the unit after each preemption until it gets one back,
        and under ``restart`` the stretches whose work was thrown away."""
        self.ipc_ns = 0
        """Transport latencies on the execution's path: binder transactions, the
        callback's delivery, burst packets through their fast message queues."""
        self.launch_ns = 0
        """The driver's launch overhead on a compute unit (again after a restart)."""
        self.compute_ns = 0
        """Operations running on a compute unit, or on the runtime's CPU executor."""
        self.energy = 0.0
        """Time on devices (ns) times each device's powerUsage ratio for the model."""
        self.deadline_ns: int | None = None
        """The execution's absolute deadline, if it had one."""
        self.detailed = detailed
        """Whether the run keeps per-execution records: only then are the fields below
        kept (``on_device``)."""
        self.devices: tuple[str, ...] = ()
        """The devices the attempt ran on, in order (CPU fallback as nnapi-reference)."""
        self.device_arrival_ns: int | None = None
        """When the attempt first reached a device (its queue, or the CPU executor)."""
        self.device_start_ns: int | None = None
        """When it first started running on a device."""
        self.device_end_ns: int | None = None
        """When it last left a device."""
        self.preemptions = 0
        """How many times it yielded a compute unit."""

    def on_device(
        self, name: str, arrival_ns: int, start_ns: int | None, end_ns: int, preemptions: int
    ) -> None:
        """Note a stretch on device ``name`` (for a ``detailed`` split): reached at
        ``arrival_ns``, first ran at ``start_ns`` (None: never ran), left at ``end_ns``,
        yielded its unit ``preemptions`` times."""
        devices = self.devices
        if not devices or devices[-1] != name:
            self.devices = (*devices, name)
        if self.device_arrival_ns is None:
            self.device_arrival_ns = arrival_ns
        if self.device_start_ns is None:
            self.device_start_ns = start_ns
        self.device_end_ns = end_ns
        self.preemptions += preemptions

    def merge(self, other: ExecutionSplit, *, device_only: bool = False) -> None:
        """Add ``other``'s parts (a stage of the same frame, measured apart): all of them, or
        with ``device_only`` only the device's (queue, preemption, launch, compute, energy,
        stretches) when its launch ran while an earlier stage computed, off the path."""
        if not device_only:
            self.binder_ns += other.binder_ns
            self.ipc_ns += other.ipc_ns
        self.device_queue_ns += other.device_queue_ns
        self.preempted_ns += other.preempted_ns
        self.launch_ns += other.launch_ns
        self.compute_ns += other.compute_ns
        self.energy += other.energy
        for name in other.devices:
            if not self.devices or self.devices[-1] != name:
                self.devices = (*self.devices, name)
        if self.device_arrival_ns is None:
            self.device_arrival_ns = other.device_arrival_ns
        if self.device_start_ns is None:
            self.device_start_ns = other.device_start_ns
        if other.device_end_ns is not None:
            self.device_end_ns = other.device_end_ns
        self.preemptions += other.preemptions
