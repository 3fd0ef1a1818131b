"""The model and request mutations of VTS 1.3 ValidationTest, as generators of invalid values.

Each generator mirrors one test of
``hardware/interfaces/neuralnetworks/1.3/vts/functional/ValidateModel.cpp`` (model
mutations) or ``ValidateRequest.cpp`` (request mutations): given a valid ``Model`` (or
``Request``) it yields ``(description, mutant)`` for every mutant VTS would build from
it. Every mutant is invalid: a driver must reject it
(``validate_model`` / ``validate_request`` give a reason; the driver service answers
``INVALID_ARGUMENT``). The VTS skips are kept (``removeOperandSkip``,
``addOperationInputSkip``, ``mutateOperationOperandTypeSkip`` for the operation types
the presets use), so a generator may yield nothing for a small model.

Driver writers can use them to test their own validation::

    from nnemu.hal import build_preset
    from nnemu.hal.mutations import MODEL_MUTATIONS

    model = build_preset("add", "float32", {"size": 16})
    for vts_test, mutate in MODEL_MUTATIONS.items():
        for description, mutant in mutate(model):
            assert my_validate(mutant) is not None, f"{vts_test}: {description}"

The functions are pure (they only build new values with ``attrs.evolve``) and import
nothing of nnemu outside ``nnemu.hal``. They are importable as ``nnemu.hal.mutations``
(not re-exported by ``nnemu.hal``). ``with_main``, ``with_operand`` and
``with_operation`` are the small helpers the generators are built from, public for
writing one-off mutants; their ``changes`` are ``Any`` because a mutant may hold values
of the wrong type on purpose (an operand ``type`` of ``-1``, say).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import attrs

from nnemu.hal._enums import OperandLifeTime, OperandType, OperationType
from nnemu.hal._types import DataLocation, Model, Operand, Request

__all__ = [
    "MODEL_MUTATIONS",
    "REQUEST_MUTATIONS",
    "ModelMutants",
    "RequestMutants",
    "add_operation_input",
    "add_operation_output",
    "mutate_execution_order",
    "mutate_operand_add_writer",
    "mutate_operand_input_output",
    "mutate_operand_lifetime",
    "mutate_operand_number_of_consumers",
    "mutate_operand_rank",
    "mutate_operand_scale",
    "mutate_operand_type",
    "mutate_operand_zero_point",
    "mutate_operation_input_operand_index",
    "mutate_operation_operand_type",
    "mutate_operation_output_operand_index",
    "mutate_operation_remove_write",
    "mutate_operation_type",
    "remove_operand",
    "remove_operation",
    "remove_operation_input",
    "remove_operation_output",
    "remove_request_input",
    "remove_request_output",
    "with_main",
    "with_operand",
    "with_operation",
]

LT = OperandLifeTime
ModelMutants = Iterator[tuple[str, Model]]
"""What a model mutation yields: (description, mutant model)."""
RequestMutants = Iterator[tuple[str, Request]]
"""What a request mutation yields: (description, mutant request)."""


# --- helpers (the VTS hidl_vec helpers) ------------------------------------------------


def with_main(model: Model, **changes: Any) -> Model:
    """``model`` with fields of its main subgraph replaced."""
    return attrs.evolve(model, main=attrs.evolve(model.main, **changes))


def with_operand(model: Model, index: int, **changes: Any) -> Model:
    """``model`` with fields of main-subgraph operand ``index`` replaced."""
    operands = list(model.main.operands)
    operands[index] = attrs.evolve(operands[index], **changes)
    return with_main(model, operands=operands)


def with_operation(model: Model, index: int, **changes: Any) -> Model:
    """``model`` with fields of main-subgraph operation ``index`` replaced."""
    operations = list(model.main.operations)
    operations[index] = attrs.evolve(operations[index], **changes)
    return with_main(model, operations=operations)


def _push_operand(model: Model, operand: Operand) -> tuple[Model, int]:
    return with_main(model, operands=[*model.main.operands, operand]), len(model.main.operands)


def _without(values: tuple[int, ...], value: int) -> tuple[int, ...]:
    """removeValueAndDecrementGreaterValues."""
    return tuple(v - (v > value) for v in values if v != value)


def _become_constant_copy(model: Model, index: int) -> Model:
    operand = model.main.operands[index]
    size = operand.byte_size
    model = attrs.evolve(model, operand_values_size=model.operand_values_size + size)
    location = DataLocation(offset=model.operand_values_size - size, length=size)
    return with_operand(model, index, lifetime=LT.CONSTANT_COPY, location=location)


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


# --- operands ---------------------------------------------------------------------------


def mutate_operand_type(model: Model) -> ModelMutants:
    """VTS mutateOperandTypeTest: out-of-range operand type values, for every operand."""
    for i in range(len(model.main.operands)):
        for bad in (-1, 16, 9999, 10002):
            yield f"operand {i} type {bad}", with_operand(model, i, type=bad)


def mutate_operand_rank(model: Model) -> ModelMutants:
    """VTS mutateOperandRankTest: scalar (and SUBGRAPH) operands given rank 1."""
    for i, operand in enumerate(model.main.operands):
        if operand.type in (*_SCALARS, OperandType.SUBGRAPH):
            yield f"operand {i} rank 1", with_operand(model, i, dimensions=(1,))


def _invalid_scale(kind: OperandType) -> float:
    """VTS getInvalidScale."""
    if kind == OperandType.TENSOR_INT32:
        return -1.0
    return 0.0 if kind in _QUANT else 1.0


def mutate_operand_scale(model: Model) -> ModelMutants:
    """VTS mutateOperandScaleTest: a scale illegal for the operand's type."""
    for i, operand in enumerate(model.main.operands):
        bad = _invalid_scale(operand.type)
        yield f"operand {i} scale {bad}", with_operand(model, i, scale=bad)


