"""Dynamic output shapes: OUTPUT_INSUFFICIENT_SIZE and getOutputOperandRank/Dimensions.

The R runtime's rules are docs/hal-semantics.md §5.1: a too-small buffer for a fully
specified output is BAD_DATA at ``setOutput``; an output whose dimensions the model leaves
unknown is sized when the execution ends, OUTPUT_INSUFFICIENT_SIZE (never retried nor
fallen back) when its buffer is too small; the output shapes are readable after NO_ERROR
or OUTPUT_INSUFFICIENT_SIZE, BAD_STATE before or after another error.
"""

from __future__ import annotations

import attrs
import pytest

from nnemu.hal import ErrorStatus, Model, ResultCode, build_preset
from nnemu.runtime import Compilation, Execution
from nnemu.scenario import DeviceSpec
from tests.conformance._harness import V10, V11, V12, V13, request_for
from tests.conformance.test_cts_execution import _force, _perf, _run

OK, BAD_DATA, BAD_STATE = ResultCode.NO_ERROR, ResultCode.BAD_DATA, ResultCode.BAD_STATE
INSUFFICIENT = ResultCode.OUTPUT_INSUFFICIENT_SIZE
PRODUCED = (1, 16)
"""The dimensions the ``add`` preset's output has (16 float32: 64 bytes)."""


def _dynamic(unknown: tuple[int, ...] = (0, 0)) -> Model:
    """The ``add`` preset with its output's dimensions ``unknown`` at compile time."""
    m = build_preset("add", "float32", {"size": 16})
    main = m.main
    [out] = main.output_indexes
    operands = list(main.operands)
    operands[out] = attrs.evolve(operands[out], dimensions=unknown)
    return attrs.evolve(m, main=attrs.evolve(main, operands=tuple(operands)))


async def _execution(runtime, m: Model, names=None) -> Execution:
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
    code, execution = Execution.create(compilation)
    assert code is OK
    assert execution.set_io() is OK
    return execution


def _hal_id(version) -> str:
    return f"hal{version.value}"


@pytest.mark.parametrize("version", [V12, V13], ids=_hal_id)
async def test_ValidationTestExecution_GetOutputOperandRankAndDimensions(
    autojump_clock, runtime_world, version
):
    """CTS TestValidation.cpp ValidationTestExecution.GetOutputOperandRankAndDimensions:
    BAD_STATE before the execution computed, BAD_DATA for an index out of range (-1, 999),
    then the output's rank and dimensions."""
    world = runtime_world(DeviceSpec(name="npu", hal_version=version))
    seen: list[object] = []

    async def app(runtime):
        execution = await _execution(runtime, build_preset("add", "float32", {"size": 16}))
        assert execution.set_output(0, 64) is OK
        seen.append(execution.get_output_operand_rank(0))
        seen.append(execution.get_output_operand_dimensions(0))
        seen.append(await _run(execution, "startCompute"))
        for index in (-1, 999):
            seen.append(execution.get_output_operand_rank(index)[0])
            seen.append(execution.get_output_operand_dimensions(index)[0])
        seen.append(execution.get_output_operand_rank(0))
        seen.append(execution.get_output_operand_dimensions(0))

    await world.run(app)
    assert seen == [
        (BAD_STATE, 0),
        (BAD_STATE, ()),
        (OK, OK),
        *[BAD_DATA] * 4,
        (OK, 2),
        (OK, PRODUCED),
    ]


@pytest.mark.parametrize(
    "mode", ["compute", "startCompute", "burstCompute", "computeWithDependencies"]
)
async def test_unspecified_output_makes_every_mode_bad_data(autojump_clock, runtime_world, mode):
    """ExecutionBuilder.cpp validateRequest ("starts compute when not all outputs specified"):
    an output whose setOutput failed (a buffer too small for its fully specified dimensions)
    stays unspecified, and starting a computation in any mode is BAD_DATA; a later setOutput
    that succeeds specifies it again."""
    world = runtime_world(DeviceSpec(name="npu", hal_version=V13))
    seen: list[object] = []

    async def app(runtime):
        execution = await _execution(runtime, build_preset("add", "float32", {"size": 16}))
        assert execution.set_output(0, 63) is BAD_DATA
        seen.append(await _run(execution, mode))
        assert execution.set_output(0, 64) is OK
        seen.append(await _run(execution, mode))

    await world.run(app)
    expected = {
        "startCompute": [(BAD_DATA, None), (OK, OK)],
        "computeWithDependencies": [(BAD_DATA, None), (OK, OK)],
    }
    assert seen == expected.get(mode, [(BAD_DATA, None), (OK, None)])


