"""The latency histograms, app labels and palettes of the HTML page."""

from __future__ import annotations

import itertools
import math
import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from nnemu import run
from nnemu.pictures import AppPicture, RunPictures, collect, render_html
from nnemu.pictures._common import APP_COLORS, CODE_COLORS, OTHER_CODE_COLOR, short_labels
from nnemu.pictures._html import QLABEL_CHAR_W, QLABEL_H
from nnemu.scenario import load_scenario
from tests.unit.pictures.dom import by_id, parse_page
from tests.unit.pictures.test_pictures import _report_for

REPO = Path(__file__).resolve().parents[3]


def _app(name: str, latencies_ns: list[int], codes: tuple[tuple[str, int], ...] = ()) -> AppPicture:
    return AppPicture(
        name=name,
        uid=10050,
        priority="HIGH",
        latencies_ns=tuple(latencies_ns),
        codes=codes or (("NO_ERROR", len(latencies_ns)),),
        failures=(),
    )


def _page(*apps: AppPicture) -> str:
    data = RunPictures(scenario="synthetic", seed=1, end_ns=10**8, apps=apps, devices=())
    return render_html(data, _report_for(data))


def _svg(text: str, svg_id: str) -> str:
    start = text.index(f'<svg id="{svg_id}"')
    return text[start : text.index("</svg>", start)]


def _label_boxes(svg: str) -> list[tuple[float, float, float, float]]:
    """(left, right, top, bottom) of each quantile label, from its position and text."""
    boxes = []
    for x, y, anchor, label in re.findall(
        r'<text x="([\d.-]+)" y="([\d.-]+)" text-anchor="(\w+)" class="qlabel"[^>]*>([^<]*)<', svg
    ):
        width = QLABEL_CHAR_W * len(label)
        left = float(x) if anchor == "start" else float(x) - width
        boxes.append((left, left + width, float(y) - QLABEL_H + 2, float(y) + 2))
    return boxes


