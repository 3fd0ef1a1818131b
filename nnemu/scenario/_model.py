"""The validated, frozen form of a scenario (what ``load_scenario`` returns).

Every field has a default where the scenario format gives one; docs/scenario-format.md
documents the YAML keys, which have the same names as these fields.

Each number's range is declared once, on its field (``limited(bound, default)``,
``_limits.py``); the validators and ``__attrs_post_init__`` rules make a spec that breaks
the format unbuildable in code too (``nnemu.errors.SpecValueError``), and the loader
reads the same declarations and tables for its positioned messages.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any, Final

import attrs

from nnemu.errors import SpecValueError
from nnemu.hal import DeviceType, ExecutionPreference, HalVersion, OperationType, Priority
from nnemu.hal.presets import DTYPES as _HAL_DTYPES
from nnemu.hal.presets import PRESETS as _HAL_PRESETS
from nnemu.scenario._limits import (
    BACKOFF,
    COUNT0,
    COUNT1,
    DURATION,
    EXECUTIONS,
    FACTOR,
    INT0,
    INT1,
    JITTER,
    MAX_SCENARIO_THREADS,
    MEMORY,
    PARAM,
    PERIOD,
    RATE,
    RATIO,
    SEED,
    THREADS,
    TIME,
    TIME_US,
    UID,
    UNIT,
    limited,
)
from nnemu.tracer import NAME_RULE, name_problem

CPU_DEVICE_NAME: Final = "nnapi-reference"
"""The runtime's CPU device: usable in ``apps[].devices``, never a ``devices[].name``."""
PRESETS: Final = tuple(_HAL_PRESETS)
"""Model presets ``models[].preset`` may name (the HAL's builders, nnemu.hal.presets)."""
DTYPES: Final = _HAL_DTYPES
"""Values of ``models[].dtype``."""


