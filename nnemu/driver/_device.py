"""The device behind a driver: compute units, a scheduler, preemption and deadlines.

``Device.execute`` is the one place an execution occupies hardware.  It waits for
a compute unit in the order the scenario's scheduler gives, then runs the
prepared model's operations.  Between operations (checkpoints) it

- aborts with MISSED_DEADLINE_TRANSIENT when the deadline has passed or the
  remaining work, as the driver estimates it, cannot finish in time (policy
  ``abort``; docs/hal-semantics.md §3: the driver may abort, is never forced to);
- yields its unit to a waiting higher-priority execution when the device
  preempts (``checkpoint`` keeps its progress, ``restart`` starts it over);
- enforces the loop timeout inside WHILE operations (after each iteration).

All of it is event driven: a running execution sleeps until its next decision
point, and a preempting arrival wakes it early.
"""

from __future__ import annotations

import bisect
import enum
import heapq
import itertools
import math
import random
from typing import Final

from mypy_extensions import mypyc_attr

from nnemu.driver._device_stats import DeviceStats
from nnemu.driver._job import Job
from nnemu.hal import DeviceType, ErrorStatus
from nnemu.ipc import ExecutionSplit
from nnemu.scenario import DeviceSpec
from nnemu.scheduling import (
    DeadlineRule,
    PreemptionPolicy,
    SchedulingPolicy,
    deadline_rule_for,
    policy_for,
    preemption_for,
)
from nnemu.sim import Kernel, us
from nnemu.tracer import CounterTrack, Layer, Phase, Section, Tracer, mark


class Wake(enum.Enum):
    """Why a parked job was woken (a park that reaches its time limit returns None instead)."""

    GRANTED = "granted"
    """A compute unit was handed to the waiting job."""
    PREEMPT = "preempt"
    """A higher-priority arrival asks the running job to yield its unit."""
    DEVICE_DIED = "device died"
    """The driver process died: the job ends with GENERAL_FAILURE."""


def _segment_at(job: Job, durations: list[int], at_ns: int) -> tuple[int, int]:
    """The segment ``job``, running since ``resumed_ns``, is in at ``at_ns``: (its start, its
    index), where -1 is the launch, then the operations, and ``len(op_ns)`` is past the last."""
    t = job.resumed_ns
    segment = job.next_op
    while segment < len(job.plan.op_ns) and t + durations[segment + 1] <= at_ns:
        t += durations[segment + 1]
        segment += 1
    return t, segment


