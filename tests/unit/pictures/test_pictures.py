"""Pictures of a run: what collect() extracts, the HTML page's elements, the PNG figures."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

import nnemu.pictures
from nnemu import run
from nnemu.pictures import (
    AppPicture,
    DevicePicture,
    ExecutionPicture,
    FaultPicture,
    JobPicture,
    ResultPicture,
    RunPictures,
    collect,
    render_html,
    write_plots,
)
from nnemu.pictures._html import _quantile
from nnemu.pictures._timeline import LABEL_CHARS, LEFT, OVERVIEW_BINS, PLOT_W, sub_rows
from nnemu.report import Report
from nnemu.scenario import FaultKind, FaultSpec, load_scenario
from tests.commands import run_cli
from tests.unit.pictures.dom import by_id, parse_page, with_class

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(name="checkpoint_run", scope="module")
def _checkpoint_run() -> tuple[RunPictures, Report]:
    """The checkpoint-preemption scenario, cut to 400 ms, with its pictures collected."""
    scenario = attrs.evolve(
        load_scenario(REPO / "scenarios/qos_priority_checkpoint.yaml"), duration_ms=400
    )
    box: list[RunPictures] = []
    report = run(
        scenario, keep_executions=True, inspect=lambda emulator: box.append(collect(emulator))
    )
    return box[0], report


def _synthetic(
    jobs: list[JobPicture], executions: tuple[ExecutionPicture, ...] = ()
) -> RunPictures:
    failures = tuple(
        ResultPicture(arrival_ns=e.arrival_ns, finished_ns=e.finished_ns, code=e.code)
        for e in executions
        if e.code != "NO_ERROR"
    )
    app = AppPicture(
        name="camera",
        uid=10050,
        priority="HIGH",
        latencies_ns=(5_000_000, 6_000_000),
        codes=(("NO_ERROR", 2), *((f.code, 1) for f in failures)),
        failures=failures,
        executions=executions,
    )
    device = DevicePicture(name="npu", units=1, preemption="checkpoint", jobs=tuple(jobs))
    return RunPictures(
        scenario="synthetic", seed=1, end_ns=100_000_000, apps=(app,), devices=(device,)
    )


def _latency_ms(latencies_ns: tuple[int, ...]) -> dict[str, float]:
    """The summary's latency figures of ``latencies_ns`` (nearest rank, as the report's)."""
    values = sorted(latencies_ns)
    if not values:
        return {"p50": 0.0, "p95": 0.0, "p99": 0.0, "max": 0.0, "mean": 0.0}
    return {
        **{
            name: _quantile(values, q) / 1e6
            for name, q in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99))
        },
        "max": values[-1] / 1e6,
        "mean": sum(values) / len(values) / 1e6,
    }


def _report_for(data: RunPictures) -> Report:
    apps = {
        app.name: {
            "submitted": len(app.latencies_ns),
            "completed": len(app.latencies_ns),
            "failed": 0,
            "dropped": 0,
            "retries": 0,
            "deadline_misses": 0,
            "compile_result": "NO_ERROR",
            "latency_ms": _latency_ms(app.latencies_ns),
            "errors": {},
        }
        for app in data.apps
    }
    devices = {
        d.name: {"executions": 1, "busy_fraction": 0.5, "preemptions": 0} for d in data.devices
    }
    return Report({"apps": apps, "devices": devices, "expectations": []}, ())


def _job(start_ms: float, end_ms: float, *, status: str = "NONE", **changes: object) -> JobPicture:
    start, end = int(start_ms * 1e6), int(end_ms * 1e6)
    fields: dict[str, object] = {
        "app": "camera",
        "priority": "HIGH",
        "arrived_ns": start,
        "started_ns": start,
        "finished_ns": end,
        "segments": ((start, end, 0),),
        "preempted": 0,
        "status": status,
        "deadline_ns": None,
    }
    fields.update(changes)
    return JobPicture(**fields)  # type: ignore[arg-type]


def test_collect_splits_preempted_jobs_exactly(checkpoint_run) -> None:
    """Each preempted job gets one stretch more than its preemptions, matching its recorded work."""
    data, report = checkpoint_run
    (npu,) = data.devices
    preempted = [job for job in npu.jobs if job.preempted]
    assert preempted
    assert sum(job.preempted for job in npu.jobs) == report.data["devices"]["npu"]["preemptions"]
    for job in preempted:
        if job.status == "NONE":
            assert len(job.segments) == job.preempted + 1
    stretches = sorted(s for job in npu.jobs for s in job.segments)
    for (_, end, _), (start, _, _) in itertools.pairwise(stretches):
        assert end <= start, "two jobs on the one unit at once"
    assert {app.name for app in data.apps} == {"camera", "indexer"}
    camera = next(app for app in data.apps if app.name == "camera")
    assert len(camera.latencies_ns) == report.data["apps"]["camera"]["completed"]


def test_collect_needs_records() -> None:
    """collect() on a world that keeps no records (no keep_executions) says how to call it."""
    from nnemu import open_emulator, run_virtual

    scenario = load_scenario(REPO / "scenarios/quickstart.yaml")

    async def build() -> None:
        async with open_emulator(scenario) as emulator:
            with pytest.raises(ValueError, match=r"keep_executions=True, inspect="):
                collect(emulator)

    run_virtual(build)


def _run_data(text: str) -> dict:
    """The JSON block the page's script draws from."""
    start = text.index('<script type="application/json" id="run-data">')
    start = text.index(">", start) + 1
    return json.loads(text[start : text.index("</script>", start)])


