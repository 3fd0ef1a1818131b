"""Burst executions in a replay: the apps that ran over a burst replay over one, on its device.

A burst execution makes no HIDL call: the app's runtime marks a request
(``ANeuralNetworksExecution_burstCompute``, ``ExecutionBurstController::compute``) and the
driver's burst thread runs it (``[NN_LD_PE]BurstExecutorWithCache::execute``).  The replay
gives each burst thread to the app whose requests it took, so the app's executions count on
that device, its device time comes from them and it replays in ``burst`` mode: with
``low_power`` when its burst server never polled; and an app, bursting or not, gets a
one-layer model when no mobilenet can compute in its device time.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import pytest

from nnemu import run
from nnemu.hal import ExecutionPreference
from nnemu.replay import build_replay, describe_build, describe_plan, extract_plan
from nnemu.replay._devices import SMALL_LAYERS
from nnemu.scenario import ExecutionMode
from tests.unit.replay.helpers import REPO, record

BURST_APPS = ("hotword_burst", "hotword_lowpower")
ALL_APPS = (*BURST_APPS, "hotword_sync")


@pytest.fixture(scope="module", name="recording")
def _recording(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    path = tmp_path_factory.mktemp("bursts") / "burst_low_latency.html"
    report = record(REPO / "scenarios/burst_low_latency.yaml", path)
    return path, report.data


def test_burst_executions_are_the_apps_executions_on_the_driver(
    recording: tuple[Path, Any],
) -> None:
    """Each bursting app's 200 executions count on the dsp, from its own burst thread's executions, two bursting apps at once included."""
    path, _ = recording
    plan = extract_plan(str(path))
    (driver,) = plan.drivers
    assert driver.burst_executions == 400
    assert len(driver.burst_execution_ns) == len(driver.burst_ns) == 400
    assert statistics.median(driver.burst_execution_ns) == 15_000  # each section's own time
    apps = {app.name: app for app in plan.apps}
    for name in BURST_APPS:
        app = apps[name]
        assert app.burst_executions == 200, name
        assert app.driver_pids == (driver.pid,), name
        assert app.driver_executions == (200,), name
        assert len(driver.service_of(app.pid)) == 200, name
    assert apps["hotword_sync"].burst_executions == 0
    assert apps["hotword_sync"].driver_executions == (200,)


def test_burst_apps_replay_in_burst_mode_on_their_device(recording: tuple[Path, Any]) -> None:
    """A bursting app replays with execution_mode burst on the device its burst thread belonged to, the evidence printed."""
    path, _ = recording
    plan = extract_plan(str(path))
    built = build_replay(plan)
    specs = {app.name: app for app in built.scenario.apps}
    lines = describe_build(built)
    for name in BURST_APPS:
        assert specs[name].execution_mode is ExecutionMode.BURST, name
        assert specs[name].devices == ("dsp",), name
        assert (
            f"  apps.{name}.execution_mode: burst (runtime execution API; dsp's burst thread ran "
            "200 of its requests: BurstExecutorWithCache::execute)"
        ) in lines
    assert specs["hotword_sync"].execution_mode is ExecutionMode.SYNC
    assert any("burst executions, median 0.015 ms" in line for line in describe_plan(plan))


def test_burst_mode_is_derived_without_runtime_marks(
    recording: tuple[Path, Any], tmp_path: Path
) -> None:
    """With the runtime's marks cut from the trace, an app whose requests a burst thread ran still replays in burst mode."""
    path, _ = recording
    cut = tmp_path / "no_runtime.html"
    text = path.read_text(encoding="utf-8")
    cut.write_text(
        "".join(line for line in text.splitlines(keepends=True) if "[NN_LR_" not in line),
        encoding="utf-8",
    )
    built = build_replay(extract_plan(str(cut)))
    specs = {app.name: app for app in built.scenario.apps}
    assert specs["hotword_burst"].execution_mode is ExecutionMode.BURST
    assert specs["hotword_burst"].devices == ("dsp",)
    assert (
        "  apps.hotword_burst.execution_mode: burst (dsp's burst thread ran 200 of its requests: "
        "BurstExecutorWithCache::execute; no runtime marks)"
    ) in describe_build(built)


def test_a_burst_server_that_never_polled_gives_low_power(recording: tuple[Path, Any]) -> None:
    """The app whose burst requests soon after an execution still waited a wake-up replays with preference low_power; the polling one keeps the default."""
    path, _ = recording
    built = build_replay(extract_plan(str(path)))
    specs = {app.name: app for app in built.scenario.apps}
    assert specs["hotword_lowpower"].preference is ExecutionPreference.LOW_POWER
    assert specs["hotword_burst"].preference is ExecutionPreference.FAST_SINGLE_ANSWER
    (line,) = [text for text in describe_build(built) if ".preference:" in text]
    assert line.startswith("  apps.hotword_lowpower.preference: low_power (its burst server")
    assert "took a median 0.085 ms to reach it, a wake-up (ipc 80 us)" in line


def test_a_model_faster_than_a_mobilenet_is_one_layer(recording: tuple[Path, Any]) -> None:
    """An app whose 15 us device time no mobilenet can take, bursting or not, gets a one-layer model, and the device a launch that makes up the rest."""
    path, _ = recording
    built = build_replay(extract_plan(str(path)))
    models = {model.name: model for model in built.scenario.models}
    for name in ALL_APPS:
        assert models[f"{name}-model"].layers == SMALL_LAYERS, name
    (dsp,) = built.scenario.devices
    assert dsp.cost.launch_us == 12  # 15 us - 1 us of compute - 2 us of validation
    lines = describe_build(built)
    assert any(line.startswith("  devices.dsp.cost.launch_us: 12 (median device") for line in lines)
    assert not any("launch 12 us, " in line for line in lines if "(defaults)" in line)


@pytest.mark.parametrize("name", ALL_APPS)
def test_the_apps_replay_their_recorded_latency(name: str, recording: tuple[Path, Any]) -> None:
    """Each app's replayed p50 and p95 are within 10% and 20% of its recording (before: the bursting apps 18.553 and 11.203 ms p50 on the CPU for 0.040 and 0.115, hotword_sync 3.989 for 0.189 with a mobilenet)."""
    path, recorded = recording
    replayed = run(build_replay(extract_plan(str(path))).scenario).data
    was = recorded["apps"][name]["latency_ms"]
    now = replayed["apps"][name]["latency_ms"]
    assert now["p50"] == pytest.approx(was["p50"], rel=0.10)
    assert now["p95"] == pytest.approx(was["p95"], rel=0.20)