def _invalid_zero_points(kind: OperandType) -> tuple[int, ...]:
    """VTS getInvalidZeroPoints."""
    return {
        OperandType.TENSOR_QUANT8_ASYMM: (-1, 256),
        OperandType.TENSOR_QUANT8_ASYMM_SIGNED: (-129, 128),
        OperandType.TENSOR_QUANT16_ASYMM: (-1, 65536),
    }.get(kind, (-1, 1))


def mutate_operand_zero_point(model: Model) -> ModelMutants:
    """VTS mutateOperandZeroPointTest: zero points outside the type's range."""
    for i, operand in enumerate(model.main.operands):
        for bad in _invalid_zero_points(operand.type):
            yield f"operand {i} zeroPoint {bad}", with_operand(model, i, zero_point=bad)


def _invalid_lifetimes(operand: Operand) -> list[OperandLifeTime]:
    """VTS getInvalidLifeTimes."""
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


def mutate_operand_lifetime(model: Model) -> ModelMutants:
    """VTS mutateOperandLifeTimeTest: lifetimes that change whether an operand needs a writer."""
    for i, operand in enumerate(model.main.operands):
        for lifetime in _invalid_lifetimes(operand):
            mutant = with_main(
                model,
                input_indexes=[x for x in model.main.input_indexes if x != i],
                output_indexes=[x for x in model.main.output_indexes if x != i],
            )
            mutant = with_operand(mutant, i, lifetime=lifetime, location=DataLocation())
            if lifetime == LT.CONSTANT_COPY:
                mutant = _become_constant_copy(mutant, i)
            elif lifetime == LT.SUBGRAPH_INPUT:
                mutant = with_main(mutant, input_indexes=[*mutant.main.input_indexes, i])
            elif lifetime == LT.SUBGRAPH_OUTPUT:
                mutant = with_main(mutant, output_indexes=[*mutant.main.output_indexes, i])
            yield f"operand {i} lifetime {lifetime.name}", mutant


def mutate_operand_input_output(model: Model) -> ModelMutants:
    """VTS mutateOperandInputOutputTest: lifetimes that disagree with the input/output lists."""
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
        mutant = with_operand(model, i, lifetime=changed, location=DataLocation())
        if changed == LT.CONSTANT_COPY:
            mutant = _become_constant_copy(mutant, i)
        yield f"operand {i} lifetime {changed.name}", mutant


