"""CTS TestExecution, TestIntrospectionControl (TimingTest) and TestPartitioningRandom-style
fallback cases, against the emulated runtime.

The R runtime's rules are docs/hal-semantics.md §3: a driver's execution error reaches the
app as its result code in every mode, and ``startComputeWithDependencies`` returns it
itself with no event (``ExecutionBuilder::computeFenced``); with ``Compilation_create`` a
failed driver step falls back to the CPU, partially (that step) in the other modes and
wholly in the fenced one (``startComputeFenced``), a driver's ``MISSED_DEADLINE_*``
included; the FENCED_* durations are timed from the input fences signalling.

A forced execution status stands for AOSP's ``TestPreparedModel*`` (which skips the work
and answers ``mErrorStatus``): every execution path of the emulated driver (async, sync,
fenced, burst) runs ``PreparedModel.compute``, which the tests replace.
"""

from __future__ import annotations

import random

import pytest

from nnemu.driver import PreparedModel
from nnemu.hal import (
    UINT64_MAX,
    ErrorStatus,
    OperationType,
    ResultCode,
    build_chain,
    build_preset,
)
from nnemu.runtime import CPU_DEVICE_NAME, Burst, Compilation, Execution
from nnemu.scenario import DeviceSpec, FaultKind, FaultSpec, PerformanceSpec, PerfSpec
from tests.conformance._harness import MS, V10, V11, V12, V13, VERSIONS

OK = ResultCode.NO_ERROR
MODES = ["startCompute", "compute", "burstCompute", "computeWithDependencies"]

FORCED = [
    (ErrorStatus.NONE, ResultCode.NO_ERROR),
    (ErrorStatus.DEVICE_UNAVAILABLE, ResultCode.UNAVAILABLE_DEVICE),
    (ErrorStatus.GENERAL_FAILURE, ResultCode.OP_FAILED),
    (ErrorStatus.INVALID_ARGUMENT, ResultCode.BAD_DATA),
]
"""TestExecution.cpp ``kTestValues`` but OUTPUT_INSUFFICIENT_SIZE (below)."""


def _perf(exec_time: float) -> PerformanceSpec:
    info = PerfSpec(exec_time=exec_time, power_usage=1.0)
    return PerformanceSpec(float32=info, quant8=info, other=info, if_=info, while_=info)


def _hal_id(version) -> str:
    return f"hal{version.value}"


def _force(monkeypatch, status: ErrorStatus) -> None:
    """Every execution of every prepared model answers ``status`` (NONE: runs normally)."""
    if status is ErrorStatus.NONE:
        return
    original = PreparedModel.compute

    async def forced(self, deadline_ns, loop_timeout_ns):
        await original(self, deadline_ns, loop_timeout_ns)  # the work still takes its time
        return status, 0

    monkeypatch.setattr(PreparedModel, "compute", forced)


async def _compilation(runtime, m, names=None) -> Compilation:
    """A finished compilation of ``m``: for the devices ``names``, else Compilation_create."""
    code, builder = await runtime.create_model(m)
    assert code is OK
    if names is None:
        code, compilation = await Compilation.create(builder)
    else:
        by_name = {d.name: d for d in await runtime.get_devices()}
        code, compilation = await Compilation.create_for_devices(
            builder, [by_name[n] for n in names]
        )
    assert code is OK
    assert await compilation.finish() is OK
    return compilation


def _execution(compilation: Compilation) -> Execution:
    code, execution = Execution.create(compilation)
    assert code is OK
    assert execution.set_io() is OK
    return execution


async def _run(execution: Execution, mode: str) -> tuple[ResultCode, ResultCode | None]:
    """(the code the mode's own call returns, the event's code or None without an event)."""
    if mode == "compute":
        return await execution.compute(), None
    if mode == "burstCompute":
        code, burst = await Burst.create(execution.compilation)
        assert code is OK
        return await execution.burst_compute(burst), None
    if mode == "startCompute":
        code, event = await execution.start_compute()
    else:
        code, event = await execution.start_compute_with_dependencies([])
    return code, None if event is None else await event.wait()


