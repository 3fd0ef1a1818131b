"""One self-contained HTML page of a run: summary tables, inline SVG figures and one script.

Nothing outside the file is referenced: no URL, font, image or external script, so the
page opens offline. The time-axis views (overview, detail, latency over time) live in
``_timeline``: the overview is SVG drawn in Python, the detail views are drawn by the
page's inline script from an embedded JSON block. Elements have stable ids and classes
(``#overview``, ``#detail``, ``#latency-time``, ``bar app-<app>``, ``preemption``,
``deadline-miss``, ``fault``, ``latency-<app>``, ``result-codes``), so tests and readers
can find them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from html import escape
from typing import Any

from nnemu._tails import MARK, footnote, slowest_only
from nnemu.pictures import _timeline
from nnemu.pictures._collect import AppPicture, RunPictures
from nnemu.pictures._common import (
    CODE_COLORS,
    OTHER_CODE_COLOR,
    app_color,
    code_color,
    fmt_ms,
    short_labels,
    slug,
    ticks,
)
from nnemu.pictures._why import WHY_CSS, why_section
from nnemu.report import Report

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px;color:#222;max-width:1400px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd}
h3{font-size:15px;margin:18px 0 6px}p.note{color:#666;font-size:13px;margin:4px 0}
table{border-collapse:collapse;font-size:13px;margin:6px 0 12px}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:right}th{background:#f4f4f4}
td.name,th.name{text-align:left}tr.fail td{background:#fde8e8}tr.pass td.mark{color:#2e7d32}
tr.fail td.mark{color:#c62828;font-weight:bold}
svg{font-size:11px;font-family:inherit}svg text{fill:#333}
.axis line,.axis path{stroke:#999;fill:none;shape-rendering:crispEdges}.axis line.grid{stroke:#e8e8e8}
.lane-bg{fill:#fafafa}.bar{stroke:#fff;stroke-width:.6}
.bar.aborted{stroke:#d62728;stroke-width:1.5}.bar.failed{stroke:#000;stroke-dasharray:2 2}
.bar.in-flight{opacity:.45}
.preemption{fill:#000}.deadline-miss{stroke:#d62728;stroke-width:2;fill:none}
.quantile{stroke:#333;stroke-dasharray:3 3}.qlabel{font-size:9px;paint-order:stroke;stroke:#fff;stroke-width:3px}
.cdf{fill:none;stroke-width:2}.legend{display:flex;flex-wrap:wrap;gap:14px;font-size:13px;margin:6px 0}
.swatch{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-1px}
.figures{display:flex;flex-wrap:wrap;gap:12px}
.occupancy{fill:#555}.deadline-miss-tick{fill:#d62728}#overview{cursor:crosshair;user-select:none}
#overview-brush{fill:rgba(31,119,180,.12);stroke:#1f77b4;stroke-width:1.5;pointer-events:none}
.fault{pointer-events:none}.fault-busy{fill:#ff9800;opacity:.18}.fault-slowdown{fill:#9c27b0;opacity:.14}
.fault-offline{fill:#607d8b;opacity:.22}.fault-transient_failure{fill:#795548;opacity:.08}
.fault-crash{stroke:#000;stroke-width:2;pointer-events:auto}.fault-crash-after{fill:#000;opacity:.07}
.fault-label{font-size:10px}.wait{opacity:.85}.exec,.refused{stroke:#555;stroke-width:.5}
.pt.late{stroke:#d62728;stroke-width:1.5}.abort{stroke-width:2;fill:none}
.refusal,.failure{stroke:#333;stroke-width:.5}.bar.thin,.exec.thin{stroke:none}
.deadline-line{stroke:#d62728;stroke-dasharray:5 3}text.deadline-label{fill:#d62728;font-size:10px}
#timeline-controls{margin:6px 0}#timeline-controls button{font:inherit;font-size:12px;margin-right:4px}
#view-label{font-size:13px;color:#444;margin-left:8px}
"""


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.3f}"


def _num(value: float) -> str:
    """A coordinate with at most one decimal (keeps the file small)."""
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


