"""AHardwareBuffer memories: ``ANeuralNetworksMemory_createFromAHardwareBuffer``.

Mirrors the AHardwareBuffer cases of ``frameworks/ml/nn/runtime/test/TestValidation.cpp``
(android11-release: ValidationTestExecution.SetInputFromAHardwareBufferBlob,
SetOutputFromAHardwareBufferBlob) and what their execution meets on the way down, as
``runtime/Memory.cpp`` (``MemoryAHWB::create``: ``hardware_buffer_blob`` of ``width`` bytes
with ``SizedMemoryValidator``, any other format ``hardware_buffer`` of size 0 with
``AHardwareBufferNonBlobValidator``: offset and length 0), ``common/Utils.cpp``
(``compliantWithV1_0``: no AHardwareBuffer for a 1.0/1.1 driver, so
``VersionedIPreparedModel::execute`` fails with GENERAL_FAILURE), ``common/ValidateHal.cpp``
(``validatePool``: the AHardwareBuffer names from 1.2), ``common/CpuExecutor.cpp``
(``RunTimePoolInfo::createFromHidlMemory`` maps ashmem, mmap_fd and BLOB buffers only: the
sample driver answers GENERAL_FAILURE for a non-BLOB one) and ``runtime/Manager.cpp``
(``CpuPreparedModel::execute``: UNMAPPABLE, app-visible OP_FAILED).
"""

from __future__ import annotations

import pytest

from nnemu.driver import AidlBurst
from nnemu.hal import (
    HARDWARE_BUFFER,
    HARDWARE_BUFFER_BLOB,
    HalVersion,
    Request,
    RequestArgument,
    ResultCode,
    build_preset,
    validate_request,
)
from nnemu.runtime import (
    AHardwareBufferDesc,
    AHardwareBufferFormat,
    Burst,
    Compilation,
    Execution,
    Memory,
    MemoryKind,
)
from nnemu.scenario import DeviceSpec
from tests.conformance.test_cts_execution import _perf

OK, BAD_DATA, OP_FAILED = ResultCode.NO_ERROR, ResultCode.BAD_DATA, ResultCode.OP_FAILED
BLOB = AHardwareBufferDesc(width=20)
"""TestValidation's buffer: ``memorySize`` 20, BLOB, height and layers 1."""
IMAGE = AHardwareBufferDesc(width=16, height=16, format=AHardwareBufferFormat.R8G8B8A8_UNORM)
"""TestValidation's non-BLOB buffer: 16 x 16 R8G8B8A8_UNORM."""
FLOAT = 4


async def _execution(runtime, devices: list[str] | None = None) -> Execution:
    """ValidationTestExecution: ADD of two float32 tensors, its execution created."""
    code, builder = await runtime.create_model(build_preset("add", "float32", {"size": 1}))
    assert code is OK
    if devices is None:
        code, compilation = await Compilation.create(builder)
    else:
        by_name = {d.name: d for d in await runtime.get_devices()}
        code, compilation = await Compilation.create_for_devices(
            builder, [by_name[n] for n in devices]
        )
    assert code is OK
    assert await compilation.finish() is OK
    code, execution = Execution.create(compilation)
    assert code is OK
    return execution


@pytest.mark.parametrize("output", [False, True], ids=["SetInput", "SetOutput"])
async def test_ValidationTestExecution_SetFromAHardwareBufferBlob(
    autojump_clock, runtime_world, output
):
    """TestValidation.cpp ValidationTestExecution.SetInputFromAHardwareBufferBlob and
    SetOutputFromAHardwareBufferBlob: a BLOB buffer of 20 bytes is a memory; the whole of it
    (not a float32's size), an offset past it, or a float32 running past its end are
    BAD_DATA; a float32 inside it is accepted."""
    world = runtime_world(DeviceSpec(name="npu"))
    seen = []

    async def app(runtime):
        execution = await _execution(runtime)
        code, memory = Memory.create_from_ahardware_buffer(runtime, BLOB)
        seen.append(code)
        assert memory.kind is MemoryKind.BLOB_AHWB
        assert memory.size == 20
        assert memory.pool_name == HARDWARE_BUFFER_BLOB
        set_from = execution.set_output_from_memory if output else execution.set_input_from_memory
        seen.append(set_from(0, memory, 0, 20))
        seen.append(set_from(0, memory, 21, FLOAT))
        seen.append(set_from(0, memory, 20 - 3, FLOAT))
        seen.append(set_from(0, memory, 0, 0))  # SizedMemoryValidator: size cannot be implied
        seen.append(set_from(0, memory, 16, FLOAT))

    await world.run(app)
    assert seen == [OK, BAD_DATA, BAD_DATA, BAD_DATA, BAD_DATA, OK]


