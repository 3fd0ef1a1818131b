"""Which AIDL calls the runtime makes, per AIDL version: bursts, reusable executions, v4 config.

Held to ``hardware/interfaces/neuralnetworks/aidl/utils/src`` (Android 14), the canonical
adapters the runtime reaches an AIDL driver through: ``Device::prepareModel`` and
``PreparedModel::executeInternal`` / ``executeFencedInternal`` call the ``*WithConfig``
methods from feature level 8 (AIDL v4); ``PreparedModel::configureExecutionBurst`` hands an
IBurst that ``Burst::execute`` calls once per execution (``executeSynchronouslyWithConfig``
from feature level 8); ``PreparedModel::createReusableExecution`` calls the driver's
``createReusableExecution`` from feature level 8 and otherwise runs the cached request
(``ExecutionWithCachedRequest``) through ``executeSynchronously``.
"""

from __future__ import annotations

import pytest

from nnemu.hal import HalVersion, ResultCode, build_preset
from nnemu.runtime import Burst, Compilation, Execution, Runtime
from nnemu.scenario import DeviceSpec
from tests.worlds import V13, RuntimeWorld

OK = ResultCode.NO_ERROR
V1, V4 = HalVersion.AIDL_V1, HalVersion.AIDL_V4
PM = "AIDL::ndk::IPreparedModel::"


async def _compiled(runtime: Runtime) -> Compilation:
    _, builder = await runtime.create_model(build_preset("add"))
    devices = [d for d in await runtime.get_devices() if d.name == "npu"]
    _, compilation = await Compilation.create_for_devices(builder, devices)
    assert await compilation.finish() is OK
    return compilation


def _world(version: HalVersion) -> tuple[RuntimeWorld, list[str]]:
    """A runtime with one NPU driver of ``version``, and the list of HAL calls it makes."""
    world = RuntimeWorld(DeviceSpec(name="npu", hal_version=version))
    calls: list[str] = []
    world.binder.on_call = calls.append
    return world, calls


def _after(calls: list[str], marker: str) -> list[str]:
    """The calls after the first ``marker``, without the preparation callback's notify."""
    return [c for c in calls[calls.index(marker) + 1 :] if "Callback" not in c]


@pytest.mark.parametrize(
    ("version", "prepare", "execute"),
    [
        (V4, "AIDL::ndk::IDevice::prepareModelWithConfig", PM + "executeSynchronouslyWithConfig"),
        (V1, "AIDL::ndk::IDevice::prepareModel", PM + "executeSynchronously"),
    ],
    ids=["aidl-v4", "aidl-v1"],
)
async def test_v4_driver_gets_the_config_calls(autojump_clock, version, prepare, execute):
    """Device::prepareModel and PreparedModel::executeInternal: a v4 driver is prepared with
    prepareModelWithConfig and executed with executeSynchronouslyWithConfig; a v1..v3 one
    with prepareModel and executeSynchronously."""
    world, calls = _world(version)

    async def app(runtime: Runtime) -> None:
        compilation = await _compiled(runtime)
        _, execution = Execution.create(compilation)
        assert await execution.compute() is OK

    await world.run(app)
    assert prepare in calls
    assert calls[-1] == execute


@pytest.mark.parametrize(
    ("version", "method"),
    [(V4, "executeSynchronouslyWithConfig"), (V1, "executeSynchronously")],
    ids=["aidl-v4", "aidl-v1"],
)
async def test_burst_compute_calls_the_ibursts_execute(autojump_clock, version, method):
    """Burst::execute: ANeuralNetworksBurst_create configures one IBurst
    (configureExecutionBurst); each burstCompute is one IBurst call (WithConfig on v4) and
    no IPreparedModel execution."""
    world, calls = _world(version)
    codes: list[ResultCode] = []

    async def app(runtime: Runtime) -> None:
        compilation = await _compiled(runtime)
        code, burst = await Burst.create(compilation)
        assert code is OK
        assert burst is not None
        for _ in range(3):
            _, execution = Execution.create(compilation)
            codes.append(await execution.burst_compute(burst))

    await world.run(app)
    assert codes == [OK] * 3
    assert _after(calls, PM + "configureExecutionBurst") == [f"AIDL::ndk::IBurst::{method}"] * 3


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        (
            V4,
            [PM + "createReusableExecution"] + ["AIDL::ndk::IExecution::executeSynchronously"] * 3,
        ),
        (V1, [PM + "executeSynchronously"] * 3),
        (V13, ["HIDL::IPreparedModel::executeSynchronously_1_3"] * 3),
    ],
    ids=["aidl-v4", "aidl-v1", "hidl-1.3"],
)
async def test_reusable_execution_uses_the_drivers_iexecution(autojump_clock, version, expected):
    """PreparedModel::createReusableExecution: a reusable execution computed three times makes
    one createReusableExecution call and three IExecution::executeSynchronously calls on a
    v4 driver; on an older AIDL or a HIDL 1.3 driver each computation executes the cached
    request (ExecutionWithCachedRequest)."""
    world, calls = _world(version)
    codes: list[ResultCode] = []
    marker: list[int] = []

    async def app(runtime: Runtime) -> None:
        compilation = await _compiled(runtime)
        _, execution = Execution.create(compilation)
        assert execution.set_reusable(True) is OK
        marker.append(len(calls))
        for _ in range(3):
            codes.append(await execution.compute())

    await world.run(app)
    assert codes == [OK] * 3
    assert calls[marker[0] :] == expected


async def test_reusable_fenced_execution_uses_iexecution_execute_fenced(autojump_clock):
    """Execution::computeFenced (aidl utils, v4): a reusable execution computed fenced calls
    IExecution::executeFenced, after the one createReusableExecution."""
    world, calls = _world(V4)
    codes: list[ResultCode] = []
    marker: list[int] = []

    async def app(runtime: Runtime) -> None:
        compilation = await _compiled(runtime)
        _, execution = Execution.create(compilation)
        assert execution.set_reusable(True) is OK
        marker.append(len(calls))
        for _ in range(2):
            code, event = await execution.start_compute_with_dependencies([])
            assert event is not None
            codes.append(code)

    await world.run(app)
    assert codes == [OK] * 2
    assert calls[marker[0] :] == [
        PM + "createReusableExecution",
        "AIDL::ndk::IExecution::executeFenced",
        "AIDL::ndk::IExecution::executeFenced",
    ]
