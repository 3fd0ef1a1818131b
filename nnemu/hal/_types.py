"""HAL value types: frozen, hashable, the wire format between runtime and driver.

The shapes follow HAL 1.3 (``Model`` = main ``Subgraph`` + referenced subgraphs);
older HAL versions see the same values, as the real runtime down-converts them.
Their only logic is small derived properties.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import attrs

from nnemu.hal._enums import (
    OperandLifeTime,
    OperandType,
    OperationType,
)

ASHMEM = "ashmem"
"""The ``hidl_memory`` name of shared memory (``ANeuralNetworksMemory_createFromFd``)."""

HARDWARE_BUFFER_BLOB = "hardware_buffer_blob"
"""The ``hidl_memory`` name of a BLOB-mode AHardwareBuffer (HAL 1.2+)."""

HARDWARE_BUFFER = "hardware_buffer"
"""The ``hidl_memory`` name of an AHardwareBuffer of any other format (HAL 1.2+)."""

UINT64_MAX = 2**64 - 1
"""Timing value meaning 'unknown'."""

CACHE_TOKEN_BYTES = 32
"""Length of a compilation cache token (HAL 1.2 ``Constant::BYTE_SIZE_OF_CACHE_TOKEN``)."""

LOOP_TIMEOUT_DEFAULT_NS = 2_000_000_000
"""Default WHILE loop timeout (HAL 1.3 ``LoopTimeoutDurationNs::DEFAULT``)."""

LOOP_TIMEOUT_MAXIMUM_NS = 15_000_000_000
"""Largest WHILE loop timeout (HAL 1.3 ``LoopTimeoutDurationNs::MAXIMUM``)."""


def _operands(value: Iterable[Operand]) -> tuple[Operand, ...]:
    return tuple(value)


def _operations(value: Iterable[Operation]) -> tuple[Operation, ...]:
    return tuple(value)


def _subgraphs(value: Iterable[Subgraph]) -> tuple[Subgraph, ...]:
    return tuple(value)


def _arguments(value: Iterable[RequestArgument]) -> tuple[RequestArgument, ...]:
    return tuple(value)


def _tokens(value: Iterable[int | None]) -> tuple[int | None, ...]:
    return tuple(value)


def _names(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


def _tuple_of_ints(value: object) -> tuple[int, ...]:
    return tuple(int(v) for v in value)  # type: ignore[attr-defined]


@attrs.frozen(kw_only=True)
class DataLocation:
    """Where an operand's value lives (pool index, offset, length)."""

    pool_index: int = 0
    """Index into the model's pools (0 for CONSTANT_COPY: the operandValues blob)."""
    offset: int = 0
    """Byte offset in the pool."""
    length: int = 0
    """Length in bytes."""


@attrs.frozen(kw_only=True)
class Operand:
    """One operand of a subgraph."""

    type: OperandType
    """Element type."""
    dimensions: tuple[int, ...] = attrs.field(default=(), converter=_tuple_of_ints)
    """Shape; 0 marks an unknown dimension, () a scalar."""
    number_of_consumers: int = 0
    """How many operations read this operand."""
    scale: float = 0.0
    """Quantization scale (0 for float types)."""
    zero_point: int = 0
    """Quantization zero point."""
    lifetime: OperandLifeTime = OperandLifeTime.TEMPORARY_VARIABLE
    """How the operand's value is provided."""
    location: DataLocation = DataLocation()
    """Value location for constants; offset = subgraph index for SUBGRAPH operands."""

    @property
    def element_count(self) -> int:
        """Number of elements (1 for scalars; unknown dimensions count as 1)."""
        return math.prod(d if d > 0 else 1 for d in self.dimensions)

    @property
    def byte_size(self) -> int:
        """Size of the operand's value in bytes."""
        return self.element_count * self.type.element_bytes


@attrs.frozen(kw_only=True)
class Operation:
    """One operation: a type and operand indexes."""

    type: OperationType
    """What the operation computes."""
    inputs: tuple[int, ...] = attrs.field(converter=_tuple_of_ints)
    """Indexes of the input operands."""
    outputs: tuple[int, ...] = attrs.field(converter=_tuple_of_ints)
    """Indexes of the output operands."""


@attrs.frozen(kw_only=True)
class Subgraph:
    """Operands and operations in execution order, with the subgraph's inputs and outputs."""

    operands: tuple[Operand, ...] = attrs.field(converter=_operands)
    """All operands of the subgraph."""
    operations: tuple[Operation, ...] = attrs.field(converter=_operations)
    """Operations in execution order."""
    input_indexes: tuple[int, ...] = attrs.field(converter=_tuple_of_ints)
    """Operands that are subgraph inputs."""
    output_indexes: tuple[int, ...] = attrs.field(converter=_tuple_of_ints)
    """Operands that are subgraph outputs."""


@attrs.frozen(kw_only=True)
class Model:
    """A HAL 1.3 model: the main subgraph plus referenced subgraphs (for IF/WHILE)."""

    main: Subgraph
    """The main subgraph."""
    referenced: tuple[Subgraph, ...] = attrs.field(default=(), converter=_subgraphs)
    """Subgraphs referenced by SUBGRAPH operands."""
    operand_values_size: int = 0
    """Size of the CONSTANT_COPY blob in bytes (the bytes themselves are not modelled)."""
    pool_sizes: tuple[int, ...] = attrs.field(default=(), converter=_tuple_of_ints)
    """Sizes of the CONSTANT_REFERENCE memory pools in bytes."""
    relax_computation_float32_to_float16: bool = False
    """Whether FP32 may be computed with FP16 range and precision."""
    name: str = ""
    """A label for traces and reports (not part of the HAL model)."""

    @property
    def constant_bytes(self) -> int:
        """Bytes of constant data (weights) the model carries."""
        return self.operand_values_size + sum(self.pool_sizes)


