"""Energy: device busy time times the powerUsage ratio, per device and per app."""

from __future__ import annotations

from pathlib import Path

import pytest

from nnemu import run
from nnemu.scenario import load_scenario, load_scenario_text

ROOT = Path(__file__).resolve().parents[3]
SCENARIOS = sorted(
    [*(ROOT / "scenarios").glob("**/*.yaml"), *(ROOT / "nnemu/demo/scenarios").glob("*.yaml")]
)


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_the_apps_energy_is_the_devices_energy(path: Path) -> None:
    """Every unit of device energy is attributed to the app whose work ran (nothing in flight),
    and energy per execution is the app's energy over its completed executions."""
    data = run(load_scenario(path)).data
    apps, devices = data["apps"], data["devices"]
    for app in apps.values():
        per_execution = app["energy"] / app["completed"] if app["completed"] else 0.0
        assert app["energy_per_execution"] == pytest.approx(per_execution, abs=1e-3)
    if any(app["in_flight"] for app in apps.values()):
        assert sum(a["energy"] for a in apps.values()) <= sum(d["energy"] for d in devices.values())
        return
    rounding = 0.001 * (len(apps) + len(devices))
    assert sum(a["energy"] for a in apps.values()) == pytest.approx(
        sum(d["energy"] for d in devices.values()), abs=rounding
    )


def test_device_energy_is_busy_time_times_the_models_power_ratio() -> None:
    """A quant8 model on a device with power_usage 0.2 for quant8 costs 0.2 per busy ms;
    changing the ratio scales the energy and leaves the timing alone."""
    text = (ROOT / "scenarios/quickstart.yaml").read_text(encoding="utf-8")
    low = run(load_scenario_text(text, source="q.yaml")).data
    high_text = text.replace(
        "quant8: {exec_time: 0.1, power_usage: 0.2}", "quant8: {exec_time: 0.1, power_usage: 0.6}"
    )
    assert high_text != text
    high = run(load_scenario_text(high_text, source="q.yaml")).data
    npu = low["devices"]["npu"]
    busy_ms = npu["busy_fraction"] * low["virtual_ms"]
    assert npu["energy"] == pytest.approx(0.2 * busy_ms, rel=1e-4)
    assert high["devices"]["npu"]["busy_fraction"] == npu["busy_fraction"]
    assert high["devices"]["npu"]["energy"] == pytest.approx(3 * npu["energy"], abs=0.002)
    assert high["apps"]["camera"]["energy"] == pytest.approx(
        3 * low["apps"]["camera"]["energy"], abs=0.002
    )


def test_the_cpu_path_costs_its_own_figure() -> None:
    """Work on the runtime's CPU executor costs 1 per busy ms (the reference the ratios are
    relative to), and is attributed to the app that ran it."""
    data = run(load_scenario(ROOT / "scenarios/qos_model_too_large.yaml")).data
    cpu = data["devices"]["nnapi-reference"]
    assert cpu["energy"] == pytest.approx(cpu["busy_fraction"] * data["virtual_ms"], rel=1e-4)
    assert cpu["energy"] > 0
    assert data["apps"]["flexible"]["energy"] == pytest.approx(cpu["energy"], abs=0.001)


def test_the_cpu_path_is_busy_at_most_all_the_time() -> None:
    """Four app threads on the CPU path at once make nnapi-reference busy the time at least
    one ran (never above 100%, as the busy column reads), while its energy counts every
    thread's work: four times the busy time."""
    text = (ROOT / "scenarios/qos_model_too_large.yaml").read_text(encoding="utf-8")
    parallel = text.replace(
        "workload: {kind: closed_loop, executions: 10}\n  - name: pinned",
        "threads: 4\n    workload: {kind: closed_loop, executions: 40}\n  - name: pinned",
    )
    assert parallel != text
    data = run(load_scenario_text(parallel, source="q.yaml")).data
    cpu = data["devices"]["nnapi-reference"]
    assert cpu["executions"] == 40
    assert 0.95 < cpu["busy_fraction"] <= 1.0
    busy_ms = cpu["busy_fraction"] * data["virtual_ms"]
    assert cpu["energy"] == pytest.approx(4 * busy_ms, rel=0.02)
