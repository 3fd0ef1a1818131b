"""Emulated driver services: IDevice / IPreparedModel for HAL 1.0-1.3 and AIDL v1-v4, and their devices.

Rooms: ``_service`` (the driver process and IDevice), ``_prepared`` (IPreparedModel and
its executions), ``_burst`` (IBurstContext), ``_device`` (compute units, scheduling,
preemption, deadlines; its ``Job`` is in ``_job``, its ``DeviceStats`` in ``_device_stats``), ``_hidl`` (what both sides share), ``_buffer`` / ``_tracker``
(memory domains: ``allocate``, ``IBuffer``, device memories by token) and ``_aidl`` /
``_aidl_prepared`` (the AIDL family: the same service and prepared models behind the AIDL
interfaces).  The classes implement the HIDL family's interfaces of ``nnemu.hal``
(``IDevice``, ``IPreparedModel``, ``IBurst``, ``IFencedExecutionCallback``) and the AIDL
family's (``IAidlDevice``, ``IAidlPreparedModel``, ``IAidlFencedExecutionCallback``); the
cost model they price work with is ``nnemu.cost``.
"""

from nnemu.cost import ComputePlan, capabilities_from, compute_plan
from nnemu.driver._aidl import AidlDevice
from nnemu.driver._aidl_burst import AidlBurst, AidlExecution
from nnemu.driver._aidl_prepared import AidlFencedResult, AidlPreparedModel
from nnemu.driver._burst import BURST_POLL_NS, FMQ_TRANSFER_NS, BurstContext
from nnemu.driver._device import Device
from nnemu.driver._device_stats import DeviceStats
from nnemu.driver._hidl import VALIDATE_NS_PER_OP, CallbackRef
from nnemu.driver._job import Job
from nnemu.driver._prepared import FencedResult, PreparedModel
from nnemu.driver._service import DIED_MARK, DriverService
from nnemu.hal import CACHE_TOKEN_BYTES  # re-exported: where it lived before nnemu.hal
from nnemu.sim import us  # re-exported: drivers and apps round their durations with it

TYPE_CHECKING = False
if TYPE_CHECKING:
    from nnemu.hal import IBurst, IDevice, IFencedExecutionCallback, IPreparedModel
    from nnemu.ipc import Endpoint

    def _implements(
        service: DriverService, prepared: PreparedModel, burst: BurstContext, fenced: FencedResult
    ) -> tuple[
        IDevice[Endpoint, CallbackRef],
        IPreparedModel[Endpoint, CallbackRef],
        IBurst,
        IFencedExecutionCallback,
    ]:
        """The HAL interface each class implements: mypy checks each against it here."""
        return service, prepared, burst, fenced


__all__ = [
    "BURST_POLL_NS",
    "CACHE_TOKEN_BYTES",
    "DIED_MARK",
    "FMQ_TRANSFER_NS",
    "VALIDATE_NS_PER_OP",
    "AidlBurst",
    "AidlDevice",
    "AidlExecution",
    "AidlFencedResult",
    "AidlPreparedModel",
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
