"""Drive the emulated driver service and runtime the way VTS 1.x and CTS drive a real stack.

``DriverWorld`` is one driver service plus a client process (the VTS test binary),
``RuntimeWorld`` is driver services plus an app process with its ``Runtime`` (CTS).
Both run in virtual time on the simulation kernel (copied from
``tests/unit/driver/test_hal_contract.py`` and ``tests/unit/runtime/test_runtime.py``).

The ``*_call`` helpers return the server-side coroutine of one HIDL entry point, keyed by
the HAL version that introduced it, so each conformance case can be generated for exactly
the versions whose entry points it exercises.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Iterator

import attrs
import trio

from nnemu.driver import CallbackRef, DriverService, PreparedModel
from nnemu.hal import (
    DataLocation,
    ErrorStatus,
    HalVersion,
    MeasureTiming,
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
    Operation,
    OperationType,
    Request,
    Subgraph,
    build_preset,
)
from nnemu.ipc import Binder, Endpoint
from nnemu.runtime import Runtime
from nnemu.runtime._ndk import _request_for
from nnemu.scenario import CpuSpec, DeviceSpec, IpcSpec
from nnemu.sim import Kernel, ProcessTable
from nnemu.tracer import Tracer

US = 1_000
MS = 1_000_000
SETTLE_NS = 50 * MS
"""Virtual time after a launch within which every notify of a launched task has arrived."""

VERSIONS = list(HalVersion)
V10, V11, V12, V13 = HalVersion.V1_0, HalVersion.V1_1, HalVersion.V1_2, HalVersion.V1_3
MISSED_DEADLINE = (ErrorStatus.MISSED_DEADLINE_TRANSIENT, ErrorStatus.MISSED_DEADLINE_PERSISTENT)
QOS_STATUSES = (
    ErrorStatus.MISSED_DEADLINE_TRANSIENT,
    ErrorStatus.MISSED_DEADLINE_PERSISTENT,
    ErrorStatus.RESOURCE_EXHAUSTED_TRANSIENT,
    ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT,
)

PREPARE_METHOD = {
    V10: "prepareModel",
    V11: "prepareModel_1_1",
    V12: "prepareModel_1_2",
    V13: "prepareModel_1_3",
}
SUPPORTED_OPERATIONS_METHOD = {
    V10: "getSupportedOperations",
    V11: "getSupportedOperations_1_1",
    V12: "getSupportedOperations_1_2",
    V13: "getSupportedOperations_1_3",
}
ASYNC_EXECUTE_METHOD = {V10: "execute", V11: "execute", V12: "execute_1_2", V13: "execute_1_3"}
"""The async execute a VTS 1.x suite uses (IPreparedModel has no 1.1 revision)."""
SYNC_EXECUTE_METHOD = {V12: "executeSynchronously", V13: "executeSynchronously_1_3"}


def version_pairs(minimum: HalVersion = V10) -> list[tuple[HalVersion, HalVersion]]:
    """(service version, entry-point version) for every entry point >= ``minimum`` a service has.

    VTS 1.x runs against every service that implements 1.x, so a 1.3 service is checked
    through its 1.0, 1.1, 1.2 and 1.3 entry points.
    """
    return [
        (service, entry)
        for service in VERSIONS
        for entry in VERSIONS
        if entry.at_least(minimum) and service.at_least(entry)
    ]


def pair_id(pair: tuple[HalVersion, HalVersion]) -> str:
    """Test id of a (service, entry point) pair: ``hal1.2-service1.3``."""
    return f"hal{pair[1].value}-service{pair[0].value}"


# --------------------------------------------------------------------------- models

MODELS: dict[str, tuple[str, str, dict[str, float]]] = {
    "add_float32": ("add", "float32", {"size": 16}),
    "add_quant8": ("add", "quant8", {"size": 16}),
    "lstm_float32": ("lstm", "float32", {"steps": 2, "units": 8, "input": 4, "layers": 1}),
    "while_loop_float32": ("while_loop", "float32", {"iterations": 3, "body_size": 4}),
}
"""Small presets standing in for VTS's generated test models."""