class _Page:
    def __init__(self, data: RunPictures) -> None:
        self.data = data
        self.parts: list[str] = []
        self.app_class = {app.name: f"app-{slug(app.name)}" for app in data.apps}
        self.label = short_labels([app.name for app in data.apps], limit=14)
        """Each app's name cut to fit the lane-label margin (``_timeline.LEFT``), still telling
        apps apart."""

    def add(self, *texts: str) -> None:
        self.parts.extend(texts)

    def app_css(self) -> str:
        rules = []
        for index, app in enumerate(self.data.apps):
            cls = self.app_class[app.name]
            color = app_color(index)
            rules.append(
                f".{cls}.bar,.{cls}.hist,.{cls}.pt{{fill:{color}}}.{cls}.cdf{{stroke:{color}}}"
                f".{cls}.swatch{{background:{color}}}.{cls}.swatch-box{{fill:{color}}}"
            )
        return "".join(rules)

    def class_of(self, app: str) -> str:
        return self.app_class.get(app, f"app-{slug(app)}")


# ---------------------------------------------------------------- summary tables
def _summary(page: _Page, report: Mapping[str, Any]) -> None:
    page.add('<section id="summary"><h2>Summary</h2>')
    page.add(
        '<table id="summary-apps"><tr><th class="name">app</th><th>priority</th>'
        "<th>submitted</th><th>completed</th><th>failed</th><th>dropped</th><th>in flight</th>"
        "<th>retries</th>"
        "<th>deadline misses</th><th>p50 ms</th><th>p95 ms</th><th>p99 ms</th><th>max ms</th>"
        '<th class="name">compilation</th></tr>'
    )
    priorities = {app.name: app.priority for app in page.data.apps}
    marked: set[str] = set()
    for name, app in report["apps"].items():
        lat = app["latency_ms"]
        done = app["completed"]
        slowest = {q for q in ("p95", "p99") if slowest_only(q, done)}
        marked |= slowest
        # No completion, no latency: "-" rather than a 0.000 that reads like a fast app; a
        # tail quantile that is only the slowest execution is marked (nnemu._tails).
        cells = [
            f"{lat[q]:.3f}{MARK if q in slowest else ''}" if done else "-"
            for q in ("p50", "p95", "p99", "max")
        ]
        in_flight = app.get(
            "in_flight", app["submitted"] - app["completed"] - app["failed"] - app["dropped"]
        )
        page.add(
            f'<tr><td class="name"><span class="swatch {page.class_of(name)}"></span>'
            f"{escape(name)}</td><td>{escape(priorities.get(name, ''))}</td>"
            f"<td>{app['submitted']}</td><td>{app['completed']}</td><td>{app['failed']}</td>"
            f"<td>{app['dropped']}</td><td>{in_flight}</td><td>{app['retries']}</td>"
            f"<td>{app['deadline_misses']}</td>"
            + "".join(f"<td>{cell}</td>" for cell in cells)
            + f'<td class="name">{escape(app["compile_result"])}</td></tr>'
        )
    page.add("</table>")
    if marked:
        page.add(f'<p class="note" id="summary-tails">{escape(footnote(marked))}</p>')
    page.add(
        '<table id="summary-devices"><tr><th class="name">device</th><th class="name">hal</th>'
        "<th>executions</th><th>busy</th><th>preemptions</th><th>energy</th></tr>"
    )
    for name, device in report["devices"].items():
        hal = escape(str(device.get("hal", "-")))  # (the runtime's CPU device speaks none)
        page.add(
            f'<tr><td class="name">{escape(name)}</td><td class="name">{hal}</td>'
            f"<td>{device['executions']}</td>"
            f"<td>{device['busy_fraction'] * 100:.1f}%</td><td>{device['preemptions']}</td>"
            f"<td>{device.get('energy', 0.0):.1f}</td></tr>"
        )
    page.add("</table>")
    expectations = report.get("expectations", [])
    if expectations:
        page.add('<table id="expectations"><tr><th class="name">expectation</th><th>held</th></tr>')
        for result in expectations:
            state = "pass" if result["passed"] else "fail"
            text = result["text"] + (f" ({result['why']})" if "why" in result else "")
            page.add(
                f'<tr class="{state}"><td class="name">{escape(text)}</td>'
                f'<td class="mark">{"yes" if result["passed"] else "NO"}</td></tr>'
            )
        page.add("</table>")
    else:
        page.add('<p class="note" id="expectations">The scenario states no expectations.</p>')
    page.add("</section>")


