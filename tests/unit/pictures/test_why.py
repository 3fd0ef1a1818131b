"""The page's "Why" section: configuration beside counters, split bars, per-layer tables, reading."""

from __future__ import annotations

import json
import re
import tempfile
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import attrs
import pytest

from nnemu import run
from nnemu.errors import TraceFormatError
from nnemu.overrides import apply_overrides
from nnemu.parser import parse_file
from nnemu.pictures import (
    LayerTables,
    LayerTrace,
    RunPictures,
    collect,
    layer_tables,
    render_html,
    with_layer_tables,
)
from nnemu.pictures._cause import CAUSE_PARTS, small
from nnemu.pictures._common import APP_COLORS, CODE_COLORS
from nnemu.pictures._layer_sink import LayerSink
from nnemu.pictures._why import (
    SPLIT_COLORS,
    SPLIT_LABELS,
    SPLIT_PARTS,
    reading,
    split_parts,
    why_section,
)
from nnemu.report import Report
from nnemu.scenario import Scenario, load_scenario
from nnemu.sim import SimThread
from nnemu.tracer import open_trace_writer
from tests.commands import run_cli, run_parse
from tests.unit.pictures.dom import by_id, parse_page

REPO = Path(__file__).resolve().parents[3]
TWO_APPS = REPO / "scenarios/two_apps_one_npu.yaml"


class _Tables(HTMLParser):
    """The text of every cell of every table of a page, by table id, plus list items by id."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.attrs: dict[str, list[list[dict[str, str]]]] = {}
        self.items: dict[str, list[str]] = {}
        self._table: str | None = None
        self._list: str | None = None
        self._cell: list[str] | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {key: value or "" for key, value in attrs}
        if tag == "table":
            self._table = values.get("id", "")
            self.tables[self._table] = []
            self.attrs[self._table] = []
        elif tag == "tr" and self._table is not None:
            self.tables[self._table].append([])
            self.attrs[self._table].append([values])
        elif tag in ("td", "th") and self._table is not None:
            self._cell = []
            self.attrs[self._table][-1].append(values)
        elif tag == "ul":
            self._list = values.get("id", "")
            self.items[self._list] = []
        elif tag == "li":
            self._text = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._table is not None:
            self.tables[self._table][-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "table":
            self._table = None
        elif tag == "li" and self._list is not None:
            self.items[self._list].append("".join(self._text))
        elif tag == "ul":
            self._list = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        self._text.append(data)


def _tables(page: str) -> _Tables:
    parser = _Tables()
    parser.feed(page)
    parser.close()
    return parser


def _parse_printout(text: str) -> list[tuple[str, list[list[str]]]]:
    """(starting mark, rows as [layer, *cells]) of each table ``nnemu parse`` printed."""
    layers = {"Application", "Runtime", "IPC", "Driver", "CPU", "Total"}
    runs: list[tuple[str, list[list[str]]]] = []
    for line in text.splitlines():
        if line.startswith(("B|", "[NN_")):
            runs.append((line, []))
        elif line.split() and line.split()[0] in layers and len(line.split()) == 10:
            runs[-1][1].append(line.split())
    return runs


def _page_layer_runs(page: str) -> list[tuple[str, list[list[str]]]]:
    """(starting mark, rows) of each per-layer table of the page."""
    tables = _tables(page).tables
    marks = re.findall(r'<table class="layers"[^>]*><caption>.*?<code>(.*?)</code>', page)
    out = []
    for number, mark in enumerate(marks, start=1):
        rows = tables[f"layer-table-{number}"][1:]  # below the header row
        out.append((mark.replace("&amp;", "&").replace("&#x27;", "'"), rows))
    return out


@pytest.fixture(name="two_apps", scope="module")
def _two_apps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """two_apps_one_npu run three ways: with --html and --trace, with --html alone, and
    with --trace and --report alone (no page)."""
    root = tmp_path_factory.mktemp("why")
    paths = {
        "page": root / "page.html",
        "trace": root / "trace.html",
        "report": root / "report.json",
        "page_alone": root / "alone.html",
        "plain_trace": root / "plain.html",
        "plain_report": root / "plain.json",
    }
    for argv in (
        ("--html", paths["page"], "--trace", paths["trace"], "--report", paths["report"]),
        ("--html", paths["page_alone"]),
        ("--trace", paths["plain_trace"], "--report", paths["plain_report"]),
    ):
        code, _, err = run_cli("run", str(TWO_APPS), *map(str, argv))
        assert code == 0, err
    return paths


def test_page_tables_equal_nnemu_parse_of_the_runs_trace(two_apps: dict[str, Path]) -> None:
    """Every per-layer table of the page has the rows and starting mark ``nnemu parse`` prints
    for the run's trace, with --trace given and without it."""
    code, printed, err = run_parse(two_apps["trace"])
    assert code == 0, err
    expected = _parse_printout(printed)
    assert len(expected) == 2
    assert _page_layer_runs(two_apps["page"].read_text()) == expected
    assert _page_layer_runs(two_apps["page_alone"].read_text()) == expected


