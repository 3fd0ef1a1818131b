"""The NNAPI runtime: NDK-shaped Model/Compilation/Execution/Event, discovery, partitioning, fallback."""

from nnemu.runtime._devices import CPU_DEVICE_NAME, RuntimeDevice, VersionedIDevice
from nnemu.runtime._ndk import Burst, Compilation, Event, Execution, ModelBuilder, Runtime
from nnemu.runtime._plan import Step, choose_devices, make_steps, submodel

__all__ = [
    "CPU_DEVICE_NAME",
    "Burst",
    "Compilation",
    "Event",
    "Execution",
    "ModelBuilder",
    "Runtime",
    "RuntimeDevice",
    "Step",
    "VersionedIDevice",
    "choose_devices",
    "make_steps",
    "submodel",
]