def _undelta(values: list[int]) -> list[int]:
    return list(itertools.accumulate(values))


def _column(values: str | list[int]) -> list[int]:
    """A column of small integers as the page stores it (one character each, or a list)."""
    digits = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    return [digits.index(c) for c in values] if isinstance(values, str) else values


def test_html_has_timeline_latency_and_result_codes(checkpoint_run) -> None:
    """The page has the overview with a row per device (nnapi-reference too) and per app, the detail view, latency figures per app and the result-code table."""
    data, report = checkpoint_run
    text = render_html(data, report)
    elements = parse_page(text)
    overview = by_id(elements, "overview")
    assert overview.tag == "svg"
    assert float(overview.attrs["data-end-ms"]) == report.data["virtual_ms"] == 400
    brush = by_id(elements, "overview-brush")  # the whole run until a zoom
    assert (float(brush.attrs["x"]), float(brush.attrs["width"])) == (LEFT, PLOT_W)
    for device in ("npu", "nnapi-reference"):
        assert by_id(elements, f"overview-device-{device}").inside("overview")
    for app in ("camera", "indexer"):
        assert by_id(elements, f"overview-app-{app}").inside("overview")
        assert by_id(elements, f"latency-{app}").tag == "svg"
    assert with_class(elements, "occupancy")
    for figure in ("detail", "latency-time", "latency-cdf", "overview-brush"):
        by_id(elements, figure)
    for button in ("zoom-reset", "zoom-in", "zoom-out"):
        assert by_id(elements, button).tag == "button"
    codes = by_id(elements, "result-codes")
    assert codes.tag == "table"
    rows = [e for e in elements if e.tag == "tr" and e.inside("result-codes")]
    assert {row.attrs.get("data-app") for row in rows} >= {"camera", "indexer"}
    for table in ("summary-apps", "summary-devices", "expectations"):
        by_id(elements, table)


def test_run_data_agrees_with_the_report(checkpoint_run) -> None:
    """The embedded data holds every job of every device and every result of every app, with the report's counts of preemptions, completions, failures and deadline misses."""
    data, report = checkpoint_run
    run_data = _run_data(render_html(data, report))
    assert run_data["end"] == round(report.data["virtual_ms"] * 1000)
    devices = {device["name"]: device for device in run_data["devices"]}
    assert set(devices) == set(report.data["devices"])
    for name, device in devices.items():
        counts = report.data["devices"][name]
        assert len(device["jobs"]["arr"]) == counts["executions"]
        assert sum(len(lane["p"]) for lane in device["lanes"]) == counts["preemptions"]
        assert sum(_column(device["jobs"]["pre"])) == counts["preemptions"]
    assert [app["name"] for app in run_data["apps"]] == ["camera", "indexer"]
    for app in run_data["apps"]:
        counts = report.data["apps"][app["name"]]
        codes = [run_data["codes"][code] for code in _column(app["code"])]
        assert codes.count("NO_ERROR") == counts["completed"]
        assert len(codes) - codes.count("NO_ERROR") == counts["failed"]
        assert len(app["miss"]) == counts["deadline_misses"] - counts["dropped"]
        arrivals = _undelta(app["arr"])
        assert arrivals == sorted(arrivals)
        assert all(end >= 0 for end in app["end"])
        assert all(-1 <= start <= end for start, end in zip(app["start"], app["end"], strict=True))