def test_the_page_does_not_change_the_runs_report_or_trace(two_apps: dict[str, Path]) -> None:
    """A run with --html writes the same report and trace bytes as one without it."""
    assert two_apps["report"].read_bytes() == two_apps["plain_report"].read_bytes()
    assert two_apps["trace"].read_bytes() == two_apps["plain_trace"].read_bytes()


def test_layer_source_names_the_trace_parsed(two_apps: dict[str, Path]) -> None:
    """The note above the tables names the --trace file, or says the run's systrace was parsed
    as it ran."""
    assert f"the run&#x27;s trace, {two_apps['trace']}" in two_apps["page"].read_text()
    assert (
        "a systrace of the run, parsed as it ran (not kept)" in two_apps["page_alone"].read_text()
    )


def _device_cells(page: str) -> dict[tuple[str, str], str]:
    """The device table's cells by (device, key)."""
    parsed = _tables(page)
    cells = {}
    for attributes, texts in zip(
        parsed.attrs["why-devices"], parsed.tables["why-devices"], strict=True
    ):
        for cell, text in zip(attributes[1:], texts, strict=True):
            if "data-key" in cell:
                cells[cell["data-device"], cell["data-key"]] = text
    return cells


def test_device_config_equals_the_scenarios(two_apps: dict[str, Path]) -> None:
    """The device table's configuration cells are the scenario's values, for every device."""
    scenario = load_scenario(TWO_APPS)
    cells = _device_cells(two_apps["page"].read_text())
    assert {device for device, _ in cells} == {
        *(device.name for device in scenario.devices),
        "nnapi-reference",
    }
    for spec in scenario.devices:
        perf = spec.performance
        expected = {
            "scheduler": spec.scheduler.value,
            "preemption": spec.preemption.value,
            "deadline_policy": spec.deadline_policy.value,
            "queue_limit": "none" if spec.queue_limit is None else str(spec.queue_limit),
            "compute_units": str(spec.compute_units),
            "hal_version": spec.hal_version.value,
            "performance": f"float32 {perf.float32.exec_time:g}/{perf.float32.power_usage:g};"
            f" quant8 {perf.quant8.exec_time:g}/{perf.quant8.power_usage:g}",
            "launch_us": f"{spec.cost.launch_us:g}",
            "jitter": f"{spec.cost.jitter:g}",
            "faults": "none",
        }
        assert {key: cells[spec.name, key] for key in expected} == expected
    cpu = scenario.cpu
    assert cells["nnapi-reference", "performance"] == (
        f"{cpu.ns_per_mac:g} ns per MAC, {cpu.ns_per_element:g} ns per element"
    )


def test_device_counters_equal_the_reports(two_apps: dict[str, Path]) -> None:
    """The device table's counters are the report's, for every device including the CPU path."""
    report = json.loads(two_apps["report"].read_text())
    cells = _device_cells(two_apps["page"].read_text())
    keys = (
        "executions",
        "preemptions",
        "rejected_persistent",
        "rejected_transient",
        "deadline_aborts",
        "loop_timeouts",
    )
    for name, counters in report["devices"].items():
        assert cells[name, "busy_fraction"] == f"{counters['busy_fraction'] * 100:.1f}%"
        assert {key: cells[name, key] for key in keys} == {key: str(counters[key]) for key in keys}


