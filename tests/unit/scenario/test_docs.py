"""docs/scenario-format.md stays accurate: its examples are checked against the loader."""

from __future__ import annotations

import pathlib

import pytest

from nnemu.errors import ScenarioError
from nnemu.hal import OperationType
from nnemu.scenario import (
    APP_COUNTERS,
    DEVICE_METRICS,
    LATENCY_STATS,
    RESULT_CODE_NAMES,
    dump_scenario,
    load_scenario_text,
)

DOC = pathlib.Path(__file__).parents[3] / "docs" / "scenario-format.md"


def blocks(kind: str) -> list[str]:
    """The fenced code blocks of the document in language ``kind`` ('' for unlabelled)."""
    found: list[str] = []
    language: str | None = None
    lines: list[str] = []
    for line in DOC.read_text(encoding="utf-8").splitlines(keepends=True):
        if language is None and line.startswith("```"):
            language, lines = line[3:].strip(), []
        elif language is not None and line.rstrip("\n") == "```":
            if language == kind:
                found.append("".join(lines))
            language = None
        elif language is not None:
            lines.append(line)
    return found


def test_complete_example_loads_and_round_trips():
    """The complete example is a valid scenario that survives dump and load."""
    s = load_scenario_text(blocks("yaml")[0])
    assert load_scenario_text(dump_scenario(s)) == s
    assert [app.uid for app in s.apps] == [10050, 10001, 10002, 10003]


def test_problem_example_gives_the_documented_output():
    """The bad example produces exactly the problem lines the document shows."""
    with pytest.raises(ScenarioError) as info:
        load_scenario_text(blocks("yaml")[1], "bad.yaml")
    assert str(info.value) + "\n" == blocks("")[1]


def test_every_operation_name_is_documented():
    """The list of operation names in the device table is complete."""
    text = DOC.read_text(encoding="utf-8")
    for op in OperationType:
        assert f"`{op.name}`" in text


def test_every_metric_is_documented():
    """Every metric name of the expectation grammar appears in the document."""
    text = DOC.read_text(encoding="utf-8")
    for name in (*APP_COUNTERS, *DEVICE_METRICS, *LATENCY_STATS, *RESULT_CODE_NAMES):
        assert f"`{name}`" in text
