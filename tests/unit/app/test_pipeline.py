"""The app key ``pipeline: N`` run end to end (docs/scenario-format.md; docs/hal-semantics.md
§1.7): frames of N fenced executions, one app thread per stage."""

from __future__ import annotations

import pytest

from nnemu import run
from nnemu.scenario import load_scenario_text

BASE = """\
name: pipelines
seed: 7
devices:
  - name: npu
    hal_version: "1.3"
    sync_fences: true
    performance:
      float32: {exec_time: 0.3, power_usage: 0.3}
models:
  - name: big
    preset: mobilenet_v1
    params: {input_size: 128, width: 0.5}
  - name: small
    preset: add
apps:
"""
APP = """\
  - name: NAME
    model: MODEL
    devices: [npu]
    execution_mode: fenced
    pipeline: 2
    workload: WORKLOAD
"""
CLOSED = "{kind: closed_loop, executions: 6}"


def _app(name: str, model: str, workload: str = CLOSED) -> str:
    return APP.replace("NAME", name).replace("MODEL", model).replace("WORKLOAD", workload)


@pytest.mark.parametrize("apps", [["small"], ["big", "small"]], ids=["one-app", "two-apps"])
def test_closed_loop_pipelines_end_cleanly(apps) -> None:
    """An app thread that runs its last frame back to back with the one before (a closed
    loop) ends its stage threads once its own work is in the past: every frame completes
    (the stage queue used to be touched 4 us ahead of virtual time, an EmulatorBug)."""
    text = BASE + "".join(_app(f"app_{m}", m) for m in apps)
    data = run(load_scenario_text(text, source="s.yaml")).data
    for model in apps:
        assert data["apps"][f"app_{model}"]["completed"] == 6
