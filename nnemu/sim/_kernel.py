"""The virtual-time kernel: deterministic scheduling of emulated threads on trio.

Every emulated thread of control is a coroutine that the kernel itself runs, one
at a time, in the trio task that called ``Kernel.run`` (the stepper): the running
thread holds the kernel's baton and gives it away only by waiting on a kernel
primitive (``sleep``, ``SimEvent.wait``, ``SimQueue.get``, ``ThreadPool.acquire``,
``park``).  The kernel then picks the next thread from its own FIFO ready queue or,
when that is empty, from its own ``(time, sequence)`` timer heap, advances virtual
time and resumes that thread's coroutine (``send``) with the value it was woken
with.  A switch between emulated threads therefore costs no trip through trio's
scheduler, and trio's (randomised) choice among ready tasks never decides
anything: the same scenario and seed give the same interleaving on any machine.

Each thread also has a trio task in the nursery it was spawned in (``_waits.shell``),
which keeps the thread's place there: it ends when the thread's code ends, and if
the nursery is cancelled first (the end of a run) it closes the code, whose
cleanup (``finally`` blocks) then runs in trio's order, as a cancelled task's
would.  Emulated code waits only on the kernel's primitives, never on trio's.

Virtual time is an integer number of nanoseconds, read on two clocks:

* ``Kernel.clock_ns``, the kernel's clock: the time of the step being run, the same
  for every task.  Scheduling (timers, ``call_at``, a run's stop time) uses it.
* ``Kernel.task_now_ns()``, the running task's own time: the kernel's clock plus the
  CPU work the task has done since it last waited (``work``), which nothing else can
  observe yet.  Marks and timestamps the task writes use it; the task must ``sync``
  (sleep off its lag) before it touches shared state, and then the two agree.

Under trio's ``MockClock`` the kernel jumps trio's clock up to ``clock_ns`` whenever
it lets trio run (and when ``run`` returns), so ``trio.current_time()`` agrees with it
in trio code; with ``realtime=True`` the kernel waits on
trio's clock for each step instead, so a run takes as long as the emulated time.
"""

from __future__ import annotations

import bisect
import collections
import heapq
from collections.abc import Awaitable, Callable, Coroutine
from contextvars import Context, copy_context
from typing import Any, Final

import trio
import trio.testing
from trio.lowlevel import Abort, current_task, reschedule

from nnemu.errors import EmulatorBug
from nnemu.sim._split import ExecutionSplit
from nnemu.sim._threads import (
    KernelStopped,
    SimThread,
    _active_kernel,
    _current_thread,
    as_thread,
    current_thread,
    enter_thread,
    leave_thread,
    virtual_time_ms,
)
from nnemu.sim._waits import NO_WAIT, SUSPEND, done, shell, suspended, then

__all__ = [
    "Kernel",
    "KernelStopped",
    "SimEvent",
    "SimQueue",
    "SimThread",
    "ThreadPool",
    "WakeHandle",
    "as_thread",
    "current_thread",
    "enter_thread",
    "leave_thread",
    "us",
    "virtual_time_ms",
]


def us(ns: float) -> int:
    """Round a duration to whole microseconds, in ns.

    Every modelled duration is rounded so, which keeps virtual time on the resolution
    of ftrace timestamps: a trace then loses nothing of what the emulator did.
    """
    rounded = round(ns / 1000.0)
    return rounded * 1000 if rounded > 0 else 0


class _Proc:
    """Kernel bookkeeping of one emulated thread (or of the root, the task running the kernel)."""

    __slots__ = (
        "context",
        "coro",
        "done",
        "lag_ns",
        "name",
        "resume_value",
        "shell_waiting",
        "split",
        "task",
        "token",
    )

    def __init__(self, name: str) -> None:
        self.name = name
        # Virtual CPU time the task has spent since it last synchronised with the
        # kernel: its own clock runs ``lag_ns`` ahead of ``Kernel.clock_ns``.
        self.lag_ns = 0
        # The emulated thread's code, stepped by the kernel (``Kernel._step``), and the
        # contextvars it runs in (its thread, its logging context).
        self.coro: Coroutine[Any, Any, object] | None = None
        self.context: Context | None = None
        self.done = False  # its code returned, raised, or was closed
        # The trio task that owns the thread's lifetime in its nursery (``_waits.shell``).
        self.task: trio.lowlevel.Task | None = None
        self.shell_waiting = False
        self.resume_value: object = None
        # Its ``Kernel.split`` while another task runs (saved and loaded at switches).
        self.split: ExecutionSplit | None = None
        # Incremented whenever the proc is woken: a wake-up source holding an older
        # token (a timer that lost the race against an event, say) is stale.
        self.token = 0