def test_every_app_has_its_settings_and_where_it_ran(two_apps: dict[str, Path]) -> None:
    """The app table has every app of the scenario with its priority and threads, its p95 from
    the report, and its executions on npu, which add up to the report's npu executions."""
    scenario = load_scenario(TWO_APPS)
    report = json.loads(two_apps["report"].read_text())
    rows = {row[0]: row for row in _tables(two_apps["page"].read_text()).tables["why-apps"][1:]}
    assert set(rows) == {app.name for app in scenario.apps}
    on_npu = 0
    for app in scenario.apps:
        assert rows[app.name][1] == app.priority.name
        assert rows[app.name][3] == str(app.threads)
        assert rows[app.name][8] == f"{report['apps'][app.name]['latency_ms']['p95']:.3f}"
        device, count = rows[app.name][6].split()
        assert device == "npu"
        on_npu += int(count)
    assert on_npu == report["devices"]["npu"]["executions"]


def test_split_bars_draw_the_reports_split(two_apps: dict[str, Path]) -> None:
    """Each app's bar draws the report's latency_split_ms in the path's order (the waits for an
    app thread, a binder thread, the device, preemption, then IPC, driver launch, compute,
    retry, runtime), each non-zero part with its value."""
    report = json.loads(two_apps["report"].read_text())
    page = two_apps["page"].read_text()
    for name, entry in report["apps"].items():
        split = entry["latency_split_ms"]  # the JSON's keys are sorted
        order = [*SPLIT_PARTS, *sorted(set(split) - set(SPLIT_PARTS))]
        assert set(order) == set(split)
        drawn = re.findall(rf'data-app="{name}" data-part="(\w+)" data-ms="([\d.]+)"', page)
        assert drawn == [(part, f"{split[part]:.3f}") for part in order if split[part] > 0]


def test_two_apps_reading_blames_the_per_app_scheduler(two_apps: dict[str, Path]) -> None:
    """On two_apps_one_npu the reading says the HIGH camera's p95 is worse than the LOW
    indexer's because npu's scheduler is per_app_priority, with both p95s from the report."""
    report = json.loads(two_apps["report"].read_text())
    items = _tables(two_apps["page"].read_text()).items["why-reading"]
    camera, indexer = (report["apps"][n]["latency_ms"]["p95"] for n in ("camera", "indexer"))
    assert camera > indexer
    assert items[0] == (
        f"camera (HIGH) has a worse p95 than indexer (LOW) ({camera:.2f} vs {indexer:.2f} ms):"
        " npu's scheduler is per_app_priority, where a priority only orders an app's own"
        " executions; between apps the oldest waiting execution goes first, so camera's"
        " executions wait behind indexer's."
    )


@pytest.fixture(name="library_run", scope="module")
def _library_run() -> tuple[RunPictures, Report]:
    """two_apps_one_npu run through the library, its pictures collected (no per-layer tables)."""
    scenario = load_scenario(TWO_APPS)
    box: list[RunPictures] = []
    report = run(scenario, keep_executions=True, inspect=lambda em: box.append(collect(em)))
    return box[0], report


def test_reading_follows_the_scheduler(library_run: tuple[RunPictures, Report]) -> None:
    """With npu's scheduler set to fifo the reading names fifo, not per_app_priority: the
    sentences come from the run's configuration, not from the scenario's name."""
    data, report = library_run
    assert data.why is not None
    device = attrs.evolve(data.why.devices[0], scheduler="fifo")
    fifo = attrs.evolve(data, why=attrs.evolve(data.why, devices=(device,)))
    texts = " ".join(reading(fifo, report.data))
    assert "npu's scheduler is fifo" in texts
    assert "per_app_priority" not in texts


def test_reading_is_empty_when_nothing_stands_out(library_run: tuple[RunPictures, Report]) -> None:
    """With the HIGH app faster than the LOW one, compute most of every latency, an idle
    device and no failures, the section has no reading at all."""
    data, report = library_run
    apps = {name: dict(entry) for name, entry in report.data["apps"].items()}
    apps["camera"]["latency_ms"] = {**apps["camera"]["latency_ms"], "p95": 1.0, "mean": 100.0}
    apps["indexer"]["latency_ms"] = {**apps["indexer"]["latency_ms"], "mean": 100.0}
    for entry in apps.values():
        entry["latency_split_ms"] = {"queue_wait": 10.0, "ipc": 1.0, "compute": 89.0}
    devices = {
        name: {**entry, "busy_fraction": 0.2} for name, entry in report.data["devices"].items()
    }
    calm = {**report.data, "apps": apps, "devices": devices}
    assert reading(data, calm) == []
    assert 'id="why-reading"' not in why_section(data, calm)


