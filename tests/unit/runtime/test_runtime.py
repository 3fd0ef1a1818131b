"""The NDK runtime: discovery, argument checks, partitioning, CPU fallback, execution modes."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable

import pytest

from nnemu.driver import DriverService
from nnemu.hal import (
    DeviceStatus,
    ExecutionPreference,
    HalVersion,
    Model,
    OperationType,
    ResultCode,
    build_chain,
    build_preset,
)
from nnemu.replay import SectionStacks
from nnemu.runtime import CPU_DEVICE_NAME, Compilation, Execution, ModelBuilder, Runtime
from nnemu.scenario import DeviceSpec, PerformanceSpec, PerfSpec
from nnemu.sim import SimThread
from tests.worlds import RuntimeWorld

US = 1_000


def _perf(exec_time: float, power_usage: float = 1.0) -> PerformanceSpec:
    info = PerfSpec(exec_time=exec_time, power_usage=power_usage)
    return PerformanceSpec(float32=info, quant8=info, other=info)


def _conv_only() -> DeviceSpec:
    """A fast driver ("conv") that supports CONV_2D only: ``_chain``'s RELU needs another device."""
    return DeviceSpec(
        name="conv", performance=_perf(0.2), supported_operations=(OperationType.CONV_2D,)
    )


def _chain() -> Model:
    """CONV_2D → RELU → CONV_2D, float32."""
    return build_chain(
        [
            (OperationType.CONV_2D, (1, 8, 8, 4), (4, 3, 3, 3)),
            (OperationType.RELU, (1, 8, 8, 4), None),
            (OperationType.CONV_2D, (1, 8, 8, 4), (4, 3, 3, 4)),
        ],
        "float32",
    )


async def _model(runtime: Runtime, model: Model | None = None) -> ModelBuilder:
    code, builder = await runtime.create_model(model or build_preset("add", "float32", {}))
    assert code is ResultCode.NO_ERROR
    assert builder is not None
    return builder


async def _compile(
    runtime: Runtime,
    model: Model | None = None,
    devices: list[str] | None = None,
    preference: ExecutionPreference | None = None,
) -> tuple[ResultCode, Compilation]:
    builder = await _model(runtime, model)
    if devices is None:
        code, compilation = await Compilation.create(builder)
    else:
        by_name = {d.name: d for d in await runtime.get_devices()}
        code, compilation = await Compilation.create_for_devices(
            builder, [by_name[n] for n in devices]
        )
    assert code is ResultCode.NO_ERROR
    assert compilation is not None
    if preference is not None:
        assert compilation.set_preference(int(preference)) is ResultCode.NO_ERROR
    return await compilation.finish(), compilation


def _execution(compilation: Compilation) -> Execution:
    code, execution = Execution.create(compilation)
    assert code is ResultCode.NO_ERROR
    assert execution is not None
    assert execution.set_io() is ResultCode.NO_ERROR
    return execution


# ------------------------------------------------------------------ discovery


async def test_discovery_lists_drivers_then_reference_cpu(autojump_clock):
    """Discovery returns the drivers in registration order, then nnapi-reference last."""
    world = RuntimeWorld(
        DeviceSpec(name="npu", hal_version=HalVersion.V1_3, version_string="n1"),
        DeviceSpec(name="old", hal_version=HalVersion.V1_0),
    )
    seen: list[tuple[str, str, HalVersion, bool]] = []

    async def app(runtime: Runtime):
        for device in await runtime.get_devices():
            seen.append((device.name, device.version_string, device.hal_version, device.is_cpu))

    await world.run(app)
    assert seen == [
        ("npu", "n1", HalVersion.V1_3, False),
        ("old", "UNKNOWN", HalVersion.V1_0, False),
        (CPU_DEVICE_NAME, "1", HalVersion.V1_3, True),
    ]


async def test_discovery_drops_dead_driver(autojump_clock):
    """A driver that is dead at discovery is left out of the device list."""
    world = RuntimeWorld(DeviceSpec(name="a"), DeviceSpec(name="b"))
    world.service("a").endpoint.kill()
    names: list[str] = []

    async def app(runtime: Runtime):
        names.extend(d.name for d in await runtime.get_devices())

    await world.run(app)
    assert names == ["b", CPU_DEVICE_NAME]


# ------------------------------------------------------------------ argument checks


