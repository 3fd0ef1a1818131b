"""Extraction of the application-level work from real and nnemu traces."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from nnemu import run
from nnemu.errors import TraceFormatError
from nnemu.hal import HalVersion
from nnemu.replay import ARRIVALS_LA, build_replay, choose_model, extract_plan
from nnemu.replay._build import MAX_UNFINISHED_THREADS
from nnemu.scenario import CPU_DEVICE_NAME, ExecutionMode, WorkloadKind
from tests.unit.replay.helpers import OMR1, QUICKSTART, record


def test_omr1_one_app_five_executions_on_a_hal10_driver():
    """The Android 8.1 trace: app 27005 issued 5 executions at the recorded gaps to driver 756 (HAL 1.0)."""
    plan = extract_plan(str(OMR1))
    assert plan.format == "systrace"
    assert [app.pid for app in plan.apps] == [27005]
    app = plan.apps[0]
    assert app.arrival_source == ARRIVALS_LA
    gaps_us = [(b - a) // 1000 for a, b in itertools.pairwise(app.arrivals_ns)]
    assert gaps_us == [793_597, 658_493, 691_891, 813_249]
    assert app.model_name == "mobilenet_quantized"
    assert app.execution_mode is None  # no runtime marks in an 8.1 trace
    assert app.compilations == 5
    assert app.driver_pids == (756,)
    assert app.driver_executions == (5,)
    assert [d.pid for d in plan.drivers] == [756]
    driver = plan.drivers[0]
    assert driver.hal_version is HalVersion.V1_0
    assert driver.name == "hvx"  # android.hardware.neuralnetworks@1.0-service-hvx
    # execute::server begin -> IExecutionCallback::notify::client begin
    assert tuple(driver.execution_ns) == (
        20_730_000,
        10_519_000,
        14_184_000,
        15_983_000,
        13_012_000,
    )
    assert driver.median_execution_ns == 14_184_000


def test_omr1_scenario_replays_the_arrivals_on_a_derived_device():
    """The built scenario has a trace workload with the gaps, a HAL 1.0 device and mobilenet_v1 quant8."""
    built = build_replay(extract_plan(str(OMR1)))
    scenario = built.scenario
    (app,) = scenario.apps
    assert app.workload.kind is WorkloadKind.TRACE
    assert app.workload.arrivals_ms == (0.0, 793.597, 1452.09, 2143.981, 2957.23)
    assert app.devices == ("hvx",)
    assert app.execution_mode is ExecutionMode.SYNC
    (device,) = scenario.devices
    assert device.hal_version is HalVersion.V1_0
    assert device.performance.quant8.exec_time < 1.0
    model = scenario.model(app.model)
    assert (model.preset, model.dtype) == ("mobilenet_v1", "quant8")
    assert any("sync (no runtime marks" in note.text for note in built.assumed)
    assert any("no priority in the trace" in note.text for note in built.assumed)


def test_replayed_omr1_driver_time_matches_the_recording(tmp_path: Path):
    """Replaying omr1 gives driver executions whose median is within 1% of the recorded one."""
    plan = extract_plan(str(OMR1))
    out = tmp_path / "replay.html"
    report = record(build_replay(plan).scenario, out)
    assert report.data["apps"]["app-27005"]["completed"] == 5
    again = extract_plan(str(out))
    recorded = plan.drivers[0].median_execution_ns
    replayed = again.drivers[0].median_execution_ns
    assert recorded is not None
    assert replayed is not None
    assert abs(replayed - recorded) <= recorded * 0.01
    assert again.drivers[0].hal_version is HalVersion.V1_0


def test_a_driver_of_a_newer_hal_than_nnemu_knows_replays_as_the_newest(tmp_path: Path):
    """Server methods of a future HAL 1.4 (``execute_1_4``) give a 1.3 driver, not 1.0."""
    original = tmp_path / "q.txt"
    record(QUICKSTART, original)
    text = original.read_text(encoding="utf-8")
    assert "_1_3::server" in text
    future = tmp_path / "future.txt"
    future.write_text(text.replace("_1_3::", "_1_4::"), encoding="utf-8")
    assert extract_plan(str(future)).drivers[0].hal_version is HalVersion.V1_3


@pytest.mark.parametrize("suffix", [".html", ".txt", ".json"])
def test_nnemu_trace_round_trip_reproduces_count_and_arrivals(tmp_path: Path, suffix: str):
    """Replaying the quickstart's own trace issues 30 executions 33.3 ms apart, as recorded."""
    original = tmp_path / f"q{suffix}"
    record(QUICKSTART, original)
    plan = extract_plan(str(original))
    (app,) = plan.apps
    assert app.name == "camera"
    assert app.execution_mode is ExecutionMode.SYNC
    assert plan.drivers[0].hal_version is HalVersion.V1_3
    if suffix == ".json":
        assert plan.drivers[0].name == "npu"  # the JSON trace names processes
    replayed = tmp_path / f"r{suffix}"
    report = record(build_replay(plan).scenario, replayed)
    assert report.data["apps"]["camera"]["completed"] == 30
    again = extract_plan(str(replayed)).apps[0]
    assert len(again.arrivals_ns) == 30
    gaps = [b - a for a, b in itertools.pairwise(again.arrivals_ns)]
    assert gaps == [33_300_000] * 29
    assert gaps == [b - a for a, b in itertools.pairwise(app.arrivals_ns)]


