"""What each mark name of a trace means for the replay's plan (``_role``, cached per name)."""

from __future__ import annotations

from typing import Final

import attrs

from nnemu.hal import HalVersion
from nnemu.replay._attempts import (
    DIED_MARK,
    FAILED_MARK,
    QOS_MARK,
    RETRY_MARK,
    WAITED_MARK,
    waited_ns,
)
from nnemu.scenario import ExecutionMode
from nnemu.trace import (
    classify,
)
from nnemu.tracer import NNAPI_HIDL_INTERFACES, Layer, Phase

_NN_INTERFACES: Final = NNAPI_HIDL_INTERFACES

_AIDL_NDK: Final = "AIDL::ndk::"
"""The prefix of the marks the AIDL compiler's NDK backend writes:
``AIDL::ndk::<Iface>::<method>::client|server``."""

_AIDL_INTERFACES: Final = frozenset(
    {
        "IDevice",
        "IPreparedModel",
        "IBuffer",
        "IBurst",
        "IExecution",
        "IPreparedModelCallback",
        "IFencedExecutionCallback",
    }
)
"""The interfaces of the AIDL NNAPI HAL (``android.hardware.neuralnetworks``)."""

_AIDL_V4_METHODS: Final = frozenset(
    {
        "prepareModelWithConfig",
        "executeSynchronouslyWithConfig",
        "executeFencedWithConfig",
        "createReusableExecution",
    }
)
"""AIDL methods that only exist from v4 on (``ExecutionConfig``, reusable executions)."""


_EXECUTION_API: Final = {
    "ANeuralNetworksExecution_compute": ExecutionMode.SYNC,
    "ANeuralNetworksExecution_startCompute": ExecutionMode.ASYNC,
    "ANeuralNetworksExecution_startComputeWithDependencies": ExecutionMode.FENCED,
    "ANeuralNetworksExecution_burstCompute": ExecutionMode.BURST,
}


# Methods that only exist from some HAL version on (without a version suffix).
_METHOD_VERSION: Final = {
    "executeSynchronously": HalVersion.V1_2,
    "getVersionString": HalVersion.V1_2,
    "getType": HalVersion.V1_2,
    "getSupportedExtensions": HalVersion.V1_2,
    "getNumberOfCacheFilesNeeded": HalVersion.V1_2,
    "prepareModelFromCache": HalVersion.V1_2,
    "configureExecutionBurst": HalVersion.V1_2,
    "executeFenced": HalVersion.V1_3,
    "allocate": HalVersion.V1_3,
}


# What a mark name means for the plan (``_Role.kind``).
_IGNORED: Final = 0


_LA_EXEC: Final = 1


_LA_OVERALL: Final = 2


_LA_COMPILE: Final = 3


_LR_EXEC: Final = 4


_LR_FINISH: Final = 5


_LR_PRIORITY: Final = 6


_LR_TIMEOUT: Final = 7


_CLIENT: Final = 8


_SERVER: Final = 9


_NOTIFY_EXEC: Final = 10


_NOTIFY_PREP: Final = 11


_BURST_EXEC: Final = 12


_BURST_REQUEST: Final = 13
_RETRY: Final = 14
_WAITED: Final = 15
_FAILED: Final = 16
_QOS: Final = 17
_DIED: Final = 18
_LR_FALLBACK: Final = 19
_LR_REUSABLE: Final = 20


_BURST_EXECUTOR: Final = "BurstExecutorWithCache::"
"""The function of the ``[NN_LD_PE]`` section in which AOSP's sample driver runs one
execution of a burst on the burst's server thread (no HIDL call per execution)."""


_BURST_CONTROLLER: Final = "ExecutionBurstController::compute"
"""The function of the ``[NN_LI_PE]`` section in which the runtime sends one request packet
over a burst's fast message queue and waits for its result (on the app's thread)."""


_RUNTIME_COUNTS: Final = {
    "ANeuralNetworksCompilation_finish": _LR_FINISH,
    "ANeuralNetworksCompilation_setPriority": _LR_PRIORITY,
    "ANeuralNetworksCompilation_setTimeout": _LR_TIMEOUT,
    "ANeuralNetworksExecution_setTimeout": _LR_TIMEOUT,
    "cpuFallbackFull": _LR_FALLBACK,
    "cpuFallbackPartial": _LR_FALLBACK,
    "ANeuralNetworksExecution_setReusable": _LR_REUSABLE,
}


@attrs.frozen
class _Role:
    """What one mark name contributes to the plan (cached per distinct name)."""

    kind: int
    """``_IGNORED``, ``_LA_EXEC``, ... ``_BURST_REQUEST``."""
    text: str = ""
    """``Iface::method`` of a HIDL call; the function of ``[NN_LA_PO]``."""
    mode: ExecutionMode | None = None
    """The mode a runtime execution call means."""
    execute: bool = False
    """An ``IPreparedModel::execute*`` call."""
    async_server: bool = False
    """The server side of an asynchronous execute (it ends at the notify)."""
    prepare: bool = False
    """An ``IDevice::prepareModel*`` call."""
    version: HalVersion = HalVersion.V1_0
    """The HAL version a server method shows."""
    burst: bool = False
    """``ANeuralNetworksExecution_burstCompute`` (a request over a burst, as
    ``_BURST_REQUEST``)."""


