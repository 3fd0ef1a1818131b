"""Each number's range is declared once on its attrs field: code and YAML refuse the same values.

The cases are read from the fields' metadata, so a bound declared on a new field is tested here
without a new test.
"""

from __future__ import annotations

import math
import typing
from typing import Any

import attrs
import pytest
import yaml

import nnemu
import nnemu.scenario as scenario_module
from nnemu.errors import ScenarioError, SpecValueError
from nnemu.hal import OperationType
from nnemu.scenario import (
    AppSpec,
    DeviceSpec,
    ExecutionMode,
    FaultKind,
    FaultSpec,
    LayerSpec,
    ModelSpec,
    PerfSpec,
    Scenario,
    WorkloadKind,
    WorkloadSpec,
    load_scenario,
    load_scenario_text,
)
from nnemu.scenario._limits import Bound, bound_of, is_integer_field

SPEC_CLASSES = [
    cls
    for name in scenario_module.__all__
    if isinstance(cls := getattr(scenario_module, name), type) and attrs.has(cls)
]

# The fields each class needs to be built at all (every other field has a default).
REQUIRED: dict[type, dict[str, Any]] = {
    FaultSpec: {"kind": FaultKind.SLOWDOWN, "at_ms": 0.0},
    DeviceSpec: {"name": "npu"},
    LayerSpec: {"type": OperationType.ADD, "output": (1,)},
    ModelSpec: {"name": "net", "preset": "add"},
    AppSpec: {"name": "camera", "uid": 10000, "model": "net"},
    Scenario: {"name": "s"},
}
# What a field needs beside it: the kind that uses it and what that kind requires.
NEEDS: dict[tuple[type, str], dict[str, Any]] = {
    (FaultSpec, "probability"): {"kind": FaultKind.TRANSIENT_FAILURE, "at_ms": None},
    (LayerSpec, "filter"): {"type": OperationType.CONV_2D, "output": (1, 1, 1, 1)},
    (AppSpec, "pipeline"): {"execution_mode": ExecutionMode.FENCED},
    (WorkloadSpec, "period_ms"): {"kind": WorkloadKind.PERIODIC, "period_ms": 1.0},
    (WorkloadSpec, "rate_hz"): {"kind": WorkloadKind.POISSON, "rate_hz": 1.0},
    (WorkloadSpec, "burst_size"): {
        "kind": WorkloadKind.BURST,
        "burst_size": 1,
        "burst_interval_ms": 1.0,
    },
    (WorkloadSpec, "burst_interval_ms"): {
        "kind": WorkloadKind.BURST,
        "burst_size": 1,
        "burst_interval_ms": 1.0,
    },
    (WorkloadSpec, "arrivals_ms"): {"kind": WorkloadKind.TRACE, "arrivals_ms": (0.0,)},
    (AppSpec, "compile_timeout_ms"): {"devices": ("npu",)},
    (AppSpec, "execution_timeout_ms"): {"devices": ("npu",)},
}


def _with(cls: type, attr: str, value: object) -> dict[str, Any]:
    """Keyword arguments building ``cls`` with ``attr`` set to ``value`` (and what it needs)."""
    return {**REQUIRED.get(cls, {}), **NEEDS.get((cls, attr), {}), attr: value}


def _holds_numbers(hint: Any) -> bool:
    return hint in (int, float) or any(_holds_numbers(arg) for arg in typing.get_args(hint))


def _bounded_fields() -> list[tuple[type, str, Bound]]:
    return [
        (cls, field.name, bound)
        for cls in SPEC_CLASSES
        for field in attrs.fields(cls)
        if (bound := bound_of(field)) is not None
    ]


def _outside(bound: Bound, *, integer: bool) -> list[float]:
    """Values just outside ``bound`` (below, above, not finite, not whole)."""
    low = (
        bound.limit if bound.op == ">" else bound.limit - (1 if integer else abs(bound.limit) or 1)
    )
    values: list[float] = [low]
    if bound.high is not None:
        values.append(bound.high + 1)
    if not integer:
        values.extend([math.nan, math.inf])
    else:  # a fraction inside the range (near 0 where the low end is too large to add 0.5 to)
        first = bound.limit if bound.op == ">=" else bound.limit + 1
        values.append(first + 0.5 if abs(first) < 2**52 else 0.5)
    return values


def _edges(bound: Bound) -> list[float]:
    """The inclusive ends of ``bound``."""
    ends = [bound.limit] if bound.op == ">=" else []
    return ends + ([bound.high] if bound.high is not None else [])


def _as_field(cls: type, attr: str, number: float) -> object:
    """``number`` in the shape of the field (a tuple item, a preset parameter)."""
    hint = typing.get_type_hints(cls)[attr]
    if (cls, attr) == (ModelSpec, "params"):
        return (("size", number),)
    if typing.get_origin(hint) is tuple or tuple in map(typing.get_origin, typing.get_args(hint)):
        return (number, number) if attr == "cache_files" else (number,)
    return number


