"""The AIDL HAL v4 configuration values: ``PrepareModelConfig``, ``ExecutionConfig`` and hints.

AIDL v4 (NNAPI feature level 8, Android 14) adds ``IDevice::prepareModelWithConfig``,
``IPreparedModel::executeSynchronouslyWithConfig`` / ``executeFencedWithConfig`` /
``createReusableExecution`` and ``IBurst::executeSynchronouslyWithConfig``, which take their
arguments in these parcelables (``hardware/interfaces/neuralnetworks/aidl/android/hardware/
neuralnetworks/PrepareModelConfig.aidl``, ``ExecutionConfig.aidl``, ``TokenValuePair.aidl``,
``ExtensionNameAndPrefix.aidl``) together with vendor hints: token / value pairs whose token's
high bits are an extension's prefix.  "The provided TokenValuePairs must not contain the same
token twice.  The driver must validate the data and ignore invalid hints", and ignore the hints
of an extension it does not support (``check_hints``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

import attrs

from nnemu.hal._enums import ErrorStatus

DEFAULT_LOOP_TIMEOUT: Final = -1
"""``loopTimeoutDurationNs`` of the default loop timeout."""


@attrs.frozen
class UnknownTransaction:
    """``STATUS_UNKNOWN_TRANSACTION``: what a service built against an older AIDL version
    answers a method it does not have (a v3 driver asked ``executeSynchronouslyWithConfig``)."""


@attrs.frozen
class TokenValuePair:
    """AIDL ``TokenValuePair``: one vendor hint."""

    token: int
    """The extension's prefix in the high bits, the hint within the extension in the low 16."""
    value: bytes = attrs.field(default=b"", converter=bytes)
    """The hint's raw data."""


@attrs.frozen
class ExtensionNameAndPrefix:
    """AIDL ``ExtensionNameAndPrefix``: which extension a token prefix stands for."""

    name: str
    prefix: int


def _pairs(value: Iterable[TokenValuePair]) -> tuple[TokenValuePair, ...]:
    return tuple(value)


def _objects(value: Iterable[object]) -> tuple[object, ...]:
    return tuple(value)


def _prefixes(value: Iterable[ExtensionNameAndPrefix]) -> tuple[ExtensionNameAndPrefix, ...]:
    return tuple(value)


@attrs.frozen(kw_only=True)
class ExecutionConfig:
    """AIDL ``ExecutionConfig`` (v4): an execution's settings besides the request and deadline."""

    measure_timing: bool = False
    """``measureTiming``."""
    loop_timeout_duration_ns: int = DEFAULT_LOOP_TIMEOUT
    """``loopTimeoutDurationNs``: -1 for the default, another negative is INVALID_ARGUMENT."""
    execution_hints: tuple[TokenValuePair, ...] = attrs.field(default=(), converter=_pairs)
    """``executionHints``."""
    extension_name_to_prefix: tuple[ExtensionNameAndPrefix, ...] = attrs.field(
        default=(), converter=_prefixes
    )
    """``extensionNameToPrefix``."""


@attrs.frozen(kw_only=True)
class PrepareModelConfig:
    """AIDL ``PrepareModelConfig`` (v4): ``prepareModel``'s arguments besides the model."""

    preference: int = 1
    """``ExecutionPreference`` (FAST_SINGLE_ANSWER by default)."""
    priority: int = 1
    """``Priority`` (MEDIUM by default)."""
    deadline_ns: int = -1
    """``deadlineNs``: -1 for none."""
    model_cache: tuple[object, ...] = attrs.field(default=(), converter=_objects)
    """``modelCache`` file descriptors."""
    data_cache: tuple[object, ...] = attrs.field(default=(), converter=_objects)
    """``dataCache`` file descriptors."""
    cache_token: bytes = attrs.field(default=b"\0" * 32, converter=bytes)
    """``cacheToken`` (32 bytes)."""
    compilation_hints: tuple[TokenValuePair, ...] = attrs.field(default=(), converter=_pairs)
    """``compilationHints``."""
    extension_name_to_prefix: tuple[ExtensionNameAndPrefix, ...] = attrs.field(
        default=(), converter=_prefixes
    )
    """``extensionNameToPrefix``."""


def check_hints(hints: tuple[TokenValuePair, ...]) -> ErrorStatus | None:
    """Hints as an emulated driver validates them: INVALID_ARGUMENT when a token repeats
    (the HAL's "must not contain the same token twice"), else None -- every other hint is
    ignored, as the HAL asks of a driver for an extension it does not support (the emulated
    drivers support none)."""
    tokens = [hint.token for hint in hints]
    if len(set(tokens)) != len(tokens):
        return ErrorStatus.INVALID_ARGUMENT
    return None
