"""VTS ValidationTest (ValidateModel.cpp, ValidateRequest.cpp, 1.0-1.3) against the driver service.

Every model mutation must make ``getSupportedOperations*`` return INVALID_ARGUMENT and
``prepareModel*`` return INVALID_ARGUMENT at launch and notify INVALID_ARGUMENT once with
a null model (docs/hal-semantics.md §1.1, §4). Each case runs for every (service, entry point)
pair where the entry point exists: VTS 1.x runs against every service implementing 1.x.
"""

from __future__ import annotations

import pytest

from nnemu.hal import NO_TIMING, ErrorStatus, HalVersion, MeasureTiming
from nnemu.hal.mutations import MODEL_MUTATIONS, REQUEST_MUTATIONS
from tests.conformance._harness import (
    V11,
    V12,
    V13,
    model,
    models_for,
    pair_id,
    request_for,
    version_pairs,
)

INVALID = ErrorStatus.INVALID_ARGUMENT
PAIRS = version_pairs()


async def _check_model_mutations(driver_world, pair, mutation) -> None:
    service_version, version = pair
    world = driver_world(service_version)
    failures: list[str] = []
    checked: list[str] = []

    async def client():
        for name in models_for(version):
            for label, mutant in MODEL_MUTATIONS[mutation](model(name)):
                where = f"{name}: {label}"
                checked.append(where)
                answer = await world.get_supported_operations(version, mutant)
                if answer != (INVALID, ()):
                    failures.append(f"{where}: getSupportedOperations -> {answer}")
                launch, calls = await world.prepare(version, mutant)
                if launch is not INVALID or calls != [(INVALID, None)]:
                    failures.append(f"{where}: prepareModel -> {launch}, notifies {calls}")

    await world.run(client)
    assert checked, f"{mutation} produced no mutant for HAL {version.value}"
    assert failures == []


def _make_test(mutation: str, check, doc: str):
    """The test ``test_ValidationTest_<mutation>``: ``check`` for every (service, entry point) pair."""

    @pytest.mark.parametrize("pair", PAIRS, ids=map(pair_id, PAIRS))
    async def test(autojump_clock, driver_world, pair):
        await check(driver_world, pair, mutation)

    test.__name__ = f"test_ValidationTest_{mutation}"
    test.__doc__ = f"VTS {mutation}: {doc}"
    return test


for _mutation in MODEL_MUTATIONS:
    globals()[f"test_ValidationTest_{_mutation}"] = _make_test(
        _mutation,
        _check_model_mutations,
        "every mutant makes getSupportedOperations* and prepareModel* "
        "(launch and callback, null model) INVALID_ARGUMENT.",
    )
del _mutation


# ------------------------------------------------------------------ preference / priority

PREFERENCE_PAIRS = version_pairs(V11)


async def _prepare_every_model(driver_world, pair, **mutation: object) -> list[object]:
    """What prepareModel_1_x returns and notifies for each model of the pair's version, prepared
    with ``mutation`` (e.g. ``preference=-1``) on a fresh driver of the pair's service version."""
    service_version, version = pair
    world = driver_world(service_version)
    results: list[object] = []

    async def client():
        for name in models_for(version):
            results.append(await world.prepare(version, model(name), **mutation))

    await world.run(client)
    return results


@pytest.mark.parametrize("preference", [-1, 3])
@pytest.mark.parametrize("pair", PREFERENCE_PAIRS, ids=map(pair_id, PREFERENCE_PAIRS))
async def test_ValidationTest_mutateExecutionPreferenceTest(
    autojump_clock, driver_world, pair, preference
):
    """VTS: a preference outside LOW_POWER..SUSTAINED_SPEED makes prepareModel_1_x INVALID_ARGUMENT at launch and in the callback."""
    results = await _prepare_every_model(driver_world, pair, preference=preference)
    assert results
    assert all(r == (INVALID, [(INVALID, None)]) for r in results), results


PRIORITY_PAIRS = version_pairs(V13)