def test_lanes_hold_bars_without_overlap(checkpoint_run) -> None:
    """Each compute unit's lane is sorted, its bars never overlap (so the script can find a window by bisection), and the lanes hold every stretch of every job."""
    data, report = checkpoint_run
    (npu, _cpu) = _run_data(render_html(data, report))["devices"]
    for lane in npu["lanes"]:
        starts = _undelta(lane["s"])
        ends = [start + length for start, length in zip(starts, lane["d"], strict=True)]
        for (_, end), (start, _) in itertools.pairwise(zip(starts, ends, strict=True)):
            assert end <= start
    stretches = sorted(j for lane in npu["lanes"] for j in _undelta(lane["j"]))
    jobs = len(npu["jobs"]["arr"])
    assert sorted(set(stretches)) == list(range(jobs))
    assert len(stretches) == sum(len(job.segments) for job in data.devices[0].jobs)


_BAR = st.tuples(st.integers(0, 50), st.integers(0, 20), st.booleans())


@given(st.lists(_BAR, max_size=30).map(sorted))
def test_sub_rows_keep_overlapping_executions_apart(bars: list[tuple[int, int, bool]]) -> None:
    """Executions whose bars (arrival to result: the wait bar, then the execution) overlap get
    different sub-rows, and no more sub-rows are used than executions waiting or under way at
    once (one row for an app that never overlaps)."""
    executions = [
        ExecutionPicture(
            arrival_ns=arrival,
            started_ns=arrival + length // 2 if started else None,
            finished_ns=arrival + length,
            code="NO_ERROR" if started else "OP_FAILED",
            late=False,
        )
        for arrival, length, started in bars
    ]
    rows = sub_rows(executions)
    spans = [(e.arrival_ns, e.finished_ns) for e in executions]
    for (a, b), (row_a, row_b) in zip(
        itertools.combinations(spans, 2), itertools.combinations(rows, 2), strict=True
    ):
        if row_a == row_b:
            assert a[1] <= b[0] or b[1] <= a[0]
    # Under way at instant t: a bar over it, or a refusal (a point) at it.
    under_way = max(
        (sum(1 for s0, s1 in spans if s0 <= t < s1 or s0 == t == s1) for t, _ in spans),
        default=1,
    )
    assert max(rows, default=0) + 1 <= under_way
    assert sub_rows(executions) == rows


def test_only_apps_with_executions_at_once_get_sub_rows() -> None:
    """On poisson_gpu_npu an app gets sub-rows exactly when bars of it (arrival to result)
    overlap: the two-thread video_fx does, and never with two overlapping bars on one sub-row;
    an app whose bars never overlap has none."""
    scenario = load_scenario(REPO / "scenarios/poisson_gpu_npu.yaml")
    box: list[RunPictures] = []
    report = run(scenario, keep_executions=True, inspect=lambda e: box.append(collect(e)))
    apps = {app["name"]: app for app in _run_data(render_html(box[0], report))["apps"]}
    assert "sub" in apps["video_fx"]
    for app in apps.values():
        arrivals = _undelta(app["arr"])
        spans = sorted((a, a + end) for a, end in zip(arrivals, app["end"], strict=True))
        overlap = any(start < end for (_, end), (start, _) in itertools.pairwise(spans))
        assert ("sub" in app) == overlap, app["name"]
        rows = _column(app["sub"]) if "sub" in app else [0] * len(arrivals)
        for row in set(rows):
            mine = sorted(
                (a, a + end)
                for a, end, r in zip(arrivals, app["end"], rows, strict=True)
                if r == row
            )
            for (_, end), (start, _) in itertools.pairwise(mine):
                assert end <= start


def test_html_is_self_contained(checkpoint_run) -> None:
    """The page references nothing outside itself: no URL, external script, stylesheet link or image."""
    data, report = checkpoint_run
    text = render_html(data, report)
    assert "http://" not in text
    assert "https://" not in text
    elements = parse_page(text)
    assert not [e for e in elements if e.tag in {"link", "img", "iframe"}]
    assert not [e for e in elements if "src" in e.attrs or "href" in e.attrs]
    scripts = [e for e in elements if e.tag == "script"]
    assert [e.attrs.get("type") for e in scripts] == ["application/json", None]