CASES = [
    pytest.param(cls, attr, bound, value, id=f"{cls.__name__}.{attr}={value!r}")
    for cls, attr, bound in _bounded_fields()
    for value in _outside(bound, integer=is_integer_field(cls, attr))
]


def test_every_number_has_a_declared_range():
    """No numeric field of a spec is left without a bound (the loader relies on it)."""
    missing = [
        f"{cls.__name__}.{field.name}"
        for cls in SPEC_CLASSES
        if cls is not scenario_module.Expectation
        for field in attrs.fields(cls)
        if _holds_numbers(typing.get_type_hints(cls)[field.name]) and bound_of(field) is None
    ]
    assert missing == []
    assert len(_bounded_fields()) > 40


def test_every_spec_class_can_be_built_from_its_required_fields():
    """The classes the cases build all have their required fields listed here."""
    for cls in SPEC_CLASSES:
        if cls is scenario_module.Expectation:
            continue
        cls(**REQUIRED.get(cls, {}))


@pytest.mark.parametrize(("cls", "attr", "bound", "value"), CASES)
def test_a_value_outside_its_range_cannot_be_built_in_code(
    cls: type, attr: str, bound: Bound, value: float
):
    """Building a spec with a number outside its declared range raises SpecValueError naming it."""
    integer = is_integer_field(cls, attr)
    with pytest.raises(SpecValueError) as caught:
        cls(**_with(cls, attr, _as_field(cls, attr, value)))
    assert str(caught.value).startswith(
        f"{cls.__name__}.{attr}: expected {bound.expected(integer=integer)}, got "
    )
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize(("cls", "attr", "bound"), _bounded_fields())
def test_the_ends_of_each_range_can_be_built(cls: type, attr: str, bound: Bound):
    """The inclusive ends of a range are values a spec accepts."""
    integer = is_integer_field(cls, attr)
    for end in _edges(bound):
        number = int(end) if integer else float(end)
        if (cls, attr) == (FaultSpec, "until_ms") and number <= REQUIRED[FaultSpec]["at_ms"]:
            continue  # a fault window ends after it starts
        cls(**_with(cls, attr, _as_field(cls, attr, number)))


def test_evolve_checks_the_range_too():
    """attrs.evolve of a valid spec to a value out of range raises, like building it."""
    with pytest.raises(SpecValueError, match=r"PerfSpec\.exec_time: expected a number in"):
        attrs.evolve(PerfSpec(), exec_time=0.0)


def test_compute_units_zero_is_refused_before_the_run():
    """The README's library example with a device of 0 compute units gets nnemu's message,
    not a ZeroDivisionError inside an exception group."""
    scenario = load_scenario("scenarios/quickstart.yaml")
    with pytest.raises(SpecValueError) as caught:
        attrs.evolve(scenario, devices=(attrs.evolve(scenario.devices[0], compute_units=0),))
    assert str(caught.value) == (
        "DeviceSpec.compute_units: expected an integer in [1, 1024], got 0"
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "net", "preset": "resnet"}, "ModelSpec.preset: expected one of mobilenet_v1"),
        ({"name": "net", "dtype": "int4"}, "ModelSpec.dtype: expected one of float32, quant8"),
    ],
)
def test_an_unknown_preset_or_dtype_cannot_be_built(kwargs: dict[str, str], message: str):
    """A model naming a preset or dtype the HAL cannot build is refused when it is built."""
    with pytest.raises(SpecValueError, match=message):
        ModelSpec(**kwargs)


def test_the_runtime_cpu_device_name_cannot_be_a_driver():
    """A driver device named nnapi-reference is refused in code as the loader refuses it."""
    with pytest.raises(SpecValueError, match="other than 'nnapi-reference'"):
        DeviceSpec(name="nnapi-reference")


# -- the loader states the same ranges ---------------------------------------------------

BASE: dict[str, Any] = {
    "name": "s",
    "devices": [
        {
            "name": "npu",
            "performance": {"float32": {}},
            "cost": {},
            "faults": [{"kind": "crash", "at_ms": 1}],
        }
    ],
    "cpu": {},
    "ipc": {},
    "models": [
        {"name": "net", "preset": "add", "params": {}},
        {"name": "chain", "layers": [{"type": "ADD", "output": [1]}]},
    ],
    "apps": [{"name": "camera", "model": "net", "workload": {"executions": 1}, "retry": {}}],
}
WHERE: dict[type, tuple[Any, ...]] = {
    Scenario: (),
    DeviceSpec: ("devices", 0),
    PerfSpec: ("devices", 0, "performance", "float32"),
    scenario_module.DeviceCostSpec: ("devices", 0, "cost"),
    FaultSpec: ("devices", 0, "faults", 0),
    scenario_module.CpuSpec: ("cpu",),
    scenario_module.IpcSpec: ("ipc",),
    ModelSpec: ("models", 0),
    LayerSpec: ("models", 1, "layers", 0),
    AppSpec: ("apps", 0),
    scenario_module.WorkloadSpec: ("apps", 0, "workload"),
    scenario_module.RetrySpec: ("apps", 0, "retry"),
}