async def test_set_priority_accepts_only_ndk_values(autojump_clock):
    """setPriority takes 90/100/110 and returns BAD_DATA for 0, 89, 91, 99, 101, 109, 111."""
    world = RuntimeWorld(DeviceSpec(name="npu"))
    codes: dict[int, ResultCode] = {}

    async def app(runtime: Runtime):
        builder = await _model(runtime)
        _, compilation = await Compilation.create(builder)
        assert compilation is not None
        for value in (0, 89, 91, 99, 101, 109, 111, 90, 100, 110):
            codes[value] = compilation.set_priority(value)

    await world.run(app)
    bad = {v: ResultCode.BAD_DATA for v in (0, 89, 91, 99, 101, 109, 111)}
    good = {v: ResultCode.NO_ERROR for v in (90, 100, 110)}
    assert codes == bad | good


async def test_set_timeout_needs_single_device_compilation(autojump_clock):
    """setTimeout is BAD_DATA on Compilation_create and on a two-device createForDevices."""
    world = RuntimeWorld(DeviceSpec(name="a"), DeviceSpec(name="b"))
    codes: list[ResultCode] = []

    async def app_checked(runtime: Runtime):
        builder = await _model(runtime)
        devices = await runtime.get_devices()
        _, all_devices = await Compilation.create(builder)
        _, two = await Compilation.create_for_devices(builder, devices[:2])
        _, one = await Compilation.create_for_devices(builder, devices[:1])
        assert all_devices is not None
        assert two is not None
        assert one is not None
        codes.extend(c.set_timeout(1_000_000) for c in (all_devices, two, one))

    await world.run(app_checked)
    assert codes == [ResultCode.BAD_DATA, ResultCode.BAD_DATA, ResultCode.NO_ERROR]


async def test_execution_setters_after_start_are_bad_state(autojump_clock):
    """setTimeout/setMeasureTiming/setLoopTimeout after the execution started return BAD_STATE."""
    world = RuntimeWorld(DeviceSpec(name="npu"))
    codes: dict[str, ResultCode] = {}

    async def app(runtime: Runtime):
        finish, compilation = await _compile(runtime, devices=["npu"])
        assert finish is ResultCode.NO_ERROR
        codes["compilation_timeout_after_finish"] = compilation.set_timeout(1_000_000)
        codes["compilation_priority_after_finish"] = compilation.set_priority(110)
        execution = _execution(compilation)
        codes["compute"] = await execution.compute()
        codes["timeout"] = execution.set_timeout(1_000_000)
        codes["measure"] = execution.set_measure_timing(True)
        codes["loop"] = execution.set_loop_timeout(1_000_000)
        codes["again"] = await execution.compute()

    await world.run(app)
    assert codes == {
        "compilation_timeout_after_finish": ResultCode.BAD_STATE,
        "compilation_priority_after_finish": ResultCode.BAD_STATE,
        "compute": ResultCode.NO_ERROR,
        "timeout": ResultCode.BAD_STATE,
        "measure": ResultCode.BAD_STATE,
        "loop": ResultCode.BAD_STATE,
        "again": ResultCode.BAD_STATE,
    }


async def test_measure_timing_needs_single_device(autojump_clock):
    """setMeasureTiming is BAD_DATA on a Compilation_create compilation."""
    world = RuntimeWorld(DeviceSpec(name="npu"))
    codes: list[ResultCode] = []

    async def app(runtime: Runtime):
        _, compilation = await _compile(runtime)
        codes.append(_execution(compilation).set_measure_timing(True))

    await world.run(app)
    assert codes == [ResultCode.BAD_DATA]


# ------------------------------------------------------------------ partitioning


@pytest.mark.parametrize(
    ("preference", "expected"),
    [
        (ExecutionPreference.FAST_SINGLE_ANSWER, "fast"),
        (ExecutionPreference.SUSTAINED_SPEED, "fast"),
        (ExecutionPreference.LOW_POWER, "frugal"),
    ],
)
async def test_partitioning_picks_best_figure_for_preference(autojump_clock, preference, expected):
    """Each op goes to the device with the lowest execTime, or powerUsage under LOW_POWER."""
    world = RuntimeWorld(
        DeviceSpec(name="fast", performance=_perf(0.2, 0.9)),
        DeviceSpec(name="frugal", performance=_perf(0.5, 0.1)),
    )
    plans: list[list[tuple[str, tuple[int, ...]]]] = []

    async def app(runtime: Runtime):
        finish, compilation = await _compile(runtime, _chain(), preference=preference)
        assert finish is ResultCode.NO_ERROR
        plans.append([(s.device.name, s.operations) for s in compilation.steps])

    await world.run(app)
    assert plans == [[(expected, (0, 1, 2))]]


