"""Edited traces whose figures would be silently wrong are reported (issue 28.13).

A trace edited by hand or by a tool (two rows swapped, a pid changed) can give figures
the contract never gives: each such case is a warning on stderr (and, for a run's cells,
in the run's JSON). The parser's output on valid traces is unchanged (tests/diff,
tests/golden, the omr1 diff case).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from nnemu.parser import NEGATIVE_BY_CONTRACT
from nnemu.parser._format import exact_ms
from tests.commands import run_cli, run_parse
from tests.unit.parser.helpers import ftrace_text, parse_rows

OMR1 = Path(__file__).resolve().parents[3] / "tests" / "data" / "omr1.html"
SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios"


def test_a_negative_application_cell_is_reported_on_stderr_and_in_json(tmp_path: Path):
    """The application calls every other layer, so its self time is never negative on a
    trace that nests as NNAPI writes it; here a runtime execution lies outside the
    application's (rows reordered) and LA PE would be -5 ms without a word."""
    rows = [
        (0, 11, 10, "[NN_LA_PO]m"),
        (2, 11, 10, "[NN_LA_PE]run"),
        (3, 11, 10, "E"),
        (3, 12, 10, "[NN_LR_PE]ANeuralNetworksExecution_compute"),
        (9, 12, 10, "E"),
        (10, 11, 10, "E"),
    ]
    result = parse_rows(rows)
    assert [d.message for d in result.diagnostics] == [
        "LA PE self time of the run that starts here is negative (-5.000 ms):"
        " its rows do not nest as NNAPI writes them (edited or reordered?)"
    ]
    trace = tmp_path / "t.txt"
    trace.write_text(ftrace_text(rows), encoding="utf-8")
    code, out, err = run_parse(trace, as_json=True)
    assert code == 0
    assert "LA PE self time of the run that starts here is negative" in err
    assert json.loads(out)[0]["warnings"] == [result.diagnostics[0].message]


def test_a_marks_pid_other_than_its_rows_tgid_is_reported(tmp_path: Path):
    """atrace writes getpid() in ``B|pid|``: one edited to another pid is named (the row
    counts for its TGID's process, as before)."""
    lines = OMR1.read_text(encoding="utf-8").split("\n")
    at = next(i for i, line in enumerate(lines) if "B|27005|[NN_LA_PE]" in line)
    lines[at] = lines[at].replace("B|27005|", "B|27006|")
    edited = tmp_path / "edited.html"
    edited.write_text("\n".join(lines), encoding="utf-8")
    code, out, err = run_parse(edited)
    assert code == 0
    assert f"edited.html:{at + 1}: warning: the mark's pid 27006 is not its row's TGID 27005" in err
    assert out == run_parse(OMR1)[1]


def test_a_thread_seen_under_two_pids_is_reported():
    """Without a TGID column the mark's pid tells the process: a thread whose pid changes
    moves its sections to another process, which is said."""
    rows = [
        (0, 11, 10, "[NN_LA_PO]m"),
        (1, 11, 10, "[NN_LR_PC]ANeuralNetworksCompilation_finish"),
        (2, 11, 10, "E"),
        (3, 11, 12, "[NN_LR_PC]ANeuralNetworksCompilation_finish"),
        (4, 11, 12, "E"),
        (5, 11, 10, "E"),
    ]
    text = re.sub(r"(?m)^( *\S+-\d+) +\( *\d+\) ", r"\1 ", ftrace_text(rows))
    from nnemu.parser import parse_lines

    result = parse_lines(text.splitlines())
    messages = [d.message for d in result.diagnostics]
    assert any("thread 11 of process 10 has a row of process 12" in m for m in messages), messages


def test_omr1s_negative_ipc_totals_are_said_and_its_table_stays_androids():
    """omr1 (a real capture) has negative IPC Totals by Android's own rules (the driver's
    asynchronous work outlasts the call): each is said on stderr, naming the cell and why,
    and the table is still the one Android's parser prints, byte for byte."""
    _, out, err = run_parse(OMR1)
    assert out == (OMR1.parent / "omr1.txt").read_text(encoding="utf-8")
    said = [line for line in err.splitlines() if "self time" in line]
    assert said, err
    assert all(
        re.search(
            r"omr1.html:\d+: warning: LI Total self time of the run that starts here is"
            r" negative \(-\d+\.\d{3} ms\): the LD time it subtracts outlasts",
            line,
        )
        for line in said
    ), said
    assert all(line.endswith(NEGATIVE_BY_CONTRACT) for line in said)
    assert "is not its row's TGID" not in err


