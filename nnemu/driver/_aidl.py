"""The AIDL driver family: an emulated driver's IDevice / IPreparedModel under the AIDL HAL.

The same driver process, device model, scheduler and cost model as the HIDL family
(``DriverService``, ``PreparedModel``): only the interface differs, as in AOSP, where the
``shim_and_sl`` and ``common/aidl`` adapters put one driver implementation behind either
HAL.  Each method is the AIDL method of ``nnemu.hal.IAidlDevice`` / ``IAidlPreparedModel``:
a failure is the call's service-specific error (``ServiceSpecificError``), deadlines and
loop timeouts are ``-1`` or a value (another negative is INVALID_ARGUMENT, as the
``common/aidl`` adapter's ``convert`` of a ``Duration`` refuses it), timing is in
nanoseconds with ``-1`` unknown, and a too-small output is ``outputSufficientSize`` false.
The service's marks (``AIDL::ndk::IDevice::prepareModel::server`` ...) come from its
``HalVersion.interface`` names.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs

from nnemu.hal import (
    AidlTiming,
    Capabilities,
    DeviceType,
    ErrorStatus,
    ExecutionResult,
    HalVersion,
    MeasureTiming,
    Model,
    Request,
    ServiceSpecificError,
    check_duration,
    optional_ns,
)
from nnemu.ipc import CallbackRef, Endpoint

if TYPE_CHECKING:
    from nnemu.driver._prepared import FencedResult, PreparedModel
    from nnemu.driver._service import DriverService
    from nnemu.hal import IAidlDevice, IAidlFencedExecutionCallback, IAidlPreparedModel

_MEASURE = {True: MeasureTiming.YES, False: MeasureTiming.NO}


@attrs.frozen
class AidlFencedResult:
    """AIDL IFencedExecutionCallback over the HIDL family's fenced result."""

    result: FencedResult

    def getExecutionInfo(self) -> tuple[AidlTiming, AidlTiming, ErrorStatus]:
        """timingLaunched, timingFenced (ns, -1 unknown) and the execution's status."""
        result = self.result
        return (
            AidlTiming.from_hidl(result.timing_launched),
            AidlTiming.from_hidl(result.timing_fenced),
            result.status,
        )


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
        wait_for: Sequence[object | None],
        measure_timing: bool,
        deadline_ns: int,
        loop_timeout_duration_ns: int,
        duration_ns: int,
    ) -> AidlFencedResult | ServiceSpecificError:
        """executeFenced: runs inside the call; its FencedExecutionResult's callback."""
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


class AidlDevice:
    """AIDL IDevice of a driver service: ``android.hardware.neuralnetworks.IDevice/<name>``."""

    def __init__(self, service: DriverService) -> None:
        if not service.version.aidl:
            raise ValueError(f"{service.name} speaks HIDL {service.version.value}, not AIDL")
        self.service = service
        self.name = service.name
        self.version: HalVersion = service.version
        self.endpoint: Endpoint = service.endpoint

    async def getInterfaceVersion(self) -> int:
        """getInterfaceVersion: the N of ``aidl-vN``."""
        return int(self.version.value.removeprefix("aidl-v"))

    async def getCapabilities(self) -> Capabilities | ServiceSpecificError:
        """getCapabilities."""
        status, capabilities = await self.service.getCapabilities()
        return capabilities if status is ErrorStatus.NONE else ServiceSpecificError(status)

    async def getVersionString(self) -> str | ServiceSpecificError:
        """getVersionString."""
        status, version = await self.service.getVersionString()
        return version if status is ErrorStatus.NONE else ServiceSpecificError(status)

    async def getType(self) -> DeviceType | ServiceSpecificError:
        """getType."""
        status, device_type = await self.service.getType()
        return device_type if status is ErrorStatus.NONE else ServiceSpecificError(status)

    async def getNumberOfCacheFilesNeeded(self) -> tuple[int, int] | ServiceSpecificError:
        """getNumberOfCacheFilesNeeded: (numModelCache, numDataCache)."""
        status, model_files, data_files = await self.service.getNumberOfCacheFilesNeeded()
        if status is not ErrorStatus.NONE:
            return ServiceSpecificError(status)
        return model_files, data_files

    async def getSupportedOperations(self, model: Model) -> tuple[bool, ...] | ServiceSpecificError:
        """getSupportedOperations."""
        status, supported = await self.service.getSupportedOperations(model, self.version)
        return supported if status is ErrorStatus.NONE else ServiceSpecificError(status)

    async def prepareModel(
        self,
        model: Model,
        preference: int,
        priority: int,
        deadline_ns: int,
        model_cache: Sequence[object],
        data_cache: Sequence[object],
        token: bytes,
        callback: CallbackRef | None,
        *,
        uid: int = 0,
    ) -> ServiceSpecificError | None:
        """prepareModel: launch; the AidlPreparedModel comes through ``callback``.

        A failed launch notifies the callback and fails the call with the same status, as
        the ``common/aidl`` adapter's ``Device::prepareModel`` does.
        """
        service, version = self.service, self.version
        if check_duration(deadline_ns) is not None:
            if callback is not None:
                service._refuse(callback, version, ErrorStatus.INVALID_ARGUMENT)
            return ServiceSpecificError(ErrorStatus.INVALID_ARGUMENT)
        status = await service._prepare(
            version,
            model,
            preference,
            priority,
            optional_ns(deadline_ns),
            callback,
            uid,
            cache=(model_cache, data_cache, token),
        )
        return None if status is ErrorStatus.NONE else ServiceSpecificError(status)

    async def prepareModelFromCache(
        self,
        deadline_ns: int,
        model_cache: Sequence[object],
        data_cache: Sequence[object],
        token: bytes,
        callback: CallbackRef | None,
        *,
        uid: int = 0,
    ) -> ServiceSpecificError | None:
        """prepareModelFromCache."""
        service, version = self.service, self.version
        if check_duration(deadline_ns) is not None:
            if callback is not None:
                service._refuse(callback, version, ErrorStatus.INVALID_ARGUMENT)
            return ServiceSpecificError(ErrorStatus.INVALID_ARGUMENT)
        status = await service._from_cache(
            version, optional_ns(deadline_ns), model_cache, data_cache, token, callback, uid=uid
        )
        return None if status is ErrorStatus.NONE else ServiceSpecificError(status)


if TYPE_CHECKING:

    def _implements(
        device: AidlDevice, prepared: AidlPreparedModel, fenced: AidlFencedResult
    ) -> tuple[
        IAidlDevice[Endpoint, CallbackRef],
        IAidlPreparedModel[Endpoint],
        IAidlFencedExecutionCallback,
    ]:
        """The AIDL interface each class implements: mypy checks each against it here."""
        return device, prepared, fenced
