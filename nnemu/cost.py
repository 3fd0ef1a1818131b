"""The cost model: what a model costs on a device, from the HAL work figures.

The drivers and the runtime's CPU executor both price work with it (as AOSP's
``CpuExecutor`` lives in libneuralnetworks_common, which both link).

``capabilities_from`` turns a scenario's performance spec into the HAL Capabilities
the driver reports; ``compute_plan`` prices each operation of a prepared model as its
work (``nnemu.hal.operation_work``: MACs and output elements) on the reference CPU
times the device's execTime ratio, and names the CpuExecutor's marks for it.
"""

from __future__ import annotations

import attrs

from nnemu.hal import (
    Capabilities,
    Model,
    OperandType,
    Operation,
    OperationType,
    PerformanceInfo,
    Subgraph,
    operation_work,
)
from nnemu.hal.presets import loop_iterations
from nnemu.scenario import CpuSpec, PerformanceSpec, PerfSpec
from nnemu.sim import us


@attrs.frozen
class ComputePlan:
    """The cost of one prepared model on one device."""

    op_ns: tuple[int, ...]
    """Duration of each operation on this device (whole µs)."""
    iterations: tuple[int, ...] = ()
    """Loop iterations of each operation (1 except for WHILE); empty = all 1."""
    trace_names: tuple[tuple[str, str], ...] = ()
    """The CpuExecutor's (transformation, computation) mark names for each operation."""
    power: float = 1.0
    """The device's powerUsage ratio for this model: each operation's (by its first
    input's type, as ``execTime``), weighted by its duration; energy = busy time x power."""
    op_us_ns: tuple[int, ...] = attrs.field(init=False, eq=False, repr=False)
    """``op_ns`` rounded to whole µs (``us``, as every duration is): what an execution at
    the nominal pace runs, computed once rather than per execution."""

    @op_us_ns.default
    def _op_us_ns(self) -> tuple[int, ...]:
        return tuple(map(us, self.op_ns))

    def names_of(self, index: int) -> tuple[str, str]:
        """Mark names of operation ``index`` (``op<index>`` when unknown)."""
        if index < len(self.trace_names):
            return self.trace_names[index]
        return (f"op{index}", f"op{index}")

    @property
    def total_ns(self) -> int:
        """Duration of all operations."""
        return sum(self.op_ns)

    def iterations_of(self, index: int) -> int:
        """How many loop iterations operation ``index`` runs (1 unless a WHILE)."""
        return self.iterations[index] if self.iterations else 1


def capabilities_from(spec: PerformanceSpec) -> Capabilities:
    """The HAL 1.3 Capabilities value a device spec describes."""

    def info(p: PerfSpec) -> PerformanceInfo:
        return PerformanceInfo(p.exec_time, p.power_usage)

    relaxed = info(spec.relaxed or spec.float32)
    table: list[tuple[OperandType, PerformanceInfo]] = []
    for kind in OperandType:
        if kind in (OperandType.SUBGRAPH, OperandType.OEM, OperandType.TENSOR_OEM_BYTE):
            continue
        if kind in (OperandType.FLOAT32, OperandType.TENSOR_FLOAT32):
            table.append((kind, info(spec.float32)))
        elif kind in (
            OperandType.TENSOR_QUANT8_ASYMM,
            OperandType.TENSOR_QUANT8_ASYMM_SIGNED,
            OperandType.TENSOR_QUANT8_SYMM,
            OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL,
        ):
            table.append((kind, info(spec.quant8)))
        else:
            table.append((kind, info(spec.other)))
    return Capabilities(
        relaxed_float32_to_float16_scalar=relaxed,
        relaxed_float32_to_float16_tensor=relaxed,
        operand_performance=table,
        if_performance=info(spec.if_),
        while_performance=info(spec.while_),
    )