def test_split_bars_stack_the_reports_parts_in_order(
    library_run: tuple[RunPictures, Report],
) -> None:
    """The latency split bars draw the device queue, IPC, driver launch, compute and runtime in
    that order, then any further key of the report's split, each with its value in ms."""
    data, report = library_run
    split = {
        "compute": 4.0,
        "runtime": 0.25,
        "ipc": 0.5,
        "device_queue": 2.0,
        "driver_launch": 0.05,
        "extra": 0.1,
    }
    mean = {"latency_ms": {"mean": 6.8}}
    apps = {
        name: {**entry, **mean, "latency_split_ms": split}
        for name, entry in report.data["apps"].items()
    }
    html = why_section(data, {**report.data, "apps": apps})
    parts = re.findall(r'data-app="camera" data-part="(\w+)" data-ms="([\d.]+)"', html)
    assert parts == [
        ("device_queue", "2.000"),
        ("ipc", "0.500"),
        ("driver_launch", "0.050"),
        ("compute", "4.000"),
        ("runtime", "0.250"),
        ("extra", "0.100"),
    ]
    assert "camera: device queue 2.000 ms (29% of 6.800 ms)" in html
    assert split_parts({"b": 1.0, "compute": 1.0, "a": 1.0}) == ["compute", "a", "b"]
    assert "Device queue is" not in " ".join(reading(data, {**report.data, "apps": apps}))
    apps["camera"]["latency_split_ms"] = {**split, "device_queue": 2.5}  # 34% of 7.3 ms
    apps["camera"]["latency_ms"] = {"mean": 7.3}
    texts = reading(data, {**report.data, "apps": apps})
    assert any(text.startswith("Device queue is 34% of camera's mean latency") for text in texts)


def test_reading_names_a_dominant_queue_wait_from_the_split(
    library_run: tuple[RunPictures, Report],
) -> None:
    """When the device queue is most of an app's split, the reading says so with its share,
    the parts largest first, whom the device was busy with and the --set that tests it."""
    data, report = library_run
    apps = {name: dict(entry) for name, entry in report.data["apps"].items()}
    apps["camera"]["latency_split_ms"] = {"device_queue": 6.0, "ipc": 0.5, "compute": 3.5}
    apps["camera"]["latency_ms"] = {**apps["camera"]["latency_ms"], "mean": 10.0}
    texts = reading(data, {**report.data, "apps": apps})
    (camera,) = [text for text in texts if "of camera's mean latency" in text]
    assert camera.startswith(
        "Device queue is 60% of camera's mean latency (6.00 of 10.00 ms; largest parts:"
        " device queue 6.00, compute 3.50, IPC 0.50): npu was busy"
    )
    assert "with indexer (LOW)" in camera
    assert camera.endswith(
        " To test it: --set devices.npu.scheduler=global_priority"
        " --set devices.npu.preemption=checkpoint."
    )


def test_without_split_the_bars_are_left_out(library_run: tuple[RunPictures, Report]) -> None:
    """A report without ``latency_split_ms`` gets a note, not bars made up from other data; the
    reading then uses the device's own record of the wait for a unit."""
    data, report = library_run
    apps = {
        name: {key: value for key, value in entry.items() if key != "latency_split_ms"}
        for name, entry in report.data["apps"].items()
    }
    html = why_section(data, {**report.data, "apps": apps})
    assert 'id="latency-split"' in html
    assert "<svg" not in html
    assert "The report has no latency split" in html
    texts = reading(data, {**report.data, "apps": apps})
    assert any(text.startswith("camera's executions waited") for text in texts)


