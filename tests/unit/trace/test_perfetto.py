"""Reading Perfetto protobuf traces: detection, the typed records, ftrace rows, and bad input."""

from __future__ import annotations

import gzip
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import strategies as st

from nnemu.errors import TraceFormatError
from nnemu.parser import NEGATIVE_BY_CONTRACT
from nnemu.trace import (
    Counter,
    Flow,
    PerfettoLines,
    Print,
    ProcessName,
    SliceBegin,
    SliceEnd,
    ThreadName,
    TraceFormat,
    detect_format,
    file_format,
    read_perfetto,
)
from tests.commands import run_cli, run_parse, trace_processor_shell
from tests.perfetto_traces import pb2, systrace_to_perfetto
from tests.tiers import tiered

REPO = Path(__file__).resolve().parents[3]
OMR1 = REPO / "tests/data/omr1.html"
ANDROID_TABLE = (REPO / "tests/data/omr1.txt").read_text(encoding="utf-8")
VARIANTS = {
    "ftrace": {},
    "compact": {"compact": True},
    "track-event": {"track_event": True},
    "gzip": {"compress": True},
}


@pytest.fixture(scope="module")
def omr1_traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """omr1.html as a Perfetto protobuf trace, in each variant."""
    folder = tmp_path_factory.mktemp("omr1")
    return {
        name: systrace_to_perfetto(OMR1, folder / f"omr1-{name}.perfetto-trace", **options)
        for name, options in VARIANTS.items()
    }


def _trace(path: Path, *packets: object, compress: bool = False) -> Path:
    trace = pb2.Trace()
    trace.packet.extend(packets)
    data = trace.SerializeToString()
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


def _print(ts: int, tid: int, text: str, cpu: int = 0) -> object:
    packet = pb2.TracePacket()
    packet.ftrace_events.cpu = cpu
    event = packet.ftrace_events.event.add()
    event.timestamp, event.pid, event.print.buf = ts, tid, text
    return packet


def _tree(*threads: tuple[int, int, str], processes: tuple[tuple[int, str], ...] = ()) -> object:
    packet = pb2.TracePacket()
    for pid, name in processes:
        entry = packet.process_tree.processes.add()
        entry.pid = pid
        entry.cmdline.append(name)
    for tid, tgid, name in threads:
        entry = packet.process_tree.threads.add()
        entry.tid, entry.tgid, entry.name = tid, tgid, name
    return packet


def by_contract_only(err: str) -> bool:
    """Whether every line of ``err`` is a negative cell the contract's own rules give."""
    return all(line.endswith(NEGATIVE_BY_CONTRACT) for line in err.splitlines())


def _messages(err: str) -> list[str]:
    """The messages of ``err``'s diagnostics, without where they are."""
    return [line.split(": warning: ", 1)[-1] for line in err.splitlines()]


@pytest.mark.parametrize("variant", VARIANTS)
def test_omr1_as_perfetto_parses_to_androids_table(omr1_traces: dict[str, Path], variant: str):
    """A phone's trace converted to protobuf gives, byte for byte, the table Android's parser gave."""
    code, out, err = run_parse(omr1_traces[variant])
    assert code == 0
    assert out == ANDROID_TABLE
    assert by_contract_only(err)  # omr1's negative IPC Totals, said as for the HTML


def test_omr1_as_perfetto_json_and_detail_equal_the_systrace_form(omr1_traces: dict[str, Path]):
    """--json and --print-detail give what they give for the systrace HTML."""
    for options in ({"as_json": True}, {"print_detail": True}):
        code, out, err = run_parse(omr1_traces["ftrace"], **options)
        html_code, html_out, html_err = run_parse(OMR1, **options)
        assert (code, out) == (html_code, html_out)
        # The same warnings, at byte offsets instead of lines.
        assert _messages(err) == _messages(html_err)


