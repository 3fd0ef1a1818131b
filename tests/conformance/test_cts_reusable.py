"""Reusable executions (``ANeuralNetworksExecution_setReusable``, NNAPI feature level 5).

The S runtime's rules (packages/modules/NeuralNetworks runtime/ExecutionBuilder.cpp,
``setReusable`` and ``checkAndSetComputationState``; docs/hal-semantics.md §5.2):
``setReusable`` is BAD_STATE once a computation started; a non-reusable execution
computes once (BAD_STATE on the next compute), a reusable one any number of times, but
never while one of its computations is in flight (BAD_STATE); every setter stays frozen
after the first computation.  Each test names the CTS case of
packages/modules/NeuralNetworks ``runtime/test/`` it mirrors: ``TestValidation.cpp``
``ValidationTestCompilation.ExecutionUsability`` (its ``explicitlyDisableReusablility``
and ``testTooLate`` parts), ``ReusableExecutionConcurrent`` /
``NonReusableExecutionConcurrent`` (``testConcurrentExecution``), and ``TestExecution.cpp``
``ExecutionTest10``-``13.WaitReusable`` (``TestWait(reusable=true)``: ``computeHelper``
computes twice).  Not expressible: ``ValidationTestExecution.ExecutionSetReusable`` (a null
execution is UNEXPECTED_NULL; Python passes no null) and ``TestGenerated.cpp``'s reusable
variants (they compare output data, which nnemu does not compute).
"""

from __future__ import annotations

import pytest

from nnemu.driver import PreparedModel
from nnemu.hal import ErrorStatus, HalVersion, ResultCode, build_preset
from nnemu.runtime import Burst, Execution
from nnemu.scenario import DeviceSpec
from tests.conformance.test_cts_dynamic_shapes import _dynamic, _execution
from tests.conformance.test_cts_execution import _force

OK, BAD_STATE = ResultCode.NO_ERROR, ResultCode.BAD_STATE
INSUFFICIENT = ResultCode.OUTPUT_INSUFFICIENT_SIZE
MODES = ["compute", "startCompute", "burstCompute", "computeWithDependencies"]
HALS = [HalVersion.V1_3, HalVersion.AIDL_V4]
"""A HIDL 1.3 driver (each computation executes the cached request) and an AIDL v4 one (the
step's IExecution from createReusableExecution, as aidl::utils::PreparedModel from feature
level 8): the runtime's rules hold over both."""


def _count(monkeypatch) -> list[int]:
    """A list that grows by one for every execution a driver runs."""
    runs: list[int] = []
    original = PreparedModel.compute

    async def counted(self, deadline_ns, loop_timeout_ns):
        runs.append(1)
        return await original(self, deadline_ns, loop_timeout_ns)

    monkeypatch.setattr(PreparedModel, "compute", counted)
    return runs


def _add():
    return build_preset("add", "float32", {"size": 16})


async def _once(execution: Execution, mode: str, burst: Burst | None = None) -> ResultCode:
    """One computation in ``mode``; the code the app sees (the event's when there is one)."""
    if mode == "compute":
        return await execution.compute()
    if mode == "burstCompute":
        assert burst is not None
        return await execution.burst_compute(burst)
    if mode == "startCompute":
        code, event = await execution.start_compute()
    else:
        code, event = await execution.start_compute_with_dependencies([])
    if event is None:
        return code
    return await event.wait()


@pytest.mark.parametrize("hal", HALS, ids=lambda v: v.value)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("reusable", [False, True], ids=["non-reusable", "reusable"])
async def test_checkAndSetComputationState_compute_again(
    autojump_clock, runtime_world, monkeypatch, mode, reusable, hal
):
    """CTS TestValidation.cpp ValidationTestCompilation.ExecutionUsability (a non-reusable
    execution is BAD_STATE when computed again, in each mode) and TestExecution.cpp
    ExecutionTest13.WaitReusable (a reusable one computes again); here three times, the
    driver running each time (ExecutionBuilder::checkAndSetComputationState)."""
    world = runtime_world(DeviceSpec(name="npu", hal_version=hal))
    runs = _count(monkeypatch)
    codes: list[ResultCode] = []

    async def app(runtime):
        execution = await _execution(runtime, _add(), ["npu"])
        assert execution.set_reusable(reusable) is OK
        burst = None
        if mode == "burstCompute":
            code, burst = await Burst.create(execution.compilation)
            assert code is OK
        for _ in range(3):
            codes.append(await _once(execution, mode, burst))

    await world.run(app)
    assert codes == ([OK, OK, OK] if reusable else [OK, BAD_STATE, BAD_STATE])
    assert len(runs) == (3 if reusable else 1)


