"""VTS memory domains: ``IDevice::allocate``, ``IBuffer::copyTo/copyFrom`` and executions on
device memory, against a HIDL 1.3 driver and an AIDL v4 driver.

Mirrors ``hardware/interfaces/neuralnetworks/1.3/vts/functional/MemoryDomainTests.cpp`` and
its AIDL twin ``neuralnetworks/aidl/vts/functional/MemoryDomainTests.cpp`` case by case:
each test is run for both families (``family``) and VTS's four operand types (``kind``);
the execution cases for each executor the family has (HIDL: async, sync, fenced; AIDL:
sync, burst, fenced -- the AIDL file's ``kExecutorChoices``; its ``executeBurst`` sends
``IBurst::executeSynchronously`` with memory identifier token -1 for every pool).  VTS's CONV_2D test model is an ADD with a constant (nnemu computes no
values: what VTS's cases look at is each input's and output's operand), its single-ADD
model the same as VTS's.  The emulated driver follows the sample driver, so the VTS cases
that return early when ``allocate`` fails (a dynamic shape) check that it fails with
GENERAL_FAILURE, as the sample driver does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import attrs
import pytest

from nnemu.driver import AidlBurst, AidlDevice, AidlPreparedModel, PreparedModel
from nnemu.hal import (
    UINT64_MAX,
    BufferDesc,
    BufferRole,
    DataLocation,
    DeviceBuffer,
    ErrorStatus,
    ExecutionResult,
    HalVersion,
    MeasureTiming,
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
    Operation,
    OperationType,
    Request,
    RequestArgument,
    ServiceSpecificError,
    SharedMemory,
    Subgraph,
)
from tests.conformance._harness import DriverWorld

LT = OperandLifeTime
NONE, INVALID, GENERAL = (
    ErrorStatus.NONE,
    ErrorStatus.INVALID_ARGUMENT,
    ErrorStatus.GENERAL_FAILURE,
)
FAMILIES = {"hidl1.3": HalVersion.V1_3, "aidl-v4": HalVersion.AIDL_V4}
KINDS = {
    # VTS kTestOperandMap: {1, 32, 32, 8}, scale 0.5 for the quantized types.
    "TENSOR_FLOAT32": (OperandType.TENSOR_FLOAT32, 0.0),
    "TENSOR_FLOAT16": (OperandType.TENSOR_FLOAT16, 0.0),
    "TENSOR_QUANT8_ASYMM": (OperandType.TENSOR_QUANT8_ASYMM, 0.5),
    "TENSOR_QUANT8_ASYMM_SIGNED": (OperandType.TENSOR_QUANT8_ASYMM_SIGNED, 0.5),
}
CONFLICT_TYPE = {
    OperandType.TENSOR_FLOAT32: OperandType.TENSOR_FLOAT16,
    OperandType.TENSOR_FLOAT16: OperandType.TENSOR_FLOAT32,
    OperandType.TENSOR_QUANT8_ASYMM: OperandType.TENSOR_QUANT8_ASYMM_SIGNED,
    OperandType.TENSOR_QUANT8_ASYMM_SIGNED: OperandType.TENSOR_QUANT8_ASYMM,
}
DIMS = (1, 32, 32, 8)

family_param = pytest.mark.parametrize("family", list(FAMILIES))
kind_param = pytest.mark.parametrize("kind", list(KINDS))


def _test_operand(kind: str) -> Operand:
    operand_type, scale = KINDS[kind]
    return Operand(
        type=operand_type,
        dimensions=DIMS,
        scale=scale,
        number_of_consumers=1,
        lifetime=LT.SUBGRAPH_INPUT,
    )


def _size(operand: Operand) -> int:
    return 32 * 32 * 8 * operand.type.element_bytes  # kTestOperandDataSize of {1, 32, 32, 8}


def conv_model(operand: Operand, operations: int = 1) -> Model:
    """VTS ``createConvModel``: ``operations`` independent ops, each with the operand as its
    input and an output like it (an ADD of a broadcast constant stands for CONV_2D)."""
    operands: list[Operand] = []
    ops: list[Operation] = []
    values = 0
    for _ in range(operations):
        base = len(operands)
        channels = operand.dimensions[-1] * operand.type.element_bytes
        constant = attrs.evolve(
            operand,
            dimensions=(1, 1, 1, operand.dimensions[-1]),
            lifetime=LT.CONSTANT_COPY,
            location=DataLocation(offset=values, length=channels),
        )
        act = Operand(
            type=OperandType.INT32,
            number_of_consumers=1,
            lifetime=LT.CONSTANT_COPY,
            location=DataLocation(offset=values + channels, length=4),
        )
        values += channels + 4
        output = attrs.evolve(operand, number_of_consumers=0, lifetime=LT.SUBGRAPH_OUTPUT)
        operands += [operand, constant, act, output]
        ops.append(
            Operation(type=OperationType.ADD, inputs=[base, base + 1, base + 2], outputs=[base + 3])
        )
    return Model(
        main=Subgraph(
            operands=operands,
            operations=ops,
            input_indexes=range(0, len(operands), 4),
            output_indexes=range(3, len(operands), 4),
        ),
        operand_values_size=values,
    )


def add_model(operand: Operand) -> Model:
    """VTS ``createSingleAddModel``: ADD(operand, operand, act) with act an INT32 input."""
    act = Operand(type=OperandType.INT32, number_of_consumers=1, lifetime=LT.SUBGRAPH_INPUT)
    output = attrs.evolve(operand, number_of_consumers=0, lifetime=LT.SUBGRAPH_OUTPUT)
    return Model(
        main=Subgraph(
            operands=[operand, operand, act, output],
            operations=[Operation(type=OperationType.ADD, inputs=[0, 1, 2], outputs=[3])],
            input_indexes=[0, 1, 2],
            output_indexes=[3],
        )
    )


class Client:
    """The VTS binary of one driver (HIDL 1.3 or AIDL v4), answers in the HIDL family's form."""

    def __init__(self, family: str) -> None:
        self.version = FAMILIES[family]
        self.world = DriverWorld(self.version)
        self.aidl = self.version.aidl
        self.device = AidlDevice(self.world.service) if self.aidl else self.world.service

    async def call(self, iface: str, method: str, serve: Callable[[], Awaitable[object]]) -> object:
        world = self.world
        return await world.binder.call(
            world.service.endpoint, self.version.interface(iface), method, serve
        )

    async def prepare(self, model: Model) -> object:
        """A prepared model (prepareModel_1_3 / AIDL prepareModel), which must succeed."""
        recorder, ref = self.world.callback()
        device = self.device
        if self.aidl:
            assert isinstance(device, AidlDevice)
            launch = await self.call(
                "IDevice",
                "prepareModel",
                lambda: device.prepareModel(model, 1, 1, -1, (), (), b"\0" * 32, ref),
            )
            assert launch is None
        else:
            service = self.world.service
            launch = await self.call(
                "IDevice",
                "prepareModel_1_3",
                lambda: service.prepareModel_1_3(model, 1, 1, None, (), (), b"\0" * 32, ref),
            )
            assert launch is NONE
        await self.world.settle()
        [(status, prepared)] = recorder.notifies
        assert status is NONE
        assert isinstance(prepared, AidlPreparedModel if self.aidl else PreparedModel)
        return prepared

    async def allocate(
        self,
        prepared_models: list[object | None],
        inputs: list[BufferRole] = (),  # type: ignore[assignment]
        outputs: list[BufferRole] = (),  # type: ignore[assignment]
        dimensions: tuple[int, ...] = (),
    ) -> tuple[ErrorStatus, object, int]:
        """allocate: (status, buffer, token); an AIDL failure must be a service-specific
        error and its success a DeviceBuffer, a HIDL failure a null buffer and token 0."""
        device = self.device
        answer = await self.call(
            "IDevice",
            "allocate",
            lambda: device.allocate(
                BufferDesc(dimensions=dimensions), prepared_models, inputs, outputs
            ),
        )
        if self.aidl:
            if isinstance(answer, ServiceSpecificError):
                return answer.status, None, 0
            assert isinstance(answer, DeviceBuffer)
            assert answer.token > 0
            return NONE, answer.buffer, answer.token
        status, buffer, token = answer  # type: ignore[misc]
        if status is NONE:
            assert buffer is not None
            assert token > 0
        else:
            assert (buffer, token) == (None, 0)
        return status, buffer, token

    async def validate_allocate(self, *args: object, **kwargs: object) -> None:
        """VTS ``validateAllocate``: INVALID_ARGUMENT or GENERAL_FAILURE, no buffer."""
        status, _, _ = await self.allocate(*args, **kwargs)  # type: ignore[arg-type]
        assert status in (INVALID, GENERAL)

    async def allocate_buffer(
        self,
        prepared: object,
        inputs: list[int],
        outputs: list[int],
        dimensions: tuple[int, ...] = (),
    ) -> tuple[object, int]:
        """VTS ``allocateBuffer``: roles of one model; NONE, else GENERAL_FAILURE (no buffer)."""
        status, buffer, token = await self.allocate(
            [prepared],
            [BufferRole(model_index=0, io_index=i) for i in inputs],
            [BufferRole(model_index=0, io_index=i) for i in outputs],
            dimensions,
        )
        assert status in (NONE, GENERAL)
        return buffer, token

    async def copy_from(
        self, buffer: object, size: int, dimensions: tuple[int, ...]
    ) -> ErrorStatus:
        answer = await self.call(
            "IBuffer",
            "copyFrom",
            lambda: buffer.copyFrom(SharedMemory(size), dimensions),  # type: ignore[attr-defined]
        )
        if self.aidl:
            return NONE if answer is None else answer.status  # type: ignore[union-attr]
        assert isinstance(answer, ErrorStatus)
        return answer

    async def copy_to(self, buffer: object, size: int) -> ErrorStatus:
        answer = await self.call(
            "IBuffer",
            "copyTo",
            lambda: buffer.copyTo(SharedMemory(size)),  # type: ignore[attr-defined]
        )
        if self.aidl:
            return NONE if answer is None else answer.status  # type: ignore[union-attr]
        assert isinstance(answer, ErrorStatus)
        return answer

    async def execute(self, executor: str, prepared: object, request: Request) -> ErrorStatus:
        """VTS ``testExecution``'s executors; the status, timing and shapes checked as VTS does."""
        if executor == "async":
            assert isinstance(prepared, PreparedModel)
            recorder, ref = self.world.callback()
            launch = await self.call(
                "IPreparedModel",
                "execute_1_3",
                lambda: prepared.execute_1_3(request, MeasureTiming.NO, None, None, ref),
            )
            await self.world.settle()
            [(status, shapes, timing)] = recorder.notifies
            if launch is not NONE:
                assert status is launch
            assert (timing.time_on_device_us, timing.time_in_driver_us) == (UINT64_MAX, UINT64_MAX)  # type: ignore[attr-defined]
            if status is not NONE:
                assert shapes == ()
            return status  # type: ignore[return-value]
        if executor == "sync" and not self.aidl:
            assert isinstance(prepared, PreparedModel)
            status, shapes, timing = await self.call(  # type: ignore[misc]
                "IPreparedModel",
                "executeSynchronously_1_3",
                lambda: prepared.executeSynchronously_1_3(request, MeasureTiming.NO, None, None),
            )
            assert (timing.time_on_device_us, timing.time_in_driver_us) == (UINT64_MAX, UINT64_MAX)
            if status is not NONE:
                assert shapes == ()
            return status  # type: ignore[no-any-return]
        if executor == "sync":
            assert isinstance(prepared, AidlPreparedModel)
            answer = await self.call(
                "IPreparedModel",
                "executeSynchronously",
                lambda: prepared.executeSynchronously(request, False, -1, -1),
            )
            if isinstance(answer, ServiceSpecificError):
                return answer.status
            assert isinstance(answer, ExecutionResult)
            assert answer.timing.time_on_device_ns == -1
            return NONE
        if not self.aidl:
            assert isinstance(prepared, PreparedModel)
            status, callback = await self.call(  # type: ignore[misc]
                "IPreparedModel",
                "executeFenced",
                lambda: prepared.executeFenced(request, (), MeasureTiming.NO, None, None, None),
            )
            if status is not NONE:
                assert callback is None
                return status  # type: ignore[no-any-return]
            status, launched, _ = callback.get_execution_info()
            assert launched.time_on_device_us == UINT64_MAX
            return status  # type: ignore[no-any-return]
        if executor == "burst":
            return await self._execute_burst(prepared, request)
        assert isinstance(prepared, AidlPreparedModel)
        answer = await self.call(
            "IPreparedModel",
            "executeFenced",
            lambda: prepared.executeFenced(request, (), False, -1, -1, -1),
        )
        if isinstance(answer, ServiceSpecificError):
            return answer.status
        launched, _, status = answer.getExecutionInfo()  # type: ignore[union-attr]
        assert launched.time_on_device_ns == -1
        return status  # type: ignore[no-any-return]

    async def _execute_burst(self, prepared: object, request: Request) -> ErrorStatus:
        """VTS ``executeBurst``: configureExecutionBurst, then ``IBurst::executeSynchronously``
        with -1 for every memory identifier token (a device memory pool included)."""
        assert isinstance(prepared, AidlPreparedModel)
        burst = await self.call(
            "IPreparedModel", "configureExecutionBurst", prepared.configureExecutionBurst
        )
        assert isinstance(burst, AidlBurst)
        slots = (-1,) * len(request.pool_sizes)
        answer = await self.call(
            "IBurst",
            "executeSynchronously",
            lambda: burst.executeSynchronously(request, slots, False, -1, -1),
        )
        if isinstance(answer, ServiceSpecificError):
            return answer.status
        assert isinstance(answer, ExecutionResult)
        assert answer.timing.time_on_device_ns == -1
        return NONE


