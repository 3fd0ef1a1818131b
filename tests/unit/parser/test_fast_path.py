"""The text reader's fast row path (cached heads and payloads), as parse reads it, against
the row pattern alone."""

from __future__ import annotations

from unittest import mock

import pytest
from hypothesis import strategies as st

from nnemu import _native
from nnemu.errors import TraceFormatError
from nnemu.parser import ParseResult, parse_lines
from nnemu.trace import _ftrace
from tests.tiers import tiered

_TASKS = st.one_of(
    st.sampled_from(
        ["app", "HwBinder:2000_1", "my task", "a-b-c", "-", " x", "x ", " ", "(1) [2]"]
    ),
    st.text(st.characters(codec="ascii", exclude_characters="\n\r"), min_size=1, max_size=10),
)
_TGIDS = st.one_of(st.none(), st.just("-----"), st.sampled_from(["1000", "2000", " 1000"]))
_FLAGS = st.sampled_from(["...1", "d..2", "dNh1", "d.s.", ""])
_PAYLOADS = st.sampled_from(
    [
        "B|{p}|[NN_LA_PO]run",
        "B|{p}|[NN_LA_PE]executeOnce",
        "B|{p}|[NN_LR_PE]ANeuralNetworksExecution_create",
        "B|{p}|[NN_LR_PE]ANeuralNetworksExecution_startCompute",
        "B|{p}|[NN_LR_PE]ANeuralNetworksEvent_wait",
        "B|{p}|[SW][NN_LR_PC]ANeuralNetworksCompilation_finish",
        "B|{p}|HIDL::IDevice::prepareModel_1_3::server",
        "B|{p}|HIDL::IPreparedModel::execute_1_3::client",
        "B|{p}|[NN_LX_PE]unknown",
        "B||bad",
        "B|{p}",
        "E|{p}",
        "E|{p}",
        "E|{p}",
        "E",
        "C|{p}|counter|1",
    ]
)
_SECONDS = st.one_of(st.integers(0, 10**6), st.integers(10**9, 10**12))
"""Seconds of up to 13 digits: the fast path reads at most ``MAX_SECONDS_DIGITS`` (11)."""
_STAMPS = st.tuples(_SECONDS, st.integers(1, 12), st.integers(0, 10**12 - 1)).map(
    lambda t: f"{t[0]}.{t[2] % 10 ** t[1]:0{t[1]}d}"
)


@st.composite
def _rows(draw: st.DrawFn) -> list[str]:
    """ftrace lines from a few threads whose heads repeat, with varied heads and stamps."""
    threads = draw(
        st.lists(
            st.tuples(_TASKS, st.sampled_from(["1000", "1001", "2000", "2001"]), _TGIDS, _FLAGS),
            min_size=1,
            max_size=4,
        )
    )
    lines = ["# tracer: nop", "#"]
    for _ in range(draw(st.integers(1, 30))):
        task, tid, tgid, flags = draw(st.sampled_from(threads))
        indent = draw(st.sampled_from(["", " ", "     "]))
        column = "" if tgid is None else f"({tgid:>5}) "
        flag_text = f" {flags}" if flags else ""
        payload = draw(_PAYLOADS).format(p=tgid.strip() if tgid and tgid[0] != "-" else tid)
        lines.append(
            f"{indent}{task}-{tid} {column}[001]{flag_text} {draw(_STAMPS)}:"
            f" tracing_mark_write: {payload}"
        )
    return lines


@tiered(lines=_rows(), quick=100, wide=300)
@pytest.mark.skipif(
    _native.extension_of("nnemu.trace._ftrace") is not None,
    reason="a compiled reader's constants cannot be patched (the source's run under pip install -e .)",
)
def test_fast_path_parses_as_the_row_pattern_alone(lines: list[str]) -> None:
    """Rows the fast path reads give the same runs and diagnostics as ROW_RE on every row."""
    fast = _outcome(lines)
    # The fast path reads no timestamp: every row goes to ROW_RE (its head is still read
    # for the task names it gives).
    with mock.patch.object(_ftrace, "_FAST_STAMP", 0):
        slow = _outcome(lines)
    assert fast == slow


def _outcome(lines: list[str]) -> ParseResult | str:
    """What parsing ``lines`` gives: the result, or the error refusing them."""
    try:
        return parse_lines(lines, keep_detail=True)
    except TraceFormatError as error:
        return str(error)
