"""Emulated driver services: IDevice / IPreparedModel for HAL 1.0-1.3, and their devices."""

from nnemu.driver._device import ComputePlan, Device, DeviceStats, Job
from nnemu.driver._service import (
    CACHE_TOKEN_BYTES,
    FMQ_TRANSFER_NS,
    BurstContext,
    CallbackRef,
    DriverService,
    FencedResult,
    PreparedModel,
    capabilities_from,
    compute_plan,
)
from nnemu.sim import us  # re-exported: drivers and apps round their durations with it

__all__ = [
    "CACHE_TOKEN_BYTES",
    "FMQ_TRANSFER_NS",
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
