"""``nnemu parse`` reads a Perfetto protobuf trace's canonical events (``Engine.feed_events``),
not the trace rendered as systrace text rows and parsed again."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from nnemu.parser import NEGATIVE_BY_CONTRACT, parse_file
from nnemu.parser._api import finish
from nnemu.parser._engine import Engine
from nnemu.trace import TraceEvents
from tests.commands import run_parse

pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")
from tests.perfetto_traces import systrace_to_perfetto

OMR1 = Path(__file__).resolve().parents[3] / "tests" / "data" / "omr1.html"


def _edited(tmp_path: Path, edit: object) -> tuple[Path, Path, int]:
    """omr1.html edited at its first ``[NN_LA_PE]`` row, and its Perfetto form."""
    lines = OMR1.read_text(encoding="utf-8").split("\n")
    at = next(i for i, line in enumerate(lines) if "B|27005|[NN_LA_PE]" in line)
    lines[at : at + 1] = edit(lines[at])  # type: ignore[operator]
    html = tmp_path / "edited.html"
    html.write_text("\n".join(lines), encoding="utf-8")
    return html, systrace_to_perfetto(html, tmp_path / "edited.pftrace"), at


def _said_only_omr1s_negative_totals(err: str) -> bool:
    """Whether stderr holds nothing but omr1's own warnings: its five negative IPC Totals,
    which Android's parser prints too (``NEGATIVE_BY_CONTRACT``)."""
    lines = err.splitlines()
    return len(lines) == 5 and all(
        "LI Total self time of the run that starts here is negative" in line
        and line.endswith(NEGATIVE_BY_CONTRACT)
        for line in lines
    )


def test_a_perfetto_trace_is_parsed_without_text_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Parsing omr1 as Perfetto renders no systrace row and gives Android's table."""
    from nnemu.trace import PerfettoLines

    def no_rows(self: object) -> object:
        raise AssertionError("a Perfetto trace was rendered as text rows")

    pftrace = systrace_to_perfetto(OMR1, tmp_path / "omr1.pftrace")
    monkeypatch.setattr(PerfettoLines, "rows", no_rows)
    code, out, err = run_parse(pftrace)
    assert code == 0
    assert _said_only_omr1s_negative_totals(err)
    assert out == run_parse(OMR1)[1]


def test_feed_events_reads_a_systrace_as_its_lines_do():
    """The engine fed omr1's canonical events gives the runs it gives fed its lines."""
    engine = Engine()
    engine.feed_events(TraceEvents(OMR1).batches())
    from_events = finish(engine, last_line_number=0).result
    assert len(from_events.runs) == 5
    from_lines = parse_file(OMR1)
    assert from_events.runs == from_lines.runs
    # (The same warnings at the same lines; an event has no line text to quote.)
    assert [attrs.evolve(d, line="") for d in from_lines.diagnostics] == list(
        from_events.diagnostics
    )


def test_a_marks_pid_is_its_threads_process_without_a_warning(tmp_path: Path):
    """A print ``B|27006|`` from a thread of process 27005 counts for 27005, as the row's
    TGID column makes it count in the systrace form; there is no row to warn about."""
    html, pftrace, at = _edited(tmp_path, lambda line: [line.replace("B|27005|", "B|27006|")])
    assert f"edited.html:{at + 1}: warning: the mark's pid 27006" in run_parse(html)[2]
    code, out, err = run_parse(pftrace)
    assert code == 0
    assert _said_only_omr1s_negative_totals(err)
    assert out == run_parse(OMR1)[1]


def test_a_print_that_is_no_begin_mark_begins_an_unnamed_section(tmp_path: Path):
    """``B|abc|x`` begins an unnamed section its ``E`` ends (as Perfetto reads it), with no
    "malformed begin mark" warning: the table is the unedited trace's."""

    def insert(line: str) -> list[str]:
        head = line.split("tracing_mark_write: ")[0]
        return [line, f"{head}tracing_mark_write: B|abc|x", f"{head}tracing_mark_write: E|27005"]

    html, pftrace, _ = _edited(tmp_path, insert)
    assert "malformed begin mark" in run_parse(html)[2]
    code, out, err = run_parse(pftrace)
    assert code == 0
    assert _said_only_omr1s_negative_totals(err)
    assert out == run_parse(OMR1)[1]
