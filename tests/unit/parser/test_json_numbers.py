"""``nnemu parse --json`` gives times as whole ns in ms, not the artefacts of float differences."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nnemu.parser import format_json, parse_file

OMR1 = Path(__file__).resolve().parents[3] / "tests" / "data" / "omr1.html"


def _times(run: dict[str, object]) -> list[tuple[str, float]]:
    """(where, value) of every time in a run's JSON: its tables and its non-percent inputs."""
    found = []
    for name in ("times", "self_times"):
        table = run[name]
        assert isinstance(table, dict)
        for phase, row in table.items():
            found += [(f"{name}.{phase}.{layer}", v) for layer, v in row.items() if v is not None]
    inputs = run["template_inputs"]
    assert isinstance(inputs, dict)
    found += [
        (f"inputs.{k}", v) for k, v in inputs.items() if not k.endswith("p") and v is not None
    ]
    return found


@pytest.mark.parametrize("total_times", [False, True])
def test_json_times_of_a_real_trace_are_whole_ns(total_times: bool):
    """Every self and total time of omr1's JSON is a number of ns divided by 10**6 once (1.432, not 1.4319999999999027)."""
    runs = json.loads(format_json(parse_file(OMR1), total_times=total_times))
    values = [item for run in runs for item in _times(run)]
    assert len(values) > 500
    for where, value in values:
        assert value == round(value * 1_000_000) / 1_000_000, where
    self_li = [v for run in runs for w, v in _times(run) if w == "self_times.PC.LI"]
    assert 1.432 in self_li


def test_json_percentages_come_from_the_whole_ns_times():
    """A run's percent-of-execution inputs are its exact PE times over the exact total PE time."""
    (run, *_) = json.loads(format_json(parse_file(OMR1)))
    inputs = run["template_inputs"]
    assert inputs["LA_PEp"] == inputs["LA_PE"] * 100.0 / inputs["LT_PE"]
