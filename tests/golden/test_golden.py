"""Golden diff tests for the tracer, as Perfetto does them: scenario -> ftrace text and stats.

Each ``tests/golden/<case>/scenario.yaml`` is run; its ftrace text must equal
``expected.trace.txt`` and the ``nnemu parse`` text output of that trace must
equal ``expected.stats.txt``.  A mismatch prints a unified diff;
``pytest --update-goldens`` rewrites the expected files.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from nnemu import run
from nnemu.parser import run_parse_command
from nnemu.scenario import load_scenario
from nnemu.tracer import open_trace_writer
from tests.goldens import check_golden

HERE = Path(__file__).resolve().parent
CASES = sorted(p.parent for p in HERE.glob("*/scenario.yaml"))


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_golden(case: Path, tmp_path: Path, update_goldens: bool):
    """The scenario's trace and its parsed statistics match the goldens byte for byte."""
    trace = tmp_path / "trace.txt"
    run(load_scenario(case / "scenario.yaml"), sinks=[open_trace_writer(trace)])
    check_golden(trace.read_text(encoding="utf-8"), case / "expected.trace.txt", update_goldens)
    out, err = io.StringIO(), io.StringIO()
    code = run_parse_command(
        str(trace),
        as_json=False,
        per_execution=False,
        total_times=False,
        print_detail=False,
        stdout=out,
        stderr=err,
    )
    assert code == 0
    assert err.getvalue() == ""
    check_golden(out.getvalue(), case / "expected.stats.txt", update_goldens)