MODEL_SINCE = {"while_loop_float32": V13}


def models_for(version: HalVersion) -> list[str]:
    """The test models whose operations exist in HAL ``version``."""
    return [name for name in MODELS if version.at_least(MODEL_SINCE.get(name, V10))]


def model(name: str) -> Model:
    """Build test model ``name``."""
    preset, dtype, params = MODELS[name]
    return build_preset(preset, dtype, params)


def request_for(model: Model) -> Request:
    """The request the runtime would send for ``model`` (one buffer per input and output)."""
    return _request_for(model)


# --------------------------------------------------------------------------- worlds


class Recorder:
    """A client-side callback object that records every notify it receives."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.calls: list[tuple[object, ...]] = []

    def target(self, *args: object) -> None:
        self.calls.append(args)


class DriverWorld:
    """One driver service and one client process (the VTS binary), binder without jitter."""

    def __init__(self, version: HalVersion = V13, **spec_fields: object) -> None:
        self.kernel = Kernel()
        self.tracer = Tracer(self.kernel)
        self.binder = Binder(self.kernel, self.tracer, IpcSpec(), random.Random(0))
        table = ProcessTable()
        spec = DeviceSpec(name="vts", hal_version=version, **spec_fields)
        self.service = DriverService(
            spec,
            kernel=self.kernel,
            tracer=self.tracer,
            binder=self.binder,
            processes=table,
            cpu=CpuSpec(),
            ipc_binder_threads=4,
            seed=0,
        )
        self.client_proc = table.spawn("vts_client", 10001)
        self.client = Endpoint(self.kernel, self.client_proc, 2)

    def callback(self) -> tuple[Recorder, CallbackRef]:
        """A fresh callback object and the reference the driver gets."""
        recorder = Recorder(self.kernel)
        return recorder, CallbackRef(self.client, recorder.target)

    async def call(
        self, method: str, serve: Callable[[], Awaitable[object]], iface: str = "IDevice"
    ) -> object:
        """One HIDL call from the client to the service."""
        return await self.binder.call(self.service.endpoint, iface, method, serve)

    async def settle(self) -> None:
        """Let every launched task finish and its oneway notify arrive."""
        await self.kernel.sleep(SETTLE_NS)

    async def run(self, fn: Callable[[], Awaitable[None]]) -> None:
        """Run ``fn`` on the client's main thread until everything is idle."""
        async with trio.open_nursery() as nursery:
            self.service.start(nursery)
            self.kernel.spawn(nursery, fn, thread=self.client_proc.main_thread)
            await self.kernel.run()
            nursery.cancel_scope.cancel()

    # -- IDevice ---------------------------------------------------------------
    async def get_supported_operations(
        self, version: HalVersion, model: Model
    ) -> tuple[ErrorStatus, tuple[bool, ...]]:
        """getSupportedOperations of HAL ``version``."""
        service = self.service
        answer = await self.call(
            SUPPORTED_OPERATIONS_METHOD[version],
            lambda: service.getSupportedOperations(model, version),
        )
        return answer  # type: ignore[return-value]

    async def prepare(
        self,
        version: HalVersion,
        model: Model,
        *,
        preference: int = 1,
        priority: int = 1,
        deadline_ns: int | None = None,
        null_callback: bool = False,
    ) -> tuple[object, list[tuple[object, ...]]]:
        """prepareModel of HAL ``version``: (launch status, notifies received after settling)."""
        recorder, ref = self.callback()
        serve = prepare_call(
            self.service,
            version,
            model,
            None if null_callback else ref,
            preference=preference,
            priority=priority,
            deadline_ns=deadline_ns,
        )
        launch = await self.call(PREPARE_METHOD[version], serve)
        await self.settle()
        return launch, recorder.calls

    async def prepared_model(self, version: HalVersion, model: Model) -> PreparedModel:
        """A model prepared through ``version``'s entry point (must succeed)."""
        launch, calls = await self.prepare(version, model)
        assert launch is ErrorStatus.NONE, launch
        [(status, prepared)] = calls
        assert status is ErrorStatus.NONE, status
        assert isinstance(prepared, PreparedModel)
        return prepared

    # -- IPreparedModel --------------------------------------------------------
    async def execute_async(
        self,
        version: HalVersion,
        prepared: PreparedModel,
        request: Request,
        *,
        measure: MeasureTiming = MeasureTiming.NO,
        deadline_ns: int | None = None,
        loop_timeout_ns: int | None = None,
        null_callback: bool = False,
    ) -> tuple[object, list[tuple[object, ...]]]:
        """execute of HAL ``version``: (launch status, notifies received after settling)."""
        recorder, ref = self.callback()
        callback = None if null_callback else ref
        if version in (V10, V11):
            serve: Callable[[], Awaitable[object]] = lambda: prepared.execute(request, callback)  # noqa: E731
        elif version is V12:
            serve = lambda: prepared.execute_1_2(request, measure, callback)  # noqa: E731
        else:
            serve = lambda: prepared.execute_1_3(  # noqa: E731
                request, measure, deadline_ns, loop_timeout_ns, callback
            )
        launch = await self.call(ASYNC_EXECUTE_METHOD[version], serve, "IPreparedModel")
        await self.settle()
        return launch, recorder.calls

    async def execute_sync(
        self,
        version: HalVersion,
        prepared: PreparedModel,
        request: Request,
        *,
        measure: MeasureTiming = MeasureTiming.NO,
        deadline_ns: int | None = None,
        loop_timeout_ns: int | None = None,
    ) -> tuple[object, ...]:
        """executeSynchronously of HAL ``version`` (1.2+): (status, shapes, timing)."""
        if version is V12:
            serve: Callable[[], Awaitable[object]] = lambda: prepared.executeSynchronously(  # noqa: E731
                request, measure
            )
        else:
            serve = lambda: prepared.executeSynchronously_1_3(  # noqa: E731
                request, measure, deadline_ns, loop_timeout_ns
            )
        answer = await self.call(SYNC_EXECUTE_METHOD[version], serve, "IPreparedModel")
        return answer  # type: ignore[return-value]

    async def execute_fenced(
        self,
        prepared: PreparedModel,
        request: Request,
        *,
        wait_for: tuple[object | None, ...] = (),
        measure: MeasureTiming = MeasureTiming.NO,
        deadline_ns: int | None = None,
        loop_timeout_ns: int | None = None,
        duration_ns: int | None = None,
    ) -> tuple[object, ...]:
        """executeFenced (1.3): (status, fenced callback or None)."""
        answer = await self.call(
            "executeFenced",
            lambda: prepared.executeFenced(
                request, wait_for, measure, deadline_ns, loop_timeout_ns, duration_ns
            ),
            "IPreparedModel",
        )
        return answer  # type: ignore[return-value]


