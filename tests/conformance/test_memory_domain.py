"""The runtime's memory domains: MemoryDesc, createFromDesc and its fallback, Memory_copy,
setInput/OutputFromMemory.

Mirrors ``frameworks/ml/nn/runtime/test/TestMemoryDomain.cpp`` (android11-release) and the
memory cases of ``runtime/test/TestValidation.cpp``; each test names its AOSP test.  The
drivers are emulated HIDL services; TestMemoryDomain's ``TestDriverLatest`` answers of
``allocate`` (OK, BAD_TOKEN, BAD_IBUFFER, BAD_STATUS, NOT_SUPPORTED) replace the service's
``allocate`` as that test driver does.
"""

from __future__ import annotations

import pytest

from nnemu.driver import AidlBurst, DriverService
from nnemu.hal import (
    DataLocation,
    ErrorStatus,
    HalVersion,
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
    Operation,
    OperationType,
    ResultCode,
    Subgraph,
    build_preset,
)
from nnemu.runtime import Burst, Compilation, Execution
from nnemu.runtime._memory import Memory, MemoryDesc, MemoryKind
from nnemu.scenario import DeviceSpec
from tests.conformance._harness import V12, V13
from tests.conformance.test_cts_execution import _perf

OK, BAD_DATA, BAD_STATE, OP_FAILED = (
    ResultCode.NO_ERROR,
    ResultCode.BAD_DATA,
    ResultCode.BAD_STATE,
    ResultCode.OP_FAILED,
)
LT = OperandLifeTime
ALLOCATE_RETURNS = ["OK", "BAD_TOKEN", "BAD_IBUFFER", "BAD_STATUS", "NOT_SUPPORTED"]


def memory_model() -> Model:
    """TestMemoryDomain.cpp ``createTestModel``: ADD(in0, in1) -> out0, SUB(in1, in2) -> temp,
    MUL(out0, temp) -> out1 (dynamic shape {0}); every tensor FLOAT32 {1}."""

    def tensor(lifetime: LT, consumers: int, dims: tuple[int, ...] = (1,)) -> Operand:
        return Operand(
            type=OperandType.TENSOR_FLOAT32,
            dimensions=dims,
            lifetime=lifetime,
            number_of_consumers=consumers,
        )

    act = Operand(
        type=OperandType.INT32,
        lifetime=LT.CONSTANT_COPY,
        number_of_consumers=3,
        location=DataLocation(length=4),
    )
    operands = [
        tensor(LT.SUBGRAPH_INPUT, 1),  # 0 input0
        tensor(LT.SUBGRAPH_INPUT, 2),  # 1 input1
        tensor(LT.SUBGRAPH_INPUT, 1),  # 2 input2
        tensor(LT.TEMPORARY_VARIABLE, 1),  # 3 temp
        tensor(LT.SUBGRAPH_OUTPUT, 1),  # 4 output0
        tensor(LT.SUBGRAPH_OUTPUT, 0, (0,)),  # 5 output1
        act,  # 6
    ]
    operations = [
        Operation(type=OperationType.ADD, inputs=[0, 1, 6], outputs=[4]),
        Operation(type=OperationType.SUB, inputs=[1, 2, 6], outputs=[3]),
        Operation(type=OperationType.MUL, inputs=[4, 3, 6], outputs=[5]),
    ]
    main = Subgraph(
        operands=operands,
        operations=operations,
        input_indexes=[0, 1, 2],
        output_indexes=[4, 5],
    )
    return Model(main=main, operand_values_size=4, name="memory_domain")


class NullBuffer:
    """TestMemoryDomain.cpp ``TestBuffer``: an IBuffer whose copies answer DEVICE_UNAVAILABLE."""

    async def copyTo(self, dst):
        return ErrorStatus.DEVICE_UNAVAILABLE

    async def copyFrom(self, src, dimensions):
        return ErrorStatus.DEVICE_UNAVAILABLE