def _run(family: str, body: Callable[[Client], Awaitable[None]]) -> Callable[[], Awaitable[None]]:
    async def test() -> None:
        client = Client(family)
        await client.world.run(lambda: body(client))

    return test


def _role(model_index: int = 0, io_index: int = 0, frequency: float = 1.0) -> BufferRole:
    return BufferRole(model_index=model_index, io_index=io_index, frequency=frequency)


# --------------------------------------------------------------------- MemoryDomainAllocateTest


@family_param
@kind_param
async def test_MemoryDomainAllocateTest_EmptyRole(family, kind, autojump_clock):
    """MemoryDomainTests.cpp MemoryDomainAllocateTest.EmptyRole: no models and roles, then a
    model without roles, are refused."""

    async def body(client: Client) -> None:
        await client.validate_allocate([])
        prepared = await client.prepare(conv_model(_test_operand(kind)))
        await client.validate_allocate([prepared])

    await _run(family, body)()


@family_param
@kind_param
async def test_MemoryDomainAllocateTest_NullptrPreparedModel(family, kind, autojump_clock):
    """MemoryDomainTests.cpp MemoryDomainAllocateTest.NullptrPreparedModel: a null prepared
    model as input role and as output role is refused."""

    async def body(client: Client) -> None:
        await client.validate_allocate([None], [_role()])
        await client.validate_allocate([None], (), [_role()])

    await _run(family, body)()


