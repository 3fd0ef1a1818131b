"""Malformed input never escapes as anything but a ScenarioError."""

from __future__ import annotations

import pathlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nnemu.errors import ScenarioError
from nnemu.scenario import Scenario, dump_scenario, load_scenario_text
from tests.unit.scenario.strategies import scenarios

FULL_TEXT = (pathlib.Path(__file__).parent / "data" / "full.yaml").read_text(encoding="utf-8")

# Fragments that tend to produce YAML structure (and type confusion) when spliced in.
_FRAGMENTS = st.sampled_from(
    [
        ":",
        "- ",
        "[",
        "]",
        "{",
        "}",
        ",",
        "\n",
        "  ",
        "\t",
        "&a ",
        "*a",
        "<<: *a",
        "!!int ",
        "!foo ",
        "'",
        '"',
        "#",
        "?",
        "|",
        ">",
        "null",
        "~",
        "true",
        "-1",
        "0",
        "1e3",
        ".inf",
        ".nan",
        "1.3",
        "name: x\n",
        "apps:",
        "devices:",
        "kind: burst",
        "expect: [x]",
        "\x85",
        "\ufeff",
        "%YAML 1.1\n",
        "---\n",
    ]
)
_MUTATION_TEXT = st.text(max_size=12) | _FRAGMENTS


def check(text: str) -> None:
    """Loading ``text`` gives a Scenario or a well-formed ScenarioError, nothing else."""
    error: ScenarioError | None = None
    try:
        result = load_scenario_text(text, "m.yaml")
    except ScenarioError as err:
        error = err
    if error is None:
        assert isinstance(result, Scenario)
        return
    assert error.problems
    assert str(error) == "\n".join(str(p) for p in error.problems)
    keys = [(p.line, p.column, p.key_path) for p in error.problems]
    assert keys == sorted(keys)
    lines = len(text.splitlines()) + 2  # YAML also breaks lines at \r, U+0085, U+2028
    for p in error.problems:
        assert p.source == "m.yaml"
        assert 1 <= p.line <= lines
        assert p.column >= 1


@settings(deadline=None, max_examples=300)
@given(st.text())
def test_random_text_never_raises_anything_else(text: str):
    """Arbitrary text loads or raises ScenarioError with sorted, positioned problems."""
    check(text)


@st.composite
def mutated(draw: st.DrawFn, base: str) -> str:
    """``base`` with a few random deletions, insertions and replacements."""
    text = base
    for _ in range(draw(st.integers(1, 4))):
        start = draw(st.integers(0, len(text)))
        end = draw(st.integers(start, min(len(text), start + 20)))
        text = text[:start] + draw(_MUTATION_TEXT | st.just("")) + text[end:]
    return text


@pytest.mark.slow
@settings(deadline=None, max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(mutated(FULL_TEXT))
def test_mutated_scenario_never_raises_anything_else(text: str):
    """Random edits of a valid scenario load or raise ScenarioError, never anything else."""
    check(text)


@pytest.mark.slow
@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_mutated_generated_scenario_never_raises_anything_else(data: st.DataObject):
    """Random edits of the dump of a generated scenario load or raise ScenarioError."""
    base = dump_scenario(data.draw(scenarios()))
    check(data.draw(mutated(base)))
