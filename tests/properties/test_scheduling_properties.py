"""Scheduling properties of the device: checkpoint preemption and per-app priority isolation.

The device's unit occupancy is observed by replacing its ``_running`` and ``_waiting``
lists with lists that log every change with the virtual time (test-side
instrumentation; the device code is unchanged).
"""

from __future__ import annotations

import itertools
from typing import Any

import attrs
import pytest
import trio
import trio.testing
from hypothesis import event, example, given, settings, target
from hypothesis import strategies as st

from nnemu import open_emulator, run
from nnemu.driver import Job
from nnemu.hal import HalVersion, Priority
from nnemu.scenario import (
    AppSpec,
    DeadlinePolicy,
    DeviceCostSpec,
    DeviceSpec,
    ExecutionMode,
    IpcSpec,
    ModelSpec,
    PreemptionKind,
    Scenario,
    SchedulerKind,
    WorkloadKind,
    WorkloadSpec,
)
from nnemu.sim import Kernel
from nnemu.testing import devices, models
from tests.tiers import tiered

OPEN_LOOP = (WorkloadKind.PERIODIC, WorkloadKind.POISSON, WorkloadKind.BURST)


class LoggedList(list[Job]):
    """A list that logs (time, 'in'|'out', job) for every job added or taken out."""

    def __init__(self, kernel: Kernel, log: list[tuple[int, str, Job]]) -> None:
        super().__init__()
        self._kernel = kernel
        self._log = log

    def append(self, job: Job) -> None:
        self._log.append((self._kernel.clock_ns, "in", job))
        super().append(job)

    def remove(self, job: Job) -> None:
        self._log.append((self._kernel.clock_ns, "out", job))
        super().remove(job)

    def pop(self, index: Any = -1) -> Job:
        job = super().pop(index)
        self._log.append((self._kernel.clock_ns, "out", job))
        return job

    def clear(self) -> None:
        for job in self:
            self._log.append((self._kernel.clock_ns, "out", job))
        super().clear()


@attrs.frozen
class Occupancy:
    """One device's jobs with the intervals they held a unit and waited for one."""

    spec: DeviceSpec
    jobs: tuple[Job, ...]
    held: dict[int, list[tuple[int, int]]]
    """id(job) -> [start, end) intervals holding a unit."""
    waited: dict[int, list[tuple[int, int]]]
    """id(job) -> [start, end) intervals waiting in the queue."""


def _intervals(log: list[tuple[int, str, Job]], end_ns: int) -> dict[int, list[tuple[int, int]]]:
    opened: dict[int, int] = {}
    out: dict[int, list[tuple[int, int]]] = {}
    for t, what, job in log:
        if what == "in":
            opened[id(job)] = t
        else:
            out.setdefault(id(job), []).append((opened.pop(id(job)), t))
    for key, t in opened.items():
        out.setdefault(key, []).append((t, end_ns))
    return out


def run_occupancy(scenario: Scenario) -> dict[str, Occupancy]:
    """Run ``scenario`` and return each device's occupancy."""
    result: dict[str, Occupancy] = {}

    async def main() -> None:
        async with open_emulator(scenario, keep_executions=True) as emu:
            logs = []
            for service in emu.services:
                running: list[tuple[int, str, Job]] = []
                waiting: list[tuple[int, str, Job]] = []
                service.device._running = LoggedList(emu.kernel, running)
                service.device._waiting = LoggedList(emu.kernel, waiting)
                logs.append((service, running, waiting))
            await emu.run()
            end = emu.kernel.clock_ns
            for service, running, waiting in logs:
                result[service.name] = Occupancy(
                    service.spec,
                    tuple(service.device.history or ()),
                    _intervals(running, end),
                    _intervals(waiting, end),
                )

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    return result


def _boundaries(job: Job, held: list[tuple[int, int]]) -> list[int]:
    """Absolute times at which ``job`` finished a segment (checkpoint: progress is kept)."""
    ends = list(itertools.accumulate(job.durations))
    times = []
    ran = 0
    for start, end in held:
        for cumulative in ends:
            if ran < cumulative <= ran + (end - start):
                times.append(start + cumulative - ran)
        ran += end - start
    return times


def _comparable(spec: DeviceSpec, high: Job, low: Job) -> bool:
    """Whether ``high`` may preempt ``low`` on this device (priority relative to the uid)."""
    if high.priority <= low.priority:
        return False
    return spec.scheduler is SchedulerKind.GLOBAL_PRIORITY or high.uid == low.uid