@pytest.mark.parametrize("variant", ["ftrace", "gzip"])
def test_perfetto_traces_are_told_by_content(omr1_traces: dict[str, Path], variant: str):
    """A protobuf trace is recognised by its bytes, whatever its name, compressed or not."""
    renamed = omr1_traces[variant].parent / f"renamed-{variant}.dat"
    shutil.copy(omr1_traces[variant], renamed)
    assert file_format(str(renamed)) is TraceFormat.PERFETTO


@pytest.mark.parametrize(
    "head",
    [
        b"\n\n# tracer: nop\n",  # text starting with a blank line (0x0a, as a packet tag)
        b"\n\x85\x02\x00\x01",  # field 0 inside the packet
        b"\x12\x02\x08\x01\x00",  # a protobuf message, but not Trace.packet records
        gzip.compress(b"\x00\x01\x02 binary", mtime=0),
    ],
)
def test_what_is_not_a_perfetto_trace_is_not_taken_for_one(head: bytes):
    """Text, other binary files and other protobuf messages are not detected as Perfetto traces."""
    assert detect_format(head) is not TraceFormat.PERFETTO


def test_read_perfetto_gives_typed_records_in_time_order(tmp_path: Path):
    """Prints become slices, counters and prints; names come from process_tree; CPUs interleave."""
    path = _trace(
        tmp_path / "t.pftrace",
        _tree((11, 10, "worker"), processes=((10, "com.example.app"),)),
        _print(3000, 11, "E|10\n", cpu=1),
        _print(1000, 11, "B|10|outer\n", cpu=0),
        _print(2000, 11, "C|10|queue|4\n", cpu=0),
        _print(2500, 11, "trace_event_clock_sync: parent_ts=1.5\n", cpu=0),
    )
    data = path.read_bytes()
    offsets = [0]  # every packet here is shorter than 128 bytes: a one-byte length
    while offsets[-1] < len(data):
        offsets.append(offsets[-1] + 2 + data[offsets[-1] + 1])
    assert list(read_perfetto(str(path))) == [
        ProcessName(pid=10, name="com.example.app", offset=0),
        ThreadName(pid=10, tid=11, name="worker", offset=0),
        SliceBegin(ts=1000, pid=10, tid=11, name="outer", offset=offsets[2]),
        Counter(ts=2000, pid=10, tid=11, name="queue", value=4.0, offset=offsets[3]),
        Print(
            ts=2500,
            pid=10,
            tid=11,
            cpu=0,
            text="trace_event_clock_sync: parent_ts=1.5",
            offset=offsets[4],
        ),
        SliceEnd(ts=3000, pid=10, tid=11, offset=offsets[1]),
    ]


def test_track_events_give_slices_flows_and_counters(tmp_path: Path):
    """TrackEvent slices (interned names), instants, flow ids and counter tracks are read."""
    packets = []

    def packet(ts: int = 0, *, clear: bool = False) -> object:
        made = pb2.TracePacket()
        made.trusted_packet_sequence_id = 7
        made.timestamp = ts
        if clear:
            made.sequence_flags = 1
        packets.append(made)
        return made

    process = packet().track_descriptor
    process.uuid, process.process.pid, process.process.process_name = 5, 5, "driver"
    thread = packet().track_descriptor
    thread.uuid, thread.parent_uuid = 50, 5
    thread.thread.pid, thread.thread.tid, thread.thread.thread_name = 5, 6, "HwBinder:5_1"
    counter = packet().track_descriptor
    counter.uuid, counter.parent_uuid, counter.name = 99, 5, "compute units busy"
    counter.counter.SetInParent()
    begin = packet(100, clear=True)
    begin.interned_data.event_names.add(iid=1, name="HIDL::IDevice::prepareModel::server")
    begin.track_event.type = pb2.TrackEvent.TYPE_SLICE_BEGIN
    begin.track_event.track_uuid, begin.track_event.name_iid = 50, 1
    begin.track_event.terminating_flow_ids.append(3)
    begin.track_event.flow_ids.append(4)
    value = packet(150)
    value.track_event.type, value.track_event.track_uuid = pb2.TrackEvent.TYPE_COUNTER, 99
    value.track_event.counter_value = 2
    instant = packet(160)
    instant.track_event.type, instant.track_event.track_uuid = pb2.TrackEvent.TYPE_INSTANT, 50
    instant.track_event.name = "mark"
    end = packet(200)
    end.track_event.type, end.track_event.track_uuid = pb2.TrackEvent.TYPE_SLICE_END, 50
    events = list(read_perfetto(str(_trace(tmp_path / "te.pftrace", *packets))))
    timed = [(type(e).__name__, getattr(e, "ts", None)) for e in events]
    assert timed == [
        ("ProcessName", None),
        ("ThreadName", None),
        ("SliceBegin", 100),
        ("Flow", 100),
        ("Flow", 100),
        ("Counter", 150),
        ("SliceBegin", 160),
        ("SliceEnd", 160),
        ("SliceEnd", 200),
    ]
    assert events[2] == SliceBegin(
        ts=100, pid=5, tid=6, name="HIDL::IDevice::prepareModel::server", offset=events[2].offset
    )
    assert [(f.flow_id, f.terminating) for f in events if isinstance(f, Flow)] == [
        (4, False),
        (3, True),
    ]
    assert [(c.pid, c.tid, c.name, c.value) for c in events if isinstance(c, Counter)] == [
        (5, None, "compute units busy", 2.0)
    ]