class InvalidPreparedModel:
    """VTS's ``InvalidPreparedModel``: an IPreparedModel the driver did not prepare."""

    model = conv_model(_test_operand("TENSOR_FLOAT32"))


@family_param
@kind_param
async def test_MemoryDomainAllocateTest_InvalidPreparedModel(family, kind, autojump_clock):
    """MemoryDomainTests.cpp MemoryDomainAllocateTest.InvalidPreparedModel: a prepared model
    that is not the driver's (VTS's own, and one prepared by another driver) is refused."""

    async def body(client: Client) -> None:
        other = Client(family)  # another driver service's prepared model
        other_prepared = PreparedModel(
            other.world.service,
            conv_model(_test_operand(kind)),
            HalVersion.V1_3,
            1,
            0,
            None,
            0,  # type: ignore[arg-type]
        )
        for foreign in (InvalidPreparedModel(), other_prepared):
            await client.validate_allocate([foreign], [_role()])
            await client.validate_allocate([foreign], (), [_role()])

    await _run(family, body)()


@family_param
@kind_param
async def test_MemoryDomainAllocateTest_InvalidModelIndex(family, kind, autojump_clock):
    """MemoryDomainTests.cpp MemoryDomainAllocateTest.InvalidModelIndex: a model index out of
    bounds is refused."""

    async def body(client: Client) -> None:
        prepared = await client.prepare(conv_model(_test_operand(kind)))
        await client.validate_allocate([prepared], [_role(model_index=1)])
        await client.validate_allocate([prepared], (), [_role(model_index=1)])

    await _run(family, body)()


