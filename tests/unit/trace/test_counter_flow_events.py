"""``TraceEvents`` gives counters and flows as ``COUNTER`` and ``FLOW`` events in every format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nnemu.query import open_trace
from nnemu.scenario import load_scenario
from nnemu.trace import (
    COUNTER,
    FLOW,
    FLOW_END,
    FLOW_END_NEXT,
    FLOW_IN,
    FLOW_OUT,
    FLOW_START,
    FLOW_STEP,
    FLOW_THROUGH,
    MALFORMED_COUNTER,
    TraceEvents,
)
from tests.unit.replay.helpers import QUICKSTART, record

OMR1 = Path(__file__).resolve().parents[3] / "tests/data/omr1.html"


@pytest.fixture(scope="module", name="quickstart")
def _quickstart(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """quickstart's run recorded as Chrome JSON and Perfetto protobuf (the formats that
    carry nnemu's flows and counters)."""
    pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")
    folder = tmp_path_factory.mktemp("counters")
    scenario = load_scenario(QUICKSTART)
    traces = {}
    for suffix in ("json", "pftrace"):
        traces[suffix] = folder / f"quickstart.{suffix}"
        record(scenario, traces[suffix])
    return traces


def _of(path: Path, kind: int) -> list[tuple[object, ...]]:
    return [event for event in TraceEvents(path).events() if event[0] == kind]


def _count(path: Path, table: str) -> int:
    database = open_trace(str(path))
    try:
        (count,) = database.execute(f"SELECT count(*) FROM {table}").fetchone()
    finally:
        database.close()
    assert isinstance(count, int)
    return count


def test_json_and_perfetto_give_the_same_counters_and_flows(quickstart: dict[str, Path]):
    """One run's counter values and flow bindings are the same events from JSON as from
    Perfetto protobuf (a JSON counter's track is named after its arg), as many as query
    loads into ``counter`` and (two bindings a flow) ``flow``."""
    json_counters = _of(quickstart["json"], COUNTER)
    pf_counters = _of(quickstart["pftrace"], COUNTER)
    assert json_counters
    assert [(ts, pid, tid, name, value) for _, ts, _, pid, tid, name, value in json_counters] == [
        (ts, pid, tid, f"{name} value", value) for _, ts, _, pid, tid, name, value in pf_counters
    ]
    json_flows = _of(quickstart["json"], FLOW)
    pf_flows = _of(quickstart["pftrace"], FLOW)
    assert json_flows
    # nnemu's JSON writer starts a flow with `s` and ends it with `f` bound to the enclosing
    # slice; its Perfetto writer carries the same on the slices as flow_ids and
    # terminating_flow_ids (the ids of one slice in another order).
    hows = {FLOW_START: FLOW_THROUGH, FLOW_END: FLOW_IN}
    assert sorted((e[1], e[3], e[4], hows[e[6][0]], e[6][2]) for e in json_flows) == sorted(  # type: ignore[index]
        (e[1], e[3], e[4], e[6][0], e[6][2])  # type: ignore[index]
        for e in pf_flows
    )
    for path in quickstart.values():
        assert _count(path, "counter") == len(json_counters)
        assert 2 * _count(path, "flow") == len(json_flows)


def test_a_phone_trace_gives_its_atrace_counters():
    """omr1's ``C|pid|name|value`` rows are ``COUNTER`` events of their row's thread, as many
    as query loads (and trace processor: test_perfetto_compare)."""
    counters = _of(OMR1, COUNTER)
    assert counters[0][3:] == (593, 593, "SetVsyncState ", 1.0)
    assert len(counters) == _count(OMR1, "counter") == 12


