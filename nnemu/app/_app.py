"""The emulated application: a process that builds a model, compiles it and runs a workload.

Everything it does goes through the runtime's NDK-shaped API, as a real app's
code would; it writes the application-layer marks (``[NN_LA_*]``) of the tracing
contract around its phases and executions.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from functools import partial
from typing import Final

import structlog
import trio

from nnemu.app._memory import DeviceMemories, HardwareBuffers
from nnemu.app._stats import AppStats, ExecutionRecord
from nnemu.driver import AidlDevice, DriverService, us
from nnemu.errors import EmulatorBug
from nnemu.hal import FenceState, Model, ResultCode
from nnemu.ipc import Binder, Endpoint, ExecutionSplit
from nnemu.runtime import Burst, Compilation, Event, Execution, ModelBuilder, Runtime
from nnemu.scenario import AppSpec, ExecutionMode, MemoryMode, Scenario, WorkloadKind
from nnemu.sim import (
    FileSystem,
    Kernel,
    ProcessTable,
    SimEvent,
    SimQueue,
    SimThread,
    current_thread,
)
from nnemu.tracer import CounterTrack, Layer, Phase, Tracer, mark, raw_mark

logger = structlog.get_logger(layer="app")

_EXECUTE_MARK = mark(Layer.APPLICATION, Phase.EXECUTION, "execute")
RETRY_MARK: Final = "nnemu::retry "
"""The name, followed by the refused attempt's result code, of the section an app's thread
holds open while it backs off before retrying an execution (no NNTRACE tag: Android's
parser ignores it; replay joins the attempts around it into one execution)."""
WAITED_MARK: Final = "nnemu::waited "
"""The name, followed by a count of ns and `` ns``, of an empty section just before an
execution's first ``[NN_LA_PE]`` begin when its frame arrived that long before an app
thread took it (none when it was taken at once)."""
FAILED_MARK: Final = "nnemu::failed "
"""The name, followed by the result code, of an empty section just after the last attempt
of an execution that failed (none for one that completed)."""
QOS_MARK: Final = "nnemu::qos "
"""The name, followed by the app's ``priority=NAME`` and, when set, its
``execution_timeout_ns=N``, ``compile_timeout_ns=N`` and ``drop_late_frames``, of an empty
section at the begin of its ``[NN_LA_PO]`` section: what ``setPriority``/``setTimeout`` were
given, which no NNTRACE mark carries (``qos_mark``)."""
"""An NDK execution's mark, built once (``Tracer.enter``)."""


def qos_mark(spec: AppSpec) -> str:
    """The name of ``spec``'s ``QOS_MARK`` section (timeouts in whole ns, as the app sets them)."""
    parts = [f"{QOS_MARK}priority={spec.priority.name}"]
    if spec.execution_timeout_ms:
        parts.append(f"execution_timeout_ns={us(spec.execution_timeout_ms * 1e6)}")
    if spec.compile_timeout_ms:
        parts.append(f"compile_timeout_ns={us(spec.compile_timeout_ms * 1e6)}")
    if spec.drop_late_frames:
        parts.append("drop_late_frames")
    return " ".join(parts)


# Enum members the per-execution path compares with or returns, as module constants: on
# Python 3.11 ``Enum.MEMBER`` goes through ``EnumType.__getattr__``'s lookup hook (~60 ns;
# a global ~10), bench/README.md.
_NO_ERROR: Final = ResultCode.NO_ERROR
_SYNC: Final = ExecutionMode.SYNC
_ACTIVE: Final = FenceState.ACTIVE