# ------------------------------------------------------------------ TestExecution


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("forced", "expected"), FORCED, ids=[f[0].name for f in FORCED])
@pytest.mark.parametrize("version", VERSIONS, ids=_hal_id)
async def test_ExecutionTest_Wait(
    autojump_clock, runtime_world, monkeypatch, version, forced, expected, mode
):
    """CTS TestExecution.cpp ExecutionTest10/11/12/13.Wait: a driver's execution status reaches the
    app as its code in every mode; startComputeWithDependencies returns it itself, with no event."""
    world = runtime_world(DeviceSpec(name="npu", hal_version=version))
    _force(monkeypatch, forced)
    results: list[tuple[ResultCode, ResultCode | None]] = []

    async def app(runtime):
        compilation = await _compilation(runtime, build_preset("add", "float32", {}), ["npu"])
        results.append(await _run(_execution(compilation), mode))

    await world.run(app)
    if mode == "startCompute":
        assert results == [(OK, expected)]
    elif mode == "computeWithDependencies":
        assert results == [(expected, OK if expected is OK else None)]
    else:
        assert results == [(expected, None)]


@pytest.mark.parametrize("mode", ["startCompute", "compute", "burstCompute"])
@pytest.mark.parametrize("version", [V12, V13], ids=_hal_id)
async def test_ExecutionTest_Wait_output_insufficient_size(
    autojump_clock, runtime_world, monkeypatch, version, mode
):
    """CTS TestExecution.cpp ExecutionTest12/13.Wait (OUTPUT_INSUFFICIENT_SIZE): the status reaches
    the app unchanged from executeSynchronously* and bursts, never retried (the fenced mode does
    not support it; ExecutionTest10/11 skip it, see the next test), even with
    Compilation_create."""
    world = runtime_world(DeviceSpec(name="npu", hal_version=version, performance=_perf(0.5)))
    _force(monkeypatch, ErrorStatus.OUTPUT_INSUFFICIENT_SIZE)
    results: list[tuple[ResultCode, ResultCode | None]] = []

    async def app(runtime):
        compilation = await _compilation(runtime, build_preset("add", "float32", {}))
        assert [s.device.name for s in compilation.steps] == ["npu"]
        results.append(await _run(_execution(compilation), mode))

    await world.run(app)
    insufficient = ResultCode.OUTPUT_INSUFFICIENT_SIZE
    assert results == [(OK, insufficient) if mode == "startCompute" else (insufficient, None)]


@pytest.mark.parametrize(
    ("version", "expected"),
    [(V10, ResultCode.OP_FAILED), (V12, ResultCode.BAD_DATA)],
    ids=["callback-hal1.0", "sync-hal1.2"],
)
async def test_Callbacks_result_checks(
    autojump_clock, runtime_world, monkeypatch, version, expected
):
    """Callbacks.cpp ExecutionCallback::notifyInternal vs Utils.cpp getExecutionResult: a callback
    notified OUTPUT_INSUFFICIENT_SIZE without shapes is GENERAL_FAILURE (OP_FAILED); a synchronous
    answer of INVALID_ARGUMENT with shapes keeps its status (BAD_DATA), the shapes dropped."""
    world = runtime_world(DeviceSpec(name="npu", hal_version=version))
    if version is V10:
        _force(monkeypatch, ErrorStatus.OUTPUT_INSUFFICIENT_SIZE)
    else:
        original = PreparedModel._execute_sync

        async def with_shapes(self, request, measure, deadline_ns, loop_timeout_ns, hal):
            _, _, timing = await original(self, request, measure, deadline_ns, loop_timeout_ns, hal)
            return ErrorStatus.INVALID_ARGUMENT, self.output_shapes(), timing

        monkeypatch.setattr(PreparedModel, "_execute_sync", with_shapes)
    codes: list[ResultCode] = []

    async def app(runtime):
        compilation = await _compilation(runtime, build_preset("add", "float32", {}), ["npu"])
        codes.append(await _execution(compilation).compute())

    await world.run(app)
    assert codes == [expected]