@pytest.mark.parametrize("exec_time", [1.0, 3.0])
async def test_partitioning_ties_and_slower_drivers_go_to_cpu(autojump_clock, exec_time):
    """A driver that is no faster than the CPU (ratio >= 1.0) loses every op to nnapi-reference."""
    world = RuntimeWorld(DeviceSpec(name="same", performance=_perf(exec_time)))
    plans: list[list[str]] = []

    async def app(runtime: Runtime):
        finish, compilation = await _compile(runtime, _chain())
        assert finish is ResultCode.NO_ERROR
        plans.append([s.device.name for s in compilation.steps])
        assert compilation.prepared == {}

    await world.run(app)
    assert plans == [[CPU_DEVICE_NAME]]


async def test_unsupported_ops_go_to_cpu_in_a_compound_plan(autojump_clock):
    """Ops a partial driver does not support run on the CPU, giving one step per device run."""
    world = RuntimeWorld(_conv_only())
    plans: list[list[tuple[str, tuple[int, ...]]]] = []
    codes: list[ResultCode] = []

    async def app(runtime: Runtime):
        finish, compilation = await _compile(runtime, _chain())
        assert finish is ResultCode.NO_ERROR
        plans.append([(s.device.name, s.operations) for s in compilation.steps])
        assert sorted(compilation.prepared) == [0, 2]
        codes.append(await _execution(compilation).compute())

    await world.run(app)
    assert plans == [[("conv", (0,)), (CPU_DEVICE_NAME, (1,)), ("conv", (2,))]]
    assert codes == [ResultCode.NO_ERROR]


async def test_create_for_devices_without_support_is_bad_data(autojump_clock):
    """createForDevices on a device that cannot run some op makes finish return BAD_DATA."""
    world = RuntimeWorld(_conv_only())
    codes: list[ResultCode] = []

    async def app(runtime: Runtime):
        finish, _ = await _compile(runtime, _chain(), devices=["conv"])
        codes.append(finish)

    await world.run(app)
    assert codes == [ResultCode.BAD_DATA]


# ------------------------------------------------------------------ fallback


async def test_dead_driver_at_finish_falls_back_to_cpu_with_compilation_create(autojump_clock):
    """A driver that died after discovery makes Compilation_create plan everything on the CPU."""
    world = RuntimeWorld(DeviceSpec(name="npu", performance=_perf(0.2)))
    results: list[object] = []

    async def app(runtime: Runtime):
        builder = await _model(runtime)
        _, compilation = await Compilation.create(builder)
        assert compilation is not None
        world.service("npu").endpoint.kill()
        results.append(await compilation.finish())
        results.append([s.device.name for s in compilation.steps])
        results.append(await _execution(compilation).compute())

    await world.run(app)
    assert results == [ResultCode.NO_ERROR, [CPU_DEVICE_NAME], ResultCode.NO_ERROR]


async def test_dead_explicit_device_at_finish_is_dead_object(autojump_clock):
    """A dead explicit device makes finish of a createForDevices compilation return DEAD_OBJECT."""
    world = RuntimeWorld(DeviceSpec(name="npu", performance=_perf(0.2)))
    results: list[ResultCode] = []

    async def app(runtime: Runtime):
        builder = await _model(runtime)
        npu = (await runtime.get_devices())[0]
        _, compilation = await Compilation.create_for_devices(builder, [npu])
        assert compilation is not None
        world.service("npu").endpoint.kill()
        results.append(await compilation.finish())

    await world.run(app)
    assert results == [ResultCode.DEAD_OBJECT]


def _break_after_supported_operations(service: DriverService, breaker: Callable[[], None]) -> None:
    """Make ``service`` answer getSupportedOperations normally, then run ``breaker``."""
    original = service.getSupportedOperations

    async def answer_then_break(model, version=HalVersion.V1_0):
        result = await original(model, version)
        breaker()
        return result

    service.getSupportedOperations = answer_then_break  # type: ignore[method-assign]


def _die_in_prepare(service: DriverService) -> None:
    """Make ``service`` die while serving prepareModel_1_3."""
    original = service.prepareModel_1_3

    async def die(*args, **kwargs):
        service.endpoint.kill()
        return await original(*args, **kwargs)

    service.prepareModel_1_3 = die  # type: ignore[method-assign]


