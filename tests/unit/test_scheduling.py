"""The scheduling policies: the order each gives, and the answers the --set check and the Why reading take from them."""

from __future__ import annotations

import attrs
import pytest

from nnemu.hal import Priority
from nnemu.scenario import DeadlinePolicy, PreemptionKind, SchedulerKind
from nnemu.scheduling import (
    DEADLINE_RULES,
    POLICIES,
    PREEMPTIONS,
    Fifo,
    GlobalPriority,
    PerAppPriority,
    deadline_rule_for,
    policy_for,
    policy_named,
    preemption_for,
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
def test_priority_matters_agrees_with_the_order(policy) -> None:
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
        matters = policy.priority_matters(MEDIUM, others)
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


def test_preemption_policies_say_whether_and_where_work_resumes() -> None:
    """none never yields; checkpoint resumes at the segment it yielded in; restart launches again."""
    assert set(PREEMPTIONS) == set(PreemptionKind)
    none, checkpoint, restart = (preemption_for(kind) for kind in PreemptionKind)
    assert not none.preempts
    assert checkpoint.preempts
    assert restart.preempts
    assert checkpoint.resume_op(3) == 3
    assert restart.resume_op(3) == -1
    assert preemption_for("checkpoint") is checkpoint


def test_deadline_rules_say_whether_the_driver_enforces() -> None:
    """abort enforces a deadline, ignore does not."""
    assert set(DEADLINE_RULES) == set(DeadlinePolicy)
    assert deadline_rule_for(DeadlinePolicy.ABORT).enforces
    assert not deadline_rule_for(DeadlinePolicy.IGNORE).enforces


def test_preemption_ignored_names_the_reason_the_set_check_prints() -> None:
    """The --set check's reason why preemption cannot matter comes from the scheduling policy."""
    apps = [(1, LOW), (2, HIGH)]
    assert Fifo().preemption_ignored("npu", apps) == "npu schedules fifo, which never preempts"
    reason = PerAppPriority().preemption_ignored("npu", apps)
    assert reason is not None
    assert reason.startswith("under per_app_priority npu preempts only an app's own")
    assert PerAppPriority().preemption_ignored("npu", [(1, LOW), (1, HIGH)]) is None
    assert GlobalPriority().preemption_ignored("npu", apps) is None
    assert Fifo().priority_ignored(["npu", "gpu"], 1) == "npu, gpu schedule fifo"
    assert GlobalPriority().priority_ignored(["npu"], 1) is None