WakeHandle = tuple[_Proc, int]
"""Who to wake and which wait of theirs: ``(proc, token)``."""


class Kernel:
    """Deterministic scheduler of emulated threads in virtual time."""

    def __init__(self, *, realtime: bool = False) -> None:
        self.clock_ns = 0
        """The kernel's clock (ns): the time of the step being run, the same for every task.
        A task that has done ``work`` since it last waited is ahead of it (``task_now_ns``)."""
        self.split: ExecutionSplit | None = None
        """The split (``ExecutionSplit``) of the execution attempt the running task works for
        (None outside one): a register of the running task, saved to it and loaded from the
        next one at each switch, so that the execution's path reads and sets it as an
        attribute (cheaper there than a context variable's set, reset and lookups;
        bench/README.md).  The app sets it around an attempt; a binder thread serving a
        transaction runs in the caller's task; a spawned task starts with its spawner's, as
        with a context variable; a kernel callback sees the split of the task that gave the
        baton up."""
        self.realtime = realtime
        self._ready: collections.deque[_Proc] = collections.deque()
        # Entries: (time_ns, seq, proc, token) for a sleeping proc, or
        # (time_ns, seq, None, callback) for a timed callback.
        self._heap: list[tuple[int, int, Any, Any]] = []
        self._seq = 0
        self._running: _Proc | None = None
        self._root: _Proc | None = None
        self._stop_ns: int | None = None
        self._closing = False
        self._wall_base = 0.0
        # Virtual time up to which a realtime run has waited on the wall clock, and the
        # sequence number of the timer it waited for (told to the observer before the wait).
        self._wall_ns = -1
        self._walled_seq = -1
        self._clock: trio.testing.MockClock | None = None
        self._trio_ns = 0  # the virtual time trio's MockClock was last jumped to
        self.switches = 0
        self._shells_to_end = 0
        self._stopped = False
        # Latest own-clock time a task reached through work() (its marks may carry it).
        self._reached_ns = 0
        self.interrupted: int | None = None
        """The signal that ended the run early (``interrupt``), else None."""
        self._trio_token: trio.lowlevel.TrioToken | None = None
        self._wall_sleep: trio.CancelScope | None = None
        self.observer: Callable[[int, str], None] | None = None
        """Called with (time, description) before each timer or timed callback is taken
        (manual stepping); None costs nothing."""

    @property
    def closing(self) -> bool:
        """Whether the run is being torn down (cleanup code of cancelled tasks is running)."""
        return self._closing

    # ------------------------------------------------------------------ time
    def task_now_ns(self) -> int:
        """The running task's own time (ns): ``clock_ns`` plus the CPU work it has done since
        it last waited (``work``); ``clock_ns`` itself outside a task.  What the task's marks
        and timestamps carry."""
        proc = self._running
        return self.clock_ns + proc.lag_ns if proc is not None else self.clock_ns

    def work(self, duration_ns: int) -> None:
        """Account ``duration_ns`` of busy CPU time to the running task without a task switch.

        Nothing else can observe the task while it computes, so its clock simply runs
        ahead; the lag is slept off at its next wait (``sync``).  Marks written
        meanwhile carry the task's own time (``task_now_ns()``).
        """
        proc = self._running
        if proc is None:
            if self._closing:
                return  # cleanup code of a task being cancelled at the end of a run
            raise EmulatorBug("work() outside an emulated task")
        proc.lag_ns += duration_ns

    def sync(self) -> Awaitable[None]:
        """Sleep off the running task's accumulated work so that its clock equals the kernel's:
        ``await kernel.sync()``.

        (A plain method returning what to await: with no work to sleep off, as for most
        calls, a finished awaitable, without the coroutine an ``async def`` would make.)
        """
        proc = self._running
        if proc is not None and proc.lag_ns and not self._closing:
            return self.sleep_until(self.clock_ns + proc.lag_ns)
        return NO_WAIT

    def assert_synced(self) -> None:
        """Raise EmulatorBug if the running task acts on shared state ahead of virtual time."""
        proc = self._running
        if proc is not None and proc.lag_ns and not self._closing:
            raise EmulatorBug(f"{proc.name} touched shared state {proc.lag_ns} ns ahead of time")

    def _advance(self, t_ns: int) -> None:
        if t_ns > self.clock_ns:
            self.clock_ns = t_ns

    def _catch_up_trio_clock(self) -> None:
        """Jump trio's ``MockClock`` to ``clock_ns`` (done before trio runs anything, not at
        every step: emulated code does not read trio's clock)."""
        clock = self._clock
        if clock is not None and self.clock_ns > self._trio_ns:
            clock.jump((self.clock_ns - self._trio_ns) / 1e9)
        self._trio_ns = self.clock_ns

    # --------------------------------------------------------------- running
    async def run(self, *, stop_ns: int | None = None) -> None:
        """Run the emulation until nothing is left to do or virtual time reaches ``stop_ns``.

        Call from the task that owns the nursery the emulated tasks were spawned in.
        """
        _active_kernel.set(self)
        clock = trio.lowlevel.current_clock()
        self._clock = clock if isinstance(clock, trio.testing.MockClock) else None
        self._trio_ns = self.clock_ns
        self._wall_base = trio.current_time() - self.clock_ns / 1e9
        if not self._stopped:  # stop() or interrupt() before the run keep their effect
            self._stop_ns = stop_ns
        self._trio_token = trio.lowlevel.current_trio_token()
        root = _Proc("root")
        root.task = current_task()
        self._root = root
        self._running = root
        # (The root's split, None: a literal None here would be the type mypyc checks the
        # register's later reads in this function against.)
        self.split = root.split
        ready = self._ready
        try:
            while True:
                if ready:
                    nxt = ready.popleft()
                else:
                    picked = self._pick()
                    if picked is None:  # realtime: wait for the next timer's wall time
                        if await self._sleep_wall_until(self._heap[0][0]):
                            self._wall_ns = self._heap[0][0]
                        continue
                    nxt = picked
                if nxt is root:
                    break
                self._step(nxt)
                if self._shells_to_end >= _SHELL_BATCH:
                    # Let the trio tasks of finished threads end (their memory is freed).
                    self._shells_to_end = 0
                    self._catch_up_trio_clock()
                    await trio.lowlevel.checkpoint()
            running = self._running
            if running is not None:  # the task keeps its split for a later run
                running.split = self.split
            self._running = None
            self.split = None
            if self._stopped:
                # Marks written ahead of the clock by work() must not outlive the run's end.
                self._advance(self._reached_ns)
            elif stop_ns is not None and self.clock_ns < stop_ns and self.pending():
                self._advance(stop_ns)
        except trio.Cancelled:
            self._closing = True  # the run is being torn down
            raise
        finally:
            self._catch_up_trio_clock()

    def stop(self) -> None:
        """End the run at the current virtual time: the root is woken before any later timer.

        Tasks that are ready now still run (at this time); nothing further is scheduled.
        """
        self._stopped = True
        self._stop_ns = self.clock_ns - 1

    def interrupt(self, signum: int) -> None:
        """Stop the run as ``stop`` does, on behalf of a signal (safe to call from a signal handler).

        Only flags are set here; the kernel acts on them when it next picks a task, so
        the emulated world (and the trace) is left between two of its own steps.  A
        wall-clock wait in progress (``realtime``) is cut short through trio's token.
        """
        if self.interrupted is None:
            self.interrupted = signum
        self._stopped = True
        self._stop_ns = -1
        token = self._trio_token
        if token is not None and self.realtime:
            try:
                token.run_sync_soon(self._cancel_wall_sleep)
            except trio.RunFinishedError:
                pass

    def _cancel_wall_sleep(self) -> None:
        if self._wall_sleep is not None:
            self._wall_sleep.cancel()

    async def _sleep_wall_until(self, t_ns: int) -> bool:
        """Wait on the wall clock for virtual time ``t_ns``; False if a signal cut the wait short."""
        with trio.CancelScope() as scope:
            self._wall_sleep = scope
            if self.interrupted is None:
                await trio.sleep_until(self._wall_base + t_ns / 1e9)
        self._wall_sleep = None
        return self.interrupted is None

    def pending(self) -> bool:
        """Whether any emulated work is still scheduled."""
        return bool(self._ready) or bool(self._heap)

    def close(self) -> None:
        """Mark the kernel as shutting down: waiting tasks are about to be cancelled."""
        self._closing = True

    def _abort(self, _raise_cancel: Any) -> Abort:
        # Nothing cancels emulated tasks during a run, so a cancellation means the
        # run is being torn down (end of run, Ctrl-C, a failed task).
        self._closing = True
        return Abort.SUCCEEDED

    def _pick(self) -> _Proc | None:
        """The proc that runs next, running due callbacks and advancing time; None when the
        next timer's wall time has not come yet (``realtime``: ``run`` waits for it first)."""
        ready, heap, root = self._ready, self._heap, self._root
        assert root is not None
        while True:
            if ready:
                return ready.popleft()
            if not heap or self._closing:
                return root
            t_ns, seq, proc_or_none, payload = heap[0]
            if self._stop_ns is not None and t_ns > self._stop_ns:
                return root
            if self.observer is not None and seq != self._walled_seq:
                self._observe(t_ns, proc_or_none, payload)
                if self._stop_ns is not None and t_ns > self._stop_ns:
                    return root
            if proc_or_none is not None and proc_or_none.token != payload:
                heapq.heappop(heap)
                continue  # stale timer: the proc was woken by something else
            if self.realtime and t_ns > self._wall_ns:
                # (Interrupted meanwhile: the stop check above ends the run.  Else this
                # timer comes back here once waited for, observed already.)
                self._walled_seq = seq
                return None
            heapq.heappop(heap)
            if t_ns > self.clock_ns:
                self.clock_ns = t_ns
            if proc_or_none is None:
                # In the contextvars of the thread that gave the baton up, as it would
                # have run there (the kernel's stepper itself runs outside every thread).
                context = self._running.context if self._running is not None else None
                if context is not None:
                    context.run(payload)
                else:
                    payload()
                continue
            proc: _Proc = proc_or_none
            proc.token += 1
            proc.resume_value = None
            return proc

    def _observe(self, t_ns: int, proc: _Proc | None, payload: Any) -> None:
        """Tell the observer about the timer or callback ``_pick`` is about to take."""
        assert self.observer is not None
        if proc is None:
            self.observer(t_ns, f"call {getattr(payload, '__name__', 'callback')}()")
        elif proc.token == payload:  # a stale timer is skipped silently
            self.observer(t_ns, f"wake {proc.name}")

    def _step(self, proc: _Proc) -> None:
        """Run ``proc``'s code until it parks again (or ends), with the value it was woken with.

        Only the task that called ``run`` steps threads, one at a time, so a switch
        between emulated threads costs no trip through trio's scheduler.
        """
        running = self._running
        if proc is not running:
            self.switches += 1
            if running is not None:
                running.split = self.split
            self.split = proc.split
        self._running = proc
        context, coro = proc.context, proc.coro
        if context is None or coro is None:
            raise EmulatorBug(f"{proc.name} has no code to run")
        try:
            waited = context.run(coro.send, proc.resume_value)
        except StopIteration:
            self._finished(proc)
            return
        except BaseException:
            self._finished(proc)
            raise
        if waited is not SUSPEND:
            self._finished(proc)
            context.run(coro.close)
            raise EmulatorBug(
                f"{proc.name} awaited {waited!r}: emulated threads wait only on the kernel"
            )

    def _finished(self, proc: _Proc) -> None:
        """``proc``'s code is over: whatever it computed after its last wait is over too, and
        the trio task that holds its place in the nursery may end."""
        proc.done = True
        reached = self.clock_ns + proc.lag_ns
        if reached > self._reached_ns:
            self._reached_ns = reached
        proc.lag_ns = 0
        if proc.shell_waiting:
            proc.shell_waiting = False
            assert proc.task is not None
            reschedule(proc.task)
        # Its trio task ends once trio runs it (one that had not started yet returns at once).
        self._shells_to_end += 1

    def park(self, until_ns: int | None = None) -> Awaitable[Any]:
        """Give up the baton until woken through ``wait_handle()`` or until ``until_ns``:
        ``await kernel.park()``.

        Its value is the one passed to ``wake``, or None when the timer fired.  (A plain
        method returning what to await, ``_waits.suspended()`` or ``NO_WAIT``: its checks
        and timer are done at the call, and the await hands the stepper the baton.)
        """
        proc = self._running
        if self._closing:
            # The run is being torn down: this thread's cleanup (its code being closed)
            # cannot wait any more.
            raise GeneratorExit
        if proc is None:
            raise KernelStopped("the emulation is not running")
        if proc.lag_ns:
            # A wait handle taken before syncing would be stale after it: sync first.
            raise EmulatorBug(f"{proc.name} parked {proc.lag_ns} ns ahead of time")
        if until_ns is not None:
            if until_ns < self.clock_ns:
                until_ns = self.clock_ns
            heap = self._heap
            if (
                not self._ready
                and (not heap or heap[0][0] > until_ns)
                and (self._stop_ns is None or until_ns <= self._stop_ns)
                and not self.realtime
                and self.observer is None
            ):
                # Nothing else can happen before until_ns, so nothing can wake the task
                # first: its timer fires, as ``_pick`` would take it, without a heap entry.
                proc.token += 1
                proc.resume_value = None
                if until_ns > self.clock_ns:
                    self.clock_ns = until_ns
                return NO_WAIT
            self._seq += 1
            heapq.heappush(heap, (until_ns, self._seq, proc, proc.token))
        return suspended()  # the stepper runs others, then resumes this with the wake value

    def wait_handle(self) -> WakeHandle:
        """A handle that ``wake`` uses to resume the calling task's next ``park`` (sync first)."""
        proc = self._running
        if proc is None:
            raise EmulatorBug("wait_handle() outside an emulated task")
        if proc.lag_ns:
            raise EmulatorBug(f"{proc.name} took a wait handle {proc.lag_ns} ns ahead of time")
        return proc, proc.token

    def wake(self, handle: WakeHandle, value: object = None) -> bool:
        """Make the parked task behind ``handle`` ready with ``value``; False if it was woken already."""
        proc, token = handle
        if proc.token != token:
            return False
        self.assert_synced()
        proc.token += 1
        proc.resume_value = value
        self._ready.append(proc)
        return True

    def wake_first(self, handles: collections.deque[WakeHandle], value: object) -> bool:
        """Wake the longest-waiting task of ``handles`` with ``value``, dropping handles of
        tasks woken already; False if no task was waiting."""
        while handles:
            if self.wake(handles.popleft(), value):
                return True
        return False

    def sleep_until(self, t_ns: int) -> Awaitable[None]:
        """Wait until virtual time ``t_ns`` (at least until the task's own clock):
        ``await kernel.sleep_until(t)``.

        The task's lag is slept off with it (its own clock is where the wait starts from),
        then it parks until ``t_ns`` (``park``: when nothing else can happen first, time
        simply moves on, without a task switch).
        """
        proc = self._running
        if proc is not None and proc.lag_ns:
            reached = self.clock_ns + proc.lag_ns
            if reached > self._reached_ns:
                self._reached_ns = reached
            if reached > t_ns:
                t_ns = reached
            proc.lag_ns = 0
        return self.park(t_ns)

    def sleep(self, duration_ns: int) -> Awaitable[None]:
        """Wait ``duration_ns`` of virtual time from the task's own clock: ``await kernel.sleep(d)``."""
        return self.sleep_until(self.task_now_ns() + max(duration_ns, 0))

    def call_at(self, t_ns: int, callback: Callable[[], None]) -> None:
        """Run the plain function ``callback`` at virtual time ``t_ns`` (in sequence order)."""
        self._seq += 1
        heapq.heappush(self._heap, (max(t_ns, self.clock_ns), self._seq, None, callback))

    # -------------------------------------------------------------- spawning
    def spawn(
        self,
        nursery: trio.Nursery,
        fn: Callable[..., Awaitable[object]],
        *args: object,
        thread: SimThread,
    ) -> None:
        """Start ``fn(*args)`` as an emulated task running as ``thread`` in ``nursery``.

        The task is queued behind the tasks that are ready now, in spawn order.  Its
        code is run by the kernel (``run``), in a copy of the spawner's contextvars as
        trio would give it; a trio task in ``nursery`` holds its place there until the
        code ends, and closes the code (running its cleanup) if the nursery is cancelled
        first.  The code may wait only on the kernel's primitives.
        """
        _active_kernel.set(self)  # threads copy the spawner's context: their logs get ``vt``
        proc = _Proc(thread.name)
        if self._running is not None:
            proc.split = self.split
        context = copy_context()
        context.run(_current_thread.set, thread)
        proc.context = context
        proc.coro = fn(*args)  # type: ignore[assignment]
        self._ready.append(proc)
        nursery.start_soon(shell, self, proc, name=f"nnemu:{thread.name}")