def mutate_operand_number_of_consumers(model: Model) -> ModelMutants:
    """VTS mutateOperandNumberOfConsumersTest: numberOfConsumers other than the real count."""
    for i, operand in enumerate(model.main.operands):
        count = operand.number_of_consumers
        for bad in sorted({count + 1, count + 100, max(count - 1, 0) if count else count + 2}):
            yield f"operand {i} consumers {bad}", with_operand(model, i, number_of_consumers=bad)


def mutate_operand_add_writer(model: Model) -> ModelMutants:
    """VTS mutateOperandAddWriterTest: a second operation writing an already-written operand."""
    for op_index, op in enumerate(model.main.operations):
        for bad_output in range(len(op.outputs)):
            mutant = model
            for index in op.inputs:
                n = mutant.main.operands[index].number_of_consumers
                mutant = with_operand(mutant, index, number_of_consumers=n + 1)
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
            mutant = with_main(mutant, operations=[*mutant.main.operations, new_op])
            yield f"operation {op_index} rewrites output {bad_output}", mutant


# --- operations -------------------------------------------------------------------------


def _valid_quant(kind: OperandType) -> tuple[float, int]:
    if kind in _QUANT:
        return 1.0, 0
    return 0.0, 0


def _operation_operand_type_skip(model: Model, index: int, kind: OperandType) -> bool:
    """VTS mutateOperationOperandTypeSkip, for the operation types the presets use."""
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


def mutate_operation_operand_type(model: Model) -> ModelMutants:
    """VTS mutateOperationOperandTypeTest: an operation's operand changed to another valid type."""
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
                with_operand(
                    model,
                    i,
                    type=kind,
                    dimensions=dims or ((1,) if kind.is_tensor else ()),
                    scale=scale,
                    zero_point=zero_point,
                ),
            )


def mutate_operation_type(model: Model) -> ModelMutants:
    """VTS mutateOperationTypeTest: operation type values outside the enum."""
    for op_index in range(len(model.main.operations)):
        for bad in (-1, 102, 9999, 10001):
            yield f"operation {op_index} type {bad}", with_operation(model, op_index, type=bad)


def _index_mutants(model: Model, field: str) -> ModelMutants:
    for op_index, op in enumerate(model.main.operations):
        indexes: tuple[int, ...] = getattr(op, field)
        for k in range(len(indexes)):
            changed = list(indexes)
            changed[k] = len(model.main.operands)
            yield (
                f"operation {op_index} {field}[{k}]",
                with_operation(model, op_index, **{field: changed}),
            )


def mutate_operation_input_operand_index(model: Model) -> ModelMutants:
    """VTS mutateOperationInputOperandIndexTest: an operation input index past the operands."""
    yield from _index_mutants(model, "inputs")


def mutate_operation_output_operand_index(model: Model) -> ModelMutants:
    """VTS mutateOperationOutputOperandIndexTest: an operation output index past the operands."""
    yield from _index_mutants(model, "outputs")


def mutate_operation_remove_write(model: Model) -> ModelMutants:
    """VTS mutateOperationRemoveWriteTest: an operation writes a fresh operand, not one read.

    Yields nothing for a model without an operand that is both written and read.
    """
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
            yield (
                f"operation {op_index} output {k}",
                with_operation(mutant, op_index, outputs=outputs),
            )


