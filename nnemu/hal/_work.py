"""How much arithmetic an operation does: the input of the drivers' cost model.

A driver estimates ``time = macs x ns_per_mac + elements x ns_per_element``, scaled
by its capabilities for the operation's first input type. Shapes come from the
operands; operand values are not modelled, so scalars such as pooling window sizes
are inferred from shapes (documented per operation below).
"""

from __future__ import annotations

import math

import attrs

from nnemu.hal._enums import OperandLifeTime, OperandType, OperationType
from nnemu.hal._types import Model, Operand, Operation, Subgraph

# LSTM operand positions (NNAPI LSTM, 1.0 form).
_LSTM_INPUT_TO_FORGET_WEIGHTS = 2
_LSTM_PROJECTION_WEIGHTS = 16
_RNN_WEIGHTS = 1


@attrs.frozen(kw_only=True)
class OpWork:
    """The work of one operation."""

    macs: int
    """Multiply-accumulates (0 for elementwise and data-movement operations)."""
    elements: int
    """Elements written: the sum over all outputs (unknown dimensions count as 1)."""
    first_input_type: OperandType
    """Type of the first input, which selects the capabilities entry (HAL 1.2+ rule)."""


def _elements(operand: Operand) -> int:
    return operand.element_count


def _dim(operand: Operand, axis: int, default: int = 1) -> int:
    dims = operand.dimensions
    if -len(dims) <= axis < len(dims) and dims[axis] > 0:
        return dims[axis]
    return default


def _pool_window(source: Operand, out: Operand) -> int:
    """Window area, inferred from shapes (values are not modelled).

    Output smaller than input: window = stride = the size ratio per axis (covers the
    usual 2x2/s2 and global pools). Same size (stride 1, SAME padding): assume 3x3.
    """
    if len(source.dimensions) != 4 or len(out.dimensions) != 4:
        return 9
    ratios = [max(1, _dim(source, a) // _dim(out, a)) for a in (1, 2)]
    if ratios == [1, 1]:
        return 9
    return math.prod(ratios)


def _macs(kind: OperationType, subgraph: Subgraph, op: Operation) -> int:
    operands = subgraph.operands

    def inp(position: int) -> Operand | None:
        if position < len(op.inputs) and 0 <= op.inputs[position] < len(operands):
            return operands[op.inputs[position]]
        return None

    first = inp(0)
    second = inp(1)
    out = operands[op.outputs[0]] if op.outputs else None
    out0 = _elements(out) if out is not None else 0
    match kind:
        case OperationType.CONV_2D if second is not None:
            # filter [out_channels, kh, kw, in_channels]
            return out0 * _dim(second, 1) * _dim(second, 2) * _dim(second, 3)
        case OperationType.DEPTHWISE_CONV_2D if second is not None:
            # filter [1, kh, kw, channels * multiplier]
            return out0 * _dim(second, 1) * _dim(second, 2)
        case OperationType.FULLY_CONNECTED if second is not None:
            # weights [units, input_size]
            return out0 * _dim(second, 1)
        case OperationType.AVERAGE_POOL_2D | OperationType.MAX_POOL_2D if (
            first is not None and out is not None
        ):
            return out0 * _pool_window(first, out)
        case OperationType.LSTM if first is not None:
            batch, size = _dim(first, 0), _dim(first, -1)
            forget = inp(_LSTM_INPUT_TO_FORGET_WEIGHTS)
            units = _dim(forget, 0) if forget is not None else 1
            macs = 4 * units * (size + units) * batch
            projection = inp(_LSTM_PROJECTION_WEIGHTS)
            if projection is not None and projection.lifetime != OperandLifeTime.NO_VALUE:
                macs += batch * _dim(projection, 0) * _dim(projection, 1)
            return macs
        case OperationType.RNN if first is not None:
            weights = inp(_RNN_WEIGHTS)
            units = _dim(weights, 0) if weights is not None else 1
            return _dim(first, 0) * units * (_dim(first, -1) + units)
        case OperationType.MEAN if first is not None:
            return _elements(first)  # one accumulate per input element
    return 0


def operation_work(model: Model, subgraph: Subgraph, op: Operation) -> OpWork:
    """The MACs and output elements of ``op`` in ``subgraph`` of ``model``.

    MACs: CONV_2D = output elements x kh x kw x in-channels; DEPTHWISE_CONV_2D = output
    elements x kh x kw; FULLY_CONNECTED = output elements x input size; LSTM =
    4 x units x (input + units) x batch (+ projection); RNN = batch x units x (input +
    units); pooling = output elements x window; MEAN = input elements. Everything else
    (elementwise, reshapes, softmax) is 0 and costs only through ``elements``. IF and
    WHILE report their own (tiny) work; callers add the referenced subgraphs, since the
    branch taken and the trip count are a modelling choice (see ``presets.loop_iterations``).

    ``model`` is accepted for symmetry with the driver's call site; the work depends only
    on the subgraph's shapes.
    """
    del model  # shapes live in the subgraph
    operands = subgraph.operands
    outputs = [operands[i] for i in op.outputs if 0 <= i < len(operands)]
    elements = sum(_elements(o) for o in outputs)
    try:
        kind: OperationType | None = OperationType(op.type)
    except ValueError:
        kind = None
    first_type = OperandType.TENSOR_FLOAT32
    if op.inputs and 0 <= op.inputs[0] < len(operands):
        first_type = operands[op.inputs[0]].type
    macs = _macs(kind, subgraph, op) if kind is not None else 0
    return OpWork(macs=macs, elements=elements, first_input_type=first_type)


def subgraph_macs(model: Model, subgraph: Subgraph) -> int:
    """Total MACs of the operations of ``subgraph`` (not following IF/WHILE references)."""
    return sum(operation_work(model, subgraph, op).macs for op in subgraph.operations)


def _peak_temporaries(subgraph: Subgraph) -> int:
    """Largest total size of temporaries alive at once (written .. last read)."""
    operands = subgraph.operands
    last_read: dict[int, int] = {}
    for step, op in enumerate(subgraph.operations):
        for index in op.inputs:
            last_read[index] = step
    live: dict[int, int] = {}
    peak = current = 0
    for step, op in enumerate(subgraph.operations):
        for index in op.outputs:
            if 0 <= index < len(operands) and (
                operands[index].lifetime == OperandLifeTime.TEMPORARY_VARIABLE
            ):
                live[index] = operands[index].byte_size
                current += live[index]
        peak = max(peak, current)
        for index in [i for i in live if last_read.get(i, step) <= step]:
            current -= live.pop(index)
    return peak


def model_memory_bytes(model: Model) -> int:
    """Estimated device memory of a prepared model.

    Constants (operandValues + pools) plus the peak of simultaneously live temporaries
    of the main subgraph, plus the largest such peak among referenced subgraphs (only
    one IF branch or loop body runs at a time). Model inputs and outputs live in request
    memory and are not counted.
    """
    referenced_peak = max((_peak_temporaries(s) for s in model.referenced), default=0)
    return model.constant_bytes + _peak_temporaries(model.main) + referenced_peak
