"""Hypothesis strategies for property tests of deadline and priority handling.

This module needs the ``test`` extra (``pip install 'nnemu[test]'``): it imports
hypothesis at import time and raises an ``ImportError`` that says so when it is
missing.  Nothing else in nnemu imports it.

The strategies generate valid, small, fast ``Scenario`` values (a run takes a few
milliseconds of wall time), and ``run_with_records`` runs one and keeps what a
property needs: the report, each app's execution records and each device's job
history.  A property test of a deadline rule reads like the rule::

    from hypothesis import given, settings
    from nnemu.hal import ErrorStatus
    from nnemu.scenario import DeadlinePolicy, FaultKind, WorkloadKind
    from nnemu.testing import run_with_records, scenarios

    @settings(max_examples=50, deadline=None)
    @given(
        scenarios(
            deadline_policies=[DeadlinePolicy.ABORT],
            jitter=False,
            fault_kinds=[FaultKind.BUSY, FaultKind.OFFLINE, FaultKind.CRASH],
            workload_kinds=[WorkloadKind.PERIODIC, WorkloadKind.POISSON, WorkloadKind.BURST],
            pinned=True,
        )
    )
    def test_successful_jobs_meet_their_deadline(scenario):
        records = run_with_records(scenario)
        for jobs in records.devices.values():
            for job in jobs:
                if job.status is ErrorStatus.NONE and job.deadline_ns is not None:
                    assert job.finished_ns <= job.deadline_ns

docs/property-testing.md explains more.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import attrs

try:
    import hypothesis
    from hypothesis import strategies as st
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    msg = "nnemu.testing needs hypothesis: install the test extra (pip install 'nnemu[test]')"
    raise ImportError(msg) from exc

from nnemu._emulator import Emulator, build_model, run
from nnemu.app import ExecutionRecord
from nnemu.driver import Job, capabilities_from, compute_plan, us
from nnemu.hal import (
    DeviceType,
    ErrorStatus,
    ExecutionPreference,
    HalVersion,
    OperationType,
    Priority,
    ResultCode,
    supported_by,
    validate_model,
)
from nnemu.report import Report
from nnemu.scenario import (
    CPU_DEVICE_NAME,
    DTYPES,
    AppSpec,
    CpuSpec,
    DeadlinePolicy,
    DeviceCostSpec,
    DeviceSpec,
    ExecutionMode,
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

__all__ = [
    "RunRecords",
    "apps",
    "devices",
    "faults",
    "idle_estimate_ns",
    "models",
    "near_estimate_timeouts",
    "outcomes",
    "record_outcomes",
    "retries",
    "run_with_records",
    "runs_whole",
    "scenarios",
    "workloads",
]

_ALL_FAULTS = tuple(FaultKind)
_DEFAULT_CPU = CpuSpec()
_T = TypeVar("_T")

HIDL_VERSIONS: tuple[HalVersion, ...] = tuple(v for v in HalVersion if not v.aidl)
"""The HIDL versions, which generated worlds draw from unless told otherwise."""


@st.composite
def _drawn(draw: st.DrawFn, build: Callable[[st.DrawFn], _T]) -> _T:
    """The value ``build`` draws (one composite defined once: hypothesis inspects the
    source of each function it makes a composite of, which costs ms per definition)."""
    return build(draw)


def _ms(low: float, high: float) -> st.SearchStrategy[float]:
    """A time in ms with at most 3 decimals (whole µs), in [low, high]."""
    return st.integers(round(low * 1000), round(high * 1000)).map(lambda v: v / 1000)


@functools.lru_cache(maxsize=256)
def runs_whole(model: ModelSpec, device: DeviceSpec) -> bool:
    """Whether ``device`` can compile ``model`` alone: its HAL version can express the model
    and it supports every operation (what an app pinned to it needs)."""
    built = build_model(model)
    if validate_model(built, device.hal_version) is not None:
        return False
    supported = (
        frozenset(device.supported_operations) if device.supported_operations is not None else None
    )
    return all(supported_by(built, supported))


@functools.lru_cache(maxsize=256)
def idle_estimate_ns(model: ModelSpec, device: DeviceSpec, cpu: CpuSpec | None = None) -> int:
    """The driver's estimate for one execution of ``model`` on ``device`` when it is idle.

    Launch overhead plus the nominal plan (no jitter, no slow-down): an execution whose
    timeout is below it is refused ``MISSED_DEADLINE_PERSISTENT`` under ``deadline_policy:
    abort`` (docs/qos.md, "Deadlines").
    """
    plan = compute_plan(
        build_model(model), capabilities_from(device.performance), cpu or _DEFAULT_CPU
    )
    return us(device.cost.launch_us * 1000) + us(plan.total_ns)


def near_estimate_timeouts(estimate_ns: int) -> st.SearchStrategy[float]:
    """Execution timeouts (ms, whole µs) around an idle-device estimate.

    A third of them are below it (half of it to just under it: an aborting driver refuses
    them ``MISSED_DEADLINE_PERSISTENT``); the others are the estimate times 1 to 5 (made
    by an idle device; by a busy one only with room to spare) plus a slack of 0 to 0.3 ms
    for what happens between ``setTimeout`` and the driver's decision (IPC, the runtime),
    which matters when the estimate itself is a few µs.
    """

    def timeout_ms(factor: float, slack_us: int) -> float:
        slack_ns = slack_us * 1000 if factor >= 1 else 0
        return max(0.001, round((estimate_ns * factor + slack_ns) / 1e6, 3))

    # The first choices are the ones hypothesis draws most and shrinks toward: make them
    # timeouts the device can make, so the simplest example exercises a completion.
    return st.builds(
        timeout_ms,
        st.sampled_from([1.5, 2.0, 1.1, 1.0, 3.0, 5.0, 0.99, 0.9, 0.5]),
        st.sampled_from([100, 50, 0, 200, 300]),
    )


def faults(
    kinds: Sequence[FaultKind] = _ALL_FAULTS, *, after_ms: float = 0.0
) -> st.SearchStrategy[FaultSpec]:
    """One injected fault of one of ``kinds``, early enough to hit a short run: it starts
    ``after_ms`` to ``after_ms`` + 30 ms into the run."""

    def build(draw: st.DrawFn) -> FaultSpec:
        kind = draw(st.sampled_from(list(kinds)))
        if kind is FaultKind.TRANSIENT_FAILURE:
            return FaultSpec(kind=kind, probability=draw(st.sampled_from([0.0, 0.1, 0.5, 1.0])))
        at = draw(_ms(after_ms, after_ms + 30))
        if kind is FaultKind.CRASH:
            return FaultSpec(kind=kind, at_ms=at)
        until = draw(st.none() | _ms(0.001, 20).map(lambda d: round(at + d, 3)))
        if kind is FaultKind.SLOWDOWN:
            factor = draw(st.sampled_from([1.0, 1.5, 2.0, 4.0]))
            return FaultSpec(kind=kind, at_ms=at, until_ms=until, factor=factor)
        return FaultSpec(kind=kind, at_ms=at, until_ms=until)

    return _drawn(build)


def devices(
    name: str = "npu",
    *,
    hal_versions: Sequence[HalVersion] = HIDL_VERSIONS,
    schedulers: Sequence[SchedulerKind] = tuple(SchedulerKind),
    preemptions: Sequence[PreemptionKind] = tuple(PreemptionKind),
    deadline_policies: Sequence[DeadlinePolicy] = tuple(DeadlinePolicy),
    max_compute_units: int = 2,
    fault_kinds: Sequence[FaultKind] = _ALL_FAULTS,
    max_faults: int = 2,
    jitter: bool = True,
    partial: bool = True,
    memory_mbs: Sequence[float] = (0.05, 64.0, 1024.0, 1024.0, 1024.0),
    faults_after_ms: float = 0.0,
) -> st.SearchStrategy[DeviceSpec]:
    """A driver service called ``name`` with one of the given versions, schedulers and policies.

    Its memory is one of ``memory_mbs`` (the default's 0.05 MB is too small for most models:
    their preparation fails ``RESOURCE_EXHAUSTED_PERSISTENT``); its faults start no
    earlier than ``faults_after_ms``.
    """

    def build(draw: st.DrawFn) -> DeviceSpec:
        exec_time = draw(st.sampled_from([0.1, 0.3, 0.5, 1.0, 2.0]))
        supported: tuple[OperationType, ...] | None = None
        if partial and draw(st.integers(0, 3)) == 0:
            supported = tuple(
                draw(
                    st.lists(
                        st.sampled_from(
                            [
                                OperationType.ADD,
                                OperationType.CONV_2D,
                                OperationType.DEPTHWISE_CONV_2D,
                                OperationType.RELU,
                                OperationType.FULLY_CONNECTED,
                            ]
                        ),
                        min_size=1,
                        max_size=5,
                        unique=True,
                    )
                )
            )
        return DeviceSpec(
            name=name,
            hal_version=draw(st.sampled_from(list(hal_versions))),
            type=draw(st.sampled_from([DeviceType.ACCELERATOR, DeviceType.GPU])),
            performance=PerformanceSpec(
                float32=PerfSpec(exec_time=exec_time, power_usage=exec_time),
                quant8=PerfSpec(exec_time=exec_time / 2, power_usage=exec_time / 2),
            ),
            supported_operations=supported,
            compute_units=draw(st.integers(1, max_compute_units)),
            worker_threads=draw(st.integers(1, 2)),
            memory_mb=draw(st.sampled_from(list(memory_mbs))),
            cost=DeviceCostSpec(
                prepare_ms=draw(_ms(0, 5)),
                prepare_ms_per_op=draw(st.sampled_from([0.0, 0.1])),
                launch_us=draw(st.sampled_from([0.0, 20.0, 100.0])),
                jitter=draw(st.sampled_from([0.0, 0.2])) if jitter else 0.0,
            ),
            scheduler=draw(st.sampled_from(list(schedulers))),
            preemption=draw(st.sampled_from(list(preemptions))),
            deadline_policy=draw(st.sampled_from(list(deadline_policies))),
            queue_limit=draw(st.none() | st.integers(0, 3)),
            faults=tuple(
                draw(faults(fault_kinds, after_ms=faults_after_ms))
                for _ in range(draw(st.sampled_from([0, 0, 0, min(1, max_faults), max_faults])))
            ),
        )

    return _drawn(build)


def models(name: str = "net") -> st.SearchStrategy[ModelSpec]:
    """A small model: ``add``, a short ``layers:`` chain, or a tiny ``mobilenet_v1``."""
    add = st.builds(
        lambda size, dtype: ModelSpec(
            name=name, preset="add", dtype=dtype, params=(("size", size),)
        ),
        st.sampled_from([1000, 20_000, 200_000]),
        st.sampled_from(DTYPES),
    )
    mobilenet = st.builds(
        lambda dtype: ModelSpec(
            name=name,
            preset="mobilenet_v1",
            dtype=dtype,
            params=(("input_size", 32), ("width", 0.25)),
        ),
        st.sampled_from(DTYPES),
    )

    def chain(draw: st.DrawFn) -> ModelSpec:
        size = draw(st.sampled_from([8, 16, 32]))
        channels = draw(st.sampled_from([4, 8, 16]))
        layers = [
            LayerSpec(
                type=OperationType.CONV_2D,
                output=(1, size, size, channels),
                filter=(channels, 3, 3, 3),
            )
        ]
        for _ in range(draw(st.integers(0, 3))):
            kind = draw(
                st.sampled_from(
                    [OperationType.DEPTHWISE_CONV_2D, OperationType.RELU, OperationType.ADD]
                )
            )
            layers.append(
                LayerSpec(
                    type=kind,
                    output=(1, size, size, channels),
                    filter=(1, 3, 3, channels) if kind is OperationType.DEPTHWISE_CONV_2D else None,
                )
            )
        layers.append(
            LayerSpec(
                type=OperationType.FULLY_CONNECTED,
                output=(1, 10),
                filter=(10, size * size * channels),
            )
        )
        return ModelSpec(name=name, layers=tuple(layers), relaxed=draw(st.booleans()))

    return st.one_of(add, _drawn(chain), mobilenet)


def workloads(
    max_executions: int = 20,
    kinds: Sequence[WorkloadKind] = tuple(WorkloadKind),
    *,
    max_start_ms: float = 10.0,
) -> st.SearchStrategy[WorkloadSpec]:
    """A workload of one of ``kinds`` that ends by itself after at most ``max_executions``,
    starting at most ``max_start_ms`` into the run."""
    executions = st.integers(1, max_executions)
    start = _ms(0, max_start_ms)
    by_kind: dict[WorkloadKind, st.SearchStrategy[WorkloadSpec]] = {
        WorkloadKind.PERIODIC: _workload(
            WorkloadKind.PERIODIC, executions=executions, start_ms=start, period_ms=_ms(0.05, 5)
        ),
        WorkloadKind.CLOSED_LOOP: _workload(
            WorkloadKind.CLOSED_LOOP, executions=executions, start_ms=start, think_ms=_ms(0, 2)
        ),
        WorkloadKind.POISSON: _workload(
            WorkloadKind.POISSON,
            executions=executions,
            start_ms=start,
            rate_hz=st.sampled_from([200.0, 1000.0, 5000.0]),
        ),
        WorkloadKind.BURST: _workload(
            WorkloadKind.BURST,
            executions=executions,
            start_ms=start,
            burst_size=st.integers(1, 5),
            burst_interval_ms=_ms(0.1, 5),
        ),
        WorkloadKind.TRACE: st.builds(
            lambda s, gaps: WorkloadSpec(
                kind=WorkloadKind.TRACE,
                start_ms=s,
                arrivals_ms=tuple(itertools.accumulate(gaps)),
            ),
            start,
            st.lists(_ms(0, 2), min_size=1, max_size=max_executions),
        ),
    }
    return st.one_of([by_kind[kind] for kind in kinds if kind in by_kind])


def _workload(
    kind: WorkloadKind, **fields: st.SearchStrategy[Any]
) -> st.SearchStrategy[WorkloadSpec]:
    """A ``kind`` workload whose ``fields`` are drawn in the order given, as positional
    arguments of ``st.builds`` (its keyword form draws differently: examples would change)."""
    names = list(fields)
    return st.builds(
        lambda *values: WorkloadSpec(kind=kind, **dict(zip(names, values, strict=True))),
        *fields.values(),
    )


def retries() -> st.SearchStrategy[RetrySpec]:
    """A retry policy for TRANSIENT errors (often none)."""
    return st.one_of(
        st.just(RetrySpec()),
        st.builds(
            lambda n, b, f: RetrySpec(max_attempts=n, backoff_ms=b, backoff_factor=f),
            st.integers(1, 3),
            _ms(0, 1),
            st.sampled_from([1.0, 2.0]),
        ),
    )


def apps(
    name: str,
    uid: int,
    model_names: Sequence[str],
    device_names: Sequence[str],
    *,
    max_executions: int = 20,
    workload_kinds: Sequence[WorkloadKind] = tuple(WorkloadKind),
    timeouts: bool = True,
    pinned: bool | None = None,
    pin_to: Sequence[str] | None = None,
    execution_timeouts: Callable[[str], st.SearchStrategy[float | None]] | None = None,
    compile_timeouts: Sequence[float] = (0.001, 3.0, 50.0),
    max_start_ms: float = 10.0,
    max_threads: int = 2,
    execution_modes: Sequence[ExecutionMode] = tuple(ExecutionMode),
) -> st.SearchStrategy[AppSpec]:
    """An app of ``uid`` running one of ``model_names`` on some of ``device_names``.

    Timeouts are only given when the app is pinned to exactly one device (the NNAPI
    rule for ``setTimeout``); ``pinned=True`` always pins, ``False`` never does. A
    pinned app's device is drawn from ``pin_to`` (default: ``device_names``; the CPU
    device when it is empty). ``execution_timeouts``, given the pinned device's name,
    returns the strategy its execution timeout (ms) is drawn from; the default draws
    from a fixed list of 5 µs to 3 ms. A compilation timeout is none or one of
    ``compile_timeouts``. The app issues executions from 1 to ``max_threads`` threads,
    in one of ``execution_modes``.
    """
    pins = list(device_names if pin_to is None else pin_to) or [CPU_DEVICE_NAME]

    def build(draw: st.DrawFn) -> AppSpec:
        choices = [*device_names, CPU_DEVICE_NAME]
        if pinned is True:
            app_devices: tuple[str, ...] | None = (draw(st.sampled_from(pins)),)
        elif pinned is False:
            app_devices = None
        else:
            app_devices = draw(
                st.none()
                | st.sampled_from(pins).map(lambda name: (name,))
                | st.lists(st.sampled_from(choices), min_size=1, max_size=2, unique=True).map(tuple)
            )
        single = app_devices is not None and len(app_devices) == 1
        execution_timeout = compile_timeout = None
        if timeouts and single:
            assert app_devices is not None
            if execution_timeouts is not None:
                execution_timeout = draw(execution_timeouts(app_devices[0]))
            else:
                execution_timeout = draw(
                    st.sampled_from([None, 0.005, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0, 3.0])
                )
            compile_timeout = draw(st.none() | st.sampled_from(list(compile_timeouts)))
        return AppSpec(
            name=name,
            uid=uid,
            model=draw(st.sampled_from(list(model_names))),
            devices=app_devices,
            preference=draw(st.sampled_from(list(ExecutionPreference))),
            priority=draw(st.sampled_from(list(Priority))),
            compile_timeout_ms=compile_timeout,
            execution_timeout_ms=execution_timeout,
            execution_mode=draw(st.sampled_from(list(execution_modes))),
            measure_timing=single and draw(st.booleans()),
            threads=draw(st.integers(1, max_threads)),
            workload=draw(workloads(max_executions, workload_kinds, max_start_ms=max_start_ms)),
            retry=draw(retries()),
            drop_late_frames=draw(st.booleans()),
        )

    return _drawn(build)


@attrs.frozen
class _Shape:
    """What ``scenarios`` was asked for: its arguments, held for the functions that draw."""

    min_devices: int
    max_devices: int
    min_apps: int
    max_apps: int
    max_executions: int
    workload_kinds: Sequence[WorkloadKind]
    hal_versions: Sequence[HalVersion]
    schedulers: Sequence[SchedulerKind]
    preemptions: Sequence[PreemptionKind]
    deadline_policies: Sequence[DeadlinePolicy]
    max_compute_units: int
    fault_kinds: Sequence[FaultKind]
    max_faults: int
    jitter: bool
    partial: bool
    timeouts: bool
    pinned: bool | None
    shared_uids: bool
    durations: bool
    supported_pins: bool
    contended: bool
    near_deadlines: bool


def scenarios(
    *,
    min_devices: int = 1,
    max_devices: int = 3,
    min_apps: int = 1,
    max_apps: int = 3,
    max_executions: int = 20,
    workload_kinds: Sequence[WorkloadKind] = tuple(WorkloadKind),
    hal_versions: Sequence[HalVersion] = HIDL_VERSIONS,
    schedulers: Sequence[SchedulerKind] = tuple(SchedulerKind),
    preemptions: Sequence[PreemptionKind] = tuple(PreemptionKind),
    deadline_policies: Sequence[DeadlinePolicy] = tuple(DeadlinePolicy),
    max_compute_units: int = 2,
    fault_kinds: Sequence[FaultKind] = _ALL_FAULTS,
    max_faults: int = 2,
    jitter: bool = True,
    partial: bool = True,
    timeouts: bool = True,
    pinned: bool | None = None,
    shared_uids: bool = True,
    durations: bool = False,
    supported_pins: bool = True,
    contended: bool = False,
    near_deadlines: bool = False,
) -> st.SearchStrategy[Scenario]:
    """Valid, small scenarios; each argument narrows what is generated (docs/property-testing.md).

    ``supported_pins``: an app pinned to one device is pinned to a device that runs its
    whole model (else it may be pinned to one that cannot, and its compilation fails).
    ``contended``: pinned apps mostly share the first device that runs their model,
    devices prepare models in no time, apps start within the first 50 µs, use up to 4
    threads and bursts half the time, so their executions queue behind each other.
    ``near_deadlines``: the first device is a HAL 1.3 driver (the version that receives
    deadlines) that supports every operation when ``hal_versions`` allows it, and pinned
    apps prefer 1.3 drivers; execution timeouts are drawn around the pinned device's idle
    estimate (``near_estimate_timeouts``); neither compilation timeouts, device memories
    nor faults (which start after 10 ms) stop a compilation; apps do not use bursts (which
    carry no deadline). Executions are then refused, aborted and completed by their
    deadline in comparable measure.
    """
    shape = _Shape(
        min_devices=min_devices,
        max_devices=max_devices,
        min_apps=min_apps,
        max_apps=max_apps,
        max_executions=max_executions,
        workload_kinds=workload_kinds,
        hal_versions=hal_versions,
        schedulers=schedulers,
        preemptions=preemptions,
        deadline_policies=deadline_policies,
        max_compute_units=max_compute_units,
        fault_kinds=fault_kinds,
        max_faults=max_faults,
        jitter=jitter,
        partial=partial,
        timeouts=timeouts,
        pinned=pinned,
        shared_uids=shared_uids,
        durations=durations,
        supported_pins=supported_pins,
        contended=contended,
        near_deadlines=near_deadlines,
    )
    return _drawn(functools.partial(_scenario, shape=shape))


def _scenario(draw: st.DrawFn, shape: _Shape) -> Scenario:
    """One scenario of ``shape``: its devices, models and apps, then seed, duration and IPC."""
    device_specs = _scenario_devices(draw, shape)
    n_models = draw(st.integers(1, 2))
    model_specs = tuple(draw(models(f"m{i}")) for i in range(n_models))
    n_apps = draw(st.integers(shape.min_apps, shape.max_apps))
    app_specs: list[AppSpec] = []
    for i in range(n_apps):
        app_specs.append(_scenario_app(draw, shape, i, app_specs, device_specs, model_specs))
    return Scenario(
        name="generated",
        seed=draw(st.integers(0, 2**16)),
        duration_ms=draw(st.none() | _ms(1, 40)) if shape.durations else None,
        devices=device_specs,
        ipc=IpcSpec(latency_us=draw(st.sampled_from([0.0, 10.0, 50.0]))),
        models=model_specs,
        apps=tuple(app_specs),
    )


def _scenario_devices(draw: st.DrawFn, shape: _Shape) -> tuple[DeviceSpec, ...]:
    """The devices ``d0``, ``d1``, … of a scenario of ``shape``."""
    n_devices = draw(st.integers(shape.min_devices, shape.max_devices))
    device_specs = tuple(
        draw(
            devices(
                f"d{i}",
                hal_versions=shape.hal_versions,
                schedulers=shape.schedulers,
                preemptions=shape.preemptions,
                deadline_policies=shape.deadline_policies,
                max_compute_units=shape.max_compute_units,
                fault_kinds=shape.fault_kinds,
                max_faults=shape.max_faults,
                jitter=shape.jitter,
                partial=shape.partial,
                faults_after_ms=10.0 if shape.near_deadlines else 0.0,
                memory_mbs=(64.0, 1024.0)
                if shape.near_deadlines
                else (0.05, 64.0, 1024.0, 1024.0, 1024.0),
            )
        )
        for i in range(n_devices)
    )
    if shape.contended:
        # Compilations take no time, so the apps' first arrivals fall together.
        device_specs = tuple(
            attrs.evolve(d, cost=attrs.evolve(d.cost, prepare_ms=0.0, prepare_ms_per_op=0.0))
            for d in device_specs
        )
    if shape.near_deadlines and HalVersion.V1_3 in shape.hal_versions:
        device_specs = (
            attrs.evolve(device_specs[0], hal_version=HalVersion.V1_3, supported_operations=None),
            *device_specs[1:],
        )
    return device_specs


def _scenario_app(
    draw: st.DrawFn,
    shape: _Shape,
    i: int,
    earlier: Sequence[AppSpec],
    device_specs: Sequence[DeviceSpec],
    model_specs: Sequence[ModelSpec],
) -> AppSpec:
    """App ``a{i}`` of a scenario of ``shape``, after the apps ``earlier`` (whose uid it may share)."""
    device_names = [d.name for d in device_specs]
    by_model = {m.name: m for m in model_specs}
    by_name = {device.name: device for device in device_specs}
    runnable = {
        model.name: [d.name for d in device_specs if runs_whole(model, d)] for model in model_specs
    }
    # Apps that must be pinned take a model some device runs whole, if there is one.
    usable = [m.name for m in model_specs if runnable[m.name]]
    if not (shape.supported_pins and shape.pinned is True and usable):
        usable = list(by_model)
    kinds = list(shape.workload_kinds)
    if shape.contended and WorkloadKind.BURST in kinds:
        kinds += [WorkloadKind.BURST] * len(kinds)  # bursts half the time: queues form
    uid = 10000 + i
    if shape.shared_uids and i > 0 and draw(st.booleans()):
        uid = earlier[draw(st.integers(0, i - 1))].uid
    model = draw(st.sampled_from(usable))
    pin_to = runnable[model] if shape.supported_pins else device_names
    if shape.near_deadlines:
        # Only a 1.3 driver receives deadlines (older HALs have no timeout argument).
        pin_to = [d for d in pin_to if by_name[d].hal_version is HalVersion.V1_3] or pin_to
    if shape.contended and len(pin_to) > 1 and draw(st.integers(0, 3)) < 3:
        pin_to = pin_to[:1]
    near = shape.near_deadlines
    return draw(
        apps(
            f"a{i}",
            uid,
            [model],
            device_names,
            max_executions=shape.max_executions,
            workload_kinds=kinds,
            timeouts=shape.timeouts,
            pinned=shape.pinned,
            pin_to=pin_to,
            max_threads=4 if shape.contended else 2,
            # A burst carries no deadline (HAL 1.2 IBurst has no timeout).
            execution_modes=[m for m in ExecutionMode if m is not ExecutionMode.BURST]
            if near
            else tuple(ExecutionMode),
            execution_timeouts=_near_timeouts(by_model[model], by_name) if near else None,
            compile_timeouts=(50.0,) if near else (0.001, 3.0, 50.0),
            max_start_ms=0.05 if shape.contended else 10.0,
        )
    )


def _near_timeouts(
    spec: ModelSpec, by_name: Mapping[str, DeviceSpec]
) -> Callable[[str], st.SearchStrategy[float | None]]:
    """Execution timeouts for ``spec`` around the idle estimate of the device an app is pinned to."""

    def timeout_draw(name: str) -> st.SearchStrategy[float | None]:
        if name not in by_name:  # the CPU device: no driver estimate
            return st.sampled_from([0.05, 0.5, 3.0])
        return near_estimate_timeouts(idle_estimate_ns(spec, by_name[name]))

    return timeout_draw


@attrs.frozen
class RunRecords:
    """What one run left behind: the report, app execution records and device job histories."""

    scenario: Scenario
    """The scenario that ran."""
    report: Report
    """The run's report."""
    apps: Mapping[str, tuple[ExecutionRecord, ...]]
    """Each app's executions, in completion order, by app name."""
    devices: Mapping[str, tuple[Job, ...]]
    """Each driver device's jobs, in arrival order, by device name."""


