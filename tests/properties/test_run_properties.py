"""Properties of whole runs of generated scenarios (nnemu.testing), in virtual time."""

from __future__ import annotations

import pytest
from hypothesis import event, example, given, settings, target

from nnemu._emulator import build_model
from nnemu.driver import capabilities_from, compute_plan, us
from nnemu.hal import ErrorStatus, HalVersion, OperationType, ResultCode
from nnemu.scenario import (
    CPU_DEVICE_NAME,
    AppSpec,
    DeadlinePolicy,
    DeviceCostSpec,
    DeviceSpec,
    ExecutionMode,
    FaultKind,
    IpcSpec,
    LayerSpec,
    ModelSpec,
    Scenario,
    WorkloadKind,
    WorkloadSpec,
    dump_scenario,
    load_scenario_text,
)
from nnemu.testing import (
    RunRecords,
    idle_estimate_ns,
    record_outcomes,
    run_with_records,
    scenarios,
)
from tests.reach import Reach
from tests.tiers import tiered

QOS_CODES = frozenset(
    {
        ResultCode.MISSED_DEADLINE_TRANSIENT,
        ResultCode.MISSED_DEADLINE_PERSISTENT,
        ResultCode.RESOURCE_EXHAUSTED_TRANSIENT,
        ResultCode.RESOURCE_EXHAUSTED_PERSISTENT,
    }
)
COMPUTE_CODES = frozenset(ResultCode) - {ResultCode.DEAD_OBJECT, ResultCode.INCOMPLETE}
"""What ANeuralNetworksExecution_compute/Event_wait may return (a dead driver is OP_FAILED)."""


def _single_device(app: AppSpec) -> str | None:
    return app.devices[0] if app.devices is not None and len(app.devices) == 1 else None


@tiered(scenarios(durations=True), quick=15, wide=40)
def test_generated_scenarios_are_valid(scenario: Scenario) -> None:
    """Every generated scenario passes the loader's checks and round-trips through YAML."""
    assert load_scenario_text(dump_scenario(scenario)) == scenario


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(scenarios(durations=True))
def test_conservation_per_app(scenario: Scenario) -> None:
    """Per app, submitted = completed + failed + dropped + in_flight, and the records agree."""
    records = run_with_records(scenario)
    for app in scenario.apps:
        data = records.report.data["apps"][app.name]
        kept = records.apps[app.name]
        assert data["in_flight"] >= 0
        assert data["submitted"] == (
            data["completed"] + data["failed"] + data["dropped"] + data["in_flight"]
        )
        assert len(kept) == data["completed"] + data["failed"]
        assert sum(r.code is ResultCode.NO_ERROR for r in kept) == data["completed"]
        assert sum(data["errors"].values()) == data["failed"]
        assert data["retries"] >= sum(r.attempts - 1 for r in kept)
        if scenario.duration_ms is None:
            # Nothing is cut off: every submitted execution ended, all of them were issued.
            assert data["in_flight"] == 0
            issued = app.workload.executions
            if issued is None:  # a trace workload: one execution per arrival
                issued = len(app.workload.arrivals_ms)
            expected = issued if data["compile_result"] == "NO_ERROR" else 0
            assert data["submitted"] == expected


def _reached(checked: int) -> None:
    """Record whether the property's assertion ran in this example, and how often."""
    event("assertion reached" if checked else "assertion NOT reached")
    target(float(checked), label="assertions checked")


def _check_no_error_within_deadline(records: RunRecords) -> None:
    record_outcomes(records)
    by_name = {d.name: d for d in records.scenario.devices}
    checked = 0
    for name, jobs in records.devices.items():
        if by_name[name].deadline_policy is not DeadlinePolicy.ABORT:
            continue
        for job in jobs:
            if job.status is ErrorStatus.NONE and job.deadline_ns is not None:
                assert job.finished_ns is not None
                assert job.finished_ns <= job.deadline_ns, (name, job)
                checked += 1
    _reached(checked)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(
    scenarios(
        deadline_policies=[DeadlinePolicy.ABORT],
        jitter=False,
        fault_kinds=[k for k in FaultKind if k is not FaultKind.SLOWDOWN],
        pinned=True,
        contended=True,
        near_deadlines=True,
    )
)
def test_no_error_finishes_by_deadline_without_jitter(scenario: Scenario) -> None:
    """Policy abort, deterministic costs: a job that ends NONE left the device by its deadline."""
    _check_no_error_within_deadline(run_with_records(scenario))


