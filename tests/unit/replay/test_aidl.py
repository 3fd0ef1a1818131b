"""Replay of traces from AIDL-HAL drivers (``AIDL::ndk::<Iface>::<method>::client|server``
marks): the driver is seen, with its process, device name, executions and the HAL version
it spoke, in every trace format; the recorded figures are the run's report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nnemu import run
from nnemu.app import LatencyHistogram
from nnemu.hal import HalVersion
from nnemu.replay import build_replay, extract_plan
from nnemu.scenario import load_scenario
from tests.commands import run_cli
from tests.unit.replay.helpers import REPO, record

FORMATS = (".html", ".json", ".pftrace")

# scenario -> (the AIDL device, its service process, the apps that executed on it)
AIDL = {
    "aidl_npu_hidl_gpu": ("npu", "android.hardware.neuralnetworks-service-npu", {"photos"}),
    "aidl_v4_reusable": (
        "npu",
        "android.hardware.neuralnetworks-service-npu",
        {"camera", "hotword_npu"},  # a reusable execution (IExecution), an AIDL IBurst
    ),
}


def _report_quantile_ms(latencies_ns: list[int], q: float) -> float:
    """``q`` of ``latencies_ns`` as the run's report computes it (its histogram's rule)."""
    histogram = LatencyHistogram()
    for ns in latencies_ns:
        histogram.add_ns(ns)
    return round(histogram.quantile_us(q) / 1000, 3)


@pytest.mark.parametrize("suffix", FORMATS)
@pytest.mark.parametrize("name", AIDL)
def test_replay_sees_the_aidl_driver(name: str, suffix: str, tmp_path: Path) -> None:
    """The AIDL driver's process is a driver named for its device, aidl-v4 (its
    ``*WithConfig`` calls), with every execution the run's report counts on it, served to
    the apps that ran there; each app's recorded n, p50 and p95 are the report's (before,
    its apps' executions were "no driver seen (CPU)")."""
    device, process, clients = AIDL[name]
    path = tmp_path / f"{name}{suffix}"
    report = record(REPO / "scenarios" / f"{name}.yaml", path)
    data: dict[str, Any] = dict(report.data)
    plan = extract_plan(str(path))
    drivers = {driver.name: driver for driver in plan.drivers}
    assert set(drivers) == {d for d in data["devices"] if d != "nnapi-reference"}
    driver = drivers[device]
    assert driver.process_name == process
    assert driver.hal_version is HalVersion.AIDL_V4
    assert "WithConfig" in driver.hal_evidence
    executions = len(driver.execution_ns) + driver.burst_executions
    assert executions == data["devices"][device]["executions"]
    served = {app.name for app in plan.apps if driver.pid in app.driver_pids}
    assert served == clients
    for app in plan.apps:
        was = data["apps"][app.name]
        latencies = list(app.latencies_ns)
        assert len(latencies) == was["completed"], app.name
        for q in ("p50", "p95"):
            quantile = _report_quantile_ms(latencies, int(q[1:]) / 100)
            assert quantile == was["latency_ms"][q], (app.name, q)
    # The replay's scenario keeps the version (so a saved scenario does).
    built = {d.name: d for d in build_replay(plan).scenario.devices}
    assert built[device].hal_version is HalVersion.AIDL_V4


def test_saved_scenario_keeps_the_aidl_version(tmp_path: Path) -> None:
    """``nnemu replay --save-scenario`` writes ``hal_version: aidl-v4`` for the AIDL
    driver, and the saved scenario loads and runs its executions on it."""
    trace = tmp_path / "mixed.pftrace"
    record(REPO / "scenarios/aidl_npu_hidl_gpu.yaml", trace)
    saved = tmp_path / "saved.yaml"
    code, out, err = run_cli("replay", str(trace), "-n", "--save-scenario", str(saved))
    assert code == 0, err
    assert "executions on: npu x62" in out
    assert "devices.npu: HAL aidl-v4 (from AIDL::ndk::IDevice::prepareModelWithConfig)" in out
    scenario = load_scenario(saved)
    versions = {d.name: d.hal_version for d in scenario.devices}
    assert versions == {"npu": HalVersion.AIDL_V4, "gpu": HalVersion.V1_3}
    assert {a.name: a.devices for a in scenario.apps}["photos"] == ("npu",)


def test_a_mobilenet_sets_the_device_speed_beside_a_one_operation_model(tmp_path: Path) -> None:
    """aidl_v4_reusable: the npu serves a reusable camera (a mobilenet, 60 executions) and a hotword
    app (200 executions the replay gives the one-operation stand-in). The device's speed
    comes from the camera, so the camera replays within 15% of its recorded p50 and p95
    (from the hotword's 25 µs it was a speed 3125 times the reference, and the camera
    replayed at 2227 ms for 4.7)."""
    path = tmp_path / "v4.json"
    report = record(REPO / "scenarios/aidl_v4_reusable.yaml", path)
    plan = extract_plan(str(path))
    built = build_replay(plan)
    assert any(
        note.text.startswith("devices.npu.performance.float32.exec_time: 0.08")
        and "60 camera's executions" in note.text
        for note in built.derived
    ), [note.text for note in built.derived]
    # The camera computes one execution again and again (setReusable): so does its replay.
    reusable = {app.name: app.reusable for app in built.scenario.apps}
    assert reusable == {"camera": True, "hotword_npu": False, "hotword_gpu": False}
    assert (
        "apps.camera.reusable: true (1 setReusable call: ANeuralNetworksExecution_setReusable)"
        in [note.text for note in built.derived]
    )
    camera = run(built.scenario).data["apps"]["camera"]["latency_ms"]
    was = report.data["apps"]["camera"]["latency_ms"]
    for q in ("p50", "p95"):
        assert camera[q] == pytest.approx(was[q], rel=0.15), q
