"""CTS TestValidation (runtime/test/TestValidation.cpp) result codes, against the emulated runtime.

The NDK rules are docs/hal-semantics.md §3: setPriority takes only 90/100/110; timeouts and
timing need a single-device ``createForDevices`` compilation; setters after the execution
started are BAD_STATE; getDuration is BAD_STATE + UINT64_MAX until a measured execution
finished; setLoopTimeout above 15 s is clamped. Cases that involve a driver run for each
HAL version of the (single) driver device.
"""

from __future__ import annotations

import attrs
import pytest

from nnemu.driver import PreparedModel
from nnemu.hal import (
    LOOP_TIMEOUT_MAXIMUM_NS,
    UINT64_MAX,
    ResultCode,
    build_preset,
)
from nnemu.runtime import CPU_DEVICE_NAME, Compilation, Execution
from nnemu.scenario import DeviceSpec
from tests.conformance._harness import MS, V10, V11, V13, VERSIONS, model

BAD_DATA, BAD_STATE, OK = ResultCode.BAD_DATA, ResultCode.BAD_STATE, ResultCode.NO_ERROR
MISSED = (ResultCode.MISSED_DEADLINE_TRANSIENT, ResultCode.MISSED_DEADLINE_PERSISTENT)
MODES = ["compute", "startCompute", "startComputeWithDependencies"]


def _hal_id(version) -> str:
    return f"hal{version.value}"


async def _builder(runtime, m=None):
    code, builder = await runtime.create_model(m or model("add_float32"))
    assert code is OK
    return builder


async def _single(runtime, name="npu", m=None):
    """A createForDevices compilation for the one device ``name`` (not finished)."""
    builder = await _builder(runtime, m)
    by_name = {d.name: d for d in await runtime.get_devices()}
    code, compilation = await Compilation.create_for_devices(builder, [by_name[name]])
    assert code is OK
    return compilation


def _execution(compilation) -> Execution:
    code, execution = Execution.create(compilation)
    assert code is OK
    assert execution.set_io() is OK
    return execution


async def _run(execution, mode: str) -> ResultCode:
    """Run ``execution`` in ``mode`` to completion and return the app-visible code."""
    if mode == "compute":
        return await execution.compute()
    if mode == "startCompute":
        code, event = await execution.start_compute()
    else:
        code, event = await execution.start_compute_with_dependencies([])
    if code is not OK:
        return code
    return await event.wait()


# ------------------------------------------------------------------ setPriority


@pytest.mark.parametrize("value", [0, 89, 91, 99, 101, 109, 111])
async def test_TestValidation_setPriority_bad_values(autojump_clock, runtime_world, value):
    """CTS: Compilation_setPriority with a value other than 90/100/110 is BAD_DATA (both creation paths)."""
    world = runtime_world(DeviceSpec(name="npu"))
    codes: list[ResultCode] = []

    async def app(runtime):
        builder = await _builder(runtime)
        _, everywhere = await Compilation.create(builder)
        codes.append(everywhere.set_priority(value))
        codes.append((await _single(runtime)).set_priority(value))

    await world.run(app)
    assert codes == [BAD_DATA, BAD_DATA]


@pytest.mark.parametrize("value", [90, 100, 110])
async def test_TestValidation_setPriority_good_values(autojump_clock, runtime_world, value):
    """CTS: Compilation_setPriority accepts LOW/MEDIUM/HIGH (90/100/110) and the compilation finishes."""
    world = runtime_world(DeviceSpec(name="npu"))
    codes: list[ResultCode] = []

    async def app(runtime):
        compilation = await _single(runtime)
        codes.append(compilation.set_priority(value))
        codes.append(await compilation.finish())

    await world.run(app)
    assert codes == [OK, OK]


# ------------------------------------------------------------------ setTimeout


async def test_TestValidation_setTimeout_not_single_device(autojump_clock, runtime_world):
    """CTS: Compilation_setTimeout and Execution_setTimeout are BAD_DATA unless createForDevices had exactly one device."""
    world = runtime_world(DeviceSpec(name="a"), DeviceSpec(name="b"))
    codes: dict[str, ResultCode] = {}

    async def app(runtime):
        builder = await _builder(runtime)
        devices = await runtime.get_devices()
        _, everywhere = await Compilation.create(builder)
        _, two = await Compilation.create_for_devices(builder, devices[:2])
        codes["compilation_create"] = everywhere.set_timeout(MS)
        codes["compilation_two_devices"] = two.set_timeout(MS)
        for name, compilation in (("create", everywhere), ("two_devices", two)):
            assert await compilation.finish() is OK
            codes[f"execution_{name}"] = _execution(compilation).set_timeout(MS)

    await world.run(app)
    assert codes == {
        "compilation_create": BAD_DATA,
        "compilation_two_devices": BAD_DATA,
        "execution_create": BAD_DATA,
        "execution_two_devices": BAD_DATA,
    }


