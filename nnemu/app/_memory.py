"""An app's device memories (``memory: device``): one per model input and output.

After its compilation the app describes each input and output as a memory role of it
(``ANeuralNetworksMemoryDesc``), creates the memory (``Memory_createFromDesc``: the driver's
``IDevice::allocate``, or the runtime's ashmem/BLOB fallback) inside an ``[NN_LA_PC]``
section; its first execution copies each input's data in from an ashmem region
(``Memory_copy``, the driver's ``IBuffer::copyFrom``), once.  Every
execution then reads and writes them by token (``setInput/OutputFromMemory``), and the app
copies each output back into its ashmem region after a successful execution (the driver's
``IBuffer::copyTo``): that copy is part of the execution's time.
"""

from __future__ import annotations

from nnemu.hal import ResultCode
from nnemu.runtime import AHardwareBufferDesc, Compilation, Execution, Memory, MemoryDesc
from nnemu.sim import Kernel, SimEvent


class DeviceMemories:
    """The device memories of one app's compilation, and the ashmem regions beside them."""

    def __init__(
        self, inputs: list[tuple[Memory, Memory]], outputs: list[tuple[Memory, Memory]]
    ) -> None:
        self.inputs = [memory for memory, _ in inputs]
        self._sources = [ashmem for _, ashmem in inputs]
        self.outputs = outputs
        """(device memory, the app's ashmem region) per model output."""
        self._filled: SimEvent | None = None

    @classmethod
    async def create(cls, compilation: Compilation) -> DeviceMemories | None:
        """A memory per input and per output of ``compilation``, each with an ashmem region
        (``fill_inputs`` copies the inputs' in); None when a memory cannot be created."""
        runtime = compilation.runtime
        main = compilation.model.main
        inputs: list[tuple[Memory, Memory]] = []
        outputs: list[tuple[Memory, Memory]] = []
        for is_output, count in (
            (False, len(main.input_indexes)),
            (True, len(main.output_indexes)),
        ):
            for index in range(count):
                desc = MemoryDesc.create(runtime)
                if is_output:
                    code = desc.add_output_role(compilation, index, 1.0)
                else:
                    code = desc.add_input_role(compilation, index, 1.0)
                if code is ResultCode.NO_ERROR:
                    code = desc.finish()
                memory = None
                if code is ResultCode.NO_ERROR:
                    code, memory = await Memory.create_from_desc(desc)
                desc.free()
                if memory is None:
                    # No memory for a role (a compilation for explicit devices whose driver
                    # cannot allocate: no fallback, Memory.cpp): the app keeps to setInput.
                    await cls(inputs, outputs).free()
                    return None
                _, ashmem = Memory.create_from_fd(runtime, max(memory.size, 1))
                assert ashmem is not None
                (outputs if is_output else inputs).append((memory, ashmem))
        return cls(inputs, outputs)

    async def fill_inputs(self, kernel: Kernel) -> None:
        """Copy each input's data in from its ashmem region and free the region, once: the
        first caller copies, a concurrent one waits for it."""
        filled = self._filled
        if filled is not None:
            await filled.wait()
            return
        filled = self._filled = SimEvent(kernel)
        for memory, ashmem in zip(self.inputs, self._sources, strict=True):
            await ashmem.copy(memory)
            await ashmem.free()
        self._sources = []
        await kernel.sync()  # (an event is set in virtual time, not ahead of it)
        filled.set()

    def set_up(self, execution: Execution) -> None:
        """``setInputFromMemory`` / ``setOutputFromMemory`` for every input and output."""
        for index, memory in enumerate(self.inputs):
            execution.set_input_from_memory(index, memory)
        for index, (memory, _) in enumerate(self.outputs):
            execution.set_output_from_memory(index, memory)

    async def read_outputs(self) -> ResultCode:
        """Copy every output into its ashmem region: the first failure, else NO_ERROR."""
        result = ResultCode.NO_ERROR
        for memory, ashmem in self.outputs:
            code = await memory.copy(ashmem)
            if code is not ResultCode.NO_ERROR and result is ResultCode.NO_ERROR:
                result = code
        return result

    async def free(self) -> None:
        """Memory_free of every memory."""
        for memory in self.inputs:
            await memory.free()
        for memory, ashmem in self.outputs:
            await memory.free()
            await ashmem.free()


class HardwareBuffers:
    """``memory: ahwb``: one BLOB-mode AHardwareBuffer per model input and output.

    The app's data is made in the buffers (as a camera or a GPU stage would hand it on), so
    nothing is copied in or out: after compiling, the app wraps each buffer in an
    ``ANeuralNetworksMemory`` (``Memory_createFromAHardwareBuffer``, a ``hardware_buffer_blob``
    pool of the operand's size), and every execution sets it with
    ``setInput/OutputFromMemory`` (offset 0, the operand's length).  The driver moves the
    buffers like shared memory (``io_us_per_kb``); a 1.0/1.1 driver cannot take them
    (``compliantWithV1_0``: GENERAL_FAILURE, then the CPU when the app may fall back).
    """

    def __init__(self, inputs: list[Memory], outputs: list[Memory]) -> None:
        self.inputs = inputs
        self.outputs = outputs

    @classmethod
    def create(cls, compilation: Compilation) -> HardwareBuffers | None:
        """A buffer per input and output of ``compilation``; None when an operand's size is
        unknown (a dynamic output: a BLOB buffer has a fixed width)."""
        runtime = compilation.runtime
        main = compilation.model.main
        sizes = [
            [main.operands[i].byte_size for i in indexes]
            for indexes in (main.input_indexes, main.output_indexes)
        ]
        if not all(size > 0 for group in sizes for size in group):
            return None
        inputs, outputs = (
            [
                memory
                for _, memory in (
                    Memory.create_from_ahardware_buffer(runtime, AHardwareBufferDesc(width=size))
                    for size in group
                )
                if memory is not None
            ]
            for group in sizes
        )
        return cls(inputs, outputs)

    async def fill_inputs(self, kernel: Kernel) -> None:
        """Nothing to copy: the inputs are made in the buffers."""

    def set_up(self, execution: Execution) -> None:
        """``setInputFromMemory`` / ``setOutputFromMemory`` of each whole buffer."""
        for index, memory in enumerate(self.inputs):
            execution.set_input_from_memory(index, memory, 0, memory.size)
        for index, memory in enumerate(self.outputs):
            execution.set_output_from_memory(index, memory, 0, memory.size)

    async def read_outputs(self) -> ResultCode:
        """Nothing to copy: the app reads its results in the buffers."""
        return ResultCode.NO_ERROR

    async def free(self) -> None:
        """Memory_free of every memory (the AHardwareBuffers are the app's); a burst that
        cached one releases it."""
        for memory in (*self.inputs, *self.outputs):
            await memory.free()
