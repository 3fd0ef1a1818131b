"""Mutated scenarios and traces through the CLI end in a message and exit 0/1/2, never a traceback.

Each example calls ``nnemu.cli.main`` in-process with captured streams: an exception
escaping ``main`` fails the test, as does an exit code outside {0, 1, 2} or a
``Traceback`` on stderr.  Scenarios that load are run with ``duration_ms`` capped at
50 ms (written back with ``dump_scenario``) so each example stays short; the
standalone campaign ``bench/fuzz_cli.py`` runs the real commands without the cap.
"""

from __future__ import annotations

import io
import pathlib
import re

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nnemu.cli import main
from nnemu.errors import ScenarioError
from nnemu.scenario import dump_scenario, load_scenario

ROOT = pathlib.Path(__file__).parents[2]
SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))
FUZZ = settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
NUMBER = re.compile(r"(?<=: )-?[0-9][0-9_.eE+-]*(?=\s*(?:[,}\]]|$))", re.MULTILINE)
"""A number written as a mapping value, in block or flow style."""
TIME = re.compile(r"\d+\.\d+(?=: tracing_mark_write)|(?<=\"ts\": )[^,}]+|(?<=\"dur\": )[^,}]+")
"""The timestamp of an ftrace row, or the ts/dur of a JSON event."""

numbers = st.one_of(
    st.sampled_from(
        ["0", "-1", "1e308", "1e300", "-1e308", "123456789012345678901234567890", "1e-320", ".nan"]
    ),
    st.sampled_from(["1000000", "10000000", "100000000", "0.0000001", "1e30"]),
    st.integers(-(10**40), 10**40).map(str),
    st.floats(allow_nan=False).map(repr),
)
odd_scalars = st.sampled_from(
    [
        "!!bool maybe",
        "!!timestamp 2001-13-45",
        "!!timestamp x",
        "!!binary AAAA",
        "!!python/object:os.system ls",
        '"\\ud800"',
        "~",
        "[]",
        "{}",
        "*nowhere",
        "'" + "x" * 5000 + "'",
    ]
)


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``nnemu <argv>`` run in-process."""
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def assert_clean(code: int, err: str) -> None:
    """The command ended as the CLI promises: exit 0/1/2 and no traceback."""
    assert code in (0, 1, 2), err
    assert "Traceback" not in err, err


@st.composite
def mutated_scenarios(draw: st.DrawFn) -> str:
    """A shipped scenario with one to three lines changed, deleted or duplicated."""
    lines = draw(st.sampled_from(SCENARIOS)).read_text(encoding="utf-8").splitlines()
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        action = draw(st.sampled_from(["number", "number", "scalar", "delete", "duplicate"]))
        text = "\n".join(lines)
        found = list(NUMBER.finditer(text))
        if action == "number" and found:
            m = draw(st.sampled_from(found))
            lines = (text[: m.start()] + draw(numbers) + text[m.end() :]).splitlines()
        elif action == "scalar" and ": " in lines[i]:
            lines[i] = lines[i].split(": ", 1)[0] + ": " + draw(odd_scalars)
        elif action == "delete" and len(lines) > 1:
            del lines[i]
        else:
            lines.insert(i, lines[i])
    return "\n".join(lines) + "\n"


@FUZZ
@given(text=mutated_scenarios())
def test_mutated_scenario_loads_or_is_refused_and_runs(tmp_path: pathlib.Path, text: str) -> None:
    """A mutated scenario is refused with file:line:col problems, or loads and runs cleanly."""
    path = tmp_path / "mutant.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        scenario = load_scenario(path)
    except ScenarioError as err:
        problems = err.problems
    else:
        problems = []
    if problems:
        assert all(p.source == str(path) and p.line >= 1 for p in problems)
        code, _, stderr = run_cli(["run", str(path)])
        assert code == 2
        assert stderr.startswith(f"{path}:")
        return
    capped = attrs.evolve(scenario, duration_ms=min(scenario.duration_ms or 50.0, 50.0))
    path.write_text(dump_scenario(capped), encoding="utf-8")
    code, _, stderr = run_cli(["run", str(path), "--trace", str(tmp_path / "t.json")])
    assert_clean(code, stderr)


@pytest.fixture(scope="module")
def seed_traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pathlib.Path]:
    """nnemu's own systrace and JSON traces of the quickstart scenario."""
    where = tmp_path_factory.mktemp("seeds")
    traces = {}
    for suffix in (".html", ".json"):
        target = where / f"quickstart{suffix}"
        code, _, err = run_cli(
            ["run", str(ROOT / "scenarios" / "quickstart.yaml"), "--trace", str(target)]
        )
        assert code == 0, err
        traces[suffix] = target
    return traces


