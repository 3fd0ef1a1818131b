"""A device's policies as objects: scheduling, preemption, deadlines; each says what it decides.

The shape is SimPy's ``Resource`` / ``PriorityResource``: a policy picks which waiting
request gets a freed unit.  Besides scheduling (``pick_index``, ``swap_slot``,
``fixed_key``, ``may_preempt``), each policy answers the questions the rest of nnemu
asks about it, so that no one re-derives its meaning from the ``SchedulerKind``: whether
an app's priority can change any order (``priority_matters``: the ``--set`` check),
whether preemption can (``preemption_matters``), and why an app's executions wait behind
others' (``waits_behind``: the HTML page's Why reading).

``PreemptionPolicy`` (SimPy's ``PreemptiveResource``) says whether a running execution
yields its unit and where it resumes; ``DeadlineRule`` whether the driver enforces a
deadline (refuses what its estimate cannot make, aborts at a checkpoint).

Standard library and ``nnemu.scenario``'s enums only, so the readers (``nnemu.pictures``)
import it without the emulator.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import ClassVar, Final, Protocol

from nnemu.hal import Priority
from nnemu.scenario import DeadlinePolicy, PreemptionKind, SchedulerKind


class Waiting(Protocol):
    """A waiting execution as a policy sees it (``nnemu.driver.Job``)."""

    uid: int
    priority: Priority
    seq: int


def _priority_key(job: Waiting) -> tuple[int, int]:
    return (-int(job.priority), job.seq)


class SchedulingPolicy:
    """How a device orders its waiting executions (one instance per kind, stateless)."""

    kind: ClassVar[SchedulerKind]
    compares: ClassVar[str]
    """What the order compares, in words."""
    preempts: ClassVar[bool] = True
    """Whether the order ever lets a job take another's unit (``preemption`` can matter)."""

    def pick_index(self, waiting: Sequence[Waiting]) -> int:
        """Which waiting execution gets the next free unit (index into ``waiting``)."""
        raise NotImplementedError

    def swap_slot(self, job: Waiting, waiting: Sequence[Waiting]) -> None:
        """Called when ``job`` is granted a unit over ``waiting``: nothing, unless the policy
        keeps arrival slots (``PerAppPriority``)."""

    def fixed_key(self, job: Waiting) -> tuple[int, int] | None:
        """The fixed key the policy picks the smallest of, or None when its order depends on
        the rest of the queue."""
        return None

    def may_preempt(self, job: Waiting, victim: Waiting) -> bool:
        """Whether the order lets ``job`` (higher priority) take ``victim``'s unit at all."""
        return self.preempts

    def priority_matters(self, priority: Priority, others: Iterable[Priority]) -> bool:
        """Whether an app's ``priority`` can change any order, given the priorities of the
        other apps of its uid on the device (``others``)."""
        raise NotImplementedError

    def preemption_matters(self, apps: Sequence[tuple[int, Priority]]) -> bool:
        """Whether preemption can change anything for the apps (uid, priority) on a device,
        as far as the order goes (a single priority is the caller's question)."""
        raise NotImplementedError

    def priority_ignored(self, devices: Sequence[str], uid: int) -> str | None:
        """Why ``devices`` under this policy ignore the priority of an app of ``uid`` (asked
        when ``priority_matters`` says no); None when the policy always compares priorities."""
        return None

    def preemption_ignored(self, device: str, apps: Sequence[tuple[int, Priority]]) -> str | None:
        """Why preemption on ``device`` cannot change anything for the apps (uid, priority)
        there, as far as the order goes; None when it can."""
        if self.preemption_matters(apps):
            return None
        return self._preemption_ignored(device)

    def _preemption_ignored(self, device: str) -> str:
        raise NotImplementedError

    def waits_behind(self, device: str, app: str, others: str) -> str | None:
        """Why ``app``'s executions wait behind ``others``' (lower priority) on ``device``;
        None when the order itself does not make them."""
        return None


class Fifo(SchedulingPolicy):
    """Arrival order, whatever the priorities; never preempts."""

    kind = SchedulerKind.FIFO
    compares = "arrival order"
    preempts = False

    def pick_index(self, waiting: Sequence[Waiting]) -> int:
        return min(range(len(waiting)), key=lambda i: waiting[i].seq)

    def fixed_key(self, job: Waiting) -> tuple[int, int]:
        return (0, job.seq)

    def priority_matters(self, priority: Priority, others: Iterable[Priority]) -> bool:
        return False

    def preemption_matters(self, apps: Sequence[tuple[int, Priority]]) -> bool:
        return False

    def priority_ignored(self, devices: Sequence[str], uid: int) -> str:
        return f"{', '.join(devices)} schedule{'s' if len(devices) == 1 else ''} fifo"

    def _preemption_ignored(self, device: str) -> str:
        return f"{device} schedules fifo, which never preempts"

    def waits_behind(self, device: str, app: str, others: str) -> str:
        return (
            f"{device}'s scheduler is fifo, which runs executions in arrival order whatever their"
            f" priority, so {app}'s executions wait behind {others}'s"
        )


class GlobalPriority(SchedulingPolicy):
    """Priority across every app, then arrival order."""

    kind = SchedulerKind.GLOBAL_PRIORITY
    compares = "priority across apps, then arrival order"

    def pick_index(self, waiting: Sequence[Waiting]) -> int:
        return min(range(len(waiting)), key=lambda i: _priority_key(waiting[i]))

    def fixed_key(self, job: Waiting) -> tuple[int, int]:
        return _priority_key(job)

    def priority_matters(self, priority: Priority, others: Iterable[Priority]) -> bool:
        return True

    def preemption_matters(self, apps: Sequence[tuple[int, Priority]]) -> bool:
        return True


