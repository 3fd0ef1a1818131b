"""The device behind a driver: compute units, a scheduler, and the cost of work.

``Device.execute`` is the one place an execution occupies hardware.  It waits
for a compute unit in the order the scenario's scheduler gives, runs the
prepared model's operations, and stops early at an operation boundary (a
checkpoint) when the execution's deadline has passed and the policy aborts.
"""

from __future__ import annotations

import bisect
import math
import random

import attrs

from nnemu.hal import ErrorStatus, Priority
from nnemu.scenario import DeadlinePolicy, DeviceSpec, PreemptionKind, SchedulerKind
from nnemu.sim import Kernel, WakeHandle


def us(ns: float) -> int:
    """Round a duration to whole microseconds (ftrace resolution keeps traces exact)."""
    return max(0, round(ns / 1000.0)) * 1000


@attrs.frozen
class ComputePlan:
    """The cost of one prepared model on one device: operation boundaries in ns."""

    op_ns: tuple[int, ...]
    """Duration of each operation on this device (whole µs)."""
    loop_ops: tuple[int, ...] = ()
    """Indexes of WHILE operations (subject to the loop timeout)."""

    @property
    def total_ns(self) -> int:
        """Duration of all operations."""
        return sum(self.op_ns)


@attrs.define
class Job:
    """One execution waiting for or running on a device."""

    uid: int
    """Calling app's uid."""
    priority: Priority
    """Priority of the prepared model."""
    plan: ComputePlan
    """Operation costs."""
    scale: float = 1.0
    """Jitter multiplier for this execution."""
    deadline_ns: int | None = None
    """Absolute virtual deadline, if any."""
    seq: int = 0
    """Arrival order at the device."""
    handle: WakeHandle | None = None
    """How to wake the job when it gets a unit."""


@attrs.define
class DeviceStats:
    """Counters a device keeps for the report."""

    executions: int = 0
    busy_ns: int = 0
    preemptions: int = 0
    deadline_aborts: int = 0


class Device:
    """Compute units shared by all prepared models of one driver."""

    def __init__(self, kernel: Kernel, spec: DeviceSpec, rng: random.Random) -> None:
        self.kernel = kernel
        self.spec = spec
        self.units = spec.compute_units
        self.scheduler = spec.scheduler
        self._rng = rng
        self._busy = 0
        self._waiting: list[Job] = []
        self._seq = 0
        self._busy_since = 0
        self.stats = DeviceStats()

    # ------------------------------------------------------------ accounting
    def _account(self) -> None:
        now = self.kernel.now_ns
        self.stats.busy_ns += self._busy * (now - self._busy_since)
        self._busy_since = now

    def busy_fraction(self, elapsed_ns: int) -> float:
        """Mean fraction of compute units busy over ``elapsed_ns``."""
        self._account()
        if elapsed_ns <= 0:
            return 0.0
        return self.stats.busy_ns / (elapsed_ns * self.units)

    @property
    def queue_length(self) -> int:
        """Executions waiting for a unit."""
        return len(self._waiting)

    def jitter(self) -> float:
        """A log-normal multiplier with mean 1 for one execution's compute time."""
        sigma = self.spec.cost.jitter
        if sigma <= 0:
            return 1.0
        return math.exp(self._rng.gauss(-sigma * sigma / 2.0, sigma))

    # ------------------------------------------------------------ scheduling
    def _pick(self) -> Job:
        waiting = self._waiting
        if self.scheduler is SchedulerKind.FIFO:
            best = 0
        elif self.scheduler is SchedulerKind.GLOBAL_PRIORITY:
            best = min(range(len(waiting)), key=lambda i: (-waiting[i].priority, waiting[i].seq))
        else:
            # Priority is relative among one uid's models: the oldest waiting job decides
            # whose turn it is; that app's highest-priority job goes first.
            uid = waiting[0].uid
            best = min(
                (i for i, job in enumerate(waiting) if job.uid == uid),
                key=lambda i: (-waiting[i].priority, waiting[i].seq),
            )
        return waiting.pop(best)

    async def _acquire(self, job: Job) -> None:
        kernel = self.kernel
        await kernel.sync()
        self._seq += 1
        job.seq = self._seq
        if self._busy < self.units and not self._waiting:
            self._account()
            self._busy += 1
            return
        job.handle = kernel.wait_handle()
        self._waiting.append(job)
        await kernel.park()

    def _release(self) -> None:
        self.kernel.assert_synced()
        self._account()
        if self._waiting:
            job = self._pick()
            assert job.handle is not None
            self.kernel.wake(job.handle)
        else:
            self._busy -= 1

    def estimate_ns(self, plan: ComputePlan, launch_ns: int) -> tuple[int, int]:
        """(idle, busy) estimates of how long an execution would take to finish from now."""
        idle = launch_ns + plan.total_ns
        backlog = len(self._waiting) + max(0, self._busy - self.units + 1)
        return idle, idle + backlog * plan.total_ns

    async def execute(self, job: Job, *, launch_ns: int) -> ErrorStatus:
        """Run ``job`` on a compute unit; NONE, or MISSED_DEADLINE_TRANSIENT when aborted.

        ``launch_ns`` of driver overhead precede the first operation, on the unit.
        """
        kernel = self.kernel
        await self._acquire(job)
        try:
            start = kernel.now_ns
            self.stats.executions += 1
            scale = job.scale
            bounds = []
            t = start + launch_ns
            for op_ns in job.plan.op_ns:
                t += us(op_ns * scale)
                bounds.append(t)
            finish = bounds[-1] if bounds else t
            deadline = job.deadline_ns
            if (
                deadline is not None
                and self.spec.deadline_policy is DeadlinePolicy.ABORT
                and finish > deadline
            ):
                # The driver checks the deadline before each operation (CpuExecutor
                # does the same): it stops at the first boundary at or past it.
                starts = [start + launch_ns, *bounds[:-1]]
                i = bisect.bisect_left(starts, deadline)
                if i < len(starts):
                    await kernel.sleep_until(starts[i])
                    self.stats.deadline_aborts += 1
                    return ErrorStatus.MISSED_DEADLINE_TRANSIENT
            await kernel.sleep_until(finish)
            return ErrorStatus.NONE
        finally:
            await kernel.sync()
            self._release()


def preemption_supported(spec: DeviceSpec) -> bool:
    """Whether the device preempts lower-priority work (not modelled before the QoS work)."""
    return spec.preemption is not PreemptionKind.NONE
