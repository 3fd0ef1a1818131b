"""The virtual-time kernel: ordering, exact virtual times, primitives, determinism."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
import trio

from nnemu.errors import EmulatorBug
from nnemu.ipc import ExecutionSplit
from nnemu.sim import Kernel, SimEvent, SimQueue, SimThread, ThreadPool, current_thread

MS = 1_000_000


def _thread(tid: int, name: str | None = None) -> SimThread:
    return SimThread(1, tid, name or f"t{tid}")


async def _run(kernel: Kernel, *tasks: tuple[SimThread, Callable[[], Awaitable[object]]], **kw):
    """Spawn each (thread, fn) as an emulated task and run the kernel to completion."""
    async with trio.open_nursery() as nursery:
        for thread, fn in tasks:
            kernel.spawn(nursery, fn, thread=thread)
        await kernel.run(**kw)
        nursery.cancel_scope.cancel()


async def test_sleep_ordering_and_exact_times(autojump_clock):
    """Tasks sleeping different durations wake in time order at exactly their virtual times."""
    kernel = Kernel()
    log: list[tuple[str, int]] = []

    def sleeper(name: str, ns: int):
        async def fn():
            await kernel.sleep(ns)
            log.append((name, kernel.task_now_ns()))
            await kernel.sleep(ns)
            log.append((name, kernel.task_now_ns()))

        return fn

    await _run(
        kernel,
        (_thread(1), sleeper("a", 3 * MS)),
        (_thread(2), sleeper("b", 2 * MS)),
    )
    assert log == [("b", 2 * MS), ("a", 3 * MS), ("b", 4 * MS), ("a", 6 * MS)]
    assert kernel.clock_ns == 6 * MS


async def test_trio_clock_follows_virtual_time(autojump_clock):
    """Under a MockClock, trio's clock advances exactly as far as virtual time does."""
    kernel = Kernel()
    start = trio.current_time()

    async def fn():
        await kernel.sleep(5 * MS)

    await _run(kernel, (_thread(1), fn))
    assert trio.current_time() - start == pytest.approx(0.005)


async def test_same_time_wakeups_in_sequence_order(autojump_clock):
    """Tasks due at the same virtual time wake in the order they went to sleep."""
    kernel = Kernel()
    order: list[str] = []

    def sleeper(name: str, ns: int):
        async def fn():
            await kernel.sleep(ns)
            order.append(name)

        return fn

    # c parks first (spawned first) but for the same instant as a and b.
    await _run(
        kernel,
        (_thread(3), sleeper("c", MS)),
        (_thread(1), sleeper("a", MS)),
        (_thread(2), sleeper("b", MS)),
    )
    assert order == ["c", "a", "b"]
    assert kernel.clock_ns == MS


async def test_spawned_tasks_start_in_spawn_order(autojump_clock):
    """Emulated tasks start in spawn order and see their own thread identity."""
    kernel = Kernel()
    seen: list[SimThread] = []

    async def fn():
        seen.append(current_thread())

    threads = [_thread(9), _thread(4), _thread(7)]
    await _run(kernel, *((t, fn) for t in threads))
    assert seen == threads


async def test_sim_event_latches_first_value(autojump_clock):
    """A SimEvent keeps the first value set; later sets are ignored and report False."""
    kernel = Kernel()
    event = SimEvent(kernel)
    got: list[tuple[object, int]] = []
    results: list[bool] = []

    async def waiter():
        got.append((await event.wait(), kernel.task_now_ns()))

    async def setter():
        await kernel.sleep(2 * MS)
        results.append(event.set("first"))
        results.append(event.set("second"))

    async def late_waiter():
        await kernel.sleep(5 * MS)
        got.append((await event.wait(), kernel.task_now_ns()))

    await _run(kernel, (_thread(1), waiter), (_thread(2), setter), (_thread(3), late_waiter))
    assert results == [True, False]
    assert got == [("first", 2 * MS), ("first", 5 * MS)]
    assert event.value == "first"


async def test_sim_queue_is_fifo(autojump_clock):
    """A SimQueue hands items out in put order, to getters in the order they waited."""
    kernel = Kernel()
    queue = SimQueue(kernel)
    got: list[tuple[str, object, int]] = []

    def getter(name: str, count: int):
        async def fn():
            for _ in range(count):
                got.append((name, await queue.get(), kernel.task_now_ns()))

        return fn

    async def producer():
        await kernel.sleep(MS)
        for item in range(4):
            queue.put_nowait(item)

    await _run(
        kernel,
        (_thread(1), getter("g1", 2)),
        (_thread(2), getter("g2", 2)),
        (_thread(3), producer),
    )
    # g1 and g2 wait first, so items 0 and 1 go straight to them, in waiting order;
    # g1 runs first when woken and finds 2 queued, then g2 finds 3.
    assert got == [("g1", 0, MS), ("g1", 2, MS), ("g2", 1, MS), ("g2", 3, MS)]
    assert len(queue) == 0


