"""Every shipped scenario's trace parses into per-client runs whose tables add up."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from nnemu import run
from nnemu.parser import parse_file
from nnemu.parser._model import MAIN_PHASES, TABLE_LAYERS
from nnemu.scenario import load_scenario
from nnemu.tracer import Layer, Phase, open_trace_writer

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"
DEMO_SCENARIOS = ROOT / "nnemu" / "demo" / "scenarios"
SEQUENTIAL = (Phase.INITIALIZATION, Phase.PREPARATION, Phase.COMPILATION, Phase.TERMINATION)


def _scenario_files() -> list[Path]:
    return sorted([*SCENARIOS.glob("*.yaml"), *DEMO_SCENARIOS.glob("*.yaml")])


def _value(value: float) -> float:
    return 0.0 if math.isnan(value) else value


@pytest.mark.parametrize("path", _scenario_files(), ids=lambda p: p.stem)
def test_every_run_of_every_scenario_adds_up(path: Path, tmp_path: Path):
    """No sequential phase has a negative self time, the Application's Total self time
    (time outside NNAPI, runtime work on several threads counted once) is not negative,
    and below the application each layer's Total self time is the sum of its row, in
    every run of every client."""
    trace = tmp_path / "trace.html"
    scenario = load_scenario(path)
    run(scenario, sinks=[open_trace_writer(trace)])
    result = parse_file(trace)
    clients = {app.name for app in scenario.apps}
    assert len({run_stats.pid for run_stats in result.runs}) == len(clients)
    for stats in result.runs:
        self_times = stats.self_times
        where = f"{path.name} {stats.starting_mark}"
        for phase in SEQUENTIAL:
            for layer in TABLE_LAYERS:
                assert _value(self_times[phase][layer]) >= -1e-9, (where, layer, phase)
        assert _value(self_times[Phase.OVERALL][Layer.APPLICATION]) >= 0.0, where
        app_self = stats.application_total_self_ns()
        assert app_self is None or app_self >= 0, where
        for layer in TABLE_LAYERS:
            if layer is Layer.APPLICATION:
                continue
            row = sum(_value(self_times[phase][layer]) for phase in MAIN_PHASES)
            total = _value(self_times[Phase.OVERALL][layer])
            assert total == pytest.approx(row, abs=1e-9), (where, layer)
