"""Memory domains (HAL 1.3, AIDL): ``BufferDesc``, ``BufferRole``, shared memory, ``IBuffer``.

(The AIDL family's ``IBuffer`` and ``DeviceBuffer`` are in ``_aidl``.)

A driver allocates *device memory* for roles (an input or output of a prepared model) with
``IDevice::allocate`` and hands back an ``IBuffer`` and a token; a request names that memory
by its token (a ``Request.pool_tokens`` entry) instead of a shared-memory pool.  The rules
are ``validateMemoryDesc`` (``frameworks/ml/nn/common/ValidateHal.cpp``, Android 11) and the
sample driver's ``ManagedBuffer`` (``common/BufferTracker.cpp``); docs/hal-semantics.md,
"Memory domains", condenses them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Protocol, runtime_checkable

import attrs

from nnemu.hal._enums import ErrorStatus, OperandType
from nnemu.hal._types import Model, Operand, _tuple_of_ints

INVALID_BUFFER_TOKEN = 0
"""The token ``allocate`` answers with a failure (``kInvalidBufferToken``); never a valid one."""


@attrs.frozen
class SharedMemory:
    """A ``hidl_memory`` / AIDL ``Memory`` of ``size`` bytes (ashmem): what ``copyTo`` and
    ``copyFrom`` read and write.  Its bytes are not modelled."""

    size: int
    """Size in bytes."""


@attrs.frozen(kw_only=True)
class BufferDesc:
    """HAL 1.3 ``BufferDesc``: the dimensions the client asks for (``()``: from the roles)."""

    dimensions: tuple[int, ...] = attrs.field(default=(), converter=_tuple_of_ints)
    """Dimensions; 0 marks an unknown one, ``()`` an unknown rank (or a scalar)."""


@attrs.frozen(kw_only=True)
class BufferRole:
    """HAL 1.3 ``BufferRole``: input or output ``io_index`` of prepared model ``model_index``."""

    model_index: int
    """Index into ``allocate``'s prepared models."""
    io_index: int
    """Index of the model's input (input roles) or output (output roles)."""
    frequency: float = 1.0
    """How often the memory is used in this role, in (0, 1]."""


def combine_dimensions(lhs: Sequence[int], rhs: Sequence[int]) -> tuple[int, ...] | None:
    """AOSP ``combineDimensions``: the dimensions both describe, or None if they conflict.

    An empty side is an unknown rank; a 0 is an unknown dimension.
    """
    if not rhs:
        return tuple(lhs)
    if not lhs:
        return tuple(rhs)
    if len(lhs) != len(rhs):
        return None
    combined: list[int] = []
    for a, b in zip(lhs, rhs, strict=True):
        if a and b and a != b:
            return None
        combined.append(a or b)
    return tuple(combined)


def data_size(kind: OperandType, dimensions: Sequence[int]) -> int:
    """``nonExtensionOperandSizeOfData``: bytes of an operand, 0 when a dimension is unknown
    (a tensor of unknown rank included)."""
    if kind.is_scalar:
        return kind.element_bytes
    if not dimensions or 0 in dimensions:
        return 0
    size = kind.element_bytes
    for d in dimensions:
        size *= d
    return size


PreparedModelRole = tuple[object, bool, int]
"""(the driver's prepared model, is an output, io index): one role of an allocated buffer
(AOSP ``PreparedModelRole``)."""


def validate_memory_desc(
    desc: BufferDesc,
    prepared_models: Sequence[object | None],
    input_roles: Iterable[BufferRole],
    output_roles: Iterable[BufferRole],
    resolve: Callable[[object], tuple[object, Model] | None],
) -> tuple[frozenset[PreparedModelRole], Operand] | str:
    """Check an ``allocate`` request as ``validateMemoryDesc`` does.

    Args:
        desc: the requested dimensions.
        prepared_models: the prepared models the roles index (None: a null one).
        input_roles: the input roles.
        output_roles: the output roles.
        resolve: the driver's own prepared model (what roles are keyed by) and its model,
            for a prepared model this driver prepared; None for any other (a remote or
            foreign IPreparedModel).

    Returns:
        The roles and the combined operand (its dimensions merged with the desc's), or
        the reason the request is invalid.
    """
    if not prepared_models:
        return "no prepared models"
    roles: set[PreparedModelRole] = set()
    operands: list[Operand] = []
    for is_output, role_list in ((False, list(input_roles)), (True, list(output_roles))):
        what = "output" if is_output else "input"
        for role in role_list:
            if not 0 <= role.model_index < len(prepared_models):
                return f"{what} role names prepared model {role.model_index}"
            prepared = prepared_models[role.model_index]
            resolved = resolve(prepared) if prepared is not None else None
            if resolved is None:
                return f"{what} role's prepared model {role.model_index} is not this driver's"
            own, model = resolved
            main = model.main
            indexes = main.output_indexes if is_output else main.input_indexes
            if not 0 <= role.io_index < len(indexes):
                return f"{what} role names {what} {role.io_index} of {len(indexes)}"
            if not 0.0 < role.frequency <= 1.0:
                return f"{what} role has frequency {role.frequency}, expected (0, 1]"
            key = (own, is_output, role.io_index)
            if key in roles:
                return f"{what} role {role.io_index} is given twice"
            roles.add(key)
            operands.append(main.operands[indexes[role.io_index]])
    if not operands:
        return "no roles"
    first = operands[0]
    dimensions: tuple[int, ...] | None = desc.dimensions
    for operand in operands:
        if operand.type != first.type:
            return f"roles of types {first.type!r} and {operand.type!r}"
        if operand.scale != first.scale or operand.zero_point != first.zero_point:
            return "roles with different scales or zero points"
        assert dimensions is not None
        dimensions = combine_dimensions(dimensions, operand.dimensions)
        if dimensions is None:
            return "roles (or the desc) with conflicting dimensions"
    assert dimensions is not None
    if OperandType(first.type).is_scalar and dimensions:
        return "dimensions given for a scalar operand"
    return frozenset(roles), attrs.evolve(first, dimensions=dimensions)


@runtime_checkable
class IBuffer(Protocol):
    """HAL 1.3 ``IBuffer``: device memory a driver allocated, living in the driver process."""

    async def copyTo(self, dst: SharedMemory) -> ErrorStatus:
        """copyTo: the buffer's content into ``dst`` (same size; the buffer initialized)."""
        ...

    async def copyFrom(self, src: SharedMemory, dimensions: Sequence[int]) -> ErrorStatus:
        """copyFrom: ``src`` (same size) into the buffer, with its dimensions; initializes it."""
        ...
