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

import itertools
from collections.abc import Mapping, Sequence

import attrs

try:
    from hypothesis import strategies as st
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    msg = "nnemu.testing needs hypothesis: install the test extra (pip install 'nnemu[test]')"
    raise ImportError(msg) from exc

from nnemu._emulator import Emulator, run
from nnemu.app import ExecutionRecord
from nnemu.driver import Job
from nnemu.hal import DeviceType, ExecutionPreference, HalVersion, OperationType, Priority
from nnemu.report import Report
from nnemu.scenario import (
    CPU_DEVICE_NAME,
    AppSpec,
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
    "models",
    "retries",
    "run_with_records",
    "scenarios",
    "workloads",
]

_ALL_FAULTS = tuple(FaultKind)


def _ms(low: float, high: float) -> st.SearchStrategy[float]:
    """A time in ms with at most 3 decimals (whole µs), in [low, high]."""
    return st.integers(round(low * 1000), round(high * 1000)).map(lambda v: v / 1000)


def faults(kinds: Sequence[FaultKind] = _ALL_FAULTS) -> st.SearchStrategy[FaultSpec]:
    """One injected fault of one of ``kinds``, early enough to hit a short run."""

    @st.composite
    def build(draw: st.DrawFn) -> FaultSpec:
        kind = draw(st.sampled_from(list(kinds)))
        if kind is FaultKind.TRANSIENT_FAILURE:
            return FaultSpec(kind=kind, probability=draw(st.sampled_from([0.0, 0.1, 0.5, 1.0])))
        at = draw(_ms(0, 30))
        if kind is FaultKind.CRASH:
            return FaultSpec(kind=kind, at_ms=at)
        until = draw(st.none() | _ms(0.001, 20).map(lambda d: round(at + d, 3)))
        if kind is FaultKind.SLOWDOWN:
            factor = draw(st.sampled_from([1.0, 1.5, 2.0, 4.0]))
            return FaultSpec(kind=kind, at_ms=at, until_ms=until, factor=factor)
        return FaultSpec(kind=kind, at_ms=at, until_ms=until)

    return build()


def devices(
    name: str = "npu",
    *,
    hal_versions: Sequence[HalVersion] = tuple(HalVersion),
    schedulers: Sequence[SchedulerKind] = tuple(SchedulerKind),
    preemptions: Sequence[PreemptionKind] = tuple(PreemptionKind),
    deadline_policies: Sequence[DeadlinePolicy] = tuple(DeadlinePolicy),
    max_compute_units: int = 2,
    fault_kinds: Sequence[FaultKind] = _ALL_FAULTS,
    max_faults: int = 2,
    jitter: bool = True,
    partial: bool = True,
) -> st.SearchStrategy[DeviceSpec]:
    """A driver service called ``name`` with one of the given versions, schedulers and policies."""

    @st.composite
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
            memory_mb=draw(st.sampled_from([0.05, 64.0, 1024.0, 1024.0, 1024.0])),
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
                draw(faults(fault_kinds))
                for _ in range(draw(st.sampled_from([0, 0, 0, 1, max_faults])))
            ),
        )

    return build()


def models(name: str = "net") -> st.SearchStrategy[ModelSpec]:
    """A small model: ``add``, a short ``layers:`` chain, or a tiny ``mobilenet_v1``."""
    add = st.builds(
        lambda size, dtype: ModelSpec(
            name=name, preset="add", dtype=dtype, params=(("size", size),)
        ),
        st.sampled_from([1000, 20_000, 200_000]),
        st.sampled_from(["float32", "quant8"]),
    )
    mobilenet = st.builds(
        lambda dtype: ModelSpec(
            name=name,
            preset="mobilenet_v1",
            dtype=dtype,
            params=(("input_size", 32), ("width", 0.25)),
        ),
        st.sampled_from(["float32", "quant8"]),
    )

    @st.composite
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

    return st.one_of(add, chain(), mobilenet)