def _jitter_overrun_scenario() -> Scenario:
    """One app, one 1.3 device with compute jitter, a deadline just above the nominal cost."""
    return Scenario(
        name="jitter-overrun",
        seed=0,
        devices=(DeviceSpec(name="npu", cost=DeviceCostSpec(launch_us=0.0, jitter=0.5)),),
        ipc=IpcSpec(latency_us=0.0),
        models=(
            ModelSpec(
                name="m",
                layers=(
                    LayerSpec(
                        type=OperationType.CONV_2D, output=(1, 32, 32, 16), filter=(16, 3, 3, 3)
                    ),
                ),
            ),
        ),
        apps=(
            AppSpec(
                name="a",
                uid=10000,
                model="m",
                devices=("npu",),
                execution_timeout_ms=0.06,
                workload=WorkloadSpec(kind=WorkloadKind.PERIODIC, executions=20, period_ms=1.0),
            ),
        ),
    )


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@example(_jitter_overrun_scenario())
@given(
    scenarios(
        deadline_policies=[DeadlinePolicy.ABORT],
        pinned=True,
        contended=True,
        near_deadlines=True,
    )
)
def test_no_error_finishes_by_deadline(scenario: Scenario) -> None:
    """Policy abort: an execution that returns NONE finished on the device by its deadline."""
    _check_no_error_within_deadline(run_with_records(scenario))


def _idle_estimate_bounds_ns(
    scenario: Scenario, app: AppSpec, device: DeviceSpec
) -> tuple[int, int]:
    """The smallest and largest idle-device estimate the driver can make for ``app``'s model
    (launch + nominal plan, times 1 or the largest slow-down factor)."""
    model = scenario.model(app.model)
    plan = compute_plan(build_model(model), capabilities_from(device.performance), scenario.cpu)
    factor = max(
        [f.factor for f in device.faults if f.kind is FaultKind.SLOWDOWN] + [1.0], default=1.0
    )
    launch_ns = us(device.cost.launch_us * 1000)
    smallest = idle_estimate_ns(model, device, scenario.cpu)
    assert smallest == launch_ns + us(plan.total_ns)
    return smallest, launch_ns + us(plan.total_ns * factor)


_BOTH_WAYS = Reach(at_least=0.2)
"""Examples with a PERSISTENT result or a completion under ``abort`` (the property's cases)."""


@pytest.mark.slow
@_BOTH_WAYS.required
@settings(max_examples=60, deadline=None)
@given(scenarios(min_apps=2, pinned=True, contended=True, near_deadlines=True))
def test_missed_deadline_persistent_exactly_when_idle_estimate_exceeds(scenario: Scenario) -> None:
    """MISSED_DEADLINE_PERSISTENT only when launch + nominal plan x slowdown exceeds the time
    left, and an execution that completes under ``abort`` had a timeout covering the estimate.

    The driver decides at some moment ``now`` between the frame's arrival and the app's
    result, and the deadline is at least arrival + timeout, so PERSISTENT implies
    ``estimate > arrival + timeout - result time``. Conversely a driver with
    ``deadline_policy: abort`` that ran an execution found ``now + estimate <= deadline``,
    and the deadline is at most ``now + timeout``, so ``estimate <= timeout``.
    """
    records = run_with_records(scenario)
    record_outcomes(records)
    devices = {d.name: d for d in scenario.devices}
    persistent = completed = 0
    for app in scenario.apps:
        name = _single_device(app)
        for record in records.apps[app.name]:
            if record.code is ResultCode.MISSED_DEADLINE_PERSISTENT:
                persistent += 1
                assert name is not None
                assert name != CPU_DEVICE_NAME
                device = devices[name]
                assert device.hal_version is HalVersion.V1_3
                assert record.timeout_ns is not None
                _, largest = _idle_estimate_bounds_ns(scenario, app, device)
                assert largest > record.arrival_ns + record.timeout_ns - record.finished_ns
            elif (
                record.code is ResultCode.NO_ERROR
                and record.timeout_ns is not None
                and app.execution_mode is not ExecutionMode.BURST  # bursts carry no deadline
                and name in devices
                and devices[name].hal_version is HalVersion.V1_3
                and devices[name].deadline_policy is DeadlinePolicy.ABORT
            ):
                completed += 1
                smallest, _ = _idle_estimate_bounds_ns(scenario, app, devices[name])
                assert smallest <= record.timeout_ns, (app.name, record)
    event("PERSISTENT checked" if persistent else "no PERSISTENT to check")
    target(float(min(persistent, 1) + min(completed, 1)), label="directions checked")
    event("completion under abort checked" if completed else "no completion under abort")
    target(float(persistent + completed), label="assertions checked")
    _BOTH_WAYS.example(persistent + completed)


