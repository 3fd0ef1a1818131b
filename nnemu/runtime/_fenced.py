"""A fenced execution's plan: the R runtime's ``startComputeFenced`` over real sync fences.

``Execution.start_compute_with_dependencies`` collects the sync fences of its dependencies
and hands them here (docs/hal-semantics.md §1.7).  Each step waits for the fence of the step
before it (the first for the dependencies' fences): a driver step passes them to
``executeFenced``, the CPU waits for them itself.  A failed step means the whole model on the
CPU, once the input fences have signalled (an input fence in error: OP_FAILED, no fallback).
The last step's fence, when its driver returned one, is the execution's: the event waits on
it, and the execution completes when it signals.  (``ExecutionBuilder.cpp``
``startComputeFenced`` / ``computeFenced``, ``Manager.cpp`` ``DriverPreparedModel::
executeFenced`` / ``CpuPreparedModel::executeFenced``, android11-release.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Protocol

from nnemu.hal import (
    ErrorStatus,
    FenceState,
    ISyncFence,
    MeasureTiming,
    Model,
    Request,
    ResultCode,
    Timing,
    code_to_status,
    status_to_code,
)
from nnemu.ipc import DeadObject
from nnemu.runtime._canonical import (
    CanonicalExecution,
    CanonicalPreparedModel,
    FencedLaunch,
)
from nnemu.runtime._compilation import Compilation
from nnemu.runtime._devices import RuntimeDevice
from nnemu.runtime._memory import MemoryArgument, memory_request
from nnemu.runtime._runtime import API_CALL_NS, PER_OP_NS, Runtime
from nnemu.tracer import Layer, Phase, mark

_EXECUTE_FENCED = "DriverPreparedModel::executeFenced"
_IO_MARK: Final = mark(Layer.RUNTIME, Phase.INPUTS_AND_OUTPUTS, _EXECUTE_FENCED)
_IPC_MARK: Final = mark(Layer.IPC, Phase.EXECUTION, _EXECUTE_FENCED)
_RESULTS_MARK: Final = mark(Layer.RUNTIME, Phase.RESULTS, _EXECUTE_FENCED)
_NO_ERROR: Final = ResultCode.NO_ERROR
_SIGNALED: Final = FenceState.SIGNALED


class Execution(Protocol):
    """What of ``nnemu.runtime.Execution`` a fenced plan uses (a Protocol: ``_execution``
    imports this module)."""

    compilation: Compilation
    runtime: Runtime
    measure: bool
    deadline_ns: int | None
    loop_timeout_ns: int
    outputs_in_memory: bool
    timing: Timing | None
    timing_fenced: Timing | None
    fell_back: bool
    memories: dict[tuple[bool, int], MemoryArgument]
    reusable: bool

    async def reused_step(
        self, prepared: CanonicalPreparedModel, request: Request, measure: MeasureTiming, step: int
    ) -> tuple[ErrorStatus | DeadObject, CanonicalExecution | None]: ...

    def _sized(self) -> ResultCode: ...

    async def _run_on_cpu(self, model: Model) -> ResultCode: ...

    async def _full_cpu_fallback(self) -> ResultCode: ...


async def compute_fenced(
    execution: Execution, wait_for: tuple[ISyncFence, ...], duration_ns: int | None
) -> tuple[ResultCode, FencedLaunch | None]:
    """Run ``execution``'s plan after ``wait_for``: its code, and the last driver step's
    fence and callback when that step's work is still under way (``startComputeFenced``)."""
    compilation = execution.compilation
    steps = compilation.steps
    simple = len(steps) == 1
    # allowFallback &= !plan.isSimpleCpu()
    allowed = compilation.fallback_allowed and not (simple and steps[0].device.is_cpu)
    waiting = wait_for
    launch: FencedLaunch | None = None
    for index, step in enumerate(steps):
        if step.device.is_cpu:
            code = await _cpu_step(execution, step.model, waiting)
            launch = None
        else:
            code, launch = await _driver_step(
                execution, compilation.prepared[index], step.device, waiting, duration_ns
            )
        waiting = (launch.sync_fence,) if launch is not None else ()
        if code is _NO_ERROR:
            continue
        if not allowed or (step.device.is_cpu and (simple or code.is_deadline_miss)):
            # No fallback; a CPU step of a one-step plan is not redone; the runtime's own
            # control-flow interpreter's loop timeout (a CPU step's miss) is never retried.
            return _app_visible(code), None
        break
    else:
        if launch is None:
            return execution._sized(), None  # finishWithoutSyncFence
        return _NO_ERROR, launch
    # The full fallback waits for the input fences first (``syncWait(fd, -1)``).
    for fence in wait_for:
        if await fence.wait() is not _SIGNALED:
            return ResultCode.OP_FAILED, None
    execution.fell_back = True
    return await execution._full_cpu_fallback(), None


