"""The scoped trace section: leaving the block ends what it opened."""

from __future__ import annotations

import pytest
import trio

from nnemu.sim import Kernel, ProcessTable
from nnemu.tracer import Layer, Phase, SectionKind, Tracer, mark, raw_mark
from tests.unit.ipc.test_binder import RecordingSink

US = 1_000


async def _run_on_a_thread(body) -> RecordingSink:
    """Run ``body(kernel, tracer)`` on an emulated thread; return what the sink saw."""
    kernel = Kernel()
    sink = RecordingSink()
    tracer = Tracer(kernel, [sink])
    thread = ProcessTable().spawn("app", 10001).main_thread

    async def task() -> None:
        await body(kernel, tracer)

    async with trio.open_nursery() as nursery:
        kernel.spawn(nursery, task, thread=thread)
        await kernel.run()
        nursery.cancel_scope.cancel()
    tracer.close()
    return sink


def _shape(sink: RecordingSink) -> list[tuple]:
    return _shape_of(sink.events)


def _shape_of(events: list[tuple]) -> list[tuple]:
    return [(e[0], e[1], e[3] if e[0] == "B" else "") for e in events]


async def test_section_with_switches_ends_every_mark_it_opened(autojump_clock):
    """A section with two phase switches writes one E per B when its block exits."""

    async def body(kernel: Kernel, tracer: Tracer) -> None:
        with tracer.section(mark(Layer.CPU, Phase.TRANSFORMATION, "run")) as section:
            await kernel.sleep(10 * US)
            section.switch(mark(Layer.CPU, Phase.COMPUTATION, "run"))
            await kernel.sleep(20 * US)
            section.switch(mark(Layer.CPU, Phase.RESULTS, "run"))
            await kernel.sleep(5 * US)
        await kernel.sleep(1 * US)

    sink = await _run_on_a_thread(body)
    assert _shape(sink) == [
        ("B", 0, "[NN_LC_PTR]run"),
        ("B", 10 * US, "[SW][NN_LC_PCO]run"),
        ("B", 30 * US, "[SW][NN_LC_PR]run"),
        ("E", 35 * US, ""),
        ("E", 35 * US, ""),
        ("E", 35 * US, ""),
    ]


async def test_section_ends_when_its_block_raises(autojump_clock):
    """An exception leaving nested sections still closes them, innermost first, at that time."""

    async def body(kernel: Kernel, tracer: Tracer) -> None:
        with (  # noqa: PT012 - the raise must happen inside the sections
            pytest.raises(ValueError, match="bad"),
            tracer.section(mark(Layer.RUNTIME, Phase.EXECUTION, "outer")),
            tracer.section(raw_mark("HIDL::IDevice::getStatus::client")),
        ):
            await kernel.sleep(7 * US)
            raise ValueError("bad")
        with tracer.section(mark(Layer.RUNTIME, Phase.COMPILATION, "sub", subtract=True)):
            await kernel.sleep(3 * US)

    sink = await _run_on_a_thread(body)
    assert _shape(sink) == [
        ("B", 0, "[NN_LR_PE]outer"),
        ("B", 0, "HIDL::IDevice::getStatus::client"),
        ("E", 7 * US, ""),
        ("E", 7 * US, ""),
        ("B", 7 * US, "[SUB][NN_LR_PC]sub"),
        ("E", 10 * US, ""),
    ]


async def test_section_opened_untraced_stays_unmarked_when_tracing_starts(autojump_clock):
    """A block opened while tracing is off writes no [SW] or E after an observer arrives."""
    kernel = Kernel()
    tracer = Tracer(kernel)
    late = RecordingSink()
    thread = ProcessTable().spawn("app", 10001).main_thread

    async def task() -> None:
        with tracer.section(mark(Layer.CPU, Phase.TRANSFORMATION, "run")) as section:
            tracer.add_observer(late)
            section.switch(mark(Layer.CPU, Phase.COMPUTATION, "run"))
            await kernel.sleep(5 * US)
        with tracer.section(mark(Layer.CPU, Phase.RESULTS, "after")):
            await kernel.sleep(1 * US)

    async with trio.open_nursery() as nursery:
        kernel.spawn(nursery, task, thread=thread)
        await kernel.run()
        nursery.cancel_scope.cancel()
    tracer.close()
    assert [(e[0], e[1]) for e in late.events] == [("B", 5 * US), ("E", 6 * US)]


