"""docs/hal-semantics.md §1.4: through a pre-1.3 interface, MISSED_DEADLINE_* and RESOURCE_EXHAUSTED_* become GENERAL_FAILURE.

The QoS statuses arise naturally in the emulated driver: a model larger than the
device memory (RESOURCE_EXHAUSTED_PERSISTENT at prepare), a full device with
``queue_limit`` 0 (RESOURCE_EXHAUSTED_TRANSIENT at execute). Each case checks every
entry point a service has: pre-1.3 callbacks and returns carry GENERAL_FAILURE, the
1.3 ones the QoS status itself (the control that the status really arose).
"""

from __future__ import annotations

import pytest

from nnemu.hal import ErrorStatus, build_preset
from tests.conformance._harness import (
    ASYNC_EXECUTE_METHOD,
    V12,
    V13,
    model,
    pair_id,
    request_for,
    version_pairs,
)
from tests.worlds import execute_call

PAIRS = version_pairs()
EXEC_PAIRS = version_pairs()
SYNC_PAIRS = version_pairs(V12)
BIG = {"input_size": 64, "width": 0.5}


def _expected(version, qos: ErrorStatus) -> ErrorStatus:
    return qos if version is V13 else ErrorStatus.GENERAL_FAILURE


@pytest.mark.parametrize("pair", PAIRS, ids=map(pair_id, PAIRS))
async def test_downgrade_prepare_resource_exhausted(autojump_clock, driver_world, pair):
    """A model too large for the device: prepareModel* notifies RESOURCE_EXHAUSTED_PERSISTENT only on 1.3, else GENERAL_FAILURE."""
    service_version, version = pair
    world = driver_world(service_version, memory_mb=0.001)
    results: list[object] = []

    async def client():
        results.append(await world.prepare(version, build_preset("mobilenet_v1", "float32", BIG)))

    await world.run(client)
    [(launch, calls)] = results
    assert launch is ErrorStatus.NONE
    assert calls == [(_expected(version, ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT), None)]


async def _busy_then(world, version, run_second):
    """Occupy the single compute unit with a long execute, then run ``run_second`` while it is busy."""
    slow = build_preset("mobilenet_v1", "float32", BIG)
    fast = model("add_float32")
    slow_prepared = await world.prepared_model(version, slow)
    fast_prepared = await world.prepared_model(version, fast)
    _, ref = world.callback()
    request = request_for(slow)
    serve = execute_call(slow_prepared, version, request, ref)
    launch = await world.call(ASYNC_EXECUTE_METHOD[version], serve, "IPreparedModel")
    assert launch is ErrorStatus.NONE
    return await run_second(fast_prepared, request_for(fast))


@pytest.mark.parametrize("pair", EXEC_PAIRS, ids=map(pair_id, EXEC_PAIRS))
async def test_downgrade_execute_resource_exhausted(autojump_clock, driver_world, pair):
    """A full device (queue_limit 0): execute* notifies RESOURCE_EXHAUSTED_TRANSIENT only on 1.3, else GENERAL_FAILURE."""
    service_version, version = pair
    world = driver_world(service_version, queue_limit=0)
    results: list[object] = []

    async def client():
        results.append(
            await _busy_then(
                world,
                version,
                lambda prepared, request: world.execute_async(version, prepared, request),
            )
        )

    await world.run(client)
    [(launch, calls)] = results
    assert launch is ErrorStatus.NONE
    [(status, shapes, _)] = calls
    assert status is _expected(version, ErrorStatus.RESOURCE_EXHAUSTED_TRANSIENT)
    assert shapes == ()


@pytest.mark.parametrize("pair", SYNC_PAIRS, ids=map(pair_id, SYNC_PAIRS))
async def test_downgrade_execute_sync_resource_exhausted(autojump_clock, driver_world, pair):
    """A full device (queue_limit 0): executeSynchronously* returns RESOURCE_EXHAUSTED_TRANSIENT only on 1.3, else GENERAL_FAILURE."""
    service_version, version = pair
    world = driver_world(service_version, queue_limit=0)
    results: list[object] = []

    async def client():
        results.append(
            await _busy_then(
                world,
                version,
                lambda prepared, request: world.execute_sync(version, prepared, request),
            )
        )

    await world.run(client)
    [(status, shapes, _)] = results
    assert status is _expected(version, ErrorStatus.RESOURCE_EXHAUSTED_TRANSIENT)
    assert shapes == ()
