"""The runtime's device objects (ANeuralNetworksDevice) and its own CPU device (nnapi-reference).

Discovery (``Runtime`` through ``VersionedIDevice``) builds them: docs/hal-semantics.md §5.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic, TypeVar

import attrs

from nnemu.hal import (
    Capabilities,
    DeviceType,
    ExecutionPreference,
    HalVersion,
    IAidlDevice,
    IAidlPreparedModel,
    IDevice,
    IPreparedModel,
    OperandType,
    PerformanceInfo,
)
from nnemu.ipc import CallbackRef, Endpoint
from nnemu.scenario import CPU_DEVICE_NAME as CPU_DEVICE_NAME  # the one definition

if TYPE_CHECKING:
    from nnemu.ipc import Binder
    from nnemu.sim import Kernel
    from nnemu.tracer import Tracer

CPU_CAPABILITIES = Capabilities(
    relaxed_float32_to_float16_scalar=PerformanceInfo(1.0, 1.0),
    relaxed_float32_to_float16_tensor=PerformanceInfo(1.0, 1.0),
    operand_performance=[
        (kind, PerformanceInfo(1.0, 1.0))
        for kind in OperandType
        if kind not in (OperandType.SUBGRAPH, OperandType.OEM, OperandType.TENSOR_OEM_BYTE)
    ],
)
"""The CPU device's capabilities: 1.0 for everything, by definition of the ratios."""

DriverDevice = IDevice[Endpoint, CallbackRef]
"""A driver service as the runtime reaches it: a HIDL IDevice over the binder."""

DriverPreparedModel = IPreparedModel[Endpoint, CallbackRef]
"""A driver's prepared model as the runtime reaches it: a HIDL IPreparedModel over the binder."""

AidlDriverDevice = IAidlDevice[Endpoint, CallbackRef]
"""An AIDL driver service as the runtime reaches it over the binder."""

AidlDriverPreparedModel = IAidlPreparedModel[Endpoint]
"""An AIDL driver's prepared model as the runtime reaches it."""

ServiceT = TypeVar("ServiceT", DriverDevice, AidlDriverDevice)


class DriverConnection(Generic[ServiceT]):
    """What the runtime holds of one driver service: the service, its HAL version, and what
    a call to it needs (the kernel, the tracer, the binder, this process's endpoint and uid).
    Each HAL family's IDevice adapter is one (HIDL ``VersionedIDevice``, AIDL ``AidlIDevice``)."""

    def __init__(
        self,
        service: ServiceT,
        *,
        kernel: Kernel,
        tracer: Tracer,
        binder: Binder,
        client: Endpoint,
        uid: int,
    ) -> None:
        self.service: ServiceT = service
        self.version = service.version
        self.kernel = kernel
        self.tracer = tracer
        self.binder = binder
        self.client = client
        self.uid = uid


@attrs.define
class CpuStats:
    """What the runtime's CPU executor did (nnapi-reference in the report)."""

    executions: int = 0
    energy: float = 0.0
    """Time of each CPU execution times its model's power ratio (ns)."""


@attrs.define(eq=False)
class RuntimeDevice:
    """ANeuralNetworksDevice: a discovered driver, or the CPU device."""

    name: str
    """Device name."""
    type: DeviceType
    """Device type."""
    version_string: str
    """Driver version string."""
    hal_version: HalVersion
    """Newest HAL interface the driver implements (1.3 for the CPU device)."""
    capabilities: Capabilities
    """Cached capabilities."""
    service: DriverDevice | AidlDriverDevice | None = None
    """The driver service (HIDL or AIDL: ``hal_version.aidl`` says which); None for the CPU device."""
    cache_files: tuple[int, int] = (0, 0)
    """getNumberOfCacheFilesNeeded (model, data); (0, 0) = the driver does not cache."""

    @property
    def is_cpu(self) -> bool:
        """Whether this is the runtime's own CPU device (nnapi-reference)."""
        return self.service is None

    @property
    def feature_level(self) -> int:
        """ANeuralNetworksDevice_getFeatureLevel."""
        return self.hal_version.feature_level

    def performance(self, preference: ExecutionPreference, info: PerformanceInfo) -> float:
        """The figure partitioning minimises for ``preference``."""
        if preference is ExecutionPreference.LOW_POWER:
            return info.power_usage
        return info.exec_time
