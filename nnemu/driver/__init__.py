"""Emulated driver services: IDevice / IPreparedModel for HAL 1.0-1.3, and their devices.

Rooms: ``_service`` (the driver process and IDevice), ``_prepared`` (IPreparedModel and
its executions), ``_burst`` (IBurstContext), ``_cost`` (the cost model), ``_device``
(compute units, scheduling, preemption, deadlines) and ``_hidl`` (what both sides share).
"""

from nnemu.driver._burst import BURST_POLL_NS, FMQ_TRANSFER_NS, BurstContext
from nnemu.driver._cost import ComputePlan, capabilities_from, compute_plan
from nnemu.driver._device import Device, DeviceStats, Job
from nnemu.driver._hidl import VALIDATE_NS_PER_OP, CallbackRef
from nnemu.driver._prepared import FencedResult, PreparedModel
from nnemu.driver._service import CACHE_TOKEN_BYTES, DriverService
from nnemu.sim import us  # re-exported: drivers and apps round their durations with it

__all__ = [
    "BURST_POLL_NS",
    "CACHE_TOKEN_BYTES",
    "FMQ_TRANSFER_NS",
    "VALIDATE_NS_PER_OP",
    "BurstContext",
    "CallbackRef",
    "ComputePlan",
    "Device",
    "DeviceStats",
    "DriverService",
    "FencedResult",
    "Job",
    "PreparedModel",
    "capabilities_from",
    "compute_plan",
    "us",
]
