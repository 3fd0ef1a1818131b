"""The AIDL family's IBurst and IExecution behind the canonical interface.

As ``hardware/interfaces/neuralnetworks/aidl/utils/src/Burst.cpp`` and ``PreparedModel.cpp``
(Android 14): a burst execution is ``IBurst::executeSynchronously`` over the binder
(``executeSynchronouslyWithConfig`` on a v4 driver), with one memory identifier token per
request pool -- the identifier of a shared memory the burst cached, ``-1`` for any other
pool (the runtime's own pools for pointer arguments, ``convertRequestFromPointerToShared``,
and device memory).  The runtime caches each shared ``ANeuralNetworksMemory`` of an
execution (Android 12+ ``Manager.cpp`` ``DriverPreparedModel::execute``: ``cacheMemory``,
the memory holding the cache entry); identifiers count from 0 per burst
(``MemoryCache::getOrCacheMemory``), and freeing the memory while the burst lives calls
``IBurst::releaseMemoryResource(identifier)`` (``tryFreeMemory``).  Of nnemu's memories
the AHardwareBuffers are request pools of their own, so they are the ones cached.  A v4
driver's reusable execution is an IExecution
(``IPreparedModel::createReusableExecution`` once, then ``IExecution::executeSynchronously``
or ``executeFenced`` per computation).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Final

from nnemu.hal import (
    NO_DEADLINE,
    ErrorStatus,
    ExecutionConfig,
    ExecutionResult,
    FenceState,
    HalVersion,
    IAidlBurst,
    IAidlExecution,
    IAidlFencedExecutionCallback,
    ISyncFence,
    MeasureTiming,
    Request,
    ServiceSpecificError,
    Timing,
    UnknownTransaction,
)
from nnemu.ipc import DEAD, Binder, DeadObject, Endpoint
from nnemu.runtime._canonical import CachedMemory, FencedAnswer, FencedLaunch

_NO_TOKEN: Final = -1
"""The memory identifier token of a request pool the burst has not cached."""


def ns_or_none(value: int | None) -> int:
    """The runtime's optional nanoseconds as AIDL passes them: ``-1`` for none."""
    return NO_DEADLINE if value is None else value


def execution_config(measure: MeasureTiming, loop_timeout_ns: int) -> ExecutionConfig:
    """The ExecutionConfig a v4 call carries: the runtime's measure and loop timeout, no hints
    (``aidl::utils`` from feature level 8)."""
    return ExecutionConfig(
        measure_timing=measure is MeasureTiming.YES, loop_timeout_duration_ns=loop_timeout_ns
    )


def execution_answer(
    answer: ExecutionResult | ServiceSpecificError | UnknownTransaction | DeadObject,
) -> tuple[ErrorStatus | DeadObject, Timing | None]:
    """A synchronous AIDL execution's answer as the runtime's (status, timing): a
    service-specific error's code is the status; ``outputSufficientSize`` false is
    OUTPUT_INSUFFICIENT_SIZE; an unknown transaction a GENERAL_FAILURE."""
    if isinstance(answer, DeadObject):
        return DEAD, None
    if isinstance(answer, ServiceSpecificError):
        return answer.status, None
    if isinstance(answer, UnknownTransaction):
        return ErrorStatus.GENERAL_FAILURE, None
    if not answer.output_sufficient_size:
        return ErrorStatus.OUTPUT_INSUFFICIENT_SIZE, None
    return ErrorStatus.NONE, answer.timing.to_hidl()


def fenced_launch_answer(
    answer: IAidlFencedExecutionCallback | ServiceSpecificError | UnknownTransaction | DeadObject,
) -> FencedAnswer:
    """A fenced AIDL execution's answer as the runtime's: the status and the callback's two
    timings, or the result's fence and callback when its work is still under way."""
    if isinstance(answer, DeadObject):
        return DEAD, None, None, None
    if isinstance(answer, ServiceSpecificError):
        return answer.status, None, None, None
    if isinstance(answer, UnknownTransaction):
        return ErrorStatus.GENERAL_FAILURE, None, None, None
    if answer.syncFence is not None:
        return ErrorStatus.NONE, None, None, FencedLaunch(answer.syncFence, partial(_info, answer))
    status, launched, fenced = _info(answer)
    if status is not ErrorStatus.NONE:
        return status, None, None, None
    return status, launched, fenced, None


def left_pending(
    answer: IAidlFencedExecutionCallback | ServiceSpecificError | UnknownTransaction | DeadObject,
) -> bool:
    """Whether an executeFenced answer's fence has yet to signal (its work under way)."""
    if isinstance(answer, ServiceSpecificError | UnknownTransaction | DeadObject):
        return False
    return answer.syncFence is not None and answer.syncFence.poll() is FenceState.ACTIVE


