"""Model and request validation, after AOSP ``ValidateHal.cpp`` (Android 11).

Both validators return ``None`` for a valid value and otherwise a short reason naming
where the problem is. They never raise on malformed input: VTS ValidationTest feeds
them deliberately broken models (out-of-range enum values, dangling indexes, cycles),
and the driver turns any reason into ``INVALID_ARGUMENT``.

Operand values are not modelled (only their sizes), so checks that need values
(e.g. a CONV_2D stride being positive) are out of reach; everything structural is checked.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from nnemu.hal._enums import HalVersion, OperandLifeTime, OperandType, OperationType
from nnemu.hal._types import (
    ASHMEM,
    HARDWARE_BUFFER,
    HARDWARE_BUFFER_BLOB,
    Model,
    Operand,
    Operation,
    Request,
    RequestArgument,
    Subgraph,
)

_POOL_NAMES = ("", ASHMEM, HARDWARE_BUFFER_BLOB, HARDWARE_BUFFER)
"""The shared-memory pool names a 1.2+ driver takes (``validatePool``; "" = ashmem)."""

# --- operand types -------------------------------------------------------------------

_OPERAND_TYPE_SINCE: dict[OperandType, HalVersion] = {
    OperandType.FLOAT32: HalVersion.V1_0,
    OperandType.INT32: HalVersion.V1_0,
    OperandType.UINT32: HalVersion.V1_0,
    OperandType.TENSOR_FLOAT32: HalVersion.V1_0,
    OperandType.TENSOR_INT32: HalVersion.V1_0,
    OperandType.TENSOR_QUANT8_ASYMM: HalVersion.V1_0,
    OperandType.OEM: HalVersion.V1_0,
    OperandType.TENSOR_OEM_BYTE: HalVersion.V1_0,
    OperandType.BOOL: HalVersion.V1_2,
    OperandType.TENSOR_QUANT16_SYMM: HalVersion.V1_2,
    OperandType.TENSOR_FLOAT16: HalVersion.V1_2,
    OperandType.TENSOR_BOOL8: HalVersion.V1_2,
    OperandType.FLOAT16: HalVersion.V1_2,
    OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL: HalVersion.V1_2,
    OperandType.TENSOR_QUANT16_ASYMM: HalVersion.V1_2,
    OperandType.TENSOR_QUANT8_SYMM: HalVersion.V1_2,
    OperandType.TENSOR_QUANT8_ASYMM_SIGNED: HalVersion.V1_3,
    OperandType.SUBGRAPH: HalVersion.V1_3,
}

# Types whose operands carry no dimensions (AOSP: "Scalar data has dimensions of rank ...").
_RANKLESS = frozenset(
    {
        OperandType.FLOAT32,
        OperandType.INT32,
        OperandType.UINT32,
        OperandType.BOOL,
        OperandType.FLOAT16,
        OperandType.SUBGRAPH,
    }
)

_SCALE_ZERO = frozenset(
    {
        OperandType.FLOAT16,
        OperandType.FLOAT32,
        OperandType.INT32,
        OperandType.UINT32,
        OperandType.BOOL,
        OperandType.SUBGRAPH,
        OperandType.TENSOR_FLOAT16,
        OperandType.TENSOR_FLOAT32,
        OperandType.TENSOR_BOOL8,
        OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL,
    }
)
_SCALE_POSITIVE = frozenset(
    {
        OperandType.TENSOR_QUANT8_ASYMM,
        OperandType.TENSOR_QUANT8_ASYMM_SIGNED,
        OperandType.TENSOR_QUANT8_SYMM,
        OperandType.TENSOR_QUANT16_ASYMM,
        OperandType.TENSOR_QUANT16_SYMM,
    }
)
# Inclusive zero-point ranges; types not listed (OEM) are unchecked.
_ZERO_POINT_RANGE: dict[OperandType, tuple[int, int]] = {
    **{t: (0, 0) for t in _SCALE_ZERO},
    OperandType.TENSOR_INT32: (0, 0),
    OperandType.TENSOR_QUANT8_SYMM: (0, 0),
    OperandType.TENSOR_QUANT16_SYMM: (0, 0),
    OperandType.TENSOR_QUANT8_ASYMM: (0, 255),
    OperandType.TENSOR_QUANT8_ASYMM_SIGNED: (-128, 127),
    OperandType.TENSOR_QUANT16_ASYMM: (0, 65535),
}

_QUANT8 = frozenset({OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED})
_FLOAT = frozenset({OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16})
_FLOAT_QUANT = _FLOAT | _QUANT8
_OEM_TYPES = frozenset({OperandType.OEM, OperandType.TENSOR_OEM_BYTE})

# --- operation signatures ------------------------------------------------------------


@attrs.frozen
class _Signature:
    """Legal operand types of one operation type.

    Patterns use symbols resolved against the first input's type ``T``: ``T`` same type,
    ``W`` weights (``T``, or per-channel quant when ``T`` is quant8), ``B`` bias
    (TENSOR_INT32 when ``T`` is quant8, else ``T``), ``I`` INT32 scalar, ``F`` float scalar
    (FLOAT16 for TENSOR_FLOAT16, else FLOAT32), ``b`` BOOL scalar, ``TI`` TENSOR_INT32,
    ``T8`` TENSOR_BOOL8, ``FL`` a float tensor, ``Q`` a quant8 tensor.
    """

    since: HalVersion
    first: frozenset[OperandType]
    inputs: tuple[tuple[str, ...], ...]
    outputs: tuple[str, ...]


def _sig(
    since: HalVersion, first: frozenset[OperandType], outputs: str, *inputs: str
) -> _Signature:
    return _Signature(since, first, tuple(tuple(p.split()) for p in inputs), tuple(outputs.split()))


_V10, _V11, _V12, _V13 = HalVersion.V1_0, HalVersion.V1_1, HalVersion.V1_2, HalVersion.V1_3
_ARITH = _FLOAT_QUANT | {OperandType.TENSOR_INT32}
_POOL = ("T I I I I I I", "T I I I I I I b", "T I I I I I I I I I", "T I I I I I I I I I b")
_UNARY = ("T",)
_LSTM_23 = " ".join(["T"] * 20 + ["I", "F", "F"])
_LSTM_27 = _LSTM_23 + " T T T T"

SIGNATURES: dict[OperationType, _Signature] = {
    OperationType.ADD: _sig(_V10, _ARITH, "T", "T T I"),
    OperationType.MUL: _sig(_V10, _ARITH, "T", "T T I"),
    OperationType.SUB: _sig(_V11, _ARITH, "T", "T T I"),
    OperationType.AVERAGE_POOL_2D: _sig(_V10, _FLOAT_QUANT, "T", *_POOL),
    OperationType.MAX_POOL_2D: _sig(_V10, _FLOAT_QUANT, "T", *_POOL),
    OperationType.CONV_2D: _sig(
        _V10,
        _FLOAT_QUANT,
        "T",
        "T W B I I I I",
        "T W B I I I I b",
        "T W B I I I I b I I",
        "T W B I I I I I I I",
        "T W B I I I I I I I b",
        "T W B I I I I I I I b I I",
    ),
    OperationType.DEPTHWISE_CONV_2D: _sig(
        _V10,
        _FLOAT_QUANT,
        "T",
        "T W B I I I I I",
        "T W B I I I I I b",
        "T W B I I I I I b I I",
        "T W B I I I I I I I I",
        "T W B I I I I I I I I b",
        "T W B I I I I I I I I b I I",
    ),
    OperationType.FULLY_CONNECTED: _sig(_V10, _FLOAT_QUANT, "T", "T T B I"),
    OperationType.DEQUANTIZE: _sig(
        _V10,
        _QUANT8 | {OperandType.TENSOR_QUANT8_SYMM, OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL},
        "FL",
        "T",
    ),
    OperationType.QUANTIZE: _sig(_V12, _FLOAT, "Q", "T"),
    OperationType.L2_NORMALIZATION: _sig(_V10, _FLOAT_QUANT, "T", "T", "T I"),
    OperationType.LOGISTIC: _sig(_V10, _FLOAT_QUANT, "T", *_UNARY),
    OperationType.RELU: _sig(_V10, _FLOAT_QUANT, "T", *_UNARY),
    OperationType.RELU1: _sig(_V10, _FLOAT_QUANT, "T", *_UNARY),
    OperationType.RELU6: _sig(_V10, _FLOAT_QUANT, "T", *_UNARY),
    OperationType.TANH: _sig(_V10, _FLOAT_QUANT, "T", *_UNARY),
    OperationType.HARD_SWISH: _sig(_V13, _FLOAT_QUANT, "T", *_UNARY),
    OperationType.LSTM: _sig(_V10, _FLOAT, "T T T T", _LSTM_23, _LSTM_27),
    OperationType.RNN: _sig(_V10, _FLOAT, "T T", "T T T T T I"),
    OperationType.RESHAPE: _sig(_V10, _ARITH, "T", "T TI"),
    OperationType.RESIZE_BILINEAR: _sig(
        _V10,
        _FLOAT_QUANT,
        "T",
        "T I I",
        "T I I b",
        "T I I b b b",
        "T F F",
        "T F F b",
        "T F F b b b",
    ),
    OperationType.SOFTMAX: _sig(_V10, _FLOAT_QUANT, "T", "T F", "T F I"),
    OperationType.MEAN: _sig(_V11, _FLOAT_QUANT, "T", "T TI I"),
    OperationType.PAD: _sig(_V11, _FLOAT_QUANT, "T", "T TI"),
    OperationType.TRANSPOSE: _sig(_V11, _FLOAT_QUANT, "T", "T", "T TI"),
    OperationType.LESS: _sig(_V12, _ARITH | {OperandType.TENSOR_BOOL8}, "T8", "T T"),
}
"""Operand-type signatures of the non-variadic operation types nnemu knows.

