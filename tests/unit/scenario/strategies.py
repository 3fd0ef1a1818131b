"""Hypothesis strategies that build valid ``Scenario`` values (every one must load back)."""

from __future__ import annotations

import string

from hypothesis import assume
from hypothesis import strategies as st

from nnemu._emulator import build_model
from nnemu.hal import DeviceType, ExecutionPreference, HalVersion, OperationType, Priority
from nnemu.scenario import (
    APP_COUNTERS,
    CPU_DEVICE_NAME,
    DEVICE_METRICS,
    LATENCY_STATS,
    PRESETS,
    RESULT_CODE_NAMES,
    AppSpec,
    CpuSpec,
    DeadlinePolicy,
    DeviceCostSpec,
    DeviceSpec,
    ExecutionMode,
    Expectation,
    ExpectOp,
    FaultKind,
    FaultSpec,
    IpcSpec,
    LayerSpec,
    ModelSpec,
    PerformanceSpec,
    PerfSpec,
    PreemptionKind,
    RetrySpec,
    Scenario,
    SchedulerKind,
    WorkloadKind,
    WorkloadSpec,
)
from nnemu.scenario._limits import (
    MAX_JITTER,
    MAX_RATE_HZ,
    MAX_RATIO,
    MAX_TIME_MS,
    MIN_PERIOD_MS,
    MIN_RATIO,
)

_WITH_FILTER = {
    OperationType.CONV_2D,
    OperationType.DEPTHWISE_CONV_2D,
    OperationType.FULLY_CONNECTED,
}

# App and device names appear in report paths: no dots, no whitespace.
names = st.text(
    alphabet=st.sampled_from(string.ascii_letters + string.digits + "-_")
    | st.characters(categories=["L"]),
    min_size=1,
    max_size=10,
).filter(lambda name: name != CPU_DEVICE_NAME)
free_text = st.text(max_size=20)


def floats(
    min_value: float = 0.0, *, exclude_min: bool = False, max_value: float = MAX_TIME_MS
) -> st.SearchStrategy[float]:
    """Finite floats in a range."""
    return st.floats(
        min_value, max_value, exclude_min=exclude_min, allow_nan=False, allow_infinity=False
    )


non_negative = floats()
positive = floats(exclude_min=True)
ratios = floats(MIN_RATIO, max_value=MAX_RATIO)
periods = floats(MIN_PERIOD_MS)
at_least_one = floats(1.0, max_value=100.0)
counts = st.integers(1, 64)


