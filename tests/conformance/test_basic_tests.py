"""VTS BasicTests (1.0-1.3): device status, capabilities, and a cyclic graph."""

from __future__ import annotations

import pytest

from nnemu.hal import DeviceStatus, ErrorStatus, HalVersion, OperandType, PerformanceInfo
from tests.conformance._harness import VERSIONS, cyclic_model, pair_id, version_pairs

PAIRS = version_pairs()
CAPABILITIES_METHOD = {
    HalVersion.V1_0: "getCapabilities",
    HalVersion.V1_1: "getCapabilities_1_1",
    HalVersion.V1_2: "getCapabilities_1_2",
    HalVersion.V1_3: "getCapabilities_1_3",
}


@pytest.mark.parametrize("version", VERSIONS, ids=lambda v: f"hal{v.value}")
async def test_BasicTests_StatusTest(autojump_clock, driver_world, version):
    """VTS StatusTest: getStatus reports AVAILABLE."""
    world = driver_world(version)
    answers: list[object] = []

    async def client():
        answers.append(await world.call("getStatus", world.service.getStatus))

    await world.run(client)
    assert answers == [DeviceStatus.AVAILABLE]


def _all_performance(caps) -> list[tuple[str, PerformanceInfo]]:
    entries = [
        ("relaxedFloat32toFloat16PerformanceScalar", caps.relaxed_float32_to_float16_scalar),
        ("relaxedFloat32toFloat16PerformanceTensor", caps.relaxed_float32_to_float16_tensor),
        ("ifPerformance", caps.if_performance),
        ("whilePerformance", caps.while_performance),
    ]
    entries += [(kind.name, info) for kind, info in caps.operand_performance]
    return entries


@pytest.mark.parametrize("pair", PAIRS, ids=map(pair_id, PAIRS))
async def test_BasicTests_capabilities_positive_sorted(autojump_clock, driver_world, pair):
    """VTS CapabilitiesTest: NONE, every performance figure > 0, operandPerformance sorted by type, unique, no SUBGRAPH."""
    service_version, version = pair
    world = driver_world(service_version)
    answers: list[object] = []

    async def client():
        answers.append(
            await world.call(CAPABILITIES_METHOD[version], world.service.getCapabilities)
        )

    await world.run(client)
    [(status, caps)] = answers
    assert status is ErrorStatus.NONE
    bad = [
        name
        for name, info in _all_performance(caps)
        if not (info.exec_time > 0 and info.power_usage > 0)
    ]
    assert bad == []
    kinds = [int(kind) for kind, _ in caps.operand_performance]
    assert kinds == sorted(kinds)
    assert len(set(kinds)) == len(kinds)
    assert OperandType.SUBGRAPH not in kinds
    # The 1.0 view: float32Performance and quantized8Performance are listed.
    assert OperandType.TENSOR_FLOAT32 in kinds
    assert OperandType.TENSOR_QUANT8_ASYMM in kinds


@pytest.mark.parametrize("pair", PAIRS, ids=map(pair_id, PAIRS))
async def test_BasicTests_cyclic_graph(autojump_clock, driver_world, pair):
    """VTS: a graph with a cycle makes getSupportedOperations* INVALID_ARGUMENT and prepareModel* fail without a model."""
    service_version, version = pair
    world = driver_world(service_version)
    results: dict[str, object] = {}

    async def client():
        model = cyclic_model()
        results["ops"] = await world.get_supported_operations(version, model)
        results["prepare"] = await world.prepare(version, model)

    await world.run(client)
    assert results["ops"] == (ErrorStatus.INVALID_ARGUMENT, ())
    launch, calls = results["prepare"]
    [(status, prepared)] = calls
    assert status is not ErrorStatus.NONE
    assert prepared is None
    assert launch is ErrorStatus.INVALID_ARGUMENT