async def test_setOutput_fully_specified_too_small_is_bad_data(autojump_clock, runtime_world):
    """CTS TestValidation.cpp ValidationTestExecution.SetOutput (ModelArgumentInfo::
    createFromPointer): a buffer smaller than a fully specified output needs is BAD_DATA, an
    index out of range BAD_DATA; setOutput after the computation started is BAD_STATE."""
    world = runtime_world(DeviceSpec(name="npu", hal_version=V13))
    codes: list[ResultCode] = []

    async def app(runtime):
        execution = await _execution(runtime, build_preset("add", "float32", {"size": 16}))
        codes.append(execution.set_output(0, 63))
        codes.append(execution.set_output(1, 64))
        codes.append(execution.set_output(0, 64))
        codes.append(await execution.compute())
        codes.append(execution.set_output(0, 64))

    await world.run(app)
    assert codes == [BAD_DATA, BAD_DATA, OK, OK, BAD_STATE]


@pytest.mark.parametrize("mode", ["compute", "startCompute", "burstCompute"])
@pytest.mark.parametrize("version", [V12, V13], ids=_hal_id)
async def test_GeneratedTestHarness_OutputType_INSUFFICIENT(
    autojump_clock, runtime_world, version, mode
):
    """VTS 1.2 GeneratedTestHarness.cpp OutputType::INSUFFICIENT and CTS TestExecution.cpp
    ExecutionTest12/13.Wait (OUTPUT_INSUFFICIENT_SIZE): an output of unknown dimensions given
    a buffer one byte short ends the execution OUTPUT_INSUFFICIENT_SIZE in every mode, even
    with Compilation_create never retried on the CPU; its rank and dimensions are readable
    and answer OUTPUT_INSUFFICIENT_SIZE."""
    world = runtime_world(DeviceSpec(name="npu", hal_version=version, performance=_perf(0.5)))
    seen: list[object] = []

    async def app(runtime):
        execution = await _execution(runtime, _dynamic())
        assert [s.device.name for s in execution.compilation.steps] == ["npu"]
        assert execution.set_output(0, 63, PRODUCED) is OK
        code, event_code = await _run(execution, mode)
        seen.append(event_code if mode == "startCompute" else code)
        seen.append(execution.fell_back)
        seen.append(runtime.cpu_stats.executions)
        seen.append(execution.get_output_operand_rank(0))
        seen.append(execution.get_output_operand_dimensions(0))
        seen.append(execution.output_shapes[0].is_sufficient)

    await world.run(app)
    assert seen == [INSUFFICIENT, False, 0, (INSUFFICIENT, 2), (INSUFFICIENT, PRODUCED), False]


@pytest.mark.parametrize("unknown", [(0, 0), (1, 0), ()], ids=["zeros", "one-zero", "no-rank"])
@pytest.mark.parametrize("version", [V12, V13], ids=_hal_id)
async def test_GeneratedTestHarness_OutputType_UNSPECIFIED(
    autojump_clock, runtime_world, version, unknown
):
    """VTS 1.2 GeneratedTestHarness.cpp OutputType::UNSPECIFIED: an output whose dimensions
    (or rank) are unknown at compile time, given a large enough buffer, runs on a 1.2+ driver
    and reports the dimensions it produced."""
    world = runtime_world(DeviceSpec(name="npu", hal_version=version))
    seen: list[object] = []

    async def app(runtime):
        execution = await _execution(runtime, _dynamic(unknown), ["npu"])
        assert execution.set_output(0, 64, PRODUCED) is OK
        seen.append(await execution.compute())
        seen.append(execution.get_output_operand_dimensions(0))

    await world.run(app)
    assert seen == [OK, (OK, PRODUCED)]