def test_split_colours_are_no_app_or_code_colour() -> None:
    """The split's part colours are far from every app colour and every result-code colour."""

    def rgb(color: str) -> tuple[int, ...]:
        return tuple(int(color[i : i + 2], 16) for i in (1, 3, 5))

    for part in SPLIT_COLORS:
        for other in (*APP_COLORS, *CODE_COLORS.values()):
            distance = sum((a - b) ** 2 for a, b in zip(rgb(part), rgb(other), strict=True)) ** 0.5
            assert distance > 40, (part, other)


def test_pictures_without_tables_say_how_to_get_them(
    library_run: tuple[RunPictures, Report],
) -> None:
    """Pictures collected without a trace render a note where the tables would be."""
    data, report = library_run
    page = render_html(data, report)
    assert by_id(parse_page(page), "layer-tables").tag == "p"
    assert "with_layer_tables" in page


def test_a_trace_without_nnapi_marks_gives_a_note(tmp_path: Path) -> None:
    """A trace the parser cannot use gives tables with the parser's problem, not an error."""
    bogus = tmp_path / "empty.txt"
    bogus.write_text("# tracer: nop\n")
    tables = layer_tables(bogus)
    assert tables.runs == ()
    assert tables.problem == "no NNAPI trace marks found ([NN_...] tags or NNAPI HIDL server calls)"
    missing = layer_tables(tmp_path / "missing.html")
    assert missing.problem is not None
    assert missing.problem.startswith("cannot read the trace")


def test_with_layer_tables_adds_the_tables(
    library_run: tuple[RunPictures, Report], tmp_path: Path
) -> None:
    """with_layer_tables parses a trace of the run into the pictures' "Why" values."""
    data, _ = library_run
    trace = tmp_path / "t.html"
    code, _, err = run_cli("run", str(REPO / "scenarios/quickstart.yaml"), "--trace", str(trace))
    assert code == 0, err
    added = with_layer_tables(data, trace, "quickstart")
    assert added.why is not None
    assert isinstance(added.why.layers, LayerTables)
    assert added.why.layers.source == "quickstart"
    assert [run.process_name for run in added.why.layers.runs] == ["camera"]


