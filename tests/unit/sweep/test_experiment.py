"""The experiment file: its expansion into variants and every problem found before a run."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from nnemu.errors import ScenarioError
from nnemu.sweep import load_experiment, variant_key
from tests.commands import run_cli
from tests.unit.sweep.sweeps import SCENARIO, SMALL, write


def _problems(tmp_path: Path, text: str) -> tuple[Path, list[str]]:
    """Load ``text`` as an experiment that must be refused: its path and its problems' lines."""
    path = write(tmp_path, text)
    with pytest.raises(ScenarioError) as caught:
        load_experiment(path)
    return path, [str(problem) for problem in caught.value.problems]


def test_points_cross_the_varied_keys_in_file_order(tmp_path: Path) -> None:
    """The points are the cross product of the varied values, a range's steps evenly spaced."""
    experiment = load_experiment(write(tmp_path))
    assert experiment.points() == [
        {"devices.npu.scheduler": "fifo", "apps.indexer.workload.rate_hz": 10.0},
        {"devices.npu.scheduler": "fifo", "apps.indexer.workload.rate_hz": 60.0},
        {"devices.npu.scheduler": "global_priority", "apps.indexer.workload.rate_hz": 10.0},
        {"devices.npu.scheduler": "global_priority", "apps.indexer.workload.rate_hz": 60.0},
    ]


def test_replications_take_consecutive_seeds_from_the_scenarios(tmp_path: Path) -> None:
    """Without a seed key, replication r of every point runs with the scenario's seed + r."""
    variants = load_experiment(write(tmp_path)).variants()
    assert len(variants) == 12
    assert [v.seed for v in variants[:3]] == [11, 12, 13]
    assert [v.replication for v in variants[:4]] == [0, 1, 2, 0]


def test_variant_keys_are_stable_and_distinct(tmp_path: Path) -> None:
    """Each variant's key is 16 hex characters, the same on every load, different per variant."""
    first = [v.key for v in load_experiment(write(tmp_path)).variants()]
    again = [v.key for v in load_experiment(write(tmp_path, name="copy.yaml")).variants()]
    assert first == again
    assert len(set(first)) == len(first)
    assert all(len(key) == 16 and int(key, 16) >= 0 for key in first)
    assert variant_key("x", ["a=1"], 1) != variant_key("x", ["a=1"], 2)


def test_the_scenario_path_is_relative_to_the_experiment_file(tmp_path: Path) -> None:
    """A relative ``scenario`` is found next to the experiment file, wherever nnemu runs."""
    (tmp_path / "base.yaml").write_text(SCENARIO.read_text())
    text = SMALL.replace(str(SCENARIO), "base.yaml")
    experiment = load_experiment(write(tmp_path / "", text))
    assert experiment.scenario_path == str(tmp_path / "base.yaml")


BAD = f"""\
scenario: {SCENARIO}
vary:
  devices.npu.scheduler: [fifo, bogus]
  apps.nobody.priority: [high]
  apps.indexer.workload.rate_hz: {{range: [5, 50], steps: 2}}
replications: 0
metrics: [apps.camera.latency_ms.p98, devices.gpu.busy_fraction, apps.camera.completed]
colour: red
"""


def test_every_problem_is_reported_at_its_position(tmp_path: Path) -> None:
    """Unknown keys, bad values, unknown varied keys and metrics each get file:line:col."""
    path, lines = _problems(tmp_path, BAD)
    expected = [
        f"{path}:3:33: vary.devices.npu.scheduler: 'bogus': devices.npu.scheduler: expected one of",
        f"{path}:4:26: vary.apps.nobody.priority: 'high': apps.nobody: expected the name of an app",
        f"{path}:5:34: vary.apps.indexer.workload.rate_hz: 5.0, 50.0: apps.indexer.workload.rate_hz: "
        "expected only with kind poisson",
        f"{path}:6:15: replications: expected an integer in [1, 100000], got 0",
        f"{path}:7:11: metrics: unknown metric 'apps.camera.latency_ms.p98': expected one of max,",
        f"{path}:7:39: metrics: unknown metric 'devices.gpu.busy_fraction'",
        f"{path}:8:1: colour: unknown key",
    ]
    for prefix in expected:
        assert any(line.startswith(prefix) for line in lines), (prefix, lines)
    assert not any("apps.camera.completed" in line for line in lines)


def test_a_bad_experiment_exits_2_before_anything_runs(tmp_path: Path) -> None:
    """The command prints the problems, exits 2 and creates no results directory."""
    code, out, err = run_cli("sweep", str(write(tmp_path, BAD)), "--out", str(tmp_path / "out"))
    assert code == 2
    assert "colour: unknown key" in err
    assert out == ""
    assert not (tmp_path / "out").exists()


