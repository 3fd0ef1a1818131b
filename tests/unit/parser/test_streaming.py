"""``nnemu parse`` hands each run on as it finishes and prints what a whole parse prints."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from nnemu.parser import RunStats, format_json, format_text, parse_file, run_parse_command
from nnemu.parser import _format as format_module
from nnemu.parser._engine import Engine
from tests.unit.parser.helpers import ftrace_text

# Two clients whose runs interleave (so the tables get titles and "run k of N"),
# the second run of process 20 outlasting the first of process 10, and the last
# run of process 10 cut off by the end of the trace.
_ROWS = [
    (0, 10, 10, "[NN_LA_PO]first-10"),
    (1, 20, 20, "[NN_LA_PO]first-20"),
    (2, 10, 10, "[NN_LR_PC]ANeuralNetworksCompilation_finish"),
    (3, 10, 10, "E"),
    (4, 10, 10, "E"),
    (5, 20, 20, "E"),
    (6, 20, 20, "[NN_LA_PO]second-20"),
    (7, 10, 10, "[NN_LA_PO]second-10"),
    (8, 10, 10, "E"),
    (9, 10, 10, "[NN_LA_PO]cut-10"),
    (10, 20, 20, "[NN_LR_PE]ANeuralNetworksExecution_compute"),
    (11, 20, 20, "E"),
    (12, 20, 20, "E"),
]


def _command(path: Path, *options: str) -> str:
    out = io.StringIO()
    code = run_parse_command(
        str(path),
        as_json="--json" in options,
        per_execution="--per-execution" in options,
        total_times=False,
        print_detail="--print-detail" in options,
        stdout=out,
        stderr=io.StringIO(),
        include_incomplete="--include-incomplete" in options,
    )
    assert code == 0
    return out.getvalue()


@pytest.mark.parametrize("include_incomplete", [False, True])
def test_command_output_equals_rendering_the_whole_result(
    tmp_path: Path, include_incomplete: bool
) -> None:
    """The command's run-by-run output is byte for byte format_text/format_json of the parse."""
    path = tmp_path / "t.txt"
    path.write_text(ftrace_text(_ROWS))
    result = parse_file(path, include_incomplete=include_incomplete, keep_detail=True)
    assert len({run.pid for run in result.runs}) == 2
    flag = ("--include-incomplete",) if include_incomplete else ()
    assert _command(path, *flag) == format_text(result)
    assert _command(path, "--print-detail", *flag) == format_text(result, print_detail=True)
    assert _command(path, "--json", *flag) == format_json(result)
    assert _command(path, "--per-execution", *flag) == format_text(result, per_execution=True)
    assert "=== process task (pid 20), run 2 of 2" in format_text(result)


def test_output_beyond_the_memory_spool_is_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rendered runs moved to a temporary file (past the in-memory limit) print the same."""
    path = tmp_path / "t.txt"
    path.write_text(ftrace_text(_ROWS))
    in_memory = (_command(path), _command(path, "--json"))
    monkeypatch.setattr(format_module, "_SPOOL_IN_MEMORY", 100)
    assert (_command(path), _command(path, "--json")) == in_memory
    result = parse_file(path)
    with format_module.Printout(as_json=False) as printout:
        assert printout.render(result) == in_memory[0]
        assert printout._on_disk


def test_engine_hands_a_run_on_when_the_next_one_starts() -> None:
    """A run goes to on_run when its process's next [NN_LA_PO] starts, not at the end."""
    seen: list[tuple[int, str]] = []

    def keep(seq: int, run: RunStats) -> None:
        seen.append((seq, run.starting_mark))

    engine = Engine(on_run=keep)
    lines = ftrace_text(_ROWS).splitlines()
    numbered = list(enumerate(lines, start=1))
    cut = next(i for i, line in numbered if "second-10" in line)
    engine.feed(numbered[:cut])
    assert seen == [(1, "B|20|[NN_LA_PO]first-20"), (0, "B|10|[NN_LA_PO]first-10")]
    engine.feed(numbered[cut:])
    engine.finish()
    assert seen[2:] == [
        (3, "B|10|[NN_LA_PO]second-10"),
        (2, "B|20|[NN_LA_PO]second-20"),
        (4, "B|10|[NN_LA_PO]cut-10"),
    ]
    assert engine.runs == []
