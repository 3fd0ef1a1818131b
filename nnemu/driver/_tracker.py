"""The sample driver's device-memory bookkeeping: ``ManagedBuffer`` and ``BufferTracker``.

As ``common/BufferTracker.cpp`` (Android 11): each buffer's roles, operand, dimensions and
initialized state, the checks of a request, a copy and an execution's results against them,
and the token table (``_buffer`` has ``allocate`` and the ``IBuffer`` objects over them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import attrs

from nnemu.hal import (
    ErrorStatus,
    Model,
    OperandType,
    OperationType,
    OutputShape,
    PreparedModelRole,
    Request,
    combine_dimensions,
)


@attrs.define(eq=False)
class ManagedBuffer:
    """``ManagedBuffer``: one device memory's size, roles, operand and state."""

    size: int
    """Bytes."""
    roles: frozenset[PreparedModelRole]
    """(prepared model, is an output, io index) it was allocated for."""
    operand_type: OperandType
    """The roles' operand type."""
    initial_dimensions: tuple[int, ...]
    """The dimensions allocated (the desc's combined with the roles')."""
    dimensions: tuple[int, ...] = attrs.field(init=False)
    """The dimensions last written (``mUpdatedDimensions``)."""
    initialized: bool = False
    """Whether it holds data (``copyFrom`` or an execution's output wrote it)."""

    def __attrs_post_init__(self) -> None:
        self.dimensions = self.initial_dimensions

    def validate_request(
        self, pool_index: int, request: Request, prepared: object
    ) -> ErrorStatus | None:
        """``ManagedBuffer::validateRequest``: the roles, the state and the dimensions of
        every argument of ``request`` in pool ``pool_index``; the error, or None."""
        as_input = as_output = False
        for i, argument in enumerate(request.inputs):
            if argument.has_no_value or argument.location.pool_index != pool_index:
                continue
            if (prepared, False, i) not in self.roles:
                return ErrorStatus.INVALID_ARGUMENT
            if not self.initialized:
                return ErrorStatus.GENERAL_FAILURE
            if combine_dimensions(self.dimensions, argument.dimensions) is None:
                return ErrorStatus.INVALID_ARGUMENT
            as_input = True
        for i, argument in enumerate(request.outputs):
            if argument.has_no_value or argument.location.pool_index != pool_index:
                continue
            if as_input or as_output:  # one memory: never input and output, nor two outputs
                return ErrorStatus.INVALID_ARGUMENT
            if (prepared, True, i) not in self.roles:
                return ErrorStatus.INVALID_ARGUMENT
            if combine_dimensions(self.initial_dimensions, argument.dimensions) is None:
                return ErrorStatus.INVALID_ARGUMENT
            as_output = True
        return None

    def validate_copy_from(self, dimensions: Sequence[int], size: int) -> ErrorStatus | None:
        """``validateCopyFrom``: the source's size and the dimensions given."""
        if size != self.size:
            return ErrorStatus.INVALID_ARGUMENT
        if self.operand_type.is_scalar:
            return ErrorStatus.INVALID_ARGUMENT if dimensions else None
        given = dimensions or self.initial_dimensions
        if not given or 0 in given:  # the dimensions must end up fully specified
            return ErrorStatus.INVALID_ARGUMENT
        if combine_dimensions(self.initial_dimensions, dimensions) is None:
            return ErrorStatus.INVALID_ARGUMENT
        return None

    def validate_copy_to(self, size: int) -> ErrorStatus | None:
        """``validateCopyTo``: the destination's size, then the state."""
        if size != self.size:
            return ErrorStatus.INVALID_ARGUMENT
        if not self.initialized:
            return ErrorStatus.GENERAL_FAILURE
        return None

    def update_dimensions(self, dimensions: Sequence[int]) -> bool:
        """``updateDimensions``: record what was written (False if it conflicts)."""
        combined = combine_dimensions(self.initial_dimensions, dimensions)
        if combined is None:
            return False
        self.dimensions = combined
        return True