@tiered(scenarios(durations=True), quick=20, wide=60)
def test_result_codes_are_ones_the_ndk_allows(scenario: Scenario) -> None:
    """Compute yields only NDK compute codes; QoS codes need a 1.3 driver, deadline codes a timeout."""
    records = run_with_records(scenario)
    devices = {d.name: d for d in scenario.devices}
    for app in scenario.apps:
        pinned = _single_device(app)
        for record in records.apps[app.name]:
            assert record.code in COMPUTE_CODES, (app.name, record)
            if record.code.is_deadline_miss:
                assert record.timeout_ns is not None, (app.name, record)
            if record.code in QOS_CODES and pinned is not None and pinned != CPU_DEVICE_NAME:
                assert devices[pinned].hal_version is HalVersion.V1_3, (app.name, record)
            if record.code in QOS_CODES - {ResultCode.MISSED_DEADLINE_TRANSIENT}:
                # Only a 1.3 driver produces these (the runtime's CPU executor only misses
                # deadlines), and the app sees them only from an explicit device list
                # (createForDevices: no CPU fallback), of one device or several.
                assert app.devices is not None, (app.name, record)
                assert any(
                    name in devices and devices[name].hal_version is HalVersion.V1_3
                    for name in app.devices
                ), (app.name, record)


def _fingerprint(records: RunRecords) -> tuple[object, ...]:
    jobs = tuple(
        (
            name,
            tuple(
                (
                    j.uid,
                    j.priority,
                    j.deadline_ns,
                    j.arrived_ns,
                    j.started_ns,
                    j.finished_ns,
                    j.status,
                    j.preempted,
                    tuple(j.durations),
                )
                for j in jobs
            ),
        )
        for name, jobs in sorted(records.devices.items())
    )
    return records.report.to_json(), tuple(sorted(records.apps.items())), jobs


@tiered(scenarios(durations=True), quick=10, wide=30)
def test_same_scenario_same_report(scenario: Scenario) -> None:
    """Running the same scenario twice gives identical reports, records and device histories."""
    assert _fingerprint(run_with_records(scenario)) == _fingerprint(run_with_records(scenario))


def _closed_loop_cpu_only() -> Scenario:
    return Scenario(
        name="closed-loop-cpu-only",
        models=(
            ModelSpec(
                name="m0",
                layers=(
                    LayerSpec(type=OperationType.CONV_2D, output=(1, 8, 8, 4), filter=(4, 3, 3, 3)),
                ),
            ),
        ),
        apps=(
            AppSpec(
                name="a0",
                uid=10000,
                model="m0",
                workload=WorkloadSpec(kind=WorkloadKind.CLOSED_LOOP, executions=1),
            ),
        ),
    )


def test_closed_loop_app_on_cpu_only_compilation_runs() -> None:
    """A closed-loop app whose model compiles for the CPU device only runs to the end."""
    report = run_with_records(_closed_loop_cpu_only()).report
    assert report.data["apps"]["a0"]["completed"] == 1