def _info(callback: IAidlFencedExecutionCallback) -> tuple[ErrorStatus, Timing, Timing]:
    """An AIDL fenced callback's getExecutionInfo as the runtime's (status first, HIDL timing)."""
    launched, fenced, status = callback.getExecutionInfo()
    return status, launched.to_hidl(), fenced.to_hidl()


class AidlIBurst:
    """An AIDL IBurst behind the canonical interface (``aidl::utils::Burst``)."""

    def __init__(
        self, burst: IAidlBurst, *, version: HalVersion, binder: Binder, endpoint: Endpoint
    ) -> None:
        self.burst = burst
        self.version = version
        self.endpoint = endpoint
        self._binder = binder
        self._iface = version.interface("IBurst")
        self._identifiers: dict[CachedMemory, int] = {}
        """``MemoryCache``: the identifier of each memory cached, while it is held."""
        self.alive = True
        """The ANeuralNetworksBurst is not freed (its cache can release)."""

    def close(self) -> None:
        """ANeuralNetworksBurst_free: the cache goes; a memory freed later releases nothing."""
        self.alive = False

    def _identifier(self, memory: CachedMemory) -> int:
        """``cacheMemory``: the memory's identifier, the next unused one the first time."""
        identifier = self._identifiers.get(memory)
        if identifier is None:
            identifier = self._identifiers[memory] = len(self._identifiers)
            memory.hold(partial(self._release, memory, identifier))
        return identifier

    async def _release(self, memory: CachedMemory, identifier: int) -> None:
        """``MemoryCache::tryFreeMemory``: ``IBurst::releaseMemoryResource`` while alive."""
        if not self.alive:
            return
        del self._identifiers[memory]
        await self._binder.call(
            self.endpoint,
            self._iface,
            "releaseMemoryResource",
            self.burst.releaseMemoryResource,
            identifier,
        )

    async def execute(
        self,
        request: Request,
        measure: MeasureTiming,
        deadline_ns: int | None,
        loop_timeout_ns: int,
        pool_memories: Sequence[CachedMemory | None] = (),
    ) -> tuple[ErrorStatus | DeadObject, Timing | None]:
        """``Burst::execute``: one synchronous execution through the IBurst, a cached
        memory's pool named by its identifier."""
        tokens = tuple(
            self._identifier(memory) if memory is not None else _NO_TOKEN
            for memory in pool_memories
        ) + (_NO_TOKEN,) * (len(request.pool_sizes) - len(pool_memories))
        measured = measure is MeasureTiming.YES
        if self.version is HalVersion.AIDL_V4:
            config = execution_config(measure, loop_timeout_ns)
            answer = await self._binder.call(
                self.endpoint,
                self._iface,
                "executeSynchronouslyWithConfig",
                self.burst.executeSynchronouslyWithConfig,
                request,
                tokens,
                config,
                ns_or_none(deadline_ns),
            )
        else:
            answer = await self._binder.call(
                self.endpoint,
                self._iface,
                "executeSynchronously",
                self.burst.executeSynchronously,
                request,
                tokens,
                measured,
                ns_or_none(deadline_ns),
                loop_timeout_ns,
            )
        return execution_answer(answer)


class AidlIExecution:
    """An AIDL v4 IExecution behind the canonical interface (``aidl::utils::Execution``)."""

    def __init__(
        self,
        execution: IAidlExecution,
        *,
        version: HalVersion,
        binder: Binder,
        endpoint: Endpoint,
    ) -> None:
        self.execution = execution
        self.endpoint = endpoint
        self._binder = binder
        self._iface = version.interface("IExecution")

    async def compute(
        self, deadline_ns: int | None
    ) -> tuple[ErrorStatus | DeadObject, Timing | None]:
        """``IExecution::executeSynchronously``."""
        answer = await self._binder.call(
            self.endpoint,
            self._iface,
            "executeSynchronously",
            self.execution.executeSynchronously,
            ns_or_none(deadline_ns),
        )
        return execution_answer(answer)

    async def compute_fenced(
        self, deadline_ns: int | None, duration_ns: int | None, wait_for: Sequence[ISyncFence]
    ) -> FencedAnswer:
        """``IExecution::executeFenced`` after ``wait_for``."""
        answer = await self._binder.call(
            self.endpoint,
            self._iface,
            "executeFenced",
            partial(
                self.execution.executeFenced,
                tuple(wait_for),
                ns_or_none(deadline_ns),
                ns_or_none(duration_ns),
            ),
            reply_overlaps=left_pending,
        )
        return fenced_launch_answer(answer)