@family_param
@kind_param
async def test_MemoryDomainAllocateTest_InvalidIOIndex(family, kind, autojump_clock):
    """MemoryDomainTests.cpp MemoryDomainAllocateTest.InvalidIOIndex: the model has one input
    and one output, so io index 1 is refused."""

    async def body(client: Client) -> None:
        prepared = await client.prepare(conv_model(_test_operand(kind)))
        await client.validate_allocate([prepared], [_role(io_index=1)])
        await client.validate_allocate([prepared], (), [_role(io_index=1)])

    await _run(family, body)()


@family_param
@kind_param
async def test_MemoryDomainAllocateTest_InvalidFrequency(family, kind, autojump_clock):
    """MemoryDomainTests.cpp MemoryDomainAllocateTest.InvalidFrequency (AIDL:
    InvalidProbability): a frequency of 10, 0 or -0.5 is refused, and 1.0 is not."""

    async def body(client: Client) -> None:
        prepared = await client.prepare(conv_model(_test_operand(kind)))
        for frequency in (10.0, 0.0, -0.5):
            await client.validate_allocate([prepared], [_role(frequency=frequency)])
            await client.validate_allocate([prepared], (), [_role(frequency=frequency)])
        status, _, _ = await client.allocate([prepared], [_role(frequency=1.0)])
        assert status is NONE  # the control: the same allocation with a valid frequency

    await _run(family, body)()


@family_param
@kind_param
async def test_MemoryDomainAllocateTest_SameRoleSpecifiedTwice(family, kind, autojump_clock):
    """MemoryDomainTests.cpp MemoryDomainAllocateTest.SameRoleSpecifiedTwice: one role twice,
    by the same model index or by two indexes naming the same model, is refused."""

    async def body(client: Client) -> None:
        prepared = await client.prepare(conv_model(_test_operand(kind)))
        await client.validate_allocate([prepared], [_role(), _role()])
        await client.validate_allocate([prepared], (), [_role(), _role()])
        await client.validate_allocate([prepared, prepared], [_role(0), _role(1)])
        await client.validate_allocate([prepared, prepared], (), [_role(0), _role(1)])

    await _run(family, body)()


async def _conflicts(client: Client, model1: Model, model2: Model) -> None:
    """VTS ``testConflictOperands``: input/input, input/output and output/output roles of two
    models whose operands conflict are refused."""
    prepared1 = await client.prepare(model1)
    prepared2 = await client.prepare(model2)
    pair = [prepared1, prepared2]
    await client.validate_allocate(pair, [_role(0), _role(1)])
    await client.validate_allocate(pair, [_role(0)], [_role(1)])
    await client.validate_allocate(pair, (), [_role(0), _role(1)])


@family_param
@kind_param
async def test_MemoryDomainAllocateTest_ConflictOperandType(family, kind, autojump_clock):
    """MemoryDomainTests.cpp MemoryDomainAllocateTest.ConflictOperandType: roles of different
    operand types (FLOAT32/FLOAT16, QUANT8_ASYMM/QUANT8_ASYMM_SIGNED) are refused."""
    operand = _test_operand(kind)
    conflict = attrs.evolve(operand, type=CONFLICT_TYPE[operand.type])
    await _run(family, lambda c: _conflicts(c, conv_model(operand), conv_model(conflict)))()


@family_param
@pytest.mark.parametrize("kind", ["TENSOR_QUANT8_ASYMM", "TENSOR_QUANT8_ASYMM_SIGNED"])
@pytest.mark.parametrize("field", ["scale", "zero_point"])
async def test_MemoryDomainAllocateTest_ConflictScale_ConflictZeroPoint(
    family, kind, field, autojump_clock
):
    """MemoryDomainTests.cpp MemoryDomainAllocateTest.ConflictScale (scale 1.0) and
    ConflictZeroPoint (zero point 10), quantized types only: refused."""
    operand = _test_operand(kind)
    conflict = attrs.evolve(operand, **{field: 1.0 if field == "scale" else 10})
    await _run(family, lambda c: _conflicts(c, conv_model(operand), conv_model(conflict)))()


@family_param
@kind_param
async def test_MemoryDomainAllocateTest_ConflictRankBetweenRoles(family, kind, autojump_clock):
    """MemoryDomainTests.cpp MemoryDomainAllocateTest.ConflictRankBetweenRoles: roles of rank
    4 and 3 (single-ADD models) are refused."""
    operand = _test_operand(kind)
    conflict = attrs.evolve(operand, dimensions=DIMS[:-1])
    await _run(family, lambda c: _conflicts(c, add_model(operand), add_model(conflict)))()