def prepare_call(
    service: DriverService,
    version: HalVersion,
    model: Model,
    callback: CallbackRef | None,
    *,
    preference: int = 1,
    priority: int = 1,
    deadline_ns: int | None = None,
) -> Callable[[], Awaitable[object]]:
    """The server side of prepareModel* of HAL ``version``."""
    if version is V10:
        return lambda: service.prepareModel(model, callback)
    if version is V11:
        return lambda: service.prepareModel_1_1(model, preference, callback)
    if version is V12:
        return lambda: service.prepareModel_1_2(model, preference, (), (), b"\0" * 32, callback)
    return lambda: service.prepareModel_1_3(
        model, preference, priority, deadline_ns, (), (), b"\0" * 32, callback
    )


class RuntimeWorld:
    """Driver services and one app process with its Runtime (what CTS runs against)."""

    def __init__(self, *specs: DeviceSpec) -> None:
        self.kernel = Kernel()
        self.tracer = Tracer(self.kernel)
        self.binder = Binder(self.kernel, self.tracer, IpcSpec(), random.Random(0))
        self.table = ProcessTable()
        self.services = [
            DriverService(
                spec,
                kernel=self.kernel,
                tracer=self.tracer,
                binder=self.binder,
                processes=self.table,
                cpu=CpuSpec(),
                ipc_binder_threads=4,
                seed=0,
            )
            for spec in specs
        ]
        self.process = self.table.spawn("cts_app", 10001)
        self.endpoint = Endpoint(self.kernel, self.process, 2)

    async def run(self, fn: Callable[[Runtime], Awaitable[None]]) -> None:
        """Run ``fn(runtime)`` on the app's main thread until everything is idle."""
        async with trio.open_nursery() as nursery:
            runtime = Runtime(
                kernel=self.kernel,
                tracer=self.tracer,
                binder=self.binder,
                process=self.process,
                endpoint=self.endpoint,
                services=self.services,
                cpu=CpuSpec(),
                nursery=nursery,
            )
            for service in self.services:
                service.start(nursery)
            self.kernel.spawn(nursery, lambda: fn(runtime), thread=self.process.main_thread)
            await self.kernel.run()
            nursery.cancel_scope.cancel()


