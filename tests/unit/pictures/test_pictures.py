"""Pictures of a run: what collect() extracts, the HTML page's elements, the PNG figures."""

from __future__ import annotations

import itertools
from pathlib import Path

import attrs
import pytest

import nnemu.pictures
from nnemu import run
from nnemu.pictures import (
    AppPicture,
    DevicePicture,
    JobPicture,
    ResultPicture,
    RunPictures,
    collect,
    render_html,
    write_plots,
)
from nnemu.report import Report
from nnemu.scenario import load_scenario
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


def _synthetic(jobs: list[JobPicture], failures: tuple[ResultPicture, ...] = ()) -> RunPictures:
    app = AppPicture(
        name="camera",
        uid=10050,
        priority="HIGH",
        latencies_ns=(5_000_000, 6_000_000),
        codes=(("NO_ERROR", 2), *((f.code, 1) for f in failures)),
        failures=failures,
    )
    device = DevicePicture(name="npu", units=1, preemption="checkpoint", jobs=tuple(jobs))
    return RunPictures(
        scenario="synthetic", seed=1, end_ns=100_000_000, apps=(app,), devices=(device,)
    )


def _report_for(data: RunPictures) -> Report:
    zero = {"p50": 0.0, "p95": 0.0, "p99": 0.0, "max": 0.0, "mean": 0.0}
    apps = {
        app.name: {
            "submitted": 1,
            "completed": 1,
            "failed": 0,
            "dropped": 0,
            "retries": 0,
            "deadline_misses": 0,
            "compile_result": "NO_ERROR",
            "latency_ms": zero,
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


def test_html_has_timelines_latency_and_result_codes(checkpoint_run) -> None:
    """The page has a timeline per device with bars per app and preemption marks, latency figures per app and the result-code table."""
    data, report = checkpoint_run
    text = render_html(data, report)
    elements = parse_page(text)
    timeline = by_id(elements, "device-timeline-npu")
    assert timeline.tag == "svg"
    for app in ("camera", "indexer"):
        bars = [
            e for e in with_class(elements, "bar", f"app-{app}") if e.inside(timeline.attrs["id"])
        ]
        assert bars, f"no bars for {app}"
        assert by_id(elements, f"latency-{app}").tag == "svg"
    marks = [e for e in with_class(elements, "preemption") if e.inside("device-timeline-npu")]
    assert len(marks) == report.data["devices"]["npu"]["preemptions"]
    assert by_id(elements, "latency-cdf").tag == "svg"
    codes = by_id(elements, "result-codes")
    assert codes.tag == "table"
    rows = [e for e in elements if e.tag == "tr" and e.inside("result-codes")]
    assert {row.attrs.get("data-app") for row in rows} >= {"camera", "indexer"}
    for table in ("summary-apps", "summary-devices", "expectations"):
        by_id(elements, table)


def test_html_is_self_contained(checkpoint_run) -> None:
    """The page references nothing outside itself: no URL, script, stylesheet link or image."""
    data, report = checkpoint_run
    text = render_html(data, report)
    assert "http://" not in text
    assert "https://" not in text
    elements = parse_page(text)
    assert not [e for e in elements if e.tag in {"script", "link", "img", "iframe"}]
    assert not [e for e in elements if "src" in e.attrs or "href" in e.attrs]


def test_deadline_misses_aborts_and_rejections_are_marked() -> None:
    """An aborted job is marked on the device timeline; a rejected execution on the app strip."""
    data = _synthetic(
        [
            _job(0, 4, preempted=1, segments=((0, 2_000_000, 0), (3_000_000, 4_000_000, 0))),
            _job(2, 3, status="MISSED_DEADLINE_TRANSIENT", deadline_ns=2_500_000),
        ],
        failures=(
            ResultPicture(
                arrival_ns=10_000_000, finished_ns=10_100_000, code="MISSED_DEADLINE_PERSISTENT"
            ),
        ),
    )
    elements = parse_page(render_html(data, _report_for(data)))
    assert len(with_class(elements, "bar", "app-camera", "aborted")) == 1
    assert len(with_class(elements, "deadline-miss")) >= 1
    assert (
        len([e for e in with_class(elements, "preemption") if e.inside("device-timeline-npu")]) == 1
    )
    strip = [e for e in with_class(elements, "failure") if e.inside("app-failures")]
    assert [sorted(e.classes) for e in strip] == [["code-MISSED_DEADLINE_PERSISTENT", "failure"]]


def test_timeline_bars_are_capped() -> None:
    """A device with more jobs than the cap draws the first ones and says so."""
    jobs = [_job(i * 0.01, i * 0.01 + 0.005) for i in range(6000)]
    data = _synthetic(jobs)
    text = render_html(data, _report_for(data))
    bars = with_class(parse_page(text), "bar", "app-camera")
    assert len([b for b in bars if b.inside("device-timeline-npu")]) == 5000
    assert "first 5000 of 6000 jobs" in text


def test_cli_run_writes_html(tmp_path: Path) -> None:
    """nnemu run --html writes the page of the quickstart run."""
    page = tmp_path / "run.html"
    code, out, _ = run_cli("run", str(REPO / "scenarios/quickstart.yaml"), "--html", str(page))
    assert code == 0
    assert f"pictures written to {page}" in out
    elements = parse_page(page.read_text(encoding="utf-8"))
    by_id(elements, "device-timeline-npu")
    by_id(elements, "latency-camera")


def test_cli_run_writes_plots(tmp_path: Path) -> None:
    """nnemu run --plots writes a PNG timeline per device, latency per app and the result codes."""
    pytest.importorskip("matplotlib", reason="--plots needs the optional 'plots' extra")
    plots = tmp_path / "plots"
    code, _, err = run_cli("run", str(REPO / "scenarios/quickstart.yaml"), "--plots", str(plots))
    assert code == 0, err
    names = sorted(path.name for path in plots.iterdir())
    assert names == ["latency-camera.png", "result-codes.png", "timeline-npu.png"]
    for path in plots.iterdir():
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_write_plots_of_preempted_run(checkpoint_run, tmp_path: Path) -> None:
    """write_plots draws a run with preemptions (used by other commands with collect()'s data)."""
    pytest.importorskip("matplotlib", reason="--plots needs the optional 'plots' extra")
    data, report = checkpoint_run
    written = write_plots(data, report, tmp_path)
    assert [p.name for p in written] == [
        "timeline-npu.png",
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