def _check_checkpoint_bound(occupancy: dict[str, Occupancy]) -> None:
    for name, occ in occupancy.items():
        if occ.spec.preemption is not PreemptionKind.CHECKPOINT:
            continue
        for high in occ.jobs:
            for w0, w1 in occ.waited.get(id(high), []):
                for low in occ.jobs:
                    if not _comparable(occ.spec, high, low):
                        continue
                    held = occ.held.get(id(low), [])
                    bounds = _boundaries(low, held)
                    for g, r in held:
                        if not (g < w1 and r > w0):
                            continue
                        t0 = max(g, w0)
                        limit = min((b for b in bounds if b > t0), default=r)
                        assert min(r, w1) <= limit, (
                            name,
                            "waiting",
                            high,
                            (w0, w1),
                            "held",
                            low,
                            (g, r),
                        )


@st.composite
def contended(
    draw: st.DrawFn,
    schedulers: tuple[SchedulerKind, ...] = (
        SchedulerKind.GLOBAL_PRIORITY,
        SchedulerKind.PER_APP_PRIORITY,
    ),
    preemptions: tuple[PreemptionKind, ...] = (PreemptionKind.CHECKPOINT,),
    max_compute_units: int = 1,
    shared_uids: bool = True,
) -> Scenario:
    """One 1.3 device and 2-3 apps pinned to it whose bursts overlap (no faults, no timeouts)."""
    device = draw(
        devices(
            "npu",
            hal_versions=[HalVersion.V1_3],
            schedulers=schedulers,
            preemptions=preemptions,
            max_compute_units=max_compute_units,
            max_faults=0,
            partial=False,
        )
    )
    # Preparation costs nothing, so the apps' bursts start together and overlap.
    device = attrs.evolve(
        device,
        memory_mb=1024.0,
        queue_limit=None,
        cost=attrs.evolve(device.cost, prepare_ms=0.0, prepare_ms_per_op=0.0),
    )
    model_specs = (draw(models("m0")), draw(models("m1")))
    app_specs: list[AppSpec] = []
    for i in range(draw(st.integers(2, 3))):
        uid = 10000 + i
        if shared_uids and i > 0 and draw(st.booleans()):
            uid = app_specs[0].uid
        app_specs.append(
            AppSpec(
                name=f"a{i}",
                uid=uid,
                model=draw(st.sampled_from(["m0", "m1"])),
                devices=("npu",),
                priority=draw(st.sampled_from(list(Priority))),
                execution_mode=draw(st.sampled_from([ExecutionMode.SYNC, ExecutionMode.ASYNC])),
                threads=draw(st.integers(1, 3)),
                workload=WorkloadSpec(
                    kind=WorkloadKind.BURST,
                    executions=draw(st.integers(1, 8)),
                    start_ms=draw(st.integers(0, 300)) / 1000,
                    burst_size=draw(st.integers(1, 4)),
                    burst_interval_ms=draw(st.integers(20, 400)) / 1000,
                ),
            )
        )
    return Scenario(
        name="contended",
        seed=draw(st.integers(0, 1000)),
        devices=(device,),
        ipc=IpcSpec(latency_us=draw(st.sampled_from([0.0, 10.0]))),
        models=model_specs,
        apps=tuple(app_specs),
    )


def _one_uid(scenario: Scenario) -> Scenario:
    """The scenario with every app under uid 10000 (one app's models, priorities comparable)."""
    return attrs.evolve(scenario, apps=tuple(attrs.evolve(a, uid=10000) for a in scenario.apps))


@tiered(
    contended(schedulers=(SchedulerKind.GLOBAL_PRIORITY,))
    | contended(schedulers=(SchedulerKind.PER_APP_PRIORITY,)).map(_one_uid),
    quick=20,
    wide=60,
)
def test_checkpoint_high_priority_waits_at_most_one_operation(scenario: Scenario) -> None:
    """Checkpoint preemption, one unit: while a higher-priority job waits, a lower-priority job
    it may preempt keeps its unit only until its current operation boundary."""
    _check_checkpoint_bound(run_occupancy(scenario))


def _other_app_waiting() -> Scenario:
    """per_app_priority, one unit: A-low runs, B's frame waits (older), then A-high arrives."""
    app = AppSpec(
        name="a_low",
        uid=10000,
        model="m",
        devices=("npu",),
        priority=Priority.LOW,
        workload=WorkloadSpec(kind=WorkloadKind.PERIODIC, executions=1, period_ms=1.0),
    )
    return Scenario(
        name="other-app-waiting",
        devices=(
            DeviceSpec(
                name="npu",
                compute_units=1,
                scheduler=SchedulerKind.PER_APP_PRIORITY,
                preemption=PreemptionKind.CHECKPOINT,
                cost=DeviceCostSpec(prepare_ms=0.0, prepare_ms_per_op=0.0, launch_us=20.0),
            ),
        ),
        ipc=IpcSpec(latency_us=0.0),
        models=(ModelSpec(name="m", preset="add"),),
        apps=(
            app,
            attrs.evolve(app, name="b", uid=10002),
            attrs.evolve(
                app,
                name="a_high",
                priority=Priority.MEDIUM,
                workload=attrs.evolve(app.workload, start_ms=0.001),
            ),
        ),
    )