def workloads(
    max_executions: int = 20, kinds: Sequence[WorkloadKind] = tuple(WorkloadKind)
) -> st.SearchStrategy[WorkloadSpec]:
    """A workload of one of ``kinds`` that ends by itself after at most ``max_executions``."""
    executions = st.integers(1, max_executions)
    start = _ms(0, 10)
    by_kind: dict[WorkloadKind, st.SearchStrategy[WorkloadSpec]] = {
        WorkloadKind.PERIODIC: st.builds(
            lambda n, s, p: WorkloadSpec(
                kind=WorkloadKind.PERIODIC, executions=n, start_ms=s, period_ms=p
            ),
            executions,
            start,
            _ms(0.05, 5),
        ),
        WorkloadKind.CLOSED_LOOP: st.builds(
            lambda n, s, t: WorkloadSpec(
                kind=WorkloadKind.CLOSED_LOOP, executions=n, start_ms=s, think_ms=t
            ),
            executions,
            start,
            _ms(0, 2),
        ),
        WorkloadKind.POISSON: st.builds(
            lambda n, s, r: WorkloadSpec(
                kind=WorkloadKind.POISSON, executions=n, start_ms=s, rate_hz=r
            ),
            executions,
            start,
            st.sampled_from([200.0, 1000.0, 5000.0]),
        ),
        WorkloadKind.BURST: st.builds(
            lambda n, s, b, i: WorkloadSpec(
                kind=WorkloadKind.BURST,
                executions=n,
                start_ms=s,
                burst_size=b,
                burst_interval_ms=i,
            ),
            executions,
            start,
            st.integers(1, 5),
            _ms(0.1, 5),
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
) -> st.SearchStrategy[AppSpec]:
    """An app of ``uid`` running one of ``model_names`` on some of ``device_names``.

    Timeouts are only given when the app is pinned to exactly one device (the NNAPI
    rule for ``setTimeout``); ``pinned=True`` always pins, ``False`` never does.
    """

    @st.composite
    def build(draw: st.DrawFn) -> AppSpec:
        choices = [*device_names, CPU_DEVICE_NAME]
        if pinned is True:
            app_devices: tuple[str, ...] | None = (
                draw(st.sampled_from(list(device_names) or choices)),
            )
        elif pinned is False:
            app_devices = None
        else:
            app_devices = draw(
                st.none()
                | st.sampled_from(list(device_names) or choices).map(lambda name: (name,))
                | st.lists(st.sampled_from(choices), min_size=1, max_size=2, unique=True).map(tuple)
            )
        single = app_devices is not None and len(app_devices) == 1
        execution_timeout = compile_timeout = None
        if timeouts and single:
            execution_timeout = draw(
                st.sampled_from([None, 0.005, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0, 3.0])
            )
            compile_timeout = draw(st.none() | st.sampled_from([0.001, 3.0, 50.0]))
        return AppSpec(
            name=name,
            uid=uid,
            model=draw(st.sampled_from(list(model_names))),
            devices=app_devices,
            preference=draw(st.sampled_from(list(ExecutionPreference))),
            priority=draw(st.sampled_from(list(Priority))),
            compile_timeout_ms=compile_timeout,
            execution_timeout_ms=execution_timeout,
            execution_mode=draw(st.sampled_from(list(ExecutionMode))),
            measure_timing=single and draw(st.booleans()),
            threads=draw(st.integers(1, 2)),
            workload=draw(workloads(max_executions, workload_kinds)),
            retry=draw(retries()),
            drop_late_frames=draw(st.booleans()),
        )

    return build()


def scenarios(
    *,
    min_devices: int = 1,
    max_devices: int = 3,
    min_apps: int = 1,
    max_apps: int = 3,
    max_executions: int = 20,
    workload_kinds: Sequence[WorkloadKind] = tuple(WorkloadKind),
    hal_versions: Sequence[HalVersion] = tuple(HalVersion),
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
) -> st.SearchStrategy[Scenario]:
    """Valid, small scenarios; each argument narrows what is generated (docs/property-testing.md)."""

    @st.composite
    def build(draw: st.DrawFn) -> Scenario:
        n_devices = draw(st.integers(min_devices, max_devices))
        device_names = [f"d{i}" for i in range(n_devices)]
        device_specs = tuple(
            draw(
                devices(
                    name,
                    hal_versions=hal_versions,
                    schedulers=schedulers,
                    preemptions=preemptions,
                    deadline_policies=deadline_policies,
                    max_compute_units=max_compute_units,
                    fault_kinds=fault_kinds,
                    max_faults=max_faults,
                    jitter=jitter,
                    partial=partial,
                )
            )
            for name in device_names
        )
        n_models = draw(st.integers(1, 2))
        model_specs = tuple(draw(models(f"m{i}")) for i in range(n_models))
        n_apps = draw(st.integers(min_apps, max_apps))
        app_specs: list[AppSpec] = []
        for i in range(n_apps):
            uid = 10000 + i
            if shared_uids and i > 0 and draw(st.booleans()):
                uid = app_specs[draw(st.integers(0, i - 1))].uid
            app_specs.append(
                draw(
                    apps(
                        f"a{i}",
                        uid,
                        [m.name for m in model_specs],
                        device_names,
                        max_executions=max_executions,
                        workload_kinds=workload_kinds,
                        timeouts=timeouts,
                        pinned=pinned,
                    )
                )
            )
        return Scenario(
            name="generated",
            seed=draw(st.integers(0, 2**16)),
            duration_ms=draw(st.none() | _ms(1, 40)) if durations else None,
            devices=device_specs,
            ipc=IpcSpec(latency_us=draw(st.sampled_from([0.0, 10.0, 50.0]))),
            models=model_specs,
            apps=tuple(app_specs),
        )

    return build()


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

    report = run(scenario, inspect=inspect)
    app_records: dict[str, tuple[ExecutionRecord, ...]] = {
        name: tuple(r for r in records if isinstance(r, ExecutionRecord))
        for name, records in kept["apps"].items()
    }
    device_jobs: dict[str, tuple[Job, ...]] = {
        name: tuple(j for j in jobs if isinstance(j, Job)) for name, jobs in kept["devices"].items()
    }
    return RunRecords(scenario=scenario, report=report, apps=app_records, devices=device_jobs)
