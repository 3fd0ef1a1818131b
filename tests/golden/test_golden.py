"""Golden diff tests for the tracer, as Perfetto does them: scenario -> ftrace text and stats.

Each ``tests/golden/<case>/scenario.yaml`` is run; its ftrace text must equal
``expected.trace.txt`` and the ``nnemu parse`` text output of that trace must
equal ``expected.stats.txt``.  A mismatch prints a unified diff;
``pytest --update-goldens`` rewrites the expected files.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nnemu import run
from nnemu.scenario import load_scenario
from nnemu.tracer import open_trace_writer
from tests.commands import run_parse
from tests.goldens import check_golden

HERE = Path(__file__).resolve().parent
CASES = sorted(p.parent for p in HERE.glob("*/scenario.yaml"))


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_golden(case: Path, tmp_path: Path, update_goldens: bool):
    """The scenario's trace and its parsed statistics match the goldens byte for byte."""
    trace = tmp_path / "trace.txt"
    run(load_scenario(case / "scenario.yaml"), sinks=[open_trace_writer(trace)])
    check_golden(trace.read_text(encoding="utf-8"), case / "expected.trace.txt", update_goldens)
    code, out, err = run_parse(trace)
    assert code == 0
    assert err == ""
    check_golden(out, case / "expected.stats.txt", update_goldens)


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_golden_pftrace(case: Path, tmp_path: Path, update_goldens: bool):
    """The scenario's Perfetto trace, decoded to protobuf text, matches its golden byte for byte."""
    from tests.pftrace import as_text

    trace = tmp_path / "trace.pftrace"
    run(load_scenario(case / "scenario.yaml"), sinks=[open_trace_writer(trace)])
    check_golden(as_text(trace.read_bytes()), case / "expected.pftrace.txt", update_goldens)
