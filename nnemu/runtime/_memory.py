"""ANeuralNetworksMemoryDesc and ANeuralNetworksMemory: device memory, ashmem, and copies.

As the R runtime (``frameworks/ml/nn/runtime/Memory.cpp``, ``NeuralNetworks.cpp``, Android
11): a ``MemoryDesc`` collects roles (an input or output of a finished compilation) and
dimensions; ``Memory.create_from_desc`` asks the one device the roles' prepared models live
on to ``allocate`` it (``MemoryBuilder::finish`` picks an allocator only when there is
exactly one device), and when that fails falls back -- unless a role's compilation was
created for explicit devices, or the size is unknown -- to a BLOB-mode AHardwareBuffer
(every device 1.3 or newer) or to ashmem (``MemoryBuilder::allocate``, ~453-520).  A memory
from a desc is *uninitialized* until a copy into it or an execution writing it as an
output succeeds; an execution reading it uninitialized fails with OP_FAILED before it
starts (``ExecutionBuilder::compute``).  ``Memory.copy`` is ``ANeuralNetworksMemory_copy``:
ashmem to device memory is the driver's ``IBuffer::copyFrom``, the other way ``copyTo``,
device to device both through a runtime AHardwareBuffer.

A role of a partitioned compilation names the input or output of each step that reads or
writes its operand (``forEachStepRoleOfInput``/``Output``); device memory is allocated only
when those steps are all on one driver.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import attrs

from nnemu.hal import (
    HARDWARE_BUFFER,
    HARDWARE_BUFFER_BLOB,
    BufferDesc,
    BufferRole,
    DataLocation,
    ErrorStatus,
    Operand,
    OperandType,
    Request,
    RequestArgument,
    ResultCode,
    combine_dimensions,
    data_size,
    status_to_code,
)
from nnemu.ipc import DeadObject
from nnemu.runtime._buffers import CanonicalBuffer
from nnemu.runtime._compilation import Compilation
from nnemu.runtime._runtime import API_CALL_NS, Runtime
from nnemu.tracer import Phase

if TYPE_CHECKING:
    from nnemu.runtime._canonical import CanonicalPreparedModel
    from nnemu.runtime._devices import RuntimeDevice


class MemoryKind(enum.Enum):
    """What backs an ANeuralNetworksMemory."""

    ASHMEM = "ashmem"
    """Shared memory (``createFromFd``, or a desc's fallback when a device is older than 1.3)."""
    BLOB_AHWB = "hardware_buffer_blob"
    """A BLOB-mode AHardwareBuffer (a desc's fallback when every device is 1.3 or newer)."""
    DEVICE = "device"
    """A driver's device memory (``IDevice::allocate``)."""
    HARDWARE_BUFFER = "hardware_buffer"
    """An AHardwareBuffer of a format other than BLOB (``createFromAHardwareBuffer``): no
    size the runtime knows, used whole."""


class AHardwareBufferFormat(enum.IntEnum):
    """``AHARDWAREBUFFER_FORMAT_*`` (``<android/hardware_buffer.h>``), a few of them."""

    R8G8B8A8_UNORM = 1
    R8G8B8X8_UNORM = 2
    R8G8B8_UNORM = 3
    R5G6B5_UNORM = 4
    R16G16B16A16_FLOAT = 0x16
    BLOB = 0x21
    """A byte buffer of ``width`` bytes (``height`` and ``layers`` 1)."""
    Y8CB8CR8_420 = 0x23


@attrs.frozen(kw_only=True)
class AHardwareBufferDesc:
    """``AHardwareBuffer_Desc``: what ``AHardwareBuffer_describe`` tells the runtime."""

    width: int
    """Bytes for a BLOB buffer, pixels otherwise."""
    height: int = 1
    layers: int = 1
    format: AHardwareBufferFormat = AHardwareBufferFormat.BLOB


CompilationRole = tuple[Compilation, bool, int]
"""(compilation, is an output, io index)."""


class MemoryDesc:
    """ANeuralNetworksMemoryDesc (``MemoryBuilder``)."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.roles: list[CompilationRole] = []
        self.operand: Operand | None = None
        self.dimensions: tuple[int, ...] = ()
        self.frequencies: dict[CompilationRole, float] = {}
        self.finished = False

    @classmethod
    def create(cls, runtime: Runtime) -> MemoryDesc:
        """ANeuralNetworksMemoryDesc_create."""
        with runtime.ndk_call(Phase.COMPILATION, "ANeuralNetworksMemoryDesc_create"):
            runtime.kernel.work(API_CALL_NS)
            return cls(runtime)

    def free(self) -> None:
        """ANeuralNetworksMemoryDesc_free."""
        with self.runtime.ndk_call(Phase.TERMINATION, "ANeuralNetworksMemoryDesc_free"):
            pass

    def add_input_role(self, compilation: Compilation, index: int, frequency: float) -> ResultCode:
        """ANeuralNetworksMemoryDesc_addInputRole."""
        with self.runtime.ndk_call(Phase.COMPILATION, "ANeuralNetworksMemoryDesc_addInputRole"):
            return self._add_role(compilation, False, index, frequency)

    def add_output_role(self, compilation: Compilation, index: int, frequency: float) -> ResultCode:
        """ANeuralNetworksMemoryDesc_addOutputRole."""
        with self.runtime.ndk_call(Phase.COMPILATION, "ANeuralNetworksMemoryDesc_addOutputRole"):
            return self._add_role(compilation, True, index, frequency)

    def _add_role(
        self, compilation: Compilation, is_output: bool, index: int, frequency: float
    ) -> ResultCode:
        """``MemoryBuilder::addRole``: BAD_STATE once finished; BAD_DATA for a role given
        twice, an unfinished compilation, an index out of range, an operand unlike the
        earlier roles', conflicting dimensions, or a frequency outside (0, 1]."""
        if self.finished:
            return ResultCode.BAD_STATE
        role = (compilation, is_output, index)
        if role in self.roles or not compilation.finished:
            return ResultCode.BAD_DATA
        main = compilation.model.main
        indexes = main.output_indexes if is_output else main.input_indexes
        if not 0 <= index < len(indexes):
            return ResultCode.BAD_DATA
        operand = main.operands[indexes[index]]
        first = self.operand
        if first is not None and (
            operand.type != first.type
            or operand.scale != first.scale
            or operand.zero_point != first.zero_point
        ):
            return ResultCode.BAD_DATA
        if not operand.type.is_tensor and self.dimensions:
            return ResultCode.BAD_DATA
        combined = combine_dimensions(self.dimensions, operand.dimensions)
        if combined is None or not 0.0 < frequency <= 1.0:
            return ResultCode.BAD_DATA
        self.roles.append(role)
        self.frequencies[role] = frequency
        self.operand = operand
        self.dimensions = combined
        return ResultCode.NO_ERROR

    def set_dimensions(self, dimensions: tuple[int, ...]) -> ResultCode:
        """ANeuralNetworksMemoryDesc_setDimensions: BAD_STATE once finished, BAD_DATA for
        dimensions of a scalar or conflicting with the roles'."""
        with self.runtime.ndk_call(Phase.COMPILATION, "ANeuralNetworksMemoryDesc_setDimensions"):
            if self.finished:
                return ResultCode.BAD_STATE
            operand = self.operand
            if operand is not None and not operand.type.is_tensor and dimensions:
                return ResultCode.BAD_DATA
            combined = combine_dimensions(self.dimensions, dimensions)
            if combined is None:
                return ResultCode.BAD_DATA
            self.dimensions = combined
            return ResultCode.NO_ERROR

    def finish(self) -> ResultCode:
        """ANeuralNetworksMemoryDesc_finish: BAD_STATE once finished, BAD_DATA without roles."""
        with self.runtime.ndk_call(Phase.COMPILATION, "ANeuralNetworksMemoryDesc_finish"):
            if self.finished:
                return ResultCode.BAD_STATE
            if not self.roles:
                return ResultCode.BAD_DATA
            self.finished = True
            return ResultCode.NO_ERROR

    @property
    def size(self) -> int:
        """Bytes the memory needs (0: unknown dimensions)."""
        assert self.operand is not None
        return data_size(self.operand.type, self.dimensions)

    def step_roles(
        self,
    ) -> tuple[
        set[RuntimeDevice], list[CanonicalPreparedModel], list[BufferRole], list[BufferRole]
    ]:
        """``MemoryBuilder::addRole``'s step roles: the devices of the steps that read or
        write each role's operand, and the ``allocate`` arguments for them (each step's
        prepared model and its own input or output index)."""
        devices: set[RuntimeDevice] = set()
        models: list[CanonicalPreparedModel] = []
        inputs: list[BufferRole] = []
        outputs: list[BufferRole] = []
        for role in self.roles:
            compilation, is_output, index = role
            for step_index, step_output, io_index in step_roles_of(compilation, is_output, index):
                devices.add(compilation.steps[step_index].device)
                prepared = compilation.prepared.get(step_index)
                if prepared is None:
                    continue  # a CPU step
                if prepared not in models:
                    models.append(prepared)
                buffer_role = BufferRole(
                    model_index=models.index(prepared),
                    io_index=io_index,
                    frequency=self.frequencies[role],
                )
                (outputs if step_output else inputs).append(buffer_role)
        return devices, models, inputs, outputs


def step_roles_of(
    compilation: Compilation, is_output: bool, index: int
) -> list[tuple[int, bool, int]]:
    """``forEachStepRoleOfInput``/``Output``: (step, is an output of it, its io index) of
    every step reading compilation input ``index`` or reading or writing output ``index``."""
    steps = compilation.steps
    if len(steps) == 1:
        return [(0, is_output, index)]
    main = compilation.model.main
    operand = (main.output_indexes if is_output else main.input_indexes)[index]
    roles: list[tuple[int, bool, int]] = []
    for step_index, step in enumerate(steps):
        # The step's operands in ``submodel``'s order: first use in its operations.
        used: list[int] = []
        for op_index in step.operations:
            operation = main.operations[op_index]
            for used_index in (*operation.inputs, *operation.outputs):
                if used_index not in used:
                    used.append(used_index)
        step_main = step.model.main
        for k, local in enumerate(step_main.input_indexes):
            if used[local] == operand:
                roles.append((step_index, False, k))
        for k, local in enumerate(step_main.output_indexes):
            if used[local] == operand:
                roles.append((step_index, True, k))
    return roles


@attrs.define(eq=False)
class Memory:
    """ANeuralNetworksMemory: shared memory, a BLOB AHardwareBuffer, or a driver's memory."""

    runtime: Runtime
    kind: MemoryKind
    size: int
    """Bytes (a desc's: its operand's size)."""
    buffer: CanonicalBuffer | None = None
    """The driver's buffer of device memory."""
    roles: tuple[CompilationRole, ...] | None = None
    """A desc's roles (None: any use, ``createFromFd``)."""
    operand: Operand | None = None
    """A desc's operand (type, scale, zero point)."""
    initial_dimensions: tuple[int, ...] = ()
    dimensions: tuple[int, ...] = ()
    """The dimensions last written."""
    initialized: bool = True
    """A desc's memory starts uninitialized; any other is always initialized."""
    hardware_buffer: AHardwareBufferDesc | None = None
    """The AHardwareBuffer a ``createFromAHardwareBuffer`` memory wraps."""
    holds: list[Callable[[], Awaitable[None]]] = attrs.field(factory=list)
    """What freeing the memory releases: the burst caches that hold it (``hold``)."""

    @classmethod
    def create_from_fd(cls, runtime: Runtime, size: int) -> tuple[ResultCode, Memory | None]:
        """ANeuralNetworksMemory_createFromFd of ``size`` bytes of ashmem."""
        with runtime.ndk_call(Phase.PREPARATION, "ANeuralNetworksMemory_createFromFd"):
            if size <= 0:
                return ResultCode.BAD_DATA, None
            return ResultCode.NO_ERROR, cls(runtime, MemoryKind.ASHMEM, size)

    @classmethod
    def create_from_ahardware_buffer(
        cls, runtime: Runtime, desc: AHardwareBufferDesc
    ) -> tuple[ResultCode, Memory | None]:
        """ANeuralNetworksMemory_createFromAHardwareBuffer (``MemoryAHWB::create``): a BLOB
        buffer is a ``hardware_buffer_blob`` pool of ``width`` bytes, used like ashmem (offset
        and length within it); any other format a ``hardware_buffer`` pool of size 0, used
        only whole, as an execution's input or output (``AHardwareBufferNonBlobValidator``)."""
        with runtime.ndk_call(Phase.PREPARATION, "ANeuralNetworksMemory_createFromAHardwareBuffer"):
            if desc.format is AHardwareBufferFormat.BLOB:
                memory = cls(runtime, MemoryKind.BLOB_AHWB, desc.width, hardware_buffer=desc)
            else:
                memory = cls(runtime, MemoryKind.HARDWARE_BUFFER, 0, hardware_buffer=desc)
            return ResultCode.NO_ERROR, memory

    @classmethod
    async def create_from_desc(cls, desc: MemoryDesc) -> tuple[ResultCode, Memory | None]:
        """ANeuralNetworksMemory_createFromDesc (``MemoryBuilder::allocate``).

        BAD_STATE for an unfinished desc.  Device memory when the roles run on exactly one
        driver and it allocates; else, unless a role's compilation has explicit devices or
        the size is unknown, a BLOB AHardwareBuffer (every device 1.3+) or ashmem; else the
        allocation's failure (OP_FAILED).
        """
        runtime = desc.runtime
        with runtime.ndk_call(Phase.COMPILATION, "ANeuralNetworksMemory_createFromDesc"):
            if not desc.finished:
                return ResultCode.BAD_STATE, None
            operand = desc.operand
            assert operand is not None
            size = desc.size
            devices, models, inputs, outputs = desc.step_roles()
            code = ResultCode.OP_FAILED
            memory: Memory | None = None
            if len(devices) == 1:
                [device] = devices
                if not device.is_cpu and models:
                    status, buffer = await runtime.versioned(device).allocate(
                        BufferDesc(dimensions=desc.dimensions), models, inputs, outputs
                    )
                    if isinstance(status, DeadObject):
                        runtime.forget(device)
                        code = ResultCode.DEAD_OBJECT
                    elif buffer is not None:
                        code = ResultCode.NO_ERROR
                        memory = cls(runtime, MemoryKind.DEVICE, size, buffer=buffer)
                    else:
                        code = status_to_code(status)
                elif device.is_cpu and size:
                    code = ResultCode.NO_ERROR  # CpuDevice::allocate: ashmem
                    memory = cls(runtime, MemoryKind.ASHMEM, size)
            fallback = size != 0 and all(c.fallback_allowed for c, _, _ in desc.roles)
            if memory is None and fallback:
                blob = all(d.feature_level >= 30 for d in devices)
                code = ResultCode.NO_ERROR
                kind = MemoryKind.BLOB_AHWB if blob else MemoryKind.ASHMEM
                memory = cls(runtime, kind, size)
            if memory is None:
                return code, None
            memory.roles = tuple(desc.roles)
            memory.operand = operand
            memory.initial_dimensions = memory.dimensions = desc.dimensions
            memory.initialized = False
            return ResultCode.NO_ERROR, memory

    def hold(self, release: Callable[[], Awaitable[None]]) -> None:
        """``RuntimeMemory::hold``: keep a burst's cache entry until the memory is freed."""
        self.holds.append(release)

    async def free(self) -> None:
        """ANeuralNetworksMemory_free: a device memory's buffer is released, and each burst
        that cached the memory releases it (``IBurst::releaseMemoryResource``)."""
        with self.runtime.ndk_call(Phase.TERMINATION, "ANeuralNetworksMemory_free"):
            if self.buffer is not None:
                self.buffer.release()
                self.buffer = None
            holds, self.holds = self.holds, []
            for release in holds:
                await release()

    @property
    def pool_name(self) -> str | None:
        """The ``hidl_memory`` name of an AHardwareBuffer's request pool (None: not one)."""
        if self.kind is MemoryKind.HARDWARE_BUFFER:
            return HARDWARE_BUFFER
        return HARDWARE_BUFFER_BLOB if self.kind is MemoryKind.BLOB_AHWB else None

    @property
    def token(self) -> int | None:
        """The device memory's token (None for shared memory)."""
        return self.buffer.token if self.buffer is not None else None

    def validate(
        self, compilation: Compilation, is_output: bool, index: int, offset: int, length: int
    ) -> bool:
        """``MemoryValidatorBase::validate`` of a use as an execution's argument."""
        if self.roles is not None:  # DeviceMemoryValidator
            return (compilation, is_output, index) in self.roles and offset == length == 0
        if self.kind is MemoryKind.HARDWARE_BUFFER:  # AHardwareBufferNonBlobValidator
            return offset == length == 0
        return offset + length <= self.size and (offset != 0 or length != 0)

    async def copy(self, dst: Memory) -> ResultCode:
        """ANeuralNetworksMemory_copy(self, dst): ``Memory::copy``; ``dst`` is initialized
        exactly when it succeeds."""
        runtime = self.runtime
        with runtime.ndk_call(Phase.EXECUTION, "ANeuralNetworksMemory_copy"):
            code = await self._copy(dst)
            dst.initialized = code is ResultCode.NO_ERROR or dst.roles is None
            return code

    async def _copy(self, dst: Memory) -> ResultCode:
        if dst is self:
            return ResultCode.NO_ERROR
        if not self.initialized:
            return ResultCode.BAD_DATA
        size = data_size(self.operand.type, self.dimensions) if self.operand else self.size
        if not dst._takes(self, size):
            return ResultCode.BAD_DATA
        src_buffer, dst_buffer = self.buffer, dst.buffer
        status: ErrorStatus | DeadObject = ErrorStatus.NONE
        if src_buffer is not None:
            status = await src_buffer.copy_to(size)
        if dst_buffer is not None and status is ErrorStatus.NONE:
            status = await dst_buffer.copy_from(size, self.dimensions)
        if src_buffer is None and dst_buffer is None:
            if self.size != dst.size:
                return ResultCode.BAD_DATA
            self.runtime.kernel.work(size * 1000 // 4096)  # the runtime's memcpy, 4 GB/s
        if isinstance(status, DeadObject):
            return ResultCode.OP_FAILED
        if status is ErrorStatus.NONE and dst.roles is not None:
            dst.dimensions = combine_dimensions(dst.initial_dimensions, self.dimensions) or ()
        return status_to_code(status)

    def _takes(self, src: Memory, size: int) -> bool:
        """``updateMetadata``: whether this memory can receive ``src``'s content."""
        operand = self.operand
        if operand is None:
            return size == 0 or size == self.size
        if src.operand is not None and (
            src.operand.type != operand.type
            or src.operand.scale != operand.scale
            or src.operand.zero_point != operand.zero_point
        ):
            return False
        if src.dimensions and not operand.type.is_tensor:
            return False
        combined = combine_dimensions(src.dimensions, self.initial_dimensions)
        if combined is None:
            return False
        return size == 0 or size == data_size(OperandType(operand.type), combined)


MemoryArgument = tuple[Memory, int, int]
"""(memory, offset, length) an execution's input or output was set from."""


def set_from_memory(
    compilation: Compilation,
    started: bool,
    memories: dict[tuple[bool, int], MemoryArgument],
    is_output: bool,
    index: int,
    memory: Memory,
    offset: int,
    length: int,
) -> ResultCode:
    """``ExecutionBuilder::setInputFromMemory`` / ``setOutputFromMemory`` of an execution of
    ``compilation`` (its ``started`` state, the ``memories`` it records them in): BAD_STATE once
    started; BAD_DATA for an index out of range, a use the memory's validator refuses (a
    desc's memory only in its roles, offset and length 0; shared memory within its size,
    not both 0), or a length other than the operand needs."""
    name = "setOutputFromMemory" if is_output else "setInputFromMemory"
    runtime = compilation.runtime
    with runtime.ndk_call(Phase.INPUTS_AND_OUTPUTS, f"ANeuralNetworksExecution_{name}"):
        if started:
            return ResultCode.BAD_STATE
        main = compilation.model.main
        indexes = main.output_indexes if is_output else main.input_indexes
        if not 0 <= index < len(indexes):
            return ResultCode.BAD_DATA
        if not memory.validate(compilation, is_output, index, offset, length):
            return ResultCode.BAD_DATA
        operand = main.operands[indexes[index]]
        needed = data_size(OperandType(operand.type), operand.dimensions)
        if (offset or length) and needed and length != needed:
            return ResultCode.BAD_DATA
        memories[(is_output, index)] = (memory, offset, length)
        return ResultCode.NO_ERROR


def inputs_ready(memories: dict[tuple[bool, int], MemoryArgument]) -> bool:
    """``validateInputDimensions``: every input memory is initialized (else the computation
    is OP_FAILED before it starts)."""
    return all(
        memory.initialized for (is_output, _), (memory, _, _) in memories.items() if not is_output
    )


def finish_outputs(memories: dict[tuple[bool, int], MemoryArgument], success: bool) -> None:
    """``finishWithoutSyncFence``: the output memories are initialized iff the computation
    succeeded."""
    for (is_output, _), (memory, _, _) in memories.items():
        if is_output and memory.roles is not None:
            memory.initialized = success


def memory_request(
    request: Request,
    memories: dict[tuple[bool, int], MemoryArgument],
    compilation: Compilation,
    step_index: int,
    shared: list[Memory | None] | None = None,
) -> Request:
    """The request of step ``step_index`` with device memories and AHardwareBuffers: each
    of the step's inputs and outputs that is a compilation argument set from a device
    memory names a pool of its token (offset and length 0), from an AHardwareBuffer a pool
    of that buffer (its offset and length; a non-BLOB buffer's are 0).  ``shared``, when
    given, gets per request pool the shared memory it is (None: another kind of pool)."""
    pool_sizes = list(request.pool_sizes)
    tokens: list[int | None] = [None] * len(pool_sizes)
    names = [""] * len(pool_sizes)
    arguments = {False: list(request.inputs), True: list(request.outputs)}
    for (is_output, index), (memory, offset, length) in sorted(
        memories.items(), key=lambda kv: kv[0]
    ):
        token, name = memory.token, memory.pool_name
        if token is None and name is None:
            continue
        for step, step_output, io_index in step_roles_of(compilation, is_output, index):
            if step != step_index or io_index >= len(arguments[step_output]):
                continue
            location = DataLocation(pool_index=len(pool_sizes))
            if token is None:
                # A whole memory (offset and length 0) passes its size (setInputFromMemory).
                whole = length or memory.size
                location = DataLocation(pool_index=len(pool_sizes), offset=offset, length=whole)
            arguments[step_output][io_index] = RequestArgument(location=location)
            pool_sizes.append(memory.size if token is None else 0)
            tokens.append(token)
            names.append(name or "")
            if shared is not None:
                shared.extend([None] * (len(pool_sizes) - 1 - len(shared)))
                shared.append(memory if token is None else None)
    if len(pool_sizes) == len(request.pool_sizes):
        return request
    return Request(
        inputs=arguments[False],
        outputs=arguments[True],
        pool_sizes=pool_sizes,
        pool_tokens=tokens if any(t is not None for t in tokens) else (),
        pool_names=names if any(names) else (),
    )
