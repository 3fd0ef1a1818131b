"""VTS 1.3 DeadlineTest (QualityOfServiceTests.cpp) against the driver service's 1.3 entry points.

prepareModel_1_3 with priority LOW/HIGH and no deadline ⇒ NONE; with a deadline NOW or
SHORT (now + 5 ms) ⇒ launch NONE, callback NONE or MISSED_DEADLINE_*; UNLIMITED ⇒ NONE;
the model is non-null iff the status is NONE. Executions (async and sync, measure NO)
with the same bounds: same statuses, timing all UINT64_MAX, shapes empty or all
sufficient. Only a 1.3 service has these entry points, so only it is checked.
"""

from __future__ import annotations

import pytest

from nnemu.driver import PreparedModel
from nnemu.hal import NO_TIMING, UINT64_MAX, ErrorStatus, Priority
from tests.conformance._harness import MISSED_DEADLINE, MS, V13, model, models_for, request_for

NONE = ErrorStatus.NONE
MODELS = models_for(V13)
BOUNDS = ["NOW", "SHORT", "UNLIMITED_none", "UNLIMITED_max"]


def _deadline(bound: str, now_ns: int) -> int | None:
    """VTS makeDeadline: NOW = now, SHORT = now + 5 ms, UNLIMITED = none or the largest time point."""
    return {
        "NOW": now_ns,
        "SHORT": now_ns + 5 * MS,
        "UNLIMITED_none": None,
        "UNLIMITED_max": UINT64_MAX,
    }[bound]


def _allowed(bound: str) -> tuple[ErrorStatus, ...]:
    return (NONE,) if bound.startswith("UNLIMITED") else (NONE, *MISSED_DEADLINE)


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("priority", [Priority.LOW, Priority.HIGH], ids=["LOW", "HIGH"])
async def test_DeadlineTest_prepare_priority(autojump_clock, driver_world, priority, name):
    """VTS runPrepareModelTest: priority LOW/HIGH without a deadline prepares with NONE and a model."""
    world = driver_world(V13)
    results: list[tuple[object, list]] = []

    async def client():
        results.append(await world.prepare(V13, model(name), priority=int(priority)))

    await world.run(client)
    [(launch, calls)] = results
    assert launch is NONE
    [(status, prepared)] = calls
    assert status is NONE
    assert isinstance(prepared, PreparedModel)


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("bound", BOUNDS)
async def test_DeadlineTest_prepare(autojump_clock, driver_world, bound, name):
    """VTS runPrepareModelTest: launch NONE; callback NONE or MISSED_DEADLINE_* (UNLIMITED: NONE); model iff NONE."""
    world = driver_world(V13)
    results: list[tuple[object, list]] = []

    async def client():
        deadline = _deadline(bound, world.kernel.task_now_ns())
        results.append(await world.prepare(V13, model(name), deadline_ns=deadline))

    await world.run(client)
    [(launch, calls)] = results
    assert launch is NONE
    [(status, prepared)] = calls
    assert status in _allowed(bound)
    assert (prepared is not None) == (status is NONE)


def _check_execution(bound: str, status: object, shapes: object, timing: object) -> None:
    assert status in _allowed(bound)
    assert timing == NO_TIMING
    if status is NONE:
        assert shapes
        assert all(shape.is_sufficient for shape in shapes)  # type: ignore[attr-defined]
    else:
        assert shapes == ()


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("bound", BOUNDS)
async def test_DeadlineTest_execute_async(autojump_clock, driver_world, bound, name):
    """VTS runExecutionTest (async, measure NO): launch NONE; NONE or MISSED_DEADLINE_*; no timing; shapes sufficient or empty."""
    world = driver_world(V13)
    results: list[tuple[object, list]] = []

    async def client():
        m = model(name)
        prepared = await world.prepared_model(V13, m)
        deadline = _deadline(bound, world.kernel.task_now_ns())
        results.append(
            await world.execute_async(V13, prepared, request_for(m), deadline_ns=deadline)
        )

    await world.run(client)
    [(launch, calls)] = results
    assert launch is NONE
    [(status, shapes, timing)] = calls
    _check_execution(bound, status, shapes, timing)


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("bound", BOUNDS)
async def test_DeadlineTest_execute_sync(autojump_clock, driver_world, bound, name):
    """VTS runExecutionTest (sync, measure NO): NONE or MISSED_DEADLINE_*; no timing; shapes sufficient or empty."""
    world = driver_world(V13)
    results: list[tuple[object, ...]] = []

    async def client():
        m = model(name)
        prepared = await world.prepared_model(V13, m)
        deadline = _deadline(bound, world.kernel.task_now_ns())
        results.append(
            await world.execute_sync(V13, prepared, request_for(m), deadline_ns=deadline)
        )

    await world.run(client)
    [(status, shapes, timing)] = results
    _check_execution(bound, status, shapes, timing)
