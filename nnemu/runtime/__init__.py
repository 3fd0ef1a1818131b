"""The NNAPI runtime: NDK-shaped Model/Compilation/Execution/Event, discovery, partitioning, fallback.

Rooms: ``_runtime`` (the process's runtime, discovery, models, the NDK call),
``_compilation`` (compilations and bursts), ``_execution`` (executions and
events), ``_canonical`` (the one interface to a driver of any HAL family),
``_versioned`` (the HIDL family's adapters to it, and client callbacks), ``_aidl``
(the AIDL family's adapters),
``_devices`` (the device objects), ``_plan`` (partitioning), ``_memory`` (memory
descriptors, memories and their copies) and ``_buffers`` (a driver's IBuffer as the
runtime calls it).  Drivers are
reached only through ``nnemu.hal``'s interfaces, never ``nnemu.driver``.
"""

from nnemu.runtime._canonical import CanonicalDevice, CanonicalPreparedModel
from nnemu.runtime._compilation import Burst, Compilation
from nnemu.runtime._devices import CPU_DEVICE_NAME, RuntimeDevice
from nnemu.runtime._execution import Event, Execution
from nnemu.runtime._memory import (
    AHardwareBufferDesc,
    AHardwareBufferFormat,
    Memory,
    MemoryDesc,
    MemoryKind,
)
from nnemu.runtime._plan import Step, choose_devices, make_steps, submodel
from nnemu.runtime._runtime import API_CALL_NS, PER_OP_NS, ModelBuilder, Runtime, build_request
from nnemu.runtime._versioned import (
    ExecutionCallback,
    PreparedModelCallback,
    VersionedIDevice,
    VersionedIPreparedModel,
)

__all__ = [
    "API_CALL_NS",
    "CPU_DEVICE_NAME",
    "PER_OP_NS",
    "AHardwareBufferDesc",
    "AHardwareBufferFormat",
    "Burst",
    "CanonicalDevice",
    "CanonicalPreparedModel",
    "Compilation",
    "Event",
    "Execution",
    "ExecutionCallback",
    "Memory",
    "MemoryDesc",
    "MemoryKind",
    "ModelBuilder",
    "PreparedModelCallback",
    "Runtime",
    "RuntimeDevice",
    "Step",
    "VersionedIDevice",
    "VersionedIPreparedModel",
    "build_request",
    "choose_devices",
    "make_steps",
    "submodel",
]
