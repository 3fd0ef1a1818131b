"""The AIDL family's IBurst and IExecution (v4): binder objects over an AidlPreparedModel.

As the AIDL sample driver (``packages/modules/NeuralNetworks/driver/sample_aidl/
SampleDriverAidl.cpp``): ``SampleBurst::executeSynchronously`` checks the memory identifier
tokens (one per request pool, each >= -1, else INVALID_ARGUMENT), allows one execution at a
time (GENERAL_FAILURE for a second) and hands the request to the prepared model's
``executeSynchronously``; ``releaseMemoryResource`` refuses a token below -1 and otherwise
has nothing to release (the sample driver caches no mapping).  Unlike the HIDL family's
``IBurstContext`` there is no fast message queue and no server thread: each execution is a
binder call (``AIDL::ndk::IBurst::executeSynchronously``) served on a binder thread.

An IExecution (``IPreparedModel::createReusableExecution``, v4) holds one request and
ExecutionConfig; each ``executeSynchronously(deadlineNs)`` / ``executeFenced`` runs them
again through the prepared model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from nnemu.hal import (
    ErrorStatus,
    ExecutionConfig,
    ExecutionResult,
    HalVersion,
    Request,
    ServiceSpecificError,
    UnknownTransaction,
    check_duration,
    check_hints,
)

if TYPE_CHECKING:
    from nnemu.hal import (
        IAidlBurst,
        IAidlExecution,
        IAidlFencedExecutionCallback,
        IAidlPreparedModel,
        ISyncFence,
    )
    from nnemu.ipc import Endpoint


def check_config(config: ExecutionConfig) -> ServiceSpecificError | None:
    """An ExecutionConfig's own arguments: its loop timeout (-1 or >= 0) and its hints (no
    token twice); INVALID_ARGUMENT otherwise."""
    refused = check_duration(config.loop_timeout_duration_ns)
    if refused is None and check_hints(config.execution_hints) is not None:
        refused = ServiceSpecificError(ErrorStatus.INVALID_ARGUMENT)
    return refused


class AidlBurst:
    """AIDL IBurst of a prepared model (``SampleBurst``) of a driver of AIDL ``version``."""

    def __init__(self, prepared: IAidlPreparedModel[Endpoint], version: HalVersion) -> None:
        self.prepared = prepared
        self.version = version
        self.in_flight = False
        """An execution is running on this burst."""
        self.released: list[int] = []
        """The tokens ``releaseMemoryResource`` was told of, in order."""

    async def executeSynchronously(
        self,
        request: Request,
        memory_identifier_tokens: Sequence[int],
        measure_timing: bool,
        deadline_ns: int,
        loop_timeout_duration_ns: int,
    ) -> ExecutionResult | ServiceSpecificError:
        """IBurst::executeSynchronously."""
        if len(memory_identifier_tokens) != len(request.pool_sizes) or any(
            token < -1 for token in memory_identifier_tokens
        ):
            return ServiceSpecificError(ErrorStatus.INVALID_ARGUMENT)
        if self.in_flight:
            return ServiceSpecificError(ErrorStatus.GENERAL_FAILURE)
        self.in_flight = True
        try:
            return await self.prepared.executeSynchronously(
                request, measure_timing, deadline_ns, loop_timeout_duration_ns
            )
        finally:
            self.in_flight = False

    async def executeSynchronouslyWithConfig(
        self,
        request: Request,
        memory_identifier_tokens: Sequence[int],
        config: ExecutionConfig,
        deadline_ns: int,
    ) -> ExecutionResult | ServiceSpecificError | UnknownTransaction:
        """IBurst::executeSynchronouslyWithConfig (v4)."""
        if self.version is not HalVersion.AIDL_V4:
            return UnknownTransaction()
        refused = check_config(config)
        if refused is not None:
            return refused
        return await self.executeSynchronously(
            request,
            memory_identifier_tokens,
            config.measure_timing,
            deadline_ns,
            config.loop_timeout_duration_ns,
        )

    async def releaseMemoryResource(
        self, memory_identifier_token: int
    ) -> ServiceSpecificError | None:
        """IBurst::releaseMemoryResource."""
        if memory_identifier_token < -1:
            return ServiceSpecificError(ErrorStatus.INVALID_ARGUMENT)
        self.released.append(memory_identifier_token)
        return None


class AidlExecution:
    """AIDL IExecution (v4): a reusable execution of one request and ExecutionConfig."""

    def __init__(
        self, prepared: IAidlPreparedModel[Endpoint], request: Request, config: ExecutionConfig
    ) -> None:
        self.prepared = prepared
        self.request = request
        self.config = config

    async def executeSynchronously(
        self, deadline_ns: int
    ) -> ExecutionResult | ServiceSpecificError:
        """IExecution::executeSynchronously."""
        config = self.config
        return await self.prepared.executeSynchronously(
            self.request, config.measure_timing, deadline_ns, config.loop_timeout_duration_ns
        )

    async def executeFenced(
        self, wait_for: Sequence[ISyncFence | None], deadline_ns: int, duration_ns: int
    ) -> IAidlFencedExecutionCallback | ServiceSpecificError:
        """IExecution::executeFenced."""
        config = self.config
        return await self.prepared.executeFenced(
            self.request,
            wait_for,
            config.measure_timing,
            deadline_ns,
            config.loop_timeout_duration_ns,
            duration_ns,
        )


if TYPE_CHECKING:

    def _implements(
        burst: AidlBurst, execution: AidlExecution
    ) -> tuple[IAidlBurst, IAidlExecution]:
        """The AIDL interface each class implements: mypy checks each against it here."""
        return burst, execution
