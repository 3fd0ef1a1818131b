"""What a slice name means in the query tables: layer, phase, kind and extra args.

The NNTRACE tag and HIDL readings are those of ``nnemu.trace.classify`` (shared with the parser);
this module only narrows HIDL marks to the NNAPI interfaces, since a systrace
also holds the HIDL calls of every other HAL (composer, sensors, ...).
"""

from __future__ import annotations

from typing import Final

import attrs

from nnemu.trace import classify
from nnemu.tracer import NNAPI_HIDL_INTERFACES

# NNAPI HAL interfaces as they appear in HIDL marks (the package is not written).
_NNAPI_INTERFACES: Final = NNAPI_HIDL_INTERFACES
# The audio HAL has an IDevice too; NNAPI's IDevice methods start with these.
_NNAPI_DEVICE_METHODS: Final = (
    "getCapabilities",
    "getSupportedOperations",
    "getSupportedExtensions",
    "getVersionString",
    "getType",
    "getStatus",
    "getNumberOfCacheFilesNeeded",
    "prepareModel",
    "allocate",
)

PLAIN: Final = "plain"
SWITCH: Final = "switch"
SUBTRACT: Final = "subtract"
HIDL_CLIENT: Final = "hidl_client"
HIDL_SERVER: Final = "hidl_server"
KINDS: Final = (PLAIN, SWITCH, SUBTRACT, HIDL_CLIENT, HIDL_SERVER)
"""Values of ``slice.kind``."""


@attrs.frozen
class MarkInfo:
    """The query columns derived from one slice name."""

    layer: str | None
    """NNTRACE layer code (``LR``...), or None when the slice is not a counted NNAPI section."""
    phase: str | None
    """NNTRACE phase code as written (``PU`` is not resolved against the parent)."""
    kind: str
    """One of ``KINDS``."""
    args: tuple[tuple[str, str], ...] = ()
    """Extra ``args`` rows: (key, value)."""


_NOT_NNAPI: Final = MarkInfo(None, None, PLAIN)


def _hidl_info(name: str, layer: str | None, phase: str | None) -> MarkInfo:
    parts = name.split("::")
    side = parts[-1]
    kind = HIDL_CLIENT if side == "client" else HIDL_SERVER if side == "server" else PLAIN
    interface = parts[1] if len(parts) > 1 else ""
    method = parts[2] if len(parts) > 2 else ""
    nnapi = interface in _NNAPI_INTERFACES and (
        interface != "IDevice" or method.startswith(_NNAPI_DEVICE_METHODS)
    )
    if not nnapi:
        return MarkInfo(None, None, kind)
    return MarkInfo(layer, phase, kind, (("hidl.interface", interface), ("hidl.method", method)))


def describe(name: str) -> MarkInfo:
    """Layer, phase, kind and extra args of a slice named ``name``.

    ``[NN_<layer>_<phase>]`` tags give their codes and kind ``switch`` (``[SW]``),
    ``subtract`` (``[SUB]``) or ``plain``.  HIDL marks give kind ``hidl_client`` or
    ``hidl_server``, and a layer and phase only for NNAPI interfaces, read as the
    parser reads them: client calls are IPC, server calls are the driver, and
    ``notify`` callbacks have no layer (the parser does not count them).
    """
    mark = classify(name)
    layer = None if mark.layer is None else mark.layer.value
    phase = None if mark.phase is None else mark.phase.value
    if mark.hidl:
        return _hidl_info(name, layer, phase)
    if not mark.tracks_thread:
        return _NOT_NNAPI
    kind = SWITCH if mark.switch else SUBTRACT if mark.subtract else PLAIN
    args: tuple[tuple[str, str], ...] = (("nnapi.function", mark.function),)
    if mark.problem is not None:
        args += (("nnapi.problem", mark.problem),)
    return MarkInfo(layer, phase, kind, args)
