"""HAL and NDK enumerations, with the values of the AOSP headers.

Sources: ``hardware/interfaces/neuralnetworks/1.0-1.3/types.hal`` and
``frameworks/ml/nn/runtime/include/NeuralNetworks.h`` (Android 11).
"""

from __future__ import annotations

import enum


class HalVersion(enum.Enum):
    """The HAL interface version a driver implements: HIDL 1.0-1.3, or AIDL v1-v4.

    The AIDL versions (``android.hardware.neuralnetworks`` AIDL, the HAL of Android 12 and
    later drivers) come after 1.3: ``at_least(V1_3)`` holds for each, as an AIDL driver
    offers everything a 1.3 one does (deadlines, priorities, fenced execution).
    """

    V1_0 = "1.0"
    V1_1 = "1.1"
    V1_2 = "1.2"
    V1_3 = "1.3"
    AIDL_V1 = "aidl-v1"
    AIDL_V2 = "aidl-v2"
    AIDL_V3 = "aidl-v3"
    AIDL_V4 = "aidl-v4"

    @property
    def aidl(self) -> bool:
        """Whether this is an AIDL version (its driver speaks the AIDL HAL, not HIDL)."""
        return self in _AIDL_VERSIONS

    def interface(self, name: str) -> str:
        """The interface ``name`` as the binder names its marks: ``IDevice`` for HIDL (the
        transport writes ``HIDL::IDevice::...``), ``AIDL::ndk::IDevice`` for AIDL (as the AIDL
        compiler's NDK backend writes ``AIDL::ndk::IDevice::<method>::server``)."""
        return f"AIDL::ndk::{name}" if self in _AIDL_VERSIONS else name

    @property
    def feature_level(self) -> int:
        """NNAPI feature level (Android API level) of this HAL version."""
        return _FEATURE_LEVELS[self]

    def at_least(self, other: HalVersion) -> bool:
        """Whether this version is ``other`` or newer."""
        return _FEATURE_LEVELS[self] >= _FEATURE_LEVELS[other]

    @property
    def suffix(self) -> str:
        """The suffix HIDL gives a method redefined in this version: ``""`` for 1.0 and for
        AIDL (whose methods are never suffixed), else ``_1_x``."""
        if self is HalVersion.V1_0 or self in _AIDL_VERSIONS:
            return ""
        return "_" + str(self.value).replace(".", "_")

    def method(self, base: str, since: HalVersion | None = None) -> str:
        """The name of HIDL method ``base`` in this version's interface.

        ``base`` as the version ``since`` (1.0 when not given) introduced it, and
        ``base_1_x`` in a later version that redefines it:
        ``V1_3.method("prepareModelFromCache", since=V1_2)`` is ``prepareModelFromCache_1_3``.
        """
        if since is not None and not self.at_least(since):
            raise ValueError(
                f"{base} does not exist before HAL {since.value}, asked for {self.value}"
            )
        return base if self is (since or HalVersion.V1_0) else base + self.suffix

    @classmethod
    def of_method(cls, name: str) -> HalVersion | None:
        """The version whose suffix the HIDL method ``name`` carries, or None if it has none.

        ``prepareModel_1_3`` is V1_3, ``getSupportedOperations_1_1`` V1_1; a bare name
        (``execute``, ``executeSynchronously``) says nothing by itself.  The suffix of a
        minor version newer than nnemu knows (``execute_1_4``) reads as the newest it
        knows, V1_3: a HIDL version extends the one before it.
        """
        base, separator, minor = name.rpartition("_1_")
        if not (base and separator and minor.isascii() and minor.isdigit()):
            return None
        known = (cls.V1_1, cls.V1_2, cls.V1_3)
        number = int(minor)
        return known[min(number, len(known)) - 1] if number > 0 else None

    @property
    def notify_method(self) -> str:
        """The callback method a version's driver calls: ``notify`` (1.0, 1.1), ``notify_1_2``, ``notify_1_3``.

        IPreparedModelCallback and IExecutionCallback have no 1.1 revision, so a 1.1
        driver calls the 1.0 ``notify``; AIDL's callback has the one ``notify``.
        """
        return "notify" if not self.at_least(HalVersion.V1_2) else "notify" + self.suffix


