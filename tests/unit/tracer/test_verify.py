"""``nnemu verify``: the ground truth agrees with the parsed trace on every shipped scenario."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from nnemu.scenario import load_scenario_text
from nnemu.tracer import GroundTruth, Layer, Phase
from nnemu.verify import run_verify_command, run_with_truth
from tests.unit.tracer.helpers import scenario_text

SCENARIOS = sorted((Path(__file__).resolve().parents[3] / "scenarios").glob("**/*.yaml"))


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_verify_passes_on_every_scenario(path: Path):
    """Every cell of every run agrees within 1 µs, or is listed as not reconstructable."""
    out, err = io.StringIO(), io.StringIO()
    code = run_verify_command(str(path), seed=None, trace=None, stdout=out, stderr=err)
    assert code == 0, out.getvalue() + err.getvalue()
    assert out.getvalue().rstrip().endswith("verify: ok")


def test_verify_bad_scenario_exits_2(tmp_path: Path):
    """A malformed scenario prints its problems and exits 2."""
    path = tmp_path / "bad.yaml"
    path.write_text("name: x\ndevices: 5\napps: nope\n", encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    assert run_verify_command(str(path), seed=None, trace=None, stdout=out, stderr=err) == 2
    assert err.getvalue().splitlines() == [
        f"{path}:2:10: devices: expected a list, got 5",
        f"{path}:3:7: apps: expected a list, got 'nope'",
    ]


def test_ground_truth_of_a_sync_execution():
    """The truth applies the contract: PIO is part of runtime PE, IPC time is inside runtime time."""
    truth = GroundTruth()
    run_with_truth(load_scenario_text(scenario_text(executions=1, preset="add")), truth)
    (only,) = truth.runs
    assert only.starting_app == "app"
    assert only.executions == 1
    assert only.unreconstructable == {}
    assert only.cell_ns(Layer.RUNTIME, Phase.EXECUTION) > only.cell_ns(Layer.IPC, Phase.EXECUTION)
    assert (
        only.cell_ns(Layer.IPC, Phase.EXECUTION) > only.cell_ns(Layer.DRIVER, Phase.EXECUTION) > 0
    )
    assert only.cell_ns(Layer.RUNTIME, Phase.COMPILATION) > 0
    kinds = {p.kind for p in only.processes}
    assert kinds == {"app", "driver"}