async def test_sim_queue_buffers_items_before_getters(autojump_clock):
    """Items put before any getter waits are kept and taken oldest first without waiting."""
    kernel = Kernel()
    queue = SimQueue(kernel)
    got: list[object] = []

    async def fn():
        for item in "abc":
            queue.put_nowait(item)
        assert len(queue) == 3
        for _ in range(3):
            got.append(await queue.get())

    await _run(kernel, (_thread(1), fn))
    assert got == ["a", "b", "c"]
    assert kernel.clock_ns == 0


async def test_thread_pool_lends_lowest_tid_and_queues_fifo(autojump_clock):
    """A ThreadPool lends its lowest free tid and serves waiters FIFO once threads return."""
    kernel = Kernel()
    pool_threads = [_thread(10), _thread(11)]
    pool = ThreadPool(kernel, pool_threads)
    log: list[tuple[str, int, int]] = []

    def borrower(name: str, delay_ns: int, hold_ns: int):
        async def fn():
            await kernel.sleep(delay_ns)
            thread = await pool.acquire()
            log.append((name, thread.tid, kernel.task_now_ns()))
            await kernel.sleep(hold_ns)
            pool.release(thread)

        return fn

    await _run(
        kernel,
        (_thread(1), borrower("a", 0, 5 * MS)),
        (_thread(2), borrower("b", 0, 2 * MS)),
        (_thread(3), borrower("c", MS, MS)),
        (_thread(4), borrower("d", MS, MS)),
    )
    assert log == [
        ("a", 10, 0),
        ("b", 11, 0),
        ("c", 11, 2 * MS),  # first waiter gets the first thread released
        ("d", 11, 3 * MS),
    ]
    assert pool.peak_in_use == 2
    assert pool.in_use == 0


async def test_thread_pool_returns_lowest_tid_after_release(autojump_clock):
    """After out-of-order releases the pool again lends the lowest free tid first."""
    kernel = Kernel()
    pool = ThreadPool(kernel, [_thread(20), _thread(21), _thread(22)])
    tids: list[int] = []

    async def fn():
        held = [await pool.acquire() for _ in range(3)]
        pool.release(held[2])
        pool.release(held[0])
        pool.release(held[1])
        again = await pool.acquire()
        tids.append(again.tid)

    await _run(kernel, (_thread(1), fn))
    assert tids == [20]


async def test_thread_pool_lowest_tid_with_unsorted_threads(autojump_clock):
    """A pool built from threads in any order still lends the lowest tid first."""
    kernel = Kernel()
    pool = ThreadPool(kernel, [_thread(32), _thread(30), _thread(31)])
    tids: list[int] = []

    async def fn():
        tids.append((await pool.acquire()).tid)

    await _run(kernel, (_thread(1), fn))
    assert tids == [30]


async def test_work_lag_is_slept_off_at_next_wait(autojump_clock):
    """work() advances the task's own clock at once and the kernel's at its next wait."""
    kernel = Kernel()
    seen: list[tuple[str, int, int]] = []

    async def worker():
        kernel.work(3 * MS)
        seen.append(("worker-after-work", kernel.task_now_ns(), kernel.clock_ns))
        await kernel.sync()
        seen.append(("worker-synced", kernel.task_now_ns(), kernel.clock_ns))
        kernel.work(MS)
        await kernel.sleep(MS)  # the sleep starts from the task's own clock
        seen.append(("worker-slept", kernel.task_now_ns(), kernel.clock_ns))

    async def observer():
        await kernel.sleep(MS)
        seen.append(("observer", kernel.task_now_ns(), kernel.clock_ns))

    await _run(kernel, (_thread(1), worker), (_thread(2), observer))
    assert seen == [
        ("worker-after-work", 3 * MS, 0),
        ("observer", MS, MS),  # the observer runs while the worker's work is slept off
        ("worker-synced", 3 * MS, 3 * MS),
        ("worker-slept", 5 * MS, 5 * MS),
    ]