def test_model_names_map_to_presets():
    """[NN_LA_PO] names choose the preset: mobilenet + quant -> quant8, unknown -> assumed v1."""
    assert choose_model("mobilenet_quantized").preset == "mobilenet_v1"
    assert choose_model("mobilenet_quantized").dtype == "quant8"
    assert choose_model("MobileNet_v2_float").preset == "mobilenet_v2"
    assert choose_model("camera").recognised is False
    assert choose_model(None).preset == "mobilenet_v1"


def test_trace_without_executions_is_bad_input(tmp_path: Path):
    """A trace with no NNAPI execution raises TraceFormatError (exit 2 on the command line)."""
    path = tmp_path / "t.txt"
    path.write_text(
        "# tracer: nop\n"
        "  a-1 (1) [000] ...1 1.000000: tracing_mark_write: B|1|something\n"
        "  a-1 (1) [000] ...1 1.000100: tracing_mark_write: E|1\n"
    )
    with pytest.raises(TraceFormatError, match="no NNAPI execution"):
        extract_plan(str(path))


def test_unclosed_sections_nested_on_one_thread_are_one_in_flight(tmp_path: Path):
    """10,000 [NN_LA_PE] begins without ends on one thread replay as one thread, quickly."""
    rows = "".join(
        f"  app-9 (    9) [000] ...1 {1 + i * 1e-6:.6f}: tracing_mark_write: B|9|[NN_LA_PE]r{i}\n"
        for i in range(10_000)
    )
    path = tmp_path / "open.txt"
    path.write_text("# tracer: nop\n#\n" + rows)
    plan = extract_plan(str(path))
    (app,) = plan.apps
    assert len(app.arrivals_ns) == 10_000
    assert app.max_in_flight == 1


def _open_on_threads(tmp_path: Path, count: int, closed: int = 0) -> Path:
    """A trace of ``count`` [NN_LA_PE] begins on as many threads, the first ``closed`` ended."""
    rows = [
        f"  app-{100 + i} (    9) [000] ...1 {1 + i * 1e-6:.6f}: tracing_mark_write: B|9|[NN_LA_PE]r\n"
        for i in range(count)
    ]
    rows += [
        f"  app-{100 + i} (    9) [000] ...1 {2 + i * 1e-6:.6f}: tracing_mark_write: E|9\n"
        for i in range(closed)
    ]
    path = tmp_path / "open.txt"
    path.write_text("# tracer: nop\n#\n" + "".join(rows))
    return path


def test_executions_that_never_end_share_a_bounded_number_of_threads(tmp_path: Path):
    """200 executions left open on 200 threads replay on 64 threads, with a warning saying why."""
    plan = extract_plan(str(_open_on_threads(tmp_path, 200, closed=10)))
    (app,) = plan.apps
    assert (app.max_in_flight, app.never_ended, len(app.latencies_ns)) == (200, 190, 10)
    built = build_replay(plan)
    assert built.scenario.apps[0].threads == MAX_UNFINISHED_THREADS
    (warning,) = [w for w in built.warnings if ".threads:" in w]
    assert warning.startswith(
        f"apps.{app.name}.threads: 64, not 200: 190 of its executions never end"
    )