row_numbers = st.sampled_from(
    [
        "1e30",
        "-5",
        "NaN",
        "Infinity",
        "1.5000000000",
        "0.1234567890123456789",
        "nan",
        "inf",
        "1e308",
        "99999999999999999999.999999",
        "1" * 30,
        "1" * 5000,
    ]
) | st.from_regex(r"[0-9]{1,25}(\.[0-9]{0,25})?", fullmatch=True)


fractions = st.floats(0, 1, exclude_max=True)
row_edits = st.lists(
    st.tuples(
        fractions,
        st.sampled_from(["time", "time", "number", "delete", "duplicate", "cut", "bar"]),
        row_numbers,
        fractions,
    ),
    min_size=1,
    max_size=4,
)


def mutate_rows(text: str, edits: list[tuple[float, str, str, float]]) -> str:
    """``text`` with ``edits`` applied to its mark rows (or JSON events).

    Each edit is (which row, what to do, a number to write, where in the row), the
    positions as fractions so that the edits are drawn before the text is looked at.
    """
    lines = text.splitlines(keepends=True)
    marks = [i for i, line in enumerate(lines) if "tracing_mark_write" in line or '"ph"' in line]
    for row, action, number, where in edits:
        i = marks[int(row * len(marks))]
        line = lines[i]
        found = list(re.finditer(r"\d+(?:\.\d+)?", line))
        times = list(TIME.finditer(line))
        if action == "time" and times:
            m = times[int(where * len(times))]
            line = line[: m.start()] + number + line[m.end() :]
        elif action == "number" and found:
            m = found[int(where * len(found))]
            line = line[: m.start()] + number + line[m.end() :]
        elif action == "delete":
            line = ""
        elif action == "duplicate":
            line += line
        elif action == "cut":
            line = line[: int(where * len(line))] + "\n"
        elif action == "bar":
            line = line.replace("|", ["||", "", "|\x00"][int(where * 3)], 1)
        lines[i] = line
    return "".join(lines)


@FUZZ
@given(edits=row_edits)
@pytest.mark.parametrize("suffix", [".html", ".json"])
def test_mutated_trace_through_query_and_replay(
    tmp_path: pathlib.Path,
    seed_traces: dict[str, pathlib.Path],
    suffix: str,
    edits: list[tuple[float, str, str, float]],
) -> None:
    """A trace with mutated rows gives query and replay -n a result or a message, no traceback."""
    path = tmp_path / f"mutant{suffix}"
    path.write_text(
        mutate_rows(seed_traces[suffix].read_text(encoding="utf-8"), edits), encoding="utf-8"
    )
    for argv in (
        ["query", str(path), "SELECT count(*), max(dur), min(ts), max(ts) FROM slice"],
        ["query", str(path), "SELECT * FROM args LIMIT 5"],
        ["replay", "-n", str(path)],
    ):
        code, _, stderr = run_cli(argv)
        assert_clean(code, stderr)


pytestmark = pytest.mark.slow
"""Mutated traces and scenarios through every command.  In the slow tier (pytest -m slow; CI runs it)."""
