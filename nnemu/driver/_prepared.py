"""IPreparedModel: a model prepared for one device, and its executions.

The execution paths follow the sample driver (``SamplePreparedModel`` in
``SampleDriver.cpp``): validate the request, refuse what the deadline cannot
make, run on the device, and answer through the callback (``execute*``), the
return value (``executeSynchronously*``) or, done inside the call, an empty
fence and a fenced callback (``executeFenced``).  Bursts are served by ``BurstContext``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from typing import Final

import attrs
from mypy_extensions import mypyc_attr

from nnemu.cost import ComputePlan
from nnemu.driver._burst import BurstContext
from nnemu.driver._hidl import VALIDATE_NS_PER_OP, CallbackRef, DriverHost, measured_timing
from nnemu.driver._job import Job
from nnemu.driver._tracker import ManagedBuffer, produced_shapes, update_device_memories
from nnemu.hal import (
    HARDWARE_BUFFER,
    NO_TIMING,
    DeviceStatus,
    ErrorStatus,
    ExecutionPreference,
    FenceState,
    HalVersion,
    ISyncFence,
    MeasureTiming,
    Model,
    OutputShape,
    Priority,
    Request,
    Timing,
    validate_request,
)
from nnemu.ipc import Endpoint
from nnemu.scenario import DeadlinePolicy
from nnemu.sim import SyncFence, us
from nnemu.tracer import Layer, Mark, Phase, mark


def _marks(detail: str) -> tuple[Mark, Mark]:
    """The (execution, inputs-and-outputs) marks of a driver scope called ``detail``."""
    return (
        mark(Layer.DRIVER, Phase.EXECUTION, detail),
        mark(Layer.DRIVER, Phase.INPUTS_AND_OUTPUTS, detail),
    )


# The sample driver's execution marks, built once.
_FENCED_MARKS: Final = _marks("SamplePreparedModel::executeFenced")
_SYNC_MARKS: Final = _marks("SampleDriver::executeSynchronouslyBase")
_ASYNC_MARKS: Final = _marks("SampleDriver::asyncExecute")
_EXECUTE_BASE_MARK: Final = mark(Layer.DRIVER, Phase.EXECUTION, "SampleDriver::executeBase")


# Enum members the per-execution path compares with or returns, as module constants: on
# Python 3.11 ``Enum.MEMBER`` goes through ``EnumType.__getattr__``'s lookup hook (~60 ns;
# a global ~10), bench/README.md.
_AVAILABLE: Final = DeviceStatus.AVAILABLE
_NONE: Final = ErrorStatus.NONE
_V1_3: Final = HalVersion.V1_3
_SIGNALED: Final = FenceState.SIGNALED


@mypyc_attr(native_class=False)  # compiled, a Python class all the same: an attrs value
@attrs.frozen
class FencedResult:
    """The IFencedExecutionCallback executeFenced hands back beside an empty sync fence (the
    work is done inside the call, as in the sample driver): its getExecutionInfo answers."""

    status: ErrorStatus
    """Status of the execution (what the sync fence reports)."""
    timing_launched: Timing
    """Call to fence signal."""
    timing_fenced: Timing
    """Inputs signalled to fence signal."""

    @property
    def sync_fence(self) -> ISyncFence | None:
        """The sync fence handed back with it: none (the work is done)."""
        return None

    def get_execution_info(self) -> tuple[ErrorStatus, Timing, Timing]:
        """IFencedExecutionCallback::getExecutionInfo."""
        return self.status, self.timing_launched, self.timing_fenced


class FencedCallback:
    """The IFencedExecutionCallback of a ``sync_fences`` device's executeFenced, handed back
    with the fence its worker thread signals: GENERAL_FAILURE and no timing until then
    (``IFencedExecutionCallback.hal``), the execution's status and timings after."""

    def __init__(self, fence: SyncFence) -> None:
        self.sync_fence: ISyncFence | None = fence
        """The fence the work signals."""
        self._fence = fence
        self._info: tuple[ErrorStatus, Timing, Timing] = (
            ErrorStatus.GENERAL_FAILURE,
            NO_TIMING,
            NO_TIMING,
        )

    def finish(self, status: ErrorStatus, launched: Timing, fenced: Timing) -> None:
        """The work ended with ``status``: keep the answers, then signal the fence."""
        self._info = (status, launched, fenced)
        self._fence.signal(status is _NONE)

    def get_execution_info(self) -> tuple[ErrorStatus, Timing, Timing]:
        """IFencedExecutionCallback::getExecutionInfo: status, timingLaunched, timingFenced."""
        return self._info


