"""Malformed traces give diagnostics with line numbers, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from nnemu.errors import TraceFormatError
from nnemu.parser import parse_lines
from nnemu.tracer import Layer, Phase
from tests.commands import run_parse

HEADER = 2  # "# tracer: nop" and "#" precede the rows in make_trace's output


def _parse(text: str):
    return parse_lines(text.splitlines(keepends=True))


def _messages(result) -> list[tuple[int, str, str]]:
    return [(d.line_number, d.severity, d.message) for d in result.diagnostics]


def test_end_without_begin_is_a_warning(make_trace):
    """An E with nothing open on an NNAPI thread is reported at its line and skipped."""
    text = make_trace([(0, 1, 1, "[NN_LR_PP]f"), (1, 1, 1, "E"), (2, 1, 1, "E")])
    result = _parse(text)
    assert _messages(result) == [
        (HEADER + 3, "warning", "end mark (E) with no open section on this thread")
    ]
    assert result.runs[0].totals_ns(Layer.RUNTIME, Phase.PREPARATION) == 1_000_000


def test_section_open_at_end_of_file(make_trace):
    """A section never closed is reported at its begin line; closed sections still count."""
    text = make_trace([(0, 1, 1, "[NN_LR_PP]f"), (1, 1, 1, "E"), (2, 1, 1, "[NN_LR_PC]g")])
    result = _parse(text)
    assert [(d.line_number, d.severity) for d in result.diagnostics] == [(HEADER + 3, "warning")]
    assert "still open when the trace ends" in result.diagnostics[0].message
    assert result.runs[0].totals_ns(Layer.RUNTIME, Phase.PREPARATION) == 1_000_000
    assert result.runs[0].totals_ns(Layer.RUNTIME, Phase.COMPILATION) == 0


def test_section_open_at_end_of_run(make_trace):
    """A section still open when the next [NN_LA_PO] starts is reported; its E is absorbed."""
    text = make_trace(
        [
            (0, 1, 1, "[NN_LA_PO]first"),
            (1, 2, 1, "[NN_LR_PC]left_open"),
            (2, 1, 1, "E"),
            (3, 1, 1, "[NN_LA_PO]second"),
            (4, 2, 1, "E"),
            (5, 1, 1, "E"),
        ]
    )
    result = _parse(text)
    assert _messages(result) == [
        (
            HEADER + 2,
            "warning",
            "section still open when a new run starts at line 6; its time is not counted",
        )
    ]
    assert [run.starting_mark for run in result.runs] == [
        "B|1|[NN_LA_PO]first",
        "B|1|[NN_LA_PO]second",
    ]


def test_unknown_layer_and_phase_codes(make_trace):
    """Unknown layer or phase codes are reported and the section is not counted."""
    text = make_trace(
        [
            (0, 1, 1, "[NN_LR_PP]outer"),
            (1, 1, 1, "[NN_LZ_PP]weird"),
            (2, 1, 1, "E"),
            (3, 1, 1, "[NN_LR_PQ]weird"),
            (4, 1, 1, "E"),
            (5, 1, 1, "E"),
        ]
    )
    result = _parse(text)
    assert _messages(result) == [
        (HEADER + 2, "warning", "unknown layer code 'LZ' in NNTRACE tag; section not counted"),
        (HEADER + 4, "warning", "unknown phase code 'PQ' in NNTRACE tag; section not counted"),
    ]
    assert result.runs[0].totals_ns(Layer.RUNTIME, Phase.PREPARATION) == 5_000_000


def test_malformed_tag(make_trace):
    """A bracket tag that is not [NN_<layer>_<phase>] is reported and not counted."""
    text = make_trace(
        [(0, 1, 1, "[NN_LRPP]f"), (1, 1, 1, "E"), (2, 1, 1, "[NN_LR_PP]g"), (3, 1, 1, "E")]
    )
    result = _parse(text)
    assert _messages(result) == [
        (
            HEADER + 1,
            "warning",
            "malformed NNTRACE tag: expected [NN_<layer>_<phase>]<function>",
        )
    ]
    assert result.runs[0].totals_ns(Layer.RUNTIME, Phase.PREPARATION) == 1_000_000


def test_forbidden_nesting(make_trace):
    """A phase or layer nested where the contract forbids it is reported, then counted."""
    text = make_trace(
        [
            (0, 1, 1, "[NN_LR_PC]compile"),
            (1, 1, 1, "[NN_LR_PE]execute"),
            (2, 1, 1, "E"),
            (3, 1, 1, "E"),
            (4, 1, 1, "[NN_LA_PP]app"),
            (5, 1, 1, "[NN_LI_PP]ipc"),
            (6, 1, 1, "E"),
            (7, 1, 1, "E"),
        ]
    )
    result = _parse(text)
    assert _messages(result) == [
        (HEADER + 2, "warning", "phase PE nested in phase PC is not allowed"),
        (HEADER + 6, "warning", "layer LI nested in layer LA is not allowed"),
    ]
    assert result.runs[0].totals_ns(Layer.IPC, Phase.PREPARATION) == 1_000_000


def test_malformed_row(make_trace):
    """A tracing_mark_write row the row pattern cannot read is reported."""
    text = make_trace([(0, 1, 1, "[NN_LR_PP]f"), (1, 1, 1, "E")])
    text += "garbage tracing_mark_write: B|1|[NN_LR_PP]g\n"
    result = _parse(text)
    assert [(d.line_number, d.severity) for d in result.diagnostics] == [(HEADER + 3, "warning")]
    assert result.diagnostics[0].message.startswith("malformed trace row")


def test_utility_at_top_level(make_trace):
    """A top-level [NN_LU_PU] section has no phase: reported, not counted, no crash."""
    text = make_trace(
        [
            (0, 1, 1, "[NN_LU_PU]validateModel"),
            (1, 1, 1, "E"),
            (2, 1, 1, "[NN_LR_PP]f"),
            (3, 1, 1, "E"),
        ]
    )
    result = _parse(text)
    assert _messages(result) == [
        (HEADER + 1, "warning", "utility section (phase PU) outside any phase: not counted")
    ]


def test_switch_with_nothing_open(make_trace):
    """A [SW] mark with an empty stack is reported and its E's stay balanced."""
    text = make_trace([(0, 1, 1, "[SW][NN_LC_PCO]f"), (1, 1, 1, "E"), (2, 1, 1, "E")])
    result = _parse(text)
    assert _messages(result) == [
        (HEADER + 1, "warning", "[SW] mark with no open section to switch from")
    ]


