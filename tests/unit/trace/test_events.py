"""The one trace reader: ``TraceEvents`` gives the same canonical events from every format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nnemu.errors import TraceFormatError
from nnemu.scenario import load_scenario
from nnemu.trace import (
    ARGS,
    BEGIN,
    COMPLETE,
    END,
    INSTANT,
    NO_SLICE,
    PROBLEM,
    PROCESS,
    RESTART,
    THREAD,
    TraceEvents,
    TraceFormat,
    time_ordered_events,
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


def _json(tmp_path: Path, events: list[object]) -> list[tuple[object, ...]]:
    """The canonical events of ``events`` written one a line (those of the document read
    after a RESTART, if there is one)."""
    trace = tmp_path / "t.json"
    trace.write_text("[\n" + ",\n".join(json.dumps(e) for e in events) + "\n]\n")
    read = list(TraceEvents(trace).events())
    restarts = [index for index, event in enumerate(read) if event[0] == RESTART]
    return read[restarts[-1] + 1 :] if restarts else read


def test_json_slices_come_after_their_category_and_args(tmp_path: Path):
    """A B, X or thread instant with a cat or args has an ARGS (the event itself) right
    before it; i/I of thread scope and R are INSTANTs, a global or process instant is no
    event; a name that is no string is empty (query names it [No name])."""
    b = {"ph": "B", "pid": 1, "tid": 2, "ts": 1, "name": "b", "cat": "c", "args": {"k": 1}}
    x = {"ph": "X", "pid": 1, "tid": 2, "ts": 2, "dur": 1, "name": 5, "args": {}}
    events = [
        b,
        x,
        {"ph": "i", "pid": 1, "tid": 2, "ts": 3, "name": "i", "s": "t"},
        {"ph": "I", "pid": 1, "tid": 2, "ts": 4, "name": "g", "s": "g"},
        {"ph": "R", "pid": 1, "tid": 2, "ts": 5, "name": "r"},
        {"ph": "E", "pid": 1, "tid": 2, "ts": 6},
    ]
    assert _json(tmp_path, events) == [
        (ARGS, 1000, 2, 1, 2, "", b),
        (BEGIN, 1000, 2, 1, 2, "b", None),
        (ARGS, 2000, 3, 1, 2, "", x),
        (COMPLETE, 2000, 3, 1, 2, "", 1000),
        (INSTANT, 3000, 4, 1, 2, "i", None),
        (INSTANT, 5000, 6, 1, 2, "r", None),
        (END, 6000, 7, 1, 2, "", None),
    ]


def test_a_json_problem_names_the_phase_of_its_event(tmp_path: Path):
    """A PROBLEM of a slice or name event carries its ph (parse says nothing of an X's, nor
    parse and replay of an instant's); one of an event with no phase carries none."""
    events = [
        {"ph": "X", "pid": 1, "tid": 2, "ts": 1, "name": "x"},
        {"ph": "i", "pid": "p", "tid": 2, "ts": 1, "name": "i"},
        {"ph": "B", "pid": 1, "tid": 2, "ts": "t", "name": "b"},
        {"pid": 1},
    ]
    assert [(e[0], e[2], e[6]) for e in _json(tmp_path, events)] == [
        (PROBLEM, 2, "X"),
        (PROBLEM, 3, "i"),
        (PROBLEM, 4, "B"),
        (PROBLEM, 5, None),
    ]


def test_a_system_row_with_no_tgid_has_a_no_slice_problem_before_its_begin(tmp_path: Path):
    """A B mark with no tgid in a document's systemTraceEvents is a NO_SLICE PROBLEM, then
    its nameless BEGIN (query opens no slice for it; parse and replay read the begin)."""
    row = "          sys-201   (  200) [000] ...1     0.007000: tracing_mark_write: B|x\n"
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"traceEvents": [], "systemTraceEvents": "# tracer: nop\n" + row}))
    events = [e for e in TraceEvents(trace).events() if e[0] != RESTART]
    assert events == [
        (
            PROBLEM,
            0,
            1,
            200,
            0,
            "malformed begin mark: expected B|<tgid>|<name>; row skipped",
            NO_SLICE,
        ),
        (BEGIN, 7_000_000, 1, 200, 201, "", "sys"),
    ]


def test_a_system_row_has_the_problems_of_a_text_row(tmp_path: Path):
    """A document's systemTraceEvents rows are read as a text file's rows are: a row with
    an out-of-range tid is a PROBLEM on the text's line (query warns of it), not a slice,
    and the text's last row, whole in the document, is no cut row."""
    bad = "          sys-99999999999 (  200) [000] ...1     0.007000: tracing_mark_write: B|200|x\n"
    last = "          sys-201   (  200) [000] ...1     0.008000: tracing_mark_write: B|200|y"
    trace = tmp_path / "t.json"
    trace.write_text(
        json.dumps({"traceEvents": [], "systemTraceEvents": "# tracer: nop\n" + bad + last})
    )
    events = [e for e in TraceEvents(trace).events() if e[0] != RESTART]
    assert [(e[0], e[2]) for e in events] == [(PROBLEM, 1), (BEGIN, 1)]
    assert "thread id out of range" in events[0][5]
    assert events[1][5] == "y"


def test_a_restart_is_a_batch_of_its_own(quickstart: dict[str, Path]):
    """A reader that stops at the RESTART goes on with the next batch: the document's."""
    batches = TraceEvents(quickstart["document"]).batches()
    assert next(batches) == [(RESTART, 0, 0, 0, 0, "", None)]
    assert next(batches)[0][0] != RESTART


def test_time_ordered_events_keep_file_order_at_one_time_and_untimed_in_place():
    """Events sort by time, ties in file order; an event with no time (a name, a problem)
    stays after the one before it; what comes before a RESTART is dropped."""
    events = [
        (BEGIN, 9, 1, 1, 1, "void", None),
        (RESTART, 0, 0, 0, 0, "", None),
        (END, 5, 2, 1, 1, "", None),
        (PROBLEM, 0, 3, 0, 0, "p", None),
        (BEGIN, 2, 4, 1, 1, "a", None),
        (THREAD, 0, 5, 1, 1, "t", True),
        (BEGIN, 5, 6, 1, 1, "b", None),
    ]
    assert [e[2] for e in time_ordered_events(events)] == [4, 5, 2, 3, 6]


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


def test_metadata_whose_args_are_no_object_names_nothing(tmp_path: Path):
    """An M event whose args is a list names no thread (it was an AttributeError in replay)."""
    events = [{"ph": "M", "pid": 1, "tid": 2, "name": "thread_name", "args": ["t"]}]
    assert _json(tmp_path, events) == []