async def test_setOutput_produced_dims_must_match_the_known_ones(autojump_clock, runtime_world):
    """ExecutionBuilder::setOutput's checkDimensionInfo: the dimensions an output is given
    must be fully specified and agree with the model's known ones (rank and non-zero
    dimensions); otherwise BAD_DATA."""
    world = runtime_world(DeviceSpec(name="npu", hal_version=V13))
    codes: list[ResultCode] = []

    async def app(runtime):
        execution = await _execution(runtime, _dynamic((1, 0)))
        codes.append(execution.set_output(0, 64, (2, 16)))
        codes.append(execution.set_output(0, 64, (1, 16, 1)))
        codes.append(execution.set_output(0, 64, (1, 0)))
        codes.append(execution.set_output(0, 64, (1, 16)))

    await world.run(app)
    assert codes == [BAD_DATA, BAD_DATA, BAD_DATA, OK]


async def test_output_dimensions_after_another_error_are_bad_state(
    autojump_clock, runtime_world, monkeypatch
):
    """ExecutionBuilder::getOutputOperandRank/Dimensions: after an execution ended with an
    error other than OUTPUT_INSUFFICIENT_SIZE (Completion::OTHER_ERROR) both are BAD_STATE."""
    world = runtime_world(DeviceSpec(name="npu", hal_version=V13))
    _force(monkeypatch, ErrorStatus.GENERAL_FAILURE)
    seen: list[object] = []

    async def app(runtime):
        execution = await _execution(runtime, build_preset("add", "float32", {"size": 16}), ["npu"])
        seen.append(await execution.compute())
        seen.append(execution.get_output_operand_rank(0))
        seen.append(execution.get_output_operand_dimensions(0))

    await world.run(app)
    assert seen == [ResultCode.OP_FAILED, (BAD_STATE, 0), (BAD_STATE, ())]


async def test_fenced_execution_refuses_unknown_output_dimensions(autojump_clock, runtime_world):
    """ExecutionBuilder::computeFenced: startComputeWithDependencies is BAD_DATA for an output
    whose dimensions are not fully specified, whatever buffer it was given."""
    world = runtime_world(DeviceSpec(name="npu", hal_version=V13))
    seen: list[object] = []

    async def app(runtime):
        execution = await _execution(runtime, _dynamic())
        assert execution.set_output(0, 64, PRODUCED) is OK
        seen.append(await _run(execution, "computeWithDependencies"))

    await world.run(app)
    assert seen == [(BAD_DATA, None)]


@pytest.mark.parametrize("version", [V10, V11, V12, V13], ids=_hal_id)
async def test_validateRequest_pre12_outputs_fully_specified(autojump_clock, driver_world, version):
    """common/ValidateHal.cpp validateRequest: an output may leave a dimension unspecified only
    for a 1.2+ model (``allowUnspecified = version >= V1_2 && allowUnspecifiedOutput``): a
    1.0/1.1 driver, which keeps a V1_0 model, refuses the request with INVALID_ARGUMENT."""
    world = driver_world(version)
    answers: list[object] = []
    m = _dynamic()

    async def client():
        prepared = await world.prepared_model(version, m)
        answers.append(await world.execute_async(V10, prepared, request_for(m)))

    await world.run(client)
    [(launch, notifies)] = answers
    if version in (V10, V11):
        assert launch is ErrorStatus.INVALID_ARGUMENT
        assert [n[0] for n in notifies] == [ErrorStatus.INVALID_ARGUMENT]
    else:
        assert launch is ErrorStatus.NONE
        assert [n[0] for n in notifies] == [ErrorStatus.NONE]


@pytest.mark.parametrize("version", [V10, V11], ids=_hal_id)
async def test_pre12_driver_unknown_output_dimensions_run_on_the_cpu(
    autojump_clock, runtime_world, version
):
    """ExecutionBuilder.cpp asyncStartComputePartitioned over ValidateHal.cpp validateRequest:
    a 1.0/1.1 driver refuses an execution whose output dimensions are unknown, so with
    Compilation_create the runtime reruns the step on the CPU (NO_ERROR, the shapes from
    the CPU executor) and with createForDevices the app gets BAD_DATA."""
    world = runtime_world(DeviceSpec(name="npu", hal_version=version, performance=_perf(0.1)))
    seen: list[object] = []

    async def app(runtime):
        fallback = await _execution(runtime, _dynamic())
        seen.append(await fallback.compute())
        seen.append((fallback.fell_back, runtime.cpu_stats.executions))
        seen.append(fallback.get_output_operand_dimensions(0))
        only = await _execution(runtime, _dynamic(), names=["npu"])
        seen.append(await only.compute())

    await world.run(app)
    assert seen == [OK, (True, 1), (OK, (1, 1)), BAD_DATA]  # unknown dims produce 1 here