def _key_path(steps: tuple[Any, ...]) -> str:
    text = ""
    for step in steps:
        text += f"[{step}]" if isinstance(step, int) else (f".{step}" if text else step)
    return text


@pytest.mark.parametrize(("cls", "attr", "bound", "value"), CASES)
def test_the_loader_states_the_same_range(cls: type, attr: str, bound: Bound, value: float):
    """The YAML loader refuses the value with the range the field declares, at its key path."""
    document = yaml.safe_load(yaml.safe_dump(BASE))
    mapping = document
    for step in WHERE[cls]:
        mapping = mapping[step]
    key = attr.rstrip("_")
    number = int(value) if is_integer_field(cls, attr) and float(value).is_integer() else value
    shaped = _as_field(cls, attr, number)
    steps: tuple[Any, ...] = (*WHERE[cls], key)
    if (cls, attr) == (ModelSpec, "params"):
        mapping[key] = {"size": number}
        steps = (*steps, "size")
    elif isinstance(shaped, tuple):
        mapping[key] = list(shaped)
        steps = (*steps, 0)
    else:
        mapping[key] = number
    with pytest.raises(ScenarioError) as caught:
        load_scenario_text(yaml.safe_dump(document), "s.yaml")
    integer = is_integer_field(cls, attr)
    wanted = f": {_key_path(steps)}: expected {bound.expected(integer=integer)}, got "
    assert any(wanted in str(problem) for problem in caught.value.problems), str(caught.value)


# -- rules that relate the fields of one spec, or a scenario's names -------------------

NPU = DeviceSpec(name="npu")
NET = ModelSpec(name="net", preset="add")
CAMERA = AppSpec(name="camera", uid=10000, model="net", workload=WorkloadSpec(executions=1))


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: FaultSpec(kind=FaultKind.CRASH),
            "FaultSpec.at_ms: expected a value (needed by a crash fault), got None",
        ),
        (
            lambda: FaultSpec(kind=FaultKind.CRASH, at_ms=1.0, probability=0.5),
            "FaultSpec.probability: expected its default with kind crash, got 0.5",
        ),
        (
            lambda: FaultSpec(kind=FaultKind.BUSY, at_ms=5.0, until_ms=5.0),
            "FaultSpec.until_ms: expected a time after at_ms (5), got 5.0",
        ),
        (
            lambda: WorkloadSpec(kind=WorkloadKind.PERIODIC, executions=3),
            "WorkloadSpec.period_ms: expected a value (needed by a periodic workload), got None",
        ),
        (
            lambda: WorkloadSpec(kind=WorkloadKind.TRACE, arrivals_ms=(2.0, 1.0)),
            "WorkloadSpec.arrivals_ms: expected non-decreasing times, got (2.0, 1.0)",
        ),
        (
            lambda: ModelSpec(name="net"),
            "ModelSpec.preset: expected exactly one of preset or layers, got 'neither'",
        ),
        (
            lambda: LayerSpec(type=OperationType.CONV_2D, output=(1, 1, 1, 1)),
            "LayerSpec.filter: expected a shape with type CONV_2D, got None",
        ),
        (
            lambda: DeviceSpec(name="npu", cache_files=(1,)),
            "DeviceSpec.cache_files: expected two counts [model files, data files], got (1,)",
        ),
        (
            lambda: AppSpec(name="a", uid=1, model="net", execution_timeout_ms=5.0),
            "AppSpec.execution_timeout_ms: expected None unless 'devices' lists exactly one",
        ),
        (
            lambda: Scenario(name="s", models=(NET,), apps=(attrs.evolve(CAMERA, model="nope"),)),
            "AppSpec.model: expected the name of a model (net), got 'nope'",
        ),
        (
            lambda: Scenario(name="s", devices=(NPU, NPU)),
            "Scenario.devices: expected each name once, got 'npu'",
        ),
        (
            lambda: Scenario(
                name="s", models=(NET,), apps=(attrs.evolve(CAMERA, devices=("gpu",)),)
            ),
            "AppSpec.devices: expected names of devices (nnapi-reference), got 'gpu'",
        ),
        (
            lambda: Scenario(
                name="s", models=(NET,), apps=(attrs.evolve(CAMERA, workload=WorkloadSpec()),)
            ),
            "WorkloadSpec.executions: expected a count or a scenario duration_ms",
        ),
    ],
)
def test_specs_that_break_a_rule_of_the_format_cannot_be_built(build: Any, message: str):
    """A spec built in code that breaks a rule the loader enforces raises SpecValueError
    (instead of a KeyError or an assertion deep inside the run)."""
    with pytest.raises(SpecValueError) as caught:
        build()
    assert str(caught.value).startswith(message)


def test_a_scenario_built_in_code_that_follows_the_rules_runs():
    """The rules refuse nothing a valid scenario needs: a small scenario built in code runs."""
    report = nnemu.run(Scenario(name="s", devices=(NPU,), models=(NET,), apps=(CAMERA,)))
    assert report.data["apps"]["camera"]["completed"] == 1
