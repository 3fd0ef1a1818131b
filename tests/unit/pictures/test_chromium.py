"""The HTML page as headless Chromium renders it (skipped where ``chromium`` is not installed).

CI (.ci/run) installs Debian's ``chromium`` package when it can, best effort; where it
is missing these tests skip. They start Chromium themselves, offline, with a throw-away
profile.
"""

from __future__ import annotations

import itertools
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from nnemu.cli import main
from nnemu.pictures._timeline import LEFT, PLOT_W
from tests.unit.pictures.dom import by_id, parse_page, with_class

REPO = Path(__file__).resolve().parents[3]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

# The slow tier: each test starts a headless browser (seconds of CPU a page).
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        CHROMIUM is None, reason="headless Chromium not installed (apt-get install chromium)"
    ),
]


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
        *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)


def _png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and unfiltered rows of an 8-bit RGB(A) non-interlaced PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    position, idat = 8, b""
    width = height = channels = 0
    while position < len(data):
        (length,) = struct.unpack(">I", data[position : position + 4])
        kind = data[position + 4 : position + 8]
        body = data[position + 8 : position + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert (depth, interlace) == (8, 0)
            assert color in (2, 6)
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        position += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                estimate = left + up - corner
                pa, pb, pc = abs(estimate - left), abs(estimate - up), abs(estimate - corner)
                best = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[i] = (line[i] + best) & 0xFF
        rows.append(bytes(line))
        previous = line
    return width, height, rows


@pytest.fixture(name="page", scope="module")
def _page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The page of a checkpoint-preemption run, written by the CLI."""
    text = (REPO / "scenarios/qos_priority_checkpoint.yaml").read_text()
    directory = tmp_path_factory.mktemp("page")
    scenario = directory / "short.yaml"
    # Shortened, without the expectations of the full run.
    scenario.write_text(text.replace("duration_ms: 4000", "duration_ms: 400").split("expect:")[0])
    page = directory / "run.html"
    assert main(["run", str(scenario), "--html", str(page)]) == 0
    return page


@pytest.fixture(name="crash_page", scope="module")
def _crash_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The page of qos_driver_crash (the npu dies at 500 ms), written by the CLI."""
    page = tmp_path_factory.mktemp("crash") / "run.html"
    assert main(["run", str(REPO / "scenarios/qos_driver_crash.yaml"), "--html", str(page)]) == 0
    return page


def _ticks(dom: str, axis_id: str) -> list[float]:
    """The tick labels of one of the page's script-drawn axes."""
    start = dom.index(f'id="{axis_id}"')
    axis = dom[start : dom.index("</g>", start)]
    return [float(value) for value in re.findall(r'class="tick"[^>]*>([-\d.]+)<', axis)]


def test_rendered_dom_has_the_figures(page: Path, tmp_path: Path) -> None:
    """After the script ran, the detail view has a lane per compute unit (nnapi-reference too) and per app, bars per app, preemption marks, latency over time, and the tables."""
    dom = _chromium(tmp_path, "--dump-dom", page.as_uri()).stdout
    elements = parse_page(dom)
    assert by_id(elements, "overview").tag == "svg"
    detail = by_id(elements, "detail")
    assert (detail.attrs["data-t0-ms"], detail.attrs["data-t1-ms"]) == ("0", "400")
    for lane in ("lane-device-npu-0", "lane-device-nnapi-reference-0"):
        assert by_id(elements, lane).inside("detail")
    for app in ("camera", "indexer"):
        assert by_id(elements, f"lane-app-{app}").inside("detail")
        bars = [e for e in with_class(elements, "bar", f"app-{app}") if e.inside("detail")]
        assert bars, f"no bars for {app}"
        assert [e for e in with_class(elements, "exec") if e.inside(f"lane-app-{app}")]
        assert [e for e in with_class(elements, "pt") if e.inside(f"latency-time-{app}")]
        assert by_id(elements, f"latency-{app}").tag == "svg"
    assert [e for e in with_class(elements, "preemption") if e.inside("detail")]
    assert by_id(elements, "result-codes").tag == "table"
    assert by_id(elements, "summary-apps").tag == "table"
    ticks = _ticks(dom, "detail-axis-ticks")
    assert ticks[0] == 0
    assert ticks[-1] <= 400


def test_zoom_from_the_url_redraws_the_window(crash_page: Path, tmp_path: Path) -> None:
    """Opening the page at #t0=450&t1=550 zooms the detail view and the latency over time to that window, with the crash at 500 ms marked; a screenshot of it is drawn."""
    url = crash_page.as_uri() + "#t0=450&t1=550"
    dom = _chromium(tmp_path, "--dump-dom", url).stdout
    elements = parse_page(dom)
    detail = by_id(elements, "detail")
    assert (detail.attrs["data-t0-ms"], detail.attrs["data-t1-ms"]) == ("450", "550")
    for axis in ("detail-axis-ticks", "latency-time-axis"):
        ticks = _ticks(dom, axis)
        assert len(ticks) >= 4
        assert ticks[0] >= 450
        assert ticks[-1] <= 550
        assert 500 in ticks
    assert [e for e in with_class(elements, "fault-crash") if e.inside("detail")]
    assert [e for e in with_class(elements, "fault-crash") if e.inside("overview")]
    # After the crash the pinned app's executions never start: refusal marks on its lane.
    assert [e for e in with_class(elements, "refused") if e.inside("lane-app-pinned")]
    assert [e for e in with_class(elements, "bar", "app-resilient") if e.inside("detail")]
    assert by_id(elements, "lane-device-nnapi-reference-0").inside("detail")
    shot = tmp_path / "zoomed.png"
    _chromium(tmp_path, f"--screenshot={shot}", "--window-size=1400,1000", url)
    width, _, rows = _png_pixels(shot.read_bytes())
    channels = len(rows[0]) // width
    colors = {
        bytes(row[x * channels : x * channels + 3]) for row in rows[::3] for x in range(0, width, 2)
    }
    assert bytes.fromhex("1f77b4") in colors  # resilient's bars
    assert bytes.fromhex("800000") in colors  # OP_FAILED, the pinned app after the crash


_DRAG = """<script>
(function () {
  var overview = document.getElementById("overview"), box = overview.getBoundingClientRect();
  var scale = box.width / overview.width.baseVal.value, left = %(left)d, width = %(width)d;
  function at(share) { return box.left + (left + share * width) * scale; }
  var y = box.top + 20 * scale;
  overview.dispatchEvent(new MouseEvent("mousedown", {clientX: at(0.25), clientY: y, bubbles: true}));
  overview.dispatchEvent(new MouseEvent("mousemove", {clientX: at(0.5), clientY: y, bubbles: true}));
  window.dispatchEvent(new MouseEvent("mouseup", {clientX: at(0.5), clientY: y, bubbles: true}));
})();
</script></body>"""


def test_dragging_on_the_overview_zooms(crash_page: Path, tmp_path: Path) -> None:
    """A drag over the second quarter of the overview zooms the detail view to that quarter of the run and moves the brush there."""
    dragged = tmp_path / "dragged.html"
    page = crash_page.read_text(encoding="utf-8")
    dragged.write_text(
        page.replace("</body>", _DRAG % {"left": LEFT, "width": PLOT_W}), encoding="utf-8"
    )
    elements = parse_page(_chromium(tmp_path, "--dump-dom", dragged.as_uri()).stdout)
    end_ms = float(by_id(elements, "overview").attrs["data-end-ms"])
    detail = by_id(elements, "detail")
    assert float(detail.attrs["data-t0-ms"]) == pytest.approx(end_ms / 4, abs=end_ms / 200)
    assert float(detail.attrs["data-t1-ms"]) == pytest.approx(end_ms / 2, abs=end_ms / 200)
    brush = by_id(elements, "overview-brush")
    assert float(brush.attrs["x"]) == pytest.approx(LEFT + PLOT_W / 4, abs=2)
    assert float(brush.attrs["width"]) == pytest.approx(PLOT_W / 4, abs=2)


def test_screenshot_is_not_blank(page: Path, tmp_path: Path) -> None:
    """The rendered page shows the apps' colors (the figures were drawn), not a blank canvas."""
    shot = tmp_path / "shot.png"
    _chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,1000", page.as_uri())
    width, height, rows = _png_pixels(shot.read_bytes())
    assert (width, height) == (1280, 1000)
    channels = len(rows[0]) // width
    colors = {
        bytes(row[x * channels : x * channels + 3]) for row in rows[::5] for x in range(0, width, 3)
    }
    assert len(colors) > 20
    # The camera's and the indexer's colors (tab10 blue and orange) appear somewhere.
    assert bytes.fromhex("1f77b4") in colors
    assert bytes.fromhex("ff7f0e") in colors


_MEASURE = """<script>
window.addEventListener("load", function () {
  var ids = ["why", "why-reading", "why-devices", "why-apps", "latency-split", "layer-table-1"];
  ids.forEach(function (id) {
    var element = document.getElementById(id);
    if (element) {
      var box = element.getBoundingClientRect();
      element.setAttribute("data-drawn", Math.round(box.width) + "x" + Math.round(box.height));
    }
  });
});
</script></body>"""


@pytest.mark.parametrize(
    ("fixture", "apps"),
    [("page", ("camera", "indexer")), ("crash_page", ("pinned", "resilient"))],
)
def test_why_section_is_rendered(
    fixture: str, apps: tuple[str, ...], tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The Why section is laid out with its device table (nnapi-reference too), app table,
    split bars per app and the per-layer tables, one per client app, in both pages."""
    page: Path = request.getfixturevalue(fixture)
    measured = tmp_path / "measured.html"
    measured.write_text(
        page.read_text(encoding="utf-8").replace("</body>", _MEASURE), encoding="utf-8"
    )
    elements = parse_page(_chromium(tmp_path, "--dump-dom", measured.as_uri()).stdout)
    for element_id in ("why", "why-devices", "why-apps", "latency-split", "layer-table-1"):
        width, height = map(int, by_id(elements, element_id).attrs["data-drawn"].split("x"))
        assert width > 100, element_id
        assert height > 20, element_id
    assert by_id(elements, "why-devices").inside("why")
    devices = {
        e.attrs["data-device"]
        for e in elements
        if e.tag == "th" and e.inside("why-devices") and "data-device" in e.attrs
    }
    assert {"npu", "nnapi-reference"} <= devices
    for app in apps:
        assert [e for e in with_class(elements, "split") if e.attrs.get("data-app") == app]
    tables = [e for e in with_class(elements, "layers") if e.inside("why")]
    assert len(tables) == len(apps)
    for table in tables:
        layers = {
            e.attrs["data-layer"]
            for e in elements
            if e.tag == "tr" and e.inside(table.attrs["id"]) and "data-layer" in e.attrs
        }
        assert {"Application", "Runtime", "Driver"} <= layers


def test_concurrent_executions_get_sub_rows(tmp_path: Path) -> None:
    """An app with frames waiting or under way at once has a sub-row per one of them in the
    detail view (poisson_gpu_npu: the two-thread video_fx 3, the one-thread photos 2, whose
    frames queue for its thread), each with execution bars that do not overlap."""
    page = tmp_path / "run.html"
    assert main(["run", str(REPO / "scenarios/poisson_gpu_npu.yaml"), "--html", str(page)]) == 0
    elements = parse_page(_chromium(tmp_path, "--dump-dom", page.as_uri()).stdout)
    for lane in ("lane-app-video_fx", "lane-app-video_fx-row1", "lane-app-photos"):
        bars = sorted(
            (float(e.attrs["x"]), float(e.attrs["x"]) + float(e.attrs["width"]))
            for e in with_class(elements, "exec")
            if e.inside(lane)
        )
        assert len(bars) > 5, lane
        for (_, end), (start, _) in itertools.pairwise(bars):
            assert end <= start + 0.6, lane  # thin bars are widened to 0.6 px
    assert by_id(elements, "lane-app-photos-row1").inside("detail")
    assert not [e for e in elements if e.attrs.get("id") == "lane-app-photos-row2"]
    assert by_id(elements, "lane-app-video_fx-row2").inside("detail")
    assert not [e for e in elements if e.attrs.get("id") == "lane-app-video_fx-row3"]