def test_rows_carry_thread_names_tgid_and_exact_nanoseconds(tmp_path: Path):
    """Each print becomes an ftrace row with its thread's name, process and ns timestamp."""
    path = _trace(
        tmp_path / "t.pftrace",
        _tree((11, 10, "nn-worker-1")),
        _print(1_034_700_747_177_000, 11, "B|10|[NN_LD_PC]execute\n", cpu=3),
        _print(1_034_700_747_177_001, 12, "E\n", cpu=2),
    )
    assert list(PerfettoLines(str(path))) == [
        "# tracer: nop\n",
        "     nn-worker-1-11    (   10) [000] .... 1034700.747177:"
        " tracing_mark_write: B|10|[NN_LD_PC]execute\n",
        "           <...>-12    (-----) [000] .... 1034700.747177001: tracing_mark_write: E\n",
    ]


def test_truncated_trace_warns_at_the_packet_and_keeps_what_came_before(
    omr1_traces: dict[str, Path], tmp_path: Path
):
    """A trace cut inside a packet is read up to that packet, with a warning at its byte offset."""
    data = omr1_traces["ftrace"].read_bytes()
    cut = tmp_path / "cut.pftrace"
    cut.write_bytes(data[: len(data) - 100])
    code, out, err = run_parse(cut)
    assert code == 0
    assert out.startswith("B|27005|[NN_LA_PO]mobilenet_quantized")
    err = "".join(line for line in err.splitlines(keepends=True) if not by_contract_only(line))
    assert err.startswith(f"{cut}: byte ")
    assert "warning: truncated packet:" in err
    assert "the trace is read up to here" in err
    offset = int(err.split("byte ", 1)[1].split(":", 1)[0])
    assert data[offset] == 0x0A
    assert offset > len(data) - 100_000


def test_a_truncated_first_packet_is_an_error_with_its_offset(tmp_path: Path):
    """A trace whose first packet is cut off exits 2 with ``file: byte 0: error``."""
    path = _trace(tmp_path / "t.pftrace", _tree((11, 10, "worker")))
    path.write_bytes(path.read_bytes()[:-3])
    code, out, err = run_parse(path)
    assert (code, out) == (2, "")
    assert err.startswith(f"{path}: byte 0: error: not a Perfetto trace: truncated packet:")


def test_an_undecodable_packet_after_good_ones_is_a_warning(tmp_path: Path):
    """A packet whose inner message is corrupt ends the reading with a warning at its offset."""
    path = _trace(
        tmp_path / "t.pftrace",
        _print(1000, 11, "B|10|[NN_LA_PO]model\n"),
        _print(2000, 11, "E|10\n"),
    )
    good = path.read_bytes()
    path.write_bytes(good + b"\x0a\x05\x12\x03\x0a\x10\x01")
    events = []
    problems: list[tuple[int, str]] = []
    for event in read_perfetto(str(path), on_problem=lambda *p: problems.append(p)):
        events.append(event)
    assert [type(e) for e in events] == [SliceBegin, SliceEnd]
    assert problems[0][0] == len(good)
    assert problems[0][1].startswith("undecodable packet")