def test_page_bytes_are_deterministic() -> None:
    """The same scenario and seed give the same page, byte for byte."""
    scenario = load_scenario(REPO / "scenarios/qos_driver_crash.yaml")
    pages = []
    for _ in range(2):
        box: list[RunPictures] = []
        report = run(
            scenario, keep_executions=True, inspect=lambda e, box=box: box.append(collect(e))
        )
        pages.append(render_html(box[0], report))
    assert pages[0] == pages[1]


def test_deadline_misses_aborts_and_preemptions_are_in_the_data() -> None:
    """An aborted job's bar ends in a deadline mark, a split job's first stretch in a preemption mark, and a refused execution has no start."""
    data = _synthetic(
        [
            _job(0, 4, preempted=1, segments=((0, 2_000_000, 0), (3_000_000, 4_000_000, 0))),
            _job(2, 3, status="MISSED_DEADLINE_TRANSIENT", deadline_ns=2_500_000),
        ],
        executions=(
            ExecutionPicture(
                arrival_ns=10_000_000,
                started_ns=None,
                finished_ns=10_100_000,
                code="MISSED_DEADLINE_PERSISTENT",
                late=False,
            ),
        ),
    )
    run_data = _run_data(render_html(data, _report_for(data)))
    (lane,) = run_data["devices"][0]["lanes"]
    assert _undelta(lane["s"]) == [0, 2000, 3000]
    assert lane["p"] == [0]
    assert lane["x"] == [1]
    (app,) = run_data["apps"]
    assert app["start"] == [-1]
    assert app["miss"] == [0]
    assert [run_data["codes"][c] for c in _column(app["code"])] == ["MISSED_DEADLINE_PERSISTENT"]


def test_overview_is_downsampled() -> None:
    """A device with 60,000 jobs still gets at most one overview rectangle per column, and the page stays small."""
    jobs = [_job(i * 0.01, i * 0.01 + 0.005) for i in range(60_000)]
    data = _synthetic(jobs)
    text = render_html(data, _report_for(data))
    elements = parse_page(text)
    occupancy = [e for e in with_class(elements, "occupancy") if e.inside("overview-device-npu")]
    assert 0 < len(occupancy) <= OVERVIEW_BINS
    assert len(text) < 60_000 * 40


def test_fault_windows_on_the_axis() -> None:
    """qos_driver_crash's crash at 500 ms is marked on the overview at 500 ms and given to the script, and the pinned app's executions after it never start."""
    scenario = load_scenario(REPO / "scenarios/qos_driver_crash.yaml")
    box: list[RunPictures] = []
    report = run(scenario, keep_executions=True, inspect=lambda e: box.append(collect(e)))
    data = box[0]
    assert data.faults == (
        FaultPicture(device="npu", kind="crash", start_ns=500_000_000, end_ns=None, factor=1.0),
    )
    text = render_html(data, report)
    (line,) = [e for e in with_class(parse_page(text), "fault-crash") if e.inside("overview")]
    assert line.attrs["data-start-ms"] == "500"
    x = float(line.attrs["x1"])
    assert x == pytest.approx(LEFT + 500 / (data.end_ns / 1e6) * PLOT_W, abs=0.1)
    assert _run_data(text)["faults"][0]["t0"] == 500_000
    pinned = next(app for app in data.apps if app.name == "pinned")
    after = [e for e in pinned.executions if e.arrival_ns > 500_000_000]
    assert after
    assert all(e.started_ns is None and e.code == "OP_FAILED" for e in after)
    assert data.cpu is not None
    assert len(data.cpu.jobs) == report.data["devices"]["nnapi-reference"]["executions"]
    assert all(job.started_ns >= 500_000_000 for job in data.cpu.jobs)


