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

from nnemu.driver._aidl_prepared import AidlFencedResult, AidlPreparedModel
from nnemu.driver._buffer import aidl_answer
from nnemu.hal import (
    BufferDesc,
    BufferRole,
    Capabilities,
    DeviceBuffer,
    DeviceType,
    ErrorStatus,
    HalVersion,
    Model,
    PrepareModelConfig,
    ServiceSpecificError,
    UnknownTransaction,
    check_duration,
    check_hints,
    optional_ns,
)
from nnemu.ipc import CallbackRef, Endpoint

if TYPE_CHECKING:
    from nnemu.driver._service import DriverService
    from nnemu.hal import IAidlDevice, IAidlFencedExecutionCallback, IAidlPreparedModel


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

    async def prepareModelWithConfig(
        self,
        model: Model,
        config: PrepareModelConfig,
        callback: CallbackRef | None,
        *,
        uid: int = 0,
    ) -> ServiceSpecificError | UnknownTransaction | None:
        """prepareModelWithConfig (v4): prepareModel with the config's arguments.

        The compilation hints are checked first (a token twice is INVALID_ARGUMENT, notified
        and returned as prepareModel's own launch errors are), then ignored.
        """
        if self.version is not HalVersion.AIDL_V4:
            return UnknownTransaction()
        if check_hints(config.compilation_hints) is not None:
            if callback is not None:
                self.service._refuse(callback, self.version, ErrorStatus.INVALID_ARGUMENT)
            return ServiceSpecificError(ErrorStatus.INVALID_ARGUMENT)
        return await self.prepareModel(
            model,
            config.preference,
            config.priority,
            config.deadline_ns,
            config.model_cache,
            config.data_cache,
            config.cache_token,
            callback,
            uid=uid,
        )

    async def allocate(
        self,
        desc: BufferDesc,
        prepared_models: Sequence[object | None],
        input_roles: Sequence[BufferRole],
        output_roles: Sequence[BufferRole],
    ) -> DeviceBuffer | ServiceSpecificError:
        """allocate: ``DeviceBuffer{buffer, token}``, or the call's service-specific error."""
        answer = await self.service.allocate(desc, prepared_models, input_roles, output_roles)
        return aidl_answer(answer)


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