@pytest.mark.parametrize("reusable", [False, True], ids=["non-reusable", "reusable"])
async def test_checkAndSetComputationState_in_flight(autojump_clock, runtime_world, reusable):
    """CTS TestValidation.cpp ValidationTestCompilation.ReusableExecutionConcurrent /
    NonReusableExecutionConcurrent (testConcurrentExecution: of two concurrent computations
    one may be BAD_STATE), made deterministic: while a computation is in flight every
    compute of the same execution is BAD_STATE, reusable or not, and so are the output
    shapes (TestExecution.cpp getDimensionsWhileRunning); once it completed a reusable
    execution computes again (ExecutionBuilder::checkAndSetComputationState)."""
    world = runtime_world(DeviceSpec(name="npu"))
    codes: list[object] = []

    async def app(runtime):
        execution = await _execution(runtime, _add(), ["npu"])
        assert execution.set_reusable(reusable) is OK
        code, event = await execution.start_compute()
        assert code is OK
        codes.append(await execution.compute())
        codes.append((await execution.start_compute())[0])
        codes.append(execution.get_output_operand_rank(0)[0])
        codes.append(await event.wait())
        codes.append(await execution.compute())

    await world.run(app)
    assert codes == [BAD_STATE, BAD_STATE, BAD_STATE, OK, OK if reusable else BAD_STATE]


async def test_setReusable_after_the_first_computation_is_bad_state(autojump_clock, runtime_world):
    """CTS TestValidation.cpp ValidationTestCompilation.ExecutionUsability, testTooLate:
    setReusable(true/false) is BAD_STATE once a computation started (ExecutionBuilder::
    setReusable), and so are setOutput and setLoopTimeout (with setTimeout and
    setMeasureTiming, which ExecutionTiming checks); a reusable execution still computes."""
    world = runtime_world(DeviceSpec(name="npu"))
    codes: list[ResultCode] = []

    async def app(runtime):
        execution = await _execution(runtime, _add(), ["npu"])
        assert execution.set_reusable(True) is OK
        assert execution.set_reusable(False) is OK  # before the first compute: any number
        assert execution.set_reusable(True) is OK
        assert await execution.compute() is OK
        codes.append(execution.set_reusable(False))
        codes.append(execution.set_output(0, 64))
        codes.append(execution.set_loop_timeout(1))
        codes.append(execution.set_timeout(1))
        codes.append(execution.set_measure_timing(True))
        codes.append(await execution.compute())

    await world.run(app)
    assert codes == [BAD_STATE] * 5 + [OK]


@pytest.mark.parametrize("hal", HALS, ids=lambda v: v.value)
async def test_reusable_execution_after_an_error(autojump_clock, runtime_world, monkeypatch, hal):
    """CTS TestExecution.cpp ExecutionTest13.WaitReusable with a driver forced to
    GENERAL_FAILURE (kTestValues): each computation of the reusable execution returns
    OP_FAILED and its output dimensions are BAD_STATE, the second like the first
    (ExecutionBuilder::checkAndSetComputationState: an error completes it too)."""
    world = runtime_world(DeviceSpec(name="npu", hal_version=hal))
    _force(monkeypatch, ErrorStatus.GENERAL_FAILURE)
    codes: list[object] = []

    async def app(runtime):
        execution = await _execution(runtime, _add(), ["npu"])
        assert execution.set_reusable(True) is OK
        for _ in range(2):
            codes.append(await execution.compute())
            codes.append(execution.get_output_operand_rank(0)[0])

    await world.run(app)
    assert codes == [ResultCode.OP_FAILED, BAD_STATE] * 2


@pytest.mark.parametrize("hal", HALS, ids=lambda v: v.value)
async def test_reusable_execution_resizes_nothing(autojump_clock, runtime_world, hal):
    """CTS TestExecution.cpp ExecutionTest13.WaitReusable, OUTPUT_INSUFFICIENT_SIZE flavor:
    both computations of a reusable execution whose dynamic output is one byte short end
    OUTPUT_INSUFFICIENT_SIZE, and the dimensions are readable after each with that code
    (the buffer set before the first computation is kept)."""
    world = runtime_world(DeviceSpec(name="npu", hal_version=hal))
    seen: list[object] = []

    async def app(runtime):
        execution = await _execution(runtime, _dynamic(), ["npu"])
        assert execution.set_reusable(True) is OK
        assert execution.set_output(0, 63, (1, 16)) is OK
        for _ in range(2):
            seen.append(await execution.compute())
            seen.append(execution.get_output_operand_dimensions(0))

    await world.run(app)
    assert seen == [INSUFFICIENT, (INSUFFICIENT, (1, 16))] * 2