async def _cpu_step(
    execution: Execution, model: Model, wait_for: Sequence[ISyncFence]
) -> ResultCode:
    """``CpuPreparedModel::executeFenced``: wait for the fences, then run on the CPU."""
    for fence in wait_for:
        if await fence.wait() is not _SIGNALED:
            return ResultCode.OP_FAILED
    return await execution._run_on_cpu(model)


async def _driver_step(
    execution: Execution,
    prepared: CanonicalPreparedModel,
    device: RuntimeDevice,
    wait_for: tuple[ISyncFence, ...],
    duration_ns: int | None,
) -> tuple[ResultCode, FencedLaunch | None]:
    """``DriverPreparedModel::executeFenced``: one step's executeFenced over the binder.

    With the outputs in pointers (``setOutput``, nnemu's only kind) the runtime copies them
    back, so it waits in the results phase for a fence the driver returned before the call
    returns (a fence in error: OP_FAILED); with ``outputs_in_memory`` it returns at once.
    """
    runtime = execution.runtime
    kernel = runtime.kernel
    request = runtime.request_for(prepared.model)
    compilation = execution.compilation
    step = next(i for i, p in compilation.prepared.items() if p is prepared)
    if execution.memories:
        request = memory_request(request, execution.memories, compilation, step)
    measure = MeasureTiming.YES if execution.measure else MeasureTiming.NO
    launch: FencedLaunch | None = None
    with runtime.tracer.section(_IO_MARK) as section:
        kernel.work(PER_OP_NS * (len(request.inputs) + len(request.outputs)))
        section.switch(_IPC_MARK)
        try:
            if execution.reusable:  # through the step's reusable execution
                status, reused = await execution.reused_step(prepared, request, measure, step)
                if reused is not None:
                    answer = await reused.compute_fenced(
                        execution.deadline_ns, duration_ns, wait_for
                    )
                else:
                    answer = status, None, None, None
            else:
                answer = await prepared.execute_fenced(
                    request,
                    measure,
                    execution.deadline_ns,
                    execution.loop_timeout_ns,
                    duration_ns,
                    wait_for,
                )
            status, timing, timing_fenced, launch = answer
        finally:
            # The results phase is charged however the call ended.
            section.switch(_RESULTS_MARK)
            kernel.work(API_CALL_NS)
        if (
            launch is not None
            and not execution.outputs_in_memory
            and await launch.sync_fence.wait() is not _SIGNALED
        ):
            return ResultCode.OP_FAILED, None
    execution.timing = timing
    execution.timing_fenced = timing_fenced
    if isinstance(status, DeadObject):
        runtime.forget(device)
        return ResultCode.DEAD_OBJECT, None
    return status_to_code(status), launch


def _app_visible(code: ResultCode) -> ResultCode:
    """What a failed step becomes for the app: code → status → code (DEAD_OBJECT → OP_FAILED)."""
    return status_to_code(code_to_status(code))
