"""The kernel's observer hook, Kernel.stop() and the binder's on_call hook the stepper uses."""

from __future__ import annotations

import trio

from nnemu.sim import Kernel, SimThread


async def test_observer_sees_each_timer_and_stop_ends_the_run():
    """The observer gets (time, description) before each timer; stop() ends at the current time."""
    kernel = Kernel()
    seen: list[tuple[int, str]] = []

    def observe(t_ns: int, what: str) -> None:
        seen.append((t_ns, what))
        if t_ns >= 3_000:
            kernel.stop()

    async def ticker() -> None:
        for _ in range(10):
            await kernel.sleep(1_000)

    kernel.observer = observe
    kernel.call_at(500, lambda: None)
    async with trio.open_nursery() as nursery:
        kernel.spawn(nursery, ticker, thread=SimThread(1, 1, "ticker"))
        await kernel.run()
        nursery.cancel_scope.cancel()
    assert seen[0] == (500, "call <lambda>()")
    assert seen[1] == (1_000, "wake ticker")
    assert seen[-1][0] == 3_000
    assert kernel.clock_ns == 2_000  # the event at 3 µs was not taken


async def test_stop_covers_work_done_ahead_of_the_clock():
    """After stop(), the kernel's clock is at least the time a task reached through work()."""
    kernel = Kernel()

    async def worker() -> None:
        kernel.work(7_000)
        kernel.stop()
        await kernel.sleep(1_000)

    async with trio.open_nursery() as nursery:
        kernel.spawn(nursery, worker, thread=SimThread(1, 1, "worker"))
        await kernel.run()
        nursery.cancel_scope.cancel()
    assert kernel.clock_ns == 7_000


async def test_no_observer_changes_nothing():
    """Without an observer the same program ends at the same time."""
    kernel = Kernel()

    async def sleeper() -> None:
        await kernel.sleep(5_000)

    async with trio.open_nursery() as nursery:
        kernel.spawn(nursery, sleeper, thread=SimThread(1, 1, "s"))
        await kernel.run()
    assert kernel.observer is None
    assert kernel.clock_ns == 5_000


def test_an_observer_does_not_change_the_trace(tmp_path):
    """A run with a do-nothing observer and binder hook writes the same trace byte for byte."""
    from nnemu import run
    from nnemu.scenario import load_scenario
    from nnemu.tracer import open_trace_writer
    from tests.unit.replay.helpers import QUICKSTART

    events: list[str] = []

    def attach(emulator) -> None:
        emulator.kernel.observer = lambda t, what: events.append(what)
        emulator.binder.on_call = events.append

    scenario = load_scenario(QUICKSTART)
    plain, observed = tmp_path / "plain.txt", tmp_path / "observed.txt"
    run(scenario, sinks=[open_trace_writer(plain)])
    run(scenario, sinks=[open_trace_writer(observed)], attach=attach)
    assert events
    assert plain.read_text() == observed.read_text()
