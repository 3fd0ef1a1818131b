"""How ``bench/fuzz_cli.py`` tells its outcomes apart (issue 28's Done-when counts them).

An endless statement that was asked for (a recursive CTE with no end) is not a hang: at
the timeout the campaign sends SIGINT, as Ctrl-C does, and a command that exits 130 at once
is *interrupted*.  A negative number ``parse`` prints is *silent* unless a warning names
its cell.
"""

from __future__ import annotations

import importlib.util
import json
import pathlib
import sys
import time
from types import ModuleType

import pytest

ROOT = pathlib.Path(__file__).parents[2]


@pytest.fixture(name="fuzz_cli", scope="module")
def _fuzz_cli() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fuzz_cli", ROOT / "bench" / "fuzz_cli.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["fuzz_cli"] = module
    spec.loader.exec_module(module)
    return module


def test_an_endless_query_is_interrupted_at_the_timeout_not_a_hang(
    fuzz_cli: ModuleType, tmp_path: pathlib.Path
):
    """The timeout's SIGINT ends an endless recursive query with exit 130 within the grace
    period: counted as interrupted, not as a hang."""
    trace = tmp_path / "t.json"
    trace.write_text(
        '{"traceEvents": [{"name": "x", "ph": "X", "ts": 0, "dur": 1, "pid": 1, "tid": 1}]}',
        encoding="utf-8",
    )
    endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT -1) SELECT sum(x) FROM c"
    started = time.monotonic()
    outcome, _, _ = fuzz_cli.run(["query", str(trace), endless], [trace], 3.0, tmp_path)
    assert outcome == "interrupted"
    assert time.monotonic() - started < 3.0 + fuzz_cli.INTERRUPT_GRACE_S + 1.0
    assert (tmp_path / "stderr").read_text() == "interrupted by SIGINT\n"


def test_a_negative_cell_is_silent_unless_a_warning_names_it(fuzz_cli: ModuleType):
    """A negative cell of ``parse --json`` (or of the table) counts as silent when no
    warning names its layer and column, whatever else stderr says."""
    run = {
        "self_times": {"PE": {"LA": 5.0, "LR": -5.263, "LT": 9.0}},
        "times": {"PE": {"LA": 5.0, "LR": 2.0}},
        "template_inputs": {"LR_PE": 2.0, "LR_PEO": -1.5},
    }
    out = json.dumps([run])
    other = ["t.txt:40: warning: malformed trace row: expected TASK-TID"]
    assert fuzz_cli.silent_negative(True, out, other) == "-5.263 (LR PE self time)"
    said = [
        "t.txt:12: warning: LR PE self time of the run that starts here is negative (-5.263 ms)",
    ]
    assert fuzz_cli.silent_negative(True, out, said) == (
        "-1.5 (LR Compute (PE less PIO and PR) self time)"
    )
    compute = "t.txt:12: warning: LR Compute (PE less PIO and PR) self time of the run ... is negative (-1.500 ms)"
    assert fuzz_cli.silent_negative(True, out, [*said, compute]) is None
    table = "Runtime          -      -     1.00    -5.26\nIPC       1.00\n"
    assert fuzz_cli.silent_negative(False, table, other) == "-5.26 in the Runtime row"
    assert fuzz_cli.silent_negative(False, table, said) is None


def test_a_negative_zero_of_the_table_is_not_a_negative_number(fuzz_cli: ModuleType):
    """``-0.00`` (float noise of a cell that is 0 ns, as Android's arithmetic prints it) is
    zero: not counted, while a real negative in the same row still is."""
    assert fuzz_cli.silent_negative(False, "Runtime   -0.00   0.08\n", []) is None
    assert fuzz_cli.silent_negative(False, "Runtime   -0.00   -0.08\n", []) == (
        "-0.08 in the Runtime row"
    )
