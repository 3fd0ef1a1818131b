"""Bad values that used to crash or hang a run are refused at load, with their position."""

from __future__ import annotations

import pytest

from nnemu.errors import ScenarioError
from nnemu.scenario import load_scenario_text

BASE = """\
name: s
devices:
  - name: npu
    cost: {prepare_ms: 20, launch_us: 40, jitter: 0.05}
models:
  - name: net
    preset: mobilenet_v1
apps:
  - name: camera
    model: net
    threads: 1
    workload: {kind: periodic, period_ms: 33, executions: 3}
"""


def problems(text: str) -> list[str]:
    """The problem lines of loading ``text`` as s.yaml (empty when it loads)."""
    try:
        load_scenario_text(text, "s.yaml")
    except ScenarioError as err:
        return [str(p) for p in err.problems]
    return []


def test_base_loads():
    """The document the other tests mutate is valid."""
    assert problems(BASE) == []


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            "name: s\n",
            "name: s\nduration_ms: 1e308\n",
            "s.yaml:2:14: duration_ms: expected a number > 0 and <= 3600000, got 1e308",
        ),
        (
            "executions: 3}",
            "executions: 3, start_ms: 123456789012345678901234567890}",
            "s.yaml:12:72: apps[0].workload.start_ms: expected a number in [0, 3600000], "
            "got 123456789012345678901234567890",
        ),
        (
            "jitter: 0.05",
            "jitter: 1e308",
            "s.yaml:4:51: devices[0].cost.jitter: expected a number in [0, 5], got 1e308",
        ),
        (
            "launch_us: 40",
            "launch_us: 1e308",
            "s.yaml:4:39: devices[0].cost.launch_us: expected a number in [0, 3600000000], "
            "got 1e308",
        ),
        (
            "threads: 1",
            "threads: 1000000",
            "s.yaml:11:14: apps[0].threads: expected an integer in [1, 1024], got 1000000",
        ),
        (
            "period_ms: 33",
            "period_ms: 1e-300",
            "s.yaml:12:43: apps[0].workload.period_ms: expected a number in [0.001, 3600000], "
            "got 1e-300",
        ),
    ],
)
def test_values_a_run_cannot_reach_are_refused_with_the_limit(old: str, new: str, expected: str):
    """A number beyond its documented range is a problem that states the range."""
    assert problems(BASE.replace(old, new)) == [expected]


def test_preset_parameter_the_hal_refuses_is_a_problem_at_params():
    """params: {input_size: 0} is reported at the model's params, not raised from the run."""
    text = BASE.replace("preset: mobilenet_v1", "preset: mobilenet_v1\n    params: {input_size: 0}")
    assert problems(text) == [
        "s.yaml:8:13: models[0].params: the model cannot be built: "
        "params.input_size: expected a positive integer, got 0"
    ]


def test_chain_with_a_short_filter_is_a_problem_at_layers():
    """A FULLY_CONNECTED filter of rank 1 (an IndexError in the builder) is a problem."""
    text = BASE.replace(
        "preset: mobilenet_v1",
        "layers: [{type: FULLY_CONNECTED, output: [1, 10], filter: [10]}]",
    )
    (line,) = problems(text)
    assert line.startswith("s.yaml:7:13: models[0].layers: the model cannot be built")


@pytest.mark.parametrize(
    ("scalar", "expected"),
    [
        ("!!bool maybe", "expected a readable value, got maybe (not a valid bool)"),
        ("!!timestamp x", "expected a readable value, got x (not a valid timestamp)"),
    ],
)
def test_tagged_scalars_that_do_not_construct_are_problems(scalar: str, expected: str):
    """PyYAML's KeyError/AttributeError on a bad tagged scalar becomes a positioned problem."""
    assert problems(BASE.replace("threads: 1", f"threads: {scalar}")) == [
        f"s.yaml:11:14: apps[0].threads: {expected}"
    ]


def test_lone_surrogate_in_a_name_is_a_problem():
    """A double-quoted \\ud800 cannot be written to a trace or a terminal: refused at load."""
    found = problems(BASE.replace("- name: npu", '- name: "n\\ud800"'))
    assert found[0] == (
        "s.yaml:3:11: devices[0].name: expected text without lone surrogates (U+D800), "
        "got 'n\\ud800'"
    )


def test_a_huge_value_is_quoted_cut():
    """A long scalar is quoted in 60 characters and an ellipsis, not echoed whole."""
    (line,) = problems(BASE.replace("threads: 1", "threads: '" + "x" * 1_000_000 + "'"))
    assert (
        line
        == f"s.yaml:11:14: apps[0].threads: expected an integer in [1, 1024], got '{'x' * 60}…'"
    )


