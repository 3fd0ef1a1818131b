"""Shared bits of the replay tests: recording an nnemu trace, checking a trace is balanced."""

from __future__ import annotations

from pathlib import Path

from nnemu import run
from nnemu.parser import parse_file
from nnemu.replay import TracePlan
from nnemu.report import Report
from nnemu.scenario import Scenario, load_scenario
from nnemu.tracer import open_trace_writer

REPO = Path(__file__).resolve().parents[3]
OMR1 = REPO / "tests/data/omr1.html"
QUICKSTART = REPO / "scenarios/quickstart.yaml"

Shipped = tuple[Scenario, Path, TracePlan]
"""A shipped scenario, its recorded JSON trace and ``extract_plan`` of that trace (the
``shipped_json`` fixture's)."""

_UNBALANCED = ("still open", "no open section", "no closing </script>")


def record(scenario: Scenario | Path, path: Path) -> Report:
    """Run ``scenario`` (a value or a YAML file) writing its trace to ``path``."""
    if isinstance(scenario, Path):
        scenario = load_scenario(scenario)
    return run(scenario, sinks=[open_trace_writer(path)])


def assert_balanced(path: Path) -> None:
    """The trace at ``path`` parses and every section it opens is closed."""
    result = parse_file(path)
    problems = [d.message for d in result.diagnostics if any(t in d.message for t in _UNBALANCED)]
    assert problems == []
    assert result.runs


def la_pe_begins(path: Path) -> list[int]:
    """Timestamps (µs) of the ``[NN_LA_PE]`` begins of an ftrace/systrace file."""
    stamps = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if "|[NN_LA_PE]" in line and "tracing_mark_write: B|" in line:
            seconds, fraction = line.split(": tracing_mark_write")[0].split()[-1].split(".")
            stamps.append(int(seconds) * 1_000_000 + int(fraction))
    return stamps
