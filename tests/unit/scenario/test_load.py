"""Loading, validating and dumping scenario YAML."""

from __future__ import annotations

import pathlib
import textwrap

import attrs
import pytest
from hypothesis import given, settings

from nnemu.errors import ScenarioError, SpecValueError
from nnemu.hal import DeviceType, HalVersion, OperationType, Priority
from nnemu.scenario import (
    DeviceSpec,
    ExpectOp,
    FaultKind,
    FaultSpec,
    PerfSpec,
    Scenario,
    SchedulerKind,
    WorkloadKind,
    dump_scenario,
    load_scenario,
    load_scenario_text,
)
from tests.unit.scenario.strategies import scenarios

FULL = pathlib.Path(__file__).parent / "data" / "full.yaml"

# A small valid scenario that the error tests break one key at a time.
VALID = """\
name: demo
duration_ms: 1000
devices:
  - name: npu
models:
  - name: net
    preset: mobilenet_v1
apps:
  - name: camera
    model: net
    workload: {kind: periodic, period_ms: 33}
"""


def problems(text: str) -> list[str]:
    """The problem lines of loading ``text``, which must fail."""
    with pytest.raises(ScenarioError) as info:
        load_scenario_text(textwrap.dedent(text), "s.yaml")
    return str(info.value).splitlines()


def test_full_scenario_loads_with_its_values():
    """The full example loads into the expected model values, defaults filled in."""
    s = load_scenario(FULL)
    assert s.source == str(FULL)
    assert s.seed == 7
    assert s.duration_ms == 2000.0
    npu, gpu = s.devices
    assert npu.performance.if_ == PerfSpec(exec_time=2.0)
    assert npu.performance.while_ == PerfSpec()
    assert npu.scheduler is SchedulerKind.GLOBAL_PRIORITY
    assert npu.supported_operations is not None
    assert npu.supported_operations[0] is OperationType.CONV_2D
    assert npu.faults[0] == FaultSpec(kind=FaultKind.BUSY, at_ms=500.0, until_ms=700.0)
    assert gpu.hal_version is HalVersion.V1_2
    assert gpu.type is DeviceType.GPU
    assert s.model("mobilenet").params == (("alpha", 1.0), ("input_size", 224))
    camera, assistant = s.apps
    assert camera.uid == 10000
    assert camera.priority is Priority.HIGH
    assert assistant.uid == 10123
    assert assistant.workload.kind is WorkloadKind.POISSON
    assert assistant.workload.rate_hz == 10.0
    assert s.expect[1].path == ("apps", "camera", "latency_ms", "p95")
    assert s.expect[1].op is ExpectOp.LE
    assert s.expect[1].value == 30.0


def test_full_scenario_round_trips():
    """Dumping the full example and loading the dump gives the same scenario."""
    s = load_scenario(FULL)
    assert load_scenario_text(dump_scenario(s), s.source) == s


@pytest.mark.slow
@settings(deadline=None)
@given(scenarios())
def test_generated_scenarios_round_trip(s: Scenario):
    """Every generated valid scenario survives dump then load unchanged (but for source)."""
    assert load_scenario_text(dump_scenario(s)) == attrs.evolve(s, source="<string>")


def test_minimal_scenario_gets_defaults():
    """Only ``name`` is required; everything else takes the documented default."""
    assert load_scenario_text("name: empty") == Scenario(name="empty")


def test_uid_defaults_to_10000_plus_index():
    """An app without uid gets 10000 + its index in apps."""
    text = VALID + "  - {name: second, model: net, uid: 5}\n  - {name: third, model: net}\n"
    assert [app.uid for app in load_scenario_text(text).apps] == [10000, 5, 10002]


def test_dump_leaves_out_defaults():
    """The dump of a minimal scenario is just its name."""
    assert dump_scenario(Scenario(name="x", source="x.yaml")) == "name: x\n"


def test_hal_version_as_number_is_accepted():
    """hal_version 1.0 written as a YAML number means HAL 1.0."""
    s = load_scenario_text("name: x\ndevices: [{name: a, hal_version: 1.0}]")
    assert s.devices[0].hal_version is HalVersion.V1_0


def test_merge_keys_are_resolved():
    """YAML merge keys (<<) share settings between devices, the device's own keys winning."""
    text = """\
    name: x
    devices:
      - &base {name: a, compute_units: 2, queue_limit: 4}
      - {<<: *base, name: b, queue_limit: 8}
    """
    b = load_scenario_text(textwrap.dedent(text)).devices[1]
    assert (b.name, b.compute_units, b.queue_limit) == ("b", 2, 8)


def test_wrong_type():
    """A string where a number is expected is reported at the value."""
    text = VALID.replace("period_ms: 33", "period_ms: abc")
    assert problems(text) == [
        "s.yaml:11:43: apps[0].workload.period_ms: expected a number in [0.001, 3600000], got 'abc'"
    ]


def test_bool_is_not_a_number():
    """true is not accepted where an integer is expected."""
    assert problems("name: x\nseed: true\n") == [
        "s.yaml:2:7: seed: expected an integer in [-18446744073709551616, 18446744073709551616], got true"
    ]


