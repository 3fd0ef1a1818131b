"""The scheduling policies: the order each gives, and the answers the --set check and the Why reading take from them."""

from __future__ import annotations

import attrs
import pytest

from nnemu.hal import Priority
from nnemu.scenario import SchedulerKind
from nnemu.scheduling import (
    POLICIES,
    Fifo,
    GlobalPriority,
    PerAppPriority,
    policy_for,
    policy_named,
)

LOW, MEDIUM, HIGH = Priority.LOW, Priority.MEDIUM, Priority.HIGH


@attrs.define
class _Job:
    uid: int
    priority: Priority
    seq: int


def _order(policy, jobs: list[_Job]) -> list[int]:
    """The seqs in the order the policy grants units to ``jobs`` (as the device does)."""
    waiting = [attrs.evolve(job) for job in jobs]
    granted = []
    while waiting:
        job = waiting.pop(policy.pick_index(waiting))
        policy.swap_slot(job, waiting)
        granted.append((job.uid, job.priority))
    return granted


QUEUE = [_Job(1, LOW, 0), _Job(2, HIGH, 1), _Job(1, HIGH, 2), _Job(2, LOW, 3)]


def test_each_scheduler_kind_has_its_policy() -> None:
    """Every SchedulerKind maps to a policy of that kind, also by its report name."""
    assert set(POLICIES) == set(SchedulerKind)
    for kind in SchedulerKind:
        assert policy_for(kind).kind is kind
        assert policy_named(kind.value) is policy_for(kind)
    assert policy_named("none (no queue)") is None


def test_fifo_grants_in_arrival_order_whatever_the_priority() -> None:
    """fifo: arrival order."""
    assert _order(Fifo(), QUEUE) == [(1, LOW), (2, HIGH), (1, HIGH), (2, LOW)]


def test_global_priority_orders_across_apps() -> None:
    """global_priority: priority across apps, then arrival."""
    assert _order(GlobalPriority(), QUEUE) == [(2, HIGH), (1, HIGH), (1, LOW), (2, LOW)]


def test_per_app_priority_orders_only_within_an_app() -> None:
    """per_app_priority: the oldest waiting app's turn, its highest priority first; the
    other app keeps its turns."""
    assert _order(PerAppPriority(), QUEUE) == [(1, HIGH), (2, HIGH), (1, LOW), (2, LOW)]


@pytest.mark.parametrize("policy", list(POLICIES.values()), ids=lambda p: p.kind.value)
def test_priority_matters_exactly_when_a_priority_change_reorders(policy) -> None:
    """The --set check's question (can app 1's priority change anything?) agrees with the
    order: when the policy says no, every priority of app 1 gives the same order of app 2's
    grants; when it says yes, some priority changes the order."""
    for others in ([LOW], [HIGH], []):
        jobs = [_Job(2, MEDIUM, 0), _Job(1, MEDIUM, 1)]
        jobs += [_Job(1, p, 2 + i) for i, p in enumerate(others)]
        orders = set()
        for priority in Priority:
            changed = [attrs.evolve(j, priority=priority) if j.seq == 1 else j for j in jobs]
            orders.add(tuple(_order(policy, changed).index(g) for g in [(2, MEDIUM)]))
        matters = policy.priority_matters(1, MEDIUM, others)
        if not matters:
            assert len(orders) == 1
        elif isinstance(policy, GlobalPriority):
            assert len(orders) > 1


def test_preemption_and_its_questions() -> None:
    """fifo never preempts; per_app_priority only within a uid, and preemption matters there
    only with two priorities in one uid; global_priority across apps."""
    fifo, per_app, global_ = Fifo(), PerAppPriority(), GlobalPriority()
    high, low_other, low_same = _Job(1, HIGH, 1), _Job(2, LOW, 0), _Job(1, LOW, 0)
    assert not fifo.preempts
    assert not fifo.may_preempt(high, low_other)
    assert per_app.may_preempt(high, low_same)
    assert not per_app.may_preempt(high, low_other)
    assert global_.may_preempt(high, low_other)
    assert not per_app.preemption_matters([(1, LOW), (2, HIGH)])
    assert per_app.preemption_matters([(1, LOW), (1, HIGH)])
    assert global_.preemption_matters([(1, LOW), (2, HIGH)])


def test_why_reading_names_the_policy() -> None:
    """The Why reading's sentence comes from the policy; global_priority gives none."""
    assert "per_app_priority" in PerAppPriority().waits_behind("npu", "a", "b")
    assert "arrival order" in Fifo().waits_behind("npu", "a", "b")
    assert GlobalPriority().waits_behind("npu", "a", "b") is None