def compute_plan(model: Model, capabilities: Capabilities, cpu: CpuSpec) -> ComputePlan:
    """Per-operation cost of ``model`` on a device with ``capabilities``.

    An operation costs what it costs on the reference CPU (``cpu``: ns per MAC and per
    output element) times the device's execTime ratio for its first input's type.
    """
    relaxed = model.relax_computation_float32_to_float16

    def op_cost(subgraph: Subgraph, op: Operation) -> float:
        work = operation_work(model, subgraph, op)
        base = work.macs * cpu.ns_per_mac + work.elements * cpu.ns_per_element
        if op.type is OperationType.WHILE:
            # WHILE = while + cond sum + body sum, per iteration (docs/hal-semantics.md §2).
            cond, body = (_referenced(model, subgraph, i) for i in op.inputs[:2])
            inner = subgraph_cost(cond) + subgraph_cost(body)
            return base * capabilities.while_performance.exec_time + inner
        if op.type is OperationType.IF:
            # IF = if + mean(then, else).
            branches = [_referenced(model, subgraph, i) for i in op.inputs[1:3]]
            inner = sum(subgraph_cost(b) for b in branches) / max(1, len(branches))
            return base * capabilities.if_performance.exec_time + inner
        info = capabilities.performance(work.first_input_type, relaxed=relaxed)
        return base * info.exec_time

    def subgraph_cost(subgraph: Subgraph | None) -> float:
        if subgraph is None:
            return 0.0
        return sum(op_cost(subgraph, op) for op in subgraph.operations)

    def op_power(op: Operation) -> float:
        if op.type is OperationType.WHILE:
            return capabilities.while_performance.power_usage
        if op.type is OperationType.IF:
            return capabilities.if_performance.power_usage
        first = operation_work(model, model.main, op).first_input_type
        return capabilities.performance(first, relaxed=relaxed).power_usage

    op_ns: list[int] = []
    iterations: list[int] = []
    weighted = 0.0
    for op in model.main.operations:
        count = loop_iterations(model, op) if op.type is OperationType.WHILE else 1
        per_iteration = op_cost(model.main, op)
        op_ns.append(us(max(per_iteration * count, 1000.0)))
        iterations.append(count)
        weighted += op_ns[-1] * op_power(op)
    total = sum(op_ns)
    return ComputePlan(
        tuple(op_ns),
        tuple(iterations) if any(n > 1 for n in iterations) else (),
        tuple(_trace_names(model, op) for op in model.main.operations),
        power=weighted / total if total else 1.0,
    )


# The CpuExecutor's marks per operation: transformation (PTR) then computation (PCO),
# named after the functions AOSP traces (docs/hal-semantics.md §6); others use the op name.
_TRACE_NAMES: dict[OperationType, tuple[str, str]] = {
    OperationType.CONV_2D: ("convFloat32", "optimized_ops::Conv"),
    OperationType.DEPTHWISE_CONV_2D: ("depthwiseConvFloat32", "optimized_ops::DepthwiseConv"),
    OperationType.ADD: ("addFloat32", "optimized_ops::Add"),
    OperationType.AVERAGE_POOL_2D: ("averagePoolFloat32", "optimized_ops::AveragePool"),
    OperationType.MAX_POOL_2D: ("maxPoolFloat32", "optimized_ops::MaxPool"),
    OperationType.FULLY_CONNECTED: ("fullyConnectedFloat32", "optimized_ops::FullyConnected"),
    OperationType.SOFTMAX: ("softmaxFloat32", "optimized_ops::Softmax"),
    OperationType.LSTM: ("LSTMCell::Prepare", "LSTMCell::LSTMEvalFloat32"),
    OperationType.RNN: ("RNN::Prepare", "RNN::Eval"),
    OperationType.TANH: ("tanhPrepare", "tanhFloat32"),
}


def _trace_names(model: Model, op: Operation) -> tuple[str, str]:
    names = _TRACE_NAMES.get(op.type)
    if names is None:
        name = op.type.name.lower() if isinstance(op.type, OperationType) else f"op{op.type}"
        return (name, name)
    quantized = any(
        model.main.operands[i].type is OperandType.TENSOR_QUANT8_ASYMM
        for i in op.inputs[:1]
        if i < len(model.main.operands)
    )
    if quantized:
        return (names[0].replace("Float32", "Quant8"), names[1])
    return names


def _referenced(model: Model, subgraph: Subgraph, operand_index: int) -> Subgraph | None:
    """The subgraph a SUBGRAPH operand refers to (None if it is not one)."""
    if operand_index >= len(subgraph.operands):
        return None
    operand = subgraph.operands[operand_index]
    if operand.type is not OperandType.SUBGRAPH:
        return None
    index = operand.location.offset
    return model.referenced[index] if index < len(model.referenced) else None