class Application:
    """One app process: its runtime, its threads, its workload and its statistics."""

    def __init__(
        self,
        spec: AppSpec,
        model: Model,
        scenario: Scenario,
        *,
        kernel: Kernel,
        tracer: Tracer,
        binder: Binder,
        processes: ProcessTable,
        services: Sequence[DriverService | AidlDevice],
        nursery: trio.Nursery,
        files: FileSystem | None = None,
        output_dims: Sequence[tuple[int, ...]] = (),
    ) -> None:
        self.spec = spec
        self.model = model
        self._output_dims = tuple(output_dims)
        """The dimensions each execution produces per model output (``setOutput``)."""
        self.kernel = kernel
        self.tracer = tracer
        self.nursery = nursery
        self.process = processes.spawn(spec.name, spec.uid)
        self.endpoint = Endpoint(kernel, self.process, scenario.ipc.binder_threads)
        self.runtime = Runtime(
            kernel=kernel,
            tracer=tracer,
            binder=binder,
            process=self.process,
            endpoint=self.endpoint,
            services=services,
            cpu=scenario.cpu,
            nursery=nursery,
            files=files,
        )
        self._in_flight: CounterTrack | None = (
            tracer.counter_track(self.process.pid, "executions in flight") if tracer.flows else None
        )
        """The app's ``executions in flight`` counter (None: no sink takes counters)."""
        self.stats = AppStats()
        self.records: list[ExecutionRecord] | None = None
        """Per-execution records, when the run keeps them (``keep_executions``)."""
        self._rng = random.Random(f"{scenario.seed}:app:{spec.name}")
        self._compilation: Compilation | None = None
        self._queue: SimQueue = SimQueue(kernel)
        self._remaining = spec.workload.executions
        if spec.workload.kind is WorkloadKind.TRACE:
            count = len(spec.workload.arrivals_ms)
            self._remaining = count if self._remaining is None else min(count, self._remaining)
        self._workers = [
            self.process.new_thread(f"{spec.name[:9]}-exec{i + 1}") for i in range(spec.threads)
        ]
        self._log = logger.bind(app=spec.name)
        self._running_executors = 0
        self._bursts: dict[SimThread, Burst] = {}
        self._reused: dict[SimThread, Execution] = {}
        """Each app thread's reusable execution (``reusable``)."""
        self._stages: dict[SimThread, list[SimQueue]] = {}
        """Each app thread's stage threads' queues (``pipeline``)."""
        self._stage_count = 0
        self._executors_done = SimEvent(kernel)
        self._memories: DeviceMemories | HardwareBuffers | None = None
        """The memories of ``memory: device`` or ``ahwb``."""
        self.finished = False
        # Per-execution durations the spec fixes, rounded once rather than per frame.
        self._timeout_ns = (
            us(spec.execution_timeout_ms * 1e6) if spec.execution_timeout_ms else None
        )
        self._backoff_ns = us(spec.retry.backoff_ms * 1e6)
        self._started = 0

    def start(self) -> None:
        """Start the app's main thread."""
        self.tracer.process(self.process.pid, self.process.name)
        self.kernel.spawn(self.nursery, self._main, thread=self.process.main_thread)

    # ------------------------------------------------------------ phases
    async def _main(self) -> None:
        kernel, tracer, spec = self.kernel, self.tracer, self.spec
        await kernel.sleep_until(us(spec.workload.start_ms * 1e6))
        try:
            with tracer.section(mark(Layer.APPLICATION, Phase.OVERALL, spec.name)):
                with tracer.section(raw_mark(qos_mark(spec))):
                    pass
                compiled = False
                for number in range(spec.compilations):
                    # Earlier compilations model earlier launches of the app: compile, free.
                    if number and self._compilation is not None:
                        self._compilation.free()
                        self._compilation = None
                    compiled = await self._compile_with_retries()
                    if not compiled:
                        break
                if compiled:
                    assert self._compilation is not None
                    if spec.memory is MemoryMode.DEVICE:
                        self._memories = await self._device_memories(self._compilation)
                    elif spec.memory is MemoryMode.AHWB:
                        self._memories = HardwareBuffers.create(self._compilation)
                    await self._run_workload()
                    if self._memories is not None:
                        await self._memories.free()
                    for burst in self._bursts.values():
                        burst.free()
                    self._compilation.free()
        finally:
            self.finished = True

    async def _device_memories(self, compilation: Compilation) -> DeviceMemories | None:
        """``memory: device``: allocate the memories (an app compilation-phase section; the
        first execution copies the inputs in); None (the app sets its inputs and outputs
        from its own buffers) when a memory cannot be created."""
        with self.tracer.section(mark(Layer.APPLICATION, Phase.COMPILATION, "allocateMemories")):
            memories = await DeviceMemories.create(compilation)
        if memories is None:
            self._log.info("device_memory_unavailable")
        return memories

    async def _compile_with_retries(self) -> bool:
        """Compile; retry TRANSIENT failures as the app's retry policy says."""
        retry = self.spec.retry
        delay_ns = us(retry.backoff_ms * 1e6)
        for attempt in range(retry.max_attempts + 1):
            if await self._compile():
                return True
            if not self.stats.compile_result.is_transient or attempt == retry.max_attempts:
                return False
            self.stats.retries += 1
            await self.kernel.sleep(delay_ns)
            delay_ns = us(delay_ns * retry.backoff_factor)
        return False

    async def _compile(self) -> bool:
        """Build and compile the model; False (and the code recorded) when that fails."""
        with self.tracer.section(mark(Layer.APPLICATION, Phase.COMPILATION, "compileModel")):
            started = self.kernel.task_now_ns()
            code, builder = await self.runtime.create_model(self.model)
            compilation = None
            if builder is not None:
                code, compilation = await self._create_compilation(builder)
            if compilation is not None:
                code = self._configure(compilation, code)
                if code is ResultCode.NO_ERROR:
                    code = await compilation.finish()
            self.stats.compile_result = code
            self.stats.record_compilation(
                self.kernel.task_now_ns() - started,
                from_cache=compilation is not None and compilation.from_cache > 0,
            )
            if code is not ResultCode.NO_ERROR:
                self._log.info("compilation_failed", code=code.name)
                return False
            self._compilation = compilation
            return True

    async def _create_compilation(
        self, builder: ModelBuilder
    ) -> tuple[ResultCode, Compilation | None]:
        """Compilation_create, or createForDevices for the app's ``devices`` (BAD_DATA if one is missing)."""
        spec = self.spec
        if spec.devices is None:
            return await Compilation.create(builder)
        by_name = {d.name: d for d in await self.runtime.get_devices()}
        if any(name not in by_name for name in spec.devices):
            return ResultCode.BAD_DATA, None
        return await Compilation.create_for_devices(
            builder, [by_name[name] for name in spec.devices]
        )

    def _configure(self, compilation: Compilation, code: ResultCode) -> ResultCode:
        """Set the app's preference, priority, timeout and caching; the last failure, else ``code``."""
        spec = self.spec
        results = [
            compilation.set_preference(int(spec.preference)),
            compilation.set_priority(spec.priority.ndk_value),
        ]
        if spec.compile_timeout_ms:
            results.append(compilation.set_timeout(us(spec.compile_timeout_ms * 1e6)))
        if spec.caching:
            # The app's cache directory and a token naming its model (as an app
            # would derive one from its model file).
            token = hashlib.sha256(f"{spec.name}/{self.model.name}".encode()).digest()
            results.append(compilation.set_caching(f"/data/data/{spec.name}/code_cache/", token))
        for result in results:
            if result is not ResultCode.NO_ERROR:
                code = result
        return code

    async def _run_workload(self) -> None:
        kernel, spec = self.kernel, self.spec
        workload = spec.workload
        await kernel.sync()  # compiling may have left CPU work to account before queueing
        for thread in self._workers:
            self._running_executors += 1
            kernel.spawn(self.nursery, self._executor, thread=thread)
        if workload.kind is WorkloadKind.CLOSED_LOOP:
            for _ in self._workers:
                self._queue.put_nowait(None)  # each executor runs its own loop
            await self._executors_done.wait()
            return
        start = kernel.task_now_ns()
        count = 0
        kind = workload.kind  # (the kind's tests, once: enum lookups cost, bench/README.md)
        periodic = kind is WorkloadKind.PERIODIC
        trace = kind is WorkloadKind.TRACE
        poisson = kind is WorkloadKind.POISSON
        while self._remaining is None or count < self._remaining:
            if periodic:
                assert workload.period_ms is not None
                arrivals = [start + us(count * workload.period_ms * 1e6)]
            elif trace:
                arrivals = [start + us(workload.arrivals_ms[count] * 1e6)]
            elif poisson:
                assert workload.rate_hz is not None
                gap = self._rng.expovariate(workload.rate_hz) * 1e9
                arrivals = [max(kernel.task_now_ns(), start) + us(gap)]
                start = arrivals[0]
            else:
                assert workload.burst_size is not None
                assert workload.burst_interval_ms is not None
                burst = count // workload.burst_size
                arrivals = [start + us(burst * workload.burst_interval_ms * 1e6)] * min(
                    workload.burst_size,
                    (self._remaining - count)
                    if self._remaining is not None
                    else workload.burst_size,
                )
            await kernel.sleep_until(arrivals[0])
            for arrival in arrivals:
                self.stats.submitted += 1
                self._queue.put_nowait(arrival)
            count += len(arrivals)
        for _ in self._workers:
            self._queue.put_nowait(-1)  # no more work
        await self._executors_done.wait()

    async def _executor(self) -> None:
        try:
            await self._serve_queue()
        finally:
            execution = self._reused.pop(current_thread(), None)
            if execution is not None:
                execution.free()
            stages = self._stages.pop(current_thread(), ())
            if stages:
                # A queue is shared state: touched once this thread's work is in the past
                # (its last frame's Execution_free has just run).
                await self.kernel.sync()
                for queue in stages:
                    queue.put_nowait(None)
            self._running_executors -= 1
            if self._running_executors == 0:
                await self.kernel.sync()
                self._executors_done.set()

    async def _serve_queue(self) -> None:
        kernel, spec = self.kernel, self.spec
        while True:
            arrival = await self._queue.get()
            if arrival == -1:
                return
            if arrival is None:
                # Closed loop: this thread issues its next execution when the last one ends.
                while self._remaining is None or self._remaining > 0:
                    if self._remaining is not None:
                        self._remaining -= 1
                    self.stats.submitted += 1
                    await self._one(kernel.task_now_ns())
                    if spec.workload.think_ms:
                        await kernel.sleep(us(spec.workload.think_ms * 1e6))
                return
            await self._one(arrival)

    async def _one(self, arrival_ns: int) -> None:
        """One frame: execute (with retries of TRANSIENT errors) and record the outcome."""
        kernel, spec = self.kernel, self.spec
        timeout_ns = self._timeout_ns
        if (
            spec.drop_late_frames
            and timeout_ns is not None
            and kernel.task_now_ns() - arrival_ns > timeout_ns
        ):
            self.stats.dropped += 1
            self.stats.deadline_misses += 1
            return
        retry = spec.retry
        delay_ns = self._backoff_ns
        attempt = 0
        self._started += 1
        seq = self._started
        started_ns = attempt_ns = kernel.task_now_ns()
        if started_ns > arrival_ns:
            with self.tracer.section(raw_mark(f"{WAITED_MARK}{started_ns - arrival_ns} ns")):
                pass
        detailed = self.records is not None
        in_flight = self._in_flight
        while True:
            if in_flight is not None:
                in_flight.add(1)
            # The layers below add the attempt's time to its split as they spend it.
            split = ExecutionSplit(detailed)
            outer, kernel.split = kernel.split, split
            try:
                code, late = await self._execute(timeout_ns)
            finally:
                kernel.split = outer
            self.stats.energy += split.energy
            if in_flight is not None:
                in_flight.add(-1)
            if (
                code is _NO_ERROR  # (the usual case, before the property's call)
                or not code.is_transient
                or attempt >= retry.max_attempts
            ):
                break
            attempt += 1
            self.stats.retries += 1
            with self.tracer.section(raw_mark(RETRY_MARK + code.name)):
                await kernel.sleep(delay_ns)
            delay_ns = us(delay_ns * retry.backoff_factor)
            attempt_ns = kernel.task_now_ns()
        if code is not _NO_ERROR:
            with self.tracer.section(raw_mark(FAILED_MARK + code.name)):
                pass
        finished_ns = kernel.task_now_ns()
        latency_ns = finished_ns - arrival_ns
        self.stats.record(
            code, latency_ns, late, split, started_ns - arrival_ns, attempt_ns - started_ns
        )
        records = self.records
        if records is not None:
            waited_ns = started_ns - arrival_ns
            retry_ns = attempt_ns - started_ns
            runtime_ns = latency_ns - (
                waited_ns
                + split.binder_ns
                + split.device_queue_ns
                + split.preempted_ns
                + split.ipc_ns
                + split.launch_ns
                + split.compute_ns
                + retry_ns
            )
            records.append(
                ExecutionRecord(
                    arrival_ns,
                    finished_ns,
                    code,
                    attempt + 1,
                    timeout_ns,
                    seq=seq,
                    started_ns=started_ns,
                    device="+".join(split.devices),
                    device_arrival_ns=split.device_arrival_ns,
                    device_start_ns=split.device_start_ns,
                    device_end_ns=split.device_end_ns,
                    mode=spec.execution_mode.value,
                    priority=spec.priority.name,
                    deadline_ns=split.deadline_ns,
                    preemptions=split.preemptions,
                    app_wait_ns=waited_ns,
                    binder_wait_ns=split.binder_ns,
                    device_queue_ns=split.device_queue_ns,
                    preempted_ns=split.preempted_ns,
                    ipc_ns=split.ipc_ns,
                    driver_launch_ns=split.launch_ns,
                    compute_ns=split.compute_ns,
                    retry_ns=retry_ns,
                    runtime_ns=runtime_ns,
                )
            )

    async def _burst(self, compilation: Compilation) -> Burst:
        """This thread's burst for ``compilation`` (a burst serves one execution at a time)."""
        thread = current_thread()
        burst = self._bursts.get(thread)
        if burst is None or burst.compilation is not compilation:
            code, created = await Burst.create(compilation)
            if created is None:
                raise EmulatorBug(f"ANeuralNetworksBurst_create failed: {code.name}")
            burst = self._bursts[thread] = created
        return burst

    async def _execute(self, timeout_ns: int | None) -> tuple[ResultCode, bool]:
        """One NDK execution in the app's mode: its result code, and whether a
        successful result reached the app after the execution's deadline."""
        spec = self.spec
        compilation = self._compilation
        assert compilation is not None
        with self.tracer.section(_EXECUTE_MARK):
            memories = self._memories
            if memories is not None:
                await memories.fill_inputs(self.kernel)  # the first frame copies the inputs in
            execution = self._reused.get(current_thread()) if spec.reusable else None
            if execution is None:
                code, execution = Execution.create(compilation)
                if execution is None:
                    return code, False
                self._set_up(execution, timeout_ns)
            if spec.execution_mode is _SYNC:
                code = await execution.compute()
            elif spec.execution_mode is ExecutionMode.BURST:
                code = await execution.burst_compute(await self._burst(compilation))
            elif spec.execution_mode is ExecutionMode.ASYNC:
                code, event = await execution.start_compute()
                if event is not None:
                    code = await event.wait()
            elif spec.pipeline > 1:
                code, execution = await self._pipeline(compilation, execution, timeout_ns)
            else:
                code, event = await execution.start_compute_with_dependencies(())
                if event is not None:
                    code = await event.wait()
            if code is _NO_ERROR and memories is not None:
                code = await memories.read_outputs()  # the app reads its results
            deadline = execution.deadline_ns
            late = (
                code is _NO_ERROR and deadline is not None and self.kernel.task_now_ns() > deadline
            )
            if not spec.reusable:
                execution.free()
            return code, late

    async def _pipeline(
        self, compilation: Compilation, first: Execution, timeout_ns: int | None
    ) -> tuple[ResultCode, Execution]:
        """A frame of ``pipeline`` fenced executions, one stage per thread: stage k's
        startComputeWithDependencies depends on stage k-1's event, then its thread waits
        for its own event (Event_wait).

        The stages hand their data on in ANeuralNetworksMemory (``outputs_in_memory``), so
        a stage's call returns once its driver has the work, and a driver with
        ``sync_fences`` waits for the previous stage's fence itself.  Each stage has its
        own thread (this one for the first, ``_stage_threads`` for the others) because
        Android's trace contract, like its ``systrace_parser``, allows one
        startCompute..Event_wait window open per thread.  Returns the frame's code -- the
        first launch that failed, else the last stage's wait (a failed stage's fence
        signals in error, and so fails every stage after it) -- and the last stage's
        execution, which the caller frees (the others are freed here).
        """
        kernel = self.kernel
        frame = kernel.split
        helpers = self._stage_threads()
        ended = SimEvent(kernel)
        launches: dict[int, tuple[ResultCode, Execution | None]] = {}
        waits: dict[int, ResultCode] = {}
        measured: list[tuple[ExecutionSplit, bool]] = []
        pending = [1]  # stage tasks under way

        async def stage(index: int, execution: Execution | None, before: Event | None) -> None:
            # A later stage is measured apart: launched while the stage before it still
            # computes, only its device's parts are on the frame's path.
            split = frame if frame is None or not index else ExecutionSplit(frame.detailed)
            outer, kernel.split = kernel.split, split
            try:
                event = None
                if execution is None:
                    code, execution = Execution.create(compilation)
                    if execution is not None:
                        self._set_up(execution, timeout_ns)
                if execution is not None:
                    execution.outputs_in_memory = True
                    code, event = await execution.start_compute_with_dependencies(
                        () if before is None else (before,)
                    )
                launches[index] = (code, execution)
                if split is not frame and split is not None:
                    fence = before.sync_fence if before is not None else None
                    measured.append((split, fence is not None and fence.poll() is _ACTIVE))
                if event is not None:
                    await kernel.sync()
                    if index < len(helpers):
                        pending[0] += 1
                        helpers[index].put_nowait(partial(stage, index + 1, None, event))
                    waits[index] = await event.wait()
            finally:
                kernel.split = outer
            await kernel.sync()
            pending[0] -= 1
            if not pending[0]:
                ended.set()

        await stage(0, first, None)
        await ended.wait()
        code = _NO_ERROR
        last = first
        for index in sorted(launches):
            launch_code, execution = launches[index]
            if execution is not None:
                if execution is not last:
                    last.free()
                last = execution
            if launch_code is not _NO_ERROR:
                code = launch_code
                break
            code = waits[index]
        if frame is not None:
            for split, overlapped in measured:
                frame.merge(split, device_only=overlapped)
        return code, last

    def _stage_threads(self) -> list[SimQueue]:
        """The current app thread's stage threads (``pipeline`` - 1 of them, started at its
        first frame): each runs the stage jobs put on its queue until it gets None."""
        worker = current_thread()
        queues = self._stages.get(worker)
        if queues is None:
            queues = []
            for _ in range(self.spec.pipeline - 1):
                self._stage_count += 1
                thread = self.process.new_thread(f"{self.spec.name[:8]}-st{self._stage_count}")
                queue = SimQueue(self.kernel)
                self.kernel.spawn(self.nursery, self._serve_stage, queue, thread, thread=thread)
                queues.append(queue)
            self._stages[worker] = queues
        return queues

    async def _serve_stage(self, queue: SimQueue, thread: SimThread) -> None:
        while True:
            job = await queue.get()
            if job is None:
                break
            await job()
        self.process.end_thread(thread)
        self.tracer.end_thread(thread)

    def _set_up(self, execution: Execution, timeout_ns: int | None) -> None:
        """An execution's settings, before its first computation."""
        spec = self.spec
        if self._memories is not None:
            self._memories.set_up(execution)
        else:
            execution.set_io()
        for index, length in enumerate(spec.output_bytes):
            dims = self._output_dims[index] if index < len(self._output_dims) else None
            execution.set_output(index, length, dims)
        if timeout_ns is not None:
            execution.set_timeout(timeout_ns)
        if spec.loop_timeout_ms is not None:
            execution.set_loop_timeout(us(spec.loop_timeout_ms * 1e6))
        if spec.measure_timing:
            execution.set_measure_timing(True)
        if spec.reusable:
            execution.set_reusable(True)
            self._reused[current_thread()] = execution