class PerAppPriority(SchedulingPolicy):
    """Priority among one app's (uid's) executions; between apps, the oldest waiting goes first."""

    kind = SchedulerKind.PER_APP_PRIORITY
    compares = "priority among one app's executions; arrival order between apps"

    def pick_index(self, waiting: Sequence[Waiting]) -> int:
        # The oldest waiting job decides whose turn it is; that app's highest-priority job
        # goes first.
        oldest = min(waiting, key=lambda job: job.seq)
        return min(
            (i for i, job in enumerate(waiting) if job.uid == oldest.uid),
            key=lambda i: _priority_key(waiting[i]),
        )

    def swap_slot(self, job: Waiting, waiting: Sequence[Waiting]) -> None:
        """A job that jumps an older job of its own app takes that job's place in the arrival
        order, and the older job takes its place: other apps see the same sequence of turns
        whatever the app's priorities are."""
        older = [other for other in waiting if other.uid == job.uid and other.seq < job.seq]
        if older:
            oldest = min(older, key=lambda other: other.seq)
            oldest.seq, job.seq = job.seq, oldest.seq

    def may_preempt(self, job: Waiting, victim: Waiting) -> bool:
        return job.uid == victim.uid

    def priority_matters(self, priority: Priority, others: Iterable[Priority]) -> bool:
        return any(other is not priority for other in others)

    def preemption_matters(self, apps: Sequence[tuple[int, Priority]]) -> bool:
        return any(
            i != j and a[0] == b[0] and a[1] is not b[1]
            for i, a in enumerate(apps)
            for j, b in enumerate(apps)
        )

    def _preemption_ignored(self, device: str) -> str:
        return (
            f"under per_app_priority {device} preempts only an app's own "
            "lower-priority work, and no uid has models of two priorities here"
        )

    def priority_ignored(self, devices: Sequence[str], uid: int) -> str:
        return (
            "priority only orders an app's own executions under per_app_priority "
            f"({', '.join(devices)}), and no other app of uid {uid} there has "
            "another priority"
        )

    def waits_behind(self, device: str, app: str, others: str) -> str:
        return (
            f"{device}'s scheduler is per_app_priority, where a priority only orders an app's own"
            " executions; between apps the oldest waiting execution goes first, so"
            f" {app}'s executions wait behind {others}'s"
        )


POLICIES: Final[dict[SchedulerKind, SchedulingPolicy]] = {
    policy.kind: policy for policy in (PerAppPriority(), GlobalPriority(), Fifo())
}
"""The policy of each ``SchedulerKind`` (in the order the ``--set`` check names them)."""


def policy_for(kind: SchedulerKind) -> SchedulingPolicy:
    """The scheduling policy of ``kind``."""
    return POLICIES[kind]


def policy_named(name: str) -> SchedulingPolicy | None:
    """The scheduling policy a report names (``"fifo"``, ...); None for another name (the CPU
    device's ``"none (no queue)"``)."""
    for policy in POLICIES.values():
        if policy.kind.value == name:
            return policy
    return None


class PreemptionPolicy:
    """Whether a running execution yields its unit to a higher-priority one, and how it resumes."""

    kind: ClassVar[PreemptionKind]
    preempts: ClassVar[bool] = True
    """Whether running work ever yields (the scheduling policy decides to whom)."""
    restarts: ClassVar[bool] = False
    """Whether a yielded execution starts over (launch and every operation again)."""

    def resume_op(self, segment: int) -> int:
        """Where an execution that yielded during ``segment`` (-1: its launch, else an
        operation's index) resumes: the same segment, or -1 (launch again) when it restarts."""
        return -1 if self.restarts else segment


class NoPreemption(PreemptionPolicy):
    """Running work runs to its end."""

    kind = PreemptionKind.NONE
    preempts = False


class Checkpoint(PreemptionPolicy):
    """Yield at the next operation boundary; resume where it stopped."""

    kind = PreemptionKind.CHECKPOINT


class Restart(PreemptionPolicy):
    """Yield at the next operation boundary; start over when granted a unit again."""

    kind = PreemptionKind.RESTART
    restarts = True


PREEMPTIONS: Final[dict[PreemptionKind, PreemptionPolicy]] = {
    policy.kind: policy for policy in (NoPreemption(), Checkpoint(), Restart())
}
"""The preemption policy of each ``PreemptionKind``."""


def preemption_for(kind: PreemptionKind | str) -> PreemptionPolicy:
    """The preemption policy of ``kind`` (or of its name, as a report gives it)."""
    return PREEMPTIONS[PreemptionKind(kind)]


class DeadlineRule:
    """What a driver does with an execution's or a preparation's deadline."""

    kind: ClassVar[DeadlinePolicy]
    enforces: ClassVar[bool]
    """Whether the driver refuses what its estimate cannot make and aborts work whose deadline
    has passed (else it runs everything to the end and the runtime counts late results)."""


class Abort(DeadlineRule):
    """Refuse before starting what cannot make the deadline; abort at a checkpoint once past."""

    kind = DeadlinePolicy.ABORT
    enforces = True


class Ignore(DeadlineRule):
    """Run to the end whatever the deadline."""

    kind = DeadlinePolicy.IGNORE
    enforces = False


DEADLINE_RULES: Final[dict[DeadlinePolicy, DeadlineRule]] = {
    rule.kind: rule for rule in (Abort(), Ignore())
}
"""The deadline rule of each ``DeadlinePolicy``."""


def deadline_rule_for(kind: DeadlinePolicy) -> DeadlineRule:
    """The deadline rule of ``kind``."""
    return DEADLINE_RULES[kind]