def test_an_unknown_field_of_trace_is_skipped_with_a_warning(tmp_path: Path):
    """A record that is not Trace.packet is skipped; the packets after it are read."""
    first = _trace(tmp_path / "a.pftrace", _print(1000, 11, "B|10|x\n")).read_bytes()
    second = _trace(tmp_path / "b.pftrace", _print(2000, 11, "E|10\n")).read_bytes()
    path = tmp_path / "t.pftrace"
    path.write_bytes(first + b"\x10\x2a" + second)
    problems: list[tuple[int, str]] = []
    events = list(read_perfetto(str(path), on_problem=lambda *p: problems.append(p)))
    assert [type(e) for e in events] == [SliceBegin, SliceEnd]
    assert problems == [(len(first), "unknown field in the Trace message: skipped")]


@pytest.mark.parametrize(
    "content",
    [b"\x0a\x05\x12\x03\x0a\x10\x01", b"\x0a\x10\x08\x81\x01"],
    ids=["corrupt", "cut"],
)
def test_garbage_that_looks_like_a_trace_exits_2_with_an_offset(tmp_path: Path, content: bytes):
    """A file whose only packet is corrupt (or impossibly long) exits 2, never a traceback."""
    path = tmp_path / "g.pftrace"
    path.write_bytes(content)
    code, out, err = run_parse(path)
    assert (code, out) == (2, "")
    assert err.startswith(f"{path}: byte 0: error: not a Perfetto trace")


def test_binary_garbage_is_refused_as_not_a_trace(tmp_path: Path):
    """A binary file that is no Perfetto trace (here a 2 GiB first packet) says so and exits 2."""
    path = tmp_path / "g.pftrace"
    path.write_bytes(b"\x0a\x80\x80\x80\x80\x08" + bytes(range(256)) * 4)
    code, _, err = run_parse(path)
    assert code == 2
    assert "binary and not a Perfetto protobuf trace" in err