# --------------------------------------------------------------------------- VTS mutations
# After hardware/interfaces/neuralnetworks/1.3/vts/functional/ValidateModel.cpp; the same
# helpers as tests/unit/hal/test_validate.py, as generators of (label, mutant).

LT = OperandLifeTime
Mutants = Iterator[tuple[str, Model]]


def _main(model: Model, **changes: object) -> Model:
    return attrs.evolve(model, main=attrs.evolve(model.main, **changes))


def _operand(model: Model, index: int, **changes: object) -> Model:
    operands = list(model.main.operands)
    operands[index] = attrs.evolve(operands[index], **changes)
    return _main(model, operands=operands)


def _operation(model: Model, index: int, **changes: object) -> Model:
    operations = list(model.main.operations)
    operations[index] = attrs.evolve(operations[index], **changes)
    return _main(model, operations=operations)


def _push_operand(model: Model, operand: Operand) -> tuple[Model, int]:
    return _main(model, operands=[*model.main.operands, operand]), len(model.main.operands)


def _without(values: tuple[int, ...], value: int) -> tuple[int, ...]:
    """removeValueAndDecrementGreaterValues."""
    return tuple(v - (v > value) for v in values if v != value)


def _become_constant_copy(model: Model, index: int) -> Model:
    operand = model.main.operands[index]
    size = operand.byte_size
    model = attrs.evolve(model, operand_values_size=model.operand_values_size + size)
    location = DataLocation(offset=model.operand_values_size - size, length=size)
    return _operand(model, index, lifetime=LT.CONSTANT_COPY, location=location)


def _size_known(operand: Operand) -> bool:
    return (bool(operand.dimensions) and 0 not in operand.dimensions) or operand.type.is_scalar


_SCALARS = (
    OperandType.FLOAT32,
    OperandType.INT32,
    OperandType.UINT32,
    OperandType.BOOL,
    OperandType.FLOAT16,
)
_QUANT = (
    OperandType.TENSOR_QUANT8_ASYMM,
    OperandType.TENSOR_QUANT8_ASYMM_SIGNED,
    OperandType.TENSOR_QUANT8_SYMM,
    OperandType.TENSOR_QUANT16_ASYMM,
    OperandType.TENSOR_QUANT16_SYMM,
)
_VALID_TYPES = [t for t in OperandType if t not in (OperandType.OEM, OperandType.TENSOR_OEM_BYTE)]