@attrs.frozen(kw_only=True)
class RequestArgument:
    """One input or output of a request."""

    has_no_value: bool = False
    """Whether the argument is omitted."""
    location: DataLocation = DataLocation()
    """Where the data lives in the request pools."""
    dimensions: tuple[int, ...] = attrs.field(default=(), converter=_tuple_of_ints)
    """Dimensions that fill unknown axes of the model operand ( () = as in the model)."""


@attrs.frozen(kw_only=True)
class Request:
    """Inputs, outputs and memory pools of one execution."""

    inputs: tuple[RequestArgument, ...] = attrs.field(converter=_arguments)
    """One argument per model input, in order."""
    outputs: tuple[RequestArgument, ...] = attrs.field(converter=_arguments)
    """One argument per model output, in order."""
    pool_sizes: tuple[int, ...] = attrs.field(default=(), converter=_tuple_of_ints)
    """Sizes in bytes of the memory pools (0 for a device memory's)."""
    pool_tokens: tuple[int | None, ...] = attrs.field(default=(), converter=_tokens)
    """HAL 1.3 ``MemoryPool`` kinds: per pool, None for shared memory, else the token of
    the device memory it is (``IDevice::allocate``); ``()``: every pool is shared memory."""

    pool_names: tuple[str, ...] = attrs.field(default=(), converter=_names)
    """Per pool, the ``hidl_memory`` name of a shared-memory pool: ``ashmem``,
    ``hardware_buffer_blob`` (a BLOB-mode AHardwareBuffer) or ``hardware_buffer`` (any other
    AHardwareBuffer format; size 0, read whole); ``()``: every pool is ashmem."""

    @property
    def compliant_with_v1_0(self) -> bool:
        """``compliantWithV1_0``: every pool is shared memory of a 1.0 name (no device memory,
        no AHardwareBuffer), so a 1.0/1.1 driver can take the request."""
        return not any(token is not None for token in self.pool_tokens) and all(
            name in ("", ASHMEM) for name in self.pool_names
        )

    def token_of(self, pool_index: int) -> int | None:
        """The device memory token of pool ``pool_index``, or None for shared memory."""
        tokens = self.pool_tokens
        return tokens[pool_index] if pool_index < len(tokens) else None


@attrs.frozen
class PerformanceInfo:
    """Performance relative to the runtime's CPU device on a reference workload; lower is better."""

    exec_time: float
    """Execution time ratio."""
    power_usage: float
    """Power usage ratio."""


FLT_MAX_PERFORMANCE = PerformanceInfo(3.4028234663852886e38, 3.4028234663852886e38)
"""The value a 1.2+ capabilities table implies for an operand type it does not list."""


def _sorted_performance(
    value: Iterable[tuple[OperandType, PerformanceInfo]],
) -> tuple[tuple[OperandType, PerformanceInfo], ...]:
    return tuple(sorted(value, key=lambda item: int(item[0])))


@attrs.frozen(kw_only=True)
class Capabilities:
    """Device capabilities in HAL 1.3 shape (older HALs see their slice of it)."""

    relaxed_float32_to_float16_scalar: PerformanceInfo
    """Relaxed FP32 performance, scalars."""
    relaxed_float32_to_float16_tensor: PerformanceInfo
    """Relaxed FP32 performance, tensors."""
    operand_performance: tuple[tuple[OperandType, PerformanceInfo], ...] = attrs.field(
        converter=_sorted_performance
    )
    """Per operand type performance, sorted by type."""
    if_performance: PerformanceInfo = PerformanceInfo(1.0, 1.0)
    """Cost of the IF operation itself (1.3)."""
    while_performance: PerformanceInfo = PerformanceInfo(1.0, 1.0)
    """Cost of the WHILE operation itself (1.3)."""

    def performance(self, operand_type: OperandType, *, relaxed: bool = False) -> PerformanceInfo:
        """Performance for an operation whose first input has ``operand_type`` (FLT_MAX if unlisted)."""
        if relaxed and operand_type in (OperandType.FLOAT32, OperandType.TENSOR_FLOAT32):
            if operand_type is OperandType.FLOAT32:
                return self.relaxed_float32_to_float16_scalar
            return self.relaxed_float32_to_float16_tensor
        for kind, info in self.operand_performance:
            if kind == operand_type:
                return info
        return FLT_MAX_PERFORMANCE


@attrs.frozen
class OutputShape:
    """Dimensions of one output after execution, and whether its buffer was large enough."""

    dimensions: tuple[int, ...] = attrs.field(converter=_tuple_of_ints)
    """Actual dimensions."""
    is_sufficient: bool = True
    """Whether the provided buffer was large enough."""


@attrs.frozen
class Timing:
    """HAL 1.2 Timing in microseconds; UINT64_MAX means unknown."""

    time_on_device_us: int = UINT64_MAX
    """Time spent on the device."""
    time_in_driver_us: int = UINT64_MAX
    """Time spent in the driver, including on the device."""


NO_TIMING = Timing()
"""Timing with both values unknown."""