def test_a_cut_gzip_stream_keeps_what_was_read(omr1_traces: dict[str, Path], tmp_path: Path):
    """A gzip-compressed trace cut short is read up to the cut, with a warning."""
    data = omr1_traces["gzip"].read_bytes()
    cut = tmp_path / "cut.pftrace.gz"
    cut.write_bytes(data[: len(data) * 9 // 10])
    code, out, err = run_parse(cut)
    assert code == 0, err
    assert out.startswith("B|27005|[NN_LA_PO]mobilenet_quantized")
    assert "warning: " in err
    assert "the trace is read up to here" in err


def test_missing_perfetto_package_says_how_to_install_it(
    omr1_traces: dict[str, Path], monkeypatch: pytest.MonkeyPatch
):
    """Without the perfetto package, reading a protobuf trace exits 2 with the pip command."""
    import nnemu.trace._perfetto as module

    def missing() -> object:
        raise ImportError("No module named 'perfetto'")

    monkeypatch.setattr(module, "_pb2", missing)
    code, out, err = run_parse(omr1_traces["ftrace"])
    assert (code, out) == (2, "")
    assert "pip install 'nnemu[perfetto]'" in err
    with pytest.raises(TraceFormatError):
        list(read_perfetto(str(omr1_traces["ftrace"])))


def test_query_loads_the_same_slices_as_from_the_systrace_form(omr1_traces: dict[str, Path]):
    """``nnemu query`` on the protobuf trace gives the slices (ts, dur, depth, name, tid) of the HTML."""
    sql = (
        "select s.ts, s.dur, s.depth, s.name, t.tid from slice s"
        " join thread_track tt on s.track_id = tt.id join thread t using (utid)"
        " order by s.ts, t.tid, s.depth"
    )
    html = run_cli("query", "--csv", str(OMR1), sql)
    for variant in ("ftrace", "track-event"):
        code, out, _ = run_cli("query", "--csv", str(omr1_traces[variant]), sql)
        assert code == 0
        assert out == html[1]
        assert out.count("\n") == 6101


def test_replay_plans_the_same_run_from_the_protobuf_trace(omr1_traces: dict[str, Path]):
    """``nnemu replay -n`` plans the same apps, arrivals and driver as from the HTML."""
    _, html_plan, _ = run_cli("replay", "-n", str(OMR1))
    code, plan, err = run_cli("replay", "-n", str(omr1_traces["compact"]))
    assert code == 0, err
    assert plan.split("\n", 1)[0].endswith("(perfetto): 1 app, 1 driver;"
                                           " time 0 = first execution at 1034718.370141 s")  # fmt: skip
    body = [line for line in plan.splitlines()[1:] if not line.startswith("scenario ")]
    expected = [line for line in html_plan.splitlines()[1:] if not line.startswith("scenario ")]
    assert body == expected


def test_verify_reads_back_a_run_converted_to_protobuf(tmp_path: Path):
    """The ground truth agrees with the parse of a run's trace in its protobuf form."""
    from nnemu.parser import parse_file
    from nnemu.scenario import load_scenario
    from nnemu.tracer import GroundTruth
    from nnemu.verify import compare, run_with_truth

    truth = GroundTruth()
    html = tmp_path / "run.html"
    scenario = load_scenario(REPO / "scenarios" / "two_apps_one_npu.yaml")
    run_with_truth(scenario, truth, trace=str(html))
    converted = systrace_to_perfetto(
        html, tmp_path / "run.perfetto-trace", compact=True, per_cpu=False
    )
    result = compare(parse_file(converted), truth.runs)
    assert result.passed
    assert parse_file(converted) == parse_file(html)


def _trace_processor() -> str:
    return trace_processor_shell()


@pytest.mark.parametrize("variant", VARIANTS)
def test_trace_processor_reads_the_fixture_like_the_html(
    omr1_traces: dict[str, Path], variant: str, tmp_path: Path
):
    """Perfetto's own trace processor finds the same slices (count, depth) in the fixture as in the HTML."""
    binary = _trace_processor()
    query = tmp_path / "q.sql"
    query.write_text("select count(*), max(depth), count(distinct name) from slice;\n")

    def answer(path: Path) -> str:
        done = subprocess.run(
            [binary, "-q", str(query), str(path)], capture_output=True, check=True, timeout=300
        )
        return done.stdout.decode().strip().splitlines()[-1]

    assert answer(omr1_traces[variant]) == answer(OMR1) == "6100,3,93"


def test_replay_warns_of_a_truncated_protobuf_trace(omr1_traces: dict[str, Path], tmp_path: Path):
    """``nnemu replay -n`` on a cut protobuf trace plans from what was read and warns on stderr
    where it stopped (``FILE: byte N: warning: truncated packet ...``)."""
    data = omr1_traces["ftrace"].read_bytes()
    cut = tmp_path / "cut.perfetto-trace"
    cut.write_bytes(data[:-1000])
    code, plan, err = run_cli("replay", "-n", str(cut))
    assert code == 0, err
    assert f"{cut}: byte " in err
    assert ": warning: truncated packet" in err
    assert "truncated packet" not in plan


def test_verify_keeps_and_reads_back_a_pftrace(tmp_path: Path):
    """``nnemu verify --trace x.pftrace`` writes a Perfetto trace and the parse of it agrees."""
    trace = tmp_path / "run.pftrace"
    scenario = REPO / "scenarios" / "two_apps_one_npu.yaml"
    code, out, err = run_cli("verify", str(scenario), "--trace", str(trace))
    assert code == 0, out + err
    assert file_format(str(trace)) is TraceFormat.PERFETTO
    assert out.rstrip().endswith("verify: ok")


def _seed_trace(path: Path) -> bytes:
    """A small trace of every kind of packet the reader reads."""
    packets = [
        _tree((11, 10, "worker"), processes=((10, "com.example.app"), (20, "driver"))),
        _print(1000, 11, "B|10|[NN_LA_PO]model\n"),
        _print(1100, 11, "B|10|[NN_LA_PE]execute\n", cpu=1),
        _print(1200, 11, "C|10|queue|3\n"),
        _print(1300, 11, "E|10\n", cpu=1),
        _print(1400, 11, "E|10\n"),
    ]
    thread = pb2.TracePacket()
    thread.trusted_packet_sequence_id = 2
    thread.track_descriptor.uuid = 21
    thread.track_descriptor.thread.pid, thread.track_descriptor.thread.tid = 20, 21
    thread.track_descriptor.thread.thread_name = "HwBinder:20_1"
    begin = pb2.TracePacket()
    begin.trusted_packet_sequence_id, begin.timestamp, begin.sequence_flags = 2, 1150, 3
    begin.interned_data.event_names.add(iid=1, name="HIDL::IPreparedModel::execute::server")
    begin.track_event.type = pb2.TrackEvent.TYPE_SLICE_BEGIN
    begin.track_event.track_uuid, begin.track_event.name_iid = 21, 1
    begin.track_event.flow_ids.append(9)
    end = pb2.TracePacket()
    end.trusted_packet_sequence_id, end.timestamp, end.sequence_flags = 2, 1250, 2
    end.track_event.type, end.track_event.track_uuid = pb2.TrackEvent.TYPE_SLICE_END, 21
    return _trace(path, *packets, thread, begin, end).read_bytes()


byte_edits = st.lists(
    st.tuples(
        st.floats(0, 1, exclude_max=True),
        st.sampled_from(["flip", "set", "delete", "insert", "cut"]),
        st.integers(0, 255),
    ),
    min_size=1,
    max_size=4,
)


@tiered(edits=byte_edits, compress=st.booleans(), quick=20, wide=60, derandomize=True)
def test_mutated_protobuf_traces_end_in_a_result_or_a_message(
    edits: list[tuple[float, str, int]], compress: bool
):
    """A protobuf trace with bytes flipped, set, deleted, inserted or cut gives parse, query and
    replay -n a result or a message (exit 0 or 2), never a traceback."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "mutant.pftrace"
        data = bytearray(_seed_trace(path))
        for where, action, value in edits:
            at = int(where * len(data))
            if action == "flip" and data:
                data[at] ^= 1 << (value % 8)
            elif action == "set" and data:
                data[at] = value
            elif action == "delete":
                del data[at : at + 1 + value % 8]
            elif action == "insert":
                data[at:at] = bytes([value]) * (1 + value % 4)
            else:
                del data[at:]
        path.write_bytes(gzip.compress(bytes(data), mtime=0) if compress else bytes(data))
        for argv in (
            ["parse", str(path)],
            ["query", str(path), "select count(*), max(depth) from slice"],
            ["replay", "-n", str(path)],
        ):
            code, _, err = run_cli(*argv)
            assert code in (0, 2), (argv, err)
            assert "Traceback" not in err


def test_events_further_out_of_order_than_the_window_are_kept_with_a_warning(tmp_path: Path):
    """Records displaced by more than the sort window still all come, with one warning."""
    late = [_print(ts, 11, "E|10\n") for ts in (5000, 6000, 7000)]
    path = _trace(tmp_path / "t.pftrace", *late, *(_print(ts, 11, "B|10|x\n") for ts in (1, 2, 3)))
    problems: list[tuple[int, str]] = []
    events = list(read_perfetto(str(path), window=1, on_problem=lambda *p: problems.append(p)))
    assert sorted(e.ts for e in events if isinstance(e, SliceBegin | SliceEnd)) == [
        1, 2, 3, 5000, 6000, 7000
    ]  # fmt: skip
    assert [message for _, message in problems] == [
        "events more than 1 places out of time order: some are read out of order"
    ]
    in_order = list(read_perfetto(str(path)))
    assert [e.ts for e in in_order if isinstance(e, SliceBegin | SliceEnd)] == [
        1, 2, 3, 5000, 6000, 7000
    ]  # fmt: skip