def mutate_operand_type(model: Model) -> Mutants:
    for i in range(len(model.main.operands)):
        for bad in (-1, 16, 9999, 10002):
            yield f"operand {i} type {bad}", _operand(model, i, type=bad)


def mutate_operand_rank(model: Model) -> Mutants:
    for i, operand in enumerate(model.main.operands):
        if operand.type in (*_SCALARS, OperandType.SUBGRAPH):
            yield f"operand {i} rank 1", _operand(model, i, dimensions=(1,))


def _invalid_scale(kind: OperandType) -> float:
    if kind == OperandType.TENSOR_INT32:
        return -1.0
    return 0.0 if kind in _QUANT else 1.0


def mutate_operand_scale(model: Model) -> Mutants:
    for i, operand in enumerate(model.main.operands):
        bad = _invalid_scale(operand.type)
        yield f"operand {i} scale {bad}", _operand(model, i, scale=bad)


def mutate_operand_zero_point(model: Model) -> Mutants:
    for i, operand in enumerate(model.main.operands):
        bads = {
            OperandType.TENSOR_QUANT8_ASYMM: (-1, 256),
            OperandType.TENSOR_QUANT8_ASYMM_SIGNED: (-129, 128),
            OperandType.TENSOR_QUANT16_ASYMM: (-1, 65536),
        }.get(operand.type, (-1, 1))
        for bad in bads:
            yield f"operand {i} zeroPoint {bad}", _operand(model, i, zero_point=bad)


def _invalid_lifetimes(operand: Operand) -> list[OperandLifeTime]:
    match operand.lifetime:
        case LT.SUBGRAPH_OUTPUT | LT.TEMPORARY_VARIABLE:
            lifetimes = [LT.SUBGRAPH_INPUT, LT.CONSTANT_COPY]
        case LT.CONSTANT_COPY | LT.CONSTANT_REFERENCE | LT.SUBGRAPH_INPUT:
            lifetimes = [LT.TEMPORARY_VARIABLE, LT.SUBGRAPH_OUTPUT]
        case _:
            lifetimes = []
    if not _size_known(operand):
        lifetimes = [lt for lt in lifetimes if lt != LT.CONSTANT_COPY]
    return lifetimes


def mutate_operand_lifetime(model: Model) -> Mutants:
    for i, operand in enumerate(model.main.operands):
        for lifetime in _invalid_lifetimes(operand):
            mutant = _main(
                model,
                input_indexes=[x for x in model.main.input_indexes if x != i],
                output_indexes=[x for x in model.main.output_indexes if x != i],
            )
            mutant = _operand(mutant, i, lifetime=lifetime, location=DataLocation())
            if lifetime == LT.CONSTANT_COPY:
                mutant = _become_constant_copy(mutant, i)
            elif lifetime == LT.SUBGRAPH_INPUT:
                mutant = _main(mutant, input_indexes=[*mutant.main.input_indexes, i])
            elif lifetime == LT.SUBGRAPH_OUTPUT:
                mutant = _main(mutant, output_indexes=[*mutant.main.output_indexes, i])
            yield f"operand {i} lifetime {lifetime.name}", mutant


def mutate_operand_input_output(model: Model) -> Mutants:
    for i, operand in enumerate(model.main.operands):
        changed = {
            LT.CONSTANT_COPY: LT.SUBGRAPH_INPUT,
            LT.CONSTANT_REFERENCE: LT.SUBGRAPH_INPUT,
            LT.SUBGRAPH_INPUT: LT.CONSTANT_COPY if _size_known(operand) else None,
            LT.SUBGRAPH_OUTPUT: LT.TEMPORARY_VARIABLE,
            LT.TEMPORARY_VARIABLE: LT.SUBGRAPH_OUTPUT,
        }.get(operand.lifetime)
        if changed is None:
            continue
        mutant = _operand(model, i, lifetime=changed, location=DataLocation())
        if changed == LT.CONSTANT_COPY:
            mutant = _become_constant_copy(mutant, i)
        yield f"operand {i} lifetime {changed.name}", mutant