def merge_bomb(levels: int) -> str:
    """Each level merges the one below and aliases it 12 times: 12**levels nodes expanded."""
    out = ["x0: &x0 {a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7, h: 8, i: 9, j: 10, k: 11, l: 12}"]
    for n in range(1, levels):
        refs = ", ".join(f"k{j}: *x{n - 1}" for j in range(12))
        out.append(f"x{n}: &x{n} {{<<: *x{n - 1}, {refs}}}")
    return "\n".join([*out, f"name: [*x{levels - 1}]"]) + "\n"


@pytest.mark.parametrize("levels", [4, 8, 30])
def test_alias_bomb_is_refused_at_the_alias(levels: int):
    """A merge/alias bomb is refused where its expansion passes the limit, whatever its depth."""
    (line,) = problems(merge_bomb(levels))
    assert line.startswith("s.yaml:4:")
    assert "expected aliases that grow the document at most 10-fold" in line


def test_aliases_within_the_limit_still_load():
    """Ordinary anchors and merge keys (a shared device cost) are accepted."""
    text = (
        BASE.replace(
            "cost: {prepare_ms: 20, launch_us: 40, jitter: 0.05}",
            "cost: &cost {prepare_ms: 20, launch_us: 40, jitter: 0.05}",
        )
        .replace("  - name: npu\n", "  - name: npu\n")
        .replace("models:", "  - name: gpu\n    cost: {<<: *cost, launch_us: 10}\nmodels:")
    )
    assert problems(text) == []


def test_self_referencing_alias_is_a_problem_not_a_crash():
    """An alias inside its own anchor (a cycle) gives problems, not a RecursionError."""
    assert problems("name: &n [*n]\n")


def test_arrivals_beyond_the_hour_without_a_duration_are_refused():
    """1,000,000 bursts of 8 every 40 ms would run for 83 minutes of virtual time: refused."""
    text = BASE.replace(
        "{kind: periodic, period_ms: 33, executions: 3}",
        "{kind: burst, burst_size: 8, burst_interval_ms: 40, executions: 1000000}",
    )
    assert problems(text) == [
        "s.yaml:12:79: apps[0].workload.executions: expected arrivals within 3600000 ms "
        "(one hour of virtual time; or a scenario 'duration_ms'), got 1000000 executions "
        "arriving until 4999960 ms"
    ]


def test_the_same_workload_with_a_duration_loads():
    """With a duration_ms the run is cut at it, so the arrival span is not limited."""
    text = BASE.replace("name: s\n", "name: s\nduration_ms: 1000\n").replace(
        "{kind: periodic, period_ms: 33, executions: 3}",
        "{kind: burst, burst_size: 8, burst_interval_ms: 40, executions: 1000000}",
    )
    assert problems(text) == []


@pytest.mark.parametrize("escape", ["\\U00110000", "\\UFFFFFFFF"])
def test_escape_beyond_unicode_is_a_problem(escape: str):
    """PyYAML's ValueError/OverflowError on a too-large \\U escape becomes a problem."""
    (line,) = problems(f'name: "{escape}"\n')
    assert line.startswith("s.yaml:1:1: invalid YAML: a character escape beyond U+10FFFF")


def test_threads_of_the_whole_scenario_are_bounded():
    """400 devices of 1,024 worker and binder threads (a 32 KB file that took 1.8 GB) are
    refused at load with the count, not run out of memory."""
    devices = "".join(
        f"  - {{name: d{i}, worker_threads: 1024, binder_threads: 1024}}\n" for i in range(400)
    )
    text = BASE.replace(
        "devices:\n  - name: npu\n    cost: {prepare_ms: 20, launch_us: 40, jitter: 0.05}\n",
        "devices:\n" + devices,
    )
    assert problems(text) == [
        "s.yaml:3:3: devices: expected at most 32768 threads in all (each device's "
        "worker_threads and binder threads, each app's threads and binder threads, every one "
        "emulated), got 819205"
    ]


def test_threads_bound_holds_in_code():
    """A scenario built in code past the thread bound is unbuildable too."""
    from nnemu.errors import SpecValueError
    from nnemu.scenario import DeviceSpec, Scenario

    devices = tuple(
        DeviceSpec(name=f"d{i}", worker_threads=1024, binder_threads=1024) for i in range(17)
    )
    with pytest.raises(SpecValueError, match="at most 32768 threads in all"):
        Scenario(name="s", devices=devices)
