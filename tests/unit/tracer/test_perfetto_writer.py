"""The Perfetto protobuf writer: the .html's slices, binder and callback flows, counter tracks,
valid files when interrupted; and the same flows and counters in Chrome JSON."""

from __future__ import annotations

import io
import json
import random
import sqlite3
import sys
from collections import Counter
from pathlib import Path

import pytest
import trio
import trio.testing

from nnemu import open_emulator, run
from nnemu.query import open_trace
from nnemu.scenario import load_scenario, load_scenario_text
from nnemu.sim import SimThread
from nnemu.tracer import ChromeJsonWriter, FlowSink, open_trace_writer
from tests.commands import run_cli
from tests.pftrace import decode, packets, pb
from tests.unit.tracer.helpers import scenario_text

ROOT = Path(__file__).resolve().parents[3]
TWO_APPS = ROOT / "scenarios/two_apps_one_npu.yaml"

DEVICE_COUNTERS = {"executions waiting", "compute units busy", "memory in use"}


@pytest.fixture(scope="module")
def two_apps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The two-app scenario's trace as .pftrace, .json and .html (three runs, same seed)."""
    out = tmp_path_factory.mktemp("two_apps")
    paths = {suffix: out / f"t{suffix}" for suffix in (".pftrace", ".json", ".html")}
    for path in paths.values():
        run(load_scenario(TWO_APPS), sinks=[open_trace_writer(path)])
    return paths


def test_pftrace_has_the_html_slices_on_the_same_threads(two_apps: dict[str, Path]):
    """Every slice of the .html (ts, duration, name, depth, thread) is in the .pftrace, and no other."""
    conn: sqlite3.Connection = open_trace(str(two_apps[".html"]))
    try:
        expected = conn.execute(
            "SELECT s.ts, s.dur, s.name, s.depth, t.tid FROM slice s"
            " JOIN thread_track tt ON s.track_id = tt.id JOIN thread t USING (utid)"
        ).fetchall()
    finally:
        conn.close()
    decoded = decode(two_apps[".pftrace"].read_bytes())
    actual = [(s.ts, s.dur, s.name, s.depth, s.tid) for s in decoded.slices]
    assert sorted(actual) == sorted(expected)
    assert len(actual) > 4000


def test_pftrace_interns_each_slice_name_once(two_apps: dict[str, Path]):
    """Slice names are interned (iid 1, 2, ... in order of first use, each defined before use) on
    a sequence whose first packet clears the incremental state."""
    data = two_apps[".pftrace"].read_bytes()
    records = packets(data)
    assert records[0].sequence_flags == pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
    defined: dict[int, str] = {}
    for packet in records:
        for entry in packet.interned_data.event_names:
            assert entry.iid == len(defined) + 1
            defined[entry.iid] = entry.name
        if packet.track_event.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
            assert not packet.track_event.HasField("name")
            assert packet.track_event.name_iid in defined
    assert len(set(defined.values())) == len(defined) > 40
    # each name's text is in the file once (and in the names that contain it)
    for name in defined.values():
        assert data.count(name.encode()) == sum(name in other for other in defined.values())


def test_pftrace_names_processes_and_threads(two_apps: dict[str, Path]):
    """The process tree names the apps, the driver service and its binder threads."""
    decoded = decode(two_apps[".pftrace"].read_bytes())
    assert decoded.processes == {
        700: "android.hardware.neuralnetworks@1.3-service-npu",
        707: "camera",
        713: "indexer",
    }
    assert decoded.threads[701] == "HwBinder:700_1"
    assert {s.tid for s in decoded.slices} <= set(decoded.threads)


def test_every_binder_transaction_has_a_flow_to_its_server_slice(two_apps: dict[str, Path]):
    """Each ::client slice starts a flow that the ::server slice of the same method ends."""
    slices = decode(two_apps[".pftrace"].read_bytes()).slices
    clients = [s for s in slices if s.name.endswith("::client")]
    ends = {fid: s for s in slices for fid in s.flows_in}
    assert clients
    for client in clients:
        (flow,) = [fid for fid in client.flows_out if ends[fid].name.endswith("::server")]
        server = ends[flow]
        assert server.name == client.name.replace("::client", "::server")
        assert server.tid != client.tid
        assert server.ts >= client.ts


def test_every_callback_notify_has_a_flow_from_the_call_it_completes(two_apps: dict[str, Path]):
    """Each notify ::client slice ends a flow started by the ::server slice of its launching call."""
    slices = decode(two_apps[".pftrace"].read_bytes()).slices
    starts = {fid: s for s in slices for fid in s.flows_out}
    notifies = [s for s in slices if "Callback::notify" in s.name and s.name.endswith("::client")]
    assert notifies
    for notify in notifies:
        (launch,) = [starts[fid] for fid in notify.flows_in]
        assert launch.name.startswith("HIDL::IDevice::prepareModel")
        assert launch.name.endswith("::server")