# ------------------------------------------------------------------ TimingTest

TIMING_MODES = ["startCompute", "compute", "burstCompute", "computeWithDependencies"]


@pytest.mark.parametrize("mode", TIMING_MODES)
@pytest.mark.parametrize("kind", ["NEW", "OLD", "CPU"])
async def test_TimingTest_pass(autojump_clock, runtime_world, kind, mode):
    """CTS TestIntrospectionControl.cpp TimingTest (PASS_*): after a measured execution every
    duration code is NO_ERROR; an OLD (1.1) driver reports none, the CPU none or 0; a NEW (1.3)
    driver's FENCED_* durations equal the others except in a fenced execution, where they run
    from the fences signalling (less driver time, the same device time)."""
    version = V11 if kind == "OLD" else V13
    world = runtime_world(DeviceSpec(name="npu", hal_version=version))
    durations: list[tuple[ResultCode, int]] = []

    async def app(runtime):
        device = CPU_DEVICE_NAME if kind == "CPU" else "npu"
        compilation = await _compilation(runtime, build_preset("add", "float32", {}), [device])
        execution = _execution(compilation)
        assert execution.set_measure_timing(True) is OK
        code, event_code = await _run(execution, mode)
        assert (code, event_code) in ((OK, None), (OK, OK))
        durations.extend(execution.get_duration(c) for c in range(4))

    await world.run(app)
    assert [code for code, _ in durations] == [OK] * 4
    on_hw, in_driver, on_hw_fenced, in_driver_fenced = (value for _, value in durations)
    if kind == "OLD":
        assert {on_hw, in_driver, on_hw_fenced, in_driver_fenced} == {UINT64_MAX}
    elif kind == "CPU":
        assert {on_hw, in_driver, on_hw_fenced, in_driver_fenced} <= {0, UINT64_MAX}
    else:
        assert 0 < on_hw <= in_driver < UINT64_MAX
        assert on_hw_fenced == on_hw
        if mode == "computeWithDependencies":
            assert on_hw_fenced <= in_driver_fenced < in_driver
        else:
            assert in_driver_fenced == in_driver


@pytest.mark.parametrize("mode", TIMING_MODES)
@pytest.mark.parametrize("kind", ["NEW", "OLD"])
async def test_TimingTest_fail_launch(autojump_clock, runtime_world, monkeypatch, kind, mode):
    """CTS TestIntrospectionControl.cpp TimingTest (FAIL_LAUNCH): the execution fails (a fenced one
    at startComputeWithDependencies, with no event) and every duration code is BAD_STATE."""
    world = runtime_world(DeviceSpec(name="npu", hal_version=V11 if kind == "OLD" else V13))
    _force(monkeypatch, ErrorStatus.GENERAL_FAILURE)
    results: list[object] = []

    async def app(runtime):
        compilation = await _compilation(runtime, build_preset("add", "float32", {}), ["npu"])
        execution = _execution(compilation)
        assert execution.set_measure_timing(True) is OK
        results.append(await _run(execution, mode))
        results.append([execution.get_duration(c) for c in range(4)])

    await world.run(app)
    outcome, durations = results
    failed = ResultCode.OP_FAILED
    expected = {"startCompute": (OK, failed), "computeWithDependencies": (failed, None)}
    assert outcome == expected.get(mode, (failed, None))
    assert durations == [(ResultCode.BAD_STATE, UINT64_MAX)] * 4


# ------------------------------------------------------------------ fallback

CONV = OperationType.CONV_2D
CHAIN_TYPES = [CONV, OperationType.RELU, OperationType.LOGISTIC, OperationType.TANH]


