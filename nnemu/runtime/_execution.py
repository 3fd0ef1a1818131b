"""ANeuralNetworksExecution and ANeuralNetworksEvent: running a compilation's plan.

An execution runs each step of its compilation on the step's device -- a driver
over the binder (through its ``VersionedIPreparedModel``), a burst, or the
runtime's own CPU executor -- in the synchronous, asynchronous, fenced or burst
mode, and falls back to the CPU as the R runtime does (docs/hal-semantics.md §3
and §5).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Final

from nnemu.hal import (
    LOOP_TIMEOUT_DEFAULT_NS,
    LOOP_TIMEOUT_MAXIMUM_NS,
    UINT64_MAX,
    ErrorStatus,
    FenceState,
    IBurst,
    ISyncFence,
    MeasureTiming,
    Model,
    OutputShape,
    Request,
    ResultCode,
    Timing,
    code_to_status,
    status_to_code,
)
from nnemu.ipc import FMQ_TRANSFER_NS, DeadObject
from nnemu.runtime._canonical import CanonicalBurst, CanonicalExecution, CanonicalPreparedModel
from nnemu.runtime._compilation import Burst, Compilation
from nnemu.runtime._devices import CPU_DEVICE_NAME, RuntimeDevice
from nnemu.runtime._fenced import compute_fenced
from nnemu.runtime._memory import (
    Memory,
    MemoryArgument,
    MemoryKind,
    finish_outputs,
    inputs_ready,
    memory_request,
    set_from_memory,
)
from nnemu.runtime._plan import Step
from nnemu.runtime._runtime import API_CALL_NS, PER_OP_NS, Runtime
from nnemu.sim import SimEvent, us
from nnemu.tracer import Layer, Phase, mark

_CREATE_MARK = mark(Layer.RUNTIME, Phase.EXECUTION, "ANeuralNetworksExecution_create")
_SET_INPUT_MARK = mark(Layer.RUNTIME, Phase.INPUTS_AND_OUTPUTS, "ANeuralNetworksExecution_setInput")
_SET_OUTPUT_MARK = mark(
    Layer.RUNTIME, Phase.INPUTS_AND_OUTPUTS, "ANeuralNetworksExecution_setOutput"
)
_COMPUTE_MARK = mark(Layer.RUNTIME, Phase.EXECUTION, "ANeuralNetworksExecution_compute")
_FREE_MARK = mark(Layer.RUNTIME, Phase.EXECUTION, "ANeuralNetworksExecution_free")
"""The NDK calls of an execution that a sync execution makes every time, built once."""
# A driver step's section names: the runtime's (PIO, then PR) and the IPC phase's (PE).
_EXECUTE = "DriverPreparedModel::execute"
_EXECUTE_IPC = "DriverPreparedModel::execute::execute"
# The marks of one driver step, built once.
# Enum members the per-execution path compares with or returns, as module constants: on
# Python 3.11 ``Enum.MEMBER`` goes through ``EnumType.__getattr__``'s lookup hook (~60 ns;
# a global ~10), bench/README.md.
_NO_ERROR: Final = ResultCode.NO_ERROR
_MEASURE_YES: Final = MeasureTiming.YES
_MEASURE_NO: Final = MeasureTiming.NO
_NONE: Final = ErrorStatus.NONE
_OP_FAILED: Final = ResultCode.OP_FAILED

_IO_MARK: Final = mark(Layer.RUNTIME, Phase.INPUTS_AND_OUTPUTS, _EXECUTE)
_IPC_MARK: Final = mark(Layer.IPC, Phase.EXECUTION, _EXECUTE_IPC)
_RESULTS_MARK: Final = mark(Layer.RUNTIME, Phase.RESULTS, _EXECUTE)
_BURST_MARK = mark(Layer.IPC, Phase.EXECUTION, "ExecutionBurstController::compute")


class Event:
    """ANeuralNetworksEvent: completion of an asynchronous or fenced execution.

    An event over a sync fence (a fenced execution whose driver returned one, or
    ``create_from_sync_fence``) is AOSP's ``SyncFenceEvent``: waiting waits for the fence,
    and its status is the fenced callback's when the fence signalled in error
    (GENERAL_FAILURE without a callback).  Any other is a ``CallbackEvent``.
    """

    def __init__(
        self,
        runtime: Runtime,
        sync_fence: ISyncFence | None = None,
        info: Callable[[], tuple[ErrorStatus, Timing, Timing]] | None = None,
    ) -> None:
        self.runtime = runtime
        self._done = SimEvent(runtime.kernel)
        self.sync_fence = sync_fence
        """The sync fence the event stands for (``getSyncFenceFd``), or None."""
        self._info = info

    @classmethod
    def create_from_sync_fence(cls, runtime: Runtime, fence: ISyncFence) -> Event:
        """ANeuralNetworksEvent_createFromSyncFenceFd: an event over another producer's fence
        (an invalid fd is BAD_DATA in AOSP; an emulated fence is always valid)."""
        return cls(runtime, fence)

    def _signal(self, code: ResultCode) -> None:
        self._done.set(code)

    async def wait_done(self) -> None:
        """``IEvent::wait``: block until it completed, without the NDK call or a status."""
        if self.sync_fence is not None:
            await self.sync_fence.wait()
        else:
            await self._done.wait()

    def status(self) -> ErrorStatus:
        """``SyncFenceEvent::getStatus`` of a completed fence event."""
        fence = self.sync_fence
        if fence is None or fence.poll() is FenceState.SIGNALED:
            return ErrorStatus.NONE
        if self._info is None:
            return ErrorStatus.GENERAL_FAILURE
        return self._info()[0]

    async def wait(self) -> ResultCode:
        """ANeuralNetworksEvent_wait: block (no timeout) and return the execution's code."""
        runtime = self.runtime
        with runtime.ndk_call(Phase.EXECUTION, "ANeuralNetworksEvent_wait"):
            await runtime.kernel.sync()
            if self.sync_fence is not None:
                await self.sync_fence.wait()
                return status_to_code(self.status())
            code: ResultCode = await self._done.wait()
            return code