CONCATENATION, IF, WHILE and OEM_OPERATION have variable arity and are checked in code.
"""

_SINCE_SPECIAL = {
    OperationType.CONCATENATION: _V10,
    OperationType.IF: _V13,
    OperationType.WHILE: _V13,
    OperationType.OEM_OPERATION: _V10,
}


def _matches(symbol: str, actual: OperandType, first: OperandType) -> bool:
    match symbol:
        case "T":
            return actual == first
        case "W":
            return actual == first or (
                first in _QUANT8 and actual == OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL
            )
        case "B":
            return actual == (OperandType.TENSOR_INT32 if first in _QUANT8 else first)
        case "I":
            return actual == OperandType.INT32
        case "F":
            wanted = (
                OperandType.FLOAT16 if first == OperandType.TENSOR_FLOAT16 else OperandType.FLOAT32
            )
            return actual == wanted
        case "b":
            return actual == OperandType.BOOL
        case "TI":
            return actual == OperandType.TENSOR_INT32
        case "T8":
            return actual == OperandType.TENSOR_BOOL8
        case "FL":
            return actual in _FLOAT
        case "Q":
            return actual in _QUANT8
    raise AssertionError(symbol)  # pragma: no cover - the table only uses the symbols above


def _fits(pattern: Sequence[str], types: Sequence[OperandType], first: OperandType) -> bool:
    return len(pattern) == len(types) and all(
        _matches(symbol, actual, first) for symbol, actual in zip(pattern, types, strict=True)
    )


# --- helpers -------------------------------------------------------------------------


def _operand_type(operand: Operand) -> OperandType | None:
    try:
        return OperandType(operand.type)
    except ValueError:
        return None


def _lifetime(operand: Operand) -> OperandLifeTime | None:
    try:
        return OperandLifeTime(operand.lifetime)
    except ValueError:
        return None


def _operation_type(operation: Operation) -> OperationType | None:
    try:
        return OperationType(operation.type)
    except ValueError:
        return None


def _fully_specified(operand: Operand, kind: OperandType) -> bool:
    if kind in _RANKLESS:
        return True
    return len(operand.dimensions) > 0 and all(d > 0 for d in operand.dimensions)


# --- model ---------------------------------------------------------------------------


def _validate_operand(
    index: int, operand: Operand, model: Model, version: HalVersion
) -> str | None:
    where = f"operand {index}"
    kind = _operand_type(operand)
    if kind is None:
        return f"{where} has invalid type {operand.type}"
    if not version.at_least(_OPERAND_TYPE_SINCE[kind]):
        return f"{where} type {kind.name} needs HAL {_OPERAND_TYPE_SINCE[kind].value}"
    if kind in _RANKLESS and operand.dimensions:
        return f"{where} of scalar type {kind.name} has rank {len(operand.dimensions)}"
    if any(d < 0 for d in operand.dimensions):
        return f"{where} has a negative dimension"
    if kind.is_tensor and not operand.dimensions and not version.at_least(HalVersion.V1_2):
        return f"{where} tensor of unknown rank needs HAL 1.2"
    if kind in _SCALE_ZERO and operand.scale != 0:
        return f"{where} of type {kind.name} has scale {operand.scale}, expected 0"
    if kind == OperandType.TENSOR_INT32 and not operand.scale >= 0:
        return f"{where} of type TENSOR_INT32 has negative scale {operand.scale}"
    if kind in _SCALE_POSITIVE and not operand.scale > 0:
        return f"{where} of type {kind.name} has scale {operand.scale}, expected > 0"
    if kind in _ZERO_POINT_RANGE:
        low, high = _ZERO_POINT_RANGE[kind]
        if not low <= operand.zero_point <= high:
            return f"{where} of type {kind.name} has zeroPoint {operand.zero_point}"
    if operand.number_of_consumers < 0:
        return f"{where} has a negative number of consumers"
    return _validate_location(where, operand, kind, model, version)


def _validate_location(
    where: str, operand: Operand, kind: OperandType, model: Model, version: HalVersion
) -> str | None:
    lifetime = _lifetime(operand)
    if lifetime is None:
        return f"{where} has invalid lifetime {operand.lifetime}"
    loc = operand.location
    if min(loc.pool_index, loc.offset, loc.length) < 0:
        return f"{where} has a negative location field"
    match lifetime:
        case OperandLifeTime.CONSTANT_COPY:
            if loc.pool_index != 0:
                return f"{where} is CONSTANT_COPY with pool index {loc.pool_index}"
            if loc.offset + loc.length > model.operand_values_size:
                return f"{where} CONSTANT_COPY range ends past operandValues"
        case OperandLifeTime.CONSTANT_REFERENCE:
            if loc.pool_index >= len(model.pool_sizes):
                return f"{where} refers to pool {loc.pool_index} of {len(model.pool_sizes)}"
            if loc.offset + loc.length > model.pool_sizes[loc.pool_index]:
                return f"{where} CONSTANT_REFERENCE range ends past pool {loc.pool_index}"
        case OperandLifeTime.SUBGRAPH:
            if not version.at_least(HalVersion.V1_3):
                return f"{where} has SUBGRAPH lifetime, which needs HAL 1.3"
            if loc.pool_index != 0 or loc.length != 0:
                return f"{where} SUBGRAPH location must only have an offset"
            if loc.offset >= len(model.referenced):
                return f"{where} references subgraph {loc.offset} of {len(model.referenced)}"
        case _:
            if (loc.pool_index, loc.offset, loc.length) != (0, 0, 0):
                return f"{where} has lifetime {lifetime.name} but a non-zero location"
    if (kind == OperandType.SUBGRAPH) != (lifetime == OperandLifeTime.SUBGRAPH):
        return f"{where}: SUBGRAPH type and SUBGRAPH lifetime must go together"
    if lifetime in (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE):
        if kind in _OEM_TYPES:
            return None
        if not _fully_specified(operand, kind):
            return f"{where} is a constant without fully specified dimensions"
        # ``kind`` is the validated type: a mutated operand may carry a raw int.
        size = operand.element_count * kind.element_bytes
        if loc.length != size:
            return f"{where} constant has length {loc.length}, expected {size}"
    return None


def _operand_types(subgraph: Subgraph, indexes: Sequence[int]) -> list[OperandType] | None:
    types: list[OperandType] = []
    for index in indexes:
        kind = _operand_type(subgraph.operands[index])
        if kind is None:
            return None
        types.append(kind)
    return types


def _referenced(model: Model, subgraph: Subgraph, index: int) -> Subgraph | None:
    operand = subgraph.operands[index]
    if _lifetime(operand) != OperandLifeTime.SUBGRAPH:
        return None
    offset = operand.location.offset
    return model.referenced[offset] if 0 <= offset < len(model.referenced) else None


def _same_types(
    where: str,
    what: str,
    callee: Subgraph,
    callee_indexes: Sequence[int],
    types: Sequence[OperandType],
) -> str | None:
    if len(callee_indexes) != len(types):
        return f"{where}: {what} has {len(callee_indexes)} operands, expected {len(types)}"
    for position, (index, kind) in enumerate(zip(callee_indexes, types, strict=True)):
        if not 0 <= index < len(callee.operands):
            return f"{where}: {what} operand {position} is out of range"
        if _operand_type(callee.operands[index]) != kind:
            return f"{where}: {what} operand {position} type differs from the caller's"
    return None


def _validate_signature(
    where: str,
    kind: OperationType,
    operation: Operation,
    subgraph: Subgraph,
    model: Model,
) -> str | None:
    ins = _operand_types(subgraph, operation.inputs)
    outs = _operand_types(subgraph, operation.outputs)
    if ins is None or outs is None:
        return f"{where} uses an operand of invalid type"
    if kind == OperationType.OEM_OPERATION:
        return None if outs else f"{where} has no outputs"
    if kind == OperationType.CONCATENATION:
        if len(ins) < 2 or len(outs) != 1 or ins[0] not in _FLOAT_QUANT:
            return f"{where} CONCATENATION needs tensors, an axis and one output"
        if any(t != ins[0] for t in ins[:-1]) or ins[-1] != OperandType.INT32:
            return f"{where} CONCATENATION operand types do not match"
        return None if outs[0] == ins[0] else f"{where} output type differs from input"
    if kind == OperationType.IF:
        return _validate_if(where, operation, subgraph, model, ins, outs)
    if kind == OperationType.WHILE:
        return _validate_while(where, operation, subgraph, model, ins, outs)
    sig = SIGNATURES[kind]
    if not ins:
        return f"{where} has no inputs"
    first = ins[0]
    if first not in sig.first:
        return f"{where} {kind.name} does not take {first.name} inputs"
    if not any(_fits(pattern, ins, first) for pattern in sig.inputs):
        counts = sorted({len(p) for p in sig.inputs})
        return f"{where} {kind.name} input types/count do not match (counts {counts})"
    if not _fits(sig.outputs, outs, first):
        return f"{where} {kind.name} output types/count do not match"
    return None


def _validate_if(
    where: str,
    operation: Operation,
    subgraph: Subgraph,
    model: Model,
    ins: list[OperandType],
    outs: list[OperandType],
) -> str | None:
    if len(ins) < 3 or not outs:
        return f"{where} IF needs a condition, two subgraphs and at least one output"
    if ins[0] != OperandType.TENSOR_BOOL8:
        return f"{where} IF condition must be TENSOR_BOOL8"
    for branch, index in (("then", operation.inputs[1]), ("else", operation.inputs[2])):
        callee = _referenced(model, subgraph, index)
        if callee is None:
            return f"{where} IF {branch} branch is not a SUBGRAPH operand"
        reason = _same_types(where, f"{branch} input", callee, callee.input_indexes, ins[3:])
        reason = reason or _same_types(
            where, f"{branch} output", callee, callee.output_indexes, outs
        )
        if reason:
            return reason
    return None


def _validate_while(
    where: str,
    operation: Operation,
    subgraph: Subgraph,
    model: Model,
    ins: list[OperandType],
    outs: list[OperandType],
) -> str | None:
    if len(ins) < 3 or not outs:
        return f"{where} WHILE needs cond, body, inputs and at least one output"
    cond = _referenced(model, subgraph, operation.inputs[0])
    body = _referenced(model, subgraph, operation.inputs[1])
    if cond is None or body is None:
        return f"{where} WHILE cond/body is not a SUBGRAPH operand"
    loop_ins = ins[2:]
    reason = _same_types(where, "cond input", cond, cond.input_indexes, loop_ins)
    reason = reason or _same_types(where, "body input", body, body.input_indexes, loop_ins)
    if reason:
        return reason
    if len(cond.output_indexes) != 1 or not 0 <= cond.output_indexes[0] < len(cond.operands):
        return f"{where} WHILE cond must have one output"
    if _operand_type(cond.operands[cond.output_indexes[0]]) != OperandType.TENSOR_BOOL8:
        return f"{where} WHILE cond output must be TENSOR_BOOL8"
    # Body outputs are the loop-carried values (m outputs + k state-only values).
    if not len(outs) <= len(body.output_indexes) <= len(loop_ins):
        return f"{where} WHILE body has {len(body.output_indexes)} outputs, expected {len(outs)}.."
    carried = loop_ins[: len(body.output_indexes)]
    reason = _same_types(where, "body output", body, body.output_indexes, carried)
    return reason or (
        None if outs == carried[: len(outs)] else f"{where} WHILE output types differ"
    )


def _validate_operations(
    name: str, subgraph: Subgraph, model: Model, version: HalVersion
) -> str | None:
    count = len(subgraph.operands)
    for i, operation in enumerate(subgraph.operations):
        where = f"{name}operation {i}"
        kind = _operation_type(operation)
        if kind is None:
            return f"{where} has invalid type {operation.type}"
        since = SIGNATURES[kind].since if kind in SIGNATURES else _SINCE_SPECIAL.get(kind)
        if since is None:
            return f"{where} type {kind.name} has no known signature"
        if not version.at_least(since):
            return f"{where} type {kind.name} needs HAL {since.value}"
        for what, indexes in (("input", operation.inputs), ("output", operation.outputs)):
            for index in indexes:
                if not 0 <= index < count:
                    return f"{where} {what} operand {index} is out of range ({count} operands)"
        reason = _validate_signature(where, kind, operation, subgraph, model)
        if reason:
            return reason
    return None


def _validate_io(name: str, subgraph: Subgraph) -> str | None:
    count = len(subgraph.operands)
    for what, indexes, lifetime in (
        ("input", subgraph.input_indexes, OperandLifeTime.SUBGRAPH_INPUT),
        ("output", subgraph.output_indexes, OperandLifeTime.SUBGRAPH_OUTPUT),
    ):
        for index in indexes:
            if not 0 <= index < count:
                return f"{name}{what} index {index} is out of range ({count} operands)"
            if _lifetime(subgraph.operands[index]) != lifetime:
                return f"{name}{what} operand {index} does not have {lifetime.name} lifetime"
        if len(set(indexes)) != len(indexes):
            return f"{name}{what} indexes contain duplicates"
        listed = set(indexes)
        for index, operand in enumerate(subgraph.operands):
            if _lifetime(operand) == lifetime and index not in listed:
                return f"{name}operand {index} has {lifetime.name} lifetime but is not a {what}"
    if not subgraph.output_indexes:
        return f"{name}subgraph has no outputs"
    return None


def _validate_dataflow(name: str, subgraph: Subgraph) -> str | None:
    consumers = [0] * len(subgraph.operands)
    defined = [
        _lifetime(o) not in (OperandLifeTime.TEMPORARY_VARIABLE, OperandLifeTime.SUBGRAPH_OUTPUT)
        for o in subgraph.operands
    ]
    written = [False] * len(subgraph.operands)
    for i, operation in enumerate(subgraph.operations):
        for index in operation.inputs:
            consumers[index] += 1
            if not defined[index]:
                return f"{name}operation {i} reads operand {index} before it is written"
        for index in operation.outputs:
            lifetime = _lifetime(subgraph.operands[index])
            if lifetime not in (
                OperandLifeTime.TEMPORARY_VARIABLE,
                OperandLifeTime.SUBGRAPH_OUTPUT,
            ):
                kind = lifetime.name if lifetime is not None else "invalid"
                return f"{name}operation {i} writes operand {index} of lifetime {kind}"
            if written[index]:
                return f"{name}operand {index} is written more than once"
            written[index] = defined[index] = True
    for index, operand in enumerate(subgraph.operands):
        if not defined[index]:
            return f"{name}operand {index} is never written"
        if operand.number_of_consumers != consumers[index]:
            return (
                f"{name}operand {index} has numberOfConsumers {operand.number_of_consumers},"
                f" but {consumers[index]} operations read it"
            )
    return None


def _validate_subgraph(
    name: str, subgraph: Subgraph, model: Model, version: HalVersion
) -> str | None:
    for index, operand in enumerate(subgraph.operands):
        reason = _validate_operand(index, operand, model, version)
        if reason:
            return name + reason
    return (
        _validate_operations(name, subgraph, model, version)
        or _validate_io(name, subgraph)
        or _validate_dataflow(name, subgraph)
    )


def _references(model: Model, subgraph: Subgraph) -> list[int]:
    return [
        o.location.offset
        for o in subgraph.operands
        if _lifetime(o) == OperandLifeTime.SUBGRAPH
        and 0 <= o.location.offset < len(model.referenced)
    ]


def _find_cycle(model: Model) -> int | None:
    """The index of a referenced subgraph on a reference cycle, or None (iterative DFS)."""
    edges = [_references(model, s) for s in model.referenced]
    state = [0] * len(model.referenced)  # 0 new, 1 on stack, 2 done
    for root in range(len(model.referenced)):
        if state[root]:
            continue
        stack = [(root, iter(edges[root]))]
        state[root] = 1
        while stack:
            node, successors = stack[-1]
            for nxt in successors:
                if state[nxt] == 1:
                    return nxt
                if state[nxt] == 0:
                    state[nxt] = 1
                    stack.append((nxt, iter(edges[nxt])))
                    break
            else:
                state[node] = 2
                stack.pop()
    return None


def validate_model(model: Model, version: HalVersion) -> str | None:
    """Check ``model`` as a driver of HAL ``version`` would (AOSP ``validateModel``).

    Args:
        model: the model, in HAL 1.3 shape.
        version: the HAL version whose rules apply (1.3-only types, lifetimes and
            operations are rejected for older versions).

    Returns:
        None if the model is valid, else a short reason.
    """
    if model.referenced and not version.at_least(HalVersion.V1_3):
        return "referenced subgraphs need HAL 1.3"
    if model.relax_computation_float32_to_float16 and not version.at_least(HalVersion.V1_1):
        return "relaxComputationFloat32toFloat16 needs HAL 1.1"
    if model.operand_values_size < 0 or any(size < 0 for size in model.pool_sizes):
        return "negative operandValues or pool size"
    reason = _validate_subgraph("", model.main, model, version)
    if reason:
        return reason
    for i, subgraph in enumerate(model.referenced):
        reason = _validate_subgraph(f"subgraph {i}: ", subgraph, model, version)
        if reason:
            return reason
    cycle = _find_cycle(model)
    if cycle is not None:
        return f"subgraph {cycle} references itself (cycle)"
    return None


# --- request -------------------------------------------------------------------------


def _validate_argument(
    where: str,
    argument: RequestArgument,
    operand: Operand,
    request: Request,
    *,
    is_input: bool,
    allow_unspecified: bool = True,
) -> str | None:
    loc = argument.location
    if argument.has_no_value:
        if (loc.pool_index, loc.offset, loc.length) != (0, 0, 0) or argument.dimensions:
            return f"{where} has no value but a location or dimensions"
        return None
    if min(loc.pool_index, loc.offset, loc.length) < 0:
        return f"{where} has a negative location field"
    if loc.pool_index >= len(request.pool_sizes):
        return f"{where} refers to pool {loc.pool_index} of {len(request.pool_sizes)}"
    # A device memory's pool has size 0: its arguments have offset and length 0
    # (MemoryAccessVerifier in ValidateHal.cpp).
    size = 0 if request.token_of(loc.pool_index) is not None else request.pool_sizes[loc.pool_index]
    if loc.offset + loc.length > size:
        return f"{where} range ends past pool {loc.pool_index}"
    dims = operand.dimensions
    if argument.dimensions:
        if dims and len(argument.dimensions) != len(dims):
            return f"{where} has rank {len(argument.dimensions)}, model says {len(dims)}"
        for axis, (model_dim, given) in enumerate(zip(dims, argument.dimensions, strict=False)):
            if model_dim != 0 and given != model_dim:
                return f"{where} dimension {axis} is {given}, model says {model_dim}"
        dims = argument.dimensions
    kind = _operand_type(operand)
    if is_input and kind is not None and kind.is_tensor and (not dims or 0 in dims):
        return f"{where} dimensions are not fully specified"
    if not allow_unspecified and 0 in dims:
        # ValidateHal.cpp validateRequestArguments, allowUnspecified false: a dimension the
        # model leaves 0 must be given by the request, and none given may be 0.
        return f"{where} dimension {dims.index(0)} is unspecified (0)"
    return None


def _overlap(a: RequestArgument, b: RequestArgument) -> bool:
    if a.has_no_value or b.has_no_value or a.location.pool_index != b.location.pool_index:
        return False
    if a.location.length == 0 or b.location.length == 0:
        return False
    a_end = a.location.offset + a.location.length
    b_end = b.location.offset + b.location.length
    return a.location.offset < b_end and b.location.offset < a_end


def validate_request(
    request: Request,
    model: Model,
    *,
    allow_unspecified_output: bool = True,
    allow_hardware_buffers: bool = True,
) -> str | None:
    """Check ``request`` against ``model``'s main subgraph (AOSP ``validateRequest``).

    Args:
        allow_unspecified_output: whether an output may leave a dimension unspecified (0):
            AOSP passes ``version >= V1_2 && allowUnspecifiedOutput``, so a 1.0/1.1 model's
            outputs, which have no dynamic shapes, must be fully specified.
        allow_hardware_buffers: whether a pool may be an AHardwareBuffer (``validatePool``:
            ``hardware_buffer_blob`` and ``hardware_buffer`` from HAL 1.2).

    Returns:
        None if the request is valid, else a short reason.
    """
    main = model.main
    for what, arguments, indexes in (
        ("input", request.inputs, main.input_indexes),
        ("output", request.outputs, main.output_indexes),
    ):
        if len(arguments) != len(indexes):
            return f"request has {len(arguments)} {what}s, model has {len(indexes)}"
        for i, (argument, index) in enumerate(zip(arguments, indexes, strict=True)):
            if not 0 <= index < len(main.operands):
                return f"model {what} {i} is out of range"
            reason = _validate_argument(
                f"request {what} {i}",
                argument,
                main.operands[index],
                request,
                is_input=what == "input",
                allow_unspecified=allow_unspecified_output or what == "input",
            )
            if reason:
                return reason
    if any(size < 0 for size in request.pool_sizes):
        return "request has a negative pool size"
    tokens = request.pool_tokens
    if tokens and len(tokens) != len(request.pool_sizes):
        return f"request has {len(tokens)} pool kinds for {len(request.pool_sizes)} pools"
    if any(token is not None and token <= 0 for token in tokens):
        return "request names device memory by an invalid token"  # validatePool: token > 0
    names = request.pool_names
    if names and len(names) != len(request.pool_sizes):
        return f"request has {len(names)} pool names for {len(request.pool_sizes)} pools"
    known = _POOL_NAMES if allow_hardware_buffers else ("", ASHMEM)
    if any(name not in known for name in names):
        return "request has a pool of an unsupported memory type"  # validatePool
    for i, output in enumerate(request.outputs):
        for j, other in enumerate(request.outputs[:i]):
            if _overlap(output, other):
                return f"request output {i} overlaps output {j}"
        for j, argument in enumerate(request.inputs):
            if _overlap(output, argument):
                return f"request output {i} overlaps input {j}"
    return None


# --- supported operations -------------------------------------------------------------


def _all_supported(
    model: Model, subgraph: Subgraph, op_types: frozenset[OperationType], seen: frozenset[int]
) -> bool:
    return all(
        _operation_supported(model, subgraph, operation, op_types, seen)
        for operation in subgraph.operations
    )


def _operation_supported(
    model: Model,
    subgraph: Subgraph,
    operation: Operation,
    op_types: frozenset[OperationType],
    seen: frozenset[int],
) -> bool:
    kind = _operation_type(operation)
    if kind is None or kind not in op_types:
        return False
    if kind not in (OperationType.IF, OperationType.WHILE):
        return True
    for index in operation.inputs:
        if not 0 <= index < len(subgraph.operands):
            return False
        operand = subgraph.operands[index]
        if _lifetime(operand) != OperandLifeTime.SUBGRAPH:
            continue
        offset = operand.location.offset
        if offset in seen or not 0 <= offset < len(model.referenced):
            return False
        if not _all_supported(model, model.referenced[offset], op_types, seen | {offset}):
            return False
    return True


_DEFAULT_SUPPORTED = frozenset(OperationType) - {OperationType.OEM_OPERATION}


def supported_by(model: Model, op_types: frozenset[OperationType] | None) -> tuple[bool, ...]:
    """Per main-subgraph operation, whether a device supporting ``op_types`` can run it.

    Args:
        model: a (valid) model.
        op_types: the operation types the device supports; None means every
            non-OEM type. OEM_OPERATION is supported only if listed explicitly.

    Returns:
        One flag per main-subgraph operation. IF/WHILE are supported only if every
        operation of the subgraphs they reference (recursively) is.
    """
    types = _DEFAULT_SUPPORTED if op_types is None else op_types
    return tuple(
        _operation_supported(model, model.main, operation, types, frozenset())
        for operation in model.main.operations
    )