def _allocate_returns(monkeypatch, answer: str) -> None:
    """Every driver's ``allocate`` answers as ``TestDriverLatest`` with ``answer``."""
    tokens = iter(range(1, 1000))

    async def allocate(self, desc, prepared_models, input_roles, output_roles):
        if answer == "OK":
            return ErrorStatus.NONE, NullBuffer(), next(tokens)
        if answer == "BAD_IBUFFER":
            return ErrorStatus.NONE, None, next(tokens)
        if answer == "BAD_TOKEN":
            return ErrorStatus.NONE, NullBuffer(), 0
        if answer == "BAD_STATUS":
            return ErrorStatus.GENERAL_FAILURE, NullBuffer(), next(tokens)
        return ErrorStatus.GENERAL_FAILURE, None, 0

    monkeypatch.setattr(DriverService, "allocate", allocate)


def _driver(name: str, ops: tuple[OperationType, ...], v12: bool) -> DeviceSpec:
    return DeviceSpec(
        name=name,
        hal_version=V12 if v12 else V13,
        supported_operations=ops,
        performance=_perf(0.1),  # faster than the CPU, as TestDriverLatest
    )


async def _compile(runtime, model: Model, names: list[str], explicit: bool) -> Compilation:
    code, builder = await runtime.create_model(model)
    assert code is OK
    if explicit:
        by_name = {d.name: d for d in await runtime.get_devices()}
        code, compilation = await Compilation.create_for_devices(
            builder, [by_name[n] for n in names]
        )
    else:
        code, compilation = await Compilation.create(builder)
    assert code is OK
    assert await compilation.finish() is OK
    return compilation


async def _allocate(runtime, compilation, inputs, outputs) -> tuple[ResultCode, Memory | None]:
    """TestMemoryDomain.cpp ``allocateDeviceMemory``: a desc of the roles, then createFromDesc."""
    desc = MemoryDesc.create(runtime)
    for index in inputs:
        assert desc.add_input_role(compilation, index, 1.0) is OK
    for index in outputs:
        assert desc.add_output_role(compilation, index, 1.0) is OK
    assert desc.finish() is OK
    answer = await Memory.create_from_desc(desc)
    desc.free()
    return answer


def _expect_fallback(code, memory, *, explicit: bool, v12: bool) -> None:
    """No device memory: OP_FAILED with explicit devices, else ashmem (1.2) / BLOB (1.3)."""
    if explicit:
        assert (code, memory) == (OP_FAILED, None)
        return
    assert code is OK
    assert memory is not None
    assert memory.buffer is None
    assert memory.kind is (MemoryKind.ASHMEM if v12 else MemoryKind.BLOB_AHWB)


PARAMS = [(False, e, r) for e in (False, True) for r in ALLOCATE_RETURNS] + [
    (True, e, "NOT_SUPPORTED") for e in (False, True)
]
params = pytest.mark.parametrize(
    ("v12", "explicit", "answer"),
    PARAMS,
    ids=[f"{'V1_2' if v else 'Latest'}-{'explicit' if e else 'default'}-{r}" for v, e, r in PARAMS],
)


@params
async def test_MemoryDomainTest_SinglePartition(
    autojump_clock, runtime_world, monkeypatch, v12, explicit, answer
):
    """TestMemoryDomain.cpp MemoryDomainTest.SinglePartition: device memory backed by the
    driver's IBuffer when allocate answers OK; otherwise OP_FAILED with explicit devices, else
    ashmem (a 1.2 driver) or a BLOB AHardwareBuffer (1.3)."""
    _allocate_returns(monkeypatch, answer)
    ops = (OperationType.ADD, OperationType.SUB, OperationType.MUL)
    world = runtime_world(_driver("test_driver", ops, v12))
    seen = []

    async def app(runtime):
        compilation = await _compile(runtime, memory_model(), ["test_driver"], explicit)
        seen.append(await _allocate(runtime, compilation, [0], [0]))

    await world.run(app)
    [(code, memory)] = seen
    if answer == "OK":
        assert code is OK
        assert memory.kind is MemoryKind.DEVICE
        assert memory.buffer is not None
    else:
        _expect_fallback(code, memory, explicit=explicit, v12=v12)