# ---------------------------------------------------------------- the time axis
def _codes_in_run(data: RunPictures) -> list[str]:
    codes = {e.code for app in data.apps for e in app.executions}
    return sorted(codes, key=lambda c: (c != "NO_ERROR", c))


def _timelines(page: _Page) -> None:
    """The overview of the whole run and the detail view below it, on one time axis."""
    data = page.data
    swatch = '<span><span class="swatch" style="background:{}"></span>{}</span>'
    page.add(
        '<section id="timelines"><h2>Timeline</h2>'
        '<p class="note">One time axis (virtual ms) for every view. The overview shows the whole '
        "run: each device's occupancy (a lane per compute unit below; the runtime's CPU path "
        "<i>nnapi-reference</i> gets a lane per execution running at once on the app threads) "
        "and each app's worst result per column, red ticks where a deadline was missed; faults "
        "of the scenario are shaded (a crash is a black line, the dead device greyed after it). "
        "Drag on the overview to zoom the detail view and the latency over time; click to "
        "centre the window there.</p>"
        '<div class="legend"><span>Device bars:</span>'
        + "".join(
            f'<span><span class="swatch {page.class_of(app.name)}"></span>{escape(app.name)}'
            f" ({app.priority})</span>"
            for app in data.apps
        )
        + '<span><svg width="12" height="10"><path class="preemption" d="M6 10l-5 -9h10z"/></svg>'
        " preempted (bar split)</span>"
        '<span><svg width="12" height="12"><path class="deadline-miss" d="M2 2l8 8m0 -8l-8 8"/>'
        "</svg> deadline missed</span>"
        '<span><svg width="18" height="12"><rect class="bar aborted" x="1" y="1" width="16"'
        ' height="10" fill="#ccc"/></svg> aborted</span></div>'
        '<div class="legend" id="timeline-codes"><span>App lanes, coloured by result code (the '
        "thin bar below: waiting from arrival until a device started it; the thick bar: from "
        "then to the result; ▼: never started):</span>"
        + "".join(swatch.format(code_color(code), escape(code)) for code in _codes_in_run(data))
        + "</div>"
    )
    page.add(_timeline.overview(data, page.label))
    page.add(
        '<div id="timeline-controls" hidden>'
        '<button id="zoom-reset" type="button">whole run</button>'
        '<button id="zoom-in" type="button">zoom in</button>'
        '<button id="zoom-out" type="button">zoom out</button>'
        '<button id="pan-left" type="button">◀ earlier</button>'
        '<button id="pan-right" type="button">later ▶</button>'
        '<span id="view-label"></span></div>'
        f'<svg id="detail" width="{_timeline.LEFT + _timeline.PLOT_W + _timeline.RIGHT}"'
        ' height="40"></svg><p class="note" id="detail-note"></p>'
        '<noscript><p class="note">The detail view and the latency over time are drawn by the '
        "page's script; with scripts off only the overview shows.</p></noscript></section>"
    )


