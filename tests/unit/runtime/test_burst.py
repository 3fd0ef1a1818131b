"""Execution bursts: ANeuralNetworksBurst_create, burstCompute, configureExecutionBurst."""

from __future__ import annotations

from nnemu.hal import ResultCode, build_preset
from nnemu.runtime import Burst, Compilation, Execution, Runtime
from nnemu.scenario import DeviceSpec
from tests.unit.tracer.helpers import RecordingSink
from tests.worlds import V10, V12, RuntimeWorld

OK = ResultCode.NO_ERROR


async def _compiled(runtime: Runtime, device: str) -> Compilation:
    _, builder = await runtime.create_model(build_preset("add"))
    devices = [d for d in await runtime.get_devices() if d.name == device]
    _, compilation = await Compilation.create_for_devices(builder, devices)
    assert await compilation.finish() is OK
    return compilation


async def test_burst_compute_skips_the_binder_round_trip(autojump_clock):
    """Back-to-back burstCompute calls take less virtual time than compute (no binder transaction)."""
    world = RuntimeWorld(DeviceSpec(name="npu", hal_version=V12))
    took: dict[str, list[int]] = {"burst": [], "compute": []}

    async def app(runtime: Runtime):
        compilation = await _compiled(runtime, "npu")
        code, burst = await Burst.create(compilation)
        assert code is OK
        assert burst is not None
        assert list(burst.contexts) == [0]
        for mode in ("burst", "compute"):
            for _ in range(3):
                _, execution = Execution.create(compilation)
                started = runtime.kernel.task_now_ns()
                if mode == "burst":
                    assert await execution.burst_compute(burst) is OK
                else:
                    assert await execution.compute() is OK
                took[mode].append(runtime.kernel.task_now_ns() - started)

    await world.run(app)
    # The first packet wakes the server; the next ones find it spinning.
    assert took["burst"][1] == took["burst"][2] < took["burst"][0]
    assert max(took["burst"]) < min(took["compute"])


async def test_burst_rules(autojump_clock):
    """burstCompute: BAD_DATA with another compilation's burst, BAD_STATE once the execution started."""
    world = RuntimeWorld(DeviceSpec(name="npu", hal_version=V12))
    codes: list[ResultCode] = []

    async def app(runtime: Runtime):
        first = await _compiled(runtime, "npu")
        second = await _compiled(runtime, "npu")
        _, burst = await Burst.create(first)
        _, execution = Execution.create(second)
        codes.append(await execution.burst_compute(burst))
        _, execution = Execution.create(first)
        codes.append(await execution.burst_compute(burst))
        codes.append(await execution.burst_compute(burst))

    await world.run(app)
    assert codes == [ResultCode.BAD_DATA, OK, ResultCode.BAD_STATE]


async def test_hal10_driver_burst_falls_back_to_execute(autojump_clock):
    """A HAL 1.0 driver has no configureExecutionBurst: the burst uses the normal path and still works."""
    world = RuntimeWorld(DeviceSpec(name="old", hal_version=V10))
    seen = {}

    async def app(runtime: Runtime):
        compilation = await _compiled(runtime, "old")
        _, burst = await Burst.create(compilation)
        seen["contexts"] = dict(burst.contexts)
        _, execution = Execution.create(compilation)
        seen["code"] = await execution.burst_compute(burst)

    await world.run(app)
    assert seen == {"contexts": {}, "code": OK}


def test_burst_marks():
    """A burst leaves ExecutionBurstController::compute on the app thread and the server marks on the burst thread."""
    from nnemu import run
    from nnemu.scenario import load_scenario_text

    sink = RecordingSink()
    run(
        load_scenario_text(
            "name: b\n"
            "devices: [{name: npu, hal_version: '1.2'}]\n"
            "models: [{name: m, preset: add}]\n"
            "apps: [{name: a, model: m, devices: [npu], execution_mode: burst,"
            " workload: {kind: closed_loop, executions: 2}}]\n"
        ),
        sinks=[sink],
    )
    controller = sink.first("[NN_LI_PE]ExecutionBurstController::compute")
    assert controller.stack[-1] == "[NN_LR_PE]ANeuralNetworksExecution_burstCompute"
    packet = sink.first("[NN_LI_PE]ExecutionBurstServer getting packet")
    assert packet.thread.name == "burst-1"
    execute = sink.first("[NN_LD_PE]BurstExecutorWithCache::execute")
    assert execute.stack == (
        "[NN_LI_PE]ExecutionBurstServer getting memory, executing, and returning results",
    )
    configure = sink.first("HIDL::IPreparedModel::configureExecutionBurst::client")
    assert configure.stack[-1] == "[NN_LR_PP]ANeuralNetworksBurst_create"