def test_without_trace_no_file_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """LayerTrace without --trace adds an in-memory sink and writes no temporary file;
    with --trace it adds no sink and parses that file."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)
    layers = LayerTrace(None)
    (sink,) = layers.sinks
    assert isinstance(sink, LayerSink)
    assert layers.path is None
    assert list(tmp_path.iterdir()) == []
    reused = LayerTrace(str(tmp_path / "t.html"))
    assert reused.sinks == []
    assert reused.path == str(tmp_path / "t.html")


def _feed_both(events: list[tuple[int, SimThread, str | None]], path: Path) -> LayerSink:
    """Hand ``events`` (and their processes) to a systrace file writer and a LayerSink."""
    sink = LayerSink()
    writer = open_trace_writer(path)
    for target in (sink, writer):
        for pid, name in sorted({(t.pid, t.name) for _, t, _ in events if t.pid == t.tid}):
            target.process(pid, f"com.example.{name}")  # not its main thread's name
        target.receive([])
        target.receive([(ts, thread, name, None) for ts, thread, name in events[:3]])
        target.receive([(ts, thread, name, None) for ts, thread, name in events[3:]])
        target.close()
    return sink


def test_sink_warnings_have_the_files_line_numbers(tmp_path: Path) -> None:
    """The in-memory parse gives the diagnostics, with their line numbers, that parse_file gives
    for the systrace file of the same events."""
    app = SimThread(pid=100, tid=100, name="camera")
    worker = SimThread(pid=100, tid=101, name="camera-exec")
    ms = 1_000_000
    events: list[tuple[int, SimThread, str | None]] = [
        (1 * ms, app, "[NN_LA_PO]camera"),
        (2 * ms, app, "[NN_LA_PE]execute"),
        (3 * ms, worker, "[NN_LR_PE]execute"),
        (4 * ms, worker, None),
        (5 * ms, worker, None),  # no open section: a warning
        (6 * ms, app, "[NN_LA_PE]"),  # malformed
        (7 * ms, app, None),
        (8 * ms, app, None),
        (9 * ms, app, None),
    ]
    sink = _feed_both(events, tmp_path / "t.html")
    expected = parse_file(tmp_path / "t.html")
    assert sink.problem is None
    assert sink.result == expected
    assert expected.diagnostics, "the events should give the parser something to warn about"
    assert [run.process_name for run in expected.runs] == ["com.example.camera"]


def test_sink_without_nnapi_marks_has_the_parsers_problem(tmp_path: Path) -> None:
    """A run whose trace has no NNAPI mark gives the problem ``parse_file`` raises, no runs."""
    thread = SimThread(pid=7, tid=7, name="other")
    sink = _feed_both([(1000, thread, "not nnapi"), (2000, thread, None)], tmp_path / "t.html")
    with pytest.raises(TraceFormatError) as raised:
        parse_file(tmp_path / "t.html")
    assert sink.problem == raised.value.message
    assert sink.result.runs == ()


def test_crash_reading_says_what_became_of_each_app() -> None:
    """On qos_driver_crash the reading names the crash time from the scenario, the executions
    that moved to the CPU path and the pinned app's failures, with the report's counts."""
    box: list[RunPictures] = []
    report = run(
        load_scenario(REPO / "scenarios/qos_driver_crash.yaml"),
        keep_executions=True,
        inspect=lambda emulator: box.append(collect(emulator)),
    )
    texts = reading(box[0], report.data)
    on_cpu = report.data["devices"]["nnapi-reference"]["executions"]
    failed = report.data["apps"]["pinned"]["errors"]["OP_FAILED"]
    crash = [text for text in texts if text.startswith("npu crashed at 500 ms (injected fault)")]
    assert crash == [
        f"npu crashed at 500 ms (injected fault): executions of resilient ({on_cpu}) ran on the"
        f" CPU path (nnapi-reference); pinned, which asks for npu only, failed (OP_FAILED {failed})."
    ]
    (resilient,) = [text for text in texts if "of resilient's mean latency" in text]
    assert f"{on_cpu} of its executions ran on the CPU path" in resilient


def test_split_shares_are_of_the_reports_mean_latency() -> None:
    """On qos_driver_crash the split's tooltips and reading name resilient's mean latency as
    the report and the apps table give it (253.810 ms), not the sum of its rounded parts."""
    box: list[RunPictures] = []
    report = run(
        load_scenario(REPO / "scenarios/qos_driver_crash.yaml"),
        keep_executions=True,
        inspect=lambda emulator: box.append(collect(emulator)),
    )
    entry = report.data["apps"]["resilient"]
    mean = entry["latency_ms"]["mean"]
    parts = entry["latency_split_ms"]
    assert round(sum(parts.values()), 3) != mean  # the case this test is about
    html = why_section(box[0], report.data)
    totals = set(re.findall(r"resilient: [a-zA-Z ]+ [\d.]+ ms \(\d+% of ([\d.]+) ms\)", html))
    assert totals == {f"{mean:.3f}"}
    texts = reading(box[0], report.data)
    (resilient,) = [text for text in texts if "of resilient's mean latency" in text]
    assert f" of {mean:.2f} ms;" in resilient


def _reading_of(scenario: Scenario) -> tuple[list[str], dict[str, Any]]:
    box: list[RunPictures] = []
    report = run(scenario, keep_executions=True, inspect=lambda em: box.append(collect(em)))
    return list(reading(box[0], report.data)), report.data


def test_binder_bound_reading_names_the_binder_threads_and_how_to_test_it() -> None:
    """qos_binder_bound.yaml: the camera waits for the driver's 4 binder threads, held by the
    indexer's 4 synchronous threads; the reading says so from the split, not the NPU's
    scheduler, and its --set takes the wait (and the misses) away."""
    scenario = load_scenario(REPO / "scenarios/qos_binder_bound.yaml")
    texts, data = _reading_of(scenario)
    camera = data["apps"]["camera"]
    share = camera["latency_split_ms"]["binder_wait"] / camera["latency_ms"]["mean"]
    (sentence,) = [text for text in texts if "of camera's mean latency" in text]
    assert sentence.startswith(f"Binder thread wait is {share:.0%} of camera's mean latency")
    assert f"{camera['deadline_misses']} of its 120 executions missed their 20 ms deadline" in (
        sentence
    )
    assert "the 4 binder threads of npu's driver was taken" in sentence
    assert "indexer's 4 threads call npu synchronously" in sentence
    assert sentence.endswith("To test it: --set devices.npu.binder_threads=8.")
    assert not any("camera" in text and "scheduler" in text for text in texts)
    device = attrs.evolve(scenario.devices[0], binder_threads=8)
    wider = run(attrs.evolve(scenario, devices=(device,))).data["apps"]["camera"]
    assert wider["latency_split_ms"]["binder_wait"] == 0.0
    assert wider["deadline_misses"] == 0


def _scenarios() -> list[Path]:
    return sorted(
        [*(REPO / "scenarios").glob("*.yaml"), *(REPO / "nnemu/demo/scenarios").glob("*.yaml")]
    )


@pytest.mark.parametrize("path", _scenarios(), ids=lambda p: p.stem)
def test_reading_names_only_the_biggest_wait_and_never_a_small_one(path: Path) -> None:
    """In every shipped scenario, a sentence on an app's split names that app's biggest wait,
    which is not small (``_cause.small``), and the scheduler is blamed for an app only when
    its device queue is not small either."""
    texts, data = _reading_of(load_scenario(path))
    for name, app in data["apps"].items():
        if not app["completed"]:
            continue
        split = app["latency_split_ms"]
        mean = app["latency_ms"]["mean"]
        missed = app["deadline_misses"] > 0
        waits = {part: split[part] for part in CAUSE_PARTS if part in split}
        biggest = max(waits, key=lambda part: waits[part])
        told = [text for text in texts if f"of {name}'s mean latency" in text]
        for text in told:
            label = SPLIT_LABELS.get(biggest, biggest)
            assert text.startswith(f"{label[:1].upper()}{label[1:]} is "), (text, biggest)
            assert not small(split[biggest], mean, missed), text
        blamed = [
            text
            for text in texts
            if ("scheduler is" in text or "does not preempt" in text)
            and (text.startswith(f"{name} (") or f"of {name}'s mean latency" in text)
        ]
        if blamed:
            assert not small(split["device_queue"], mean, missed), blamed


def test_a_small_device_queue_is_not_put_down_to_the_scheduler(
    library_run: tuple[RunPictures, Report],
) -> None:
    """two_apps_one_npu's camera has a worse p95 than the indexer under per_app_priority; when
    its split says it waited for binder threads, not at the device, the reading names the
    binder threads and says nothing of the scheduler."""
    data, report = library_run
    apps = {name: dict(entry) for name, entry in report.data["apps"].items()}
    apps["camera"]["latency_split_ms"] = {"binder_wait": 3.0, "device_queue": 0.1, "compute": 4.0}
    apps["camera"]["latency_ms"] = {**apps["camera"]["latency_ms"], "mean": 7.1}
    texts = reading(data, {**report.data, "apps": apps})
    assert not any("per_app_priority" in text for text in texts)
    (camera,) = [text for text in texts if "of camera's mean latency" in text]
    assert camera.startswith("Binder thread wait is 42% of camera's mean latency")
    assert "binder_threads=" in camera


@pytest.mark.parametrize(
    ("scenario", "app", "part"),
    [
        ("qos_binder_bound", "camera", "binder_wait"),
        ("two_apps_one_npu", "camera", "device_queue"),
        ("qos_priority_no_preemption", "camera", "device_queue"),
        ("qos_driver_crash", "resilient", "app_wait"),
        ("burst_low_latency", "hotword_sync", "ipc"),
    ],
)
def test_the_suggested_set_shrinks_the_wait_it_names(scenario: str, app: str, part: str) -> None:
    """The --set a reading suggests for an app's biggest wait, applied to the scenario, takes
    at least half of that wait away: the suggestion tests the cause it names."""
    loaded = load_scenario(REPO / f"scenarios/{scenario}.yaml")
    texts, data = _reading_of(loaded)
    (sentence,) = [text for text in texts if f"of {app}'s mean latency" in text]
    label = SPLIT_LABELS[part]
    assert sentence.startswith(f"{label[:1].upper()}{label[1:]} is ")
    sets = sentence.split(" To test it: --set ")[1].removesuffix(".").split(" --set ")
    after = run(apply_overrides(loaded, sets)).data["apps"][app]["latency_split_ms"]
    assert after[part] <= data["apps"][app]["latency_split_ms"][part] / 2, sets