@family_param
@kind_param
async def test_MemoryDomainAllocateTest_ConflictDimensionsBetweenRoles(
    family, kind, autojump_clock
):
    """MemoryDomainTests.cpp MemoryDomainAllocateTest.ConflictDimensionsBetweenRoles: roles of
    dimensions {1,32,32,8} and {4,32,32,8} are refused."""
    operand = _test_operand(kind)
    conflict = attrs.evolve(operand, dimensions=(4, *DIMS[1:]))
    await _run(family, lambda c: _conflicts(c, conv_model(operand), conv_model(conflict)))()


@family_param
@kind_param
@pytest.mark.parametrize(
    "bad",
    [DIMS[:-1], (4, *DIMS[1:])],
    ids=["ConflictRankBetweenRoleAndDesc", "ConflictDimensionsBetweenRoleAndDesc"],
)
async def test_MemoryDomainAllocateTest_ConflictBetweenRoleAndDesc(
    family, kind, bad, autojump_clock
):
    """MemoryDomainTests.cpp MemoryDomainAllocateTest.ConflictRankBetweenRoleAndDesc and
    ConflictDimensionsBetweenRoleAndDesc: desc dimensions that conflict with the role's
    operand are refused, as input role and as output role."""

    async def body(client: Client) -> None:
        prepared = await client.prepare(conv_model(_test_operand(kind)))
        await client.validate_allocate([prepared], [_role()], (), bad)
        await client.validate_allocate([prepared], (), [_role()], bad)

    await _run(family, body)()


@family_param
@kind_param
async def test_MemoryDomainAllocateTest_ConflictRankWithScalarRole(family, kind, autojump_clock):
    """MemoryDomainTests.cpp MemoryDomainAllocateTest.ConflictRankWithScalarRole: dimensions
    {1} for the scalar act input of the single-ADD model are refused."""

    async def body(client: Client) -> None:
        prepared = await client.prepare(add_model(_test_operand(kind)))
        await client.validate_allocate([prepared], [_role(io_index=2)], (), (1,))
        status, _, _ = await client.allocate([prepared], [_role(io_index=2)])
        assert status is NONE  # the control: the scalar role without dimensions

    await _run(family, body)()


# ------------------------------------------------------------------------- MemoryDomainCopyTest


