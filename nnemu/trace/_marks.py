"""Classifying the name of a ``B|tgid|name`` trace mark.

NNTRACE tags (``[NN_<layer>_<phase>]``, with ``[SW]``/``[SUB]``) are read as
the tracing contract says; automatically generated HIDL marks are mapped to a
layer and phase the way AOSP ``parser/naming.py`` does, extended with the HAL
1.2/1.3 method names.  The marks an AIDL NDK binder writes
(``AIDL::ndk::<Iface>::<method>::client|server``) are read as the HIDL marks of the same
interface and method: an extension of Android's parser, which knows only HIDL
(docs/parser.md).
"""

from __future__ import annotations

import re
from typing import Final

import attrs

from nnemu.tracer import Layer, Phase

_TAG_RE: Final = re.compile(r"\[NN_([A-Za-z0-9]*)_([A-Za-z0-9]*)\]")
_LAYERS: Final = {layer.value: layer for layer in Layer}
_PHASES: Final = {phase.value: phase for phase in Phase}

SWITCH_MARKER: Final = "[SW]"
SUBTRACT_MARKER: Final = "[SUB]"

# Driver-side NNAPI HIDL interfaces (and AIDL's IBurst, IExecution): a process serving one
# of them is a driver.
_DRIVER_INTERFACES: Final = (
    "IDevice",
    "IPreparedModel",
    "IBuffer",
    "IBurstContext",
    "IBurst",
    "IExecution",
)
# Asynchronous execution launchers; the driver's time runs from the server
# call's begin to the begin of the IExecutionCallback notification it sends.
_ASYNC_EXECUTE_METHODS: Final = frozenset({"execute", "execute_1_2", "execute_1_3"})
# Fenced execution (HIDL 1.3 and AIDL IPreparedModel, AIDL v4 IExecution): a driver may return
# at once and do the work on a worker thread, which has no notify to send.
_FENCED_EXECUTE_INTERFACES: Final = frozenset({"IPreparedModel", "IExecution"})
_FENCED_EXECUTE_METHODS: Final = frozenset({"executeFenced", "executeFencedWithConfig"})
_START_COMPUTE: Final = frozenset(
    {
        "ANeuralNetworksExecution_startCompute",
        "ANeuralNetworksExecution_startComputeWithDependencies",
    }
)
EVENT_WAIT: Final = "ANeuralNetworksEvent_wait"
EXECUTION_CREATE: Final = "ANeuralNetworksExecution_create"


@attrs.frozen
class Mark:
    """What a mark name means for the parser (cached per distinct name)."""

    layer: Layer | None
    """Layer, or None for a section that is not counted (opaque)."""
    phase: Phase | None
    """Phase as written (``PU`` is resolved against the parent later)."""
    function: str
    """Function name: text after the tag, or the whole HIDL name."""
    switch: bool = False
    """``[SW]``: ends the enclosing section first."""
    subtract: bool = False
    """``[SUB]``: deducted from the enclosing section of another layer."""
    tracks_thread: bool = False
    """The mark makes its thread an NNAPI thread."""
    driver_server: bool = False
    """A driver-side NNAPI HIDL server call: the process is a driver."""
    hidl: bool = False
    """An automatically generated HIDL mark."""
    async_execute_server: bool = False
    """Server side of an asynchronous ``execute*`` call."""
    fenced_server: bool = False
    """Server side of ``executeFenced`` (launches work a worker thread may do after the call;
    an nnemu extension, docs/parser.md D-FENCED)."""
    prepare_server: bool = False
    """Server side of ``IDevice::prepareModel*`` (launches work that ends with a notify) or
    ``IPreparedModel::configureExecutionBurst`` (starts a burst server thread)."""
    hidl_client: bool = False
    """Client side of a counted HIDL call (waits for its server side)."""
    hidl_server: bool = False
    """Server side of a HIDL call (serves the client call waiting with the same ``call``)."""
    call: str = ""
    """``HIDL::<interface>::<method>`` of a HIDL mark (pairs client and server sides)."""
    prepare_notify_client: bool = False
    """Client side of ``IPreparedModelCallback::notify*`` (ends a launched preparation)."""
    execution_notify_client: bool = False
    """Client side of ``IExecutionCallback::notify*`` (ends driver execution)."""
    start_compute: bool = False
    """``ANeuralNetworksExecution_startCompute*`` (async runtime execution begins)."""
    event_wait: bool = False
    """``ANeuralNetworksEvent_wait`` (async runtime execution ends)."""
    execution_create: bool = False
    """``ANeuralNetworksExecution_create`` (counts one execution)."""
    problem: str | None = None
    """Diagnostic for a malformed or unknown tag (the section is then opaque)."""


OPAQUE: Final = Mark(None, None, "")


