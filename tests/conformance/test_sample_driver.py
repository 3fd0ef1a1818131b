"""The AOSP sample driver's own answers (frameworks/ml/nn/driver/sample), against the emulated
driver service: what a HAL client sees beyond what VTS pins down (docs/hal-semantics.md §4).
"""

from __future__ import annotations

import pytest

from nnemu.driver import PreparedModel
from nnemu.hal import ErrorStatus, MeasureTiming, OperationType, build_preset
from tests.conformance._harness import (
    MISSED_DEADLINE,
    MS,
    V13,
    pair_id,
    request_for,
    version_pairs,
)
from tests.conformance._harness import model as harness_model

LOOP_MODEL = ("while_loop", "float32", {"iterations": 2_000, "body_size": 256})


async def test_SampleDriver_executeFenced_error_at_launch(autojump_clock, driver_world):
    """SampleDriver.cpp SamplePreparedModel::executeFenced: an error of the work itself (here a
    WHILE loop outliving a 1 ms loop timeout) is returned from the call, with no sync fence and
    a null IFencedExecutionCallback."""
    world = driver_world(V13)
    results: list[tuple[object, ...]] = []

    async def client():
        m = build_preset(*LOOP_MODEL)
        prepared = await world.prepared_model(V13, m)
        results.append(await world.execute_fenced(prepared, request_for(m), loop_timeout_ns=MS))

    await world.run(client)
    [(status, callback)] = results
    assert status in MISSED_DEADLINE
    assert callback is None


async def test_SampleDriver_executeFenced_timing_after_fence(autojump_clock, driver_world):
    """SampleDriver.cpp SamplePreparedModel::executeFenced: timingLaunched runs from the call,
    timingAfterFence from after the request, deadline and fence checks: the same time on the
    device, less time in the driver."""
    world = driver_world(V13)
    results: list[tuple[object, ...]] = []

    async def client():
        m = harness_model("add_float32")
        prepared = await world.prepared_model(V13, m)
        results.append(
            await world.execute_fenced(prepared, request_for(m), measure=MeasureTiming.YES)
        )

    await world.run(client)
    [(status, callback)] = results
    assert status is ErrorStatus.NONE
    assert callback is not None
    info_status, launched, fenced = callback.get_execution_info()
    assert info_status is ErrorStatus.NONE
    assert fenced.time_on_device_us == launched.time_on_device_us
    assert fenced.time_on_device_us <= fenced.time_in_driver_us < launched.time_in_driver_us


@pytest.mark.parametrize("pair", version_pairs(), ids=pair_id)
async def test_SampleDriverPartial_prepare_unsupported_model(autojump_clock, driver_world, pair):
    """SampleDriverPartial.cpp: only prepareModel_1_3 refuses a model the driver does not fully
    support (launch NONE, notify INVALID_ARGUMENT with no model); the older entry points are
    SampleDriver's and prepare it (notify NONE with a model)."""
    service_version, entry = pair
    world = driver_world(service_version, supported_operations=(OperationType.CONV_2D,))
    results: list[tuple[object, list[tuple[object, ...]]]] = []

    async def client():
        results.append(await world.prepare(entry, harness_model("add_float32")))

    await world.run(client)
    [(launch, [(status, prepared)])] = results
    assert launch is ErrorStatus.NONE
    if entry is V13:
        assert (status, prepared) == (ErrorStatus.INVALID_ARGUMENT, None)
    else:
        assert status is ErrorStatus.NONE
        assert isinstance(prepared, PreparedModel)