def test_busy_and_slowdown_windows_are_collected_and_drawn() -> None:
    """A busy window and a slow-down window of a device are collected with their times and factor, shaded on the overview over their span, and given to the script."""
    base = load_scenario(REPO / "scenarios/burst_low_latency.yaml")
    faults = (
        FaultSpec(kind=FaultKind.BUSY, at_ms=20, until_ms=40),
        FaultSpec(kind=FaultKind.SLOWDOWN, at_ms=60, until_ms=90, factor=3),
    )
    scenario = attrs.evolve(
        base, devices=(attrs.evolve(base.devices[0], faults=faults),), expect=()
    )
    box: list[RunPictures] = []
    report = run(scenario, keep_executions=True, inspect=lambda e: box.append(collect(e)))
    data = box[0]
    assert data.faults == (
        FaultPicture(device="dsp", kind="busy", start_ns=20_000_000, end_ns=40_000_000, factor=1.0),
        FaultPicture(
            device="dsp", kind="slowdown", start_ns=60_000_000, end_ns=90_000_000, factor=3.0
        ),
    )
    text = render_html(data, report)
    elements = parse_page(text)
    scale = PLOT_W / (data.end_ns / 1e6)
    for kind, start_ms, end_ms in (("busy", 20, 40), ("slowdown", 60, 90)):
        (band,) = [e for e in with_class(elements, f"fault-{kind}") if e.inside("overview")]
        assert float(band.attrs["x"]) == pytest.approx(LEFT + start_ms * scale, abs=0.1)
        end_ms = min(end_ms, data.end_ns / 1e6)
        assert float(band.attrs["width"]) == pytest.approx((end_ms - start_ms) * scale, abs=0.2)
    assert [(f["kind"], f["t0"], f["t1"], f["factor"]) for f in _run_data(text)["faults"]] == [
        ("busy", 20_000, 40_000, 1.0),
        ("slowdown", 60_000, 90_000, 3.0),
    ]
    # While the driver is busy the runtime falls back to the CPU path, which has its lanes.
    assert data.cpu is not None
    assert data.cpu.jobs
    assert data.cpu.units == 1 + max(lane for job in data.cpu.jobs for _, _, lane in job.segments)


def test_execution_starts_match_the_jobs(checkpoint_run) -> None:
    """Each execution's start on the device is the start of one of its app's jobs, inside its arrival-to-result window, so the app lanes line up with the device lanes."""
    data, _ = checkpoint_run
    (npu,) = data.devices
    for app in data.apps:
        job_starts = {job.started_ns for job in npu.jobs if job.app == app.name}
        started = [e for e in app.executions if e.started_ns is not None]
        assert len(started) == len(app.executions)
        for execution in started:
            assert execution.started_ns in job_starts
            assert execution.arrival_ns <= execution.started_ns <= execution.finished_ns


def test_histogram_labels_show_the_summary() -> None:
    """The histogram's p50/p95/p99 labels show the printed summary's values."""
    data = _synthetic([])
    report = _report_for(data)
    report.data["apps"]["camera"]["latency_ms"].update(p50=5.0, p95=5.95, p99=5.99)
    text = render_html(data, report)
    assert re.findall(r'class="qlabel" data-value="([\d.]+)"', text) == ["5.000", "5.950", "5.990"]


def test_cli_run_writes_html(tmp_path: Path) -> None:
    """nnemu run --html writes the page of the quickstart run."""
    page = tmp_path / "run.html"
    code, out, _ = run_cli("run", str(REPO / "scenarios/quickstart.yaml"), "--html", str(page))
    assert code == 0
    assert f"pictures written to {page}" in out
    elements = parse_page(page.read_text(encoding="utf-8"))
    by_id(elements, "overview-device-npu")
    by_id(elements, "latency-camera")


def test_printed_summary_and_page_agree(tmp_path: Path) -> None:
    """For qos_driver_crash the page's app table shows the printed summary's counts and p50/p95/p99, and its histograms' labels the same quantiles."""
    page = tmp_path / "run.html"
    code, out, _ = run_cli(
        "run", str(REPO / "scenarios/qos_driver_crash.yaml"), "--html", str(page)
    )
    assert code == 0
    printed = {}
    for line in out.splitlines():
        fields = line.split()
        if fields and fields[0] in {"resilient", "pinned"} and len(fields) >= 9:
            printed.setdefault(fields[0], fields[1:9])  # the app table's line, not the split's
    assert set(printed) == {"resilient", "pinned"}
    text = page.read_text(encoding="utf-8")
    for name, values in printed.items():
        row = re.search(rf"{name}</td>(.*?)</tr>", text)
        assert row
        cells = re.findall(r"<td>([^<]*)</td>", row.group(1))
        # priority, submitted, completed, failed, dropped, in flight, retries, misses, p50, p95, p99
        assert cells[1:6] + cells[8:11] == values
        svg = text[text.index(f'<svg id="latency-{name}"') :]
        svg = svg[: svg.index("</svg>")]
        labels = re.findall(r'class="qlabel" data-value="([\d.]+)"', svg)
        quantiles = [value.removesuffix("*") for value in values[5:8]]  # * the slowest
        assert labels == (quantiles if values[1] != "0" else [])