@params
async def test_MemoryDomainTest_MultiplePartitions(
    autojump_clock, runtime_world, monkeypatch, v12, explicit, answer
):
    """TestMemoryDomain.cpp MemoryDomainTest.MultiplePartitions: input0, read by one
    partition only, is that partition's driver's memory when allocate answers OK (else the
    fallback rules); input1 and output0, shared by partitions on different drivers, are never
    allocated on a device (OP_FAILED with explicit devices, else ashmem / BLOB)."""
    _allocate_returns(monkeypatch, answer)
    world = runtime_world(
        _driver("test_driver_add", (OperationType.ADD,), v12),
        _driver("test_driver_sub", (OperationType.SUB,), v12),
        _driver("test_driver_mul", (OperationType.MUL,), v12),
    )
    seen = []

    async def app(runtime):
        names = ["test_driver_add", "test_driver_sub", "test_driver_mul"]
        compilation = await _compile(runtime, memory_model(), names, explicit)
        assert len(compilation.steps) == 3
        seen.append(await _allocate(runtime, compilation, [0], []))
        seen.append(await _allocate(runtime, compilation, [1], []))
        seen.append(await _allocate(runtime, compilation, [], [0]))

    await world.run(app)
    (code, memory), *shared = seen
    if answer == "OK":
        assert code is OK
        assert memory.kind is MemoryKind.DEVICE
    else:
        _expect_fallback(code, memory, explicit=explicit, v12=v12)
    for code, memory in shared:
        _expect_fallback(code, memory, explicit=explicit, v12=v12)


@params
async def test_MemoryDomainTest_DynamicShape(
    autojump_clock, runtime_world, monkeypatch, v12, explicit, answer
):
    """TestMemoryDomain.cpp MemoryDomainTest.DynamicShape: output1 (dimensions {0}) is device
    memory when allocate answers OK, and never falls back otherwise (OP_FAILED)."""
    _allocate_returns(monkeypatch, answer)
    ops = (OperationType.ADD, OperationType.SUB, OperationType.MUL)
    world = runtime_world(_driver("test_driver", ops, v12))
    seen = []

    async def app(runtime):
        compilation = await _compile(runtime, memory_model(), ["test_driver"], explicit)
        seen.append(await _allocate(runtime, compilation, [], [1]))

    await world.run(app)
    [(code, memory)] = seen
    if answer == "OK":
        assert code is OK
        assert memory.kind is MemoryKind.DEVICE
    else:
        assert (code, memory) == (OP_FAILED, None)


async def test_MemoryDomainCopyTest_MemoryCopyTest(autojump_clock, runtime_world):
    """TestMemoryDomain.cpp MemoryDomainCopyTest.MemoryCopyTest: ashmem -> device memory ->
    device memory -> ashmem, each copy NO_ERROR, through the driver's copyFrom/copyTo."""
    world = runtime_world(DeviceSpec(name="test_driver", performance=_perf(0.1)))
    seen = []

    async def app(runtime):
        compilation = await _compile(runtime, memory_model(), ["test_driver"], True)
        _, ashmem1 = Memory.create_from_fd(runtime, 4)
        _, ashmem2 = Memory.create_from_fd(runtime, 4)
        _, memory1 = await _allocate(runtime, compilation, [0], [])
        _, memory2 = await _allocate(runtime, compilation, [0], [])
        assert memory1.kind is memory2.kind is MemoryKind.DEVICE
        seen.append(await ashmem1.copy(memory1))
        seen.append(await memory1.copy(memory2))
        seen.append(await memory2.copy(ashmem2))
        seen.append(memory2.initialized)

    await world.run(app)
    assert seen == [OK, OK, OK, True]


# ------------------------------------------------------------------ TestValidation.cpp


async def _add_compilation(runtime, finished: bool = True, dims=(1, 16)):
    m = build_preset("add", "float32", {"size": 16})
    code, builder = await runtime.create_model(m)
    assert code is OK
    [npu] = [d for d in await runtime.get_devices() if d.name == "npu"]
    code, compilation = await Compilation.create_for_devices(builder, [npu])
    assert code is OK
    if finished:
        assert await compilation.finish() is OK
    return compilation