def optional(strategy: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    """``strategy`` or None."""
    return st.none() | strategy


perf_specs = st.builds(PerfSpec, exec_time=ratios, power_usage=ratios)
performance_specs = st.builds(
    PerformanceSpec,
    float32=perf_specs,
    quant8=perf_specs,
    relaxed=optional(perf_specs),
    other=perf_specs,
    if_=perf_specs,
    while_=perf_specs,
)
cost_specs = st.builds(
    DeviceCostSpec,
    prepare_ms=non_negative,
    prepare_ms_per_op=non_negative,
    launch_us=non_negative,
    jitter=floats(max_value=MAX_JITTER),
)


@st.composite
def fault_specs(draw: st.DrawFn) -> FaultSpec:
    """A fault with exactly the fields its kind uses."""
    kind = draw(st.sampled_from(FaultKind))
    if kind is FaultKind.TRANSIENT_FAILURE:
        return FaultSpec(kind=kind, probability=draw(floats(0.0, max_value=1.0)))
    at_ms = draw(floats(max_value=MAX_TIME_MS / 2))
    if kind is FaultKind.CRASH:
        return FaultSpec(kind=kind, at_ms=at_ms)
    until_ms = draw(st.none() | floats(at_ms, exclude_min=True))
    factor = draw(at_least_one) if kind is FaultKind.SLOWDOWN else 1.0
    return FaultSpec(kind=kind, at_ms=at_ms, until_ms=until_ms, factor=factor)


def device_specs(name: str) -> st.SearchStrategy[DeviceSpec]:
    """A device called ``name``."""
    return st.builds(
        DeviceSpec,
        name=st.just(name),
        hal_version=st.sampled_from(HalVersion),
        type=st.sampled_from([t for t in DeviceType if t is not DeviceType.UNKNOWN]),
        version_string=free_text,
        performance=performance_specs,
        supported_operations=optional(
            st.lists(st.sampled_from(OperationType), max_size=4).map(tuple)
        ),
        compute_units=counts,
        worker_threads=counts,
        binder_threads=optional(counts),
        memory_mb=positive,
        cost=cost_specs,
        scheduler=st.sampled_from(SchedulerKind),
        preemption=st.sampled_from(PreemptionKind),
        deadline_policy=st.sampled_from(DeadlinePolicy),
        queue_limit=optional(st.integers(0, 100)),
        faults=st.lists(fault_specs(), max_size=3).map(tuple),
    )


shapes = st.lists(st.integers(1, 512), min_size=1, max_size=4).map(tuple)


@st.composite
def layer_specs(draw: st.DrawFn) -> LayerSpec:
    """A layer, with a filter shape exactly when its type takes one."""
    kind = draw(st.sampled_from(OperationType))
    return LayerSpec(
        type=kind, output=draw(shapes), filter=draw(shapes) if kind in _WITH_FILTER else None
    )


@st.composite
def model_specs(draw: st.DrawFn, name: str) -> ModelSpec:
    """A preset model or a chain of layers, called ``name``."""
    dtype = draw(st.sampled_from(["float32", "quant8"]))
    relaxed = draw(st.booleans())
    if draw(st.booleans()):
        params = draw(
            st.dictionaries(
                st.from_regex(r"[a-z_]{1,8}", fullmatch=True),
                st.integers(1, 64),
            )
        )
        preset = draw(st.sampled_from(PRESETS))
        if preset == "lstm":
            dtype = "float32"  # LSTM has no quant8 form
        return ModelSpec(
            name=name,
            preset=preset,
            dtype=dtype,
            params=tuple(sorted(params.items())),
            relaxed=relaxed,
        )
    layers = draw(st.lists(layer_specs(), min_size=1, max_size=3).map(tuple))
    spec = ModelSpec(name=name, dtype=dtype, layers=layers, relaxed=relaxed)
    assume(_builds(spec))  # the loader refuses a chain the HAL cannot build
    return spec


def _builds(spec: ModelSpec) -> bool:
    """Whether the HAL builds the model ``spec`` describes."""
    try:
        build_model(spec)
    except (ValueError, ArithmeticError, LookupError, TypeError):
        return False
    return True


@st.composite
def workload_specs(draw: st.DrawFn, *, needs_executions: bool) -> WorkloadSpec:
    """A workload with the fields its kind needs (``executions`` too when ``needs_executions``)."""
    kind = draw(st.sampled_from(WorkloadKind))
    executions = draw(counts if needs_executions else optional(counts))
    # Without a duration the last arrival must come within the hour: 64 gaps of at most
    # 1/130 of it, after a start in its first half.
    most = MAX_TIME_MS / 130 if needs_executions else MAX_TIME_MS
    fields: dict[str, object] = {}
    if kind is WorkloadKind.PERIODIC:
        fields["period_ms"] = draw(floats(MIN_PERIOD_MS, max_value=most))
    elif kind is WorkloadKind.POISSON:
        fields["rate_hz"] = draw(floats(1000 / most, max_value=MAX_RATE_HZ))
    elif kind is WorkloadKind.BURST:
        fields["burst_size"] = draw(counts)
        fields["burst_interval_ms"] = draw(floats(MIN_PERIOD_MS, max_value=most))
    elif kind is WorkloadKind.TRACE:
        fields["arrivals_ms"] = tuple(sorted(draw(st.lists(non_negative, min_size=1, max_size=5))))
    else:
        fields["think_ms"] = draw(floats(max_value=most))
    start_ms = draw(floats(max_value=MAX_TIME_MS / 2))
    return WorkloadSpec(kind=kind, executions=executions, start_ms=start_ms, **fields)  # type: ignore[arg-type]


retry_specs = st.builds(
    RetrySpec, max_attempts=st.integers(0, 5), backoff_ms=non_negative, backoff_factor=at_least_one
)


@st.composite
def app_specs(
    draw: st.DrawFn, name: str, models: list[str], devices: list[str], *, has_duration: bool
) -> AppSpec:
    """An app called ``name`` that uses one of ``models`` and some of ``devices``."""
    chosen = draw(
        optional(
            st.lists(
                st.sampled_from([*devices, CPU_DEVICE_NAME]), min_size=1, max_size=3, unique=True
            )
        )
    )
    single = chosen is not None and len(chosen) == 1
    timeouts = optional(non_negative) if single else st.none()
    return AppSpec(
        name=name,
        uid=draw(st.integers(0, 2**31)),
        model=draw(st.sampled_from(models)),
        devices=None if chosen is None else tuple(chosen),
        preference=draw(st.sampled_from(ExecutionPreference)),
        priority=draw(st.sampled_from(Priority)),
        compile_timeout_ms=draw(timeouts),
        execution_timeout_ms=draw(timeouts),
        loop_timeout_ms=draw(optional(non_negative)),
        execution_mode=draw(st.sampled_from(ExecutionMode)),
        measure_timing=draw(st.booleans()),
        threads=draw(counts),
        workload=draw(workload_specs(needs_executions=not has_duration)),
        retry=draw(retry_specs),
        drop_late_frames=draw(st.booleans()),
    )


@st.composite
def expectations(draw: st.DrawFn, apps: list[str], devices: list[str]) -> Expectation:
    """An expectation on one of ``apps`` or ``devices``, written as ``<path> <op> <number>``."""
    if apps and draw(st.booleans()):
        app = draw(st.sampled_from(apps))
        path = draw(
            st.sampled_from([("apps", app, m) for m in APP_COUNTERS])
            | st.sampled_from([("apps", app, "latency_ms", s) for s in LATENCY_STATS])
            | st.sampled_from([("apps", app, "errors", c) for c in RESULT_CODE_NAMES])
        )
    else:
        device = draw(st.sampled_from([*devices, CPU_DEVICE_NAME]))
        path = ("devices", device, draw(st.sampled_from(DEVICE_METRICS)))
    op = draw(st.sampled_from(ExpectOp))
    value = draw(floats(-1e9, max_value=1e9))
    return Expectation(text=f"{'.'.join(path)} {op.value} {value!r}", path=path, op=op, value=value)


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    """A valid scenario: unique names, resolvable references, apps that finish."""
    device_names = draw(st.lists(names, max_size=3, unique=True))
    model_names = draw(st.lists(free_text.filter(bool), min_size=1, max_size=3, unique=True))
    app_names = draw(st.lists(names, max_size=3, unique=True))
    duration_ms = draw(optional(positive))
    has_duration = duration_ms is not None
    return Scenario(
        name=draw(free_text.filter(bool)),
        seed=draw(st.integers(-(2**63), 2**63)),
        duration_ms=duration_ms,  # type: ignore[arg-type]
        devices=tuple(draw(device_specs(name)) for name in device_names),
        cpu=draw(st.builds(CpuSpec, ns_per_mac=ratios, ns_per_element=ratios)),
        ipc=draw(
            st.builds(
                IpcSpec,
                latency_us=non_negative,
                jitter=floats(max_value=MAX_JITTER),
                us_per_kb=non_negative,
                binder_threads=counts,
            )
        ),
        models=tuple(draw(model_specs(name)) for name in model_names),
        apps=tuple(
            draw(app_specs(name, model_names, device_names, has_duration=has_duration))
            for name in app_names
        ),
        expect=tuple(draw(st.lists(expectations(app_names, device_names), max_size=3))),
    )