def mutate_operand_number_of_consumers(model: Model) -> Mutants:
    for i, operand in enumerate(model.main.operands):
        count = operand.number_of_consumers
        for bad in sorted({count + 1, count + 100, max(count - 1, 0) if count else count + 2}):
            yield f"operand {i} consumers {bad}", _operand(model, i, number_of_consumers=bad)


def mutate_operand_add_writer(model: Model) -> Mutants:
    for op_index, op in enumerate(model.main.operations):
        for bad_output in range(len(op.outputs)):
            mutant = model
            for index in op.inputs:
                n = mutant.main.operands[index].number_of_consumers
                mutant = _operand(mutant, index, number_of_consumers=n + 1)
            outputs = list(op.outputs)
            for k, index in enumerate(op.outputs):
                if k == bad_output:
                    continue
                fresh = attrs.evolve(
                    mutant.main.operands[index],
                    number_of_consumers=0,
                    lifetime=LT.TEMPORARY_VARIABLE,
                )
                mutant, outputs[k] = _push_operand(mutant, fresh)
            new_op = attrs.evolve(op, outputs=outputs)
            mutant = _main(mutant, operations=[*mutant.main.operations, new_op])
            yield f"operation {op_index} rewrites output {bad_output}", mutant


def _valid_quant(kind: OperandType) -> tuple[float, int]:
    if kind in _QUANT:
        return 1.0, 0
    return 0.0, 0


def _operation_operand_type_skip(model: Model, index: int, kind: OperandType) -> bool:
    """VTS mutateOperationOperandTypeSkip, for the operation types the test models use."""
    for op in model.main.operations:
        if op.type == OperationType.DEQUANTIZE and (
            (
                index in op.inputs
                and kind in (*_QUANT[:3], OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL)
            )
            or (index in op.outputs and kind == OperandType.TENSOR_FLOAT16)
        ):
            return True
        if (
            op.type in (OperationType.CONV_2D, OperationType.DEPTHWISE_CONV_2D)
            and len(op.inputs) > 1
            and op.inputs[1] == index
            and kind == OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL
        ):
            return True
    return False


def mutate_operation_operand_type(model: Model) -> Mutants:
    used = {i for op in model.main.operations for i in (*op.inputs, *op.outputs)}
    for i in sorted(used):
        operand = model.main.operands[i]
        for kind in _VALID_TYPES:
            if kind == operand.type or _operation_operand_type_skip(model, i, kind):
                continue
            scale, zero_point = _valid_quant(kind)
            dims = () if kind.is_scalar or kind == OperandType.SUBGRAPH else operand.dimensions
            yield (
                f"operand {i} type {kind.name}",
                _operand(
                    model,
                    i,
                    type=kind,
                    dimensions=dims or ((1,) if kind.is_tensor else ()),
                    scale=scale,
                    zero_point=zero_point,
                ),
            )


def mutate_operation_type(model: Model) -> Mutants:
    for op_index in range(len(model.main.operations)):
        for bad in (-1, 102, 9999, 10001):
            yield f"operation {op_index} type {bad}", _operation(model, op_index, type=bad)


def _index_mutants(model: Model, field: str) -> Mutants:
    for op_index, op in enumerate(model.main.operations):
        indexes = getattr(op, field)
        for k in range(len(indexes)):
            changed = list(indexes)
            changed[k] = len(model.main.operands)
            yield (
                f"operation {op_index} {field}[{k}]",
                _operation(model, op_index, **{field: changed}),
            )


def mutate_operation_input_operand_index(model: Model) -> Mutants:
    yield from _index_mutants(model, "inputs")


def mutate_operation_output_operand_index(model: Model) -> Mutants:
    yield from _index_mutants(model, "outputs")