class _InfoObserver:
    """A TraceObserver that keeps each begin's structured information."""

    def __init__(self) -> None:
        self.infos: list[tuple] = []

    def process(self, pid: int, name: str) -> None:
        pass

    def begin(self, ts_ns: int, thread: object, info: tuple) -> None:
        self.infos.append((ts_ns, info))

    def end(self, ts_ns: int, thread: object) -> None:
        self.infos.append((ts_ns, None))

    def close(self) -> None:
        pass


async def test_observers_get_each_marks_kind_layer_and_phase(autojump_clock):
    """A plain, a subtract, a raw section and a switch reach the sink by name and an observer
    with their kind, layer, phase and detail (AOSP ``NNTRACE_FULL``, ``_SUBTRACT``, ``_SWITCH``
    and a bare ``ScopedTrace``)."""
    observer = _InfoObserver()
    io_mark = mark(Layer.DRIVER, Phase.INPUTS_AND_OUTPUTS, "d")

    async def body(kernel: Kernel, tracer: Tracer) -> None:
        tracer.add_observer(observer)
        with tracer.section(mark(Layer.DRIVER, Phase.EXECUTION, "d")) as section:
            kernel.work(2 * US)  # marks ahead of the kernel's clock carry the task's time
            section.switch(io_mark)
            with (
                tracer.section(mark(Layer.RUNTIME, Phase.COMPILATION, "s", subtract=True)),
                tracer.section(raw_mark("HIDL::IDevice::execute::client")),
            ):
                await kernel.sleep(10 * US)

    sink = await _run_on_a_thread(body)
    assert [e[3] if e[0] == "B" else "E" for e in sink.events] == [
        "[NN_LD_PE]d",
        "[SW][NN_LD_PIO]d",
        "[SUB][NN_LR_PC]s",
        "HIDL::IDevice::execute::client",
        "E",
        "E",
        "E",
        "E",
    ]
    assert observer.infos[:4] == [
        (0, (SectionKind.PLAIN, Layer.DRIVER, Phase.EXECUTION, "d")),
        (2 * US, (SectionKind.SWITCH, Layer.DRIVER, Phase.INPUTS_AND_OUTPUTS, "d")),
        (2 * US, (SectionKind.SUBTRACT, Layer.RUNTIME, Phase.COMPILATION, "s")),
        (2 * US, (SectionKind.RAW, None, None, "HIDL::IDevice::execute::client")),
    ]
    assert mark(Layer.DRIVER, Phase.EXECUTION, "d") is mark(Layer.DRIVER, Phase.EXECUTION, "d")


async def test_a_section_ended_by_an_outer_exit_writes_nothing_more(autojump_clock):
    """Once an outer section's exit has closed an inner one (a block held across callbacks,
    as a oneway stub's), the inner's switch and exit write nothing, and the next block on
    the thread (handed the same level again) marks as usual."""
    outer = mark(Layer.RUNTIME, Phase.EXECUTION, "a")
    switched = mark(Layer.RUNTIME, Phase.RESULTS, "a")

    async def body(kernel: Kernel, tracer: Tracer) -> None:
        held = tracer.section(outer)
        with tracer.section(outer) as section:
            await kernel.sleep(1 * US)
            held.__exit__(None, None, None)
            section.switch(switched)
            await kernel.sleep(1 * US)
        with tracer.section(outer) as again:
            again.switch(switched)
            await kernel.sleep(1 * US)

    sink = await _run_on_a_thread(body)
    assert _shape(sink) == [
        ("B", 0, "[NN_LR_PE]a"),
        ("B", 0, "[NN_LR_PE]a"),
        ("E", 1 * US, ""),
        ("E", 1 * US, ""),
        ("B", 2 * US, "[NN_LR_PE]a"),
        ("B", 2 * US, "[SW][NN_LR_PR]a"),
        ("E", 3 * US, ""),
        ("E", 3 * US, ""),
    ]


