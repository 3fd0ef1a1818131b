"""Shared bits of the replay tests: recording an nnemu trace, checking a trace is balanced."""

from __future__ import annotations

import atexit
import copy
import shutil
import tempfile
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


_RECORDED: dict[tuple[Scenario, str], tuple[Path, Report]] = {}
"""The runs ``record`` made in this process, by scenario and trace format: a run is
deterministic, so a second test recording the same scenario gets a copy of the first's trace
(byte-identical) and report, not a run of its own."""
_RECORDINGS = Path(tempfile.mkdtemp(prefix="nnemu-replay-tests-"))
atexit.register(shutil.rmtree, _RECORDINGS, ignore_errors=True)


def record(scenario: Scenario | Path, path: Path) -> Report:
    """Run ``scenario`` (a value or a YAML file) writing its trace to ``path``."""
    if isinstance(scenario, Path):
        scenario = load_scenario(scenario)
    key = (scenario, "".join(path.suffixes))
    if key not in _RECORDED:
        kept = _RECORDINGS / f"{len(_RECORDED)}{key[1]}"
        _RECORDED[key] = kept, run(scenario, sinks=[open_trace_writer(kept)])
    kept, report = _RECORDED[key]
    shutil.copyfile(kept, path)
    return copy.deepcopy(report)


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