def _overlap(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[0] < b[1] and b[0] < a[1] and a[2] < b[3] and b[2] < a[3]


def test_histogram_x_axis_spans_the_data_not_zero() -> None:
    """A 4.7-5.3 ms spread fills the histogram: the axis starts near 4.7 ms, not at 0."""
    latencies = [4_700_000 + 6_000 * i for i in range(101)]
    svg = _svg(_page(_app("camera", latencies)), "latency-camera")
    tick_values = [float(v) for v in re.findall(r'text-anchor="middle">([\d.]+)</text>', svg)]
    assert tick_values
    assert min(tick_values) >= 4.5
    assert max(tick_values) <= 5.5
    bars = [
        (float(x), float(w))
        for x, w in re.findall(r'<rect class="hist[^"]*" x="([\d.]+)"[^>]*width="([\d.]+)"', svg)
    ]
    used = max(x + w for x, w in bars) - min(x for x, _ in bars)
    assert used >= 0.8 * (460 - 56 - 16)


def test_histogram_of_one_value_has_a_range() -> None:
    """When every latency is the same the axis still has a width around that value."""
    svg = _svg(_page(_app("camera", [5_000_000] * 10)), "latency-camera")
    tick_values = [float(v) for v in re.findall(r'text-anchor="middle">([\d.]+)</text>', svg)]
    assert len(tick_values) >= 2
    assert min(tick_values) <= 5 <= max(tick_values)


def test_histogram_counts_are_whole_numbers() -> None:
    """A histogram of three executions counts them 0, 1 on its y axis, never 0.5."""
    svg = _svg(_page(_app("camera", [5_000_000, 6_000_000, 6_500_000])), "latency-camera")
    counts = re.findall(r'text-anchor="end">([\d.]+)</text>', svg)
    assert counts == ["0", "1"]


@given(
    st.lists(st.integers(min_value=1, max_value=2_000_000_000), min_size=1, max_size=300),
)
def test_quantile_labels_never_overlap(latencies: list[int]) -> None:
    """However close p50, p95 and p99 are, no two of their labels overlap."""
    boxes = _label_boxes(_svg(_page(_app("camera", latencies)), "latency-camera"))
    assert len(boxes) == 3
    for a, b in itertools.combinations(boxes, 2):
        assert not _overlap(a, b), (a, b)
    assert all(box[0] >= 0 and box[1] <= 460 for box in boxes)


def test_two_apps_one_npu_labels_and_summary_agree() -> None:
    """In two_apps_one_npu the labels do not overlap and show the printed p50/p95/p99."""
    box: list[RunPictures] = []
    report = run(
        load_scenario(REPO / "scenarios/two_apps_one_npu.yaml"),
        keep_executions=True,
        inspect=lambda emulator: box.append(collect(emulator)),
    )
    text = render_html(box[0], report)
    for app in box[0].apps:
        svg = _svg(text, f"latency-{app.name}")
        boxes = _label_boxes(svg)
        for a, b in itertools.combinations(boxes, 2):
            assert not _overlap(a, b), (app.name, a, b)
        shown = [float(v) for v in re.findall(r'class="qlabel" data-value="([\d.]+)"', svg)]
        printed = report.data["apps"][app.name]["latency_ms"]
        for value, key in zip(shown, ("p50", "p95", "p99"), strict=True):
            assert math.isclose(value, printed[key], rel_tol=2e-3, abs_tol=1e-3), (key, value)


def test_names_sharing_a_long_prefix_stay_distinct() -> None:
    """Two apps whose names share 15+ characters get different labels and full-name tooltips."""
    names = ["com.example.camera.front", "com.example.camera.back"]
    text = _page(*(_app(name, [1_000_000, 2_000_000]) for name in names))
    labels = re.findall(r'class="app-label"><title>([^<]*)</title>([^<]*)<', text)
    assert {title for title, _ in labels} == set(names)
    per_name: dict[str, set[str]] = {}
    for title, label in labels:
        per_name.setdefault(title, set()).add(label)
    assert per_name[names[0]].isdisjoint(per_name[names[1]])
    assert all(len(label.removesuffix(" (HIGH)")) <= 14 for _, label in labels)
    rows = [e.attrs.get("data-app") for e in parse_page(text) if e.inside("result-codes")]
    assert set(names) <= set(rows)


def test_short_labels_keep_names_apart() -> None:
    """Labels are short when they can be and distinct whenever the names are."""
    labels = short_labels(["cam", "a" * 20 + "X" + "b" * 20, "a" * 20 + "Y" + "b" * 20])
    assert labels["cam"] == "cam"
    assert len(set(labels.values())) == 3


def _rgb(color: str) -> tuple[int, ...]:
    return tuple(int(color[i : i + 2], 16) for i in (1, 3, 5))


def test_result_code_palette_is_disjoint_from_app_colours() -> None:
    """No result-code colour is an app colour or close to one."""
    codes = [*CODE_COLORS.values(), OTHER_CODE_COLOR]
    assert len(set(codes)) == len(codes)
    for code, app in itertools.product(codes, APP_COLORS):
        assert math.dist(_rgb(code), _rgb(app)) >= 60, (code, app)


def test_page_legend_documents_the_code_palette() -> None:
    """The result-code section's legend lists every code colour."""
    text = _page(_app("camera", [1_000_000], codes=(("MISSED_DEADLINE_TRANSIENT", 1),)))
    by_id(parse_page(text), "code-palette")
    legend = text[text.index('id="code-palette"') :]
    legend = legend[: legend.index("</div>")]
    for code, color in CODE_COLORS.items():
        assert f"background:{color}" in legend
        assert code in legend
    fill = re.search(r'class="code code-MISSED_DEADLINE_TRANSIENT"[^>]*fill="(#\w+)"', text)
    assert fill
    assert fill.group(1) == CODE_COLORS["MISSED_DEADLINE_TRANSIENT"]


def test_a_tail_label_that_is_the_slowest_execution_is_marked() -> None:
    """Over 15 executions the p95 and p99 are the slowest one, over 30 the p99: their labels
    carry the summary table's ``*`` (the page's footnote explains it); over 200 none does."""
    few = _svg(_page(_app("camera", [10**6 * (i + 1) for i in range(15)])), "latency-camera")
    labels = re.findall(r'class="qlabel"[^>]*>([^<]*)<', few)
    assert labels == ["p50 8.00", "p95* 15.00", "p99* 15.00"]
    some = _svg(_page(_app("camera", [10**6 * (i + 1) for i in range(30)])), "latency-camera")
    labels = re.findall(r'class="qlabel"[^>]*>([^<]*)<', some)
    assert labels == ["p50 15.00", "p95 29.00", "p99* 30.00"]
    many = _svg(_page(_app("camera", [10**5 * (i + 1) for i in range(200)])), "latency-camera")
    assert not any("*" in label for label in re.findall(r'class="qlabel"[^>]*>([^<]*)<', many))
