"""A device's counters for the report (``DeviceStats``).

They live apart from ``Device`` (``_device.py``) and its ``Job`` (``_job.py``) because a wheel
compiles those with mypyc and these stay Python: an ``attrs`` class with factories, which
mypyc does not compile.
"""

from __future__ import annotations

import collections

import attrs


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