class SimEvent:
    """A one-shot latch carrying a value: the first ``set`` wins, later ones are ignored."""

    __slots__ = ("_kernel", "_waiters", "is_set", "value")

    def __init__(self, kernel: Kernel) -> None:
        self._kernel = kernel
        self._waiters: list[WakeHandle] = []
        self.is_set = False
        self.value: Any = None

    def set(self, value: object = None) -> bool:
        """Latch ``value`` and wake the waiters; False if already set (value unchanged)."""
        if self.is_set:
            return False
        self._kernel.assert_synced()
        self.is_set = True
        self.value = value
        wake = self._kernel.wake
        for handle in self._waiters:
            wake(handle, value)
        self._waiters.clear()
        return True

    def wait(self) -> Awaitable[Any]:
        """Wait until set; the latched value: ``await event.wait()``.

        (A plain method returning what to await: see ``SimQueue.get``.)
        """
        kernel = self._kernel
        synced = kernel.sync()
        if synced is not NO_WAIT:
            return then(synced, self.wait)
        if self.is_set:
            return done(self.value)
        self._waiters.append(kernel.wait_handle())
        return kernel.park()


class SimQueue:
    """An unbounded FIFO queue between emulated tasks."""

    __slots__ = ("_getters", "_items", "_kernel")

    def __init__(self, kernel: Kernel) -> None:
        self._kernel = kernel
        self._items: collections.deque[Any] = collections.deque()
        self._getters: collections.deque[WakeHandle] = collections.deque()

    def __len__(self) -> int:
        return len(self._items)

    def put_nowait(self, item: object) -> None:
        """Append ``item``, handing it straight to the longest-waiting getter if any."""
        kernel = self._kernel
        kernel.assert_synced()
        if not kernel.wake_first(self._getters, item):
            self._items.append(item)

    def get(self) -> Awaitable[Any]:
        """Take the oldest item, waiting for one if the queue is empty: ``await queue.get()``.

        (A plain method returning what to await: it syncs, then takes the item, or a wait
        handle and parks; when the sync itself gives up the baton, ``_waits.then`` awaits
        it and calls ``get`` again.)
        """
        kernel = self._kernel
        synced = kernel.sync()
        if synced is not NO_WAIT:
            return then(synced, self.get)
        if self._items:
            return done(self._items.popleft())
        self._getters.append(kernel.wait_handle())
        return kernel.park()