def test_truncated_html(tmp_path: Path, make_trace):
    """An HTML trace cut off inside the ftrace block is reported but still parsed."""
    body = make_trace([(0, 1, 1, "[NN_LR_PP]f"), (1, 1, 1, "E")])
    html = '<!DOCTYPE html>\n<html>\n  <script class="trace-data" type="application/text">\n' + body
    path = tmp_path / "cut.html"
    path.write_text(html)
    code, out, err = run_parse(path)
    assert code == 0
    assert "Runtime" in out
    assert err.startswith(f"{path}:")
    assert "warning: the trace data block has no closing </script>" in err


def test_no_ftrace_data_exits_2(tmp_path: Path):
    """An HTML file without an ftrace block is unusable: exit code 2, one error line."""
    path = tmp_path / "empty.html"
    path.write_text("<!DOCTYPE html>\n<html><body></body></html>\n")
    code, out, err = run_parse(path)
    assert (code, out) == (2, "")
    assert "error: no ftrace data found" in err


def test_no_nnapi_marks_exits_2(tmp_path: Path, make_trace):
    """A trace without NNAPI marks is unusable: exit code 2."""
    path = tmp_path / "other.txt"
    path.write_text(make_trace([(0, 1, 1, "Choreographer#doFrame"), (1, 1, 1, "E")]))
    code, out, err = run_parse(path)
    assert (code, out) == (2, "")
    assert "error: no NNAPI trace marks found" in err


def test_unreadable_file_exits_2(tmp_path: Path):
    """A missing file gives exit code 2 and one error line, no traceback."""
    code, out, err = run_parse(tmp_path / "missing.html")
    assert (code, out) == (2, "")
    assert err.count("\n") == 1
    assert "error: cannot read the trace" in err


def test_diagnostics_do_not_change_exit_code(tmp_path: Path, make_trace):
    """Warnings are printed as FILE:LINE: warning: ... and the exit code stays 0."""
    path = tmp_path / "t.txt"
    path.write_text(make_trace([(0, 1, 1, "[NN_LR_PP]f"), (1, 1, 1, "E"), (2, 1, 1, "E")]))
    code, _, err = run_parse(path)
    assert code == 0
    assert (
        err == f"{path}:{HEADER + 3}: warning: end mark (E) with no open section on this thread\n"
    )


def test_parse_lines_raises_trace_format_error():
    """The library API raises TraceFormatError when nothing is usable."""
    with pytest.raises(TraceFormatError, match="no NNAPI trace marks"):
        parse_lines(["# tracer: nop\n"])