def test_a_negative_ipc_cell_is_reported_on_stderr():
    """On omr1 (a real phone's trace) the driver's work outlasts the IPC calls of the first
    run, so its IPC Total self time is negative, as Android's parser prints it: said on
    stderr, naming the cell and why; the JSON is Android's (its ``"warnings"`` are for
    figures that are wrong: rows edited)."""
    code, out, err = run_parse(OMR1, as_json=True)
    assert code == 0
    first = json.loads(out)[0]
    value = first["self_times"]["PO"]["LI"]  # PO: the Total column
    assert value < 0
    said = (
        f"LI Total self time of the run that starts here is negative ({value:.3f} ms):"
        " the LD time it subtracts outlasts its own sections"
    )
    assert f"omr1.html:23213: warning: {said}" in err
    assert f"{NEGATIVE_BY_CONTRACT}\n" in err
    assert "warnings" not in first  # the figures are Android's, not wrong


def test_a_negative_cell_is_said_after_a_flood_of_other_warnings():
    """Past the cap of 1,000 diagnostics (1,100 sections left open here) the negative cell
    is still said, and so is how many diagnostics were not shown."""
    rows = [(0, 11, 10, "[NN_LA_PO]m")]
    rows += [(0.5, 11, 10, "[NN_LR_PC]ANeuralNetworksCompilation_finish")] * 1100
    rows += [
        (2, 11, 10, "[NN_LA_PE]run"),
        (3, 11, 10, "E"),
        (3, 12, 10, "[NN_LR_PE]ANeuralNetworksExecution_compute"),
        (9, 12, 10, "E"),
        (10, 11, 10, "E"),
    ]
    messages = [d.message for d in parse_rows(rows).diagnostics]
    assert len(messages) > 1000
    assert "LA PE self time of the run that starts here is negative (-5.000 ms):" in "".join(
        messages
    )
    assert messages[0] == f"{1100 + 2 - 1000} more diagnostics not shown", messages[:2]


def test_an_edited_row_that_makes_a_lower_cell_negative_is_said(tmp_path: Path):
    """The last campaign's unexplained -4.991 (issue 28): a HIDL client row whose timestamp
    was made unreadable is skipped, so the driver's execution outlasts what the IPC row
    counts and the IPC's execution self time goes negative; the warning names that cell
    (before, only the Application's cells were checked and nothing was said)."""
    trace = tmp_path / "two.txt"
    scenario = SCENARIOS / "two_apps_one_npu.yaml"
    code, _, err = run_cli("run", str(scenario), "--set", "duration_ms=300", "--trace", str(trace))
    assert code in (0, 1), err  # 1: an expectation of the long run failed; the trace is written
    lines = trace.read_text(encoding="utf-8").splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if "executeSynchronously_1_3::client" in line)
    lines[at] = re.sub(r" \d+\.\d+: ", " nan: ", lines[at])
    trace.write_text("".join(lines), encoding="utf-8")
    code, out, err = run_parse(trace, as_json=True)
    assert code == 0
    (value,) = [v for run in json.loads(out) if (v := run["self_times"]["PE"]["LI"]) < 0]
    assert f"LI PE self time of the run that starts here is negative ({value:.3f} ms)" in err


def test_json_has_no_negative_zero():
    """A self time that is 0 ns but whose float difference is a hair below 0 (the campaign
    of seed 2812: LR PI ``-0.0`` in ``parse --json``) is 0.0 in the JSON, whose times are
    whole ns; the text table keeps Android's float arithmetic."""
    noise = 0.3 - 0.1 - 0.2  # -2.7755575615628914e-17
    assert noise < 0
    assert math.copysign(1.0, exact_ms(noise)) == 1.0
    assert json.dumps(exact_ms(noise)) == "0.0"