@pytest.mark.parametrize("timeout_ns", [1, 1_000], ids=["1ns", "1us"])
@pytest.mark.parametrize("version", VERSIONS, ids=_hal_id)
async def test_TestValidation_setTimeout_short(autojump_clock, runtime_world, version, timeout_ns):
    """CTS: one device and a short timeout: finish and every execution mode give NO_ERROR or MISSED_DEADLINE_*."""
    world = runtime_world(DeviceSpec(name="npu", hal_version=version))
    codes: list[ResultCode] = []

    async def app(runtime):
        compilation = await _single(runtime)
        assert compilation.set_timeout(timeout_ns) is OK
        codes.append(await compilation.finish())
        unbounded = await _single(runtime)
        assert await unbounded.finish() is OK
        for mode in MODES:
            execution = _execution(unbounded)
            assert execution.set_timeout(timeout_ns) is OK
            codes.append(await _run(execution, mode))

    await world.run(app)
    assert len(codes) == 1 + len(MODES)
    assert all(code in (OK, *MISSED) for code in codes), codes


@pytest.mark.parametrize("version", VERSIONS, ids=_hal_id)
async def test_TestValidation_setTimeout_huge(autojump_clock, runtime_world, version):
    """CTS: a timeout of UINT64_MAX ns never expires: finish and every execution mode give NO_ERROR."""
    world = runtime_world(DeviceSpec(name="npu", hal_version=version))
    codes: list[ResultCode] = []

    async def app(runtime):
        compilation = await _single(runtime)
        assert compilation.set_timeout(UINT64_MAX) is OK
        codes.append(await compilation.finish())
        for mode in MODES:
            execution = _execution(compilation)
            assert execution.set_timeout(UINT64_MAX) is OK
            codes.append(await _run(execution, mode))

    await world.run(app)
    assert codes == [OK] * (1 + len(MODES))


# ------------------------------------------------------------------ setters after start


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("version", VERSIONS, ids=_hal_id)
async def test_TestValidation_setters_after_start(autojump_clock, runtime_world, version, mode):
    """CTS: setTimeout, setMeasureTiming and setLoopTimeout once the execution started are BAD_STATE, before and after it finished."""
    world = runtime_world(DeviceSpec(name="npu", hal_version=version))
    codes: list[ResultCode] = []

    def setters(execution) -> list[ResultCode]:
        return [
            execution.set_timeout(MS),
            execution.set_measure_timing(True),
            execution.set_loop_timeout(MS),
        ]

    async def app(runtime):
        compilation = await _single(runtime)
        assert await compilation.finish() is OK
        execution = _execution(compilation)
        if mode == "compute":
            assert await execution.compute() is OK
        else:
            if mode == "startCompute":
                code, event = await execution.start_compute()
            else:
                code, event = await execution.start_compute_with_dependencies([])
            assert code is OK
            codes.extend(setters(execution))  # started, not necessarily finished
            assert await event.wait() is OK
        codes.extend(setters(execution))

    await world.run(app)
    assert codes == [BAD_STATE] * (3 if mode == "compute" else 6)


# ------------------------------------------------------------------ getDuration


@pytest.mark.parametrize("version", VERSIONS, ids=_hal_id)
async def test_TestValidation_getDuration_before_finish_and_unmeasured(
    autojump_clock, runtime_world, version
):
    """CTS: getDuration before the execution finished, or after an unmeasured one, is BAD_STATE with UINT64_MAX, for every duration code."""
    world = runtime_world(DeviceSpec(name="npu", hal_version=version))
    answers: dict[str, list[tuple[ResultCode, int]]] = {}

    async def app(runtime):
        compilation = await _single(runtime)
        assert await compilation.finish() is OK
        measured = _execution(compilation)
        assert measured.set_measure_timing(True) is OK
        answers["not_started"] = [measured.get_duration(c) for c in range(4)]
        code, event = await measured.start_compute()
        assert code is OK
        answers["running"] = [measured.get_duration(c) for c in range(4)]
        assert await event.wait() is OK
        unmeasured = _execution(compilation)
        assert await unmeasured.compute() is OK
        answers["unmeasured"] = [unmeasured.get_duration(c) for c in range(4)]

    await world.run(app)
    expected = [(BAD_STATE, UINT64_MAX)] * 4
    assert answers == {"not_started": expected, "running": expected, "unmeasured": expected}