_SHELL_BATCH: Final = 64
"""Threads that may end before the stepper lets trio end their tasks."""


def _minus_tid(thread: SimThread) -> int:
    return -thread.tid


class ThreadPool:
    """A fixed pool of emulated threads (binder threads, driver workers), lent out FIFO."""

    def __init__(self, kernel: Kernel, threads: list[SimThread]) -> None:
        self._kernel = kernel
        self.threads = tuple(threads)
        self._free: list[SimThread] = sorted(threads, key=_minus_tid)
        self._waiters: collections.deque[WakeHandle] = collections.deque()
        self.peak_in_use = 0

    @property
    def in_use(self) -> int:
        """Threads currently lent out."""
        return len(self.threads) - len(self._free)

    def acquire(self) -> Awaitable[SimThread]:
        """Borrow a thread (the lowest-numbered free one), waiting FIFO if all are busy:
        ``await pool.acquire()``.

        (A plain method returning what to await: see ``SimQueue.get``.  A thread handed
        over by ``release`` leaves as many lent out as before, so only a thread taken from
        the free ones can raise ``peak_in_use``.)
        """
        kernel = self._kernel
        synced = kernel.sync()
        if synced is not NO_WAIT:
            return then(synced, self.acquire)
        free = self._free
        if free and not self._waiters:
            thread = free.pop()
            in_use = len(self.threads) - len(free)
            if in_use > self.peak_in_use:
                self.peak_in_use = in_use
            return done(thread)
        self._waiters.append(kernel.wait_handle())
        return kernel.park()

    def release(self, thread: SimThread) -> None:
        """Return ``thread``, handing it to the oldest waiter if any."""
        kernel = self._kernel
        kernel.assert_synced()
        if not kernel.wake_first(self._waiters, thread):
            free = self._free
            if not free or free[-1].tid > thread.tid:
                free.append(thread)  # the lowest free tid (the usual case: it was just lent)
            else:
                bisect.insort(free, thread, key=_minus_tid)