def test_unknown_key_suggests_the_closest():
    """A misspelt key is reported at the key with difflib's suggestion."""
    text = VALID.replace("period_ms", "perod_ms")
    assert problems(text) == [
        "s.yaml:11:15: apps[0].workload: "
        "missing required key 'period_ms' (needed by a periodic workload)",
        "s.yaml:11:32: apps[0].workload.perod_ms: "
        "unknown key 'perod_ms'; did you mean 'period_ms'?",
    ]


def test_unknown_key_a_newcomer_tries_suggests_the_key_meant():
    """``deadline_ms`` is not close to ``execution_timeout_ms`` by spelling; it is by meaning."""
    text = VALID.replace("    model: net\n", "    model: net\n    deadline_ms: 5\n")
    assert problems(text) == [
        "s.yaml:11:5: apps[0].deadline_ms: "
        "unknown key 'deadline_ms'; did you mean 'execution_timeout_ms'?",
    ]


@pytest.mark.parametrize("spelling", ["HIGH", "High", "high"])
def test_enum_values_are_read_in_any_case(spelling: str):
    """Every output prints ``HIGH``; a scenario may write it so (dumped as the one spelling)."""
    text = VALID.replace("    model: net\n", f"    model: net\n    priority: {spelling}\n")
    scenario = load_scenario_text(text)
    assert scenario.apps[0].priority is Priority.HIGH
    assert "priority: high\n" in dump_scenario(scenario)


def test_missing_key():
    """A missing required key is reported at the mapping that lacks it."""
    text = VALID.replace("    model: net\n", "")
    assert problems(text) == ["s.yaml:9:5: apps[0]: missing required key 'model'"]


def test_bad_enum():
    """An unknown enum spelling lists the valid ones."""
    text = VALID.replace("  - name: npu\n", "  - name: npu\n    scheduler: lifo\n")
    assert problems(text) == [
        "s.yaml:5:16: devices[0].scheduler: expected one of fifo, per_app_priority, "
        "global_priority, got 'lifo'"
    ]


def test_negative_time():
    """A negative *_ms value is rejected."""
    text = VALID.replace("  - name: npu\n", "  - name: npu\n    cost: {prepare_ms: -5}\n")
    assert problems(text) == [
        "s.yaml:5:24: devices[0].cost.prepare_ms: expected a number in [0, 3600000], got -5"
    ]


def test_zero_period():
    """A period must be strictly positive."""
    text = VALID.replace("period_ms: 33", "period_ms: 0")
    assert problems(text) == [
        "s.yaml:11:43: apps[0].workload.period_ms: expected a number in [0.001, 3600000], got 0"
    ]


def test_duplicate_name():
    """A second device with the same name is reported at its name."""
    text = VALID.replace("  - name: npu\n", "  - name: npu\n  - name: npu\n")
    assert problems(text) == [
        "s.yaml:5:11: devices[1].name: "
        "expected a unique device name, got 'npu' again (first at line 4)"
    ]


def test_cpu_device_name_is_reserved():
    """nnapi-reference cannot name a scenario device."""
    text = VALID.replace("name: npu", "name: nnapi-reference")
    assert problems(text) == [
        "s.yaml:4:11: devices[0].name: expected a device name other than 'nnapi-reference' "
        "(the runtime's CPU device), got 'nnapi-reference'"
    ]


def test_dangling_model_reference():
    """An app's model must name a model of the scenario."""
    text = VALID.replace("model: net", "model: nett")
    assert problems(text) == [
        "s.yaml:10:12: apps[0].model: expected the name of a model (net), got 'nett'"
    ]


def test_dangling_device_reference():
    """An app's devices must name scenario devices or nnapi-reference."""
    text = VALID.replace("model: net\n", "model: net\n    devices: [npu, nnapi-reference, tpu]\n")
    assert problems(text) == [
        "s.yaml:11:37: apps[0].devices[2]: "
        "expected the name of a device (npu, nnapi-reference), got 'tpu'"
    ]


def test_duplicate_yaml_key():
    """A key given twice in one mapping is reported at the second one."""
    text = VALID.replace("    model: net\n", "    model: net\n    model: net\n")
    assert problems(text) == [
        "s.yaml:11:5: apps[0].model: expected each key once, got 'model' again (first at line 10)"
    ]


def test_timeout_needs_a_single_device():
    """execution_timeout_ms without exactly one device is a problem (NNAPI setTimeout rule)."""
    text = VALID.replace("model: net\n", "model: net\n    execution_timeout_ms: 30\n")
    assert problems(text) == [
        "s.yaml:11:27: apps[0].execution_timeout_ms: expected only when 'devices' lists "
        "exactly one device (setTimeout needs a single-device compilation), "
        "got no 'devices' (all devices)"
    ]


def test_timeout_with_one_device_is_accepted():
    """execution_timeout_ms with a single device loads."""
    text = VALID.replace(
        "model: net\n", "model: net\n    devices: [npu]\n    execution_timeout_ms: 30\n"
    )
    assert load_scenario_text(text).apps[0].execution_timeout_ms == 30.0