@tiered(contended(schedulers=(SchedulerKind.PER_APP_PRIORITY,)), quick=20, wide=60)
@example(_other_app_waiting())
def test_checkpoint_per_app_with_other_apps_waiting(scenario: Scenario) -> None:
    """Checkpoint + per_app_priority with several uids: the same one-operation bound per uid."""
    _check_checkpoint_bound(run_occupancy(scenario))


@st.composite
def isolation_cases(draw: st.DrawFn) -> tuple[Scenario, Scenario]:
    """The same contended scenario twice, with app A's priorities (uid 10000) changed.

    Every frame has its own app thread and the driver a binder thread for each, costs are
    deterministic and there are no deadlines, so the device sees the same arrivals in both
    runs.
    """
    base = draw(
        contended(
            schedulers=(SchedulerKind.PER_APP_PRIORITY,),
            preemptions=(PreemptionKind.NONE, PreemptionKind.CHECKPOINT),
            shared_uids=False,
        )
    )
    # A binder thread for every app thread: a call (B's preparation) never waits behind A's
    # executions, whose timing A's priorities change.
    device = attrs.evolve(
        base.devices[0],
        cost=attrs.evolve(base.devices[0].cost, jitter=0.0),
        binder_threads=64,
        worker_threads=8,
    )
    apps = []
    for i, app in enumerate(base.apps):
        uid = 10000 if i < 2 else 10001  # a0, a1: app A (one uid); a2: app B
        executions = app.workload.executions or 1
        apps.append(
            attrs.evolve(app, uid=uid, threads=executions, execution_mode=ExecutionMode.SYNC)
        )
    if len(apps) == 2:
        apps[1] = attrs.evolve(apps[1], uid=10001)
    first = attrs.evolve(base, devices=(device,), apps=tuple(apps))
    changed = tuple(
        attrs.evolve(app, priority=draw(st.sampled_from(list(Priority))))
        if app.uid == 10000
        else app
        for app in apps
    )
    return first, attrs.evolve(first, apps=changed)


def _grants_of(occupancy: dict[str, Occupancy], uid: int) -> list[tuple[int, int]]:
    occ = occupancy["npu"]
    return [
        interval for job in occ.jobs if job.uid == uid for interval in occ.held.get(id(job), [])
    ]


def _isolation_repro() -> tuple[Scenario, Scenario]:
    """A: a low frame and, a little later, a second frame; B's frame arrives between them."""
    a_first = AppSpec(
        name="a_first",
        uid=10000,
        model="m",
        devices=("npu",),
        priority=Priority.LOW,
        workload=WorkloadSpec(
            kind=WorkloadKind.BURST, executions=2, burst_size=2, burst_interval_ms=1.0
        ),
        threads=2,
    )
    b = attrs.evolve(
        a_first,
        name="b",
        uid=10001,
        threads=1,
        workload=WorkloadSpec(
            kind=WorkloadKind.PERIODIC, executions=1, period_ms=1.0, start_ms=0.005
        ),
    )
    a_late = attrs.evolve(
        a_first,
        name="a_late",
        threads=1,
        workload=WorkloadSpec(
            kind=WorkloadKind.PERIODIC, executions=1, period_ms=1.0, start_ms=0.01
        ),
    )
    scenario = Scenario(
        name="isolation",
        devices=(
            DeviceSpec(
                name="npu",
                scheduler=SchedulerKind.PER_APP_PRIORITY,
                cost=DeviceCostSpec(prepare_ms=0.0, prepare_ms_per_op=0.0, launch_us=100.0),
            ),
        ),
        ipc=IpcSpec(latency_us=0.0),
        models=(ModelSpec(name="m", preset="add"),),
        apps=(a_first, b, a_late),
    )
    raised = attrs.evolve(scenario, apps=(a_first, b, attrs.evolve(a_late, priority=Priority.HIGH)))
    return scenario, raised