@family_param
@kind_param
async def test_MemoryDomainCopyTest_CopyFrom_InvalidMemorySize(family, kind, autojump_clock):
    """MemoryDomainTests.cpp MemoryDomainCopyTest.CopyFrom_InvalidMemorySize: half and twice
    the size are INVALID_ARGUMENT."""

    async def body(client: Client) -> None:
        operand = _test_operand(kind)
        prepared = await client.prepare(conv_model(operand))
        buffer, _ = await client.allocate_buffer(prepared, [0], [0])
        size = _size(operand)
        assert await client.copy_from(buffer, size // 2, ()) is INVALID
        assert await client.copy_from(buffer, size * 2, ()) is INVALID
        assert await client.copy_from(buffer, size, ()) is NONE  # the control

    await _run(family, body)()


@family_param
@kind_param
@pytest.mark.parametrize(
    "case",
    [
        "CopyFrom_InvalidMemorySize_DynamicShape",
        "CopyFrom_InvalidDimensions_DynamicShape",
        "CopyTo_InvalidMemorySize_DynamicShape",
    ],
)
async def test_MemoryDomainCopyTest_DynamicShape(family, kind, case, autojump_clock):
    """MemoryDomainTests.cpp MemoryDomainCopyTest.CopyFrom_InvalidMemorySize_DynamicShape,
    CopyFrom_InvalidDimensions_DynamicShape and CopyTo_InvalidMemorySize_DynamicShape: the
    roles' dimensions leave dimension 0 unknown, which the sample driver does not allocate
    (GENERAL_FAILURE, no buffer), so VTS returns early."""

    async def body(client: Client) -> None:
        operand = attrs.evolve(_test_operand(kind), dimensions=(0, *DIMS[1:]))
        prepared = await client.prepare(conv_model(operand))
        status, buffer, token = await client.allocate(
            prepared_models=[prepared], inputs=[_role()], outputs=[_role()]
        )
        assert (status, buffer, token) == (GENERAL, None, 0)

    await _run(family, body)()


@family_param
@kind_param
async def test_MemoryDomainCopyTest_CopyFrom_InvalidDimensions(family, kind, autojump_clock):
    """MemoryDomainTests.cpp MemoryDomainCopyTest.CopyFrom_InvalidDimensions: rank 3,
    {2,32,32,8} and {0,32,32,8} are INVALID_ARGUMENT; {} and {1,32,32,8} are NONE."""

    async def body(client: Client) -> None:
        operand = _test_operand(kind)
        prepared = await client.prepare(conv_model(operand))
        buffer, _ = await client.allocate_buffer(prepared, [0], [0])
        size = _size(operand)
        for bad in (DIMS[:-1], (2, *DIMS[1:]), (0, *DIMS[1:])):
            assert await client.copy_from(buffer, size, bad) is INVALID
        assert await client.copy_from(buffer, size, ()) is NONE
        assert await client.copy_from(buffer, size, DIMS) is NONE

    await _run(family, body)()


@family_param
@kind_param
async def test_MemoryDomainCopyTest_CopyTo_UninitializedMemory(family, kind, autojump_clock):
    """MemoryDomainTests.cpp MemoryDomainCopyTest.CopyTo_UninitializedMemory: copying out a
    buffer nothing has written is GENERAL_FAILURE (and NONE once copyFrom has)."""

    async def body(client: Client) -> None:
        operand = _test_operand(kind)
        prepared = await client.prepare(conv_model(operand))
        buffer, _ = await client.allocate_buffer(prepared, [0], [0])
        size = _size(operand)
        assert await client.copy_to(buffer, size) is GENERAL
        assert await client.copy_from(buffer, size, DIMS) is NONE
        assert await client.copy_to(buffer, size) is NONE

    await _run(family, body)()


@family_param
@kind_param
async def test_MemoryDomainCopyTest_CopyTo_InvalidMemorySize(family, kind, autojump_clock):
    """MemoryDomainTests.cpp MemoryDomainCopyTest.CopyTo_InvalidMemorySize: once initialized,
    half and twice the size are INVALID_ARGUMENT, the size itself NONE."""

    async def body(client: Client) -> None:
        operand = _test_operand(kind)
        prepared = await client.prepare(conv_model(operand))
        buffer, _ = await client.allocate_buffer(prepared, [0], [0])
        size = _size(operand)
        assert await client.copy_from(buffer, size, DIMS) is NONE  # initializeDeviceMemory
        assert await client.copy_to(buffer, size // 2) is INVALID
        assert await client.copy_to(buffer, size * 2) is INVALID
        assert await client.copy_to(buffer, size) is NONE

    await _run(family, body)()


async def test_MemoryDomainCopyTest_failed_copyFrom_uninitializes(autojump_clock):
    """SampleDriver.cpp SampleBuffer::copyFrom: a failed copyFrom leaves the buffer
    uninitialized, so a copyTo that worked before it is GENERAL_FAILURE after."""

    async def body(client: Client) -> None:
        operand = _test_operand("TENSOR_FLOAT32")
        prepared = await client.prepare(conv_model(operand))
        buffer, _ = await client.allocate_buffer(prepared, [0], [0])
        size = _size(operand)
        assert await client.copy_from(buffer, size, DIMS) is NONE
        assert await client.copy_to(buffer, size) is NONE
        assert await client.copy_from(buffer, size // 2, DIMS) is INVALID
        assert await client.copy_to(buffer, size) is GENERAL

    await _run("hidl1.3", body)()


# -------------------------------------------------------------------- MemoryDomainExecutionTest

EXECUTORS = [
    (family, executor)
    for family in FAMILIES
    for executor in (
        ("async", "sync", "fenced") if family == "hidl1.3" else ("sync", "burst", "fenced")
    )
]
executor_param = pytest.mark.parametrize(
    ("family", "executor"), EXECUTORS, ids=[f"{f}-{e}" for f, e in EXECUTORS]
)


def _shared(pool: int, size: int, dimensions: tuple[int, ...] = ()) -> RequestArgument:
    return RequestArgument(
        location=DataLocation(pool_index=pool, length=size), dimensions=dimensions
    )


def _device(pool: int, dimensions: tuple[int, ...] = ()) -> RequestArgument:
    return RequestArgument(location=DataLocation(pool_index=pool), dimensions=dimensions)


def _request(
    inputs: list[RequestArgument],
    outputs: list[RequestArgument],
    shared: list[int],
    token: int,
) -> Request:
    """A request over ``shared`` pools (sizes) then one device memory pool (``token``)."""
    return Request(
        inputs=inputs,
        outputs=outputs,
        pool_sizes=[*shared, 0],
        pool_tokens=[*(None for _ in shared), token],
    )


@executor_param
@kind_param
async def test_MemoryDomainExecutionTest_InvalidToken(family, executor, kind, autojump_clock):
    """MemoryDomainTests.cpp MemoryDomainExecutionTest.InvalidToken: a device memory of token 0
    (invalid) or 100 (unknown), as input or as output, is INVALID_ARGUMENT."""

    async def body(client: Client) -> None:
        operand = _test_operand(kind)
        size = _size(operand)
        prepared = await client.prepare(conv_model(operand))
        for token in (0, 100):
            for inputs, outputs in (
                ([_device(1)], [_shared(0, size)]),
                ([_shared(0, size)], [_device(1)]),
            ):
                request = _request(inputs, outputs, [size], token)
                assert await client.execute(executor, prepared, request) is INVALID

    await _run(family, body)()


@executor_param
@kind_param
async def test_MemoryDomainExecutionTest_InvalidPreparedModel(
    family, executor, kind, autojump_clock
):
    """MemoryDomainTests.cpp MemoryDomainExecutionTest.InvalidPreparedModel: a device memory
    allocated for one prepared model, used by another, is INVALID_ARGUMENT."""

    async def body(client: Client) -> None:
        operand = _test_operand(kind)
        size = _size(operand)
        prepared = await client.prepare(conv_model(operand))
        buffer, token = await client.allocate_buffer(prepared, [0], [0])
        bad = await client.prepare(conv_model(operand))
        assert await client.copy_from(buffer, size, DIMS) is NONE
        for inputs, outputs in (
            ([_device(1)], [_shared(0, size)]),
            ([_shared(0, size)], [_device(1)]),
        ):
            request = _request(inputs, outputs, [size], token)
            assert await client.execute(executor, bad, request) is INVALID
            assert await client.execute(executor, prepared, request) is NONE  # the control

    await _run(family, body)()


@executor_param
@kind_param
async def test_MemoryDomainExecutionTest_InvalidIOIndex(family, executor, kind, autojump_clock):
    """MemoryDomainTests.cpp MemoryDomainExecutionTest.InvalidIOIndex: a device memory
    allocated for input 0 of a two-op model, used as input 1 or output 1, is INVALID_ARGUMENT."""

    async def body(client: Client) -> None:
        operand = _test_operand(kind)
        size = _size(operand)
        prepared = await client.prepare(conv_model(operand, 2))
        buffer, token = await client.allocate_buffer(prepared, [0], [])
        assert await client.copy_from(buffer, size, DIMS) is NONE
        shared = [size, size, size]
        as_input_1 = _request(
            [_shared(0, size), _device(3)], [_shared(1, size), _shared(2, size)], shared, token
        )
        as_output_1 = _request(
            [_shared(0, size), _shared(1, size)], [_shared(2, size), _device(3)], shared, token
        )
        assert await client.execute(executor, prepared, as_input_1) is INVALID
        assert await client.execute(executor, prepared, as_output_1) is INVALID
        as_input_0 = _request(
            [_device(3), _shared(0, size)], [_shared(1, size), _shared(2, size)], shared, token
        )
        assert await client.execute(executor, prepared, as_input_0) is NONE  # the control

    await _run(family, body)()


@executor_param
@kind_param
async def test_MemoryDomainExecutionTest_InvalidIOType(family, executor, kind, autojump_clock):
    """MemoryDomainTests.cpp MemoryDomainExecutionTest.InvalidIOType: an input memory used as
    output, and an (initialized) output memory used as input, are INVALID_ARGUMENT."""

    async def body(client: Client) -> None:
        operand = _test_operand(kind)
        size = _size(operand)
        prepared = await client.prepare(conv_model(operand))
        _, input_token = await client.allocate_buffer(prepared, [0], [])
        output_buffer, output_token = await client.allocate_buffer(prepared, [], [0])
        request = _request([_shared(0, size)], [_device(1)], [size], input_token)
        assert await client.execute(executor, prepared, request) is INVALID
        assert await client.copy_from(output_buffer, size, DIMS) is NONE
        request = _request([_device(1)], [_shared(0, size)], [size], output_token)
        assert await client.execute(executor, prepared, request) is INVALID

    await _run(family, body)()


@executor_param
@kind_param
async def test_MemoryDomainExecutionTest_UninitializedMemory(
    family, executor, kind, autojump_clock
):
    """MemoryDomainTests.cpp MemoryDomainExecutionTest.UninitializedMemory: reading an
    uninitialized device memory is GENERAL_FAILURE; an execution writing it as its output
    initializes it, after which reading it is NONE."""

    async def body(client: Client) -> None:
        operand = _test_operand(kind)
        size = _size(operand)
        prepared = await client.prepare(conv_model(operand))
        buffer, token = await client.allocate_buffer(prepared, [0], [0])
        reads = _request([_device(1)], [_shared(0, size)], [size], token)
        writes = _request([_shared(0, size)], [_device(1)], [size], token)
        assert await client.execute(executor, prepared, reads) is GENERAL
        assert await client.copy_to(buffer, size) is GENERAL
        assert await client.execute(executor, prepared, writes) is NONE
        assert await client.execute(executor, prepared, reads) is NONE
        assert await client.copy_to(buffer, size) is NONE  # the output initialized it

    await _run(family, body)()


@executor_param
@kind_param
async def test_MemoryDomainExecutionTest_SameRequestMultipleRoles(
    family, executor, kind, autojump_clock
):
    """MemoryDomainTests.cpp MemoryDomainExecutionTest.SameRequestMultipleRoles: one device
    memory as an input and an output, or as two outputs, is INVALID_ARGUMENT; as two inputs
    it is NONE."""

    async def body(client: Client) -> None:
        operand = _test_operand(kind)
        size = _size(operand)
        prepared = await client.prepare(conv_model(operand, 2))
        buffer, token = await client.allocate_buffer(prepared, [0, 1], [0, 1])
        shared = [size, size]
        assert await client.copy_from(buffer, size, DIMS) is NONE
        in_and_out = _request(
            [_device(2), _shared(0, size)], [_device(2), _shared(1, size)], shared, token
        )
        two_outputs = _request(
            [_shared(0, size), _shared(1, size)], [_device(2), _device(2)], shared, token
        )
        two_inputs = _request(
            [_device(2), _device(2)], [_shared(0, size), _shared(1, size)], shared, token
        )
        assert await client.execute(executor, prepared, in_and_out) is INVALID
        assert await client.execute(executor, prepared, two_outputs) is INVALID
        assert await client.copy_from(buffer, size, DIMS) is NONE
        assert await client.execute(executor, prepared, two_inputs) is NONE

    await _run(family, body)()


@executor_param
@kind_param
async def test_MemoryDomainExecutionTest_InvalidDimensions(family, executor, kind, autojump_clock):
    """MemoryDomainTests.cpp MemoryDomainExecutionTest.InvalidDimensions (not fenced, which
    has no dynamic shapes): a model with dimension 0 unknown, a memory allocated with
    {1,32,32,8}; an input or output argument of dimensions {2,32,32,8} on it is
    INVALID_ARGUMENT; a shared input of {2,32,32,8} makes the ADD produce {2,32,32,8} into
    the memory, which conflicts with its dimensions (``updateDeviceMemories``):
    GENERAL_FAILURE."""
    if executor == "fenced":
        return

    async def body(client: Client) -> None:
        operand = _test_operand(kind)
        dynamic = attrs.evolve(operand, dimensions=(0, *DIMS[1:]))
        prepared = await client.prepare(conv_model(dynamic))
        buffer, token = await client.allocate_buffer(prepared, [0], [0], DIMS)
        bad = (2, *DIMS[1:])
        bad_size = _size(operand) * 2
        assert await client.copy_from(buffer, _size(operand), DIMS) is NONE
        shared = _shared(0, bad_size, bad)
        as_input = _request([_device(1, bad)], [shared], [bad_size], token)
        as_output = _request([shared], [_device(1, bad)], [bad_size], token)
        assert await client.execute(executor, prepared, as_input) is INVALID
        assert await client.execute(executor, prepared, as_output) is INVALID
        produces_bad = _request([shared], [_device(1)], [bad_size], token)
        assert await client.execute(executor, prepared, produces_bad) is GENERAL

    await _run(family, body)()


# --------------------------------------------------------------- the sample driver's BufferTracker


async def test_BufferTracker_tokens_start_at_1_and_are_reused(autojump_clock):
    """BufferTracker.cpp BufferTracker::add/free: tokens start at 1 (0 is kInvalidBufferToken),
    a released buffer's token is handed out again, and a released token is unknown to an
    execution (INVALID_ARGUMENT)."""

    async def body(client: Client) -> None:
        operand = _test_operand("TENSOR_FLOAT32")
        size = _size(operand)
        prepared = await client.prepare(conv_model(operand))
        first, token1 = await client.allocate_buffer(prepared, [0], [0])
        _, token2 = await client.allocate_buffer(prepared, [0], [0])
        assert (token1, token2) == (1, 2)
        first.release()  # type: ignore[attr-defined]
        writes = _request([_shared(0, size)], [_device(1)], [size], token1)
        assert await client.execute("sync", prepared, writes) is INVALID
        _, token3 = await client.allocate_buffer(prepared, [0], [0])
        assert token3 == token1

    await _run("hidl1.3", body)()


async def test_allocate_counts_device_memory_and_copies_take_time(autojump_clock):
    """SampleDriver.cpp allocate/copyFrom: a buffer takes its size from the device's memory
    (the ``memory in use`` the driver reports) until released, and a copy costs the
    driver's memcpy time (4 GB/s: 32 KiB in 8 µs)."""

    async def body(client: Client) -> None:
        service = client.world.service
        operand = _test_operand("TENSOR_FLOAT32")
        size = _size(operand)
        prepared = await client.prepare(conv_model(operand))
        before = service.memory_used
        buffer, _ = await client.allocate_buffer(prepared, [0], [0])
        assert service.memory_used - before == size == 32768
        kernel = client.world.kernel
        start = kernel.clock_ns
        assert await client.copy_from(buffer, size, DIMS) is NONE
        with_copy = kernel.clock_ns - start
        start = kernel.clock_ns
        assert await client.copy_from(buffer, size // 2, DIMS) is INVALID  # refused: no copy
        without_copy = kernel.clock_ns - start
        assert with_copy - without_copy == 8000
        buffer.release()  # type: ignore[attr-defined]
        assert service.memory_used == before

    await _run("hidl1.3", body)()


async def test_allocate_on_a_full_device_is_general_failure(autojump_clock):
    """SampleDriver.cpp allocate: memory the device cannot give is GENERAL_FAILURE, no buffer."""

    async def body(client: Client) -> None:
        prepared = await client.prepare(conv_model(_test_operand("TENSOR_FLOAT32")))
        client.world.service.memory_used = int(client.world.service.spec.memory_mb * 2**20)
        status, buffer, token = await client.allocate([prepared], [_role()])
        assert (status, buffer, token) == (GENERAL, None, 0)

    await _run("hidl1.3", body)()


async def test_SampleDriver_token_0_refused_at_launch_unknown_token_in_callback(autojump_clock):
    """SampleDriver.cpp executeBase / asyncExecute: token 0 fails ``validateRequest``
    (``validatePool``: token > 0), so execute_1_3 returns INVALID_ARGUMENT at launch; an
    unknown token passes it and fails in ``createRunTimePoolInfos``, through the callback."""

    async def body(client: Client) -> None:
        operand = _test_operand("TENSOR_FLOAT32")
        size = _size(operand)
        prepared = await client.prepare(conv_model(operand))
        assert isinstance(prepared, PreparedModel)
        for token, launch_status in ((0, INVALID), (100, NONE)):
            request = _request([_device(1)], [_shared(0, size)], [size], token)
            recorder, ref = client.world.callback()
            launch = await client.call(
                "IPreparedModel",
                "execute_1_3",
                lambda r=request, f=ref: prepared.execute_1_3(r, MeasureTiming.NO, None, None, f),
            )
            await client.world.settle()
            assert launch is launch_status
            assert [args[0] for args in recorder.notifies] == [INVALID]

    await _run("hidl1.3", body)()
