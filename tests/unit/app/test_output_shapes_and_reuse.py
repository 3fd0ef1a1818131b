"""The app keys of dynamic output shapes (``output_bytes``, a model's ``dynamic_outputs``)
and reusable executions (``reusable``), run end to end (docs/scenario-format.md)."""

from __future__ import annotations

from nnemu import run
from nnemu.scenario import dump_scenario, load_scenario_text
from tests.unit.tracer.helpers import RecordingSink

BASE = """\
name: shapes
seed: 3
devices:
  - name: npu
    hal_version: "1.3"
    performance:
      float32: {exec_time: 0.3, power_usage: 0.4}
models:
  - name: add
    preset: add
    params: {size: 16}
APP
apps:
  - name: app
    model: add
    workload: {kind: closed_loop, executions: 4}
"""


def _run(model: str = "", app: str = "") -> dict:
    text = BASE.replace("APP\n", model).replace("    workload:", app + "    workload:")
    scenario = load_scenario_text(text, source="s.yaml")
    assert load_scenario_text(dump_scenario(scenario), source="s.yaml") == scenario
    return run(scenario).data


def test_a_short_buffer_of_a_dynamic_output_is_output_insufficient_size() -> None:
    """64 bytes hold the add preset's 16 float32 outputs; 63 do not: every execution ends
    OUTPUT_INSUFFICIENT_SIZE (never retried nor fallen back), 64 complete them all."""
    dynamic = "    dynamic_outputs: true\n"
    short = _run(dynamic, "    output_bytes: [63]\n")["apps"]["app"]
    enough = _run(dynamic, "    output_bytes: [64]\n")["apps"]["app"]
    assert short["errors"] == {"OUTPUT_INSUFFICIENT_SIZE": 4}
    assert short["completed"] == 0
    assert enough["completed"] == 4


def test_a_short_buffer_of_a_fully_specified_output_is_bad_data() -> None:
    """setOutput refuses a buffer too small for a fully specified output: the output stays
    unspecified and every execution is BAD_DATA."""
    app = _run("", "    output_bytes: [63]\n")["apps"]["app"]
    assert app["errors"] == {"BAD_DATA": 4}


def test_a_reusable_app_creates_one_execution_per_thread() -> None:
    """With ``reusable: true`` each app thread creates one execution and computes it for
    each of its executions: the same results, one ANeuralNetworksExecution_create per
    thread instead of one per execution."""
    plain, plain_creates = _run_counting_creates()
    reused, reused_creates = _run_counting_creates("    reusable: true\n    threads: 2\n")
    assert plain_creates == 4
    assert reused_creates == 2
    assert reused["apps"]["app"]["completed"] == plain["apps"]["app"]["completed"] == 4
    assert reused["devices"]["npu"]["executions"] == 4


def _run_counting_creates(app: str = "") -> tuple[dict, int]:
    """``_run``'s report and how many ANeuralNetworksExecution_create its trace holds (the
    trace, not a patched class: a wheel's runtime is compiled, and its classes are fixed)."""
    text = BASE.replace("APP\n", "").replace("    workload:", app + "    workload:")
    sink = RecordingSink()
    data = run(load_scenario_text(text, source="s.yaml"), sinks=[sink]).data
    creates = sum(mark.name == "[NN_LR_PE]ANeuralNetworksExecution_create" for mark in sink.marks)
    return data, creates