def test_cli_run_writes_plots(tmp_path: Path) -> None:
    """nnemu run --plots writes a PNG timeline per device (nnapi-reference too, as on the page),
    latency per app and the result codes."""
    pytest.importorskip("matplotlib", reason="--plots needs the optional 'plots' extra")
    plots = tmp_path / "plots"
    code, _, err = run_cli("run", str(REPO / "scenarios/quickstart.yaml"), "--plots", str(plots))
    assert code == 0, err
    names = sorted(path.name for path in plots.iterdir())
    assert names == [
        "latency-camera.png",
        "result-codes.png",
        "timeline-nnapi-reference.png",
        "timeline-npu.png",
    ]
    for path in plots.iterdir():
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_write_plots_of_preempted_run(checkpoint_run, tmp_path: Path) -> None:
    """write_plots draws a run with preemptions (used by other commands with collect()'s data)."""
    pytest.importorskip("matplotlib", reason="--plots needs the optional 'plots' extra")
    data, report = checkpoint_run
    written = write_plots(data, report, tmp_path)
    assert [p.name for p in written] == [
        "timeline-npu.png",
        "timeline-nnapi-reference.png",
        "latency-camera.png",
        "latency-indexer.png",
        "result-codes.png",
    ]


def test_cli_plots_without_matplotlib_exits_two(tmp_path: Path, monkeypatch) -> None:
    """Without matplotlib, --plots says how to install it and exits 2 before running."""
    monkeypatch.setattr(nnemu.pictures, "plots_available", lambda: False)
    code, _, err = run_cli(
        "run", str(REPO / "scenarios/quickstart.yaml"), "--plots", str(tmp_path / "p")
    )
    assert code == 2
    assert err.strip() == "--plots needs matplotlib: pip install -e '.[plots]'"
    assert not (tmp_path / "p").exists()


def test_a_four_thread_apps_wait_bars_never_share_a_sub_row() -> None:
    """qos_binder_bound's indexer has 4 threads in a closed loop: each execution's bar, from
    its arrival (the wait bar) to its result, gets a sub-row of its own among 4, and no two
    bars of one sub-row overlap, whatever the zoom."""
    scenario = load_scenario(REPO / "scenarios/qos_binder_bound.yaml")
    box: list[RunPictures] = []
    report = run(scenario, keep_executions=True, inspect=lambda e: box.append(collect(e)))
    apps = {app["name"]: app for app in _run_data(render_html(box[0], report))["apps"]}
    indexer = apps["indexer"]
    rows = _column(indexer["sub"])
    assert set(rows) == {0, 1, 2, 3}
    arrivals = _undelta(indexer["arr"])
    for row in range(4):
        mine = sorted(
            (a, a + end)
            for a, end, r in zip(arrivals, indexer["end"], rows, strict=True)
            if r == row
        )
        for (_, end), (start, _) in itertools.pairwise(mine):
            assert end <= start


def test_lane_labels_show_the_cpu_paths_name_whole(checkpoint_run) -> None:
    """The overview's label of nnapi-reference is its whole name, the detail view's lanes cut
    names only past LABEL_CHARS characters, and the label margin holds such a name and its
    unit (``nnapi-reference u0``) at 6.5 px per character of the 11 px font."""
    data, report = checkpoint_run
    text = render_html(data, report)
    elements = parse_page(text)
    overview = by_id(elements, "overview-device-nnapi-reference")
    assert ">nnapi-reference</text>" in text[text.index('id="overview"') :]
    assert overview.inside("overview")
    assert _run_data(text)["labelChars"] == LABEL_CHARS >= len("nnapi-reference")
    assert 6.5 * len("x" * LABEL_CHARS + " u0") <= LEFT - 8


def test_device_table_has_the_energy_the_summary_prints(checkpoint_run) -> None:
    """The page's device table has the hal and energy columns of ``nnemu run``'s device table:
    the HAL each driver spoke (``-`` for the runtime's CPU device) and the report's energy to
    one decimal."""
    data, report = checkpoint_run
    text = render_html(data, report)
    table = text[text.index('<table id="summary-devices">') :]
    table = table[: table.index("</table>")]
    assert '<th class="name">hal</th>' in table
    assert "<th>energy</th>" in table
    for name, device in report.data["devices"].items():
        hal = device.get("hal", "-")
        assert (
            f'<td class="name">{name}</td><td class="name">{hal}</td><td>{device["executions"]}</td>'
            f"<td>{device['busy_fraction'] * 100:.1f}%</td><td>{device['preemptions']}</td>"
            f"<td>{device['energy']:.1f}</td></tr>"
        ) in table