@mypyc_attr(allow_interpreted_subclasses=True)
class Device:
    """Compute units shared by all prepared models of one driver.

    A wheel compiles it (``nnemu._native``); Python subclasses of it (a scheduler of your
    own, ``examples/custom_scheduler.py``) override its methods as usual.
    """

    def __init__(
        self,
        kernel: Kernel,
        spec: DeviceSpec,
        rng: random.Random,
        tracer: Tracer | None = None,
    ) -> None:
        self.kernel = kernel
        self.spec = spec
        # A CPU-type driver runs the sample driver's CpuExecutor, which writes
        # [NN_LC_PE]run and a mark per operation (docs/hal-semantics.md §6); accelerators
        # write none. With marks, an execution wakes at every operation boundary.
        self._tracer = tracer if spec.type is DeviceType.CPU else None
        self._gauges = tracer if tracer is not None and tracer.flows else None
        self.trace_pid = 0
        """The pid the device's counter tracks belong to (its driver service's)."""
        self._waiting_track: CounterTrack | None = None
        self._busy_track: CounterTrack | None = None
        """The counters ``executions waiting`` and ``compute units busy`` of ``trace_pid``
        (made by the first ``_trace_load``)."""
        self.units = spec.compute_units
        self.scheduler = spec.scheduler
        self.policy: SchedulingPolicy = policy_for(spec.scheduler)
        """The scheduling policy (``nnemu.scheduling``): the order of waiting executions."""
        self.preemption = spec.preemption
        self.preemption_policy: PreemptionPolicy = preemption_for(spec.preemption)
        """Whether running work yields its unit, and where it resumes."""
        self.deadline_rule: DeadlineRule = deadline_rule_for(spec.deadline_policy)
        """Whether the device aborts work whose deadline has passed."""
        self._rng = rng
        self._running: list[Job] = []
        self._free_units: list[int] = list(range(spec.compute_units))
        self._waiting: list[Job] = []
        self._seq = 0
        self._busy_since = 0
        self.alive = True
        self.slowdown = 1.0
        self.stats = DeviceStats()
        self.history: list[Job] | None = None
        """Every job that reached the device, when recording is on (tests, analyses)."""

    # ------------------------------------------------------------ accounting
    def _trace_load(self) -> None:
        """Write the counters ``executions waiting`` and ``compute units busy``.

        Through the device's own ``CounterTrack`` of each: a value that did not change (most
        call sites change one of the two) costs a comparison, and a changed one its event,
        with no lookup by name and pid.
        """
        waiting, busy = self._waiting_track, self._busy_track
        if waiting is None or busy is None:
            gauges = self._gauges
            assert gauges is not None
            waiting = self._waiting_track = gauges.counter_track(
                self.trace_pid, "executions waiting"
            )
            busy = self._busy_track = gauges.counter_track(self.trace_pid, "compute units busy")
        waiting.set(len(self._waiting))
        busy.set(len(self._running))

    def _account(self) -> None:
        now = self.kernel.clock_ns
        self.stats.busy_ns += len(self._running) * (now - self._busy_since)
        self._busy_since = now

    def busy_fraction(self, elapsed_ns: int) -> float:
        """Mean fraction of compute units busy over ``elapsed_ns``."""
        self._account()
        if elapsed_ns <= 0:
            return 0.0
        return self.stats.busy_ns / (elapsed_ns * self.units)

    def energy(self) -> float:
        """Busy unit-time so far (ns), each stretch weighted by its model's powerUsage ratio:
        the device's energy relative to the reference CPU's per ns of work."""
        now = self.kernel.clock_ns
        running = sum((now - job._segment_start) * job.plan.power for job in self._running)
        return self.stats.energy + running

    @property
    def all_units_busy(self) -> bool:
        """Whether every compute unit is taken."""
        return len(self._running) >= self.units

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
    def pick_index(self, waiting: list[Job]) -> int:
        """Which waiting job gets the next free unit (index into ``waiting``).

        The scenario's ``scheduler`` decides; subclass ``Device`` and override this to try
        a scheduling policy of your own (see ``examples/custom_scheduler.py``).
        """
        return self.policy.pick_index(waiting)

    def _swap_slot(self, job: Job, waiting: list[Job]) -> None:
        """``job`` is granted a unit over ``waiting``: the policy's bookkeeping of arrival
        slots (``PerAppPriority.swap_slot``)."""
        self.policy.swap_slot(job, waiting)

    def _may_preempt(self, job: Job, victim: Job) -> bool:
        """Whether ``job`` (waiting, or about to) should take ``victim``'s unit at its next
        checkpoint."""
        if not self.preemption_policy.preempts or not self.policy.may_preempt(job, victim):
            return False
        if job.priority <= victim.priority or victim.preempt_requested:
            return False
        # Preempt only if the freed unit would really go to ``job``.
        waiting = [*self._waiting, victim]
        if job not in waiting:
            waiting.append(job)
        return waiting[self.pick_index(waiting)] is job

    def _victim_for(self, job: Job) -> Job | None:
        """The running job that ``job``'s arrival asks to yield, if any."""
        candidates = [victim for victim in self._running if self._may_preempt(job, victim)]
        if not candidates:
            return None
        return min(candidates, key=lambda v: (int(v.priority), -v.seq))

    def _request_preemption(self, job: Job) -> None:
        victim = self._victim_for(job)
        if victim is None:
            return
        victim.preempt_requested = True
        assert victim.handle is not None
        self.kernel.wake(victim.handle, Wake.PREEMPT)

    async def _yield_unit(self, job: Job) -> bool:
        """A preempted job queues again in its old place, then frees its unit.

        The scheduler picks among the waiting jobs with the yielding one among them (as
        ``_may_preempt`` assumed), so the unit goes to the job that asked for it.
        Returns False if the device died before the job got a unit back.
        """
        kernel = self.kernel
        await kernel.sync()
        job.handle = kernel.wait_handle()
        self._waiting.append(job)
        self._release(job)
        return await kernel.park() is Wake.GRANTED

    async def _acquire(self, job: Job) -> bool:
        """Wait for a unit; False if the device died meanwhile."""
        kernel = self.kernel
        await kernel.sync()
        if self.alive and len(self._running) < self.units and not self._waiting:
            self._account()
            self._occupy(job, self._free_units.pop(0))
            return True
        if not self.alive:
            return False
        job.handle = kernel.wait_handle()
        self._waiting.append(job)
        if self._gauges is not None:
            self._trace_load()
        self._request_preemption(job)
        granted = await kernel.park()
        return granted is Wake.GRANTED

    def _occupy(self, job: Job, unit: int) -> None:
        job.unit = unit
        job._segment_start = job.resumed_ns = self.kernel.clock_ns
        job.planned_end_ns = -1
        self._running.append(job)
        if self._gauges is not None:
            self._trace_load()

    def _vacate(self, job: Job) -> int:
        """Take ``job`` off its unit, recording the stretch it ran; returns the unit."""
        self._running.remove(job)
        unit, job.unit = job.unit, -1
        now = self.kernel.clock_ns
        job.segments.append((job._segment_start, now, unit))
        self.stats.energy += (now - job._segment_start) * job.plan.power
        if self._gauges is not None:
            self._trace_load()
        return unit

    def _release(self, job: Job) -> None:
        proc = self.kernel._running  # (``assert_synced``, checked inline)
        if proc is not None and proc.lag_ns:
            self.kernel.assert_synced()
        self._account()
        unit = self._vacate(job)
        if self._waiting and self.alive:
            if len(self._waiting) > 1:
                self.stats.choices += 1
            index = self.pick_index(self._waiting)
            nxt = self._waiting.pop(index)
            self._swap_slot(nxt, self._waiting)
            self._occupy(nxt, unit)
            assert nxt.handle is not None
            self.kernel.wake(nxt.handle, Wake.GRANTED)
        else:
            bisect.insort(self._free_units, unit)

    def backlog_ns(self, job: Job) -> int:
        """How long ``job``, arriving now, would wait for a unit (the driver's estimate).

        The estimate replays what the device will do if nothing else arrives: running
        executions keep their units until they end (their planned stop: the last
        operation, or the checkpoint where the deadline rule or the loop timeout stops
        them), except one the scheduler and the preemption mode would make yield to a
        waiting execution, which keeps its unit only to the end of the operation in
        progress and then queues again with what it has left (``checkpoint``: the
        remaining operations; ``restart``: all of them again, launch included). Each time
        a unit frees, ``pick_index`` chooses among the waiting executions as it will then,
        so the wait follows the configured scheduler (``fifo``: everything ahead;
        ``global_priority``: work of at least ``job``'s priority; ``per_app_priority``:
        the turns of the apps ahead and the app's own work of at least its priority) and
        a subclass's own ``pick_index``. Waiting executions cost their nominal time
        (launch included) times the current slow-down. Without jitter, and with nothing
        arriving later, it is when ``job`` gets a unit.
        """
        now = self.kernel.clock_ns
        if not self.alive or (len(self._running) < self.units and not self._waiting):
            return 0
        # ``job`` as it will queue: the next arrival order.
        me = job.copy()
        me.seq = self._seq + 1
        victim = self._victim_for(me)
        # (time the unit frees, arrival order of the holder, job that re-queues then)
        frees: list[tuple[int, int, Job | None]] = []
        for other in self._running:
            if other is victim or other.preempt_requested:
                boundary = self._boundary_ns(other, now)
                rest = self._after_yield(other, boundary)
                frees.append((boundary, other.seq, rest))
            else:
                frees.append((max(now, self._running_end(other)), other.seq, None))
        frees.extend((now, -1, None) for _ in range(self.units - len(self._running)))
        heap = [(at, seq, i, requeued) for i, (at, seq, requeued) in enumerate(frees)]
        heapq.heapify(heap)
        count = len(heap)
        if self.policy.fixed_key(me) is not None and type(self).pick_index is Device.pick_index:
            # fifo and global_priority pick by a fixed key: only the jobs before ``job`` in
            # that order matter, taken in order (n log n for long queues).
            key = self._fixed_key
            mine = key(me)
            ahead = [(key(other), other) for other in self._waiting if key(other) < mine]
            heapq.heapify(ahead)
            while heap:
                at, _, _, requeued = heapq.heappop(heap)
                if requeued is not None and key(requeued) < mine:
                    heapq.heappush(ahead, (key(requeued), requeued))
                if not ahead:
                    return at - now
                _, nxt = heapq.heappop(ahead)
                count += 1
                heapq.heappush(heap, (self._planned_end(nxt, at), nxt.seq, count, None))
            return 0  # pragma: no cover - a unit always frees
        # Any other order: ask ``pick_index`` at each free unit, on copies (per_app_priority
        # swaps arrival orders as it grants).
        pending = [other.copy() for other in self._waiting]
        pending.append(me)
        while heap:
            at, _, _, requeued = heapq.heappop(heap)
            if requeued is not None:
                pending.append(requeued)
            index = self.pick_index(pending)
            nxt = pending.pop(index)
            self._swap_slot(nxt, pending)
            if nxt is me:
                return at - now
            count += 1
            heapq.heappush(heap, (self._planned_end(nxt, at), nxt.seq, count, None))
        return 0  # pragma: no cover - a unit always frees

    def _fixed_key(self, job: Job) -> tuple[int, int]:
        """The order fifo (arrival) and global_priority (priority, then arrival) pick in."""
        key = self.policy.fixed_key(job)
        assert key is not None  # (only asked of a policy with a fixed key)
        return key

    def _boundary_ns(self, job: Job, now: int) -> int:
        """End of the segment (launch or operation) ``job`` is running at ``now``."""
        durations = self._durations_of(job)
        t, segment = _segment_at(job, durations, now)
        if segment >= len(job.plan.op_ns):
            return t
        return min(t + durations[segment + 1], self._running_end(job))

    def _running_end(self, job: Job) -> int:
        """When running ``job`` leaves its unit unless preempted."""
        if job.planned_end_ns < 0:
            # Granted a unit, but its task has not planned yet (same instant).
            return self._planned_end(job, job.resumed_ns)
        return job.planned_end_ns

    def _after_yield(self, job: Job, boundary: int) -> Job | None:
        """A copy of ``job`` as it queues again after yielding at ``boundary`` (None if it ends)."""
        if boundary >= self._running_end(job):
            return None
        durations = self._durations_of(job)
        _, segment = _segment_at(job, durations, boundary)
        if segment >= len(job.plan.op_ns):
            return None
        next_op = self.preemption_policy.resume_op(segment)
        rest = job.copy()
        rest.next_op = next_op
        rest.preempt_requested = False
        rest.durations = durations
        return rest

    def _durations_of(self, job: Job) -> list[int]:
        """``job``'s segment durations: actual once it started, else nominal (launch first)."""
        if job.durations:
            return job.durations
        return [job.launch_ns] + [us(ns * self.slowdown) for ns in job.plan.op_ns]

    def _planned_end(self, job: Job, start: int) -> int:
        """When ``job`` would leave its unit if it got one at ``start`` and kept it."""
        return self._stop_point(job, start, job.launch_ns, self._durations_of(job))[0]

    def die(self) -> None:
        """The driver process died: every execution on or waiting for the device ends now."""
        self.alive = False
        self._account()
        for job in [*self._running, *self._waiting]:
            if job.handle is not None:
                self.kernel.wake(job.handle, Wake.DEVICE_DIED)
        self._waiting.clear()
        if self._gauges is not None:
            self._trace_load()

    # ------------------------------------------------------------- running
    def _stop_point(
        self, job: Job, start: int, launch_ns: int, durations: list[int] | None = None
    ) -> tuple[int, str]:
        """The next moment the job must stop: ('finish'|'deadline'|'loop', time).

        ``durations`` replaces the job's own (the estimate plans waiting jobs with them).
        """
        if durations is None:
            durations = job.durations
        deadline = job.deadline_ns
        abort = deadline is not None and self.deadline_rule.enforces
        if not abort and (job.loop_timeout_ns is None or not job.plan.iterations):
            # No checkpoint can stop it (the usual case, without the loop below).
            return start + sum(durations[job.next_op + 1 :]), "finish"
        # after[i]: the time of segments i.. (the rest at a checkpoint).
        after = list(itertools.accumulate(reversed(durations)))[::-1] if abort else []
        t = start
        for segment in range(job.next_op, len(job.plan.op_ns)):
            duration = durations[segment + 1]
            if abort and segment >= 0:
                assert deadline is not None
                # Checkpoint before each operation: the sample driver's rule (deadline
                # passed) and the estimate rule (the rest cannot make it). Before the
                # first operation the driver only knows the nominal costs; once it has
                # timed one, it knows this execution's pace (jitter and slow-down).
                known = segment > 0
                rest = after[segment + 1] if known else job.plan.total_ns
                if t >= deadline or t + rest > deadline:
                    return t, "deadline"
            if segment >= 0 and job.loop_timeout_ns is not None and job.plan.iterations:
                iterations = job.plan.iterations_of(segment)
                if iterations > 1:
                    per_iteration = duration / iterations
                    limit = job.loop_timeout_ns
                    needed = math.floor(limit / per_iteration) + 1
                    if needed < iterations:
                        return t + us(needed * per_iteration), "loop"
            t += duration
        if abort and deadline is not None and t > deadline:
            # The last checkpoint: results that come too late are reported as a miss.
            return t, "deadline"
        return t, "finish"

    async def execute(self, job: Job, *, launch_ns: int) -> ErrorStatus:
        """Run ``job``: NONE, MISSED_DEADLINE_TRANSIENT (aborted), or GENERAL_FAILURE (device
        died).  Its time at the device goes to the running task's split (``account``)."""
        kernel = self.kernel
        job.arrived_ns = arrived = kernel.task_now_ns()
        job.launch_ns = launch_ns
        self._seq += 1
        job.seq = self._seq
        if self.history is not None:
            self.history.append(job)
        # Wait for a unit (one free now is taken at once: ``_acquire``'s first case, inline
        # with ``sync``'s check, as everything up to the split below is: this is on every
        # execution's path, and each call saved counts, bench/README.md).
        proc = kernel._running
        if proc is not None and proc.lag_ns:
            await kernel.sync()
        if self.alive and len(self._running) < self.units and not self._waiting:
            self._account()
            self._occupy(job, self._free_units.pop(0))
            granted = True
        else:
            granted = await self._acquire(job)
        if not granted:
            status = ErrorStatus.GENERAL_FAILURE
        else:
            self.stats.executions += 1
            scale = job.scale * self.slowdown
            if scale == 1.0:
                durations = [launch_ns, *job.plan.op_us_ns]  # us(ns * 1.0) is us(ns)
            else:
                durations = [launch_ns]
                durations.extend([us(ns * scale) for ns in job.plan.op_ns])
            job.durations = durations
            job.started_ns = kernel.clock_ns
            tracer = self._tracer if self._tracer is not None and self._tracer.enabled else None
            try:
                if tracer is None:  # accelerators and tracing off: no marks to close
                    status = await self._run(job, launch_ns, _NO_MARKS)
                else:
                    with _CpuMarks(tracer) as marks:
                        status = await self._run(job, launch_ns, marks)
            finally:
                if job in self._running:
                    proc = kernel._running
                    if proc is not None and proc.lag_ns:
                        await kernel.sync()
                    self._release(job)
        job.status = status
        finished = job.finished_ns
        if finished is None:
            job.finished_ns = finished = kernel.clock_ns
        split = kernel.split
        if split is None:
            return status
        segments = job.segments
        if len(segments) == 1 and not split.detailed:
            # The usual case, ``account`` inlined: one stretch, launched once, left at its
            # end or after it.
            start, stop, _ = segments[0]
            on_unit = stop - start
            launched = on_unit if on_unit < launch_ns else launch_ns
            split.device_queue_ns += start - arrived
            if finished > stop:  # preempted, and the device died before it got a unit back
                split.preempted_ns += finished - stop
            split.launch_ns += launched
            split.compute_ns += on_unit - launched
            split.energy += on_unit * job.plan.power
        else:
            self.account(job, split)
        return status

    def account(self, job: Job, split: ExecutionSplit) -> None:
        """Add ``job``'s time at the device to ``split``: before it first got a unit, device
        queue; on a unit, the launch overhead and the operations; the cost of preemption
        apart: off the unit after each preemption, and under ``restart`` every stretch but
        the last (its launch and operations are done again from the start)."""
        arrived = job.arrived_ns
        if arrived is None:
            return
        finished = job.finished_ns
        end = finished if finished is not None else arrived
        segments = job.segments
        if not segments:
            split.device_queue_ns += end - arrived
            if split.detailed:
                split.on_device(self.spec.name, arrived, job.started_ns, end, job.preempted)
            return
        restart = self.preemption_policy.restarts
        first = segments[0][0]
        on_unit = 0
        for start, stop, _ in segments:
            on_unit += stop - start
            end = max(end, stop)
        # The stretch that launched the work kept (the last one under restart, which ran
        # the whole execution again) and the unit time that work took.
        start, stop, _ = segments[-1 if restart else 0]
        launched = min(stop - start, job.launch_ns)
        kept = stop - start if restart else on_unit
        split.device_queue_ns += first - arrived
        split.preempted_ns += end - first - kept
        split.launch_ns += launched
        split.compute_ns += kept - launched
        split.energy += on_unit * job.plan.power
        if split.detailed:
            split.on_device(self.spec.name, arrived, job.started_ns, end, job.preempted)

    def _stopped(self, job: Job, why: str) -> ErrorStatus:
        job.finished_ns = self.kernel.clock_ns
        if why == "finish":
            return _NONE
        if why == "loop":
            self.stats.loop_timeouts += 1
        else:
            self.stats.deadline_aborts += 1
            self.stats.aborted_by_uid[job.uid] += 1
        return ErrorStatus.MISSED_DEADLINE_TRANSIENT

    async def _run(self, job: Job, launch_ns: int, marks: _CpuMarks) -> ErrorStatus:
        """Run ``job`` on its unit to its end, yielding the unit when preempted."""
        kernel = self.kernel
        while True:
            start = kernel.clock_ns
            stop, why = self._stop_point(job, start, launch_ns)
            job.resumed_ns, job.planned_end_ns = start, stop
            if marks.tracer is not None and stop > start:
                # One operation at a time, so that each gets its mark.
                marks.begin_op(job)
                segment_end = start + job.durations[job.next_op + 1]
                if segment_end < stop:
                    stop, why = segment_end, "boundary"
            job.handle = kernel.wait_handle()
            if job.preempt_requested:
                # Asked to yield before it could park (it had just been granted a unit).
                woken: object = Wake.PREEMPT
            else:
                woken = await kernel.park(until_ns=stop)
            if woken is None:
                marks.end_op()
                if why == "boundary":
                    job.next_op += 1
                    continue
                return self._stopped(job, why)
            if woken is Wake.DEVICE_DIED:
                return ErrorStatus.GENERAL_FAILURE
            # PREEMPT: run on to the next operation boundary, then yield the unit.
            now = kernel.clock_ns
            t = start
            segment = job.next_op
            while segment < len(job.plan.op_ns) and t + job.durations[segment + 1] <= now:
                t += job.durations[segment + 1]
                segment += 1
            if segment < len(job.plan.op_ns):
                boundary = t + job.durations[segment + 1]
                if boundary >= stop and why != "boundary":
                    # The next boundary is where the job stops anyway.
                    job.preempt_requested = False
                    job.next_op = segment
                    await kernel.sleep(stop - now)
                    marks.end_op()
                    return self._stopped(job, why)
                await kernel.sleep_until(boundary)
                marks.end_op()
                segment += 1
            job.next_op = self.preemption_policy.resume_op(segment)
            job.preempt_requested = False
            job.preempted += 1
            self.stats.preemptions += 1
            if not await self._yield_unit(job):
                return ErrorStatus.GENERAL_FAILURE