def _random_chain(rng: random.Random):
    """A float32 chain of 2-6 layers (CONV_2D, RELU, LOGISTIC, TANH) on 1x8x8x4 tensors."""
    layers = []
    for _ in range(rng.randint(2, 6)):
        op = rng.choice(CHAIN_TYPES)
        layers.append((op, (1, 8, 8, 4), (4, 3, 3, 4) if op is CONV else None))
    first_op, shape, _ = layers[0]
    if first_op is CONV:
        layers[0] = (first_op, shape, (4, 3, 3, 4))
    return build_chain(layers, "float32")


def _random_devices(rng: random.Random) -> list[DeviceSpec]:
    """1-3 fast drivers of random HAL versions, each supporting a random subset of CHAIN_TYPES."""
    devices = []
    for n in range(rng.randint(1, 3)):
        supported = tuple(t for t in CHAIN_TYPES if rng.random() < 0.6) or (CONV,)
        devices.append(
            DeviceSpec(
                name=f"d{n}",
                hal_version=rng.choice(VERSIONS),
                supported_operations=supported,
                performance=_perf(0.1 + 0.2 * n),
            )
        )
    return devices


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("seed", range(6))
async def test_TestPartitioningRandom_fallback_completes(
    autojump_clock, runtime_world, monkeypatch, seed, mode
):
    """TestPartitioningRandom-style: a random chain partitioned over random partial drivers, every
    driver failing its executions, still completes with Compilation_create (CPU fallback), in
    every mode; the fenced mode reruns the whole model on the CPU once (cpuFallbackFull), the
    others rerun each failed step (cpuFallbackPartial)."""
    rng = random.Random(seed)
    m = _random_chain(rng)
    world = runtime_world(*_random_devices(rng))
    _force(monkeypatch, ErrorStatus.GENERAL_FAILURE)
    results: list[object] = []

    async def app(runtime):
        compilation = await _compilation(runtime, m)
        steps = [s.device.is_cpu for s in compilation.steps]
        execution = _execution(compilation)
        before = runtime.cpu_stats.executions
        results.append(await _run(execution, mode))
        results.append(execution.fell_back)
        results.append((steps, runtime.cpu_stats.executions - before))

    await world.run(app)
    outcome, fell_back, (steps, cpu_runs) = results
    expected = {"startCompute": (OK, OK), "computeWithDependencies": (OK, OK)}
    assert outcome == expected.get(mode, (OK, None))
    assert fell_back is (not all(steps))
    if all(steps):
        assert cpu_runs == 1
    elif mode == "computeWithDependencies":
        # The CPU steps before the first driver step, then the whole model once.
        assert cpu_runs == steps.index(False) + 1
    else:
        assert cpu_runs == len(steps)  # each failed driver step and each CPU step once


class _FallbackSections:
    """A trace observer that keeps the names of the CPU fallback sections (cpuFallback*).

    (An observer, not a patched ``Tracer.section``: a wheel's compiled Tracer has no
    attributes to patch.)"""

    def __init__(self, names: list[str]) -> None:
        self.names = names

    def process(self, pid: int, name: str) -> None:
        pass

    def begin(self, ts_ns: int, thread: object, info: tuple[object, ...]) -> None:
        detail = info[3]
        if isinstance(detail, str) and detail.startswith("cpuFallback"):
            self.names.append(detail)

    def end(self, ts_ns: int, thread: object) -> None:
        pass

    def close(self) -> None:
        pass