def _hidl_phase(name: str) -> Phase:
    if "IAllocator" in name:
        return Phase.UNSPECIFIED
    if "getCapabilities" in name:
        return Phase.INITIALIZATION
    if "prepareModel" in name or "getSupportedOperations" in name:
        return Phase.COMPILATION
    if "createReusableExecution" in name:
        # AIDL v4: set up inside a reusable execution's first computation.
        return Phase.EXECUTION
    if "IPreparedModelCallback" in name:
        return Phase.COMPILATION
    if "configureExecutionBurst" in name:
        # Setting a burst up happens in ANeuralNetworksBurst_create (LR PP); Android's
        # parser files it under "otherwise PI" too.
        return Phase.INITIALIZATION
    if (
        "execute" in name
        or "IExecutionCallback" in name
        or "IFencedExecutionCallback" in name
        or "Burst" in name
        or "IBuffer" in name
    ):
        return Phase.EXECUTION
    if "IDevice::allocate" in name:
        return Phase.COMPILATION
    return Phase.INITIALIZATION


def _classify_hidl(name: str) -> Mark:
    parts = name.split("::")
    interface = parts[1] if len(parts) > 1 else ""
    method = parts[2] if len(parts) > 2 else ""
    call = "::".join(parts[:3])
    if "::client" in name:
        if "notify" in name or "IBurstCallback" in name:
            # Calls "up" into the runtime: not counted (AOSP ignores them too),
            # but a notification ends an asynchronous driver execution.
            return Mark(
                None,
                None,
                name,
                hidl=True,
                execution_notify_client="IExecutionCallback::notify" in name,
                prepare_notify_client="IPreparedModelCallback::notify" in name,
                call=call,
            )
        layer = Layer.IPC
    elif "::server" in name:
        if "notify" in name or "IBurstCallback" in name:
            return Mark(None, None, name, hidl=True)
        layer = Layer.DRIVER
    elif "getCapabilities" in name or "getSupportedOperations" in name:
        layer = Layer.DRIVER
    else:
        # ::passthrough and other HIDL marks are not NNAPI calls.
        return Mark(None, None, name, hidl=True)
    server = layer is Layer.DRIVER and name.endswith("::server")
    driver_server = server and interface in _DRIVER_INTERFACES
    return Mark(
        layer,
        _hidl_phase(name),
        name,
        hidl=True,
        tracks_thread=driver_server,
        driver_server=driver_server,
        async_execute_server=driver_server
        and interface == "IPreparedModel"
        and method in _ASYNC_EXECUTE_METHODS,
        fenced_server=driver_server
        and interface in _FENCED_EXECUTE_INTERFACES
        and method in _FENCED_EXECUTE_METHODS,
        prepare_server=driver_server
        and (
            (interface == "IDevice" and "prepareModel" in method)
            or method == "configureExecutionBurst"
        ),
        hidl_client=layer is Layer.IPC and name.endswith("::client"),
        hidl_server=server,
        call=call,
    )


_AIDL_NDK: Final = "AIDL::ndk::"


def _classify_aidl(name: str) -> Mark:
    """An AIDL NDK mark, as the HIDL mark of the same interface and method; its ``call``
    keeps the AIDL prefix, so that an AIDL client pairs only with an AIDL server."""
    rest = name[name.index(_AIDL_NDK) + len(_AIDL_NDK) :]
    mark = _classify_hidl("HIDL::" + rest)
    call = _AIDL_NDK + mark.call.removeprefix("HIDL::") if mark.call else ""
    # AIDL's configureExecutionBurst hands back a binder object (IBurst), not a burst
    # server thread: nothing is launched.
    launches = mark.prepare_server and "configureExecutionBurst" not in rest
    return attrs.evolve(mark, function=name, call=call, prepare_server=launches)


def classify(name: str) -> Mark:
    """Classify the name part of a ``B|tgid|name`` payload."""
    if "[NN" not in name:
        if "HIDL::" in name:
            return _classify_hidl(name)
        if _AIDL_NDK in name:
            return _classify_aidl(name)
        return OPAQUE
    match = _TAG_RE.search(name)
    if match is None:
        return Mark(
            None,
            None,
            name,
            switch=SWITCH_MARKER in name,
            tracks_thread=True,
            problem="malformed NNTRACE tag: expected [NN_<layer>_<phase>]<function>",
        )
    prefix = name[: match.start()]
    layer_code, phase_code = match.group(1), match.group(2)
    function = name[match.end() :]
    switch = SWITCH_MARKER in prefix
    subtract = SUBTRACT_MARKER in prefix
    # Legacy tracepoints of early releases, rewritten as AOSP's parser does.
    if function in ("ANeuralNetworksEvent_free", "ANeuralNetworksExecution_free"):
        if phase_code == Phase.TERMINATION.value:
            phase_code = Phase.EXECUTION.value
    elif switch and function == "executeWithCompilation" and match.group(0) == "[NN_LA_PR]":
        switch = False
    layer = _LAYERS.get(layer_code)
    phase = _PHASES.get(phase_code)
    if layer is None or phase is None:
        what = f"layer code {layer_code!r}" if layer is None else f"phase code {phase_code!r}"
        return Mark(
            None,
            None,
            function,
            switch=switch,
            tracks_thread=True,
            problem=f"unknown {what} in NNTRACE tag; section not counted",
        )
    return Mark(
        layer,
        phase,
        function,
        switch=switch,
        subtract=subtract,
        tracks_thread=True,
        start_compute=layer is Layer.RUNTIME and function in _START_COMPUTE,
        event_wait=layer is Layer.RUNTIME and function == EVENT_WAIT,
        execution_create=layer is Layer.RUNTIME and function == EXECUTION_CREATE,
    )