def mutate_operation_remove_write(model: Model) -> Mutants:
    for op_index, op in enumerate(model.main.operations):
        for k, index in enumerate(op.outputs):
            if model.main.operands[index].number_of_consumers == 0:
                continue
            fresh = attrs.evolve(
                model.main.operands[index], number_of_consumers=0, lifetime=LT.TEMPORARY_VARIABLE
            )
            mutant, new_index = _push_operand(model, fresh)
            outputs = list(op.outputs)
            outputs[k] = new_index
            yield f"operation {op_index} output {k}", _operation(mutant, op_index, outputs=outputs)


def remove_operand(model: Model) -> Mutants:
    main = model.main
    for i, operand in enumerate(main.operands):
        if operand.number_of_consumers == 0:
            continue  # VTS removeOperandSkip
        yield (
            f"remove operand {i}",
            _main(
                model,
                operands=[o for k, o in enumerate(main.operands) if k != i],
                operations=[
                    attrs.evolve(op, inputs=_without(op.inputs, i), outputs=_without(op.outputs, i))
                    for op in main.operations
                ],
                input_indexes=_without(main.input_indexes, i),
                output_indexes=_without(main.output_indexes, i),
            ),
        )


def remove_operation(model: Model) -> Mutants:
    for op_index, op in enumerate(model.main.operations):
        mutant = model
        for index in op.inputs:
            n = mutant.main.operands[index].number_of_consumers
            mutant = _operand(mutant, index, number_of_consumers=n - 1)
        operations = [o for k, o in enumerate(model.main.operations) if k != op_index]
        yield f"remove operation {op_index}", _main(mutant, operations=operations)


def remove_operation_input(model: Model) -> Mutants:
    for op_index, op in enumerate(model.main.operations):
        for k, index in enumerate(op.inputs):
            n = model.main.operands[index].number_of_consumers
            mutant = _operand(model, index, number_of_consumers=n - 1)
            inputs = [x for j, x in enumerate(op.inputs) if j != k]
            yield f"operation {op_index} input {k}", _operation(mutant, op_index, inputs=inputs)


def remove_operation_output(model: Model) -> Mutants:
    for op_index, op in enumerate(model.main.operations):
        for k in range(len(op.outputs)):
            outputs = [x for j, x in enumerate(op.outputs) if j != k]
            yield f"operation {op_index} output {k}", _operation(model, op_index, outputs=outputs)


def add_operation_input(model: Model) -> Mutants:
    for op_index, op in enumerate(model.main.operations):
        if (op.type == OperationType.SOFTMAX and len(op.inputs) == 2) or (
            op.type == OperationType.L2_NORMALIZATION and len(op.inputs) == 1
        ):
            continue  # VTS addOperationInputSkip
        extra = Operand(type=OperandType.INT32, number_of_consumers=1, lifetime=LT.SUBGRAPH_INPUT)
        mutant, index = _push_operand(model, extra)
        mutant = _main(mutant, input_indexes=[*mutant.main.input_indexes, index])
        yield (
            f"operation {op_index} +input",
            _operation(mutant, op_index, inputs=[*op.inputs, index]),
        )


def add_operation_output(model: Model) -> Mutants:
    for op_index, op in enumerate(model.main.operations):
        first = model.main.operands[op.outputs[0]]
        extra = attrs.evolve(first, number_of_consumers=0, lifetime=LT.SUBGRAPH_OUTPUT)
        mutant, index = _push_operand(model, extra)
        mutant = _main(mutant, output_indexes=[*mutant.main.output_indexes, index])
        yield (
            f"operation {op_index} +output",
            _operation(mutant, op_index, outputs=[*op.outputs, index]),
        )