def _one_of(choices: tuple[str, ...]) -> Any:
    """A validator: the value is None or one of ``choices``."""

    def check(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if value is not None and value not in choices:
            raise SpecValueError(
                type(instance).__name__, attribute.name, f"one of {', '.join(choices)}", value
            )

    return check


def _pair(instance: object, attribute: attrs.Attribute[Any], value: tuple[int, ...]) -> None:
    """A validator: two counts."""
    if len(value) != 2:
        raise SpecValueError(
            type(instance).__name__, attribute.name, "two counts [model files, data files]", value
        )


def _trace_name(instance: object, attribute: attrs.Attribute[Any], value: str) -> None:
    """A validator: an app or device name every trace format carries (``nnemu.tracer.name_problem``)."""
    if name_problem(value) is not None:
        raise SpecValueError(type(instance).__name__, attribute.name, f"a name {NAME_RULE}", value)


def _not_cpu(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """A validator: a driver's device is not the runtime's CPU device."""
    if value == CPU_DEVICE_NAME:
        raise SpecValueError(
            type(instance).__name__,
            attribute.name,
            f"a device name other than {CPU_DEVICE_NAME!r} (the runtime's CPU device)",
            value,
        )


class SchedulerKind(enum.Enum):
    """How a device orders waiting executions."""

    FIFO = "fifo"
    PER_APP_PRIORITY = "per_app_priority"
    GLOBAL_PRIORITY = "global_priority"


class PreemptionKind(enum.Enum):
    """What a device does to running low-priority work when higher-priority work waits."""

    NONE = "none"
    CHECKPOINT = "checkpoint"
    RESTART = "restart"


class DeadlinePolicy(enum.Enum):
    """What a driver does once a running execution's deadline has passed."""

    ABORT = "abort"
    IGNORE = "ignore"


class FaultKind(enum.Enum):
    """Faults a scenario can inject into a driver."""

    CRASH = "crash"
    BUSY = "busy"
    OFFLINE = "offline"
    TRANSIENT_FAILURE = "transient_failure"
    SLOWDOWN = "slowdown"


class ExecutionMode(enum.Enum):
    """How an app issues its executions through the NDK."""

    SYNC = "sync"
    ASYNC = "async"
    FENCED = "fenced"
    BURST = "burst"


class MemoryMode(enum.Enum):
    """Where an app keeps its inputs and outputs between executions."""

    ASHMEM = "ashmem"
    """Shared memory the driver reads and writes in every execution (``setInput``)."""
    DEVICE = "device"
    """Device memory (``Memory_createFromDesc``), the inputs copied in by the first execution,
    the outputs copied out (``Memory_copy``) after every execution."""
    AHWB = "ahwb"
    """BLOB-mode AHardwareBuffers (``Memory_createFromAHardwareBuffer``), one per input and
    output, which every execution reads and writes in place (``setInput/OutputFromMemory``)."""


class WorkloadKind(enum.Enum):
    """Arrival process of an app's executions."""

    PERIODIC = "periodic"
    CLOSED_LOOP = "closed_loop"
    POISSON = "poisson"
    BURST = "burst"
    TRACE = "trace"


# Rules of one spec that relate its fields: the loader reports them with positions
# (``_rules.py``), and the classes below refuse them when built in code.
LAYERS_WITH_FILTER: Final = frozenset(
    {OperationType.CONV_2D, OperationType.DEPTHWISE_CONV_2D, OperationType.FULLY_CONNECTED}
)
"""Layer types that need (and alone accept) a ``filter`` shape."""
WORKLOAD_FIELDS: Final = {
    "period_ms": WorkloadKind.PERIODIC,
    "rate_hz": WorkloadKind.POISSON,
    "think_ms": WorkloadKind.CLOSED_LOOP,
    "burst_size": WorkloadKind.BURST,
    "burst_interval_ms": WorkloadKind.BURST,
    "arrivals_ms": WorkloadKind.TRACE,
    "arrivals_file": WorkloadKind.TRACE,
}
"""Workload fields that only one kind uses: field -> kind."""
WORKLOAD_REQUIRED: Final = {
    WorkloadKind.PERIODIC: ("period_ms",),
    WorkloadKind.POISSON: ("rate_hz",),
    WorkloadKind.CLOSED_LOOP: (),
    WorkloadKind.BURST: ("burst_size", "burst_interval_ms"),
    WorkloadKind.TRACE: (),
}
"""The fields each workload kind needs (a trace workload: ``arrivals_ms`` or ``arrivals_file``,
checked on its own)."""
SYNC_FENCES_RULE: Final = "false unless hal_version is 1.3 or AIDL (executeFenced)"
"""Which devices may return sync fences."""
HARDWARE_BUFFERS_RULE: Final = "false unless hal_version is 1.2 or later (validatePool)"
"""Which devices may map non-BLOB AHardwareBuffers."""
PIPELINE_RULE: Final = "1 unless execution_mode is fenced and reusable is false"
"""Which apps may chain fenced executions."""
_WINDOW: Final = frozenset({"at_ms", "until_ms"})
FAULT_FIELDS: Final = {
    FaultKind.CRASH: (("at_ms",), frozenset({"at_ms"})),
    FaultKind.BUSY: (("at_ms",), _WINDOW),
    FaultKind.OFFLINE: (("at_ms",), _WINDOW),
    FaultKind.TRANSIENT_FAILURE: (("probability",), frozenset({"probability"})),
    FaultKind.SLOWDOWN: (("at_ms",), _WINDOW | {"factor"}),
}
"""Fault fields by kind: (required, allowed)."""


def _kind_rules(
    spec: Any, kind: enum.Enum, required: tuple[str, ...], allowed: Iterable[str]
) -> None:
    """Raise SpecValueError for a field ``kind`` needs but is None, or one it does not use
    that is not its default (the loader also refuses it given with its default)."""
    owner = type(spec).__name__
    what = "fault" if isinstance(kind, FaultKind) else "workload"
    for attr in required:
        if getattr(spec, attr) is None:
            raise SpecValueError(owner, attr, f"a value (needed by a {kind.value} {what})", None)
    for field in attrs.fields(type(spec)):
        value = getattr(spec, field.name)
        if field.name not in allowed and value != field.default:
            raise SpecValueError(owner, field.name, f"its default with kind {kind.value}", value)


@attrs.frozen(kw_only=True)
class PerfSpec:
    """PerformanceInfo ratios relative to the reference CPU (lower is better)."""

    exec_time: float = limited(RATIO, 1.0)
    """Execution time ratio (> 0)."""
    power_usage: float = limited(RATIO, 1.0)
    """Power usage ratio (> 0)."""


@attrs.frozen(kw_only=True)
class PerformanceSpec:
    """A device's capabilities table."""

    float32: PerfSpec = PerfSpec()
    """Ops whose first input is (TENSOR_)FLOAT32."""
    quant8: PerfSpec = PerfSpec()
    """Ops whose first input is a quantized 8-bit tensor."""
    relaxed: PerfSpec | None = None
    """FP32 computed as FP16 (relaxed models); None = same as float32."""
    other: PerfSpec = PerfSpec()
    """Every other operand type (INT32, FLOAT16, BOOL, ...)."""
    if_: PerfSpec = PerfSpec()
    """The IF operation itself (HAL 1.3; YAML key ``if``)."""
    while_: PerfSpec = PerfSpec()
    """The WHILE operation itself (HAL 1.3; YAML key ``while``)."""


@attrs.frozen(kw_only=True)
class DeviceCostSpec:
    """The cost model of a device's driver."""

    prepare_ms: float = limited(TIME, 5.0)
    """Fixed part of model preparation (>= 0)."""
    prepare_ms_per_op: float = limited(TIME, 0.2)
    """Preparation time per operation (>= 0)."""
    launch_us: float = limited(TIME_US, 20.0)
    """Driver overhead per execution, before the first operation (>= 0)."""
    jitter: float = limited(JITTER, 0.0)
    """Log-normal sigma applied to each execution's compute time (>= 0; 0 = deterministic)."""
    prepare_from_cache_ms: float = limited(TIME, 1.0)
    """prepareModelFromCache time, when the driver caches compilations (>= 0)."""
    io_us_per_kb: float = limited(TIME_US, 0.0)
    """Driver time per KiB to move an execution's shared-memory inputs and outputs to and
    from the device (0: free); device memory (an app's ``memory: device``) skips it."""


@attrs.frozen(kw_only=True)
class FaultSpec:
    """One injected fault."""

    kind: FaultKind
    """What goes wrong."""
    at_ms: float | None = limited(TIME, None)
    """When it starts (crash, busy, offline, slowdown); virtual ms from the run's start."""
    until_ms: float | None = limited(TIME, None)
    """When it ends (busy, offline, slowdown); None = never."""
    probability: float | None = limited(UNIT, None)
    """Per-execution probability (transient_failure), in [0, 1]."""
    factor: float = limited(FACTOR, 1.0)
    """Slow-down factor on compute time (slowdown; >= 1)."""

    def __attrs_post_init__(self) -> None:
        required, allowed = FAULT_FIELDS[self.kind]
        _kind_rules(self, self.kind, required, allowed | {"kind"})
        if self.at_ms is not None and self.until_ms is not None and self.until_ms <= self.at_ms:
            raise SpecValueError(
                "FaultSpec", "until_ms", f"a time after at_ms ({self.at_ms:g})", self.until_ms
            )


@attrs.frozen(kw_only=True)
class DeviceSpec:
    """One emulated driver service and its device."""

    name: str = attrs.field(validator=[_trace_name, _not_cpu])
    """Device name as ANeuralNetworksDevice_getName reports it; unique, not 'nnapi-reference'."""
    hal_version: HalVersion = HalVersion.V1_3
    """HIDL interface version the driver implements."""
    type: DeviceType = DeviceType.ACCELERATOR
    """Device type (reported by 1.2+ drivers)."""
    version_string: str = "nnemu-driver-1"
    """getVersionString answer (1.2+)."""
    performance: PerformanceSpec = PerformanceSpec()
    """Capabilities."""
    supported_operations: tuple[OperationType, ...] | None = None
    """Operation types the driver supports; None = every non-OEM operation."""
    compute_units: int = limited(THREADS, 1)
    """How many executions the device runs at once (>= 1)."""
    worker_threads: int = limited(THREADS, 2)
    """Driver threads for asynchronous executions and preparations (>= 1)."""
    binder_threads: int | None = limited(THREADS, None)
    """Size of the service's binder thread pool; None = ipc.binder_threads."""
    memory_mb: float = limited(MEMORY, 1024.0)
    """Device memory for prepared models (> 0)."""
    cache_files: tuple[int, ...] = limited(COUNT0, (0, 0), validator=_pair)
    """getNumberOfCacheFilesNeeded answer (model files, data files); (0, 0) = no caching (HAL 1.2+)."""
    cost: DeviceCostSpec = DeviceCostSpec()
    """Cost model."""
    scheduler: SchedulerKind = SchedulerKind.PER_APP_PRIORITY
    """Order of waiting executions."""
    preemption: PreemptionKind = PreemptionKind.NONE
    """Preemption of running lower-priority work."""
    deadline_policy: DeadlinePolicy = DeadlinePolicy.ABORT
    """Abort at the next checkpoint once a deadline has passed, or ignore it."""
    queue_limit: int | None = limited(INT0, None)
    """Most executions waiting for a compute unit; None = unbounded."""
    faults: tuple[FaultSpec, ...] = ()
    """Injected faults."""
    sync_fences: bool = False
    """executeFenced returns at once with a sync fence that a worker thread signals when the
    work ends (in error when it fails), instead of working inside the call as the sample
    driver does (HAL 1.3 and AIDL only)."""

    hardware_buffers: bool = False
    """The driver maps AHardwareBuffers of non-BLOB formats (``hardware_buffer`` pools, read
    in place), which the sample driver cannot (GENERAL_FAILURE) (HAL 1.2 and later)."""

    def __attrs_post_init__(self) -> None:
        if self.sync_fences and not self.hal_version.at_least(HalVersion.V1_3):
            raise SpecValueError("DeviceSpec", "sync_fences", SYNC_FENCES_RULE, self.sync_fences)
        if self.hardware_buffers and not self.hal_version.at_least(HalVersion.V1_2):
            raise SpecValueError(
                "DeviceSpec", "hardware_buffers", HARDWARE_BUFFERS_RULE, self.hardware_buffers
            )


@attrs.frozen(kw_only=True)
class CpuSpec:
    """The reference CPU: the runtime's ``nnapi-reference`` device and the base of all costs."""

    ns_per_mac: float = limited(RATIO, 0.1)
    """Time for one multiply-accumulate (> 0)."""
    ns_per_element: float = limited(RATIO, 0.05)
    """Time per output element of element-wise operations (> 0)."""


@attrs.frozen(kw_only=True)
class IpcSpec:
    """The HIDL/binder transport model."""

    latency_us: float = limited(TIME_US, 50.0)
    """Mean one-way transaction latency (>= 0)."""
    jitter: float = limited(JITTER, 0.0)
    """Log-normal sigma on each latency (>= 0)."""
    us_per_kb: float = limited(TIME_US, 0.0)
    """Additional latency per KiB of payload (>= 0)."""
    binder_threads: int = limited(THREADS, 4)
    """Binder threads per process (>= 1)."""


@attrs.frozen(kw_only=True)
class LayerSpec:
    """One layer of an explicit model: an operation and its output shape."""

    type: OperationType
    """Operation type."""
    output: tuple[int, ...] = limited(INT1)
    """Output tensor shape."""
    filter: tuple[int, ...] | None = limited(INT1, None)
    """Filter/weights shape for CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED."""

    def __attrs_post_init__(self) -> None:
        if (self.type in LAYERS_WITH_FILTER) != (self.filter is not None):
            needs = "a shape" if self.type in LAYERS_WITH_FILTER else "None"
            raise SpecValueError(
                "LayerSpec", "filter", f"{needs} with type {self.type.name}", self.filter
            )


@attrs.frozen(kw_only=True)
class ModelSpec:
    """A model: a preset with parameters, or an explicit chain of layers."""

    name: str
    """Name apps refer to."""
    preset: str | None = attrs.field(default=None, validator=_one_of(PRESETS))
    """One of the presets (see nnemu.hal.presets); exclusive with ``layers``."""
    dtype: str = attrs.field(default="float32", validator=_one_of(DTYPES))
    """float32 or quant8."""
    params: tuple[tuple[str, int | float], ...] = limited(PARAM, ())
    """Preset parameters (e.g. input_size, units, steps), sorted by key."""
    layers: tuple[LayerSpec, ...] = ()
    """Explicit chain of layers; exclusive with ``preset``."""
    relaxed: bool = False
    """relaxComputationFloat32toFloat16."""
    dynamic_outputs: bool = False
    """The model's outputs have unknown dimensions (0) at compile time; an execution
    produces the dimensions the model would otherwise have."""

    def __attrs_post_init__(self) -> None:
        if (self.preset is None) == (not self.layers):
            found = "neither" if self.preset is None else "both"
            raise SpecValueError("ModelSpec", "preset", "exactly one of preset or layers", found)
        if self.params and self.preset is None:
            raise SpecValueError("ModelSpec", "params", "() without a preset", self.params)


@attrs.frozen(kw_only=True)
class WorkloadSpec:
    """When an app issues its executions."""

    kind: WorkloadKind = WorkloadKind.CLOSED_LOOP
    """Arrival process."""
    executions: int | None = limited(EXECUTIONS, None)
    """How many executions in all; None = until the scenario's duration_ms."""
    start_ms: float = limited(TIME, 0.0)
    """When the app starts (virtual ms)."""
    period_ms: float | None = limited(PERIOD, None)
    """Periodic: time between arrivals (> 0, required)."""
    rate_hz: float | None = limited(RATE, None)
    """Poisson: mean arrival rate (> 0, required)."""
    think_ms: float = limited(TIME, 0.0)
    """Closed loop: pause between one completion and the next arrival."""
    burst_size: int | None = limited(EXECUTIONS, None)
    """Burst: executions per burst (>= 1, required)."""
    burst_interval_ms: float | None = limited(PERIOD, None)
    """Burst: time between burst starts (> 0, required)."""
    arrivals_ms: tuple[float, ...] = limited(TIME, ())
    """Trace: explicit arrival times after ``start_ms``, non-decreasing (replays use it); given,
    or read from ``arrivals_file``."""
    arrivals_file: str | None = None
    """Trace: the CSV or Parquet file ``arrivals_ms`` was read from (the loader reads it; a
    path relative to the scenario's directory as written, this one as resolved)."""

    def __attrs_post_init__(self) -> None:
        uses = {attr for attr, kind in WORKLOAD_FIELDS.items() if kind is self.kind}
        common = {"kind", "executions", "start_ms"}
        _kind_rules(self, self.kind, WORKLOAD_REQUIRED[self.kind], uses | common)
        if any(b < a for a, b in zip(self.arrivals_ms, self.arrivals_ms[1:], strict=False)):
            raise SpecValueError(
                "WorkloadSpec", "arrivals_ms", "non-decreasing times", self.arrivals_ms
            )


@attrs.frozen(kw_only=True)
class RetrySpec:
    """How an app retries TRANSIENT errors (never PERSISTENT ones)."""

    max_attempts: int = limited(COUNT0, 0)
    """Retries after the first attempt (0 = no retry)."""
    backoff_ms: float = limited(TIME, 1.0)
    """Delay before the first retry."""
    backoff_factor: float = limited(BACKOFF, 2.0)
    """Multiplier of the delay for each further retry (>= 1)."""


@attrs.frozen(kw_only=True)
class AppSpec:
    """One application process and its workload."""

    name: str = attrs.field(validator=_trace_name)
    """Process name; unique."""
    uid: int = limited(UID)
    """Android uid (priorities are relative among one uid's models)."""
    model: str
    """Name of a model in ``models``."""
    devices: tuple[str, ...] | None = None
    """Compile for these devices (createForDevices); None = all devices, with CPU fallback."""
    preference: ExecutionPreference = ExecutionPreference.FAST_SINGLE_ANSWER
    """Compilation preference."""
    priority: Priority = Priority.MEDIUM
    """Compilation priority."""
    compile_timeout_ms: float | None = limited(TIME, None)
    """Compilation_setTimeout (single-device compilations only)."""
    execution_timeout_ms: float | None = limited(TIME, None)
    """Execution_setTimeout (single-device compilations only)."""
    loop_timeout_ms: float | None = limited(TIME, None)
    """Execution_setLoopTimeout."""
    execution_mode: ExecutionMode = ExecutionMode.SYNC
    """compute, startCompute + Event_wait, or startComputeWithDependencies."""
    measure_timing: bool = False
    """Execution_setMeasureTiming."""
    threads: int = limited(THREADS, 1)
    """App threads issuing executions concurrently (>= 1)."""
    workload: WorkloadSpec = WorkloadSpec()
    """Arrivals."""
    retry: RetrySpec = RetrySpec()
    """Retry policy for TRANSIENT errors."""
    drop_late_frames: bool = False
    """Drop an execution whose arrival is already older than its timeout before it starts."""
    caching: bool = False
    """Compilation_setCaching with the app's cache directory and a token for its model."""
    compilations: int = limited(COUNT1, 1)
    """How many times the app compiles its model before running its workload (>= 1; app restarts)."""
    reusable: bool = False
    """Execution_setReusable: each app thread creates one execution and computes it for
    every one of its executions."""
    output_bytes: tuple[int, ...] = limited(INT0, ())
    """Execution_setOutput's buffer length per model output (missing: exactly enough)."""
    memory: MemoryMode = MemoryMode.ASHMEM
    """Inputs and outputs in shared memory, or in device memory (Memory_createFromDesc)."""
    pipeline: int = limited(COUNT1, 1)
    """Fenced executions per frame (>= 1): each one's startComputeWithDependencies depends
    on the previous one's event, and the frame waits for the last (execution_mode fenced,
    not reusable, when > 1)."""

    def __attrs_post_init__(self) -> None:
        if self.pipeline > 1 and (self.execution_mode is not ExecutionMode.FENCED or self.reusable):
            raise SpecValueError("AppSpec", "pipeline", PIPELINE_RULE, self.pipeline)
        for attr in ("compile_timeout_ms", "execution_timeout_ms"):
            if getattr(self, attr) is not None and (self.devices is None or len(self.devices) != 1):
                raise SpecValueError(
                    "AppSpec",
                    attr,
                    "None unless 'devices' lists exactly one device (setTimeout needs a "
                    "single-device compilation)",
                    getattr(self, attr),
                )


class ExpectOp(enum.Enum):
    """Comparison operators of an expectation."""

    LT = "<"
    LE = "<="
    GT = ">"
    GE = ">="
    EQ = "=="
    NE = "!="


@attrs.frozen(kw_only=True)
class Expectation:
    """An assertion on the report, e.g. ``apps.camera.latency_ms.p95 <= 30``."""

    text: str
    """The expectation as written."""
    path: tuple[str, ...]
    """Report path, e.g. ('apps', 'camera', 'latency_ms', 'p95')."""
    op: ExpectOp
    """Comparison."""
    value: float
    """Right-hand side."""


@attrs.frozen(kw_only=True)
class Scenario:
    """A whole scenario, validated."""

    name: str
    """Scenario name (report and trace titles)."""
    seed: int = limited(SEED, 0)
    """Seed of every random generator in the run."""
    duration_ms: float | None = limited(DURATION, None)
    """Stop the run at this virtual time; None = when every app has finished."""
    devices: tuple[DeviceSpec, ...] = ()
    """Driver services (the CPU device nnapi-reference is always added by the runtime)."""
    cpu: CpuSpec = CpuSpec()
    """Reference CPU cost base."""
    ipc: IpcSpec = IpcSpec()
    """Transport model."""
    models: tuple[ModelSpec, ...] = ()
    """Models apps use."""
    apps: tuple[AppSpec, ...] = ()
    """Applications."""
    expect: tuple[Expectation, ...] = ()
    """Assertions checked after the run."""
    source: str = "<string>"
    """Where the scenario came from (file name)."""

    def __attrs_post_init__(self) -> None:
        _check_references(self)

    def model(self, name: str) -> ModelSpec:
        """The model spec called ``name``."""
        for spec in self.models:
            if spec.name == name:
                return spec
        raise KeyError(name)


def scenario_threads(devices: Iterable[DeviceSpec], apps: Iterable[AppSpec], ipc: IpcSpec) -> int:
    """How many threads a scenario's processes start with: each device's worker and binder
    threads, each app's threads and binder threads."""
    total = sum(d.worker_threads + (d.binder_threads or ipc.binder_threads) for d in devices)
    return total + sum(app.threads + ipc.binder_threads for app in apps)


def _check_references(scenario: Scenario) -> None:
    """Raise SpecValueError for a repeated name or an app naming a model or device the
    scenario lacks, or whose workload never ends."""
    for attr in ("devices", "models", "apps"):
        names = [spec.name for spec in getattr(scenario, attr)]
        for name in names:
            if names.count(name) > 1:
                raise SpecValueError("Scenario", attr, "each name once", name)
    threads = scenario_threads(scenario.devices, scenario.apps, scenario.ipc)
    if threads > MAX_SCENARIO_THREADS:
        raise SpecValueError(
            "Scenario", "devices", f"at most {MAX_SCENARIO_THREADS} threads in all", threads
        )
    models = [model.name for model in scenario.models]
    devices = [*(device.name for device in scenario.devices), CPU_DEVICE_NAME]
    for app in scenario.apps:
        if app.model not in models:
            raise SpecValueError(
                "AppSpec", "model", f"the name of a model ({', '.join(models)})", app.model
            )
        for device in app.devices or ():
            if device not in devices:
                raise SpecValueError(
                    "AppSpec", "devices", f"names of devices ({', '.join(devices)})", device
                )
        workload = app.workload
        if (
            workload.executions is None
            and workload.kind is not WorkloadKind.TRACE
            and scenario.duration_ms is None
        ):
            raise SpecValueError(
                "WorkloadSpec",
                "executions",
                f"a count or a scenario duration_ms (app {app.name} would never finish)",
                None,
            )