def test_workload_that_never_ends():
    """Without executions and without a scenario duration an app would never finish."""
    text = VALID.replace("duration_ms: 1000\n", "")
    assert problems(text) == [
        "s.yaml:10:15: apps[0].workload: expected 'executions' or a scenario 'duration_ms', "
        "got neither (the app would never finish)"
    ]


def test_workload_field_of_another_kind():
    """rate_hz on a periodic workload is reported rather than silently ignored."""
    text = VALID.replace("period_ms: 33}", "period_ms: 33, rate_hz: 5}")
    assert problems(text) == [
        "s.yaml:11:56: apps[0].workload.rate_hz: expected only with kind poisson, got kind periodic"
    ]


def test_fault_fields_by_kind():
    """A crash needs at_ms, and until_ms must come after at_ms."""
    text = VALID.replace(
        "  - name: npu\n",
        "  - name: npu\n    faults:\n      - {kind: crash}\n"
        "      - {kind: busy, at_ms: 5, until_ms: 5}\n",
    )
    assert problems(text) == [
        "s.yaml:6:9: devices[0].faults[0]: missing required key 'at_ms' (needed by a crash fault)",
        "s.yaml:7:42: devices[0].faults[1].until_ms: expected a time after at_ms (5), got 5",
    ]


def test_model_needs_preset_or_layers():
    """A model with both preset and layers is rejected."""
    text = VALID.replace(
        "preset: mobilenet_v1\n", "preset: mobilenet_v1\n    layers: [{type: RELU, output: [1]}]\n"
    )
    assert problems(text) == [
        "s.yaml:6:5: models[0]: expected exactly one of 'preset' or 'layers', got both"
    ]


def test_unknown_expectation_app():
    """An expectation must name an app of the scenario."""
    text = VALID + "expect: ['apps.camra.completed >= 1']\n"
    assert problems(text) == [
        "s.yaml:12:10: expect[0]: expected the name of an app (camera), got 'camra'"
    ]


def test_yaml_syntax_error():
    """A YAML syntax error is one problem at PyYAML's position."""
    assert problems("name: x\ndevices: [\n") == [
        "s.yaml:3:1: invalid YAML: expected the node content, but found '<stream end>' "
        "(while parsing a flow node)"
    ]


def test_document_that_is_not_a_mapping():
    """A list at the top is reported at its start."""
    assert problems("- name: x\n") == [
        "s.yaml:1:1: expected a mapping with the scenario, got a list"
    ]


def test_several_problems_are_all_reported_sorted():
    """Every problem in the document is reported, sorted by position."""
    text = """\
    seed: -x
    devices:
      - name: npu
        compute_units: 0
      - name: npu
        type: tpu
    models: []
    apps:
      - {name: a, model: m, workload: {executions: 0}}
    """
    assert problems(text) == [
        "s.yaml:1:1: missing required key 'name'",
        "s.yaml:1:7: seed: expected an integer in [-18446744073709551616, 18446744073709551616], got '-x'",
        "s.yaml:4:20: devices[0].compute_units: expected an integer in [1, 1024], got 0",
        "s.yaml:5:11: devices[1].name: "
        "expected a unique device name, got 'npu' again (first at line 3)",
        "s.yaml:6:11: devices[1].type: expected one of other, cpu, gpu, accelerator, got 'tpu'",
        "s.yaml:9:22: apps[0].model: expected the name of a model (none are defined), got 'm'",
        "s.yaml:9:48: apps[0].workload.executions: expected an integer in [1, 10000000], got 0",
    ]


def test_unreadable_file(tmp_path: pathlib.Path):
    """A file that cannot be read is a ScenarioError naming it, not an OSError."""
    missing = tmp_path / "missing.yaml"
    with pytest.raises(ScenarioError) as info:
        load_scenario(missing)
    assert str(info.value) == f"{missing}:1:1: cannot read the file: No such file or directory"


def test_hardware_buffers_need_hal_1_2():
    """A device that maps non-BLOB AHardwareBuffers must speak HAL 1.2 or later (validatePool
    takes the hardware_buffer pools from 1.2); on 1.2 it loads, with an app's memory: ahwb."""
    text = VALID.replace(
        "  - name: npu\n", '  - name: npu\n    hal_version: "1.1"\n    hardware_buffers: true\n'
    )
    assert problems(text) == [
        "s.yaml:6:23: devices[0].hardware_buffers: expected false unless hal_version is 1.2 "
        "or later (validatePool), got true"
    ]
    loaded = load_scenario_text(
        text.replace('"1.1"', '"1.2"').replace("model: net\n", "model: net\n    memory: ahwb\n")
    )
    assert loaded.devices[0].hardware_buffers
    assert loaded.apps[0].memory.value == "ahwb"
    with pytest.raises(SpecValueError):
        DeviceSpec(name="npu", hal_version=HalVersion.V1_1, hardware_buffers=True)
