"""The AIDL family's IPreparedModel and IFencedExecutionCallback over the HIDL family's.

What ``IPreparedModelCallback::notify`` hands an AIDL client (``_service`` wraps its
prepared models in them); ``_aidl`` has the AIDL IDevice and the family's rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs

from nnemu.hal import (
    AidlTiming,
    ErrorStatus,
    ExecutionResult,
    ISyncFence,
    MeasureTiming,
    Model,
    Request,
    ServiceSpecificError,
    check_duration,
    optional_ns,
)
from nnemu.ipc import Endpoint

if TYPE_CHECKING:
    from nnemu.driver._prepared import FencedCallback, FencedResult, PreparedModel

_MEASURE = {True: MeasureTiming.YES, False: MeasureTiming.NO}


@attrs.frozen
class AidlFencedResult:
    """AIDL FencedExecutionResult (its ``syncFence`` and ``callback``, one object) over the
    HIDL family's fenced callback."""

    result: FencedResult | FencedCallback

    @property
    def syncFence(self) -> ISyncFence | None:
        """The sync fence the work signals (None: the work was done inside the call)."""
        return self.result.sync_fence

    def getExecutionInfo(self) -> tuple[AidlTiming, AidlTiming, ErrorStatus]:
        """timingLaunched, timingFenced (ns, -1 unknown) and the execution's status."""
        status, launched, fenced = self.result.get_execution_info()
        return AidlTiming.from_hidl(launched), AidlTiming.from_hidl(fenced), status


class AidlPreparedModel:
    """AIDL IPreparedModel of a prepared model (what ``IPreparedModelCallback::notify`` hands)."""

    def __init__(self, prepared: PreparedModel) -> None:
        self.prepared = prepared
        self.endpoint: Endpoint = prepared.service.endpoint
        self.model: Model = prepared.model

    def release(self) -> None:
        """The client dropped its last reference: the driver frees the model's memory."""
        self.prepared.release()

    async def executeSynchronously(
        self,
        request: Request,
        measure_timing: bool,
        deadline_ns: int,
        loop_timeout_duration_ns: int,
    ) -> ExecutionResult | ServiceSpecificError:
        """executeSynchronously: the work runs inside the call, as the sample driver's."""
        refused = check_duration(deadline_ns) or check_duration(loop_timeout_duration_ns)
        if refused is not None:
            return refused
        prepared = self.prepared
        status, shapes, timing = await prepared._execute_sync(
            request,
            _MEASURE[measure_timing],
            optional_ns(deadline_ns),
            optional_ns(loop_timeout_duration_ns),
            prepared.version,
        )
        if status is ErrorStatus.NONE:
            return ExecutionResult(True, shapes, AidlTiming.from_hidl(timing))
        if status is ErrorStatus.OUTPUT_INSUFFICIENT_SIZE:
            return ExecutionResult(False, shapes, AidlTiming())
        return ServiceSpecificError(status)

    async def executeFenced(
        self,
        request: Request,
        wait_for: Sequence[ISyncFence | None],
        measure_timing: bool,
        deadline_ns: int,
        loop_timeout_duration_ns: int,
        duration_ns: int,
    ) -> AidlFencedResult | ServiceSpecificError:
        """executeFenced: the FencedExecutionResult (its fence and callback), or the error."""
        refused = (
            check_duration(deadline_ns)
            or check_duration(loop_timeout_duration_ns)
            or check_duration(duration_ns)
        )
        if refused is not None:
            return refused
        status, result = await self.prepared.executeFenced(
            request,
            wait_for,
            _MEASURE[measure_timing],
            optional_ns(deadline_ns),
            optional_ns(loop_timeout_duration_ns),
            optional_ns(duration_ns),
        )
        if status is not ErrorStatus.NONE or result is None:
            return ServiceSpecificError(status)
        return AidlFencedResult(result)