async def test_AHardwareBufferNonBlobValidator_whole_buffer_only(autojump_clock, runtime_world):
    """Memory.cpp AHardwareBufferNonBlobValidator: a non-BLOB buffer (16 x 16 RGBA, as
    ValidationTestModel.SetOperandValueFromAHardwareBuffer's) is a memory of unknown size,
    usable as an execution's input or output only whole: offset and length 0, anything
    else BAD_DATA."""
    world = runtime_world(DeviceSpec(name="npu"))
    seen = []

    async def app(runtime):
        execution = await _execution(runtime)
        code, memory = Memory.create_from_ahardware_buffer(runtime, IMAGE)
        seen.append(code)
        assert (memory.kind, memory.size, memory.pool_name) == (
            MemoryKind.HARDWARE_BUFFER,
            0,
            HARDWARE_BUFFER,
        )
        seen.append(execution.set_input_from_memory(0, memory, 0, FLOAT))
        seen.append(execution.set_input_from_memory(0, memory, FLOAT, 0))
        seen.append(execution.set_input_from_memory(0, memory, 0, 0))
        seen.append(execution.set_output_from_memory(0, memory, 0, 0))

    await world.run(app)
    assert seen == [OK, BAD_DATA, BAD_DATA, OK, OK]


def _devices(version: HalVersion, hardware_buffers: bool = False) -> DeviceSpec:
    """An NPU faster than the CPU (so Compilation_create puts the model on it)."""
    return DeviceSpec(
        name="npu",
        hal_version=version,
        hardware_buffers=hardware_buffers,
        performance=_perf(0.1),
    )


async def _compute(runtime, spy, memory_desc, devices=None) -> tuple[ResultCode, bool]:
    """One computation with input 0 in a new AHardwareBuffer memory (whole, or the float32
    at offset 8 of a BLOB one): its code and whether it fell back to the CPU."""
    execution = await _execution(runtime, devices)
    assert execution.set_io() is OK
    _, memory = Memory.create_from_ahardware_buffer(runtime, memory_desc)
    offset, length = (8, FLOAT) if memory.size else (0, 0)
    assert execution.set_input_from_memory(0, memory, offset, length) is OK
    for prepared in execution.compilation.prepared.values():
        spy(prepared)
    code = await execution.compute()
    return code, execution.fell_back


def _requests(requests: list[Request]):
    def spy(prepared) -> None:
        inner = prepared.prepared
        for name in ("execute", "executeSynchronously", "executeSynchronously_1_3"):
            method = getattr(inner, name, None)
            if method is None:
                continue

            async def recorded(request, *args, _method=method):
                requests.append(request)
                return await _method(request, *args)

            setattr(inner, name, recorded)

    return spy


@pytest.mark.parametrize(
    "version", [HalVersion.V1_2, HalVersion.V1_3, HalVersion.AIDL_V2], ids=lambda v: v.value
)
async def test_BLOB_buffer_reaches_a_1_2_driver_as_its_pool(autojump_clock, runtime_world, version):
    """MemoryAHWB / DriverPreparedModel::execute: the BLOB buffer is a request pool of its
    own (``hardware_buffer_blob``, 20 bytes) and the input's argument names it at offset 8,
    length 4; a 1.2+ driver maps it (RunTimePoolInfo) and the execution completes there."""
    world = runtime_world(_devices(version))
    requests: list[Request] = []
    seen = []

    async def app(runtime):
        seen.append(await _compute(runtime, _requests(requests), BLOB, ["npu"]))

    await world.run(app)
    assert seen == [(OK, False)]
    if not version.aidl:
        [request] = requests
        assert request.pool_names[-1] == HARDWARE_BUFFER_BLOB
        assert request.pool_sizes[-1] == 20
        argument: RequestArgument = request.inputs[0]
        assert argument.location.pool_index == len(request.pool_sizes) - 1
        assert (argument.location.offset, argument.location.length) == (8, FLOAT)


@pytest.mark.parametrize("version", [HalVersion.V1_0, HalVersion.V1_1], ids=lambda v: v.value)
async def test_compliantWithV1_0_keeps_buffers_from_a_1_0_driver(
    autojump_clock, runtime_world, version
):
    """Utils.cpp compliantWithV1_0 / VersionedIPreparedModel::execute: a request with an
    AHardwareBuffer pool cannot cross a 1.0/1.1 interface: no execute call, GENERAL_FAILURE;
    the runtime's CPU (which maps BLOB buffers) then computes it when fallback is allowed,
    and with the device chosen explicitly the execution is OP_FAILED."""
    world = runtime_world(_devices(version))
    requests: list[Request] = []
    seen = []

    async def app(runtime):
        seen.append(await _compute(runtime, _requests(requests), BLOB))
        seen.append(await _compute(runtime, _requests(requests), BLOB, ["npu"]))

    await world.run(app)
    assert requests == []
    assert seen == [(OK, True), (OP_FAILED, False)]