@pytest.mark.parametrize("mode", ["compute", "computeWithDependencies"])
async def test_ExecutionBuilder_fenced_fallback_is_full(
    autojump_clock, runtime_world, monkeypatch, mode
):
    """ExecutionBuilder.cpp startComputeFenced vs asyncStartComputePartitioned: after a driver step
    of a compound plan fails, a fenced execution runs the whole model on the CPU
    (cpuFallbackFull), a synchronous one reruns the step (cpuFallbackPartial)."""
    world = runtime_world(
        DeviceSpec(
            name="conv",
            performance=_perf(0.2),
            supported_operations=(CONV,),
        )
    )
    _force(monkeypatch, ErrorStatus.GENERAL_FAILURE)
    m = build_chain([(CONV, (1, 8, 8, 4), (4, 3, 3, 3)), (OperationType.RELU, (1, 8, 8, 4), None)])
    sections: list[str] = []
    results: list[object] = []

    async def app(runtime):
        compilation = await _compilation(runtime, m)
        assert [s.device.name for s in compilation.steps] == ["conv", CPU_DEVICE_NAME]
        runtime.tracer.add_observer(_FallbackSections(sections))
        before = runtime.cpu_stats.executions
        results.append(await _run(_execution(compilation), mode))
        results.append(runtime.cpu_stats.executions - before)

    await world.run(app)
    if mode == "compute":
        assert results == [(OK, None), 2]
        assert sections == ["cpuFallbackPartial"]
    else:
        assert results == [(OK, OK), 1]
        assert sections == ["cpuFallbackFull"]


LOOP_MODEL = ("while_loop", "float32", {"iterations": 2_000, "body_size": 256})


@pytest.mark.parametrize("mode", ["startCompute", "compute", "computeWithDependencies"])
async def test_ExecutionBuilder_driver_missed_deadline_falls_back(
    autojump_clock, runtime_world, mode
):
    """ExecutionBuilder.cpp asyncStartComputePartitioned/startComputeFenced: a driver step's
    MISSED_DEADLINE_* falls back like any failure (only the runtime's own control-flow
    interpreter skips fallback): a WHILE loop that outlives the loop timeout on a slowed NPU
    completes on the CPU with Compilation_create, and is MISSED_DEADLINE_* without fallback.
    (Not through a burst: burst requests carry no loop timeout.)"""
    slowed = DeviceSpec(
        name="npu",
        hal_version=V13,
        performance=_perf(0.5),
        faults=(FaultSpec(kind=FaultKind.SLOWDOWN, at_ms=0.0, factor=20.0),),
    )
    world = runtime_world(slowed)
    results: dict[str, object] = {}

    async def app(runtime):
        m = build_preset(*LOOP_MODEL)
        for label, names in (("create", None), ("createForDevices", ["npu"])):
            compilation = await _compilation(runtime, m, names)
            assert [s.device.name for s in compilation.steps] == ["npu"]
            execution = _execution(compilation)
            assert execution.set_loop_timeout(40 * MS) is OK
            results[label] = (await _run(execution, mode), execution.fell_back)

    await world.run(app)
    expected = {"startCompute": (OK, OK), "computeWithDependencies": (OK, OK)}
    assert results["create"] == (expected.get(mode, (OK, None)), True)
    (code, event_code), fell_back = results["createForDevices"]
    missed = event_code if mode == "startCompute" else code
    assert missed in (ResultCode.MISSED_DEADLINE_TRANSIENT, ResultCode.MISSED_DEADLINE_PERSISTENT)
    assert fell_back is False


@pytest.mark.parametrize("version", [V10, V12, V13], ids=_hal_id)
async def test_ExecutionBuilder_cpu_loop_timeout_is_not_retried(
    autojump_clock, runtime_world, version
):
    """ExecutionBuilder.cpp asyncStartComputePartitioned: a loop timeout of the runtime's own
    control-flow interpreter (a WHILE on the CPU) ends the execution MISSED_DEADLINE_*, never
    retried, even with Compilation_create."""
    world = runtime_world(DeviceSpec(name="npu", hal_version=version, supported_operations=()))
    results: list[object] = []

    async def app(runtime):
        compilation = await _compilation(runtime, build_preset(*LOOP_MODEL))
        assert [s.device.name for s in compilation.steps] == [CPU_DEVICE_NAME]
        execution = _execution(compilation)
        assert execution.set_loop_timeout(MS) is OK
        before = runtime.cpu_stats.executions
        results.append(await execution.compute())
        results.append(runtime.cpu_stats.executions - before)

    await world.run(app)
    assert results == [ResultCode.MISSED_DEADLINE_TRANSIENT, 1]
