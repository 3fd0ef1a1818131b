"""What the IDevice and IPreparedModel sides of a driver share: callbacks, costs, timing.

``DriverHost`` and ``ServedModel`` are what a prepared model needs of its driver service
and what a burst needs of its prepared model: the driver's modules meet at them, so that
``_service`` (which builds prepared models) is imported by nothing it imports.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final, Protocol

import structlog

from nnemu.driver._device import Device
from nnemu.hal import (
    NO_TIMING,
    DeviceStatus,
    ErrorStatus,
    HalVersion,
    MeasureTiming,
    OutputShape,
    Request,
    Timing,
)
from nnemu.ipc import CallbackRef, Endpoint, ExecutionSplit
from nnemu.scenario import DeviceSpec
from nnemu.sim import Kernel, SimProcess
from nnemu.tracer import Tracer

if TYPE_CHECKING:
    from nnemu.driver._tracker import BufferTracker, ManagedBuffer

__all__ = ["VALIDATE_NS_PER_OP", "CallbackRef", "DriverHost", "ServedModel", "measured_timing"]

VALIDATE_NS_PER_OP = 2_000
"""Driver-side model validation cost per operation."""


class DriverHost(Protocol):
    """The driver service as its prepared models and bursts use it (``DriverService``)."""

    spec: DeviceSpec
    version: HalVersion
    kernel: Kernel
    tracer: Tracer
    endpoint: Endpoint
    process: SimProcess
    device: Device
    status: DeviceStatus
    log: structlog.typing.FilteringBoundLogger
    memory_used: int
    buffers: BufferTracker
    bursts: int
    failure_probability: float

    def injected_failure(self) -> bool: ...

    def trace_memory(self) -> None: ...

    def _launch(self, job: Callable[[], Awaitable[None]]) -> bool: ...

    def _notify(
        self,
        callback: CallbackRef,
        iface: str,
        method: str,
        *args: Any,
        split: ExecutionSplit | None = None,
    ) -> None: ...


class ServedModel(Protocol):
    """A prepared model as a burst serves it (``PreparedModel``)."""

    service: DriverHost

    def check_request(self, request: Request, deadline_ns: int | None) -> ErrorStatus | None: ...

    def device_memories(
        self, request: Request
    ) -> tuple[ErrorStatus | None, tuple[ManagedBuffer | None, ...]]: ...

    async def compute(
        self, deadline_ns: int | None, loop_timeout_ns: int | None
    ) -> tuple[ErrorStatus, int]: ...

    def output_shapes(self) -> tuple[OutputShape, ...]: ...


_MEASURE_YES: Final = MeasureTiming.YES
_NONE: Final = ErrorStatus.NONE
"""``MeasureTiming.YES`` and ``ErrorStatus.NONE`` as module constants: ``measured_timing`` runs
once an execution, and on Python 3.11 an enum member's lookup on its class costs ~60 ns
(bench/README.md)."""


def measured_timing(
    measure: MeasureTiming, status: ErrorStatus, on_device_ns: int, entered_ns: int, now_ns: int
) -> Timing:
    """The Timing a driver reports: device and driver time in µs, or NO_TIMING.

    Only a successful execution that asked for it (``MeasureTiming.YES``) is timed
    (docs/hal-semantics.md §1.1, §1.3): ``timeOnDevice`` is the time on the device,
    ``timeInDriver`` the time from entering the driver (``entered_ns``) to ``now_ns``.
    """
    if measure is not _MEASURE_YES or status is not _NONE:
        return NO_TIMING
    return Timing(on_device_ns // 1000, (now_ns - entered_ns) // 1000)
