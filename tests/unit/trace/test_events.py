"""The one trace reader: ``TraceEvents`` gives the same canonical events from every format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nnemu.errors import TraceFormatError
from nnemu.scenario import load_scenario
from nnemu.trace import (
    BEGIN,
    COMPLETE,
    END,
    PROBLEM,
    PROCESS,
    RESTART,
    THREAD,
    TraceEvents,
    TraceFormat,
)
from tests.unit.replay.helpers import QUICKSTART, record

FORMATS = ("html", "txt", "json", "pftrace")


@pytest.fixture(scope="module", name="quickstart")
def _quickstart(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """quickstart's run recorded in every format nnemu writes (one run each, same seed)."""
    folder = tmp_path_factory.mktemp("events")
    scenario = load_scenario(QUICKSTART)
    traces = {}
    for suffix in FORMATS:
        if suffix == "pftrace":
            pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")
        traces[suffix] = folder / f"quickstart.{suffix}"
        record(scenario, traces[suffix])
    document = folder / "document.json"
    document.write_text(json.dumps(json.loads(traces["json"].read_text())), encoding="utf-8")
    traces["document"] = document
    return traces


def _slices(path: Path) -> list[tuple[object, ...]]:
    """The begins and ends of the trace's events, by time then thread (file order kept)."""
    out: list[tuple[object, ...]] = []
    for kind, ts, _, pid, tid, name, extra in TraceEvents(path).events():
        if kind in (BEGIN, COMPLETE):
            out.append((ts, tid, "B", pid, name))
        if kind == COMPLETE:
            assert isinstance(extra, int)
            out.append((ts + extra, tid, "E"))
        elif kind == END:
            out.append((ts, tid, "E"))
    return sorted(out, key=lambda e: (e[0], e[1]))


def test_every_format_of_one_run_gives_the_same_slices(quickstart: dict[str, Path]):
    """systrace HTML, ftrace text, Chrome JSON (a line per event, or one document) and
    Perfetto protobuf of one run give the same begins and ends, with the same pids."""
    html = _slices(quickstart["html"])
    assert len(html) > 100
    for other in ("txt", "json", "document", "pftrace"):
        assert _slices(quickstart[other]) == html, other


def test_process_names_come_as_events_from_every_format(quickstart: dict[str, Path]):
    """Every format that names processes names the same ones (``PROCESS`` events, from the
    HTML's process dump, JSON metadata or Perfetto's process tree; ftrace text has none)."""
    names = {
        suffix: {
            (pid, name)
            for kind, _, _, pid, _, name, _ in TraceEvents(quickstart[suffix]).events()
            if kind == PROCESS
        }
        for suffix in ("html", "json", "pftrace")
    }
    assert names["html"]
    assert all(found == names["html"] for found in names.values()), names


def test_a_json_document_restarts_the_reading(quickstart: dict[str, Path]):
    """A JSON file not written one event per line is read again as one document: a
    ``RESTART`` event first, then the document's events."""
    events = list(TraceEvents(quickstart["document"]).events())
    assert events[0][0] == RESTART
    assert RESTART not in {event[0] for event in events[1:]}
    lined = TraceEvents(quickstart["json"])
    assert RESTART not in {event[0] for event in lined.events()}


def test_json_events_of_the_wrong_shape_are_problems_on_their_lines(tmp_path: Path):
    """A JSON event that is not an object, or has no phase, is a ``PROBLEM`` placed on its
    file line; a thread_name is a renaming ``THREAD`` event; an X event one ``COMPLETE``."""
    trace = tmp_path / "t.json"
    trace.write_text(
        "[\n"
        "7,\n"
        '{"name": "x"},\n'
        '{"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "t"}},\n'
        '{"ph": "X", "name": "s", "pid": 1, "tid": 2, "ts": 1, "dur": 2}\n'
        "]\n",
        encoding="utf-8",
    )
    reader = TraceEvents(trace)
    assert reader.kind is TraceFormat.JSON
    assert [event for event in reader.events() if event[0] != RESTART] == [
        (PROBLEM, 0, 2, 0, 0, "trace event is not a JSON object: skipped", None),
        (PROBLEM, 0, 3, 0, 0, "trace event without a phase (ph): skipped", None),
        (THREAD, 0, 4, 1, 2, "t", True),
        (COMPLETE, 1000, 5, 1, 2, "s", 2000),
    ]


def test_the_format_is_told_once_and_unreadable_files_are_refused(tmp_path: Path):
    """A file no reader reads is refused when it is opened, as every command refuses it."""
    blank = tmp_path / "blank.json"
    blank.write_text("[]", encoding="utf-8")
    with pytest.raises(TraceFormatError, match="no trace events"):
        TraceEvents(blank)


def test_an_end_row_carries_its_process(tmp_path: Path):
    """An ``E`` row's pid is its TGID column, else its ``E|tgid``'s, else -1 (query puts the
    end on the thread of that process, as it puts a begin)."""
    trace = tmp_path / "ends.txt"
    trace.write_text(
        "# tracer: nop\n"
        "  a-10 ( 200) [000] ...1 1.000000: tracing_mark_write: E|300\n"
        "  a-10 (-----) [000] ...1 1.000001: tracing_mark_write: E|300\n"
        "  a-10 [000] ...1 1.000002: tracing_mark_write: E|+400\n"
        "  a-10 [000] ...1 1.000003: tracing_mark_write: E\n"
        "  a-10 [000] ...1 1.000004: tracing_mark_write: E|0\n",
        encoding="utf-8",
    )
    assert [(e[2], e[3]) for e in TraceEvents(trace).events() if e[0] == END] == [
        (2, 200),
        (3, 300),
        (4, 400),
        (5, -1),
        (6, -1),
    ]


def test_perfetto_events_are_placed_at_their_packets(quickstart: dict[str, Path]):
    """A Perfetto trace's slice events are placed at the byte offset of the packet each came
    from (where query and replay place a warning about it), as ``read_perfetto`` gives it."""
    from nnemu.trace import SliceBegin, read_perfetto

    begins = [
        r.offset for r in read_perfetto(str(quickstart["pftrace"])) if isinstance(r, SliceBegin)
    ]
    events = [e[2] for e in TraceEvents(quickstart["pftrace"]).events() if e[0] == BEGIN]
    assert len(events) > 100
    assert events == begins