async def test_waits_of_a_task_ahead_of_its_clock_sync_first(autojump_clock):
    """A get, an event wait and a pool acquire by a task ahead of its clock sleep its work off
    first (letting others run meanwhile), then take what is there or wait for it."""
    kernel = Kernel()
    queue = SimQueue(kernel)
    event = SimEvent(kernel)
    pool = ThreadPool(kernel, [_thread(9)])
    log: list[tuple[str, object, int]] = []

    async def ahead():
        kernel.work(2 * MS)
        log.append(("item", await queue.get(), kernel.clock_ns))  # put at 1 ms, taken at 2
        kernel.work(MS)
        log.append(("value", await event.wait(), kernel.clock_ns))  # synced at 3 ms, set at 5
        kernel.work(MS)
        log.append(("thread", (await pool.acquire()).tid, kernel.clock_ns))  # free at 6 ms
        kernel.work(MS)
        log.append(("item", await queue.get(), kernel.clock_ns))  # synced at 7 ms, put at 10

    async def other():
        await kernel.sleep(MS)
        queue.put_nowait("a")
        await kernel.sleep(4 * MS)
        event.set("v")
        await kernel.sleep(5 * MS)
        queue.put_nowait("b")

    await _run(kernel, (_thread(1), ahead), (_thread(2), other))
    assert log == [
        ("item", "a", 2 * MS),
        ("value", "v", 5 * MS),
        ("thread", 9, 6 * MS),
        ("item", "b", 10 * MS),
    ]
    assert pool.peak_in_use == 1


async def test_wait_handle_with_lag_is_a_bug(autojump_clock):
    """Taking a wait handle with unsynchronised work raises EmulatorBug."""
    kernel = Kernel()
    raised: list[bool] = []

    async def fn():
        kernel.work(MS)
        with pytest.raises(EmulatorBug):
            kernel.wait_handle()
        raised.append(True)
        await kernel.sync()

    await _run(kernel, (_thread(1), fn))
    assert raised == [True]
    assert kernel.clock_ns == MS


@pytest.mark.parametrize("crowded", [False, True])
async def test_a_sleep_ends_the_wait_of_an_earlier_handle(autojump_clock, crowded):
    """A wait handle taken before a sleep is stale once the sleep ends, whether the sleep
    moved time on alone (nothing else scheduled) or gave the baton to another task."""
    kernel = Kernel()
    woken: list[bool] = []

    async def sleeper():
        handle = kernel.wait_handle()
        await kernel.sleep(2 * MS)
        woken.append(kernel.wake(handle, "late"))

    async def other():
        await kernel.sleep(MS)

    tasks = [(_thread(1), sleeper)] + ([(_thread(2), other)] if crowded else [])
    await _run(kernel, *tasks)
    assert woken == [False]
    assert kernel.clock_ns == 2 * MS