@pytest.mark.parametrize(
    ("hardware_buffers", "expected"),
    [(False, OP_FAILED), (True, OK)],
    ids=["sample-driver", "hardware_buffers"],
)
async def test_non_BLOB_buffer_needs_a_driver_that_maps_it(
    autojump_clock, runtime_world, hardware_buffers, expected
):
    """CpuExecutor.cpp RunTimePoolInfo::createFromHidlMemory: the sample driver cannot map a
    ``hardware_buffer`` pool (GENERAL_FAILURE), nor can the runtime's CPU (Manager.cpp
    CpuPreparedModel::execute: UNMAPPABLE), so the execution is OP_FAILED even with CPU
    fallback; a driver that maps them (``hardware_buffers``) computes it, reading it whole."""
    world = runtime_world(_devices(HalVersion.V1_3, hardware_buffers))
    requests: list[Request] = []
    seen = []

    async def app(runtime):
        seen.append(await _compute(runtime, _requests(requests), IMAGE))

    await world.run(app)
    assert seen == [(expected, not hardware_buffers)]  # (the failed step fell back)
    [request] = requests
    assert request.pool_names[-1] == HARDWARE_BUFFER
    assert request.inputs[0].location.length == 0


def test_validatePool_AHardwareBuffer_names_from_1_2() -> None:
    """ValidateHal.cpp validatePool: ``hardware_buffer_blob`` and ``hardware_buffer`` pools
    are valid from HAL 1.2; before, and for any other name, the request is invalid."""
    model = build_preset("add", "float32", {"size": 1})
    argument = RequestArgument()
    for name in (HARDWARE_BUFFER_BLOB, HARDWARE_BUFFER):
        request = Request(
            inputs=[argument, argument], outputs=[argument], pool_sizes=[4], pool_names=[name]
        )
        assert validate_request(request, model) is None
        assert validate_request(request, model, allow_hardware_buffers=False) is not None
    odd = Request(inputs=[argument] * 2, outputs=[argument], pool_sizes=[4], pool_names=["gralloc"])
    assert validate_request(odd, model) == "request has a pool of an unsupported memory type"


async def test_CpuPreparedModel_non_BLOB_buffer_is_unmappable(autojump_clock, runtime_world):
    """Manager.cpp CpuPreparedModel::execute: with the model on the runtime's CPU, a non-BLOB
    input has no RunTimePoolInfo: UNMAPPABLE, which the app sees as OP_FAILED; a BLOB one
    computes."""
    world = runtime_world()
    seen = []

    async def app(runtime):
        seen.append((await _compute(runtime, lambda prepared: None, IMAGE))[0])
        seen.append((await _compute(runtime, lambda prepared: None, BLOB))[0])

    await world.run(app)
    assert seen == [OP_FAILED, OK]


@pytest.mark.parametrize("version", [HalVersion.AIDL_V1, HalVersion.AIDL_V4], ids=lambda v: v.value)
async def test_Burst_MemoryCache_identifiers_and_releaseMemoryResource(
    autojump_clock, runtime_world, monkeypatch, version
):
    """aidl/utils Burst.cpp (Burst::execute, MemoryCache) and Manager.cpp
    DriverPreparedModel::execute (cacheMemory, RuntimeMemory::hold): a burst execution names
    each shared memory by an identifier the burst gave it (0, 1, ... in the order met; the
    same memory keeps its identifier), any other pool by -1; freeing a memory while the burst
    lives calls IBurst::releaseMemoryResource(identifier) once, and a memory freed after
    ANeuralNetworksBurst_free releases nothing (the cache went with the burst)."""
    world = runtime_world(_devices(version))
    calls: list[str] = []
    world.binder.on_call = calls.append
    sent: list[tuple[int, ...]] = []
    released: list[int] = []
    execute = AidlBurst.executeSynchronously

    async def spy(self, request, tokens, *args):
        sent.append(tuple(tokens))
        return await execute(self, request, tokens, *args)

    release = AidlBurst.releaseMemoryResource

    async def spy_release(self, token):
        released.append(token)
        return await release(self, token)

    monkeypatch.setattr(AidlBurst, "executeSynchronously", spy)
    monkeypatch.setattr(AidlBurst, "releaseMemoryResource", spy_release)
    seen = []

    async def app(runtime):
        execution = await _execution(runtime, ["npu"])
        compilation = execution.compilation
        code, burst = await Burst.create(compilation)
        assert code is OK
        image = Memory.create_from_ahardware_buffer(runtime, BLOB)[1]
        scores = Memory.create_from_ahardware_buffer(runtime, BLOB)[1]
        for _ in range(2):
            _, execution = Execution.create(compilation)
            assert execution.set_io() is OK
            assert execution.set_input_from_memory(1, image, 0, FLOAT) is OK
            assert execution.set_output_from_memory(0, scores, 4, FLOAT) is OK
            seen.append(await execution.burst_compute(burst))
        await image.free()
        burst.free()
        await scores.free()

    await world.run(app)
    assert seen == [OK, OK]
    # The runtime's two pools for pointer arguments (inputs, outputs), then input 1's and
    # output 0's buffers.
    assert sent == [(-1, -1, 0, 1), (-1, -1, 0, 1)]
    assert released == [0]
    assert calls.count("AIDL::ndk::IBurst::releaseMemoryResource") == 1
