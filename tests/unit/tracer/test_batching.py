"""Batched delivery: a sink with ``receive`` sees exactly what a one-event-at-a-time sink sees."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
import trio

from nnemu import run
from nnemu.scenario import load_scenario
from nnemu.sim import Kernel, ProcessTable, SimThread, as_thread
from nnemu.tracer import (
    BATCH_EVENTS,
    FlowSink,
    Layer,
    Phase,
    TraceEvent,
    Tracer,
    mark,
    open_trace_writer,
)

SCENARIO = Path(__file__).parents[3] / "scenarios" / "two_apps_one_npu.yaml"

_Seen = tuple[int, int, int, str | None]


class _EventSink:
    """One call per event (the ``TraceSink`` protocol only)."""

    def __init__(self) -> None:
        self.seen: list[_Seen] = []

    def process(self, pid: int, name: str) -> None:
        pass

    def begin(self, ts_ns: int, thread: SimThread, name: str) -> None:
        self.seen.append((ts_ns, thread.pid, thread.tid, name))

    def end(self, ts_ns: int, thread: SimThread) -> None:
        self.seen.append((ts_ns, thread.pid, thread.tid, None))

    def close(self) -> None:
        pass


class _BatchSink(_EventSink):
    """Takes batches; ``begin``/``end`` must not be called."""

    def __init__(self) -> None:
        super().__init__()
        self.batches = 0
        self.announced_after: list[int] = []

    def process(self, pid: int, name: str) -> None:
        self.announced_after.append(len(self.seen))

    def receive(self, events: Sequence[TraceEvent]) -> None:
        self.batches += 1
        for ts, thread, name, _ in events:
            self.seen.append((ts, thread.pid, thread.tid, name))

    def begin(self, ts_ns: int, thread: SimThread, name: str) -> None:
        raise AssertionError("a batch sink got a begin call")

    def end(self, ts_ns: int, thread: SimThread) -> None:
        raise AssertionError("a batch sink got an end call")


def test_batch_sink_sees_the_events_of_an_event_sink_in_the_same_order():
    """Two apps on one NPU, run once per kind of sink: the same marks, times and order."""
    scenario = load_scenario(SCENARIO)
    one_by_one, batched = _EventSink(), _BatchSink()
    run(scenario, sinks=[one_by_one])
    run(scenario, sinks=[batched])
    assert len(one_by_one.seen) > BATCH_EVENTS
    assert batched.seen == one_by_one.seen
    assert 1 < batched.batches < len(batched.seen) // 100
    times = [ts for ts, *_ in batched.seen]
    assert times == sorted(times)


def test_systrace_file_is_the_same_batched_or_not(tmp_path: Path):
    """The HTML written in batches equals the one written with a non-batch sink beside it."""
    scenario = load_scenario(SCENARIO)
    run(scenario, sinks=[open_trace_writer(tmp_path / "batched.html")])
    run(scenario, sinks=[open_trace_writer(tmp_path / "one.html"), _EventSink()])
    batched = (tmp_path / "batched.html").read_bytes()
    assert batched.count(b"tracing_mark_write") > BATCH_EVENTS
    assert batched == (tmp_path / "one.html").read_bytes()


class _OneByOne:
    """A flow sink without ``receive``: passes each event to ``writer`` as its own call."""

    def __init__(self, writer: FlowSink) -> None:
        self.writer = writer

    def process(self, pid: int, name: str) -> None:
        self.writer.process(pid, name)

    def begin(self, ts_ns: int, thread: SimThread, name: str) -> None:
        self.writer.begin(ts_ns, thread, name)

    def end(self, ts_ns: int, thread: SimThread) -> None:
        self.writer.end(ts_ns, thread)

    def flow(self, ts_ns: int, thread: SimThread, flow_id: int, terminating: bool) -> None:
        self.writer.flow(ts_ns, thread, flow_id, terminating)

    def counter(self, ts_ns: int, pid: int, name: str, value: int) -> None:
        self.writer.counter(ts_ns, pid, name, value)

    def close(self) -> None:
        self.writer.close()


@pytest.mark.parametrize("suffix", [".pftrace", ".json"])
def test_flow_writer_file_is_the_same_batched_or_one_call_per_event(tmp_path: Path, suffix: str):
    """A Perfetto or JSON trace, flows and counters included, is the same written in batches
    as written one ``begin``/``end``/``flow``/``counter`` call per event (the tracer keeps
    which flow an event is and whether it ends there, and so does each writer's ``flow``)."""
    scenario = load_scenario(SCENARIO)
    run(scenario, sinks=[open_trace_writer(tmp_path / f"batched{suffix}")])
    writer = open_trace_writer(tmp_path / f"one{suffix}")
    assert isinstance(writer, FlowSink)
    run(scenario, sinks=[_OneByOne(writer)])
    batched = (tmp_path / f"batched{suffix}").read_bytes()
    if suffix == ".json":  # (flows that start and end, counters: all three kinds are there)
        assert b'"ph": "s"' in batched
        assert b'"ph": "f"' in batched
        assert b'"ph": "C"' in batched
    assert batched == (tmp_path / f"one{suffix}").read_bytes()


async def test_marks_ahead_of_the_clock_wait_for_it_and_process_comes_after_earlier_marks(
    autojump_clock,
):
    """A mark written after CPU work is held until the clock passes it; ``process`` releases first."""
    kernel = Kernel()
    sink = _BatchSink()
    tracer = Tracer(kernel, [sink])
    thread = ProcessTable().spawn("app", 10001).main_thread

    async def task() -> None:
        with tracer.section(mark(Layer.RUNTIME, Phase.EXECUTION, "a")):
            kernel.work(5_000)  # the task's clock runs 5 µs ahead of the kernel's
        tracer.process(4242, "late")  # the B at 0 is due, the E at 5 µs is not
        await kernel.sleep(10_000)
        tracer.process(4343, "later")

    async with trio.open_nursery() as nursery:
        kernel.spawn(nursery, task, thread=thread)
        await kernel.run()
        nursery.cancel_scope.cancel()
    tracer.close()
    assert sink.seen == [
        (0, thread.pid, thread.tid, "[NN_LR_PE]a"),
        (5_000, thread.pid, thread.tid, None),
    ]
    assert sink.announced_after == [1, 2]


async def test_an_event_sink_gets_a_blocks_end_as_soon_as_the_block_exits(autojump_clock):
    """With a sink that takes events one by one, a block's E (and a switch's B) reach it at
    once, not at the next begin."""
    kernel = Kernel()
    sink = _EventSink()
    tracer = Tracer(kernel, [sink])
    thread = ProcessTable().spawn("app", 10001).main_thread
    seen_after: list[int] = []

    async def task() -> None:
        with tracer.section(mark(Layer.RUNTIME, Phase.EXECUTION, "a")) as section:
            await kernel.sleep(2_000)
            section.switch(mark(Layer.RUNTIME, Phase.RESULTS, "a"))
            seen_after.append(len(sink.seen))
            await kernel.sleep(3_000)
        seen_after.append(len(sink.seen))

    async with trio.open_nursery() as nursery:
        kernel.spawn(nursery, task, thread=thread)
        await kernel.run()
        nursery.cancel_scope.cancel()
    tracer.close()
    assert seen_after == [2, 4]
    assert [(ts, name) for ts, _, _, name in sink.seen] == [
        (0, "[NN_LR_PE]a"),
        (2_000, "[SW][NN_LR_PR]a"),
        (5_000, None),
        (5_000, None),
    ]


@pytest.mark.parametrize("sink_type", [_BatchSink, _EventSink])
async def test_a_mark_earlier_than_those_held_reaches_the_sink_before_them(
    autojump_clock, sink_type: type[_EventSink]
):
    """Marks a task wrote ahead of the clock come after the earlier ones another task writes
    next, and marks at one time keep the order they were written in (begins, switches, ends)."""
    kernel = Kernel()
    sink = sink_type()
    tracer = Tracer(kernel, [sink])
    table = ProcessTable()
    ahead = table.spawn("ahead", 10001).main_thread
    behind = table.spawn("behind", 10002).main_thread
    a, b = mark(Layer.RUNTIME, Phase.EXECUTION, "a"), mark(Layer.DRIVER, Phase.EXECUTION, "b")

    async def run_ahead() -> None:
        kernel.work(5_000)  # this task's marks are 5 µs ahead of the kernel's clock
        with tracer.section(a) as section:
            section.switch(b)
            section.switch(a)
        with tracer.section(b, work_ns=1_000):
            pass
        await kernel.sleep(1_000)

    async def run_behind() -> None:
        with tracer.section(b) as section:
            section.switch(a)
            kernel.work(5_000)

    async with trio.open_nursery() as nursery:
        kernel.spawn(nursery, run_ahead, thread=ahead)
        kernel.spawn(nursery, run_behind, thread=behind)
        await kernel.run()
        nursery.cancel_scope.cancel()
    tracer.close()
    assert [(ts, tid, name) for ts, _, tid, name in sink.seen] == [
        (0, behind.tid, "[NN_LD_PE]b"),
        (0, behind.tid, "[SW][NN_LR_PE]a"),
        (5_000, ahead.tid, "[NN_LR_PE]a"),
        (5_000, ahead.tid, "[SW][NN_LD_PE]b"),
        (5_000, ahead.tid, "[SW][NN_LR_PE]a"),
        (5_000, ahead.tid, None),
        (5_000, ahead.tid, None),
        (5_000, ahead.tid, None),
        (5_000, ahead.tid, "[NN_LD_PE]b"),
        (5_000, behind.tid, None),
        (5_000, behind.tid, None),
        (6_000, ahead.tid, None),
    ]


@pytest.mark.parametrize("sink_type", [_BatchSink, _EventSink])
async def test_a_mark_from_a_kernel_callback_keeps_its_place_among_a_tasks_marks_ahead(
    autojump_clock, sink_type: type[_EventSink]
):
    """A kernel callback runs with the task that gave the baton up as the running one: its
    mark, at the clock's time, still goes before the marks that task wrote ahead of it."""
    kernel = Kernel()
    sink = sink_type()
    tracer = Tracer(kernel, [sink])
    table = ProcessTable()
    ahead = table.spawn("ahead", 10001).main_thread
    binder = table.spawn("binder", 10002).main_thread
    a, b = mark(Layer.RUNTIME, Phase.EXECUTION, "a"), mark(Layer.IPC, Phase.EXECUTION, "b")

    def arrived() -> None:
        with as_thread(binder), tracer.section(b):
            pass

    async def run_ahead() -> None:
        kernel.call_at(1_000, arrived)
        kernel.work(5_000)  # this task's marks are 5 µs ahead of the kernel's clock
        with tracer.section(a):
            pass
        await kernel.sleep(1_000)  # gives the baton up; ``arrived`` runs at 1 µs

    async with trio.open_nursery() as nursery:
        kernel.spawn(nursery, run_ahead, thread=ahead)
        await kernel.run()
        nursery.cancel_scope.cancel()
    tracer.close()
    assert [(ts, tid, name) for ts, _, tid, name in sink.seen] == [
        (1_000, binder.tid, "[NN_LI_PE]b"),
        (1_000, binder.tid, None),
        (5_000, ahead.tid, "[NN_LR_PE]a"),
        (5_000, ahead.tid, None),
    ]