class Execution:
    """ANeuralNetworksExecution."""

    def __init__(self, compilation: Compilation) -> None:
        self.compilation = compilation
        self.runtime = compilation.runtime
        self.timeout_ns: int | None = None
        self.loop_timeout_ns = LOOP_TIMEOUT_DEFAULT_NS
        self.measure = False
        self.started = False
        self.finished_code: ResultCode | None = None
        """The execution's result code once it finished (None before)."""
        self.timing: Timing | None = None
        """The last driver step's timing, when it measured one."""
        self.timing_fenced: Timing | None = None
        """The last driver step's timing from its input fences signalling (``timing`` but
        for a 1.3 driver's fenced execution: its callback's ``timingFenced``)."""
        self.deadline_ns: int | None = None
        """Absolute virtual deadline from ``set_timeout``, fixed when the execution starts."""
        self.fell_back = False
        """A step failed on its driver and the execution fell back to the CPU."""
        self.reusable = False
        """``setReusable``: the execution may compute again once a computation completed."""
        self.computing = False
        """A computation is in flight (``started``: one began, the settings are frozen)."""
        self.output_lengths: dict[int, int] = {}
        """Buffer length in bytes ``setOutput`` gave, per model output (absent: large enough)."""
        self.output_dims: dict[int, tuple[int, ...]] = {}
        """Dimensions an execution produces for an output the model leaves unknown, per model
        output (absent: its unknown dimensions are 1)."""
        self._step_executions: dict[int, CanonicalExecution] = {}
        """A reusable execution's driver steps' reusable executions, by step index."""
        self.memories: dict[tuple[bool, int], MemoryArgument] = {}
        """Inputs (False, i) and outputs (True, i) set from an ANeuralNetworksMemory."""
        self._shapes: tuple[OutputShape, ...] | None = None
        self._unspecified: set[int] = set()
        """Outputs whose last ``setOutput`` failed with BAD_DATA: they are unspecified, and
        a computation is BAD_DATA (``ExecutionBuilder``'s ``validateRequest``)."""
        self.outputs_in_memory = False
        """The outputs are ANeuralNetworksMemory (``setOutputFromMemory``), not pointers: a
        fenced execution then returns without waiting for its driver's fence (``_fenced``)."""

    @classmethod
    def create(cls, compilation: Compilation) -> tuple[ResultCode, Execution | None]:
        """ANeuralNetworksExecution_create: the compilation must be finished."""
        with compilation.runtime.tracer.section(_CREATE_MARK, work_ns=API_CALL_NS):
            if not compilation.finished:
                return ResultCode.BAD_STATE, None
            return _NO_ERROR, cls(compilation)

    def set_io(self) -> ResultCode:
        """ANeuralNetworksExecution_setInput/setOutput for every model input and output."""
        section = self.runtime.tracer.section
        main = self.compilation.model.main
        for _ in main.input_indexes:
            with section(_SET_INPUT_MARK, work_ns=API_CALL_NS):
                pass  # (the checks are set_output's; nothing traced or awaited)
        for _ in main.output_indexes:
            with section(_SET_OUTPUT_MARK, work_ns=API_CALL_NS):
                pass
        return ResultCode.BAD_STATE if self.started else _NO_ERROR

    def set_output(self, index: int, length: int, dims: Sequence[int] | None = None) -> ResultCode:
        """ANeuralNetworksExecution_setOutput's checks for output ``index`` given ``length``
        bytes (its trace span is ``set_io``'s); ``dims``: the dimensions the execution will
        produce where the model leaves them unknown (0 or no rank).

        As ``ExecutionBuilder::setOutput``: BAD_STATE once started, BAD_DATA for an index out
        of range, and (``ModelArgumentInfo::createFromPointer``) BAD_DATA for a buffer smaller
        than a fully specified output needs; an output not fully specified is only sized when
        the execution ends (OUTPUT_INSUFFICIENT_SIZE, ``_sized``).
        """
        if self.started:
            return ResultCode.BAD_STATE
        main = self.compilation.model.main
        if not 0 <= index < len(main.output_indexes):
            return ResultCode.BAD_DATA
        operand = main.operands[main.output_indexes[index]]
        if _fully_specified(operand.dimensions) or not operand.type.is_tensor:
            if length < operand.byte_size:
                self._unspecified.add(index)
                return ResultCode.BAD_DATA
        elif dims is not None:
            known = operand.dimensions
            produced = tuple(dims)
            if (
                (known and len(produced) != len(known))
                or not _fully_specified(produced)
                or any(k and k != d for k, d in zip(known, produced, strict=False))
            ):
                self._unspecified.add(index)
                return ResultCode.BAD_DATA
            self.output_dims[index] = produced
        self._unspecified.discard(index)
        self.output_lengths[index] = length
        return _NO_ERROR

    def set_input_from_memory(
        self, index: int, memory: Memory, offset: int = 0, length: int = 0
    ) -> ResultCode:
        """ANeuralNetworksExecution_setInputFromMemory (``_memory.set_from_memory``)."""
        return set_from_memory(
            self.compilation, self.started, self.memories, False, index, memory, offset, length
        )

    def set_output_from_memory(
        self, index: int, memory: Memory, offset: int = 0, length: int = 0
    ) -> ResultCode:
        """ANeuralNetworksExecution_setOutputFromMemory (``_memory.set_from_memory``)."""
        return set_from_memory(
            self.compilation, self.started, self.memories, True, index, memory, offset, length
        )

    def set_reusable(self, reusable: bool) -> ResultCode:
        """ANeuralNetworksExecution_setReusable (feature level 5): BAD_STATE once a
        computation started (``ExecutionBuilder::setReusable``)."""
        with self.runtime.ndk_call(Phase.EXECUTION, "ANeuralNetworksExecution_setReusable"):
            if self.started:
                return ResultCode.BAD_STATE
            self.reusable = reusable
            return _NO_ERROR

    def get_output_operand_rank(self, index: int) -> tuple[ResultCode, int]:
        """ANeuralNetworksExecution_getOutputOperandRank: (code, rank).

        As ``ExecutionBuilder::getOutputOperandRank``: BAD_STATE before the computation
        completed or when it ended with an error other than OUTPUT_INSUFFICIENT_SIZE, BAD_DATA
        for an index out of range; then the rank with OUTPUT_INSUFFICIENT_SIZE when the
        output's buffer was too small, NO_ERROR otherwise.
        """
        with self.runtime.ndk_call(
            Phase.EXECUTION, "ANeuralNetworksExecution_getOutputOperandRank"
        ):
            code, shape = self._output_shape(index)
            if shape is None:
                return code, 0
            return code, len(shape.dimensions)

    def get_output_operand_dimensions(self, index: int) -> tuple[ResultCode, tuple[int, ...]]:
        """ANeuralNetworksExecution_getOutputOperandDimensions: (code, dimensions).

        ``get_output_operand_rank``'s codes, and BAD_DATA for a scalar output
        (``ExecutionBuilder::getOutputOperandDimensions``).
        """
        with self.runtime.ndk_call(
            Phase.EXECUTION, "ANeuralNetworksExecution_getOutputOperandDimensions"
        ):
            code, shape = self._output_shape(index)
            if shape is None:
                return code, ()
            if not shape.dimensions:
                return ResultCode.BAD_DATA, ()
            return code, shape.dimensions

    def _output_shape(self, index: int) -> tuple[ResultCode, OutputShape | None]:
        if self.computing or self.finished_code not in _SHAPED:
            return ResultCode.BAD_STATE, None
        if not 0 <= index < len(self.output_shapes):
            return ResultCode.BAD_DATA, None
        shape = self.output_shapes[index]
        return (_NO_ERROR if shape.is_sufficient else ResultCode.OUTPUT_INSUFFICIENT_SIZE), shape

    @property
    def output_shapes(self) -> tuple[OutputShape, ...]:
        """Per model output, after a computation ended with NO_ERROR or
        OUTPUT_INSUFFICIENT_SIZE: its dimensions and whether its buffer was large enough
        (``()`` before)."""
        if self.finished_code not in _SHAPED:
            return ()
        if self._shapes is None:
            self._shapes = self._measure()
        return self._shapes

    def _sized(self) -> ResultCode:
        """The output shapes of a computation whose steps all succeeded: NO_ERROR, or
        OUTPUT_INSUFFICIENT_SIZE when an output's buffer is smaller than its produced
        dimensions need (what the driver, or the CPU executor, that writes it reports)."""
        if not self.output_lengths:
            return _NO_ERROR  # every buffer large enough: the shapes are made when asked for
        self._shapes = shapes = self._measure()
        if all(shape.is_sufficient for shape in shapes):
            return _NO_ERROR
        return ResultCode.OUTPUT_INSUFFICIENT_SIZE

    def _measure(self) -> tuple[OutputShape, ...]:
        main = self.compilation.model.main
        shapes = []
        for index, operand_index in enumerate(main.output_indexes):
            operand = main.operands[operand_index]
            dims = self.output_dims.get(index)
            if dims is None:
                dims = tuple(d or 1 for d in operand.dimensions)
            needed = math.prod(dims) * operand.type.element_bytes
            shapes.append(OutputShape(dims, needed <= self.output_lengths.get(index, needed)))
        return tuple(shapes)

    def set_timeout(self, duration_ns: int) -> ResultCode:
        """ANeuralNetworksExecution_setTimeout: single-device compilations (BAD_DATA, checked
        first, as ExecutionBuilder::setTimeoutDuration does); BAD_STATE once started."""
        with self.runtime.ndk_call(Phase.EXECUTION, "ANeuralNetworksExecution_setTimeout"):
            if not self.compilation.single_device:
                return ResultCode.BAD_DATA
            if self.started:
                return ResultCode.BAD_STATE
            self.timeout_ns = duration_ns or None
            return ResultCode.NO_ERROR

    def set_loop_timeout(self, duration_ns: int) -> ResultCode:
        """ANeuralNetworksExecution_setLoopTimeout: clamped to 15 s; BAD_STATE once started."""
        with self.runtime.ndk_call(Phase.EXECUTION, "ANeuralNetworksExecution_setLoopTimeout"):
            if self.started:
                return ResultCode.BAD_STATE
            self.loop_timeout_ns = min(duration_ns, LOOP_TIMEOUT_MAXIMUM_NS)
            return ResultCode.NO_ERROR

    def set_measure_timing(self, measure: bool) -> ResultCode:
        """ANeuralNetworksExecution_setMeasureTiming: single-device only (BAD_DATA, checked
        first, as ExecutionBuilder::setMeasureTiming does); BAD_STATE once started."""
        with self.runtime.ndk_call(Phase.EXECUTION, "ANeuralNetworksExecution_setMeasureTiming"):
            if not self.compilation.single_device:
                return ResultCode.BAD_DATA
            if self.started:
                return ResultCode.BAD_STATE
            self.measure = measure
            return ResultCode.NO_ERROR

    def get_duration(self, code: int) -> tuple[ResultCode, int]:
        """ANeuralNetworksExecution_getDuration in ns; BAD_STATE + UINT64_MAX when unavailable.

        ``code``: 0 ON_HARDWARE and 1 IN_DRIVER from the launch, 2 FENCED_ON_HARDWARE and
        3 FENCED_IN_DRIVER from the input fences signalling (the fenced callback's
        ``timingFenced``; the launch's timing for other modes); any other is BAD_DATA.
        """
        with self.runtime.ndk_call(Phase.EXECUTION, "ANeuralNetworksExecution_getDuration"):
            if code not in (0, 1, 2, 3):
                return ResultCode.BAD_DATA, UINT64_MAX
            if self.finished_code is not ResultCode.NO_ERROR or not self.measure:
                return ResultCode.BAD_STATE, UINT64_MAX
            timing = (self.timing_fenced if code >= 2 else self.timing) or Timing()
            value = timing.time_on_device_us if code in (0, 2) else timing.time_in_driver_us
            return ResultCode.NO_ERROR, UINT64_MAX if value == UINT64_MAX else value * 1000

    def _busy(self) -> bool:
        """No computation may start: one is in flight, or a non-reusable execution's ended
        (``ExecutionBuilder::checkAndSetComputationState``)."""
        return self.computing or (self.started and not self.reusable)

    def _start(self, *, fenced: bool = False) -> ResultCode:
        if self._busy():
            return ResultCode.BAD_STATE
        if self._unspecified:
            return ResultCode.BAD_DATA
        if self.memories and not fenced and not inputs_ready(self.memories):
            # ExecutionBuilder::compute's validateInputDimensions; computeFenced has no such
            # check (the driver refuses the uninitialized memory instead).
            return ResultCode.OP_FAILED
        self.started = self.computing = True
        self.finished_code = None
        self._shapes = None
        if self.timeout_ns is not None:
            self.deadline_ns = self.runtime.kernel.task_now_ns() + self.timeout_ns
            split = self.runtime.kernel.split
            if split is not None:
                split.deadline_ns = self.deadline_ns
        return _NO_ERROR

    def free(self) -> None:
        """ANeuralNetworksExecution_free."""
        with self.runtime.tracer.section(_FREE_MARK, work_ns=API_CALL_NS):
            pass

    # ------------------------------------------------------------ modes
    async def compute(self) -> ResultCode:
        """ANeuralNetworksExecution_compute: run the plan on the calling thread."""
        with self.runtime.tracer.section(_COMPUTE_MARK, work_ns=API_CALL_NS):  # (``ndk_call``)
            code = self._start()
            if code is not _NO_ERROR:
                return code
            code = await self._run_plan()
            self._finish(code)
            return code

    def _finish(self, code: ResultCode) -> None:
        if self.memories:
            finish_outputs(self.memories, code is _NO_ERROR)
        self.finished_code = code
        self.computing = False

    async def start_compute(self) -> tuple[ResultCode, Event | None]:
        """ANeuralNetworksExecution_startCompute: run the plan on a new thread; return an Event."""
        runtime = self.runtime
        with runtime.ndk_call(Phase.EXECUTION, "ANeuralNetworksExecution_startCompute"):
            code = self._start()
            if code is not ResultCode.NO_ERROR:
                return code, None
            event = Event(runtime)
            runtime.async_threads += 1
            thread = runtime.process.new_thread(f"nn-async-{runtime.async_threads}")
            await runtime.kernel.sync()

            async def run() -> None:
                code = await self._run_plan()
                self._finish(code)
                await runtime.kernel.sync()
                event._signal(code)
                runtime.process.end_thread(thread)
                runtime.tracer.end_thread(thread)

            runtime.kernel.spawn(runtime.nursery, run, thread=thread)
            return ResultCode.NO_ERROR, event

    async def start_compute_with_dependencies(
        self, dependencies: Sequence[Event], duration_ns: int = 0
    ) -> tuple[ResultCode, Event | None]:
        """ANeuralNetworksExecution_startComputeWithDependencies (fenced execution).

        As the R runtime (``NeuralNetworks.cpp``, ``ExecutionBuilder::computeFenced``): a
        dependency without a sync fence is waited for first and its result does not matter;
        the others' fences are handed to the plan (``_fenced.compute_fenced``).  Then
        BAD_STATE once started, BAD_DATA for a non-zero ``duration_ns`` without exactly one
        device or for a model output whose dimensions are not fully specified; then the
        plan runs.  A failure is returned here, with no event.  On success the event stands
        for the last step's sync fence when its driver returned one -- the execution
        completes when that fence signals, in error when the work failed -- and is already
        signalled otherwise.
        """
        runtime = self.runtime
        with runtime.ndk_call(
            Phase.EXECUTION, "ANeuralNetworksExecution_startComputeWithDependencies"
        ):
            wait_for = []
            for dependency in dependencies:
                if dependency.sync_fence is None:
                    await dependency.wait_done()
                else:
                    wait_for.append(dependency.sync_fence)
            if self._busy():
                return ResultCode.BAD_STATE, None
            if self._unspecified or (duration_ns and not self.compilation.single_device):
                return ResultCode.BAD_DATA, None
            main = self.compilation.model.main
            for index in main.output_indexes:
                operand = main.operands[index]
                if operand.type.is_tensor and (not operand.dimensions or 0 in operand.dimensions):
                    return ResultCode.BAD_DATA, None
            self._start(fenced=True)
            code, launch = await compute_fenced(self, tuple(wait_for), duration_ns or None)
            if code is not ResultCode.NO_ERROR:
                self._finish(code)
                return code, None
            await runtime.kernel.sync()
            if launch is None:
                self._finish(code)
                event = Event(runtime)
                event._signal(code)
                return ResultCode.NO_ERROR, event
            info = launch.info

            def completed(state: FenceState) -> None:
                status, timing, timing_fenced = info()
                if state is FenceState.SIGNALED:
                    self.timing, self.timing_fenced = timing, timing_fenced
                    self._finish(ResultCode.NO_ERROR)
                else:
                    self._finish(status_to_code(status) if status is not _NONE else _OP_FAILED)

            launch.sync_fence.on_signal(completed)
            return ResultCode.NO_ERROR, Event(runtime, launch.sync_fence, info)

    async def burst_compute(self, burst: Burst) -> ResultCode:
        """ANeuralNetworksExecution_burstCompute: run through a burst (one execution at a time)."""
        with self.runtime.ndk_call(Phase.EXECUTION, "ANeuralNetworksExecution_burstCompute"):
            if burst.compilation is not self.compilation:
                return ResultCode.BAD_DATA
            if burst.busy:
                return ResultCode.BAD_STATE
            code = self._start()
            if code is not ResultCode.NO_ERROR:
                return code
            burst.busy = True
            try:
                code = await self._run_plan(burst=burst)
            finally:
                burst.busy = False
            self._finish(code)
            return code

    # ------------------------------------------------------------ the plan
    async def _run_plan(self, *, burst: Burst | None = None) -> ResultCode:
        """Run every step; CPU fallback as the R runtime does it."""
        compilation = self.compilation
        steps = compilation.steps
        compound = len(steps) > 1
        for index, step in enumerate(steps):
            context = burst.contexts.get(index) if burst is not None else None
            # A HIDL driver's FMQ burst or an AIDL IBurst.  (isinstance against a Protocol
            # walks its attributes, ~50 µs: a third of an execution's CPU in bench_stack
            # when it was asked of every execution; it is asked of a burst's only.)
            fmq: IBurst | None = None
            canonical: CanonicalBurst | None = None
            if context is not None:
                if isinstance(context, IBurst):
                    fmq = context
                else:
                    canonical = context
            if step.device.is_cpu:
                code = await self._run_on_cpu(step.model)
            elif fmq is not None and not self._names_device_memory(index):
                code = await self._run_on_burst(compilation.prepared[index], fmq, index)
            elif fmq is not None:
                # A HIDL burst carries HAL 1.2's request, whose pools are shared memory: a
                # request naming a driver's memory by token is not compliantWithV1_2, so the
                # step skips the burst for the prepared model's own execution (R's
                # Manager.cpp DriverPreparedModel::execute, ~379-406: burstFallback; S+'s
                # 1.2/utils Burst::execute, ~317-322: !compliantVersion).
                code = await self._run_on_driver(
                    compilation.prepared[index], step.device, step=index
                )
            else:
                code = await self._run_on_driver(
                    compilation.prepared[index], step.device, burst=canonical, step=index
                )
            if code is _NO_ERROR:
                continue
            if code is ResultCode.OUTPUT_INSUFFICIENT_SIZE or not compilation.fallback_allowed:
                return _app_visible(code)
            if step.device.is_cpu and code.is_deadline_miss:
                # A WHILE on the CPU is the runtime's own control-flow interpreter
                # (ExecutionPlan::next), whose loop timeout is never retried; a driver
                # step's MISSED_DEADLINE_* falls back like any other failure.
                return code
            self.fell_back = True
            if step.device.is_cpu:
                if compound:
                    return await self._full_cpu_fallback()
                return _app_visible(code)
            code = await self._partial_cpu_fallback(step)
            if code is not ResultCode.NO_ERROR:
                if compound:
                    return await self._full_cpu_fallback()
                return _app_visible(code)
        return self._sized()

    def _names_device_memory(self, step: int) -> bool:
        """Whether driver step ``step``'s request names a device memory by token."""
        if not self.memories:
            return False
        request = self.runtime.request_for(self.compilation.prepared[step].model)
        return any(
            token is not None
            for token in memory_request(request, self.memories, self.compilation, step).pool_tokens
        )

    async def _partial_cpu_fallback(self, step: Step) -> ResultCode:
        with self.runtime.tracer.section(
            mark(Layer.RUNTIME, Phase.EXECUTION, "cpuFallbackPartial")
        ):
            return await self._run_on_cpu(step.model)

    async def _full_cpu_fallback(self) -> ResultCode:
        with self.runtime.tracer.section(mark(Layer.RUNTIME, Phase.EXECUTION, "cpuFallbackFull")):
            code = _app_visible(await self._run_on_cpu(self.compilation.model))
        return self._sized() if code is _NO_ERROR else code

    async def _run_on_cpu(self, model: Model) -> ResultCode:
        """Run ``model`` with the CPU executor on the calling thread (nnapi-reference); the
        run's stretch goes to ``runtime.cpu_history`` when the run keeps records."""
        history = self.runtime.cpu_history
        if history is None:
            return await self._compute_on_cpu(model)
        started = self.runtime.kernel.task_now_ns()
        code = "IN_FLIGHT"  # cancelled: the run ended during it
        try:
            result = await self._compute_on_cpu(model)
            code = result.name
        finally:
            history.append((started, self.runtime.kernel.task_now_ns(), code, self.deadline_ns))
        return result

    async def _compute_on_cpu(self, model: Model) -> ResultCode:
        runtime = self.runtime
        kernel, tracer = runtime.kernel, runtime.tracer
        if any(
            memory.kind is MemoryKind.HARDWARE_BUFFER for memory, _, _ in self.memories.values()
        ):
            # CpuPreparedModel::execute: RunTimePoolInfo maps no non-BLOB AHardwareBuffer.
            return ResultCode.UNMAPPABLE
        with tracer.section(mark(Layer.RUNTIME, Phase.EXECUTION, "StepExecutor::computeOnCpu")):
            plan = runtime.cpu_plan(model)
            runtime.cpu_stats.executions += 1
            started = kernel.task_now_ns()
            with tracer.section(mark(Layer.CPU, Phase.EXECUTION, "run")):
                try:
                    deadline = self.deadline_ns
                    for index, op_ns in enumerate(plan.op_ns):
                        if deadline is not None and kernel.task_now_ns() >= deadline:
                            return ResultCode.MISSED_DEADLINE_TRANSIENT
                        ptr, pco = plan.names_of(index)
                        iterations = plan.iterations_of(index)
                        if iterations > 1:
                            # The runtime's WHILE interpreter checks the loop timeout after
                            # each iteration (CpuExecutor): past it, MISSED_DEADLINE_TRANSIENT.
                            per_iteration = op_ns / iterations
                            needed = int(self.loop_timeout_ns // per_iteration) + 1
                            if needed < iterations:
                                with tracer.section(mark(Layer.CPU, Phase.COMPUTATION, pco)):
                                    kernel.work(us(needed * per_iteration))
                                await kernel.sync()
                                return ResultCode.MISSED_DEADLINE_TRANSIENT
                        transform = us(op_ns * 0.1)
                        with tracer.section(
                            mark(Layer.CPU, Phase.TRANSFORMATION, ptr)
                        ) as operation:
                            kernel.work(transform)
                            operation.switch(mark(Layer.CPU, Phase.COMPUTATION, pco))
                            kernel.work(op_ns - transform)
                        # The CPU executor is the calling thread: other threads run meanwhile.
                        await kernel.sync()
                finally:
                    ended = kernel.task_now_ns()
                    runtime.cpu_spans.append(started)  # (not cpu_stats.busy_ns: the report's union)
                    runtime.cpu_spans.append(ended)
                    runtime.cpu_stats.energy += (ended - started) * plan.power
                    split = kernel.split
                    if split is not None:
                        split.compute_ns += ended - started
                        split.energy += (ended - started) * plan.power
                        if split.detailed:
                            split.on_device(CPU_DEVICE_NAME, started, started, ended, 0)
            return ResultCode.NO_ERROR

    async def reused_step(
        self, prepared: CanonicalPreparedModel, request: Request, measure: MeasureTiming, step: int
    ) -> tuple[ErrorStatus | DeadObject, CanonicalExecution | None]:
        """Driver step ``step``'s reusable execution: created at the first computation
        (``StepExecutor``'s, with the execution's measure and loop timeout, frozen by then);
        a failed creation's status, and None."""
        reused = self._step_executions.get(step)
        if reused is None:
            status, reused = await prepared.create_reusable_execution(
                request, measure, self.loop_timeout_ns
            )
            if reused is None:
                return status, None
            self._step_executions[step] = reused
        return ErrorStatus.NONE, reused

    async def _compute_reused(
        self, prepared: CanonicalPreparedModel, request: Request, measure: MeasureTiming, step: int
    ) -> tuple[ErrorStatus | DeadObject, Timing | None]:
        """One computation of driver step ``step`` of a reusable execution, through the
        step's reusable execution; a failed creation's status is the computation's."""
        status, reused = await self.reused_step(prepared, request, measure, step)
        if reused is None:
            return status, None
        return await reused.compute(self.deadline_ns)

    async def _run_on_burst(
        self, prepared: CanonicalPreparedModel, context: IBurst, step: int
    ) -> ResultCode:
        """ExecutionBurstController::compute: one request packet over the burst's FMQs."""
        runtime = self.runtime
        kernel = runtime.kernel
        request = runtime.request_for(prepared.model)
        if self.memories:
            request = memory_request(request, self.memories, self.compilation, step)
        measure = MeasureTiming.YES if self.measure else MeasureTiming.NO
        with runtime.tracer.section(_BURST_MARK):
            # The request packet reaches a spinning server at once; a sleeping one is woken.
            wake_ns = runtime.binder.latency_ns()
            delivery_ns = context.delivery_ns(kernel.task_now_ns(), wake_ns)
            await kernel.sleep(delivery_ns)
            split = kernel.split
            if split is not None:
                split.ipc_ns += delivery_ns  # the request packet
            if not prepared.endpoint.alive:
                return ResultCode.DEAD_OBJECT
            status, _, timing = await context.serve(request, measure)  # on the burst's thread
            await kernel.sync()
            if not prepared.endpoint.alive:
                return ResultCode.DEAD_OBJECT
            await kernel.sleep(FMQ_TRANSFER_NS)  # the client spins on the result queue
            if split is not None:
                split.ipc_ns += FMQ_TRANSFER_NS
        self.timing = self.timing_fenced = timing
        return status_to_code(status)

    async def _run_on_driver(
        self,
        prepared: CanonicalPreparedModel,
        device: RuntimeDevice,
        *,
        burst: CanonicalBurst | None = None,
        step: int = 0,
    ) -> ResultCode:
        """DriverPreparedModel::execute: one step on a driver, over the binder -- through an
        AIDL driver's IBurst for ``burst``, and through the step's reusable execution (created
        at the first computation) for a reusable execution (a fenced execution's steps are
        ``_fenced``'s)."""
        runtime = self.runtime
        kernel = runtime.kernel
        request = runtime.request_for(prepared.model)
        shared: list[Memory | None] = []
        if self.memories:
            request = memory_request(request, self.memories, self.compilation, step, shared)
        measure = _MEASURE_YES if self.measure else _MEASURE_NO
        status: ErrorStatus | DeadObject
        with runtime.tracer.section(_IO_MARK) as section:
            kernel.work(PER_OP_NS * (len(request.inputs) + len(request.outputs)))
            section.switch(_IPC_MARK)
            try:
                if burst is not None:
                    status, timing = await burst.execute(
                        request, measure, self.deadline_ns, self.loop_timeout_ns, shared
                    )
                elif self.reusable:
                    status, timing = await self._compute_reused(prepared, request, measure, step)
                else:
                    status, timing = await prepared.execute(
                        request, measure, self.deadline_ns, self.loop_timeout_ns
                    )
            finally:
                # The results phase is charged however the call ended.
                section.switch(_RESULTS_MARK)
                kernel.work(API_CALL_NS)
        self.timing = self.timing_fenced = timing
        if isinstance(status, DeadObject):
            runtime.forget(device)
            return ResultCode.DEAD_OBJECT
        return status_to_code(status)


_SHAPED: Final = (ResultCode.NO_ERROR, ResultCode.OUTPUT_INSUFFICIENT_SIZE)
"""The results after which an execution's output shapes can be read."""


def _fully_specified(dims: Sequence[int]) -> bool:
    return bool(dims) and 0 not in dims


def _app_visible(code: ResultCode) -> ResultCode:
    """What a failed driver step becomes for the app: code → status → code (DEAD_OBJECT → OP_FAILED)."""
    return status_to_code(code_to_status(code))