async def test_ValidationTestMemoryDesc_AddInputRole(autojump_clock, runtime_world):
    """TestValidation.cpp ValidationTestMemoryDesc.AddInputRole (and AddOutputRole): an
    unfinished compilation, an index out of range, a frequency of 10, 0 or -1, the same role
    twice are BAD_DATA; a finished desc is BAD_STATE."""
    world = runtime_world(DeviceSpec(name="npu"))
    seen = []

    async def app(runtime):
        for add in ("add_input_role", "add_output_role"):
            compilation = await _add_compilation(runtime, finished=False)
            desc = MemoryDesc.create(runtime)
            role = getattr(desc, add)
            seen.append(role(compilation, 0, 1.0))
            assert await compilation.finish() is OK
            seen.append(role(compilation, 999, 1.0))
            seen.extend([role(compilation, 0, f) for f in (10.0, 0.0, -1.0)])
            seen.extend([role(compilation, 0, 1.0), role(compilation, 0, 1.0)])
            seen.extend([desc.finish(), role(compilation, 0, 1.0)])

    await world.run(app)
    one = [BAD_DATA, BAD_DATA, BAD_DATA, BAD_DATA, BAD_DATA, OK, BAD_DATA, OK, BAD_STATE]
    assert seen == one + one


async def test_ValidationTestMemoryDesc_SetDimensions_Finish_CreateMemory(
    autojump_clock, runtime_world
):
    """TestValidation.cpp ValidationTestMemoryDesc.SetDimensions, Finish and CreateMemory:
    conflicting dimensions or rank are BAD_DATA, a finished desc BAD_STATE; finish without a
    role is BAD_DATA, twice BAD_STATE; createFromDesc of an unfinished desc BAD_STATE."""
    world = runtime_world(DeviceSpec(name="npu"))
    seen = []

    async def app(runtime):
        compilation = await _add_compilation(runtime)
        desc = MemoryDesc.create(runtime)
        seen.append((await Memory.create_from_desc(desc))[0])
        seen.append(desc.finish())
        seen.extend([desc.set_dimensions((1, 16)), desc.set_dimensions((1, 3))])
        seen.append(desc.set_dimensions((1, 16, 1)))
        seen.extend([desc.add_input_role(compilation, 0, 1.0), desc.finish(), desc.finish()])
        seen.append(desc.set_dimensions((1, 16)))

    await world.run(app)
    assert seen == [BAD_STATE, BAD_DATA, OK, BAD_DATA, BAD_DATA, OK, OK, BAD_STATE, BAD_STATE]


async def test_ValidationTestMemoryDesc_MemoryCopying(autojump_clock, runtime_world):
    """TestValidation.cpp ValidationTestMemoryDesc.MemoryCopying (ashmem and device memory
    cases): a size mismatch is BAD_DATA; an uninitialized source device memory is BAD_DATA,
    also after a failed copy into it uninitialized it."""
    world = runtime_world(DeviceSpec(name="npu"))
    seen = []

    async def app(runtime):
        compilation = await _add_compilation(runtime)
        good, bad1, bad2 = (Memory.create_from_fd(runtime, n)[1] for n in (64, 32, 128))
        _, device = await _allocate(runtime, compilation, [0], [])
        assert device.kind is MemoryKind.DEVICE
        seen.extend([await good.copy(bad1), await good.copy(bad2), await bad1.copy(good)])
        seen.extend([await bad1.copy(device), await bad2.copy(device)])
        seen.append(await device.copy(good))  # uninitialized source
        seen.extend([await good.copy(device), await device.copy(bad1)])
        seen.extend([await bad1.copy(device), await device.copy(good)])  # uninitialized again
        seen.extend([await good.copy(device), await device.copy(good)])

    await world.run(app)
    assert seen == [BAD_DATA] * 5 + [BAD_DATA, OK, BAD_DATA, BAD_DATA, BAD_DATA, OK, OK]


async def test_ValidationTestExecutionDeviceMemory_SetInputOutputFromMemory(
    autojump_clock, runtime_world
):
    """TestValidation.cpp ValidationTestExecutionDeviceMemory.SetInputFromMemory and
    SetOutputFromMemory: a device memory used outside its roles, or with an offset or
    length, is BAD_DATA; in its role it is NO_ERROR."""
    world = runtime_world(DeviceSpec(name="npu"))
    seen = []

    async def app(runtime):
        compilation = await _add_compilation(runtime)
        _, memory = await _allocate(runtime, compilation, [0], [0])
        _, execution = Execution.create(compilation)
        seen.append(execution.set_input_from_memory(1, memory))  # not a role
        seen.append(execution.set_input_from_memory(0, memory, 0, 64))  # a length
        seen.append(execution.set_input_from_memory(0, memory, 4, 0))  # an offset
        seen.append(execution.set_output_from_memory(0, memory))
        seen.append(execution.set_input_from_memory(0, memory))
        seen.append(execution.set_input_from_memory(5, memory))  # out of range

    await world.run(app)
    assert seen == [BAD_DATA, BAD_DATA, BAD_DATA, OK, OK, BAD_DATA]


