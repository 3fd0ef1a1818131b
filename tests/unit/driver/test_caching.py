"""Compilation caching: getNumberOfCacheFilesNeeded, prepareModel* with caches, prepareModelFromCache*."""

from __future__ import annotations

import pytest

from nnemu.hal import ErrorStatus, build_preset
from nnemu.runtime import Compilation, Runtime
from nnemu.scenario import DeviceCostSpec, DeviceSpec
from nnemu.sim import FileSystem
from tests.worlds import V12, V13, DriverWorld, RuntimeWorld

TOKEN = bytes(range(32))
COST = DeviceCostSpec(prepare_ms=100.0, prepare_ms_per_op=0.0, prepare_from_cache_ms=2.0)


def _world(version=V13, cache_files=(1, 2)) -> DriverWorld:
    return DriverWorld(version, cache_files=cache_files, cost=COST)


def _from_cache(world, version, model_cache, data_cache, token, callback):
    service = world.service
    if version is V13:
        return "prepareModelFromCache_1_3", lambda: service.prepareModelFromCache_1_3(
            None, model_cache, data_cache, token, callback
        )
    return "prepareModelFromCache", lambda: service.prepareModelFromCache(
        model_cache, data_cache, token, callback
    )


async def _launch_from_cache(world, version, model_cache, data_cache, token):
    """Call prepareModelFromCache* with a fresh callback and wait 10 ms: (launch status, notifies)."""
    recorder, ref = world.callback()
    method, serve = _from_cache(world, version, model_cache, data_cache, token, ref)
    launch = await world.call(method, serve)
    await world.kernel.sleep(10_000_000)
    return launch, recorder.notifies


@pytest.mark.parametrize("version", [V12, V13], ids=["1.2", "1.3"])
async def test_cache_round_trip(autojump_clock, version):
    """A caching driver saves a full preparation in the cache files; FromCache loads it in its cache time."""
    world = _world(version)
    files = FileSystem()
    model_cache = (files.open("/c/A1"),)
    data_cache = (files.open("/c/A2"), files.open("/c/B2"))
    model = build_preset("add")
    seen = {}

    async def client():
        recorder, ref = world.callback()
        answer = await world.call(
            "getNumberOfCacheFilesNeeded", world.service.getNumberOfCacheFilesNeeded
        )
        seen["counts"] = answer

        def serve():
            if version is V13:
                return world.service.prepareModel_1_3(
                    model, 1, 1, None, model_cache, data_cache, TOKEN, ref
                )
            return world.service.prepareModel_1_2(model, 1, model_cache, data_cache, TOKEN, ref)

        seen["launch"] = await world.call("prepareModel", serve)
        await world.kernel.sleep(200_000_000)
        seen["full"] = recorder.notifies
        recorder2, ref2 = world.callback()
        method, serve = _from_cache(world, version, model_cache, data_cache, TOKEN, ref2)
        started = world.kernel.clock_ns
        seen["cache_launch"] = await world.call(method, serve)
        await world.kernel.sleep(10_000_000)
        seen["cache"] = recorder2.calls
        seen["started"] = started

    await world.run(client)
    assert seen["counts"] == (ErrorStatus.NONE, 1, 2)
    assert seen["launch"] is ErrorStatus.NONE
    assert seen["full"][0][0] is ErrorStatus.NONE
    assert all(files.files[path] is not None for path in ("/c/A1", "/c/A2", "/c/B2"))
    assert seen["cache_launch"] is ErrorStatus.NONE
    [(notified_ns, (status, prepared))] = seen["cache"]
    assert status is ErrorStatus.NONE
    assert prepared is not None
    # Load time (2 ms) plus the one-way latencies of the call and the callback.
    assert notified_ns - seen["started"] < 100_000_000


async def test_from_cache_detects_a_foreign_token(autojump_clock):
    """prepareModelFromCache with another token (a tampered or foreign cache) fails with GENERAL_FAILURE."""
    world = _world()
    files = FileSystem()
    model_cache, data_cache = (files.open("/c/A1"),), (files.open("/c/A2"), files.open("/c/B2"))
    seen = {}

    async def client():
        _, ref = world.callback()
        await world.call(
            "prepareModel_1_3",
            lambda: world.service.prepareModel_1_3(
                build_preset("add"), 1, 1, None, model_cache, data_cache, TOKEN, ref
            ),
        )
        await world.kernel.sleep(200_000_000)
        seen["launch"], seen["notifies"] = await _launch_from_cache(
            world, V13, model_cache, data_cache, bytes(32)
        )

    await world.run(client)
    assert seen["launch"] is ErrorStatus.NONE
    assert seen["notifies"] == [(ErrorStatus.GENERAL_FAILURE, None)]