async def _interleaving() -> list[tuple[str, int]]:
    kernel = Kernel()
    log: list[tuple[str, int]] = []
    queue = SimQueue(kernel)
    event = SimEvent(kernel)

    def producer(name: str, step: int):
        async def fn():
            for i in range(5):
                kernel.work(step // 3)
                await kernel.sleep(step)
                queue.put_nowait((name, i))
                log.append((f"{name}-put{i}", kernel.task_now_ns()))
            event.set(name)

        return fn

    async def consumer():
        for _ in range(10):
            item = await queue.get()
            log.append((f"got-{item[0]}{item[1]}", kernel.task_now_ns()))
        log.append((f"first-done-{await event.wait()}", kernel.task_now_ns()))

    async with trio.open_nursery() as nursery:
        kernel.spawn(nursery, consumer, thread=_thread(1))
        kernel.spawn(nursery, producer("p", 300_000), thread=_thread(2))
        kernel.spawn(nursery, producer("q", 400_000), thread=_thread(3))
        await kernel.run()
        nursery.cancel_scope.cancel()
    return log


async def test_interleaving_is_deterministic(autojump_clock):
    """The same tasks give the same interleaving and times in two runs."""
    first = await _interleaving()
    second = await _interleaving()
    assert first == second
    assert len(first) == 21


async def test_run_stop_ns_stops_at_stop_time(autojump_clock):
    """run(stop_ns=...) returns at exactly the stop time with later work still pending."""
    kernel = Kernel()
    ticks: list[int] = []

    async def ticker():
        while True:
            await kernel.sleep(3 * MS)
            ticks.append(kernel.task_now_ns())

    await _run(kernel, (_thread(1), ticker), stop_ns=10 * MS)
    assert ticks == [3 * MS, 6 * MS, 9 * MS]
    assert kernel.clock_ns == 10 * MS


async def test_run_ends_when_nothing_is_left(autojump_clock):
    """run() returns at the time of the last event when every task has finished."""
    kernel = Kernel()

    async def fn():
        await kernel.sleep(7 * MS)

    await _run(kernel, (_thread(1), fn), stop_ns=100 * MS)
    assert kernel.clock_ns == 7 * MS
    assert not kernel.pending()


async def test_call_at_runs_callbacks_in_time_then_sequence_order(autojump_clock):
    """Timed callbacks run at their time; callbacks due together run in scheduling order."""
    kernel = Kernel()
    log: list[tuple[str, int]] = []

    async def fn():
        kernel.call_at(2 * MS, lambda: log.append(("x", kernel.clock_ns)))
        kernel.call_at(MS, lambda: log.append(("y", kernel.clock_ns)))
        kernel.call_at(2 * MS, lambda: log.append(("z", kernel.clock_ns)))
        await kernel.sleep(5 * MS)

    await _run(kernel, (_thread(1), fn))
    assert log == [("y", MS), ("x", 2 * MS), ("z", 2 * MS)]
    assert kernel.clock_ns == 5 * MS


async def test_awaiting_trio_in_an_emulated_thread_is_a_bug(autojump_clock):
    """An emulated thread that waits on trio instead of the kernel stops the run with EmulatorBug."""
    kernel = Kernel()

    async def fn():
        await trio.lowlevel.checkpoint()

    with pytest.raises(ExceptionGroup) as info:
        await _run(kernel, (_thread(1), fn))
    assert info.group_contains(EmulatorBug, match="wait only on the kernel")


async def test_cancelling_the_nursery_runs_a_waiting_threads_cleanup(autojump_clock):
    """A thread still waiting when its nursery is cancelled runs its finally blocks, as itself."""
    kernel = Kernel()
    cleaned: list[tuple[SimThread, int]] = []

    async def fn():
        try:
            await kernel.sleep(10 * MS)
        finally:
            cleaned.append((current_thread(), kernel.task_now_ns()))

    await _run(kernel, (_thread(4), fn), stop_ns=3 * MS)
    assert cleaned == [(_thread(4), 3 * MS)]


async def test_an_error_in_an_emulated_thread_reaches_the_caller(autojump_clock):
    """An exception raised by a thread's code ends the run and propagates out of the nursery."""
    kernel = Kernel()

    async def fn():
        await kernel.sleep(MS)
        raise ValueError("boom")

    with pytest.raises(ExceptionGroup) as info:
        await _run(kernel, (_thread(1), fn))
    assert info.group_contains(ValueError, match="boom")
    assert kernel.clock_ns == MS


async def test_finished_threads_trio_tasks_end_during_the_run(autojump_clock):
    """Short-lived threads (one per asynchronous execution) do not pile up as trio tasks."""
    kernel = Kernel()
    peak: list[int] = []

    async def child():
        await kernel.sleep(1000)

    async with trio.open_nursery() as nursery:

        async def parent():
            for i in range(500):
                kernel.spawn(nursery, child, thread=_thread(100 + i))
                await kernel.sleep(2000)
                peak.append(len(nursery.child_tasks))

        kernel.spawn(nursery, parent, thread=_thread(1))
        await kernel.run()
    assert kernel.clock_ns == 1_000_000
    assert max(peak) < 200


async def test_each_task_keeps_its_own_split(autojump_clock):
    """Kernel.split is the running task's own across switches, a spawned task starts with
    its spawner's, and nothing is left set after the run."""
    kernel = Kernel()
    seen: list[tuple[str, ExecutionSplit | None]] = []
    a_split, b_split = ExecutionSplit(), ExecutionSplit()
    async with trio.open_nursery() as nursery:

        async def child():
            seen.append(("child", kernel.split))

        async def a():
            kernel.split = a_split
            await kernel.sleep(MS)
            seen.append(("a", kernel.split))
            kernel.spawn(nursery, child, thread=_thread(3))
            await kernel.sleep(MS)

        async def b():
            seen.append(("b", kernel.split))
            kernel.split = b_split
            await kernel.sleep(MS // 2)
            seen.append(("b", kernel.split))
            await kernel.sleep(MS)
            seen.append(("b", kernel.split))

        kernel.spawn(nursery, a, thread=_thread(1))
        kernel.spawn(nursery, b, thread=_thread(2))
        await kernel.run()
        nursery.cancel_scope.cancel()
    assert seen == [
        ("b", None),
        ("b", b_split),
        ("a", a_split),
        ("child", a_split),
        ("b", b_split),
    ]
    assert kernel.split is None


async def test_realtime_observer_hears_of_each_timer_once(autojump_clock):
    """A realtime run (each timer waited for on the wall clock) tells the observer of each timer once."""
    kernel = Kernel(realtime=True)
    heard: list[tuple[int, str]] = []
    kernel.observer = lambda t_ns, what: heard.append((t_ns, what))

    async def sleeper():
        await kernel.sleep(MS)
        await kernel.sleep(2 * MS)

    await _run(kernel, (_thread(1, "sleeper"), sleeper))
    assert heard == [(MS, "wake sleeper"), (3 * MS, "wake sleeper")]
    assert kernel.clock_ns == 3 * MS