_FEATURE_LEVELS = {
    HalVersion.V1_0: 27,
    HalVersion.V1_1: 28,
    HalVersion.V1_2: 29,
    HalVersion.V1_3: 30,
    # ANEURALNETWORKS_FEATURE_LEVEL_5 .. _8 (NeuralNetworksTypes.h): AIDL v1 is Android 12's.
    HalVersion.AIDL_V1: 31,
    HalVersion.AIDL_V2: 1000006,
    HalVersion.AIDL_V3: 1000007,
    HalVersion.AIDL_V4: 1000008,
}
_AIDL_VERSIONS = frozenset(
    {HalVersion.AIDL_V1, HalVersion.AIDL_V2, HalVersion.AIDL_V3, HalVersion.AIDL_V4}
)


class ErrorStatus(enum.IntEnum):
    """HAL ``ErrorStatus`` (1.0, extended in 1.3)."""

    NONE = 0
    DEVICE_UNAVAILABLE = 1
    GENERAL_FAILURE = 2
    OUTPUT_INSUFFICIENT_SIZE = 3
    INVALID_ARGUMENT = 4
    MISSED_DEADLINE_TRANSIENT = 5
    MISSED_DEADLINE_PERSISTENT = 6
    RESOURCE_EXHAUSTED_TRANSIENT = 7
    RESOURCE_EXHAUSTED_PERSISTENT = 8

    @property
    def is_qos(self) -> bool:
        """Whether this status only exists since HAL 1.3 (MISSED_DEADLINE_*, RESOURCE_EXHAUSTED_*)."""
        return self >= ErrorStatus.MISSED_DEADLINE_TRANSIENT

    def downgraded(self, version: HalVersion) -> ErrorStatus:
        """The status as it crosses a ``version`` interface: 1.3 codes become GENERAL_FAILURE before 1.3."""
        if self is ErrorStatus.NONE or version is HalVersion.V1_3 or version.aidl:
            return self  # the common case, without the enum comparisons below
        if self.is_qos and not version.at_least(HalVersion.V1_3):
            return ErrorStatus.GENERAL_FAILURE
        return self


class DeviceStatus(enum.IntEnum):
    """HAL ``DeviceStatus``."""

    AVAILABLE = 0
    BUSY = 1
    OFFLINE = 2
    UNKNOWN = 3


class ExecutionPreference(enum.IntEnum):
    """HAL 1.1 ``ExecutionPreference`` (also the NDK ``PREFER_*`` values)."""

    LOW_POWER = 0
    FAST_SINGLE_ANSWER = 1
    SUSTAINED_SPEED = 2


class Priority(enum.IntEnum):
    """HAL 1.3 ``Priority``."""

    LOW = 0
    MEDIUM = 1
    HIGH = 2

    @property
    def ndk_value(self) -> int:
        """The NDK ``ANEURALNETWORKS_PRIORITY_*`` value (90/100/110)."""
        return 90 + 10 * int(self)

    @classmethod
    def from_ndk(cls, value: int) -> Priority | None:
        """The HAL priority for an NDK value, or None if the value is not one of 90/100/110."""
        return {90: cls.LOW, 100: cls.MEDIUM, 110: cls.HIGH}.get(value)


class DeviceType(enum.IntEnum):
    """HAL 1.2 ``DeviceType`` (NDK adds UNKNOWN 0)."""

    UNKNOWN = 0
    OTHER = 1
    CPU = 2
    GPU = 3
    ACCELERATOR = 4


class MeasureTiming(enum.IntEnum):
    """HAL 1.2 ``MeasureTiming``."""

    NO = 0
    YES = 1