def remove_operand(model: Model) -> ModelMutants:
    """VTS removeOperandTest: an operand that operations read is removed."""
    main = model.main
    for i, operand in enumerate(main.operands):
        if operand.number_of_consumers == 0:
            continue  # VTS removeOperandSkip: no effect
        yield (
            f"remove operand {i}",
            with_main(
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


def remove_operation(model: Model) -> ModelMutants:
    """VTS removeOperationTest: an operation is removed, leaving its outputs unwritten."""
    for op_index, op in enumerate(model.main.operations):
        mutant = model
        for index in op.inputs:
            n = mutant.main.operands[index].number_of_consumers
            mutant = with_operand(mutant, index, number_of_consumers=n - 1)
        operations = [o for k, o in enumerate(model.main.operations) if k != op_index]
        yield f"remove operation {op_index}", with_main(mutant, operations=operations)


def remove_operation_input(model: Model) -> ModelMutants:
    """VTS removeOperationInputTest: one input of an operation is dropped."""
    for op_index, op in enumerate(model.main.operations):
        for k, index in enumerate(op.inputs):
            n = model.main.operands[index].number_of_consumers
            mutant = with_operand(model, index, number_of_consumers=n - 1)
            inputs = [x for j, x in enumerate(op.inputs) if j != k]
            yield (
                f"operation {op_index} input {k}",
                with_operation(mutant, op_index, inputs=inputs),
            )


def remove_operation_output(model: Model) -> ModelMutants:
    """VTS removeOperationOutputTest: one output of an operation is dropped."""
    for op_index, op in enumerate(model.main.operations):
        for k in range(len(op.outputs)):
            outputs = [x for j, x in enumerate(op.outputs) if j != k]
            yield (
                f"operation {op_index} output {k}",
                with_operation(model, op_index, outputs=outputs),
            )


def add_operation_input(model: Model) -> ModelMutants:
    """VTS addOperationInputTest: an extra INT32 model input appended to an operation's inputs."""
    for op_index, op in enumerate(model.main.operations):
        if (op.type == OperationType.SOFTMAX and len(op.inputs) == 2) or (
            op.type == OperationType.L2_NORMALIZATION and len(op.inputs) == 1
        ):
            continue  # VTS addOperationInputSkip: an optional trailing INT32 would be valid
        extra = Operand(type=OperandType.INT32, number_of_consumers=1, lifetime=LT.SUBGRAPH_INPUT)
        mutant, index = _push_operand(model, extra)
        mutant = with_main(mutant, input_indexes=[*mutant.main.input_indexes, index])
        yield (
            f"operation {op_index} +input",
            with_operation(mutant, op_index, inputs=[*op.inputs, index]),
        )


def add_operation_output(model: Model) -> ModelMutants:
    """VTS addOperationOutputTest: an extra model output appended to an operation's outputs."""
    for op_index, op in enumerate(model.main.operations):
        first = model.main.operands[op.outputs[0]]
        extra = attrs.evolve(first, number_of_consumers=0, lifetime=LT.SUBGRAPH_OUTPUT)
        mutant, index = _push_operand(model, extra)
        mutant = with_main(mutant, output_indexes=[*mutant.main.output_indexes, index])
        yield (
            f"operation {op_index} +output",
            with_operation(mutant, op_index, outputs=[*op.outputs, index]),
        )


def mutate_execution_order(model: Model) -> ModelMutants:
    """VTS mutateExecutionOrderTest: an operation moved before its producer or after its consumer.

    Yields nothing for a single-operation model.
    """
    operations = list(model.main.operations)
    operands = model.main.operands
    for k, op in enumerate(operations):
        if any(
            operands[i].lifetime in (LT.TEMPORARY_VARIABLE, LT.SUBGRAPH_OUTPUT) for i in op.inputs
        ):
            yield (
                f"operation {k} first",
                with_main(model, operations=[op, *operations[:k], *operations[k + 1 :]]),
            )
        if any(operands[i].number_of_consumers > 0 for i in op.outputs):
            yield (
                f"operation {k} last",
                with_main(model, operations=[*operations[:k], *operations[k + 1 :], op]),
            )


MODEL_MUTATIONS: dict[str, Callable[[Model], ModelMutants]] = {
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
"""Every model mutation by its VTS ValidateModel.cpp test name."""


# --- requests ---------------------------------------------------------------------------


def remove_request_input(request: Request) -> RequestMutants:
    """VTS removeInputTest: one request input is dropped."""
    for k in range(len(request.inputs)):
        inputs = [a for j, a in enumerate(request.inputs) if j != k]
        yield f"remove input {k}", attrs.evolve(request, inputs=inputs)


def remove_request_output(request: Request) -> RequestMutants:
    """VTS removeOutputTest: one request output is dropped."""
    for k in range(len(request.outputs)):
        outputs = [a for j, a in enumerate(request.outputs) if j != k]
        yield f"remove output {k}", attrs.evolve(request, outputs=outputs)


REQUEST_MUTATIONS: dict[str, Callable[[Request], RequestMutants]] = {
    "removeInputTest": remove_request_input,
    "removeOutputTest": remove_request_output,
}
"""Every request mutation by its VTS ValidateRequest.cpp test name."""
