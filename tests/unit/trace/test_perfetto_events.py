"""A Perfetto protobuf trace read straight into canonical events (``perfetto_event_batches``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nnemu.trace import BEGIN, END, PROBLEM, PROCESS, THREAD, FtraceLines, TraceEvents
from nnemu.trace._ftrace import DumpEvents, row_batches
from tests.perfetto_traces import systrace_to_perfetto
from tests.unit.trace.test_perfetto import OMR1, VARIANTS, _print, _trace, _tree


@pytest.fixture(scope="module", name="omr1_traces")
def _omr1_traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """omr1.html as a Perfetto protobuf trace, in each variant."""
    folder = tmp_path_factory.mktemp("omr1-events")
    return {
        name: systrace_to_perfetto(OMR1, folder / f"omr1-{name}.pftrace", **options)
        for name, options in VARIANTS.items()
    }


def _text_route(path: Path) -> list[tuple[object, ...]]:
    """The events of the trace's systrace text form (``PerfettoLines`` rows read by
    ``row_batches``: how ``TraceEvents`` read a Perfetto trace before)."""
    from nnemu.trace import PerfettoLines

    dumps = DumpEvents()

    def problem(offset: int, message: str) -> None:
        dumps.pending.append((PROBLEM, 0, offset, 0, 0, message, None))

    lines = FtraceLines(PerfettoLines(str(path), on_dump=dumps, on_problem=problem), on_dump=dumps)
    return [_comparable(e) for batch in row_batches(lines.blocks(), dumps) for e in batch]


def _comparable(event: tuple[object, ...]) -> tuple[object, ...]:
    """An event without its place (the text form numbers lines; the events give offsets)
    and an end's pid (the text form's is always -1)."""
    kind, ts, _, pid, tid, name, extra = event
    return (kind, ts, -1 if kind == END else pid, tid, name, extra)


def _events(path: Path) -> list[tuple[object, ...]]:
    return [_comparable(e) for e in TraceEvents(path).events()]


@pytest.mark.parametrize("variant", VARIANTS)
def test_events_equal_those_of_the_systrace_text_form(omr1_traces: dict[str, Path], variant: str):
    """Each Perfetto variant of omr1 gives, without text, the events its text rows gave."""
    events = _events(omr1_traces[variant])
    assert events == _text_route(omr1_traces[variant])
    assert sum(e[0] == BEGIN for e in events) > 100


def test_odd_prints_and_ids_give_the_events_their_rows_give(tmp_path: Path):
    """Prints that are no atrace begin, ids beyond pid_t, negative times and a thread named
    late give what the text form's rows gave: the same pids, names and TASK columns."""
    trace = _trace(
        tmp_path / "odd.pftrace",
        _tree((7, 5, "  spaced"), processes=((5, "proc"),)),
        _print(1_000, 7, "B|abc|named"),
        _print(1_001, 7, "Bfoo"),
        _print(1_002, 8, "B|+9|plus"),
        _print(1_003, 8, "B|99999999999|eleven digits"),
        _print(1_004, 8, "B|4294967295|wrapped"),
        _print(1_005, 8, "E|abc"),
        _print(1_006, 8, "Exyz"),
        _print(1_007, 8, "C|5|counter|3"),
        _print(1_008, 8, "S|5|async|1"),
        _print(1_009, 2**31, "B|5|tid beyond pid_t"),
        _print(1_010, 9, "B|5|x"),
        _tree((9, 0, "late")),
        _print(1_011, 9, "E|5"),
        _print(1_012, 9, "B"),
    )
    events = _events(trace)
    assert events == _text_route(trace)
    assert (PROCESS, 0, 5, 0, "proc", None) in events
    assert (THREAD, 0, 5, 7, "  spaced", False) in events
    assert [e for e in events if e[0] == BEGIN][:2] == [
        (BEGIN, 1_000, 5, 7, "", "spaced"),
        (BEGIN, 1_001, 5, 7, "", "spaced"),
    ]


def test_problems_come_as_events_at_their_offsets(tmp_path: Path):
    """A track event on a track never described is a PROBLEM event at its packet's offset."""
    from tests.perfetto_traces import pb2

    packet = pb2.TracePacket()
    packet.timestamp = 5
    packet.track_event.type = 1
    packet.track_event.track_uuid = 42
    packet.track_event.name = "x"
    trace = _trace(tmp_path / "problem.pftrace", _print(1, 3, "B|3|a"), packet)
    problems = [e for e in TraceEvents(trace).events() if e[0] == PROBLEM]
    assert [(e[2], e[5]) for e in problems] == [
        (problems[0][2], "track_event on track 42, never described: skipped")
    ]
    assert problems[0][2] > 0


def test_sequence_state_is_read_on_the_fast_path(tmp_path: Path):
    """Interned names, their clearing by ``incremental_state_cleared`` and a sequence's default
    track are honoured by slice packets read on the decoder's fast path."""
    from tests.perfetto_traces import pb2

    def packet(**fields: object) -> object:
        out = pb2.TracePacket()
        out.trusted_packet_sequence_id = 3
        for key, value in fields.items():
            setattr(out, key, value)
        return out

    track = packet()
    track.track_descriptor.uuid = 77
    track.track_descriptor.thread.pid, track.track_descriptor.thread.tid = 10, 11
    interned = packet(timestamp=1)
    interned.interned_data.event_names.add(iid=1, name="first")
    interned.track_event.type, interned.track_event.track_uuid = 2, 77  # an end
    begin = packet(timestamp=2)
    begin.track_event.type, begin.track_event.track_uuid, begin.track_event.name_iid = 1, 77, 1
    cleared = packet(timestamp=3, incremental_state_cleared=True)
    cleared.track_event.type, cleared.track_event.track_uuid = 1, 77
    cleared.track_event.name_iid = 1
    defaults = packet(timestamp=4)
    defaults.trace_packet_defaults.track_event_defaults.track_uuid = 77
    defaults.track_event.type = 2
    end = packet(timestamp=5)
    end.track_event.type = 2
    trace = _trace(tmp_path / "state.pftrace", track, interned, begin, cleared, defaults, end)
    slices = [(e[0], e[1], e[3], e[4], e[5]) for e in TraceEvents(trace).events() if e[0] <= END]
    assert slices == [
        (END, 1, 10, 11, ""),
        (BEGIN, 2, 10, 11, "first"),
        (BEGIN, 3, 10, 11, "<interned name 1>"),
        (END, 4, 10, 11, ""),
        (END, 5, 10, 11, ""),
    ]


def test_slices_only_gives_the_same_events(omr1_traces: dict[str, Path]):
    """``slices_only`` (parse, replay: no flow ids or extra counter values read) gives the
    same events on a trace of slices (``test_pbdecode``: it reads no flow)."""
    path = omr1_traces["track-event"]
    everything = list(TraceEvents(path).events())
    assert list(TraceEvents(path, slices_only=True).events()) == everything