def test_counter_tracks_per_device_and_app(two_apps: dict[str, Path]):
    """The driver service has its three device counters, each app its executions in flight."""
    counters = decode(two_apps[".pftrace"].read_bytes()).counters
    names = {(pid, name) for pid, name in counters}
    assert {(700, name) for name in DEVICE_COUNTERS} | {
        (707, "executions in flight"),
        (713, "executions in flight"),
    } == names
    units = [value for _, value in counters[700, "compute units busy"]]
    assert set(units) == {0, 1}  # the npu has one compute unit
    assert max(value for _, value in counters[700, "memory in use"]) > 0
    for key, values in counters.items():
        times = [ts for ts, _ in values]
        assert times == sorted(times), key


def test_pftrace_is_deterministic(tmp_path: Path, two_apps: dict[str, Path]):
    """The same scenario and seed write the same bytes."""
    again = tmp_path / "again.pftrace"
    run(load_scenario(TWO_APPS), sinks=[open_trace_writer(again)])
    assert again.read_bytes() == two_apps[".pftrace"].read_bytes()


def test_chrome_json_has_the_same_flows_and_counters(two_apps: dict[str, Path]):
    """The .json carries one s/f pair per flow of the .pftrace and the same counter values."""
    events = json.loads(two_apps[".json"].read_text(encoding="utf-8"))["traceEvents"]
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    finishes = {e["id"]: e for e in events if e["ph"] == "f"}
    assert set(starts) == set(finishes)
    assert all(e["bp"] == "e" for e in finishes.values())
    decoded = decode(two_apps[".pftrace"].read_bytes())
    assert len(starts) == sum(len(s.flows_out) for s in decoded.slices)
    json_counters = Counter((e["pid"], e["name"]) for e in events if e["ph"] == "C")
    assert json_counters == Counter({key: len(v) for key, v in decoded.counters.items()})


@pytest.mark.parametrize(
    ("suffix", "takes_flows"),
    [
        (".txt", False),
        (".html", False),
        (".json", True),
        (".pftrace", True),
        (".perfetto-trace", True),
    ],
)
def test_only_json_and_perfetto_writers_take_flows_and_counters(
    tmp_path: Path, suffix: str, takes_flows: bool
):
    """The tracer sends flows and counters to the JSON and Perfetto writers only (systrace bytes stay)."""
    writer = open_trace_writer(tmp_path / f"t{suffix}")
    try:
        assert isinstance(writer, FlowSink) is takes_flows
    finally:
        writer.close()


def test_interrupted_run_leaves_a_valid_pftrace(tmp_path: Path):
    """Mid-run the file holds only whole packets; an exception still ends every open slice."""
    path = tmp_path / "t.pftrace"
    writer = open_trace_writer(path)
    writer.flush_bytes = 1000  # flush often
    scenario = load_scenario_text(scenario_text(executions=400, preset="mobilenet_v1"))
    snapshots: list[bytes] = []

    class _Boom(Exception):
        pass

    def boom() -> None:
        raise _Boom

    async def main() -> None:
        async with open_emulator(scenario, sinks=[writer]) as emulator:
            for ms in (2000, 4000, 6000):  # the tracer hands events over in batches
                emulator.kernel.call_at(ms * 1_000_000, lambda: snapshots.append(path.read_bytes()))
            emulator.kernel.call_at(6500_000_000, boom)
            await emulator.run()

    with pytest.raises((_Boom, BaseExceptionGroup)):
        trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    assert all(snapshots)
    for data in snapshots:
        packets(data)  # whole packets only
    decoded = decode(path.read_bytes())
    assert all(s.dur >= 0 for s in decoded.slices)  # every slice ended
    assert any(s.name.startswith("[NN_LA_PE]") for s in decoded.slices)