async def test_from_cache_with_empty_files_fails(autojump_clock):
    """prepareModelFromCache on files nothing was saved in fails with GENERAL_FAILURE, exactly once."""
    world = _world()
    files = FileSystem()
    seen = {}

    async def client():
        seen["launch"], seen["notifies"] = await _launch_from_cache(
            world, V13, (files.open("/x1"),), (files.open("/x2"), files.open("/x3")), TOKEN
        )

    await world.run(client)
    assert seen["launch"] is ErrorStatus.NONE
    assert seen["notifies"] == [(ErrorStatus.GENERAL_FAILURE, None)]


@pytest.mark.parametrize(
    ("n_model", "n_data", "token"),
    [(0, 2, TOKEN), (1, 1, TOKEN), (1, 2, b"short")],
    ids=["model-count", "data-count", "token-length"],
)
async def test_from_cache_bad_arguments(autojump_clock, n_model, n_data, token):
    """Wrong cache handle counts or a token that is not 32 bytes: INVALID_ARGUMENT at launch and notify."""
    world = _world()
    files = FileSystem()
    seen = {}

    async def client():
        seen["launch"], seen["notifies"] = await _launch_from_cache(
            world,
            V13,
            tuple(files.open(f"/m{i}") for i in range(n_model)),
            tuple(files.open(f"/d{i}") for i in range(n_data)),
            token,
        )

    await world.run(client)
    assert seen["launch"] is ErrorStatus.INVALID_ARGUMENT
    assert seen["notifies"] == [(ErrorStatus.INVALID_ARGUMENT, None)]


async def test_non_caching_driver_from_cache_is_general_failure(autojump_clock):
    """A driver that asks for no cache files answers prepareModelFromCache with GENERAL_FAILURE (sample driver)."""
    world = _world(cache_files=(0, 0))
    seen = {}

    async def client():
        seen["launch"], seen["notifies"] = await _launch_from_cache(world, V13, (), (), TOKEN)

    await world.run(client)
    assert seen["launch"] is ErrorStatus.GENERAL_FAILURE
    assert seen["notifies"] == [(ErrorStatus.GENERAL_FAILURE, None)]


async def test_runtime_caches_a_second_compilation(autojump_clock):
    """setCaching: the first finish prepares fully and saves; the second is prepared from the cache."""
    world = RuntimeWorld(DeviceSpec(name="npu", cache_files=(1, 1), cost=COST))
    seen: dict[str, object] = {}

    async def app(runtime: Runtime):
        for attempt in ("first", "second"):
            _, builder = await runtime.create_model(build_preset("add"))
            devices = [d for d in await runtime.get_devices() if d.name == "npu"]
            _, compilation = await Compilation.create_for_devices(builder, devices)
            assert compilation.set_caching("/data/cache/", TOKEN).name == "NO_ERROR"
            started = runtime.kernel.task_now_ns()
            seen[attempt] = (await compilation.finish(), compilation.from_cache)
            seen[attempt + "_ns"] = runtime.kernel.task_now_ns() - started
            seen["files"] = sorted(runtime.files.files)
            compilation.free()

    await world.run(app)
    assert seen["first"][1] == 0
    assert seen["second"][1] == 1
    assert seen["second_ns"] < seen["first_ns"] / 5
    # dir + 64 letters ('A'..'P') + '1'/'2' + index, as the R runtime names them.
    names = [path.removeprefix("/data/cache/") for path in seen["files"]]
    assert [name[-2:] for name in names] == ["10", "20"]
    assert all(len(name) == 66 and set(name[:64]) <= set("ABCDEFGHIJKLMNOP") for name in names)


async def test_set_caching_rules(autojump_clock):
    """setCaching: a token that is not 32 bytes is BAD_DATA; after finish it is BAD_STATE."""
    world = RuntimeWorld(DeviceSpec(name="npu"))
    codes = []

    async def app(runtime: Runtime):
        _, builder = await runtime.create_model(build_preset("add"))
        _, compilation = await Compilation.create(builder)
        codes.append(compilation.set_caching("/d/", b"x" * 31))
        await compilation.finish()
        codes.append(compilation.set_caching("/d/", TOKEN))

    await world.run(app)
    assert [code.name for code in codes] == ["BAD_DATA", "BAD_STATE"]