def test_a_point_the_scenario_refuses_is_reported_at_vary(tmp_path: Path) -> None:
    """Values valid alone but not together are reported with the point, at the vary key."""
    text = f"""\
scenario: {SCENARIO}
vary:
  apps.indexer.workload: [{{kind: closed_loop}}, {{kind: poisson, rate_hz: 5}}]
  apps.indexer.workload.think_ms: [1]
metrics: [apps.camera.completed]
"""
    path, problems = _problems(tmp_path, text)
    assert problems == [
        f"{path}:3:3: vary: the point "
        '{"apps.indexer.workload": {"kind": "poisson", "rate_hz": 5}, '
        '"apps.indexer.workload.think_ms": 1}: '
        "apps.indexer.workload.think_ms: expected only with kind closed_loop, got kind poisson"
    ]


def test_a_missing_scenario_file_is_reported_at_its_key(tmp_path: Path) -> None:
    """A scenario path that does not exist is a problem of the experiment's scenario line."""
    path = write(tmp_path, "scenario: nowhere.yaml\nmetrics: [apps.a.completed]\n")
    with pytest.raises(ScenarioError, match=r"exp\.yaml:1:11: scenario: cannot read the scenario"):
        load_experiment(path)


def test_yaml_that_is_not_an_experiment_is_refused(tmp_path: Path) -> None:
    """A list, an empty file or broken YAML is one problem with its position, not a traceback."""
    for text, message in (
        ("- a\n", "expected a mapping"),
        ("", "expected an experiment, got an empty file"),
        ("scenario: [\n", "invalid YAML"),
    ):
        code, _, err = run_cli("sweep", str(write(tmp_path, text)))
        assert code == 2
        assert message in err
        assert err.startswith(f"{tmp_path / 'exp.yaml'}:")


@pytest.mark.parametrize(
    "path",
    sorted((Path(__file__).resolve().parents[3] / "examples" / "experiments").glob("*.yaml")),
    ids=lambda path: path.stem,
)
def test_the_shipped_experiments_load(path: Path) -> None:
    """Every experiment under examples/experiments passes the checks (docs/experiments.md runs them)."""
    experiment = load_experiment(path)
    assert experiment.variants()


def test_every_bad_set_key_is_reported_together(tmp_path: Path) -> None:
    """An unknown app in one ``set:`` key does not hide a misspelt key in another."""
    text = f"""\
scenario: {SCENARIO}
set:
  apps.nobody.priority: high
  apps.camera.priorty: high
metrics: [apps.camera.completed]
"""
    path, problems = _problems(tmp_path, text)
    assert problems == [
        f"{path}:3:25: set.apps.nobody.priority: apps.nobody: expected the name of an app "
        "(camera, indexer), got 'nobody'",
        f"{path}:4:24: set.apps.camera.priorty: apps.camera.priorty: unknown key 'priorty'; "
        "did you mean 'priority'?",
    ]


def test_a_cross_product_past_the_limit_is_refused_before_it_is_built(tmp_path: Path) -> None:
    """4 keys x 1,000 steps (10**12 variants) is refused from the count (it built the product:
    MemoryError after 36 s)."""
    keys = ("duration_ms", "apps.camera.workload.rate_hz", "devices.npu.power.idle", "seed")
    vary = "".join(f"  {key}: {{range: [1, 2], steps: 1000}}\n" for key in keys)
    path = write(tmp_path, f"scenario: {SCENARIO}\nvary:\n{vary}metrics: [virtual_ms]\n")
    with pytest.raises(ScenarioError) as caught:
        load_experiment(path)
    assert [str(problem) for problem in caught.value.problems] == [
        f"{path}:1:1: expected at most 10,000,000 variants, got 1,000,000,000,000"
    ]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_checking_the_points_shows_progress_on_a_terminal(tmp_path: Path) -> None:
    """Each point is checked against the scenario (minutes for 20,000 points): a terminal
    sees a bar of the points checked, cleared when done."""
    terminal = _Terminal()
    experiment = load_experiment(write(tmp_path), progress=terminal)
    assert "checking the points" in terminal.getvalue()
    assert f"{experiment.point_count()}/{experiment.point_count()}" in terminal.getvalue()
    assert terminal.getvalue().endswith("\r")


def test_a_value_listed_twice_is_refused_at_its_place(tmp_path: Path) -> None:
    """``vary: {duration_ms: [100, 200, 100.0]}`` would run and list the point twice."""
    path = write(
        tmp_path,
        f"scenario: {SCENARIO}\nvary:\n  duration_ms: [100, 200, 100.0]\n"
        "  seed: {range: [3, 3], steps: 2}\nmetrics: [virtual_ms]\n",
    )
    with pytest.raises(ScenarioError) as caught:
        load_experiment(path)
    assert [str(problem) for problem in caught.value.problems] == [
        f"{path}:3:27: vary.duration_ms: 100.0 is listed already, at 3:17: each value once",
        f"{path}:4:17: vary.seed.range: expected 2 different values, got some twice: "
        "low and high are the same (one value: steps: 1)",
    ]