def test_run_without_the_perfetto_package_writes_the_pftrace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Writing a .pftrace needs no perfetto package (the writer encodes the protobuf itself)."""
    monkeypatch.setitem(sys.modules, "perfetto.protos.perfetto.trace", None)
    monkeypatch.setitem(sys.modules, "google.protobuf", None)
    scenario = tmp_path / "s.yaml"
    scenario.write_text(scenario_text(executions=1, preset="add"), encoding="utf-8")
    trace = tmp_path / "t.pftrace"
    code, _, err = run_cli("run", str(scenario), "--trace", str(trace))
    assert (code, err) == (0, "")
    monkeypatch.undo()
    assert any(s.name.startswith("[NN_LA_PE]") for s in decode(trace.read_bytes()).slices)


def test_systrace_bytes_are_the_same_beside_a_perfetto_writer(
    tmp_path: Path, two_apps: dict[str, Path]
):
    """With a .pftrace writer attached too, the ftrace text has no flow or counter lines: the same bytes."""
    alone, beside = tmp_path / "alone.txt", tmp_path / "beside.txt"
    run(load_scenario(TWO_APPS), sinks=[open_trace_writer(alone)])
    both = tmp_path / "both.pftrace"
    run(load_scenario(TWO_APPS), sinks=[open_trace_writer(beside), open_trace_writer(both)])
    assert beside.read_bytes() == alone.read_bytes()
    assert both.read_bytes() == two_apps[".pftrace"].read_bytes()


def test_a_full_disk_is_reported_at_close_naming_the_file(tmp_path: Path):
    """A write error (ENOSPC) stops writing and close raises OutputError with the file's name."""
    import errno

    from nnemu.errors import OutputError
    from nnemu.tracer._perfetto_writer import FLUSH_BYTES, PerfettoWriter

    class _Full(io.BytesIO):
        name = "full.pftrace"

        def write(self, data: object) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

    writer = PerfettoWriter(_Full())
    writer.process(700, "android.hardware.neuralnetworks@1.3-service-npu")
    thread = SimThread(700, 701, "HwBinder:700_1")
    for i in range(FLUSH_BYTES // 20):
        writer.begin(i * 1000, thread, "[NN_LD_PE]SampleDriver::execute")
        writer.end(i * 1000 + 500, thread)
    with pytest.raises(OutputError, match=r"full\.pftrace: cannot write the trace: No space left"):
        writer.close()


def _json_lines(text: str) -> list[str]:
    """The event lines of a Chrome JSON trace nnemu wrote (between its first and last line)."""
    head, body = text.split("\n", 1)
    assert head == '{"displayTimeUnit": "ns", "traceEvents": ['
    assert body.endswith("\n]}\n")
    return body.removesuffix("\n]}\n").split(",\n")


def test_chrome_json_events_are_json_dumps_sorted(two_apps: dict[str, Path]):
    """Each event of the .json is on its own line, as ``json.dumps(event, sort_keys=True)`` writes it."""
    kinds: Counter[str] = Counter()
    for line in _json_lines(two_apps[".json"].read_text(encoding="utf-8")):
        event = json.loads(line)
        kinds[event["ph"]] += 1
        assert line == json.dumps(event, sort_keys=True)
    assert set(kinds) == {"M", "B", "E", "s", "f", "C"}


class _Kept(io.StringIO):
    """A text file that keeps its text when the writer closes it."""

    kept = ""

    def close(self) -> None:
        self.kept = self.getvalue()
        super().close()


def test_chrome_json_timestamps_are_the_microseconds_as_floats():
    """A timestamp is ns / 1000 as JSON writes that float, whole µs or not (and names escaped)."""
    thread = SimThread(700, 701, 'Hw"Binder')
    stamps = (0, 1_500, 2_000, 1_000_005_000, 123_456_789_000, 10**19 + 1)
    out = _Kept()
    writer = ChromeJsonWriter(out)
    for ts in stamps:
        writer.begin(ts, thread, '[NN_LA_PE]é"x')
        writer.flow(ts, thread, 3, ts % 2 == 0)
        writer.counter(ts, 700, "memory in use", ts // 1000)
        writer.end(ts, thread)
    writer.close()
    lines = _json_lines(out.kept)
    events = [json.loads(line) for line in lines]
    assert lines == [json.dumps(event, sort_keys=True) for event in events]
    assert [e["ts"] for e in events if e["ph"] == "E"] == [ts / 1000 for ts in stamps]
    assert events[0] == {
        "ph": "M",
        "name": "thread_name",
        "pid": 700,
        "tid": 701,
        "args": {"name": 'Hw"Binder'},
    }


def test_chrome_json_timestamps_across_milliseconds_and_seconds():
    """Whole-µs stamps close together (the same µs, ms or second as the one before) and far
    apart are each ns / 1000 as JSON writes that float."""
    rng = random.Random(26)
    ts, stamps = 999_000_000, []
    for _ in range(3000):
        ts += rng.choice((0, 0, 1, 7, 400, 999, 1000, 1001, 250_000, 3_000_000)) * 1000
        stamps.append(ts)
    thread = SimThread(700, 701, "HwBinder")
    out = _Kept()
    writer = ChromeJsonWriter(out)
    for ts in stamps:
        writer.begin(ts, thread, "[NN_LA_PE]x")
    writer.close()
    events = [json.loads(line) for line in _json_lines(out.kept)]
    assert [e["ts"] for e in events if e["ph"] == "B"] == [ts / 1000 for ts in stamps]


class _KeptBytes(io.BytesIO):
    """A binary file that keeps its bytes when the writer closes it."""

    kept = b""

    def close(self) -> None:
        self.kept = self.getvalue()
        super().close()


def test_pftrace_timestamps_of_every_varint_length():
    """Each event's packet carries its own timestamp, from 0 to past 2^56 ns (one to nine
    varint bytes), an event at the time of the one before included."""
    from nnemu.tracer._perfetto_writer import PerfettoWriter

    thread = SimThread(700, 701, "HwBinder")
    stamps = [0, 127, 128, 16_383, 16_384, 2**35 - 1, 2**35, 2**42 + 3, 2**49 + 5, 2**56 + 7]
    out = _KeptBytes()
    writer = PerfettoWriter(out)
    for ts in stamps:
        writer.begin(ts, thread, "[NN_LA_PE]x")
        writer.counter(ts, 700, "memory in use", ts % 1000)
        writer.end(ts, thread)
    writer.close()
    events = [p for p in packets(out.kept) if p.HasField("track_event")]
    assert [p.timestamp for p in events] == [ts for ts in stamps for _ in range(3)]