@pytest.mark.parametrize("priority", [-1, 3])
@pytest.mark.parametrize("pair", PRIORITY_PAIRS, ids=map(pair_id, PRIORITY_PAIRS))
async def test_ValidationTest_mutateExecutionPriorityTest(
    autojump_clock, driver_world, pair, priority
):
    """VTS: a priority outside LOW..HIGH makes prepareModel_1_3 INVALID_ARGUMENT at launch and in the callback."""
    results = await _prepare_every_model(driver_world, pair, priority=priority)
    assert results
    assert all(r == (INVALID, [(INVALID, None)]) for r in results), results


# ------------------------------------------------------------------ null callback


@pytest.mark.parametrize("pair", PAIRS, ids=map(pair_id, PAIRS))
async def test_ValidationTest_prepareModel_nullCallback(autojump_clock, driver_world, pair):
    """A null IPreparedModelCallback makes prepareModel* return INVALID_ARGUMENT (nothing to notify)."""
    service_version, version = pair
    world = driver_world(service_version)
    results: list[object] = []

    async def client():
        results.append(await world.prepare(version, model("add_float32"), null_callback=True))

    await world.run(client)
    assert results == [(INVALID, [])]


@pytest.mark.parametrize("pair", PAIRS, ids=map(pair_id, PAIRS))
async def test_ValidationTest_execute_nullCallback(autojump_clock, driver_world, pair):
    """A null IExecutionCallback makes execute* return INVALID_ARGUMENT (nothing to notify)."""
    service_version, version = pair
    world = driver_world(service_version)
    results: list[object] = []

    async def client():
        m = model("add_float32")
        prepared = await world.prepared_model(version, m)
        results.append(
            await world.execute_async(version, prepared, request_for(m), null_callback=True)
        )

    await world.run(client)
    assert results == [(INVALID, [])]


# ------------------------------------------------------------------ request mutations


async def _check_request_mutations(driver_world, pair, mutation) -> None:
    service_version, version = pair
    world = driver_world(service_version)
    failures: list[str] = []
    checked: list[str] = []

    async def client():
        for name in models_for(version):
            m = model(name)
            prepared = await world.prepared_model(version, m)
            for label, request in REQUEST_MUTATIONS[mutation](request_for(m)):
                where = f"{name}: {label}"
                checked.append(where)
                for measure in (MeasureTiming.NO, MeasureTiming.YES):
                    launch, calls = await world.execute_async(
                        version, prepared, request, measure=measure
                    )
                    if launch is not INVALID or calls != [(INVALID, (), NO_TIMING)]:
                        failures.append(f"{where}: execute {measure.name} -> {launch}, {calls}")
                    if version.at_least(V12):
                        answer = await world.execute_sync(
                            version, prepared, request, measure=measure
                        )
                        if answer != (INVALID, (), NO_TIMING):
                            failures.append(f"{where}: executeSynchronously -> {answer}")
                    if version is V13:
                        answer = await world.execute_fenced(prepared, request, measure=measure)
                        if answer != (INVALID, None):
                            failures.append(f"{where}: executeFenced -> {answer}")

    await world.run(client)
    assert checked
    assert failures == []


for _mutation in REQUEST_MUTATIONS:
    globals()[f"test_ValidationTest_{_mutation}"] = _make_test(
        _mutation,
        _check_request_mutations,
        "execute* (launch and callback), executeSynchronously* and "
        "executeFenced return INVALID_ARGUMENT with no shapes and no timing.",
    )
del _mutation


# ------------------------------------------------------------------ executeFenced wait handle


async def test_ValidationTest_executeFenced_nullWaitHandle(autojump_clock, driver_world):
    """VTS: executeFenced with a null sync fence in waitFor returns INVALID_ARGUMENT, empty handle, null callback."""
    world = driver_world(HalVersion.V1_3)
    results: list[object] = []

    async def client():
        for name in models_for(V13):
            m = model(name)
            prepared = await world.prepared_model(V13, m)
            results.append(await world.execute_fenced(prepared, request_for(m), wait_for=(None,)))

    await world.run(client)
    assert results
    assert all(r == (INVALID, None) for r in results), results
