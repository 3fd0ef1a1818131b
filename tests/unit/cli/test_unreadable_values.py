"""Values PyYAML cannot construct (``!!bool maybe``) and integers no float holds (10**400) in an
experiment file, a ``--set`` or a scenario are placed problems, exit 2, not tracebacks."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.commands import run_cli

ROOT = Path(__file__).resolve().parents[3]
QUICKSTART = ROOT / "scenarios" / "quickstart.yaml"
LSTM = ROOT / "scenarios" / "lstm_bursts.yaml"
HUGE = str(10**400)

TAGGED = [
    ("!!bool maybe", "maybe (not a valid bool)"),
    ("!!int 1x", "1x (invalid literal for int() with base 10: '1x')"),
    ("!!timestamp 2001-13-45", "2001-13-45 (month must be in 1..12)"),
]


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    path = tmp_path / "s.yaml"
    shutil.copy(QUICKSTART, path)
    return path


@pytest.mark.parametrize(("value", "why"), TAGGED)
def test_a_tagged_value_in_an_experiment_is_placed(
    scenario: Path, tmp_path: Path, value: str, why: str
) -> None:
    """``set: {duration_ms: !!bool maybe}`` is refused at its place (it raised KeyError)."""
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(
        f"scenario: s.yaml\nset:\n  duration_ms: {value}\nmetrics: [virtual_ms]\n",
        encoding="utf-8",
    )
    code, _, err = run_cli("sweep", str(experiment), "--out", str(tmp_path / "out"))
    assert code == 2
    assert err == f"{experiment}:3:16: expected a readable value, got {why}\n"


@pytest.mark.parametrize(("value", "why"), TAGGED)
def test_a_tagged_set_value_is_a_message(scenario: Path, value: str, why: str) -> None:
    """``--set duration_ms='!!bool maybe'`` says why the value cannot be read."""
    code, _, err = run_cli("run", str(scenario), "--set", f"duration_ms={value}")
    assert code == 2
    assert err == (
        f"--set duration_ms: expected a YAML value, got {value!r} ({why.split(' (', 1)[1]}\n"
    )


def test_a_range_bound_no_float_holds_is_placed(scenario: Path, tmp_path: Path) -> None:
    """``{range: [1, 10**400], steps: 3}`` is refused at the range (it raised OverflowError)."""
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(
        f"scenario: s.yaml\nvary:\n  duration_ms: {{range: [1, {HUGE}], steps: 3}}\n"
        "metrics: [virtual_ms]\n",
        encoding="utf-8",
    )
    code, _, err = run_cli("sweep", str(experiment), "--out", str(tmp_path / "out"))
    assert code == 2
    assert err.startswith(f"{experiment}:3:24: vary.duration_ms.range: expected [low, high], got")
    assert len(err.split(" got ", 1)[1]) < 70  # the number cut, not its 401 digits


def test_a_huge_integer_param_is_placed(tmp_path: Path) -> None:
    """A model's ``params`` value past 1.8e308 is out of range, not an OverflowError."""
    path = tmp_path / "l.yaml"
    path.write_text(LSTM.read_text().replace("units: 256", f"units: {HUGE}"), encoding="utf-8")
    code, _, err = run_cli("run", str(path))
    assert code == 2
    assert err.startswith(f"{path}:15:31: models[0].params.units: expected a number in")


def test_a_huge_integer_set_is_out_of_range(scenario: Path) -> None:
    """``--set duration_ms=10**400`` is out of duration_ms's range."""
    code, _, err = run_cli("run", str(scenario), "--set", f"duration_ms={HUGE}")
    assert code == 2
    assert err.startswith("--set duration_ms: expected a number > 0 and <= 3600000, got 1000")
