"""The public strategies of nnemu.testing generate what their arguments promise."""

from __future__ import annotations

from hypothesis import given, settings

from nnemu.hal import HalVersion
from nnemu.scenario import CPU_DEVICE_NAME, DeadlinePolicy, Scenario, WorkloadKind
from nnemu.testing import (
    idle_estimate_ns,
    outcomes,
    run_with_records,
    runs_whole,
    scenarios,
)
from tests.tiers import tiered

OPEN_LOOP = (WorkloadKind.PERIODIC, WorkloadKind.POISSON, WorkloadKind.BURST)


@tiered(scenarios(max_faults=0), quick=15, wide=40)
def test_max_faults_zero_injects_no_fault(scenario: Scenario) -> None:
    """``max_faults=0`` gives devices without faults (a test of healthy devices relies on it)."""
    assert all(device.faults == () for device in scenario.devices)


@tiered(scenarios(pinned=True), quick=15, wide=40)
def test_pinned_apps_sit_on_a_device_that_runs_their_model(scenario: Scenario) -> None:
    """With the default ``supported_pins``, an app pinned to a driver can compile there."""
    devices = {d.name: d for d in scenario.devices}
    for app in scenario.apps:
        assert app.devices is not None
        assert len(app.devices) == 1
        (name,) = app.devices
        if name == CPU_DEVICE_NAME:
            # Only when no device runs any of the scenario's models.
            assert not any(runs_whole(m, d) for m in scenario.models for d in scenario.devices)
        else:
            assert runs_whole(scenario.model(app.model), devices[name])


@tiered(scenarios(pinned=True, near_deadlines=True, deadline_policies=[DeadlinePolicy.ABORT]), quick=15, wide=40)
def test_near_deadlines_draws_timeouts_around_the_idle_estimate(scenario: Scenario) -> None:
    """``near_deadlines``: a 1.3 driver, ample memory, and every pinned app's timeout within
    0.5x to 5x its device's idle estimate plus 0.3 ms."""
    assert scenario.devices[0].hal_version is HalVersion.V1_3
    devices = {d.name: d for d in scenario.devices}
    for device in scenario.devices:
        assert device.memory_mb >= 64
        assert all(fault.at_ms is None or fault.at_ms >= 10 for fault in device.faults)
    for app in scenario.apps:
        assert app.compile_timeout_ms in (None, 50.0)
        assert app.devices is not None
        device = devices.get(app.devices[0])
        if device is None:
            continue
        assert app.execution_timeout_ms is not None
        estimate_ms = idle_estimate_ns(scenario.model(app.model), device, scenario.cpu) / 1e6
        assert 0.5 * estimate_ms - 0.001 <= app.execution_timeout_ms
        assert app.execution_timeout_ms <= max(0.001, 5 * estimate_ms + 0.3) + 0.001


@settings(max_examples=20, deadline=None)
@given(
    scenarios(
        workload_kinds=OPEN_LOOP,
        pinned=True,
        contended=True,
        near_deadlines=True,
        deadline_policies=[DeadlinePolicy.ABORT],
        max_faults=0,
    )
)
def test_contended_near_deadline_scenarios_compile_and_carry_deadlines(
    scenario: Scenario,
) -> None:
    """Without faults, ``contended`` + ``near_deadlines`` scenarios compile every app and
    give executions deadlines (the cases the deadline properties are about)."""
    found = outcomes(run_with_records(scenario))
    assert "no app compiled" not in found
    assert "an app did not compile" not in found
    assert "no execution had a deadline" not in found