# ------------------------------------------------------------------ setLoopTimeout


async def test_TestValidation_setLoopTimeout_clamped(autojump_clock, runtime_world, monkeypatch):
    """CTS: setLoopTimeout above 15 s is accepted and clamped: the 1.3 driver receives LoopTimeoutDurationNs::MAXIMUM."""
    world = runtime_world(DeviceSpec(name="npu", hal_version=V13))
    seen: list[int | None] = []
    original = PreparedModel.executeSynchronously_1_3

    async def spy(self, request, measure, deadline_ns, loop_timeout_ns):
        seen.append(loop_timeout_ns)
        return await original(self, request, measure, deadline_ns, loop_timeout_ns)

    monkeypatch.setattr(PreparedModel, "executeSynchronously_1_3", spy)
    codes: list[ResultCode] = []

    async def app(runtime):
        compilation = await _single(runtime)
        assert await compilation.finish() is OK
        execution = _execution(compilation)
        codes.append(execution.set_loop_timeout(20_000_000_000))
        codes.append(await execution.compute())

    await world.run(app)
    assert codes == [OK, OK]
    assert seen == [LOOP_TIMEOUT_MAXIMUM_NS]


# ------------------------------------------------------------------ loop timeout via the NDK

LOOP_MODEL = ("while_loop", "float32", {"iterations": 2_000, "body_size": 256})


@pytest.mark.parametrize("device", ["npu", CPU_DEVICE_NAME])
async def test_ControlFlowTest_loop_timeout_missed_deadline(autojump_clock, runtime_world, device):
    """CTS: a WHILE loop outliving setLoopTimeout(1 ms) ends MISSED_DEADLINE_* (1.3 driver or the runtime's CPU executor)."""
    world = runtime_world(DeviceSpec(name="npu", hal_version=V13))
    codes: list[ResultCode] = []

    async def app(runtime):
        compilation = await _single(runtime, device, build_preset(*LOOP_MODEL))
        assert await compilation.finish() is OK
        execution = _execution(compilation)
        assert execution.set_loop_timeout(MS) is OK
        codes.append(await execution.compute())
        control = _execution(compilation)
        codes.append(await control.compute())

    await world.run(app)
    [timed_out, control] = codes
    assert control is OK
    assert timed_out in MISSED


# ------------------------------------------------------------------ fenced execution


def _unspecified_output(m):
    """``m`` with its first output's first dimension unknown (0)."""
    main = m.main
    index = main.output_indexes[0]
    operands = list(main.operands)
    dims = operands[index].dimensions
    operands[index] = attrs.evolve(operands[index], dimensions=(0, *dims[1:]))
    return attrs.evolve(m, main=attrs.evolve(main, operands=tuple(operands)))


async def test_TestValidation_FencedExecution_failed_dependency(autojump_clock, runtime_world):
    """CTS FencedExecution / NeuralNetworks.cpp startComputeWithDependencies: an event without a
    sync fence is only waited for, so a dependency that failed does not fail the execution."""
    world = runtime_world(DeviceSpec(name="npu", hal_version=V13))
    codes: list[ResultCode] = []

    async def app(runtime):
        compilation = await _single(runtime)
        assert await compilation.finish() is OK
        failing = _execution(compilation)
        assert failing.set_timeout(1) is OK  # past before the driver starts
        code, failed = await failing.start_compute()
        assert code is OK
        codes.append(await failed.wait())
        code, event = await _execution(compilation).start_compute_with_dependencies([failed])
        codes.append(code)
        codes.append(await event.wait())

    await world.run(app)
    [dependency, start, wait] = codes
    assert dependency in MISSED
    assert (start, wait) == (OK, OK)