@tiered(isolation_cases(), quick=20, wide=60)
@example(_isolation_repro())
def test_per_app_priorities_do_not_move_other_apps(case: tuple[Scenario, Scenario]) -> None:
    """per_app_priority: changing the priorities inside app A never reorders app B's work.

    Each of B's executions gets the unit after the same number of A's turns, whatever
    A's priorities. Without preemption, when all of A's work costs the same, B's grants
    happen at the very same times (with preemption, a preempted job's partial work
    lengthens A's turn by up to an operation, which B then waits for).
    """
    first, changed = case
    before, after = run_occupancy(first), run_occupancy(changed)
    for uid in {app.uid for app in first.apps} - {10000}:
        assert _turns_of(before, uid) == _turns_of(after, uid), uid
    a_models = {app.model for app in first.apps if app.uid == 10000}
    if len(a_models) == 1 and first.devices[0].preemption is PreemptionKind.NONE:
        for uid in {app.uid for app in first.apps} - {10000}:
            assert _grants_of(before, uid) == _grants_of(after, uid), uid


def _turns_of(occupancy: dict[str, Occupancy], uid: int) -> list[int]:
    """For each of ``uid``'s jobs (in grant order): how many of A's turns came before it.

    A turn is a maximal stretch of consecutive grants to one app: inside its turn an
    app may reorder, preempt and resume its own work (that is what its priorities are
    for) without changing how many turns the other apps wait.
    """
    occ = occupancy["npu"]
    grants = sorted(
        (start, job.uid == 10000) for job in occ.jobs for start, _ in occ.held.get(id(job), [])
    )
    a_turns: list[int] = []
    previous = None
    for start, is_a in grants:
        if is_a and previous is not True:
            a_turns.append(start)
        previous = is_a
    firsts = sorted(
        occ.held[id(job)][0][0] for job in occ.jobs if job.uid == uid and occ.held.get(id(job))
    )
    return [sum(1 for start in a_turns if start < first) for first in firsts]


def _with_timeout(
    scenario: Scenario, app: int, policy: DeadlinePolicy, timeout_ms: float
) -> Scenario:
    """``scenario`` with ``policy`` on its device, no jitter, and app ``app`` given a timeout."""
    device = scenario.devices[0]
    device = attrs.evolve(
        device, deadline_policy=policy, cost=attrs.evolve(device.cost, jitter=0.0)
    )
    apps = list(scenario.apps)
    apps[app] = attrs.evolve(apps[app], execution_timeout_ms=timeout_ms)
    return attrs.evolve(scenario, devices=(device,), apps=tuple(apps))


@st.composite
def deadline_cases(draw: st.DrawFn) -> tuple[Scenario, int, float]:
    """A contended scenario under any scheduler and preemption mode, the app that gets a
    deadline, and the deadline as a fraction of that app's slowest latency without one."""
    scenario = draw(
        contended(
            schedulers=tuple(SchedulerKind),
            preemptions=tuple(PreemptionKind),
            max_compute_units=2,
        )
    )
    app = draw(st.integers(0, len(scenario.apps) - 1))
    if draw(st.booleans()):
        # The case preemption is about: the app with the deadline outranks the others.
        apps = tuple(
            attrs.evolve(spec, priority=Priority.HIGH if i == app else Priority.LOW)
            for i, spec in enumerate(scenario.apps)
        )
        scenario = attrs.evolve(scenario, apps=apps)
    return scenario, app, draw(st.floats(0.05, 1.2))


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(deadline_cases())
def test_abort_refuses_nothing_the_ignore_run_finishes_in_time(
    case: tuple[Scenario, int, float],
) -> None:
    """When the ignore run finishes every execution of an app by its deadline, the abort run
    (same seed, no jitter) neither refuses nor aborts any of them."""
    scenario, app, where = case
    name = scenario.apps[app].name
    # The app's latencies without a deadline that matters, to put one near them.
    free = run(_with_timeout(scenario, app, DeadlinePolicy.IGNORE, 60_000.0)).data["apps"][name]
    if free["completed"] == 0:
        event("the app completed nothing")
        return
    timeout_ms = round(max(0.001, where * free["latency_ms"]["max"]), 3)
    ignore = run(_with_timeout(scenario, app, DeadlinePolicy.IGNORE, timeout_ms)).data["apps"][name]
    if ignore["deadline_misses"] or ignore["in_flight"] or ignore["failed"]:
        event("the ignore run missed a deadline")
        return
    event("the ignore run met every deadline")
    # Bias toward deadlines the app only just meets.
    target(ignore["latency_ms"]["max"] - timeout_ms, label="minus the slack left, ms")
    abort = run(_with_timeout(scenario, app, DeadlinePolicy.ABORT, timeout_ms)).data["apps"][name]
    assert abort["errors"] == {}, (timeout_ms, abort)
    assert abort["deadline_refused"] == abort["deadline_aborted"] == 0
    assert abort["completed"] == ignore["completed"]