class OperandType(enum.IntEnum):
    """HAL ``OperandType`` (1.0-1.3)."""

    FLOAT32 = 0
    INT32 = 1
    UINT32 = 2
    TENSOR_FLOAT32 = 3
    TENSOR_INT32 = 4
    TENSOR_QUANT8_ASYMM = 5
    BOOL = 6
    TENSOR_QUANT16_SYMM = 7
    TENSOR_FLOAT16 = 8
    TENSOR_BOOL8 = 9
    FLOAT16 = 10
    TENSOR_QUANT8_SYMM_PER_CHANNEL = 11
    TENSOR_QUANT16_ASYMM = 12
    TENSOR_QUANT8_SYMM = 13
    TENSOR_QUANT8_ASYMM_SIGNED = 14
    SUBGRAPH = 15
    OEM = 10000
    TENSOR_OEM_BYTE = 10001

    @property
    def is_tensor(self) -> bool:
        """Whether operands of this type are tensors."""
        return self.name.startswith("TENSOR_")

    @property
    def is_scalar(self) -> bool:
        """Whether operands of this type are scalars (dimensions must be empty)."""
        return self in _SCALARS

    @property
    def element_bytes(self) -> int:
        """Bytes per element (1 for OEM and SUBGRAPH, which have no defined size)."""
        return _ELEMENT_BYTES.get(self, 1)


_SCALARS = frozenset(
    {
        OperandType.FLOAT32,
        OperandType.INT32,
        OperandType.UINT32,
        OperandType.BOOL,
        OperandType.FLOAT16,
    }
)

_ELEMENT_BYTES = {
    OperandType.FLOAT32: 4,
    OperandType.INT32: 4,
    OperandType.UINT32: 4,
    OperandType.TENSOR_FLOAT32: 4,
    OperandType.TENSOR_INT32: 4,
    OperandType.TENSOR_QUANT8_ASYMM: 1,
    OperandType.BOOL: 1,
    OperandType.TENSOR_QUANT16_SYMM: 2,
    OperandType.TENSOR_FLOAT16: 2,
    OperandType.TENSOR_BOOL8: 1,
    OperandType.FLOAT16: 2,
    OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL: 1,
    OperandType.TENSOR_QUANT16_ASYMM: 2,
    OperandType.TENSOR_QUANT8_SYMM: 1,
    OperandType.TENSOR_QUANT8_ASYMM_SIGNED: 1,
}


class OperandLifeTime(enum.IntEnum):
    """HAL ``OperandLifeTime`` (1.3 names)."""

    TEMPORARY_VARIABLE = 0
    SUBGRAPH_INPUT = 1
    SUBGRAPH_OUTPUT = 2
    CONSTANT_COPY = 3
    CONSTANT_REFERENCE = 4
    NO_VALUE = 5
    SUBGRAPH = 6


class OperationType(enum.IntEnum):
    """HAL ``OperationType`` (the subset nnemu's cost model and presets know, plus IF/WHILE/OEM)."""

    ADD = 0
    AVERAGE_POOL_2D = 1
    CONCATENATION = 2
    CONV_2D = 3
    DEPTHWISE_CONV_2D = 4
    DEQUANTIZE = 6
    FULLY_CONNECTED = 9
    L2_NORMALIZATION = 11
    LOGISTIC = 14
    LSTM = 16
    MAX_POOL_2D = 17
    MUL = 18
    RELU = 19
    RELU1 = 20
    RELU6 = 21
    RESHAPE = 22
    RESIZE_BILINEAR = 23
    RNN = 24
    SOFTMAX = 25
    TANH = 28
    MEAN = 31
    PAD = 32
    SUB = 36
    TRANSPOSE = 37
    LESS = 58
    QUANTIZE = 72
    IF = 96
    WHILE = 97
    HARD_SWISH = 99
    OEM_OPERATION = 10000


