"""Golden tests for ``nnemu compare``: two inputs and options in, the exact text and exit code out.

The inputs in ``tests/golden/compare`` come from real runs (``make_inputs.py``): run
reports, replications reports and sweep directories of the two-app scenario, B with the
indexer's model 20% slower on the NPU.  ``pytest --update-goldens`` rewrites
``compare/expected/<case>.txt``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.commands import run_cli
from tests.goldens import check_golden

HERE = Path(__file__).resolve().parent / "compare"

CASES = {
    "reports": ["reports/a.json", "reports/b.json"],
    "replications-fail-if": [
        "replications/a.json",
        "replications/b.json",
        "--fail-if",
        "apps.camera.latency_ms.p99 > +5%",
        "--fail-if",
        "devices.npu.busy_fraction < 0.5",
        "--fail-if",
        "apps.indexer.latency_ms.p50 >= +1.5",
    ],
    "replications-metrics": [
        "replications/a.json",
        "replications/b.json",
        "--metrics",
        "apps.indexer.completed",
        "devices.npu.executions",
        "--metrics",
        "apps.camera.deadline_miss_rate",
    ],
    "sweeps": ["sweeps/a", "sweeps/b"],
    "baseline-vs-sweep": [
        "baseline/a.json",
        "baseline/b",
        "--fail-if",
        "apps.indexer.latency_ms.p50 > 9",
    ],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_compare_golden(case: str, update_goldens: bool, monkeypatch: pytest.MonkeyPatch):
    """The comparison's stdout, stderr and exit code match the golden byte for byte."""
    monkeypatch.chdir(HERE)
    code, out, err = run_cli("compare", *CASES[case])
    actual = f"{out}--- stderr\n{err}--- exit {code}\n"
    check_golden(actual, HERE / "expected" / f"{case}.txt", update_goldens)
