"""The scoped trace section: leaving the block ends what it opened."""

from __future__ import annotations

import pytest
import trio

from nnemu.sim import Kernel, ProcessTable
from nnemu.tracer import Layer, Phase, SectionKind, Tracer, mark
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
        with tracer.section(Layer.CPU, Phase.TRANSFORMATION, "run") as section:
            await kernel.sleep(10 * US)
            section.switch(Layer.CPU, Phase.COMPUTATION, "run")
            await kernel.sleep(20 * US)
            section.switch(Layer.CPU, Phase.RESULTS, "run")
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
            tracer.section(Layer.RUNTIME, Phase.EXECUTION, "outer"),
            tracer.raw_section("HIDL::IDevice::getStatus::client"),
        ):
            await kernel.sleep(7 * US)
            raise ValueError("bad")
        with tracer.subtract_section(Layer.RUNTIME, Phase.COMPILATION, "sub"):
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
        with tracer.section(Layer.CPU, Phase.TRANSFORMATION, "run") as section:
            tracer.add_observer(late)
            section.switch(Layer.CPU, Phase.COMPUTATION, "run")
            await kernel.sleep(5 * US)
        with tracer.section(Layer.CPU, Phase.RESULTS, "after"):
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


async def _marks_and_infos(prebuilt: bool) -> tuple[list[tuple], list[tuple]]:
    """The sink's events and an observer's infos of one body, with or without prebuilt marks."""
    io_mark = mark(Layer.DRIVER, Phase.INPUTS_AND_OUTPUTS, "d")
    exe_mark = mark(Layer.DRIVER, Phase.EXECUTION, "d")
    ndk_mark = mark(Layer.RUNTIME, Phase.EXECUTION, "ANeuralNetworksExecution_compute")
    observer = _InfoObserver()

    async def body(kernel: Kernel, tracer: Tracer) -> None:
        tracer.add_observer(observer)
        if prebuilt:
            tracer.begin_mark(ndk_mark)
        else:
            tracer.begin(Layer.RUNTIME, Phase.EXECUTION, "ANeuralNetworksExecution_compute")
        kernel.work(4 * US)  # marks ahead of the kernel's clock carry the task's time
        opened = (
            tracer.enter(exe_mark)
            if prebuilt
            else tracer.section(Layer.DRIVER, Phase.EXECUTION, "d")
        )
        with opened as section:
            kernel.work(2 * US)
            if prebuilt:
                section.switch_to(io_mark)
            else:
                section.switch(Layer.DRIVER, Phase.INPUTS_AND_OUTPUTS, "d")
            await kernel.sleep(10 * US)
        tracer.end()

    sink = await _run_on_a_thread(body)
    return sink.events, observer.infos


async def test_prebuilt_marks_write_what_the_named_calls_write(autojump_clock):
    """``enter``/``switch_to``/``begin_mark`` give sinks and observers the same events as
    ``section``/``switch``/``begin`` with the same layer, phase and detail."""
    events, infos = await _marks_and_infos(prebuilt=True)
    assert (events, infos) == await _marks_and_infos(prebuilt=False)
    assert [e[3] if e[0] == "B" else "E" for e in events] == [
        "[NN_LR_PE]ANeuralNetworksExecution_compute",
        "[NN_LD_PE]d",
        "[SW][NN_LD_PIO]d",
        "E",
        "E",
        "E",
    ]
    assert infos[2] == (6 * US, (SectionKind.SWITCH, Layer.DRIVER, Phase.INPUTS_AND_OUTPUTS, "d"))
    assert mark(Layer.DRIVER, Phase.EXECUTION, "d") is mark(Layer.DRIVER, Phase.EXECUTION, "d")


async def test_a_section_ended_by_an_outer_end_writes_nothing_more(autojump_clock):
    """Once ``end`` has closed a block's section, the block's switch and exit write nothing,
    and the next block on the thread (handed the same level again) marks as usual."""
    outer = mark(Layer.RUNTIME, Phase.EXECUTION, "a")
    switched = mark(Layer.RUNTIME, Phase.RESULTS, "a")

    async def body(kernel: Kernel, tracer: Tracer) -> None:
        with tracer.enter(outer) as section:
            await kernel.sleep(1 * US)
            tracer.end()
            section.switch_to(switched)
            await kernel.sleep(1 * US)
        with tracer.enter(outer) as again:
            again.switch_to(switched)
            await kernel.sleep(1 * US)

    sink = await _run_on_a_thread(body)
    assert _shape(sink) == [
        ("B", 0, "[NN_LR_PE]a"),
        ("E", 1 * US, ""),
        ("B", 2 * US, "[NN_LR_PE]a"),
        ("B", 2 * US, "[SW][NN_LR_PR]a"),
        ("E", 3 * US, ""),
        ("E", 3 * US, ""),
    ]


async def _calls(one_call: bool, observed: bool) -> tuple[list[tuple], list[tuple], list[int]]:
    """Sink events, observer infos and the task's times of NDK-like calls and two switches,
    as one call each or long-hand."""
    call = mark(Layer.RUNTIME, Phase.EXECUTION, "ANeuralNetworksExecution_compute")
    io = mark(Layer.RUNTIME, Phase.INPUTS_AND_OUTPUTS, "ANeuralNetworksExecution_setInput")
    observer = _InfoObserver()
    times: list[int] = []

    async def body(kernel: Kernel, tracer: Tracer) -> None:
        if observed:
            tracer.add_observer(observer)
        if one_call:
            tracer.span(io, 2 * US, 2)
            tracer.span(io, 2 * US, 0)
            section = tracer.enter_call(call, 3 * US)
        else:
            for _ in range(2):
                with tracer.enter(io):
                    kernel.work(2 * US)
            section = tracer.enter(call)
            kernel.work(3 * US)
        times.append(kernel.task_now_ns())
        with section:
            await kernel.sleep(1 * US)
            if one_call:
                section.switch_through(io, call)
                tracer.span(io, 1 * US)
            else:
                section.switch_to(io)
                section.switch_to(call)
                with tracer.enter(io):
                    kernel.work(1 * US)
        times.append(kernel.task_now_ns())

    sink = await _run_on_a_thread(body)
    return sink.events, observer.infos, times


@pytest.mark.parametrize("observed", [False, True])
async def test_span_and_enter_call_write_what_enter_and_work_write(autojump_clock, observed):
    """``span``, ``enter_call`` and ``switch_through`` give sinks and observers the marks, and
    the task the CPU time, of ``enter`` blocks with ``Kernel.work`` inside and of two
    ``switch_to``, batched or not."""
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


async def test_span_and_enter_call_charge_the_time_while_tracing_is_off(autojump_clock):
    """With tracing off, ``span`` and ``enter_call`` write nothing but still charge the task's CPU time."""
    kernel = Kernel()
    tracer = Tracer(kernel, [])
    thread = ProcessTable().spawn("app", 10001).main_thread
    times: list[int] = []
    call = mark(Layer.RUNTIME, Phase.EXECUTION, "ANeuralNetworksExecution_free")

    async def task() -> None:
        tracer.span(call, 2 * US, 3)
        with tracer.enter_call(call, 5 * US):
            times.append(kernel.task_now_ns())

    async with trio.open_nursery() as nursery:
        kernel.spawn(nursery, task, thread=thread)
        await kernel.run()
        nursery.cancel_scope.cancel()
    assert times == [11 * US]