@pytest.mark.parametrize(
    ("explicit", "expected", "steps"),
    [(True, ResultCode.DEAD_OBJECT, ["npu"]), (False, ResultCode.NO_ERROR, [CPU_DEVICE_NAME])],
    ids=["createForDevices", "create"],
)
async def test_driver_dying_in_prepare(autojump_clock, explicit, expected, steps):
    """A driver dying during prepare gives DEAD_OBJECT without fallback, a CPU plan with it."""
    world = RuntimeWorld(DeviceSpec(name="npu", performance=_perf(0.2)))
    _die_in_prepare(world.service("npu"))
    results: list[object] = []

    async def app(runtime: Runtime):
        finish, compilation = await _compile(runtime, devices=["npu"] if explicit else None)
        results.append(finish)
        results.append([s.device.name for s in compilation.steps])
        if finish is ResultCode.NO_ERROR:
            results.append(await _execution(compilation).compute())

    await world.run(app)
    assert results[:2] == [expected, steps]
    if not explicit:
        assert results[2] is ResultCode.NO_ERROR
        assert world.services[0].device.stats.executions == 0


@pytest.mark.parametrize(
    ("explicit", "expected", "steps"),
    [
        (True, ResultCode.UNAVAILABLE_DEVICE, ["npu"]),
        (False, ResultCode.NO_ERROR, [CPU_DEVICE_NAME]),
    ],
    ids=["createForDevices", "create"],
)
async def test_driver_going_offline_before_prepare(autojump_clock, explicit, expected, steps):
    """A prepare failing DEVICE_UNAVAILABLE is returned without fallback, replanned on CPU with it."""
    world = RuntimeWorld(DeviceSpec(name="npu", performance=_perf(0.2)))
    service = world.service("npu")
    _break_after_supported_operations(
        service, lambda: setattr(service, "status", DeviceStatus.OFFLINE)
    )
    results: list[object] = []

    async def app(runtime: Runtime):
        finish, compilation = await _compile(runtime, devices=["npu"] if explicit else None)
        results.append(finish)
        results.append([s.device.name for s in compilation.steps])

    await world.run(app)
    assert results == [expected, steps]


async def test_prepare_rejected_as_invalid_is_bad_data_without_fallback(autojump_clock):
    """A prepare notified INVALID_ARGUMENT makes finish return BAD_DATA even with fallback allowed."""
    world = RuntimeWorld(DeviceSpec(name="npu", performance=_perf(0.2)))
    service = world.service("npu")
    _break_after_supported_operations(service, lambda: setattr(service, "supported", frozenset()))
    results: list[ResultCode] = []

    async def app(runtime: Runtime):
        finish, _ = await _compile(runtime)
        results.append(finish)

    await world.run(app)
    assert results == [ResultCode.BAD_DATA]


@pytest.mark.parametrize("mode", ["sync", "async", "fenced"])
@pytest.mark.parametrize(
    ("explicit", "expected", "fell_back"),
    [(True, ResultCode.OP_FAILED, False), (False, ResultCode.NO_ERROR, True)],
    ids=["createForDevices", "create"],
)
async def test_execution_on_dead_driver(autojump_clock, mode, explicit, expected, fell_back):
    """A driver dying before an execution gives OP_FAILED without fallback, NO_ERROR with it."""
    world = RuntimeWorld(DeviceSpec(name="npu", performance=_perf(0.2)))
    results: list[object] = []

    async def app(runtime: Runtime):
        finish, compilation = await _compile(runtime, devices=["npu"] if explicit else None)
        assert finish is ResultCode.NO_ERROR
        assert [s.device.name for s in compilation.steps] == ["npu"]
        world.service("npu").endpoint.kill()
        execution = _execution(compilation)
        results.append(await _run_mode(execution, mode))
        results.append(execution.fell_back)

    await world.run(app)
    assert results == [expected, fell_back]


async def _run_mode(execution: Execution, mode: str) -> ResultCode:
    if mode == "sync":
        return await execution.compute()
    if mode == "async":
        code, event = await execution.start_compute()
    else:
        code, event = await execution.start_compute_with_dependencies(())
        if code is not ResultCode.NO_ERROR:  # a fenced failure comes back with no event
            assert event is None
            return code
    assert code is ResultCode.NO_ERROR
    assert event is not None
    return await event.wait()