_NOT_USED: Final = _Role(_IGNORED)


def _role(name: str) -> _Role:
    """What the section ``name`` is for the plan: NNTRACE marks (as the parser classifies
    them) and the HIDL marks of the NNAPI interfaces; anything else is ignored."""
    if "[NN" in name:
        pass
    elif name.startswith("nnemu::"):
        return _nnemu_role(name)
    elif name.startswith("HIDL::"):
        parts = name.split("::")
        if len(parts) < 4 or parts[1] not in _NN_INTERFACES:
            return _NOT_USED
    elif name.startswith(_AIDL_NDK):
        parts = name.split("::")
        if len(parts) < 5 or parts[2] not in _AIDL_INTERFACES:
            return _NOT_USED
    else:
        return _NOT_USED
    mark = classify(name)
    if mark.hidl:
        aidl = name.startswith(_AIDL_NDK)
        iface, method, side = _hidl_parts(name.removeprefix(_AIDL_NDK) if aidl else name[6:])
        # (An AIDL call pairs only with an AIDL call: its key keeps the prefix.)
        key = f"{_AIDL_NDK if aidl else ''}{iface}::{method}"
        execute = method.startswith("execute") and (
            iface == "IPreparedModel" or (aidl and iface in ("IBurst", "IExecution"))
        )
        prepare = iface == "IDevice" and method.startswith("prepareModel")
        if side == "server" and mark.driver_server:
            return _Role(
                _SERVER,
                key,
                execute=execute,
                async_server=mark.async_execute_server,
                prepare=prepare,
                version=_aidl_version_of(iface, method) if aidl else _version_of(method),
            )
        if side == "client" and iface == "IExecutionCallback":
            return _Role(_NOTIFY_EXEC)
        if side == "client" and iface == "IPreparedModelCallback":
            return _Role(_NOTIFY_PREP)
        if side == "client" and (
            iface in ("IDevice", "IPreparedModel") or (aidl and iface in ("IBurst", "IExecution"))
        ):
            return _Role(_CLIENT, key, execute=execute, prepare=prepare)
        return _NOT_USED
    if mark.layer is None or mark.switch:
        return _NOT_USED
    if mark.layer is Layer.APPLICATION:
        if mark.phase is Phase.EXECUTION:
            return _Role(_LA_EXEC)
        if mark.phase is Phase.OVERALL:
            return _Role(_LA_OVERALL, mark.function)
        if mark.phase is Phase.COMPILATION:
            return _Role(_LA_COMPILE)
    elif mark.layer is Layer.DRIVER:
        if mark.phase is Phase.EXECUTION and mark.function.startswith(_BURST_EXECUTOR):
            return _Role(_BURST_EXEC)
    elif mark.layer is Layer.IPC:
        if mark.phase is Phase.EXECUTION and mark.function == _BURST_CONTROLLER:
            return _Role(_BURST_REQUEST)
    elif mark.layer is Layer.RUNTIME:
        if mark.function in _EXECUTION_API:
            mode = _EXECUTION_API[mark.function]
            return _Role(_LR_EXEC, mode=mode, burst=mode is ExecutionMode.BURST)
        return _Role(_RUNTIME_COUNTS.get(mark.function, _IGNORED))
    return _NOT_USED


def _nnemu_role(name: str) -> _Role:
    """nnemu's execution, QoS and death marks (``_attempts``)."""
    if name.startswith(QOS_MARK):
        return _Role(_QOS, name[len(QOS_MARK) :])
    if name == DIED_MARK:
        return _Role(_DIED)
    if name.startswith(RETRY_MARK):
        return _Role(_RETRY)
    if name.startswith(FAILED_MARK):
        return _Role(_FAILED)
    if name.startswith(WAITED_MARK):
        wait = waited_ns(name)
        if wait is not None:
            return _Role(_WAITED, str(wait))
    return _NOT_USED


# ---------------------------------------------------------------------- analysis


def _hidl_parts(call: str) -> tuple[str, str, str]:
    """(interface, method, side) of ``<Iface>::<method>::<side>`` (a HIDL or AIDL mark
    without its ``HIDL::`` or ``AIDL::ndk::`` prefix)."""
    parts = call.split("::")
    return parts[0], parts[1], parts[2]


def _aidl_version_of(iface: str, method: str) -> HalVersion:
    """The AIDL version an AIDL server method shows: v4 for its ``*WithConfig`` methods and
    reusable executions (``IExecution``), else v1 (v2 and v3 added operations and types,
    no method a trace shows)."""
    if method in _AIDL_V4_METHODS or iface == "IExecution":
        return HalVersion.AIDL_V4
    return HalVersion.AIDL_V1


def _version_of(method: str) -> HalVersion:
    """The HAL version a server method shows: its suffix's, else the version that
    introduced it (1.0 for the rest)."""
    return HalVersion.of_method(method) or _METHOD_VERSION.get(method, HalVersion.V1_0)
