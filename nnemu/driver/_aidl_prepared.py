"""The AIDL family's IPreparedModel and IFencedExecutionCallback over the HIDL family's.

What ``IPreparedModelCallback::notify`` hands an AIDL client (``_service`` wraps its
prepared models in them); ``_aidl`` has the AIDL IDevice and the family's rules,
``_aidl_burst`` the IBurst and (v4) IExecution it hands out.  The v4 methods
(``*WithConfig``, ``createReusableExecution``) take an ExecutionConfig and answer as their
v1 counterparts; a service of an older AIDL version answers them STATUS_UNKNOWN_TRANSACTION.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs

from nnemu.driver._aidl_burst import AidlBurst, AidlExecution, check_config
from nnemu.driver._hidl import VALIDATE_NS_PER_OP
from nnemu.hal import (
    AidlTiming,
    ErrorStatus,
    ExecutionConfig,
    ExecutionResult,
    HalVersion,
    ISyncFence,
    MeasureTiming,
    Model,
    Request,
    ServiceSpecificError,
    UnknownTransaction,
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

    async def configureExecutionBurst(self) -> AidlBurst | ServiceSpecificError:
        """configureExecutionBurst: an IBurst (``SampleBurst``) over this prepared model."""
        return AidlBurst(self, self.prepared.version)

    @property
    def _v4(self) -> bool:
        return self.prepared.version is HalVersion.AIDL_V4

    async def executeSynchronouslyWithConfig(
        self, request: Request, config: ExecutionConfig, deadline_ns: int
    ) -> ExecutionResult | ServiceSpecificError | UnknownTransaction:
        """executeSynchronouslyWithConfig (v4): executeSynchronously with the config's
        measureTiming and loop timeout, its hints checked (no token twice) and ignored."""
        if not self._v4:
            return UnknownTransaction()
        refused = check_config(config)
        if refused is not None:
            return refused
        return await self.executeSynchronously(
            request, config.measure_timing, deadline_ns, config.loop_timeout_duration_ns
        )

    async def executeFencedWithConfig(
        self,
        request: Request,
        wait_for: Sequence[ISyncFence | None],
        config: ExecutionConfig,
        deadline_ns: int,
        duration_ns: int,
    ) -> AidlFencedResult | ServiceSpecificError | UnknownTransaction:
        """executeFencedWithConfig (v4): executeFenced with the config's settings."""
        if not self._v4:
            return UnknownTransaction()
        refused = check_config(config)
        if refused is not None:
            return refused
        return await self.executeFenced(
            request,
            wait_for,
            config.measure_timing,
            deadline_ns,
            config.loop_timeout_duration_ns,
            duration_ns,
        )

    async def createReusableExecution(
        self, request: Request, config: ExecutionConfig
    ) -> AidlExecution | ServiceSpecificError | UnknownTransaction:
        """createReusableExecution (v4): the request is validated now (INVALID_ARGUMENT),
        and so is the config; each IExecution call runs them again."""
        if not self._v4:
            return UnknownTransaction()
        refused = check_config(config)
        if refused is not None:
            return refused
        prepared = self.prepared
        prepared.service.kernel.work(VALIDATE_NS_PER_OP)  # (inside the binder call's section)
        if prepared.check_request(request, None) is not None:
            return ServiceSpecificError(ErrorStatus.INVALID_ARGUMENT)
        return AidlExecution(self, request, config)
