"""An app's deadline misses count every execution that missed its deadline, whatever the driver's policy."""

from __future__ import annotations

from typing import Any

import pytest

from nnemu import run
from nnemu.scenario import load_scenario_text

# quickstart.yaml with a 5 ms execution timeout: the model takes ~5.9 ms on the NPU.
QUICKSTART_5MS = """
name: quickstart_5ms
seed: 7
devices:
  - name: npu
    hal_version: "{hal}"
    type: accelerator
    deadline_policy: {policy}
    performance:
      float32: {{exec_time: 0.3, power_usage: 0.4}}
      quant8: {{exec_time: 0.1, power_usage: 0.2}}
    cost: {{prepare_ms: 20, prepare_ms_per_op: 0.5, launch_us: 40, jitter: 0.05}}
ipc:
  latency_us: 50
models:
  - {{name: mobilenet, preset: mobilenet_v1, dtype: quant8}}
apps:
  - name: camera
    uid: 10050
    model: mobilenet
    devices: [npu]
    execution_timeout_ms: {timeout}
    workload: {{kind: periodic, period_ms: 33.3, executions: 30}}
expect:
  - "apps.camera.completed_late {expect}"
"""


def _camera(policy: str, *, timeout: float = 5, hal: str = "1.3", expect: str = ">= 0") -> Any:
    text = QUICKSTART_5MS.format(policy=policy, timeout=timeout, hal=hal, expect=expect)
    report = run(load_scenario_text(text, source="t.yaml"))
    assert report.passed
    return report.data["apps"]["camera"]


def test_late_completions_are_deadline_misses_under_ignore() -> None:
    """Under ignore every 5.9 ms execution with a 5 ms timeout completes, late, and is a miss."""
    camera = _camera("ignore", expect="== 30")
    assert camera["completed"] == 30
    assert camera["latency_ms"]["p50"] > 5
    assert camera["completed_late"] == camera["deadline_misses"] == 30
    assert camera["deadline_refused"] == camera["deadline_aborted"] == 0
    assert camera["deadline_miss_rate"] == 1.0


def test_refusals_are_counted_as_refused_not_late() -> None:
    """Under abort the same executions are refused before starting: misses, none completed late."""
    camera = _camera("abort", expect="== 0")
    assert camera["errors"] == {"MISSED_DEADLINE_PERSISTENT": 30}
    assert camera["deadline_refused"] == camera["deadline_misses"] == 30
    assert camera["completed_late"] == 0


def test_a_pre_13_driver_never_sees_the_deadline_but_misses_are_counted() -> None:
    """A HAL 1.2 driver runs everything; the late results still count as misses."""
    camera = _camera("abort", hal="1.2")
    assert camera["completed"] == 30
    assert camera["completed_late"] == camera["deadline_misses"] == 30


@pytest.mark.parametrize("policy", ["ignore", "abort"])
def test_met_deadlines_are_not_misses(policy: str) -> None:
    """With a timeout the model meets, nothing is counted."""
    camera = _camera(policy, timeout=8, expect="== 0")
    assert camera["completed"] == 30
    assert camera["deadline_misses"] == 0