class _CpuMarks:
    """The CpuExecutor's marks of one execution, as a scoped block.

    ``[NN_LC_PE]run`` opens with the first operation's mark and each operation's
    ``[NN_LC_PCO]<kernel>`` section lasts from its start to its boundary (or to a
    preemption).  An operation's end is an event in virtual time, not a place in
    the code, so ``end_op`` closes it; the block's exit closes whatever is still
    open, innermost first.  Without a tracer (accelerators, tracing off) it writes
    nothing.
    """

    __slots__ = ("_op", "_run", "tracer")

    def __init__(self, tracer: Tracer | None) -> None:
        self.tracer = tracer
        self._run: Section | None = None
        self._op: Section | None = None

    def __enter__(self) -> _CpuMarks:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.end_op()
        if self._run is not None:
            self._run.__exit__(*exc_info)
            self._run = None

    def begin_op(self, job: Job) -> None:
        """Open the mark of ``job``'s next operation (and ``run`` first), unless one is open."""
        tracer = self.tracer
        if tracer is None or job.next_op < 0 or self._op is not None:
            return
        if self._run is None:
            self._run = tracer.section(_RUN_MARK)
        self._op = tracer.section(
            mark(Layer.CPU, Phase.COMPUTATION, job.plan.names_of(job.next_op)[1])
        )

    def end_op(self) -> None:
        """Close the open operation mark, if any."""
        if self._op is not None:
            self._op.__exit__(None, None, None)
            self._op = None


_NONE: Final = ErrorStatus.NONE
"""``ErrorStatus.NONE`` as a module constant: a finished job returns it, and on Python 3.11 an
enum member's lookup on its class costs ~60 ns (bench/README.md)."""

_RUN_MARK = mark(Layer.CPU, Phase.EXECUTION, "run")
"""A CPU execution's ``[NN_LC_PE]run`` mark, built once."""

_NO_MARKS = _CpuMarks(None)
"""The marks of an execution that writes none (it never holds a section, so it is shared)."""