def run_with_records(scenario: Scenario) -> RunRecords:
    """Run ``scenario`` in virtual time and keep its per-execution records."""
    kept: dict[str, dict[str, tuple[object, ...]]] = {}

    def inspect(emulator: Emulator) -> None:
        kept["apps"] = {app.spec.name: tuple(app.records or ()) for app in emulator.apps}
        kept["devices"] = {
            service.name: tuple(service.device.history or ()) for service in emulator.services
        }

    report = run(scenario, keep_executions=True, inspect=inspect)
    app_records: dict[str, tuple[ExecutionRecord, ...]] = {
        name: tuple(r for r in records if isinstance(r, ExecutionRecord))
        for name, records in kept["apps"].items()
    }
    device_jobs: dict[str, tuple[Job, ...]] = {
        name: tuple(j for j in jobs if isinstance(j, Job)) for name, jobs in kept["devices"].items()
    }
    return RunRecords(scenario=scenario, report=report, apps=app_records, devices=device_jobs)


def outcomes(records: RunRecords) -> frozenset[str]:
    """The kinds of deadline and compilation outcome one run shows (each at least once).

    ``no app compiled``, ``an app did not compile``, ``no execution had a deadline``,
    ``refused PERSISTENT`` and ``refused TRANSIENT`` (by the driver's estimate, before
    starting), ``app saw PERSISTENT`` (from the driver's estimate or a deadline already
    passed), ``a job waited for a unit`` (the device was contended), ``aborted at
    deadline`` (on the device), ``completed by deadline`` and ``completed late`` (left
    the device ``NONE`` before or after its deadline).
    """
    found: set[str] = set()
    compiled = [app["compile_result"] == "NO_ERROR" for app in records.report.data["apps"].values()]
    if not any(compiled):
        found.add("no app compiled")
    elif not all(compiled):
        found.add("an app did not compile")
    for stats in records.report.data["devices"].values():
        if stats["rejected_persistent"]:
            found.add("refused PERSISTENT")
        if stats["rejected_transient"]:
            found.add("refused TRANSIENT")
    with_deadline = any(
        r.timeout_ns is not None for kept in records.apps.values() for r in kept
    ) or any(job.deadline_ns is not None for jobs in records.devices.values() for job in jobs)
    if not with_deadline:
        found.add("no execution had a deadline")
    for jobs in records.devices.values():
        for job in jobs:
            waited = job.started_ns is not None and job.arrived_ns is not None
            if waited and job.started_ns != job.arrived_ns:
                found.add("a job waited for a unit")
            if job.deadline_ns is None or job.finished_ns is None:
                continue
            if job.status is ErrorStatus.MISSED_DEADLINE_TRANSIENT:
                found.add("aborted at deadline")
            elif job.status is ErrorStatus.NONE:
                late = job.finished_ns > job.deadline_ns
                found.add("completed late" if late else "completed by deadline")
    persistent = ResultCode.MISSED_DEADLINE_PERSISTENT
    if any(r.code is persistent for kept in records.apps.values() for r in kept):
        found.add("app saw PERSISTENT")
    return frozenset(found)


def record_outcomes(records: RunRecords) -> frozenset[str]:
    """Call ``hypothesis.event`` for each of the run's ``outcomes`` and return them.

    Inside a ``@given`` test, ``pytest --hypothesis-show-statistics`` then prints in how
    many of the examples each kind of outcome happened.
    """
    found = outcomes(records)
    for name in sorted(found):
        hypothesis.event(name)
    return found
