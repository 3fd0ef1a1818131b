"""A device's values: an execution at the device (``Job``) and the device's counters.

They live apart from ``Device`` (``_device.py``) because a wheel compiles ``_device`` with
mypyc and these stay Python: they are ``attrs`` classes with factories, which mypyc does not
compile, and users read them (a custom scheduler's ``pick_index`` picks among jobs).
"""

from __future__ import annotations

import collections

import attrs

from nnemu.cost import ComputePlan
from nnemu.hal import ErrorStatus, Priority
from nnemu.sim import WakeHandle


@attrs.define(eq=False)
class Job:
    """One execution waiting for or running on a device."""

    uid: int
    """Calling app's uid."""
    priority: Priority
    """Priority of the prepared model."""
    plan: ComputePlan
    """Operation costs (nominal)."""
    scale: float = 1.0
    """Jitter and slow-down multiplier for this execution's actual durations."""
    deadline_ns: int | None = None
    """Absolute virtual deadline, if any."""
    loop_timeout_ns: int | None = None
    """Per-WHILE-loop time limit."""
    seq: int = 0
    """Arrival order at the device (kept across preemptions)."""
    handle: WakeHandle | None = None
    """How to wake the job (a unit granted, a preemption, the device dying)."""
    next_op: int = -1
    """Next segment to run: -1 = the launch overhead, then operation indexes."""
    durations: list[int] = attrs.field(factory=list)
    """Actual segment durations: launch first, then each operation."""
    preempt_requested: bool = False
    """Whether a waiting higher-priority job asked this one to yield."""
    started_ns: int | None = None
    """When the job first got a unit."""
    finished_ns: int | None = None
    """When the job left the device."""
    arrived_ns: int | None = None
    """When the job reached the device."""
    status: ErrorStatus | None = None
    """How it ended."""
    preempted: int = 0
    """How many times it yielded its unit."""
    unit: int = -1
    """The compute unit it holds (-1 = none)."""
    segments: list[tuple[int, int, int]] = attrs.field(factory=list)
    """Stretches it ran: (start_ns, end_ns, unit)."""
    launch_ns: int = 0
    """The driver's launch overhead for this execution (the first segment)."""
    resumed_ns: int = 0
    """When the job last started running from ``next_op`` (got a unit or passed a mark)."""
    planned_end_ns: int = -1
    """When it will leave its unit unless preempted (-1 = not planned yet)."""
    _segment_start: int = 0


@attrs.define
class DeviceStats:
    """Counters a device keeps for the report."""

    executions: int = 0
    busy_ns: int = 0
    energy: float = 0.0
    """Unit time of the stretches that ended, each times its model's power ratio (ns)."""
    preemptions: int = 0
    choices: int = 0
    """Times a freed unit went to one of two or more waiting executions: the only times the
    scheduler's order decides anything (besides preemption and the deadline estimates)."""
    longest_queue_met: int = -1
    """The most executions an arriving one found waiting while every unit was busy (-1: none
    found every unit busy): ``queue_limit`` turns an arrival away only then, at that length."""
    deadline_aborts: int = 0
    rejected_persistent: int = 0
    rejected_transient: int = 0
    loop_timeouts: int = 0
    refused_by_uid: collections.Counter[int] = attrs.field(factory=collections.Counter)
    """Executions refused before starting for their deadline (estimate or already past), by uid."""
    aborted_by_uid: collections.Counter[int] = attrs.field(factory=collections.Counter)
    """Executions stopped at a checkpoint by the deadline rule, by uid."""