# ---------------------------------------------------------------- latency
def _plot_frame(
    page: _Page,
    *,
    svg_id: str,
    cls: str,
    width: int,
    height: int,
    x_max: float,
    y_max: float,
    x_label: str,
    y_label: str,
    title: str,
    x_min: float = 0.0,
    y_counts: bool = False,
) -> tuple[float, float, float, float]:
    """Open an SVG with axes over [x_min, x_max]; returns (x of 0, bottom, px per x unit, px per y unit).

    ``y_counts``: the y axis counts things, so its ticks are whole numbers.
    """
    left, right, top, bottom = 56, 16, 26, height - 38
    page.add(
        f'<svg id="{svg_id}" class="{cls}"'
        f' width="{width}" height="{height}">'
        f'<text x="{left}" y="15" font-weight="bold">{escape(title)}</text>'
    )
    sx = (width - left - right) / (x_max - x_min) if x_max > x_min else 1.0
    sy = (bottom - top) / y_max if y_max > 0 else 1.0
    origin = left - x_min * sx
    page.add('<g class="axis">')
    for value in ticks(x_min, x_max, 6):
        px = origin + value * sx
        page.add(
            f'<line class="grid" x1="{_num(px)}" x2="{_num(px)}" y1="{top}" y2="{bottom}"/>'
            f'<text x="{_num(px)}" y="{bottom + 15}" text-anchor="middle">{fmt_ms(value)}</text>'
        )
    for value in ticks(0, y_max, 4, whole=y_counts):
        py = bottom - value * sy
        label = fmt_ms(value)
        page.add(
            f'<line class="grid" x1="{left}" x2="{width - right}" y1="{_num(py)}" y2="{_num(py)}"/>'
            f'<text x="{left - 5}" y="{_num(py + 4)}" text-anchor="end">{label}</text>'
        )
    page.add(
        f'<path d="M{left} {top}V{bottom}H{width - right}"/></g>'
        f'<text x="{(left + width - right) / 2:.0f}" y="{height - 6}" text-anchor="middle">'
        f"{escape(x_label)}</text>"
        f'<text transform="translate(13 {(top + bottom) / 2:.0f}) rotate(-90)"'
        f' text-anchor="middle">{escape(y_label)}</text>'
    )
    return origin, float(bottom), sx, sy


def _quantile(values: list[int], q: float) -> int:
    """Nearest-rank quantile, the rank the printed summary uses (``LatencyHistogram``)."""
    rank = max(1, -(-int(q * len(values) * 1_000_000) // 1_000_000))
    return values[min(len(values), rank) - 1]


def _histogram(page: _Page, app: AppPicture, summary: Mapping[str, Any] | None) -> None:
    """A histogram of ``app``'s latencies over their range, its p50/p95/p99 marked at the
    printed summary's values (``summary``: the app's report entry; without it, the same
    nearest rank over the exact latencies)."""
    aid = slug(app.name)
    values = sorted(app.latencies_ns)
    title = f"{app.name} (priority {app.priority}): {len(values)} completed"
    if not values:
        page.add(
            f'<svg id="latency-{aid}" class="latency" width="460" height="60">'
            f'<text x="10" y="20" font-weight="bold">{escape(title)}</text>'
            '<text x="10" y="42">no completed executions</text></svg>'
        )
        return
    bins = 40
    low, high = _padded_range(values[0] / 1e6, values[-1] / 1e6)
    width_ms = (high - low) / bins
    counts = [0] * bins
    for value in values:
        counts[max(0, min(bins - 1, int((value / 1e6 - low) / width_ms)))] += 1
    origin, bottom, sx, sy = _plot_frame(
        page,
        svg_id=f"latency-{aid}",
        cls="latency",
        width=_HIST_W,
        height=240,
        x_min=low,
        x_max=high,
        y_max=max(counts) * 1.08,
        x_label="latency, arrival to result (ms)",
        y_label="executions",
        title=title,
        y_counts=True,
    )
    cls = page.class_of(app.name)
    for index, count in enumerate(counts):
        if count:
            page.add(
                f'<rect class="hist {cls}" x="{_num(origin + (low + index * width_ms) * sx)}"'
                f' y="{_num(bottom - count * sy)}" width="{_num(max(0.5, width_ms * sx - 1))}"'
                f' height="{_num(count * sy)}"><title>{count}</title></rect>'
            )
    printed = summary.get("latency_ms", {}) if summary and summary.get("completed") else {}
    marks = [
        (name, float(printed[name]) if name in printed else _quantile(values, q) / 1e6)
        for name, q in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99))
    ]
    # (A tail quantile that is only the slowest execution is marked, as in the summary table.)
    texts = [
        f"{name}{MARK if slowest_only(name, len(values)) else ''} {value_ms:.2f}"
        for name, value_ms in marks
    ]
    places = _quantile_labels([origin + v * sx for _, v in marks], texts, _HIST_W - 16)
    for (name, value_ms), text, (x, y, anchor) in zip(marks, texts, places, strict=True):
        px = origin + value_ms * sx
        page.add(
            f'<line class="quantile" x1="{_num(px)}" x2="{_num(px)}" y1="26" y2="{_num(bottom)}">'
            f"<title>{name} {value_ms:.3f} ms</title></line>"
            f'<text x="{_num(x)}" y="{_num(y)}" text-anchor="{anchor}" class="qlabel"'
            f' data-value="{value_ms:.3f}">{text}</text>'
        )
    page.add("</svg>")