def _bound(deadline_ns: int | None, duration_ns: int | None, signalled_ns: int) -> int | None:
    """The earlier of the deadline and the input fences' signal + ``duration_ns``."""
    if duration_ns is None:
        return deadline_ns
    end = signalled_ns + duration_ns
    return end if deadline_ns is None else min(deadline_ns, end)


@mypyc_attr(native_class=False)
class PreparedModel:
    """IPreparedModel: a model prepared for one device, living in the driver process.

    A wheel compiles its methods (``nnemu._native``) into a Python class: tests replace
    them on the class (``monkeypatch.setattr(PreparedModel, "compute", ...)``), which a
    native class would refuse.
    """

    def __init__(
        self,
        service: DriverHost,
        model: Model,
        version: HalVersion,
        priority: Priority,
        uid: int,
        plan: ComputePlan,
        memory_bytes: int,
    ) -> None:
        self.service = service
        self.model = model
        self.version = version
        self.priority = priority
        self.uid = uid
        self.plan = plan
        self.memory_bytes = memory_bytes
        # The last request that passed validation: runtimes send the same request
        # object for every execution of a step, and validation is a pure function.
        self.validated_request: Request | None = None
        self._output_shapes: tuple[OutputShape, ...] | None = None
        self._launch_ns = us(service.spec.cost.launch_us * 1000)
        self._io_ns_per_kb = service.spec.cost.io_us_per_kb * 1000
        self._io: tuple[Request | None, int] = (None, 0)

    @property
    def endpoint(self) -> Endpoint:
        """The driver process the prepared model lives in."""
        return self.service.endpoint

    def release(self) -> None:
        """The client dropped its last reference: the driver frees the model's memory."""
        if self.memory_bytes:
            self.service.memory_used -= self.memory_bytes
            self.service.trace_memory()
            self.memory_bytes = 0

    # The HIDL methods. ------------------------------------------------------
    async def execute(self, request: Request, callback: CallbackRef | None) -> ErrorStatus:
        """IPreparedModel::execute (1.0)."""
        return await self._execute_async(
            request, MeasureTiming.NO, None, None, callback, HalVersion.V1_0
        )

    async def execute_1_2(
        self, request: Request, measure: MeasureTiming, callback: CallbackRef | None
    ) -> ErrorStatus:
        """IPreparedModel::execute_1_2."""
        return await self._execute_async(request, measure, None, None, callback, HalVersion.V1_2)

    async def execute_1_3(
        self,
        request: Request,
        measure: MeasureTiming,
        deadline_ns: int | None,
        loop_timeout_ns: int | None,
        callback: CallbackRef | None,
    ) -> ErrorStatus:
        """IPreparedModel::execute_1_3."""
        return await self._execute_async(
            request, measure, deadline_ns, loop_timeout_ns, callback, HalVersion.V1_3
        )

    # The synchronous HIDL methods are plain functions returning the helper's coroutine (to
    # await as an ``async def``'s): one coroutine fewer on every execution's path.
    def executeSynchronously(
        self, request: Request, measure: MeasureTiming
    ) -> Awaitable[tuple[ErrorStatus, tuple[OutputShape, ...], Timing]]:
        """IPreparedModel::executeSynchronously (1.2)."""
        return self._execute_sync(request, measure, None, None, HalVersion.V1_2)

    def executeSynchronously_1_3(
        self,
        request: Request,
        measure: MeasureTiming,
        deadline_ns: int | None,
        loop_timeout_ns: int | None,
    ) -> Awaitable[tuple[ErrorStatus, tuple[OutputShape, ...], Timing]]:
        """IPreparedModel::executeSynchronously_1_3."""
        return self._execute_sync(request, measure, deadline_ns, loop_timeout_ns, _V1_3)

    async def configureExecutionBurst(
        self, callback: object, preference: int = 1
    ) -> tuple[ErrorStatus, BurstContext | None]:
        """IPreparedModel::configureExecutionBurst (1.2): a burst server thread for this model."""
        service = self.service
        # docs/hal-semantics.md §6 lists this mark under PE; it runs once, inside
        # ANeuralNetworksBurst_create (LR PP), where PE may not nest, so nnemu files it
        # as initialization (PI), the phase Android's parser gives the HIDL call itself.
        with service.tracer.section(
            mark(Layer.DRIVER, Phase.INITIALIZATION, "SampleDriver::configureExecutionBurst")
        ):
            if callback is None:
                return ErrorStatus.INVALID_ARGUMENT, None
            if not service.version.at_least(HalVersion.V1_2):
                return ErrorStatus.GENERAL_FAILURE, None
            service.bursts += 1
            thread = service.process.new_thread(f"burst-{service.bursts}")
            polls = preference != int(ExecutionPreference.LOW_POWER)
            return ErrorStatus.NONE, BurstContext(self, thread, polls)

    async def executeFenced(
        self,
        request: Request,
        wait_for: Sequence[ISyncFence | None],
        measure: MeasureTiming,
        deadline_ns: int | None,
        loop_timeout_ns: int | None,
        duration_ns: int | None,
    ) -> tuple[ErrorStatus, FencedResult | FencedCallback | None]:
        """IPreparedModel::executeFenced (1.3); the sync fence rides on the callback
        (``sync_fence``, None for the empty handle).

        As ``SamplePreparedModel::executeFenced``: the request (outputs fully specified),
        then the deadline are checked, then each wait fence in turn: a null one is
        INVALID_ARGUMENT, one that does not signal (``syncWait(fd, -1)``) GENERAL_FAILURE;
        the work runs inside the call, and its error is returned from the call itself with no
        fence and no callback; on success the callback's ``timingFenced`` runs from the
        fences' signal, ``timingLaunched`` from the call.  A device with ``sync_fences``
        instead returns at once, after the checks that need no waiting, with a fence that a
        worker thread signals (in error when the work fails) once it waited for the input
        fences and did the work (``_fenced_task``).
        """
        service = self.service
        tracer, kernel = service.tracer, service.kernel
        with tracer.section(_FENCED_MARKS[0]) as section:
            entered = kernel.task_now_ns()
            kernel.work(VALIDATE_NS_PER_OP)
            main = self.model.main
            if any(0 in main.operands[i].dimensions for i in main.output_indexes):
                return ErrorStatus.INVALID_ARGUMENT, None  # outputs must be fully specified
            error = self.check_request(request, deadline_ns)
            if error is not None:
                return error, None
            memories: tuple[ManagedBuffer | None, ...] = ()
            if request.pool_tokens or request.pool_names:
                error, memories = self.device_memories(request)
                if error is not None:
                    return error, None
            fences = tuple(fence for fence in wait_for if fence is not None)
            if service.spec.sync_fences:
                if len(fences) != len(wait_for):
                    return ErrorStatus.INVALID_ARGUMENT, None
                return await self._launch_fenced(
                    request,
                    memories,
                    fences,
                    measure,
                    deadline_ns,
                    loop_timeout_ns,
                    duration_ns,
                    entered,
                )
            for fence in wait_for:
                if fence is None:
                    return ErrorStatus.INVALID_ARGUMENT, None
                if await fence.wait() is not _SIGNALED:
                    return ErrorStatus.GENERAL_FAILURE, None  # "syncWait failed"
            signalled = kernel.task_now_ns()
            bound = _bound(deadline_ns, duration_ns, signalled)
            # The sample driver's switches: the scope ends them all (AOSP NNTRACE_FULL_SWITCH).
            section.switch(_FENCED_MARKS[1])
            section.switch(_FENCED_MARKS[0])
            status, on_device = await self.run_request(request, memories, bound, loop_timeout_ns)
            if status is not _NONE:
                return status, None
            ended = kernel.task_now_ns()
            launched = measured_timing(measure, status, on_device, entered, ended)
            fenced = measured_timing(measure, status, on_device, signalled, ended)
            return ErrorStatus.NONE, FencedResult(status, launched, fenced)

    async def _launch_fenced(
        self,
        request: Request,
        memories: tuple[ManagedBuffer | None, ...],
        wait_for: tuple[ISyncFence, ...],
        measure: MeasureTiming,
        deadline_ns: int | None,
        loop_timeout_ns: int | None,
        duration_ns: int | None,
        entered: int,
    ) -> tuple[ErrorStatus, FencedCallback | None]:
        """executeFenced on a ``sync_fences`` device: hand the work to a worker thread and
        return its fence and callback at once (GENERAL_FAILURE if no worker can take it)."""
        service = self.service
        kernel = service.kernel
        await kernel.sync()
        fence = SyncFence(kernel, f"{service.spec.name}:executeFenced")
        callback = FencedCallback(fence)
        split = kernel.split

        async def task() -> None:
            outer, kernel.split = kernel.split, split
            try:
                await self._fenced_task(
                    callback,
                    request,
                    memories,
                    wait_for,
                    measure,
                    deadline_ns,
                    loop_timeout_ns,
                    duration_ns,
                    entered,
                )
            finally:
                kernel.split = outer
                if fence.state is FenceState.ACTIVE and not kernel.closing:
                    # The worker ended without finishing (its process died): the driver's
                    # timeline goes away and its fences signal in error.
                    callback.finish(ErrorStatus.GENERAL_FAILURE, NO_TIMING, NO_TIMING)

        if not service._launch(task):
            return ErrorStatus.GENERAL_FAILURE, None
        return ErrorStatus.NONE, callback

    async def _fenced_task(
        self,
        callback: FencedCallback,
        request: Request,
        memories: tuple[ManagedBuffer | None, ...],
        wait_for: tuple[ISyncFence, ...],
        measure: MeasureTiming,
        deadline_ns: int | None,
        loop_timeout_ns: int | None,
        duration_ns: int | None,
        entered: int,
    ) -> None:
        """A ``sync_fences`` device's fenced work, on a worker thread: wait for the input
        fences (untraced: the thread sleeps), then compute (moving the request's shared-memory
        arguments, updating its device memories), then signal the fence."""
        service = self.service
        tracer, kernel = service.tracer, service.kernel
        for fence in wait_for:
            if await fence.wait() is not _SIGNALED:
                callback.finish(ErrorStatus.GENERAL_FAILURE, NO_TIMING, NO_TIMING)
                return
        signalled = kernel.task_now_ns()
        bound = _bound(deadline_ns, duration_ns, signalled)
        with tracer.section(_FENCED_MARKS[1]) as section:
            section.switch(_FENCED_MARKS[0])
            status, on_device = await self.run_request(request, memories, bound, loop_timeout_ns)
        await kernel.sync()
        ended = kernel.clock_ns
        callback.finish(
            status,
            measured_timing(measure, status, on_device, entered, ended),
            measured_timing(measure, status, on_device, signalled, ended),
        )

    # The sample driver's execution paths. -----------------------------------
    def check_request(self, request: Request, deadline_ns: int | None) -> ErrorStatus | None:
        """Validate ``request`` and the deadline before any work: the error status, or None."""
        service = self.service
        reason = None
        if request is not self.validated_request:
            # A 1.0/1.1 service keeps a V1_0 model, which has no dynamic output shapes
            # (ValidateHal.cpp validateRequest: allowUnspecified = version >= V1_2).
            reason = validate_request(
                request,
                self.model,
                allow_unspecified_output=service.version.at_least(HalVersion.V1_2),
                allow_hardware_buffers=service.version.at_least(HalVersion.V1_2),
            )
            if reason is None:
                self.validated_request = request
        if reason is not None:
            service.log.debug("request_rejected", reason=reason)
            return ErrorStatus.INVALID_ARGUMENT
        if deadline_ns is not None and service.kernel.task_now_ns() >= deadline_ns:
            service.device.stats.refused_by_uid[self.uid] += 1
            return ErrorStatus.MISSED_DEADLINE_PERSISTENT
        return None

    def io_ns(self, request: Request) -> int:
        """Driver time to move the request's shared-memory inputs and outputs to and from the
        device (``io_us_per_kb``; arguments in device memory cost nothing)."""
        if not self._io_ns_per_kb:
            return 0
        last, cost = self._io
        if request is not last:
            moved = sum(
                argument.location.length
                for argument in (*request.inputs, *request.outputs)
                if not argument.has_no_value
                and request.token_of(argument.location.pool_index) is None
            )
            cost = us(moved * self._io_ns_per_kb / 1024)
            self._io = (request, cost)
        return cost

    def _move_io(self, io_ns: int) -> None:
        """Spend ``io_ns`` moving shared-memory arguments: driver time before the device,
        counted with the driver's launch in the execution's split.  It is written in the
        driver's execution phase: the sample driver's inputs-and-outputs switch has no time
        of its own, and the runtime's PIO cell, which the parser deducts a driver's PIO
        from, would go negative."""
        kernel = self.service.kernel
        kernel.work(io_ns)
        split = kernel.split
        if split is not None:
            split.launch_ns += io_ns

    def device_memories(
        self, request: Request
    ) -> tuple[ErrorStatus | None, tuple[ManagedBuffer | None, ...]]:
        """The request's device memories, checked as the execution starts (the sample driver's
        ``createRunTimePoolInfos``): the error, or each pool's buffer (None: shared memory).
        A pool in a non-BLOB AHardwareBuffer is GENERAL_FAILURE unless the device maps them
        (``hardware_buffers``)."""
        if HARDWARE_BUFFER in request.pool_names and not self.service.spec.hardware_buffers:
            # RunTimePoolInfo::createFromHidlMemory maps ashmem and BLOB AHardwareBuffers only.
            return ErrorStatus.GENERAL_FAILURE, ()
        return self.service.buffers.pools(request, self)

    async def run_request(
        self,
        request: Request,
        memories: tuple[ManagedBuffer | None, ...],
        deadline_ns: int | None,
        loop_timeout_ns: int | None,
    ) -> tuple[ErrorStatus, int]:
        """Every execution path's work: move the request's shared-memory arguments
        (``io_ns``), run on the device (``compute``), and on success write the outputs into
        the device memories the request names (their produced shapes).  Returns status and
        time on device (ns)."""
        io_ns = self.io_ns(request)
        if io_ns:
            self._move_io(io_ns)
        status, on_device = await self.compute(deadline_ns, loop_timeout_ns)
        if status is _NONE and memories:
            shapes = produced_shapes(self.model, request, self.output_shapes())
            status = update_device_memories(request, memories, shapes) or status
        return status, on_device

    async def compute(
        self, deadline_ns: int | None, loop_timeout_ns: int | None
    ) -> tuple[ErrorStatus, int]:
        """Run on the device; returns status and time on device (ns)."""
        service = self.service
        kernel, device, spec = service.kernel, service.device, service.spec
        if service.status is not _AVAILABLE:
            return ErrorStatus.DEVICE_UNAVAILABLE, 0
        launch_ns = self._launch_ns
        # (uid, priority, plan, scale, deadline_ns, loop_timeout_ns): by position, which
        # costs half what keywords do in an attrs ``__init__`` of 20 fields.
        job = Job(self.uid, self.priority, self.plan, device.jitter(), deadline_ns, loop_timeout_ns)
        await kernel.sync()
        now = kernel.clock_ns
        if deadline_ns is not None and spec.deadline_policy is DeadlinePolicy.ABORT:
            # Refuse before starting when the driver's own estimate cannot make it:
            # PERSISTENT if even an idle device could not, TRANSIENT if a busy one cannot.
            idle_ns = launch_ns + us(self.plan.total_ns * device.slowdown)
            if now + idle_ns > deadline_ns:
                device.stats.rejected_persistent += 1
                device.stats.refused_by_uid[self.uid] += 1
                return ErrorStatus.MISSED_DEADLINE_PERSISTENT, 0
            if now + device.backlog_ns(job) + idle_ns > deadline_ns:
                device.stats.rejected_transient += 1
                device.stats.refused_by_uid[self.uid] += 1
                return ErrorStatus.MISSED_DEADLINE_TRANSIENT, 0
        if device.all_units_busy:
            waiting = device.queue_length
            stats = device.stats
            if waiting > stats.longest_queue_met:
                stats.longest_queue_met = waiting
            if spec.queue_limit is not None and waiting >= spec.queue_limit:
                return ErrorStatus.RESOURCE_EXHAUSTED_TRANSIENT, 0
        status = await device.execute(job, launch_ns=launch_ns)
        if status is _NONE and service.failure_probability and service.injected_failure():
            status = ErrorStatus.GENERAL_FAILURE
        return status, kernel.clock_ns - now

    def output_shapes(self) -> tuple[OutputShape, ...]:
        """The shapes of the model's outputs (what a successful execution reports)."""
        shapes = self._output_shapes
        if shapes is None:  # the model is a frozen value: its shapes never change
            main = self.model.main
            shapes = tuple(OutputShape(main.operands[i].dimensions) for i in main.output_indexes)
            self._output_shapes = shapes
        return shapes

    async def _execute_async(
        self,
        request: Request,
        measure: MeasureTiming,
        deadline_ns: int | None,
        loop_timeout_ns: int | None,
        callback: CallbackRef | None,
        version: HalVersion,
    ) -> ErrorStatus:
        """execute / execute_1_2 / execute_1_3: launch on a worker thread, answer by callback."""
        service = self.service
        tracer, kernel = service.tracer, service.kernel
        with tracer.section(_EXECUTE_BASE_MARK):
            entered = kernel.task_now_ns()
            kernel.work(VALIDATE_NS_PER_OP)
            if callback is None:
                return ErrorStatus.INVALID_ARGUMENT
            ref, method = callback, version.notify_method
            # The worker thread does not run in the caller's context: it is handed the
            # execution's split (its wait for the worker is device queue, the callback IPC).
            split = kernel.split

            def notify(
                status: ErrorStatus, shapes: tuple[OutputShape, ...], timing: Timing
            ) -> None:
                service._notify(
                    ref, "IExecutionCallback", method, status, shapes, timing, split=split
                )

            error = self.check_request(request, deadline_ns)
            if error is ErrorStatus.INVALID_ARGUMENT:
                # The launch's own status is the answer: the client does not wait for this
                # callback, so its delivery is not on the execution's path.
                service._notify(ref, "IExecutionCallback", method, error, (), NO_TIMING)
                return error
            if error is not None:
                notify(error.downgraded(version), (), NO_TIMING)
                return ErrorStatus.NONE
            await kernel.sync()
            launched_ns = kernel.clock_ns

            async def task() -> None:
                outer, kernel.split = kernel.split, split
                try:
                    if split is not None:
                        split.device_queue_ns += kernel.task_now_ns() - launched_ns
                    with tracer.section(_ASYNC_MARKS[1]) as section:
                        memories: tuple[ManagedBuffer | None, ...] = ()
                        if request.pool_tokens or request.pool_names:
                            error, memories = self.device_memories(request)
                            if error is not None:
                                notify(error, (), NO_TIMING)
                                return
                        section.switch(_ASYNC_MARKS[0])
                        status, on_device = await self.run_request(
                            request, memories, deadline_ns, loop_timeout_ns
                        )
                    shapes = self.output_shapes() if status is ErrorStatus.NONE else ()
                    timing = measured_timing(measure, status, on_device, entered, kernel.clock_ns)
                    notify(status.downgraded(version), shapes, timing)
                finally:
                    kernel.split = outer

            if not service._launch(task):
                notify(ErrorStatus.GENERAL_FAILURE, (), NO_TIMING)
                return ErrorStatus.GENERAL_FAILURE
            return ErrorStatus.NONE

    async def _execute_sync(
        self,
        request: Request,
        measure: MeasureTiming,
        deadline_ns: int | None,
        loop_timeout_ns: int | None,
        version: HalVersion,
    ) -> tuple[ErrorStatus, tuple[OutputShape, ...], Timing]:
        """executeSynchronously(_1_3): run inside the call, answer with the return value."""
        tracer, kernel = self.service.tracer, self.service.kernel
        with tracer.section(_SYNC_MARKS[0]) as section:
            entered = kernel.task_now_ns()
            kernel.work(VALIDATE_NS_PER_OP)
            error = self.check_request(request, deadline_ns)
            memories: tuple[ManagedBuffer | None, ...] = ()
            if error is None and (request.pool_tokens or request.pool_names):
                error, memories = self.device_memories(request)
            if error is not None:
                return error.downgraded(version), (), NO_TIMING
            section.switch(_SYNC_MARKS[1])
            section.switch(_SYNC_MARKS[0])
            status, on_device = await self.run_request(
                request, memories, deadline_ns, loop_timeout_ns
            )
            timing = measured_timing(measure, status, on_device, entered, kernel.task_now_ns())
            if status is _NONE:  # (nothing to downgrade)
                return status, self._output_shapes or self.output_shapes(), timing
            return status.downgraded(version), (), timing