async def test_TestValidation_FencedExecution_duration_needs_one_device(
    autojump_clock, runtime_world
):
    """ExecutionBuilder.cpp computeFenced: a non-zero duration is BAD_DATA unless the compilation was
    made by createForDevices for exactly one device (no event); zero is fine everywhere."""
    world = runtime_world(DeviceSpec(name="a", hal_version=V13), DeviceSpec(name="b"))
    codes: dict[str, tuple[ResultCode, bool]] = {}

    async def app(runtime):
        builder = await _builder(runtime)
        devices = await runtime.get_devices()
        _, everywhere = await Compilation.create(builder)
        _, two = await Compilation.create_for_devices(builder, devices[:2])
        one = await _single(runtime, "a")
        for name, compilation in (("create", everywhere), ("two", two), ("one", one)):
            assert await compilation.finish() is OK
            for duration in (0, 10 * MS):
                code, event = await _execution(compilation).start_compute_with_dependencies(
                    [], duration
                )
                codes[f"{name}_{duration}"] = (code, event is not None)

    await world.run(app)
    assert codes == {
        "create_0": (OK, True),
        "create_10000000": (BAD_DATA, False),
        "two_0": (OK, True),
        "two_10000000": (BAD_DATA, False),
        "one_0": (OK, True),
        "one_10000000": (OK, True),
    }


@pytest.mark.parametrize("version", VERSIONS, ids=_hal_id)
async def test_TestValidation_FencedExecution_outputs_fully_specified(
    autojump_clock, runtime_world, version
):
    """ExecutionBuilder.cpp computeFenced: an output whose dimensions are not fully specified is
    BAD_DATA before the execution starts (no event; it can still be computed, but not by a
    1.0/1.1 driver, whose validateRequest refuses it: BAD_DATA without fallback)."""
    world = runtime_world(DeviceSpec(name="npu", hal_version=version))
    codes: list[object] = []

    async def app(runtime):
        m = _unspecified_output(model("add_float32"))
        compilation = await _single(runtime, m=m)
        assert await compilation.finish() is OK
        execution = _execution(compilation)
        code, event = await execution.start_compute_with_dependencies([])
        codes.append((code, event))
        codes.append(await execution.compute())

    await world.run(app)
    assert codes == [(BAD_DATA, None), BAD_DATA if version in (V10, V11) else OK]


@pytest.mark.parametrize("mode", MODES)
async def test_TestValidation_ExecutionUsability_fenced_again(autojump_clock, runtime_world, mode):
    """CTS ExecutionUsability: startComputeWithDependencies on an execution already started (in any
    mode) is BAD_STATE, with no event."""
    world = runtime_world(DeviceSpec(name="npu", hal_version=V13))
    codes: list[object] = []

    async def app(runtime):
        compilation = await _single(runtime)
        assert await compilation.finish() is OK
        execution = _execution(compilation)
        assert await _run(execution, mode) is OK
        codes.append(await execution.start_compute_with_dependencies([]))

    await world.run(app)
    assert codes == [(BAD_STATE, None)]


# ------------------------------------------------------------------ setters and getDuration


async def test_TestValidation_setters_one_device_before_started(autojump_clock, runtime_world):
    """ExecutionBuilder.cpp setTimeoutDuration / setMeasureTiming: the one-device rule (BAD_DATA) is
    checked before the started state (BAD_STATE), so a started Compilation_create execution is
    BAD_DATA; a single-device one BAD_STATE."""
    world = runtime_world(DeviceSpec(name="npu"))
    codes: dict[str, list[ResultCode]] = {}

    async def app(runtime):
        _, everywhere = await Compilation.create(await _builder(runtime))
        single = await _single(runtime)
        for name, compilation in (("create", everywhere), ("single", single)):
            assert await compilation.finish() is OK
            execution = _execution(compilation)
            assert await execution.compute() is OK
            codes[name] = [execution.set_timeout(MS), execution.set_measure_timing(True)]

    await world.run(app)
    assert codes == {"create": [BAD_DATA, BAD_DATA], "single": [BAD_STATE, BAD_STATE]}


@pytest.mark.parametrize("code", [-1, 4, 5])
async def test_TestValidation_getDuration_bad_code(autojump_clock, runtime_world, code):
    """CTS ValidationTestCompilationForDevices_1.ExecutionTiming: a duration code outside
    ON_HARDWARE..FENCED_IN_DRIVER is BAD_DATA, even after a measured execution."""
    world = runtime_world(DeviceSpec(name="npu", hal_version=V13))
    answers: list[tuple[ResultCode, int]] = []

    async def app(runtime):
        compilation = await _single(runtime)
        assert await compilation.finish() is OK
        execution = _execution(compilation)
        assert execution.set_measure_timing(True) is OK
        assert await execution.compute() is OK
        answers.append(execution.get_duration(code))
        answers.append(execution.get_duration(0))

    await world.run(app)
    [bad, good] = answers
    assert bad == (BAD_DATA, UINT64_MAX)
    assert good[0] is OK
