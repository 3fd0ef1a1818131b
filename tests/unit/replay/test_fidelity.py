"""Replay fidelity with several apps on one device: each app's recorded figures come back.

The tolerances are what a replay can reach when the trace carries what the run depends on:
device speed and jitter are derived from the trace (compute within 3%), but the jitter's draws
are the replay's own (seed 0, not the recording's), so each app's latency p50 lands within 10%
and its p95 within 20% of the recording.  The scenarios left out depend on what traces do not
carry: priorities and preemption (qos_priority_*), deadlines (qos_deadline_storm), a driver
crash (qos_driver_crash), a synchronous app's model faster than a mobilenet can be
(burst_low_latency; its bursting apps are in test_bursts.py) and a compile failure
(qos_model_too_large).
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import pytest

from nnemu import run
from nnemu.replay import apply_overrides, build_replay, extract_plan
from tests.unit.replay.helpers import REPO, record

FAITHFUL = ("two_apps_one_npu", "poisson_gpu_npu", "compilation_caching")


def _apps(data: Any) -> dict[str, Any]:
    return dict(data["apps"])


@pytest.fixture(scope="module", name="recordings")
def _recordings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Any]]:
    out = tmp_path_factory.mktemp("fidelity")
    recorded = {}
    for name in FAITHFUL:
        path = out / f"{name}.html"
        report = record(REPO / "scenarios" / f"{name}.yaml", path)
        recorded[name] = (path, report.data)
    return recorded


@pytest.mark.parametrize("name", FAITHFUL)
def test_replay_reproduces_each_apps_figures(
    name: str, recordings: dict[str, tuple[Path, Any]]
) -> None:
    """Each app's replayed compute, p50 and p95 latency are within 3%, 10% and 20% of the recording."""
    path, recorded = recordings[name]
    replayed = run(build_replay(extract_plan(str(path))).scenario).data
    for app, was in _apps(recorded).items():
        now = _apps(replayed)[app]
        assert now["completed"] == pytest.approx(was["completed"], abs=1)
        compute = was["latency_split_ms"]["compute"]
        assert now["latency_split_ms"]["compute"] == pytest.approx(compute, rel=0.03), app
        assert now["latency_ms"]["p50"] == pytest.approx(was["latency_ms"]["p50"], rel=0.10), app
        assert now["latency_ms"]["p95"] == pytest.approx(was["latency_ms"]["p95"], rel=0.20), app


def test_device_time_leaves_out_the_wait_behind_another_app(
    recordings: dict[str, tuple[Path, Any]],
) -> None:
    """Each app's extracted device times average its recorded compute plus launch, not its driver time with queueing."""
    path, recorded = recordings["two_apps_one_npu"]
    plan = extract_plan(str(path))
    (driver,) = plan.drivers
    for app in plan.apps:
        split = _apps(recorded)[app.name]["latency_split_ms"]
        mine = driver.service_of(app.pid)
        assert len(mine) == len(app.arrivals_ns) - app.never_ended  # (the run's end cut one)
        device_ms = statistics.mean(mine) / 1e6
        assert device_ms == pytest.approx(split["compute"] + split["driver_launch"], rel=0.02)
    camera = next(a for a in plan.apps if a.name == "camera")
    waited = [
        ns
        for ns, pid in zip(driver.execution_ns, driver.execution_clients, strict=True)
        if pid == camera.pid
    ]
    assert statistics.mean(waited) > 1.2 * statistics.mean(driver.service_of(camera.pid))


def test_model_what_if_changes_only_that_apps_compute(
    recordings: dict[str, tuple[Path, Any]],
) -> None:
    """A --set on the camera's model moves the camera's compute time and leaves the indexer's (within the jitter's noise)."""
    path, _ = recordings["two_apps_one_npu"]
    scenario = build_replay(extract_plan(str(path))).scenario
    base = _apps(run(scenario).data)
    changed = _apps(run(apply_overrides(scenario, ["models.camera-model.dtype=quant8"])).data)
    assert changed["camera"]["latency_split_ms"]["compute"] != pytest.approx(
        base["camera"]["latency_split_ms"]["compute"], rel=0.2
    )
    assert changed["indexer"]["latency_split_ms"]["compute"] == pytest.approx(
        base["indexer"]["latency_split_ms"]["compute"], rel=0.02
    )