async def _calls(one_call: bool, observed: bool) -> tuple[list[tuple], list[tuple], list[int]]:
    """Sink events, observer infos and the task's times of NDK-like calls and two switches,
    with the CPU time passed to the tracer or charged long-hand."""
    call = mark(Layer.RUNTIME, Phase.EXECUTION, "ANeuralNetworksExecution_compute")
    io = mark(Layer.RUNTIME, Phase.INPUTS_AND_OUTPUTS, "ANeuralNetworksExecution_setInput")
    observer = _InfoObserver()
    times: list[int] = []

    async def body(kernel: Kernel, tracer: Tracer) -> None:
        if observed:
            tracer.add_observer(observer)
        if one_call:
            for _ in range(2):
                with tracer.section(io, work_ns=2 * US):
                    pass
            section = tracer.section(call, work_ns=3 * US)
        else:
            for _ in range(2):
                with tracer.section(io):
                    kernel.work(2 * US)
            section = tracer.section(call)
            kernel.work(3 * US)
        times.append(kernel.task_now_ns())
        with section:
            await kernel.sleep(1 * US)
            section.switch(io)
            section.switch(call)
            if one_call:
                with tracer.section(io, work_ns=1 * US):
                    pass
            else:
                with tracer.section(io):
                    kernel.work(1 * US)
        times.append(kernel.task_now_ns())

    sink = await _run_on_a_thread(body)
    return sink.events, observer.infos, times


@pytest.mark.parametrize("observed", [False, True])
async def test_work_ns_writes_what_a_block_with_work_inside_writes(autojump_clock, observed):
    """``section(mark, work_ns=...)`` gives sinks and observers the marks, and the task the CPU
    time, of a ``section`` block with ``Kernel.work`` inside, batched or not."""
    events, infos, times = await _calls(one_call=True, observed=observed)
    assert (events, infos, times) == await _calls(one_call=False, observed=observed)
    assert _shape_of(events) == [
        ("B", 0, "[NN_LR_PIO]ANeuralNetworksExecution_setInput"),
        ("E", 2 * US, ""),
        ("B", 2 * US, "[NN_LR_PIO]ANeuralNetworksExecution_setInput"),
        ("E", 4 * US, ""),
        ("B", 4 * US, "[NN_LR_PE]ANeuralNetworksExecution_compute"),
        ("B", 8 * US, "[SW][NN_LR_PIO]ANeuralNetworksExecution_setInput"),
        ("B", 8 * US, "[SW][NN_LR_PE]ANeuralNetworksExecution_compute"),
        ("B", 8 * US, "[NN_LR_PIO]ANeuralNetworksExecution_setInput"),
        ("E", 9 * US, ""),
        ("E", 9 * US, ""),
        ("E", 9 * US, ""),
        ("E", 9 * US, ""),
    ]
    assert times == [7 * US, 9 * US]
    assert len(infos) == (12 if observed else 0)


async def test_work_ns_is_charged_while_tracing_is_off(autojump_clock):
    """With tracing off, ``section(mark, work_ns=...)`` writes nothing but still charges the
    task's CPU time."""
    kernel = Kernel()
    tracer = Tracer(kernel, [])
    thread = ProcessTable().spawn("app", 10001).main_thread
    times: list[int] = []
    call = mark(Layer.RUNTIME, Phase.EXECUTION, "ANeuralNetworksExecution_free")

    async def task() -> None:
        for _ in range(3):
            with tracer.section(call, work_ns=2 * US):
                pass
        with tracer.section(call, work_ns=5 * US):
            times.append(kernel.task_now_ns())

    async with trio.open_nursery() as nursery:
        kernel.spawn(nursery, task, thread=thread)
        await kernel.run()
        nursery.cancel_scope.cancel()
    assert times == [11 * US]
