"""An execution at a device (``Job``): what the device's scheduling reads and sets.

A wheel compiles it with the device (``nnemu._native``'s ``driver`` area): a native class,
whose fields the device reads and sets without a dictionary lookup.  Users read it (a custom
scheduler's ``pick_index`` picks among jobs; ``Device.history``).
"""

from __future__ import annotations

from nnemu.cost import ComputePlan
from nnemu.hal import ErrorStatus, Priority
from nnemu.sim import WakeHandle


class Job:
    """One execution waiting for or running on a device."""

    def __init__(
        self,
        uid: int,
        priority: Priority,
        plan: ComputePlan,
        scale: float = 1.0,
        deadline_ns: int | None = None,
        loop_timeout_ns: int | None = None,
    ) -> None:
        self.uid = uid
        """Calling app's uid."""
        self.priority = priority
        """Priority of the prepared model."""
        self.plan = plan
        """Operation costs (nominal)."""
        self.scale = scale
        """Jitter and slow-down multiplier for this execution's actual durations."""
        self.deadline_ns = deadline_ns
        """Absolute virtual deadline, if any."""
        self.loop_timeout_ns = loop_timeout_ns
        """Per-WHILE-loop time limit."""
        self.seq = 0
        """Arrival order at the device (kept across preemptions)."""
        self.handle: WakeHandle | None = None
        """How to wake the job (a unit granted, a preemption, the device dying)."""
        self.next_op = -1
        """Next segment to run: -1 = the launch overhead, then operation indexes."""
        self.durations: list[int] = []
        """Actual segment durations: launch first, then each operation."""
        self.preempt_requested = False
        """Whether a waiting higher-priority job asked this one to yield."""
        self.started_ns: int | None = None
        """When the job first got a unit."""
        self.finished_ns: int | None = None
        """When the job left the device."""
        self.arrived_ns: int | None = None
        """When the job reached the device."""
        self.status: ErrorStatus | None = None
        """How it ended."""
        self.preempted = 0
        """How many times it yielded its unit."""
        self.unit = -1
        """The compute unit it holds (-1 = none)."""
        self.segments: list[tuple[int, int, int]] = []
        """Stretches it ran: (start_ns, end_ns, unit)."""
        self.launch_ns = 0
        """The driver's launch overhead for this execution (the first segment)."""
        self.resumed_ns = 0
        """When the job last started running from ``next_op`` (got a unit or passed a mark)."""
        self.planned_end_ns = -1
        """When it will leave its unit unless preempted (-1 = not planned yet)."""
        self._segment_start = 0
        """When its current stretch on a unit began."""

    def copy(self) -> Job:
        """A copy sharing its lists (``durations``, ``segments``) with this job: what the
        device's estimates change (``seq``, ``next_op``, ...) without touching the job."""
        other = Job(
            self.uid, self.priority, self.plan, self.scale, self.deadline_ns, self.loop_timeout_ns
        )
        other.seq = self.seq
        other.handle = self.handle
        other.next_op = self.next_op
        other.durations = self.durations
        other.preempt_requested = self.preempt_requested
        other.started_ns = self.started_ns
        other.finished_ns = self.finished_ns
        other.arrived_ns = self.arrived_ns
        other.status = self.status
        other.preempted = self.preempted
        other.unit = self.unit
        other.segments = self.segments
        other.launch_ns = self.launch_ns
        other.resumed_ns = self.resumed_ns
        other.planned_end_ns = self.planned_end_ns
        other._segment_start = self._segment_start
        return other

    def __repr__(self) -> str:
        return (
            f"Job(uid={self.uid!r}, priority={self.priority!r}, seq={self.seq!r}, "
            f"next_op={self.next_op!r}, unit={self.unit!r}, status={self.status!r})"
        )
