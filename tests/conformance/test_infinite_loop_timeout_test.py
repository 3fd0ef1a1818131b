"""VTS 1.3 InfiniteLoopTimeoutTest: a WHILE loop outliving its loop timeout must be aborted.

The HAL says exceeding the loop timeout **must** abort with MISSED_DEADLINE_*
(docs/hal-semantics.md §3; the sample driver's CpuExecutor gives MISSED_DEADLINE_TRANSIENT).
VTS uses a loop that never ends; here the ``while_loop`` preset runs long enough
(``loop_iterations`` FULLY_CONNECTED bodies) to exceed a 1 ms loop timeout many times
over, yet finishes well inside the 2 s default, so the default-timeout control succeeds.
"""

from __future__ import annotations

import pytest

from nnemu.hal import ErrorStatus, MeasureTiming, build_preset, loop_iterations
from tests.conformance._harness import MISSED_DEADLINE, MS, V13, request_for

LOOP_TIMEOUT_NS = 1 * MS
ITERATIONS = 2_000
BODY_SIZE = 256
"""2000 bodies of a 256x256 FULLY_CONNECTED: 2000 x 65536 MACs x 0.1 ns ≈ 13 ms on the reference CPU."""


def _loop_model():
    model = build_preset(
        "while_loop", "float32", {"iterations": ITERATIONS, "body_size": BODY_SIZE}
    )
    assert loop_iterations(model) == ITERATIONS
    return model


async def test_InfiniteLoopTimeoutTest_async(autojump_clock, driver_world):
    """execute_1_3 with a 1 ms loop timeout launches NONE and notifies MISSED_DEADLINE_*."""
    world = driver_world(V13)
    results: list[tuple[object, list]] = []

    async def client():
        m = _loop_model()
        prepared = await world.prepared_model(V13, m)
        results.append(
            await world.execute_async(
                V13, prepared, request_for(m), loop_timeout_ns=LOOP_TIMEOUT_NS
            )
        )

    await world.run(client)
    [(launch, calls)] = results
    assert launch is ErrorStatus.NONE
    [(status, shapes, _)] = calls
    assert status in MISSED_DEADLINE
    assert shapes == ()


async def test_InfiniteLoopTimeoutTest_sync(autojump_clock, driver_world):
    """executeSynchronously_1_3 with a 1 ms loop timeout returns MISSED_DEADLINE_*."""
    world = driver_world(V13)
    results: list[tuple[object, ...]] = []

    async def client():
        m = _loop_model()
        prepared = await world.prepared_model(V13, m)
        results.append(
            await world.execute_sync(V13, prepared, request_for(m), loop_timeout_ns=LOOP_TIMEOUT_NS)
        )

    await world.run(client)
    [(status, shapes, _)] = results
    assert status in MISSED_DEADLINE
    assert shapes == ()


async def test_InfiniteLoopTimeoutTest_fenced(autojump_clock, driver_world):
    """executeFenced with a 1 ms loop timeout ends MISSED_DEADLINE_* (at launch or through the fence)."""
    world = driver_world(V13)
    results: list[tuple[object, ...]] = []

    async def client():
        m = _loop_model()
        prepared = await world.prepared_model(V13, m)
        results.append(
            await world.execute_fenced(prepared, request_for(m), loop_timeout_ns=LOOP_TIMEOUT_NS)
        )

    await world.run(client)
    [(launch, fenced)] = results
    status = launch if fenced is None else fenced.get_execution_info()[0]
    assert status in MISSED_DEADLINE


@pytest.mark.parametrize("mode", ["async", "sync", "fenced"])
async def test_InfiniteLoopTimeoutTest_control_default_timeout(autojump_clock, driver_world, mode):
    """The same loop under the default loop timeout (2 s) completes with NONE in every mode."""
    world = driver_world(V13)
    statuses: list[object] = []

    async def client():
        m = _loop_model()
        prepared = await world.prepared_model(V13, m)
        request = request_for(m)
        if mode == "async":
            _, [(status, _, _)] = await world.execute_async(V13, prepared, request)
        elif mode == "sync":
            status, _, _ = await world.execute_sync(
                V13, prepared, request, measure=MeasureTiming.NO
            )
        else:
            launch, fenced = await world.execute_fenced(prepared, request)
            status = launch if fenced is None else fenced.get_execution_info()[0]
        statuses.append(status)

    await world.run(client)
    assert statuses == [ErrorStatus.NONE]
