"""What the IDevice and IPreparedModel sides of a driver share: callbacks, costs, timing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import attrs

from nnemu.hal import NO_TIMING, ErrorStatus, MeasureTiming, Timing
from nnemu.ipc import Endpoint

VALIDATE_NS_PER_OP = 2_000
"""Driver-side model validation cost per operation."""


@attrs.frozen
class CallbackRef:
    """A client's callback object as the driver holds it: where it lives and what to call."""

    endpoint: Endpoint
    """The client process."""
    target: Callable[..., None]
    """The client-side ``notify`` implementation (latches the first call)."""


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