_HIST_W = 460
QLABEL_CHAR_W = 5.5
"""Width of a character of a quantile label (9 px font) used to keep labels apart, rounded up."""
QLABEL_H = 11
"""Height of a row of quantile labels."""


def _padded_range(low: float, high: float) -> tuple[float, float]:
    """The data's range with 5% padding each side (never below 0), or 1 ms around one value."""
    span = high - low
    pad = span * 0.05 if span > 0 else max(0.5, low * 0.05)
    return max(0.0, low - pad), high + pad


def _quantile_labels(
    xs: list[float], texts: list[str], right: float
) -> list[tuple[float, float, str]]:
    """(x, baseline y, text-anchor) of each quantile label, so no two label boxes overlap.

    Each label sits just right of its line (left of it when it would cross ``right``), on
    the first row where its box clears every label already placed.
    """
    placed: list[tuple[float, float, int]] = []
    out = []
    for x, text in zip(xs, texts, strict=True):
        width = QLABEL_CHAR_W * len(text)
        if x + 3 + width <= right:
            box, at, anchor = (x + 3, x + 3 + width), x + 3, "start"
        else:
            box, at, anchor = (x - 3 - width, x - 3), x - 3, "end"
        row = 0
        while any(r == row and box[0] < hi and lo < box[1] for lo, hi, r in placed):
            row += 1
        placed.append((box[0], box[1], row))
        out.append((at, 36.0 + QLABEL_H * row, anchor))
    return out