async def test_partitioned_execution_reads_a_partitions_device_memory(
    autojump_clock, runtime_world
):
    """TestMemoryDomain.cpp's MultiplePartitions model run: input0 in the ADD partition's
    device memory reaches that partition's driver by token (its step's input 0), the other
    partitions' requests name no device memory, and the execution completes."""
    world = runtime_world(
        _driver("test_driver_add", (OperationType.ADD,), False),
        _driver("test_driver_sub", (OperationType.SUB,), False),
        _driver("test_driver_mul", (OperationType.MUL,), False),
    )
    seen = []
    requests = []

    async def app(runtime):
        names = ["test_driver_add", "test_driver_sub", "test_driver_mul"]
        compilation = await _compile(runtime, memory_model(), names, True)
        _, memory = await _allocate(runtime, compilation, [0], [])
        _, ashmem = Memory.create_from_fd(runtime, 4)
        seen.append(await ashmem.copy(memory))
        _, execution = Execution.create(compilation)
        assert execution.set_io() is OK
        assert execution.set_output(1, 4, (1,)) is OK
        assert execution.set_input_from_memory(0, memory) is OK
        for index, prepared in compilation.prepared.items():
            execute = prepared.prepared.executeSynchronously_1_3

            async def spy(request, *args, _execute=execute, _index=index):
                requests.append((_index, request.pool_tokens))
                return await _execute(request, *args)

            prepared.prepared.executeSynchronously_1_3 = spy
        seen.append(await execution.compute())

    await world.run(app)
    assert seen == [OK, OK]
    assert requests == [(0, (None, None, 1)), (1, ()), (2, ())]


async def test_ExecutionBuilder_uninitialized_input_memory_then_output_initializes(
    autojump_clock, runtime_world
):
    """ExecutionBuilder.cpp compute / finishWithoutSyncFence: reading an uninitialized memory
    is OP_FAILED before the computation starts; an execution writing the memory as its output
    initializes it, after which reading it computes (on the driver, by token)."""
    world = runtime_world(DeviceSpec(name="npu"))
    seen = []

    async def app(runtime):
        compilation = await _add_compilation(runtime)
        _, memory = await _allocate(runtime, compilation, [0], [0])
        _, ashmem = Memory.create_from_fd(runtime, 64)
        _, reads = Execution.create(compilation)
        assert reads.set_io() is OK
        assert reads.set_input_from_memory(0, memory) is OK
        seen.append(await reads.compute())
        seen.append(reads.started)  # refused before the start: no driver call
        _, writes = Execution.create(compilation)
        assert writes.set_io() is OK
        assert writes.set_output_from_memory(0, memory) is OK
        seen.append(await writes.compute())
        seen.append(memory.initialized)
        _, again = Execution.create(compilation)
        assert again.set_io() is OK
        assert again.set_input_from_memory(0, memory) is OK
        seen.append(await again.compute())
        seen.append(await memory.copy(ashmem))

    await world.run(app)
    assert seen == [OP_FAILED, False, OK, True, OK, OK]
    assert world.service("npu").buffers.live == 1


async def test_Manager_CpuDevice_allocate_is_ashmem(autojump_clock, runtime_world):
    """Manager.cpp CpuDevice::allocate: roles on the runtime's CPU device alone give ashmem
    (not the BLOB fallback), and an unknown size is OP_FAILED (no fallback either)."""
    world = runtime_world()
    seen = []

    async def app(runtime):
        compilation = await _compile(runtime, memory_model(), [], False)
        assert [step.device.is_cpu for step in compilation.steps] == [True]
        seen.append(await _allocate(runtime, compilation, [0], []))
        seen.append(await _allocate(runtime, compilation, [], [1]))

    await world.run(app)
    [(code, memory), failed] = seen
    assert code is OK
    assert memory.kind is MemoryKind.ASHMEM
    assert failed == (OP_FAILED, None)