@pytest.mark.parametrize("version", [HalVersion.V1_0, HalVersion.V1_2, HalVersion.V1_3])
async def test_modes_complete_with_the_same_result(autojump_clock, version):
    """compute, startCompute + wait and startComputeWithDependencies + wait all give NO_ERROR."""
    world = RuntimeWorld(DeviceSpec(name="npu", performance=_perf(0.2), hal_version=version))
    results: dict[str, ResultCode] = {}
    steps: list[list[str]] = []

    async def app(runtime: Runtime):
        finish, compilation = await _compile(runtime, devices=["npu"])
        assert finish is ResultCode.NO_ERROR
        steps.append([s.device.name for s in compilation.steps])
        for mode in ("sync", "async", "fenced"):
            results[mode] = await _run_mode(_execution(compilation), mode)

    await world.run(app)
    assert steps == [["npu"]]
    assert results == dict.fromkeys(("sync", "async", "fenced"), ResultCode.NO_ERROR)
    assert world.service("npu").device.stats.executions == 3


async def test_sync_compute_takes_exact_virtual_time(autojump_clock):
    """One compute() on a 1.3 driver costs API + request + 2 latencies + driver + device time."""
    world = RuntimeWorld(DeviceSpec(name="npu", performance=_perf(0.2)))
    took: list[int] = []

    async def app(runtime: Runtime):
        _, compilation = await _compile(runtime, devices=["npu"])
        execution = _execution(compilation)
        await runtime.kernel.sync()
        start = runtime.kernel.task_now_ns()
        assert await execution.compute() is ResultCode.NO_ERROR
        await runtime.kernel.sync()
        took.append(runtime.kernel.task_now_ns() - start)

    await world.run(app)
    # API 2 + request 3 (3 args) + IPC 50 + validate 2 + launch 20 + ADD 1 + IPC 50 + results 2 µs.
    assert took == [130 * US]


async def test_measured_duration_is_reported_in_ns(autojump_clock):
    """getDuration after a measured compute gives the driver's timing in ns; unmeasured is BAD_STATE."""
    world = RuntimeWorld(DeviceSpec(name="npu", performance=_perf(0.2)))
    results: list[tuple[ResultCode, int]] = []

    async def app(runtime: Runtime):
        _, compilation = await _compile(runtime, devices=["npu"])
        measured = _execution(compilation)
        assert measured.set_measure_timing(True) is ResultCode.NO_ERROR
        assert await measured.compute() is ResultCode.NO_ERROR
        results.append(measured.get_duration(0))
        results.append(measured.get_duration(1))
        unmeasured = _execution(compilation)
        assert await unmeasured.compute() is ResultCode.NO_ERROR
        results.append(unmeasured.get_duration(0))

    await world.run(app)
    assert results == [
        (ResultCode.NO_ERROR, 21 * US),
        (ResultCode.NO_ERROR, 23 * US),
        (ResultCode.BAD_STATE, 2**64 - 1),
    ]


async def test_compound_plan_on_dead_driver_reruns_failed_steps_on_cpu(autojump_clock):
    """In a compound plan each driver step that fails on a dead driver is rerun on the CPU."""
    world = RuntimeWorld(_conv_only())
    results: list[object] = []

    async def app(runtime: Runtime):
        finish, compilation = await _compile(runtime, _chain())
        assert finish is ResultCode.NO_ERROR
        assert len(compilation.steps) == 3
        world.service("conv").endpoint.kill()
        execution = _execution(compilation)
        results.append(await execution.compute())
        results.append(execution.fell_back)
        # Two driver steps rerun on the CPU plus the CPU step itself.
        results.append(runtime.cpu_stats.executions)

    await world.run(app)
    assert results == [ResultCode.NO_ERROR, True, 3]


async def test_ended_async_threads_are_not_kept(autojump_clock):
    """Each startCompute's thread is let go when it ends (by the process, the tracer and the
    stepper's sink), so a replay of millions of executions does not grow with them."""
    stacks = SectionStacks()
    world = RuntimeWorld(DeviceSpec(name="npu", performance=_perf(0.2)), sinks=[stacks])
    threads: list[weakref.ref[SimThread]] = []

    async def app(runtime: Runtime):
        finish, compilation = await _compile(runtime, devices=["npu"])
        assert finish is ResultCode.NO_ERROR
        for _ in range(3):
            code, event = await _execution(compilation).start_compute()
            assert code is ResultCode.NO_ERROR
            assert event is not None
            threads.append(weakref.ref(runtime.process.threads[-1]))
            assert await event.wait() is ResultCode.NO_ERROR

    await world.run(app)
    world.tracer.close()
    gc.collect()
    assert [t.name for t in world.process.threads if t.name.startswith("nn-async")] == []
    assert [ref() for ref in threads] == [None, None, None]
    assert stacks.open_calls() == []