def test_counter_rows_are_read_as_trace_processor_reads_them(tmp_path: Path):
    """A counter row's tgid and value are read as ``strtoul``/``strtoll`` read them; a row
    that gives no value says why in its event (query warns it; parse and replay skip it)."""
    head = "  app-210 ( 200) [000] ...1 1.000{}: tracing_mark_write: "
    rows = [
        "C|200|q|7",
        "C|+200|q| 8",
        "C|200|q|9|category",
        "C|0|q|3",
        "C|200|q|2.5",
        "C|abc|q|1",
        "C|200||1",
        "B|200|slice",
        "E|200",
    ]
    text = "# tracer: nop\n" + "".join(
        head.format(f"{i:03d}") + row + "\n" for i, row in enumerate(rows)
    )
    trace = tmp_path / "counters.txt"
    trace.write_text(text)
    counters = [(e[1], e[2], e[3], e[4], e[5], e[6]) for e in _of(trace, COUNTER)]
    assert counters == [
        (1_000_000_000, 2, 200, 210, "q", 7.0),
        (1_000_001_000, 3, 200, 210, "q", 8.0),
        (1_000_002_000, 4, 200, 210, "q", 9.0),
        (1_000_003_000, 5, -1, 210, "q", 3.0),
        (1_000_004_000, 6, -1, 210, "q", MALFORMED_COUNTER),
        (1_000_005_000, 7, -1, 210, "q", MALFORMED_COUNTER),
        (1_000_006_000, 8, -1, 210, "", MALFORMED_COUNTER),
    ]


def test_json_counters_and_flows_are_events_on_their_lines(tmp_path: Path):
    """A JSON ``C`` event gives a ``COUNTER`` per arg; ``s``, ``t``, ``f`` (bound to the
    enclosing slice with ``"bp": "e"``, else to the next) and a slice's ``bind_id`` with
    ``flow_in``/``flow_out`` give ``FLOW`` events saying how they bind; one that cannot be
    read says why."""
    events = [
        {"ph": "C", "pid": 1, "ts": 1, "name": "q", "args": {"a": 1, "b": "2.5", "c": "x"}},
        {"ph": "C", "ts": 1, "name": "q", "args": {"a": 1}},
        {"ph": "s", "pid": 1, "tid": 10, "ts": 2, "name": "call", "cat": "c", "id": 7},
        {"ph": "t", "pid": 2, "tid": 20, "ts": 3, "name": "call", "cat": "c", "id": "0x7"},
        {"ph": "f", "pid": 1, "tid": 10, "ts": 4, "name": "call", "cat": "c", "id": 7},
        {"ph": "f", "pid": 1, "tid": 10, "ts": 5, "name": "r", "id": 8, "bp": "e"},
        {"ph": "f", "pid": 1, "tid": 10, "ts": 5, "name": "r"},
        {"ph": "X", "pid": 1, "tid": 1, "ts": 6, "dur": 1, "name": "a", "bind_id": "0x5", "flow_out": True},
        {"ph": "X", "pid": 1, "tid": 2, "ts": 7, "dur": 1, "name": "b", "bind_id": 5, "flow_in": True, "flow_out": True},
        {"ph": "B", "pid": 1, "tid": 3, "ts": 8, "name": "c", "bind_id": 5, "flow_in": True},
        {"ph": "B", "pid": 1, "tid": 3, "ts": 9, "name": "d", "bind_id": 5},
    ]  # fmt: skip
    trace = tmp_path / "flows.json"
    trace.write_text("[\n" + ",\n".join(json.dumps(event) for event in events) + "\n]\n")
    got = [e[1:] for e in TraceEvents(trace).events() if e[0] in (COUNTER, FLOW)]
    no_flow = "f event without a tid, an id and a finite ts in range; skipped"
    assert got == [
        (1000, 2, 1, -1, "q a", 1.0),
        (1000, 2, 1, -1, "q b", 2.5),
        (1000, 2, 1, -1, "q c", "counter 'q' arg 'c' is not a number; skipped"),
        (0, 3, -1, -1, "q", "C event without a pid and a finite ts in range; skipped"),
        (2000, 4, 1, 10, "call", (FLOW_START, "c", 7)),
        (3000, 5, 2, 20, "call", (FLOW_STEP, "c", 7)),
        (4000, 6, 1, 10, "call", (FLOW_END_NEXT, "c", 7)),
        (5000, 7, 1, 10, "r", (FLOW_END, "", 8)),
        (0, 8, -1, 0, "r", no_flow),
        (6000, 9, 1, 1, "", (FLOW_OUT, "", 5)),
        (7000, 10, 1, 2, "", (FLOW_THROUGH, "", 5)),
        (8000, 11, 1, 3, "", (FLOW_IN, "", 5)),
    ]
