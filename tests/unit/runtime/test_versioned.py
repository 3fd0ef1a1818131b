"""The runtime's NDK call blocks and its versioned IPreparedModel: which marks, which HIDL method."""

from __future__ import annotations

import pytest

from nnemu.hal import HalVersion, ResultCode, build_preset
from nnemu.runtime import API_CALL_NS, Burst, Compilation, Execution, Runtime
from nnemu.scenario import DeviceSpec
from nnemu.sim import SimThread
from nnemu.tracer import SectionInfo
from tests.worlds import V10, V11, V12, V13, RuntimeWorld

OK = ResultCode.NO_ERROR


class _Marks:
    """A trace observer that keeps (B|E, virtual ts, name) of the app's main thread."""

    def __init__(self) -> None:
        self.events: list[tuple[str, int, str]] = []

    def process(self, pid: int, name: str) -> None:
        pass

    def begin(self, ts_ns: int, thread: SimThread, info: SectionInfo) -> None:
        if thread.name == "app":
            self.events.append(("B", ts_ns, info[3]))

    def end(self, ts_ns: int, thread: SimThread) -> None:
        if thread.name == "app":
            self.events.append(("E", ts_ns, ""))

    def close(self) -> None:
        pass


async def _compiled(runtime: Runtime, device: str) -> Compilation:
    _, builder = await runtime.create_model(build_preset("add"))
    assert builder is not None
    devices = [d for d in await runtime.get_devices() if d.name == device]
    _, compilation = await Compilation.create_for_devices(builder, devices)
    assert compilation is not None
    assert await compilation.finish() is OK
    return compilation


async def test_a_rejected_ndk_call_is_charged_and_its_section_ends(autojump_clock):
    """An NDK function that returns early with an error still spends the API cost inside its one section."""
    world = RuntimeWorld(DeviceSpec(name="npu"))
    marks = _Marks()
    world.tracer.add_observer(marks)
    seen: list[tuple[ResultCode, int]] = []
    starts: list[int] = []

    async def app(runtime: Runtime):
        compilation = await _compiled(runtime, "npu")
        await runtime.kernel.sync()
        marks.events.clear()
        start = runtime.kernel.task_now_ns()
        code = compilation.set_preference(99)  # finished: BAD_STATE before the value is read
        await runtime.kernel.sync()
        seen.append((code, runtime.kernel.task_now_ns() - start))
        starts.append(start)

    await world.run(app)
    world.tracer.close()  # deliver the marks still held for ordering
    marks.events = [(kind, ts - starts[0], name) for kind, ts, name in marks.events]
    assert seen == [(ResultCode.BAD_STATE, API_CALL_NS)]
    assert marks.events == [
        ("B", 0, "ANeuralNetworksCompilation_setPreference"),
        ("E", API_CALL_NS, ""),
    ]


@pytest.mark.parametrize(
    ("version", "fenced", "method"),
    [
        (V10, False, "execute"),
        (V11, True, "execute"),
        (V12, False, "executeSynchronously"),
        (V12, True, "executeSynchronously"),
        (V13, False, "executeSynchronously_1_3"),
        (V13, True, "executeFenced"),
    ],
)
async def test_each_hal_version_is_executed_through_its_newest_method(
    autojump_clock, version: HalVersion, fenced: bool, method: str
):
    """compute and startComputeWithDependencies reach the driver through the method its HAL version has."""
    world = RuntimeWorld(DeviceSpec(name="npu", hal_version=version))
    calls: list[str] = []
    results: list[ResultCode] = []

    async def app(runtime: Runtime):
        compilation = await _compiled(runtime, "npu")
        _, execution = Execution.create(compilation)
        assert execution is not None
        world.binder.on_call = calls.append
        if fenced:
            code, event = await execution.start_compute_with_dependencies(())
            assert event is not None
            results.extend([code, await event.wait()])
        else:
            results.append(await execution.compute())
        world.binder.on_call = None

    await world.run(app)
    assert results == [OK] * len(results)
    assert [c for c in calls if c.startswith("HIDL::IPreparedModel::")] == [
        f"HIDL::IPreparedModel::{method}"
    ]


async def test_a_pre_1_2_driver_gets_no_burst_context(autojump_clock):
    """Burst_create calls configureExecutionBurst only on HAL 1.2+ drivers; a 1.1 step runs normally."""
    world = RuntimeWorld(DeviceSpec(name="old", hal_version=V11), DeviceSpec(name="new"))
    contexts: dict[str, list[int]] = {}
    configured: dict[str, int] = {}

    async def app(runtime: Runtime):
        for device in ("old", "new"):
            compilation = await _compiled(runtime, device)
            calls: list[str] = []
            world.binder.on_call = calls.append
            code, burst = await Burst.create(compilation)
            world.binder.on_call = None
            configured[device] = calls.count("HIDL::IPreparedModel::configureExecutionBurst")
            assert code is OK
            assert burst is not None
            contexts[device] = sorted(burst.contexts)
            _, execution = Execution.create(compilation)
            assert execution is not None
            assert await execution.burst_compute(burst) is OK

    await world.run(app)
    assert contexts == {"old": [], "new": [0]}
    assert configured == {"old": 0, "new": 1}