def test_few_executions_in_flight_at_the_cut_keep_their_threads(tmp_path: Path):
    """A trace cut with 5 executions open on 5 threads replays them on 5 threads, no warning."""
    plan = extract_plan(str(_open_on_threads(tmp_path, 5)))
    built = build_replay(plan)
    assert built.scenario.apps[0].threads == 5
    assert [w for w in built.warnings if ".threads:" in w] == []


def test_json_trace_is_streamed_and_reads_as_the_whole_document(tmp_path: Path, monkeypatch):
    """A JSON trace of one event per line is read line by line (never json.load) into the plan
    that the same events give as one document, and a truncated file is still refused."""
    import json

    import attrs

    lined = tmp_path / "q.json"
    record(QUICKSTART, lined)
    document = tmp_path / "one-line.json"
    document.write_text(json.dumps(json.loads(lined.read_text())), encoding="utf-8")
    from_document = extract_plan(str(document))

    def no_load(*args: object, **kwargs: object) -> object:
        raise AssertionError("json.load called on a one-event-per-line file")

    with monkeypatch.context() as patch:
        patch.setattr(json, "load", no_load)
        streamed = extract_plan(str(lined))
    assert attrs.evolve(streamed, source=from_document.source) == from_document
    cut = tmp_path / "cut.json"
    cut.write_text(lined.read_text().rsplit("\n", 2)[0] + "\n", encoding="utf-8")
    with pytest.raises(TraceFormatError, match="not a JSON trace"):
        extract_plan(str(cut))


@pytest.mark.parametrize(
    ("service", "device"),
    [
        ("qti-dsp", "qti-dsp"),
        ("google.edgetpu", "google_edgetpu"),
        ("nnapi-reference", "nnapi-reference-700"),
    ],
)
def test_a_driver_is_named_after_its_service_whatever_it_is_called(
    tmp_path: Path, service: str, device: str
):
    """A driver service of any name becomes a device of that name (made safe; the runtime's
    CPU device name gets the pid added), and the replay runs the executions on it."""
    trace = tmp_path / "npu.html"
    record(QUICKSTART, trace)
    renamed = tmp_path / "renamed.html"
    renamed.write_text(
        trace.read_text(encoding="utf-8").replace("1.3-service-npu", f"1.3-service-{service}"),
        encoding="utf-8",
    )
    plan = extract_plan(str(renamed))
    assert [driver.name for driver in plan.drivers] == [device]
    scenario = build_replay(plan).scenario
    assert [spec.name for spec in scenario.devices] == [device]
    assert scenario.apps[0].devices == (device,)
    report = run(scenario)
    assert report.data["devices"][device]["executions"] == 30
    assert report.data["devices"][CPU_DEVICE_NAME]["executions"] == 0


def test_an_app_may_be_called_like_the_cpu_device(tmp_path: Path):
    """Only device names are reserved: an app process named ``nnapi-reference`` keeps its name."""
    trace = tmp_path / "app.html"
    record(QUICKSTART, trace)
    renamed = tmp_path / "renamed.html"
    renamed.write_text(
        trace.read_text(encoding="utf-8").replace("camera", CPU_DEVICE_NAME), encoding="utf-8"
    )
    (app,) = extract_plan(str(renamed)).apps
    assert app.name == CPU_DEVICE_NAME


def test_a_process_name_no_trace_format_carries_becomes_a_name_that_does(tmp_path: Path):
    """A trace's process name holding '/', '<' or an invisible character (a Chrome JSON
    ``process_name``) names the replayed app by the scenario's one name rule
    (``nnemu.tracer.safe_name``): the replay builds and runs, and writes its trace."""
    import json

    from nnemu.tracer import name_problem

    trace = tmp_path / "q.json"
    record(QUICKSTART, trace)
    data = json.loads(trace.read_text(encoding="utf-8"))
    for event in data["traceEvents"]:
        if event.get("name") == "process_name" and event["args"]["name"] == "camera":
            event["args"]["name"] = "com.example/cam<era\u200b"
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps(data), encoding="utf-8")
    (app,) = extract_plan(str(odd)).apps
    assert app.name == "com_example_cam_era"
    assert name_problem(app.name) is None
    built = build_replay(extract_plan(str(odd)))
    assert [a.name for a in built.scenario.apps] == ["com_example_cam_era"]