def mutate_execution_order(model: Model) -> Mutants:
    operations = list(model.main.operations)
    operands = model.main.operands
    for k, op in enumerate(operations):
        if any(
            operands[i].lifetime in (LT.TEMPORARY_VARIABLE, LT.SUBGRAPH_OUTPUT) for i in op.inputs
        ):
            yield (
                f"operation {k} first",
                _main(model, operations=[op, *operations[:k], *operations[k + 1 :]]),
            )
        if any(operands[i].number_of_consumers > 0 for i in op.outputs):
            yield (
                f"operation {k} last",
                _main(model, operations=[*operations[:k], *operations[k + 1 :], op]),
            )


MODEL_MUTATIONS: dict[str, Callable[[Model], Mutants]] = {
    "mutateOperandTypeTest": mutate_operand_type,
    "mutateOperandRankTest": mutate_operand_rank,
    "mutateOperandScaleTest": mutate_operand_scale,
    "mutateOperandZeroPointTest": mutate_operand_zero_point,
    "mutateOperandLifeTimeTest": mutate_operand_lifetime,
    "mutateOperandInputOutputTest": mutate_operand_input_output,
    "mutateOperandNumberOfConsumersTest": mutate_operand_number_of_consumers,
    "mutateOperandAddWriterTest": mutate_operand_add_writer,
    "mutateOperationOperandTypeTest": mutate_operation_operand_type,
    "mutateOperationTypeTest": mutate_operation_type,
    "mutateOperationInputOperandIndexTest": mutate_operation_input_operand_index,
    "mutateOperationOutputOperandIndexTest": mutate_operation_output_operand_index,
    "mutateOperationRemoveWriteTest": mutate_operation_remove_write,
    "removeOperandTest": remove_operand,
    "removeOperationTest": remove_operation,
    "removeOperationInputTest": remove_operation_input,
    "removeOperationOutputTest": remove_operation_output,
    "addOperationInputTest": add_operation_input,
    "addOperationOutputTest": add_operation_output,
    "mutateExecutionOrderTest": mutate_execution_order,
}
"""VTS ValidateModel.cpp mutation by test name."""


def remove_request_input(request: Request) -> Iterator[tuple[str, Request]]:
    """VTS removeInputTest."""
    for k in range(len(request.inputs)):
        inputs = [a for j, a in enumerate(request.inputs) if j != k]
        yield f"remove input {k}", attrs.evolve(request, inputs=inputs)


def remove_request_output(request: Request) -> Iterator[tuple[str, Request]]:
    """VTS removeOutputTest."""
    for k in range(len(request.outputs)):
        outputs = [a for j, a in enumerate(request.outputs) if j != k]
        yield f"remove output {k}", attrs.evolve(request, outputs=outputs)


REQUEST_MUTATIONS = {
    "removeInputTest": remove_request_input,
    "removeOutputTest": remove_request_output,
}


def cyclic_model() -> Model:
    """BasicTests: two ADDs reading each other's outputs (a cycle in the main graph)."""

    def tensor(**changes: object) -> Operand:
        return Operand(type=OperandType.TENSOR_FLOAT32, dimensions=(1, 4), **changes)  # type: ignore[arg-type]

    operands = [
        tensor(lifetime=LT.SUBGRAPH_INPUT, number_of_consumers=2),
        tensor(number_of_consumers=1),
        tensor(number_of_consumers=1, lifetime=LT.SUBGRAPH_OUTPUT),
        Operand(
            type=OperandType.INT32,
            number_of_consumers=2,
            lifetime=LT.CONSTANT_COPY,
            location=DataLocation(length=4),
        ),
    ]
    main = Subgraph(
        operands=operands,
        operations=[
            Operation(type=OperationType.ADD, inputs=[0, 2, 3], outputs=[1]),
            Operation(type=OperationType.ADD, inputs=[0, 1, 3], outputs=[2]),
        ],
        input_indexes=[0],
        output_indexes=[2],
    )
    return Model(main=main, operand_values_size=4, name="cyclic")