def _cdf(page: _Page) -> None:
    apps = [app for app in page.data.apps if app.latencies_ns]
    if not apps:
        return
    x_max = max(max(app.latencies_ns) for app in apps) / 1e6 * 1.02
    left, bottom, sx, sy = _plot_frame(
        page,
        svg_id="latency-cdf",
        cls="latency",
        width=620,
        height=300,
        x_max=x_max,
        y_max=1.0,
        x_label="latency, arrival to result (ms)",
        y_label="fraction of completed executions",
        title="Latency CDF per app and priority",
    )
    legend_x = 620 - 16 - 190
    legend_y = bottom - 8 - 16 * len(apps)
    for row, app in enumerate(apps):
        values = sorted(app.latencies_ns)
        n = len(values)
        step = max(1, n // 400)
        points = [(0.0, 0.0)]
        for index in [*range(0, n, step), n - 1]:
            points.append((values[index] / 1e6, (index + 1) / n))
        path = "M" + "L".join(
            f"{_num(left + px * sx)} {_num(bottom - py * sy)}" for px, py in points
        )
        page.add(
            f'<path class="cdf {page.class_of(app.name)}" d="{path}">'
            f"<title>{escape(app.name)} ({app.priority})</title></path>"
            f'<rect class="swatch-box {page.class_of(app.name)}" x="{_num(legend_x)}"'
            f' y="{_num(legend_y + row * 16)}" width="10" height="10"/>'
            f'<text x="{_num(legend_x + 14)}" y="{_num(legend_y + 9 + row * 16)}"'
            f' class="app-label"><title>{escape(app.name)}</title>'
            f"{escape(page.label[app.name])} ({app.priority})</text>"
        )
    page.add("</svg>")


# ---------------------------------------------------------------- result codes
def _result_codes(page: _Page) -> None:
    apps = page.data.apps
    codes = sorted(
        {code for app in apps for code, _ in app.codes}, key=lambda c: (c != "NO_ERROR", c)
    )
    page.add(
        '<section id="results"><h2>Result codes per app</h2>'
        '<div class="legend" id="code-palette"><span>Result codes have their own colours,'
        " never an app's:</span>"
        + "".join(
            f'<span><span class="swatch" style="background:{color}"></span>{escape(code)}</span>'
            for code, color in (*CODE_COLORS.items(), ("other", OTHER_CODE_COLOR))
        )
        + "</div>"
        '<table id="result-codes"><tr><th class="name">app</th><th>priority</th>'
        + "".join(f"<th>{escape(code)}</th>" for code in codes)
        + "<th>total</th></tr>"
    )
    for app in apps:
        counts = dict(app.codes)
        total = sum(counts.values())
        page.add(
            f'<tr data-app="{escape(app.name)}"><td class="name"><span class="swatch '
            f'{page.class_of(app.name)}"></span>{escape(app.name)}</td><td>{app.priority}</td>'
            + "".join(f'<td class="code-{slug(code)}">{counts.get(code, 0)}</td>' for code in codes)
            + f"<td>{total}</td></tr>"
        )
    page.add("</table>")
    if codes:
        width, left = 720, 110
        height = 20 + len(apps) * 24 + 30
        page.add(f'<svg id="result-codes-chart" width="{width}" height="{height}">')
        for row, app in enumerate(apps):
            total = sum(count for _, count in app.codes)
            y = 10 + row * 24
            page.add(
                f'<text x="{left - 8}" y="{y + 14}" text-anchor="end" class="app-label">'
                f"<title>{escape(app.name)}</title>{escape(page.label[app.name])}</text>"
            )
            xpos = float(left)
            for code in codes:
                count = dict(app.codes).get(code, 0)
                if not count or not total:
                    continue
                w = (width - left - 20) * count / total
                page.add(
                    f'<rect class="code code-{slug(code)}" x="{_num(xpos)}" y="{y}"'
                    f' width="{_num(w)}" height="18" fill="{code_color(code)}">'
                    f"<title>{escape(app.name)}: {escape(code)} {count} of {total}</title></rect>"
                )
                xpos += w
        legend_y = 10 + len(apps) * 24 + 14
        xpos = float(left)
        for code in codes:
            page.add(
                f'<rect x="{_num(xpos)}" y="{legend_y - 9}" width="10" height="10"'
                f' fill="{code_color(code)}"/><text x="{_num(xpos + 14)}" y="{legend_y}">'
                f"{escape(code)}</text>"
            )
            xpos += 24 + 6.5 * len(code)
        page.add("</svg>")
    page.add("</section>")


def render_html(data: RunPictures, report: Report) -> str:
    """The page as a string."""
    page = _Page(data)
    title = f"nnemu run: {data.scenario}"
    page.add(
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{_CSS}{WHY_CSS}{page.app_css()}</style></head><body>"
        f"<h1>{escape(title)}</h1>"
        f'<p class="note">seed {data.seed}, virtual time {_ms(data.end_ns)} ms. '
        "Hover a bar or mark for details.</p>"
    )
    _summary(page, report.data)
    _timelines(page)
    page.add('<section id="latency"><h2>Latency per app</h2>')
    page.add(
        "<h3>Latency over time</h3>"
        '<p class="note">Each execution at its arrival time (the zoom above applies here): '
        "a dot per completion in the app's colour (ringed red when it missed its deadline), a "
        "triangle per deadline refusal (never started), a cross per deadline abort, a square "
        "per other failure, in the result-code colours; the dashed red line is the deadline.</p>"
        '<svg id="latency-time" width="'
        f'{_timeline.LEFT + _timeline.PLOT_W + _timeline.RIGHT}" height="40"></svg>'
        '<div class="figures">'
    )
    _cdf(page)
    for app in data.apps:
        _histogram(page, app, report.data.get("apps", {}).get(app.name))
    page.add("</div></section>")
    _result_codes(page)
    page.add(why_section(data, report.data))
    # The time axis' data and script stay last, after every element they draw into.
    page.add(_timeline.data_block(data, page.label, page.app_class), _timeline.script())
    page.add("</body></html>\n")
    return "".join(page.parts)


def write_html(data: RunPictures, report: Report, path: str | os.PathLike[str]) -> None:
    """Write the page of a run to ``path`` (UTF-8).

    Raises:
        OSError: the file cannot be written.
    """
    text = render_html(data, report)
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        handle.write(text)


__all__ = ["render_html", "write_html"]