class ResultCode(enum.IntEnum):
    """NDK result codes (``ANEURALNETWORKS_*``); the report names them without the prefix."""

    NO_ERROR = 0
    OUT_OF_MEMORY = 1
    INCOMPLETE = 2
    UNEXPECTED_NULL = 3
    BAD_DATA = 4
    OP_FAILED = 5
    BAD_STATE = 6
    UNMAPPABLE = 7
    OUTPUT_INSUFFICIENT_SIZE = 8
    UNAVAILABLE_DEVICE = 9
    MISSED_DEADLINE_TRANSIENT = 10
    MISSED_DEADLINE_PERSISTENT = 11
    RESOURCE_EXHAUSTED_TRANSIENT = 12
    RESOURCE_EXHAUSTED_PERSISTENT = 13
    DEAD_OBJECT = 14

    @property
    def is_transient(self) -> bool:
        """Whether a retry after a short delay may succeed."""
        return self in (
            ResultCode.MISSED_DEADLINE_TRANSIENT,
            ResultCode.RESOURCE_EXHAUSTED_TRANSIENT,
        )

    @property
    def is_deadline_miss(self) -> bool:
        """Whether this code reports a missed deadline."""
        return self in (ResultCode.MISSED_DEADLINE_TRANSIENT, ResultCode.MISSED_DEADLINE_PERSISTENT)


_STATUS_TO_CODE = {
    ErrorStatus.NONE: ResultCode.NO_ERROR,
    ErrorStatus.DEVICE_UNAVAILABLE: ResultCode.UNAVAILABLE_DEVICE,
    ErrorStatus.GENERAL_FAILURE: ResultCode.OP_FAILED,
    ErrorStatus.OUTPUT_INSUFFICIENT_SIZE: ResultCode.OUTPUT_INSUFFICIENT_SIZE,
    ErrorStatus.INVALID_ARGUMENT: ResultCode.BAD_DATA,
    ErrorStatus.MISSED_DEADLINE_TRANSIENT: ResultCode.MISSED_DEADLINE_TRANSIENT,
    ErrorStatus.MISSED_DEADLINE_PERSISTENT: ResultCode.MISSED_DEADLINE_PERSISTENT,
    ErrorStatus.RESOURCE_EXHAUSTED_TRANSIENT: ResultCode.RESOURCE_EXHAUSTED_TRANSIENT,
    ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT: ResultCode.RESOURCE_EXHAUSTED_PERSISTENT,
}

_CODE_TO_STATUS = {
    ResultCode.NO_ERROR: ErrorStatus.NONE,
    ResultCode.BAD_DATA: ErrorStatus.INVALID_ARGUMENT,
    ResultCode.UNEXPECTED_NULL: ErrorStatus.INVALID_ARGUMENT,
    ResultCode.UNAVAILABLE_DEVICE: ErrorStatus.DEVICE_UNAVAILABLE,
    ResultCode.OUTPUT_INSUFFICIENT_SIZE: ErrorStatus.OUTPUT_INSUFFICIENT_SIZE,
    ResultCode.MISSED_DEADLINE_TRANSIENT: ErrorStatus.MISSED_DEADLINE_TRANSIENT,
    ResultCode.MISSED_DEADLINE_PERSISTENT: ErrorStatus.MISSED_DEADLINE_PERSISTENT,
    ResultCode.RESOURCE_EXHAUSTED_TRANSIENT: ErrorStatus.RESOURCE_EXHAUSTED_TRANSIENT,
    ResultCode.RESOURCE_EXHAUSTED_PERSISTENT: ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT,
}


def status_to_code(status: ErrorStatus) -> ResultCode:
    """Map a HAL status to the NDK result code, as the R runtime's ``convertErrorStatusToResultCode``."""
    return _STATUS_TO_CODE[status]


def code_to_status(code: ResultCode) -> ErrorStatus:
    """Map an NDK result code to a HAL status; unknown codes become GENERAL_FAILURE."""
    return _CODE_TO_STATUS.get(code, ErrorStatus.GENERAL_FAILURE)