async def test_ExecutionBuilder_computeFenced_leaves_an_uninitialized_memory_to_the_driver(
    autojump_clock, runtime_world
):
    """ExecutionBuilder.cpp computeFenced has no validateInputDimensions: an uninitialized
    input memory reaches the driver, whose executeFenced refuses it (GENERAL_FAILURE:
    OP_FAILED, no event; createForDevices, so no fallback)."""
    world = runtime_world(DeviceSpec(name="npu"))
    seen = []

    async def app(runtime):
        compilation = await _add_compilation(runtime)
        _, memory = await _allocate(runtime, compilation, [0], [0])
        _, execution = Execution.create(compilation)
        assert execution.set_io() is OK
        assert execution.set_input_from_memory(0, memory) is OK
        seen.append(await execution.start_compute_with_dependencies(()))
        seen.append(execution.started)

    await world.run(app)
    assert seen == [(OP_FAILED, None), True]


BURST_FAMILIES = {
    "hidl1.3": (HalVersion.V1_3, ["HIDL::IPreparedModel::executeSynchronously_1_3"]),
    "aidl-v1": (HalVersion.AIDL_V1, ["AIDL::ndk::IBurst::executeSynchronously"]),
    "aidl-v4": (HalVersion.AIDL_V4, ["AIDL::ndk::IBurst::executeSynchronouslyWithConfig"]),
}


@pytest.mark.parametrize("family", list(BURST_FAMILIES))
async def test_DeviceMemoryTest_under_ComputeMode_BURST(
    autojump_clock, runtime_world, monkeypatch, family
):
    """TestGenerated.cpp DeviceMemoryTest, run by TestMain.cpp's ``ComputeMode::BURST`` pass:
    burstCompute with every input and output in device memory computes, and the output
    memory then copies out.  A HIDL burst's request cannot name device memory
    (``compliantWithV1_2`` false), so Manager.cpp's DriverPreparedModel::execute skips the
    burst for the prepared model's executeSynchronously_1_3 (``burstFallback``); an AIDL
    burst sends the request, its device memory pools by token, through
    ``IBurst::executeSynchronously`` with memory identifier token -1 for every pool
    (aidl/utils Burst::execute: only a cached shared memory has an identifier)."""
    version, expected = BURST_FAMILIES[family]
    world = runtime_world(DeviceSpec(name="npu", hal_version=version))
    calls: list[str] = []
    world.binder.on_call = calls.append
    sent: list[tuple[tuple[int | None, ...], tuple[int, ...]]] = []
    execute = AidlBurst.executeSynchronously

    async def spy(self, request, tokens, *args):
        sent.append((request.pool_tokens, tuple(tokens)))
        return await execute(self, request, tokens, *args)

    monkeypatch.setattr(AidlBurst, "executeSynchronously", spy)
    seen = []
    marker: list[int] = []

    async def app(runtime):
        compilation = await _add_compilation(runtime)
        _, source = await _allocate(runtime, compilation, [0], [])
        _, result = await _allocate(runtime, compilation, [], [0])
        assert source.kind is result.kind is MemoryKind.DEVICE
        _, ashmem = Memory.create_from_fd(runtime, 64)
        assert await ashmem.copy(source) is OK
        code, burst = await Burst.create(compilation)
        assert code is OK
        marker.append(len(calls))
        for _ in range(2):
            _, execution = Execution.create(compilation)
            assert execution.set_io() is OK
            assert execution.set_input_from_memory(0, source) is OK
            assert execution.set_output_from_memory(0, result) is OK
            seen.append(await execution.burst_compute(burst))
        seen.append(await result.copy(ashmem))

    await world.run(app)
    assert seen == [OK, OK, OK]
    copy = "AIDL::ndk::IBuffer::copyTo" if version.aidl else "HIDL::IBuffer::copyTo"
    assert calls[marker[0] :] == [*expected, *expected, copy]
    if version.aidl:
        [(tokens, identifiers)] = set(sent)
        assert tokens[-2:] == (1, 2)  # the input's and the output's memory, by token
        assert identifiers == (-1,) * len(tokens)
    else:
        assert sent == []