class BufferTracker:
    """``BufferTracker``: the driver's token -> buffer table (token 0 is never handed out)."""

    def __init__(self) -> None:
        self._buffers: list[ManagedBuffer | None] = [None]
        self._free: list[int] = []

    def add(self, buffer: ManagedBuffer) -> int:
        """A token for ``buffer``: the most recently freed one, else the next."""
        if self._free:
            token = self._free.pop()
            self._buffers[token] = buffer
        else:
            token = len(self._buffers)
            self._buffers.append(buffer)
        return token

    def get(self, token: int | None) -> ManagedBuffer | None:
        """The buffer of ``token``, None for an unknown one."""
        if token is None or not 0 <= token < len(self._buffers):
            return None
        return self._buffers[token]

    def free(self, token: int) -> None:
        """The buffer's last reference is gone: its token can be handed out again."""
        if self.get(token) is not None:
            self._buffers[token] = None
            self._free.append(token)

    @property
    def live(self) -> int:
        """How many buffers are allocated."""
        return sum(buffer is not None for buffer in self._buffers)

    def pools(
        self, request: Request, prepared: object
    ) -> tuple[ErrorStatus | None, tuple[ManagedBuffer | None, ...]]:
        """``createRunTimePoolInfos``: each pool's buffer (None: shared memory), or the first
        error (an unknown token is INVALID_ARGUMENT)."""
        buffers: list[ManagedBuffer | None] = []
        for index, token in enumerate(request.pool_tokens):
            if token is None:
                buffers.append(None)
                continue
            buffer = self.get(token)
            if buffer is None:
                return ErrorStatus.INVALID_ARGUMENT, ()
            error = buffer.validate_request(index, request, prepared)
            if error is not None:
                return error, ()
            buffers.append(buffer)
        return None, tuple(buffers)


def update_device_memories(
    request: Request, buffers: tuple[ManagedBuffer | None, ...], shapes: Sequence[OutputShape]
) -> ErrorStatus | None:
    """``updateDeviceMemories`` after a successful execution: each output device memory takes
    its produced dimensions (GENERAL_FAILURE if they conflict) and becomes initialized."""
    written = [
        (buffers[argument.location.pool_index], i)
        for i, argument in enumerate(request.outputs)
        if not argument.has_no_value and buffers[argument.location.pool_index] is not None
    ]
    for buffer, i in written:
        assert buffer is not None
        if i < len(shapes) and not buffer.update_dimensions(shapes[i].dimensions):
            return ErrorStatus.GENERAL_FAILURE
    for buffer, _ in written:
        assert buffer is not None
        buffer.initialized = True
    return None


_BROADCAST_OPS: Final = frozenset({OperationType.ADD, OperationType.SUB, OperationType.MUL})
"""Operations (of nnemu's) whose output shape is the broadcast of their first two inputs'."""


def produced_shapes(
    model: Model, request: Request, shapes: tuple[OutputShape, ...]
) -> tuple[OutputShape, ...]:
    """The shapes an execution of ``request`` produces, as the sample driver's CPU executor
    infers them, for what ``updateDeviceMemories`` checks: an output the model leaves
    unknown takes, when an elementwise operation (ADD, SUB, MUL) writes it, the
    broadcast of that operation's inputs -- a model input with the request's dimensions
    for it.  ``shapes`` (the model's) stand for every output nothing infers."""
    main = model.main
    if all(0 not in shape.dimensions for shape in shapes):
        return shapes
    dims = {index: operand.dimensions for index, operand in enumerate(main.operands)}
    for argument, index in zip(request.inputs, main.input_indexes, strict=False):
        if argument.dimensions:
            dims[index] = argument.dimensions
    for operation in main.operations:
        if operation.type not in _BROADCAST_OPS or len(operation.inputs) < 2:
            continue
        [out] = operation.outputs[:1]
        if 0 in dims[out] or not dims[out]:
            broadcast = _broadcast(dims[operation.inputs[0]], dims[operation.inputs[1]])
            if broadcast is not None:
                dims[out] = broadcast
    return tuple(OutputShape(dims[index]) for index in main.output_indexes)


def _broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    """NNAPI's broadcast of two fully specified shapes (right-aligned, equal or 1)."""
    if not a or not b or 0 in a or 0 in b:
        return None
    result = []
    for x, y in zip(
        reversed((1,) * (len(b) - len(a)) + a), reversed((1,) * (len(a) - len(b)) + b), strict=True
    ):
        if x != y and 1 not in (x, y):
            return None
        result.append(max(x, y))
    return tuple(reversed(result))
