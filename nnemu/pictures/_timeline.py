"""The page's one time axis: a whole-run overview, a zoomable detail view, latency over time.

The overview is SVG drawn here, downsampled to ``OVERVIEW_BINS`` columns (a device's
occupancy per column, an app's worst result per column), so its size does not grow with
the run. The detail view and the latency-over-time panels are drawn in the browser by a
small inline script from a compact JSON block (columnar arrays of integer µs, delta-coded)
for the visible window only; a lane with more than ``DETAIL_CAP`` items in the window is
drawn binned instead, with a note, so a 50k-execution run stays responsive.

Stable ids and classes: ``#overview`` (rows ``#overview-device-<device>``,
``#overview-app-<app>``, fault marks ``.fault``), ``#overview-brush``, ``#detail`` (lanes
``#lane-device-<device>-<unit>``, ``#lane-app-<app>`` and, for an app with executions waiting
or under way at once, a sub-row per one of them, ``#lane-app-<app>-row<k>`` (``sub_rows``); ``.bar``,
``.exec``, ``.wait``, ``.preemption``,
``.deadline-miss``, ``.fault``; ``data-t0-ms``/``data-t1-ms`` give the window),
``#detail-axis``, ``#latency-time`` (panels ``#latency-time-<app>``), ``#run-data`` (the
JSON). The window can be set from the URL (``#t0=500&t1=600``, ms) or from script
(``window.nnemuView.zoom(t0_ms, t1_ms)``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from html import escape
from typing import Any

from nnemu.pictures._collect import (
    AppPicture,
    DevicePicture,
    ExecutionPicture,
    FaultPicture,
    RunPictures,
)
from nnemu.pictures._common import (
    CODE_COLORS,
    OTHER_CODE_COLOR,
    app_color,
    code_color,
    fmt_ms,
    slug,
    ticks,
)

LEFT = 140
"""Width of the lane labels' margin (px): a device name of ``LABEL_CHARS`` characters and
its unit (``nnapi-reference u0``) fit whole."""
LABEL_CHARS = 16
"""Longest device name a lane label shows whole; a longer one is cut in its middle (its
tooltip has it whole)."""
PLOT_W = 1140
"""Width of the time axis (px), the same in every view."""
RIGHT = 20
OVERVIEW_BINS = 570
"""Columns of the overview (2 px each)."""
DETAIL_CAP = 1500
"""Most items one detail lane draws one by one; above it the lane is drawn binned."""
POINTS_CAP = 3000
"""Most latency points one panel draws one by one; above it, each column's extremes."""
_ROW_H = 12
_ROW_GAP = 3


def _num(value: float) -> str:
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def _us(ns: int) -> int:
    return (ns + 500) // 1000


def _deltas(values: Iterable[int]) -> list[int]:
    out, previous = [], 0
    for value in values:
        out.append(value - previous)
        previous = value
    return out


_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _small(values: Sequence[int]) -> str | list[int]:
    """A column of small non-negative integers as one character each (``0-9a-zA-Z``), else
    the list itself."""
    if all(0 <= value < len(_DIGITS) for value in values):
        return "".join(_DIGITS[value] for value in values)
    return list(values)


def sub_rows(executions: Sequence[ExecutionPicture]) -> list[int]:
    """The sub-row of each execution in its app's lane: executions whose bars overlap go on
    different sub-rows. A bar is drawn from the arrival (the thin wait bar) to the result,
    so that is the stretch an execution holds its row for.

    Each execution takes the lowest sub-row free when it arrives, in order of arrival (ties
    in the app's order), so an app has as many rows as it had executions waiting or under
    way at once; the same run always gives the same rows.
    """
    order = sorted(range(len(executions)), key=lambda i: (executions[i].arrival_ns, i))
    free_at: list[int] = []
    rows = [0] * len(executions)
    for index in order:
        execution = executions[index]
        start = execution.arrival_ns
        row = next((r for r, end in enumerate(free_at) if end <= start), len(free_at))
        if row == len(free_at):
            free_at.append(0)
        free_at[row] = max(start, execution.finished_ns)
        rows[index] = row
    return rows


def _worst(codes: dict[str, int]) -> str:
    """The code a column shows: any error over NO_ERROR, the most frequent error first."""
    errors = [(-count, code) for code, count in codes.items() if code != "NO_ERROR"]
    return min(errors)[1] if errors else "NO_ERROR"


# ---------------------------------------------------------------- overview
class _Bins:
    def __init__(self, end_ns: int) -> None:
        self.end_ns = max(end_ns, 1)
        self.width_ns = self.end_ns / OVERVIEW_BINS

    def index(self, ns: int) -> int:
        return max(0, min(OVERVIEW_BINS - 1, int(ns / self.width_ns)))

    def occupancy(self, stretches: Iterable[tuple[int, int]], units: int) -> list[float]:
        """Busy fraction of each column, over ``units`` units."""
        busy = [0.0] * OVERVIEW_BINS
        width = self.width_ns
        for start, end in stretches:
            if end <= start:
                continue
            first, last = self.index(start), self.index(end)
            for column in range(first, last + 1):
                low = max(start, column * width)
                high = min(end, (column + 1) * width)
                if high > low:
                    busy[column] += high - low
        return [min(1.0, value / (width * max(units, 1))) for value in busy]


def _x(bins: _Bins, ns: float) -> float:
    return LEFT + ns / bins.end_ns * PLOT_W


def _device_row(out: list[str], device: DevicePicture, bins: _Bins, y: float, rid: str) -> None:
    stretches = [(start, end) for job in device.jobs for start, end, _ in job.segments]
    busy = bins.occupancy(stretches, device.units)
    column_w = PLOT_W / OVERVIEW_BINS
    out.append(f'<g id="{rid}" class="overview-row" data-name="{escape(device.name)}">')
    column = 0
    while column < OVERVIEW_BINS:
        height = round(busy[column] * _ROW_H)
        end = column + 1
        while end < OVERVIEW_BINS and round(busy[end] * _ROW_H) == height:
            end += 1
        if height:
            out.append(
                f'<rect class="occupancy" x="{_num(LEFT + column * column_w)}"'
                f' y="{_num(y + _ROW_H - height)}" width="{_num((end - column) * column_w)}"'
                f' height="{height}"/>'
            )
        column = end
    out.append("</g>")


def _app_row(out: list[str], app: AppPicture, bins: _Bins, y: float, rid: str) -> None:
    columns: list[dict[str, int]] = [{} for _ in range(OVERVIEW_BINS)]
    missed = [False] * OVERVIEW_BINS
    for execution in app.executions:
        column = bins.index(execution.finished_ns)
        codes = columns[column]
        codes[execution.code] = codes.get(execution.code, 0) + 1
        missed[column] = missed[column] or execution.deadline_missed
    column_w = PLOT_W / OVERVIEW_BINS
    out.append(f'<g id="{rid}" class="overview-row" data-name="{escape(app.name)}">')
    column = 0
    while column < OVERVIEW_BINS:
        shown = _worst(columns[column]) if columns[column] else ""
        end = column + 1
        while end < OVERVIEW_BINS and (_worst(columns[end]) if columns[end] else "") == shown:
            end += 1
        if shown:
            out.append(
                f'<rect class="result code-{slug(shown)}" x="{_num(LEFT + column * column_w)}"'
                f' y="{_num(y)}" width="{_num((end - column) * column_w)}" height="{_ROW_H}"'
                f' fill="{code_color(shown)}"/>'
            )
        column = end
    for column, flag in enumerate(missed):
        if flag:
            out.append(
                f'<rect class="deadline-miss-tick" x="{_num(LEFT + column * column_w)}"'
                f' y="{_num(y - 2)}" width="{_num(column_w)}" height="3"/>'
            )
    out.append("</g>")


def _fault_marks(
    out: list[str],
    faults: Sequence[FaultPicture],
    bins: _Bins,
    top: float,
    bottom: float,
    rows: dict[str, float],
) -> None:
    """Fault windows across every row; after a crash, the dead device's row greyed
    (``rows``: each device row's top)."""
    for fault in faults:
        x0 = _x(bins, fault.start_ns)
        end_ns = bins.end_ns if fault.end_ns is None else min(fault.end_ns, bins.end_ns)
        title = escape(_fault_title(fault))
        if fault.kind == "crash":
            row = rows.get(fault.device, top)
            out.append(
                f'<rect class="fault fault-crash-after" x="{_num(x0)}" y="{_num(row - 1)}"'
                f' width="{_num(max(0.0, _x(bins, end_ns) - x0))}" height="{_ROW_H + 2}"/>'
                f'<line class="fault fault-crash" x1="{_num(x0)}" x2="{_num(x0)}"'
                f' y1="{_num(top)}" y2="{_num(bottom)}" data-device="{escape(fault.device)}"'
                f' data-start-ms="{fmt_ms(fault.start_ns / 1e6)}"><title>{title}</title></line>'
            )
        else:
            out.append(
                f'<rect class="fault fault-{slug(fault.kind)}" x="{_num(x0)}" y="{_num(top)}"'
                f' width="{_num(max(1.0, _x(bins, end_ns) - x0))}" height="{_num(bottom - top)}"'
                f' data-device="{escape(fault.device)}"'
                f' data-start-ms="{fmt_ms(fault.start_ns / 1e6)}"><title>{title}</title></rect>'
            )


def _fault_title(fault: FaultPicture) -> str:
    when = f"from {fmt_ms(fault.start_ns / 1e6)} ms"
    if fault.kind == "crash":
        return f"{fault.device}: driver crashed at {fmt_ms(fault.start_ns / 1e6)} ms"
    until = "to the end" if fault.end_ns is None else f"to {fmt_ms(fault.end_ns / 1e6)} ms"
    extra = f" x{fault.factor:g}" if fault.kind == "slowdown" else ""
    return f"{fault.device}: {fault.kind}{extra} {when} {until}"


def _axis(out: list[str], low_ms: float, high_ms: float, y: float) -> None:
    out.append(f'<g class="axis"><path d="M{LEFT} {_num(y)}H{LEFT + PLOT_W}"/>')
    scale = PLOT_W / max(high_ms - low_ms, 1e-9)
    for value in ticks(low_ms, high_ms, target=10):
        x = LEFT + (value - low_ms) * scale
        out.append(
            f'<line x1="{_num(x)}" x2="{_num(x)}" y1="{_num(y)}" y2="{_num(y + 4)}"/>'
            f'<text x="{_num(x)}" y="{_num(y + 15)}" text-anchor="middle">{fmt_ms(value)}</text>'
        )
    out.append(f'<text x="{LEFT - 26}" y="{_num(y + 15)}" text-anchor="end">ms</text></g>')


def devices_of(data: RunPictures) -> list[DevicePicture]:
    """The driver devices, then the runtime's CPU path."""
    return [*data.devices, *([data.cpu] if data.cpu is not None else [])]


def overview(data: RunPictures, labels: dict[str, str]) -> str:
    """The whole-run strip: a row per device (occupancy) and per app (worst result), faults."""
    bins = _Bins(data.end_ns)
    devices = devices_of(data)
    out: list[str] = []
    count = len(devices) + len(data.apps)
    top = 8.0
    height = top + count * (_ROW_H + _ROW_GAP) + 8 + 22
    out.append(
        f'<svg id="overview" width="{LEFT + PLOT_W + RIGHT}" height="{_num(height)}"'
        f' data-end-ms="{fmt_ms(data.end_ns / 1e6)}">'
        f'<rect class="lane-bg" x="{LEFT}" y="{_num(top - 3)}" width="{PLOT_W}"'
        f' height="{_num(count * (_ROW_H + _ROW_GAP) + 3)}"/>'
    )
    y = top
    rows: dict[str, float] = {}
    for device in devices:
        rows[device.name] = y
        out.append(
            f'<text x="{LEFT - 8}" y="{_num(y + _ROW_H - 2)}" text-anchor="end">'
            f"<title>{escape(device.name)}</title>{escape(_cut(device.name))}</text>"
        )
        _device_row(out, device, bins, y, f"overview-device-{slug(device.name)}")
        y += _ROW_H + _ROW_GAP
    for app in data.apps:
        out.append(
            f'<text x="{LEFT - 8}" y="{_num(y + _ROW_H - 2)}" text-anchor="end" class="app-label">'
            f"<title>{escape(app.name)}</title>{escape(labels[app.name])}</text>"
        )
        _app_row(out, app, bins, y, f"overview-app-{slug(app.name)}")
        y += _ROW_H + _ROW_GAP
    _fault_marks(out, data.faults, bins, top - 3, y, rows)
    _axis(out, 0.0, data.end_ns / 1e6, y + 4)
    out.append(
        f'<rect id="overview-brush" x="{LEFT}" y="{_num(top - 3)}" width="{PLOT_W}"'
        f' height="{_num(y - top + 3)}"/></svg>'
    )
    return "".join(out)


def _cut(name: str, limit: int = LABEL_CHARS) -> str:
    return name if len(name) <= limit else name[: limit // 2] + "\u2026" + name[-(limit // 2 - 1) :]


# ---------------------------------------------------------------- data for the script
def run_data(data: RunPictures, labels: dict[str, str], classes: dict[str, str]) -> dict[str, Any]:
    """The compact JSON the script draws from: integer µs, arrays delta-coded or relative.

    Apps: ``arr`` arrival deltas; ``start`` first start after arrival (-1: never started);
    ``end`` result after arrival; ``code`` index into ``codes``; ``miss`` indexes of the
    executions that missed their deadline; ``sub`` each execution's sub-row of the app's lane
    (``sub_rows``), only when an app has executions waiting or under way at once. Devices: per lane, ``s`` start deltas, ``d``
    durations, ``j`` job index deltas, ``p``/``x`` indexes of bars ending in a preemption / a
    missed deadline; ``jobs`` the jobs' app, priority, arrival, start, end and status.
    Columns of small integers (codes, app, priority, status, preemptions) are strings of one
    character each (``0-9a-zA-Z``) when every value fits.
    """
    codes: list[str] = []
    code_index: dict[str, int] = {}

    def code_of(code: str) -> int:
        if code not in code_index:
            code_index[code] = len(codes)
            codes.append(code)
        return code_index[code]

    names = [app.name for app in data.apps]
    name_index = {name: index for index, name in enumerate(names)}

    def name_of(name: str) -> int:
        if name not in name_index:
            name_index[name] = len(names)
            names.append(name)
        return name_index[name]

    apps = []
    for index, app in enumerate(data.apps):
        executions = app.executions
        arrivals = [_us(e.arrival_ns) for e in executions]
        apps.append(
            {
                "name": app.name,
                "label": labels[app.name],
                "cls": classes[app.name],
                "color": app_color(index),
                "prio": app.priority,
                "timeout": None if app.timeout_ns is None else _us(app.timeout_ns),
                "arr": _deltas(arrivals),
                "start": [
                    -1 if e.started_ns is None else _us(e.started_ns) - a
                    for e, a in zip(executions, arrivals, strict=True)
                ],
                "end": [_us(e.finished_ns) - a for e, a in zip(executions, arrivals, strict=True)],
                "code": _small([code_of(e.code) for e in executions]),
                "miss": [i for i, e in enumerate(executions) if e.deadline_missed],
            }
        )
        rows = sub_rows(executions)
        if any(rows):
            apps[-1]["sub"] = _small(rows)
    devices = []
    priorities = ["LOW", "MEDIUM", "HIGH", "-"]
    for device in devices_of(data):
        jobs = device.jobs
        lanes: list[list[tuple[int, int, int, bool, bool]]] = [[] for _ in range(device.units)]
        for number, job in enumerate(jobs):
            for index, (start, end, lane) in enumerate(job.segments):
                while lane >= len(lanes):
                    lanes.append([])
                last = index == len(job.segments) - 1
                preempted = not last or (job.preempted > 0 and end < job.finished_ns)
                missed = last and job.deadline_missed
                lanes[lane].append((_us(start), _us(end), number, preempted, missed))
        arrivals = [_us(job.arrived_ns) for job in jobs]
        lane_data = []
        for bars in lanes:
            bars.sort()
            lane_data.append(
                {
                    "s": _deltas(bar[0] for bar in bars),
                    "d": [bar[1] - bar[0] for bar in bars],
                    "j": _deltas(bar[2] for bar in bars),
                    "p": [i for i, bar in enumerate(bars) if bar[3]],
                    "x": [i for i, bar in enumerate(bars) if bar[4]],
                }
            )
        devices.append(
            {
                "name": device.name,
                "preemption": device.preemption,
                "lanes": lane_data,
                "jobs": {
                    "app": _small([name_of(job.app) for job in jobs]),
                    "prio": _small(
                        [
                            priorities.index(job.priority) if job.priority in priorities else 3
                            for job in jobs
                        ]
                    ),
                    "arr": _deltas(arrivals),
                    "start": [
                        -1 if job.started_ns is None else _us(job.started_ns) - a
                        for job, a in zip(jobs, arrivals, strict=True)
                    ],
                    "end": [
                        _us(job.finished_ns) - a for job, a in zip(jobs, arrivals, strict=True)
                    ],
                    "status": _small([code_of(job.status) for job in jobs]),
                    "pre": _small([job.preempted for job in jobs]),
                },
            }
        )
    return {
        "end": _us(data.end_ns),
        "left": LEFT,
        "labelChars": LABEL_CHARS,
        "width": PLOT_W,
        "cap": DETAIL_CAP,
        "pointsCap": POINTS_CAP,
        "codes": codes,
        "codeColors": [CODE_COLORS.get(code, OTHER_CODE_COLOR) for code in codes],
        "names": names,
        "classes": [classes.get(name, f"app-{slug(name)}") for name in names],
        "priorities": priorities,
        "apps": apps,
        "devices": devices,
        "faults": [
            {
                "device": fault.device,
                "kind": fault.kind,
                "t0": _us(fault.start_ns),
                "t1": None if fault.end_ns is None else _us(fault.end_ns),
                "factor": fault.factor,
                "title": _fault_title(fault),
            }
            for fault in data.faults
        ],
    }


def data_block(data: RunPictures, labels: dict[str, str], classes: dict[str, str]) -> str:
    """The JSON block, safe inside a ``<script>`` element."""
    text = json.dumps(run_data(data, labels, classes), separators=(",", ":"), ensure_ascii=True)
    return (
        '<script type="application/json" id="run-data">'
        + text.replace("</", "<\\/").replace("<!--", "<\\!--")
        + "</script>"
    )


def script() -> str:
    """The inline script that draws the detail view and latency over time."""
    return "<script>" + _SCRIPT + "</script>"


_SCRIPT = r"""
(function () {
"use strict";
var D = JSON.parse(document.getElementById("run-data").textContent);
var L = D.left, W = D.width, END = Math.max(D.end, 1);
var LANE_H = 22, BAR_H = 14, TOP = 18, PANEL_H = 120;
var v0 = 0, v1 = END;

var DIGITS = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
function small(a) {  // a column of small integers, one character each, or a plain list
  if (typeof a !== "string") return a;
  var o = new Array(a.length);
  for (var i = 0; i < a.length; i++) o[i] = DIGITS.indexOf(a.charAt(i));
  return o;
}
function undelta(a) { var o = new Array(a.length), t = 0; for (var i = 0; i < a.length; i++) { t += a[i]; o[i] = t; } return o; }
function esc(s) { return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;"); }
function ms(us) { return (us / 1000).toFixed(3); }
function num(v) { return (Math.round(v * 10) / 10).toString(); }
function lowerBound(a, v) { var lo = 0, hi = a.length; while (lo < hi) { var m = (lo + hi) >> 1; if (a[m] < v) lo = m + 1; else hi = m; } return lo; }
function niceStep(span, target) {
  if (span <= 0) return 1;
  var raw = span / target, p = Math.pow(10, Math.floor(Math.log10(raw)));
  var f = [1, 2, 5, 10];
  for (var i = 0; i < f.length; i++) if (raw <= f[i] * p) return f[i] * p;
  return 10 * p;
}
function fmt(v) { return String(parseFloat(v.toFixed(6))); }

// Decode the columns once.
D.apps.forEach(function (app) {
  app.code = small(app.code);
  app.A = undelta(app.arr);
  app.S = app.A.map(function (a, i) { return app.start[i] < 0 ? -1 : a + app.start[i]; });
  app.E = app.A.map(function (a, i) { return a + app.end[i]; });
  app.span = 0;
  for (var i = 0; i < app.end.length; i++) if (app.end[i] > app.span) app.span = app.end[i];
  app.missSet = {}; app.miss.forEach(function (i) { app.missSet[i] = true; });
  app.sub = app.sub === undefined ? null : small(app.sub);
  app.rows = 1;
  if (app.sub) for (var r = 0; r < app.sub.length; r++) if (app.sub[r] >= app.rows) app.rows = app.sub[r] + 1;
});
D.devices.forEach(function (dev) {
  var j = dev.jobs;
  ["app", "prio", "status", "pre"].forEach(function (key) { j[key] = small(j[key]); });
  j.A = undelta(j.arr);
  dev.lanes.forEach(function (lane) {
    lane.S = undelta(lane.s);
    lane.j = undelta(lane.j);
    lane.E = lane.S.map(function (s, i) { return s + lane.d[i]; });
    lane.pSet = {}; lane.p.forEach(function (i) { lane.pSet[i] = true; });
    lane.xSet = {}; lane.x.forEach(function (i) { lane.xSet[i] = true; });
  });
});

function slug(s) { return String(s).replace(/[^A-Za-z0-9_-]/g, "-") || "-"; }
function cut(s) { return s.length <= D.labelChars ? s : s.slice(0, D.labelChars / 2) + "\u2026" + s.slice(1 - D.labelChars / 2); }

// Rows of the detail view: each device's units, then each app.
var rows = [];
D.devices.forEach(function (dev) {
  dev.lanes.forEach(function (lane, u) {
    rows.push({kind: "dev", dev: dev, lane: lane, unit: u,
               id: "lane-device-" + slug(dev.name) + "-" + u,
               label: cut(dev.name) + " u" + u, title: dev.name + ", unit " + u});
  });
});
D.apps.forEach(function (app) {
  // An app with executions waiting or under way at once has a sub-row per one of them (app.sub).
  for (var k = 0; k < app.rows; k++) {
    var title = app.name + " (" + app.prio + ")" + (app.rows > 1 ? ", executions under way at once: row " + (k + 1) + " of " + app.rows : "");
    rows.push({kind: "app", app: app, sub: app.rows > 1 ? k : null, id: "lane-app-" + slug(app.name) + (k ? "-row" + k : ""),
               label: k ? "\u22ee " + (k + 1) : app.label, title: title});
  }
});

function xOf(t) { return L + (t - v0) * W / (v1 - v0); }
function clipBar(s, e) {
  var x0 = Math.max(L, xOf(s)), x1 = Math.min(L + W, xOf(e));
  return [x0, Math.max(0.6, x1 - x0)];
}

function axis(y, out) {
  var span = (v1 - v0) / 1000, step = niceStep(span, 10);
  out.push('<g class="axis" id="detail-axis-ticks"><path d="M' + L + " " + y + "H" + (L + W) + '"/>');
  for (var v = Math.ceil(v0 / 1000 / step) * step; v <= v1 / 1000 + step * 1e-9; v += step) {
    var x = xOf(v * 1000);
    out.push('<line x1="' + num(x) + '" x2="' + num(x) + '" y1="' + y + '" y2="' + (y + 4) + '"/>' +
             '<text class="tick" x="' + num(x) + '" y="' + (y + 15) + '" text-anchor="middle">' + fmt(v) + "</text>");
  }
  out.push('<text x="' + (L - 26) + '" y="' + (y + 15) + '" text-anchor="end">ms</text></g>');
}

var deviceRows = {};  // device name -> [top, bottom] of its lanes in the detail view
rows.forEach(function (row, r) {
  if (row.kind !== "dev") return;
  var span = deviceRows[row.dev.name] || (deviceRows[row.dev.name] = [TOP + r * LANE_H, 0]);
  span[1] = TOP + (r + 1) * LANE_H - 4;
});

function faultBands(top, bottom, out) {
  D.faults.forEach(function (f) {
    var t1 = f.t1 === null ? END : f.t1;
    if (f.kind === "crash") {
      if (f.t0 > v1) return;
      var xc = xOf(Math.max(f.t0, v0)), span = deviceRows[f.device] || [top, bottom];
      out.push('<rect class="fault fault-crash-after" x="' + num(xc) + '" y="' + span[0] + '" width="' + num(Math.max(0, L + W - xc)) + '" height="' + (span[1] - span[0]) + '"/>');
      if (f.t0 >= v0) {
        out.push('<line class="fault fault-crash" x1="' + num(xc) + '" x2="' + num(xc) + '" y1="' + top + '" y2="' + bottom + '"><title>' + esc(f.title) + "</title></line>" +
                 '<text class="fault-label" x="' + num(xc + 3) + '" y="' + (top - 4) + '">' + esc(f.device) + " crash</text>");
      }
      return;
    }
    if (t1 < v0 || f.t0 > v1) return;
    var b = clipBar(f.t0, t1);
    out.push('<rect class="fault fault-' + slug(f.kind) + '" x="' + num(b[0]) + '" y="' + top + '" width="' + num(b[1]) + '" height="' + (bottom - top) + '"><title>' + esc(f.title) + "</title></rect>" +
             '<text class="fault-label" x="' + num(b[0] + 3) + '" y="' + (top - 4) + '">' + esc(f.device + " " + f.kind) + "</text>");
  });
}

function jobTitle(dev, k) {
  var j = dev.jobs, a = j.A[k];
  var parts = [D.names[j.app[k]] + " (" + D.priorities[j.prio[k]] + ")", "arrived " + ms(a) + " ms",
               j.start[k] < 0 ? "never started" : "started " + ms(a + j.start[k]) + " ms",
               "ended " + ms(a + j.end[k]) + " ms: " + D.codes[j.status[k]]];
  if (j.pre[k]) parts.push("preempted " + j.pre[k] + "x");
  return esc(parts.join(", "));
}

function execTitle(app, i) {
  var a = app.A[i], s = app.S[i], e = app.E[i];
  var parts = [app.name + " (" + app.prio + ")", "arrived " + ms(a) + " ms",
               s < 0 ? "never started on a device" : "started " + ms(s) + " ms (waited " + ms(s - a) + " ms)",
               "result " + ms(e) + " ms: " + D.codes[app.code[i]], "latency " + ms(e - a) + " ms"];
  if (app.missSet[i]) parts.push("deadline missed");
  return esc(parts.join(", "));
}

function binned(y, pairs, units, out, cls) {
  // pairs: [start, end] list; draws per-2px-column occupancy.
  var n = W / 2, busy = new Float64Array(n), width = (v1 - v0) / n;
  for (var i = 0; i < pairs.length; i++) {
    var s = Math.max(pairs[i][0], v0), e = Math.min(pairs[i][1], v1);
    if (e <= s) continue;
    var c0 = Math.floor((s - v0) / width), c1 = Math.min(n - 1, Math.floor((e - v0) / width));
    for (var c = c0; c <= c1; c++) {
      var lo = Math.max(s, v0 + c * width), hi = Math.min(e, v0 + (c + 1) * width);
      if (hi > lo) busy[c] += hi - lo;
    }
  }
  for (var c2 = 0; c2 < n; c2++) {
    var h = Math.round(Math.min(1, busy[c2] / width / units) * BAR_H);
    if (h) out.push('<rect class="' + cls + '" x="' + (L + 2 * c2) + '" y="' + (y + BAR_H - h) + '" width="2" height="' + h + '"/>');
  }
}

function drawDevLane(row, y, out) {
  var lane = row.lane, dev = row.dev, S = lane.S, E = lane.E;
  var lo = lowerBound(E, v0 + 1), hi = lowerBound(S, v1);
  var count = Math.max(0, hi - lo), marks = [];
  if (count > D.cap) {
    var pairs = [];
    for (var i = lo; i < hi; i++) pairs.push([S[i], E[i]]);
    binned(y, pairs, 1, out, "occupancy");
    return count;
  }
  for (var k = lo; k < hi; k++) {
    var b = clipBar(S[k], E[k]), job = lane.j[k], extra = "";
    var st = D.codes[dev.jobs.status[job]];
    if (st === "MISSED_DEADLINE_TRANSIENT") extra = " aborted";
    else if (st === "IN_FLIGHT") extra = " in-flight";
    else if (st !== "NONE" && st !== "NO_ERROR") extra = " failed";
    if (b[1] < 2) extra += " thin";
    out.push('<rect class="bar ' + D.classes[dev.jobs.app[job]] + extra + '" x="' + num(b[0]) + '" y="' + y +
             '" width="' + num(b[1]) + '" height="' + BAR_H + '"><title>' + jobTitle(dev, job) + "</title></rect>");
    if (lane.pSet[k] && E[k] <= v1) {
      var xp = xOf(E[k]);
      marks.push('<path class="preemption" d="M' + num(xp) + " " + (y + 3) + 'l-4 -7h8z"><title>' + esc(D.names[dev.jobs.app[job]]) + " preempted at " + ms(E[k]) + " ms</title></path>");
    }
    if (lane.xSet[k] && E[k] <= v1) {
      var xm = xOf(E[k]), cy = y + BAR_H / 2;
      marks.push('<path class="deadline-miss" d="M' + num(xm - 4) + " " + (cy - 4) + 'l8 8m0 -8l-8 8"><title>' + esc(D.names[dev.jobs.app[job]]) + ": deadline missed (" + esc(st) + ") at " + ms(E[k]) + " ms</title></path>");
    }
  }
  out.push.apply(out, marks);
  return count;
}

function visibleExecutions(app) {
  var lo = lowerBound(app.A, v0 - app.span), hi = lowerBound(app.A, v1), out = [];
  for (var i = lo; i < hi; i++) if (app.E[i] >= v0) out.push(i);
  return out;
}

function drawAppLane(row, y, out) {
  var app = row.app, vis = visibleExecutions(app), marks = [];
  if (row.sub !== null) vis = vis.filter(function (i) { return app.sub[i] === row.sub; });
  if (vis.length > D.cap) {
    // Worst result per 2 px column of arrival.
    var n = W / 2, width = (v1 - v0) / n, cols = {};
    vis.forEach(function (i) {
      var c = Math.max(0, Math.min(n - 1, Math.floor((app.A[i] - v0) / width)));
      var code = app.code[i], prev = cols[c];
      if (prev === undefined || (D.codes[prev] === "NO_ERROR" && D.codes[code] !== "NO_ERROR")) cols[c] = code;
    });
    Object.keys(cols).sort(function (a, b) { return a - b; }).forEach(function (c) {
      out.push('<rect class="result code-' + slug(D.codes[cols[c]]) + '" x="' + (L + 2 * c) + '" y="' + y + '" width="2" height="' + BAR_H + '" fill="' + D.codeColors[cols[c]] + '"/>');
    });
    return vis.length;
  }
  vis.forEach(function (i) {
    var a = app.A[i], s = app.S[i], e = app.E[i], code = app.code[i], color = D.codeColors[code];
    var name = D.codes[code], cls = "code-" + slug(name), title = execTitle(app, i);
    var runFrom = s < 0 ? e : s;
    if (runFrom > a) {
      var w = clipBar(a, runFrom);
      out.push('<rect class="wait ' + cls + '" x="' + num(w[0]) + '" y="' + (y + BAR_H - 3) + '" width="' + num(w[1]) + '" height="3" fill="' + color + '"><title>' + title + "</title></rect>");
    }
    if (s >= 0) {
      var b = clipBar(s, e);
      out.push('<rect class="exec ' + cls + (b[1] < 2 ? " thin" : "") + '" x="' + num(b[0]) + '" y="' + y + '" width="' + num(b[1]) + '" height="' + (BAR_H - 4) + '" fill="' + color + '"><title>' + title + "</title></rect>");
    } else {
      var xe = xOf(e);
      if (e <= v1) out.push('<path class="refused ' + cls + '" d="M' + num(xe) + " " + (y + BAR_H) + 'l-4 -' + BAR_H + 'h8z" fill="' + color + '"><title>' + title + "</title></path>");
    }
    if (app.missSet[i] && e <= v1) {
      var xm = xOf(e), cy = y + BAR_H / 2;
      marks.push('<path class="deadline-miss" d="M' + num(xm - 4) + " " + (cy - 4) + 'l8 8m0 -8l-8 8"><title>' + title + "</title></path>");
    }
  });
  out.push.apply(out, marks);
  return vis.length;
}

function drawDetail() {
  var svg = document.getElementById("detail");
  var out = [], top = TOP, bottom = top + rows.length * LANE_H, notes = [];
  rows.forEach(function (row, r) {
    var y = top + r * LANE_H;
    out.push('<g id="' + row.id + '" class="lane lane-' + row.kind + '"><rect class="lane-bg" x="' + L + '" y="' + y + '" width="' + W + '" height="' + (LANE_H - 4) + '"/>' +
             '<text class="lane-label" x="' + (L - 8) + '" y="' + (y + 12) + '" text-anchor="end"><title>' + esc(row.title) + "</title>" + esc(row.label) + "</text>");
    var count = row.kind === "dev" ? drawDevLane(row, y + 2, out) : drawAppLane(row, y + 2, out);
    if (count > D.cap) notes.push(row.title + ": " + count);
    out.push("</g>");
  });
  faultBands(top, bottom, out);
  axis(bottom + 2, out);
  svg.setAttribute("height", bottom + 24);
  svg.setAttribute("data-t0-ms", fmt(v0 / 1000));
  svg.setAttribute("data-t1-ms", fmt(v1 / 1000));
  svg.innerHTML = out.join("");
  var note = document.getElementById("detail-note");
  note.textContent = notes.length ? "Too many executions in this window to draw one by one (" + notes.join("; ") +
    "), so those lanes show occupancy or the worst result per 2 px column: zoom in to see each execution." : "";
}

function drawLatency() {
  var svg = document.getElementById("latency-time"), out = [], y = 4;
  D.apps.forEach(function (app) {
    var vis = visibleExecutions(app).filter(function (i) { return app.A[i] >= v0 && app.A[i] <= v1; });
    var top = y + 16, bottom = y + PANEL_H - 8, ymax = 0;
    vis.forEach(function (i) { var l = app.E[i] - app.A[i]; if (l > ymax) ymax = l; });
    if (app.timeout !== null && app.timeout * 1.1 > ymax) ymax = app.timeout * 1.1;
    if (ymax <= 0) ymax = 1000;
    ymax *= 1.05;
    var sy = (bottom - top) / ymax;
    out.push('<g id="latency-time-' + slug(app.name) + '" class="latency-panel"><text x="' + L + '" y="' + (y + 11) + '" font-weight="bold">' +
             esc(app.name + " (" + app.prio + "): latency against arrival, " + vis.length + " executions in view") + "</text>" +
             '<rect class="lane-bg" x="' + L + '" y="' + top + '" width="' + W + '" height="' + (bottom - top) + '"/>');
    var step = niceStep(ymax / 1000, 3);
    out.push('<g class="axis">');
    for (var v = 0; v <= ymax / 1000 + 1e-9; v += step) {
      var py = bottom - v * 1000 * sy;
      out.push('<line class="grid" x1="' + L + '" x2="' + (L + W) + '" y1="' + num(py) + '" y2="' + num(py) + '"/><text x="' + (L - 5) + '" y="' + num(py + 4) + '" text-anchor="end">' + fmt(v) + "</text>");
    }
    out.push('<text x="' + (L - 40) + '" y="' + num((top + bottom) / 2) + '" text-anchor="end">ms</text></g>');
    if (app.timeout !== null) {
      var dy = bottom - app.timeout * sy;
      out.push('<line class="deadline-line" x1="' + L + '" x2="' + (L + W) + '" y1="' + num(dy) + '" y2="' + num(dy) + '"><title>deadline ' + ms(app.timeout) + ' ms after arrival</title></line>' +
               '<text class="deadline-label" x="' + (L + W - 4) + '" y="' + num(dy - 3) + '" text-anchor="end">deadline ' + fmt(app.timeout / 1000) + " ms</text>");
    }
    var shown = vis;
    if (vis.length > D.pointsCap) {
      // Each 2 px column keeps its fastest and slowest completion and its first failure of each code.
      var n = W / 2, width = (v1 - v0) / n, keep = {}, seen = {};
      vis.forEach(function (i) {
        var c = Math.floor((app.A[i] - v0) / width), l = app.E[i] - app.A[i], code = app.code[i];
        if (D.codes[code] === "NO_ERROR" && !app.missSet[i]) {
          var k = keep[c] || (keep[c] = [i, i]);
          if (l < app.E[k[0]] - app.A[k[0]]) k[0] = i;
          if (l > app.E[k[1]] - app.A[k[1]]) k[1] = i;
        } else if (!seen[c + ":" + code + ":" + (app.missSet[i] ? 1 : 0)]) {
          seen[c + ":" + code + ":" + (app.missSet[i] ? 1 : 0)] = i;
        }
      });
      var set = {};
      Object.keys(keep).forEach(function (c) { set[keep[c][0]] = 1; set[keep[c][1]] = 1; });
      Object.keys(seen).forEach(function (c) { set[seen[c]] = 1; });
      shown = Object.keys(set).map(Number).sort(function (a, b) { return a - b; });
    }
    shown.forEach(function (i) {
      var px = num(xOf(app.A[i])), py = num(bottom - (app.E[i] - app.A[i]) * sy), code = D.codes[app.code[i]];
      var title = "<title>" + execTitle(app, i) + "</title>";
      if (code === "NO_ERROR") {
        out.push('<circle class="pt ' + app.cls + (app.missSet[i] ? " late" : "") + '" cx="' + px + '" cy="' + py + '" r="2.2">' + title + "</circle>");
      } else if (code.indexOf("MISSED_DEADLINE") === 0 && app.S[i] < 0) {
        out.push('<path class="refusal code-' + slug(code) + '" d="M' + px + " " + py + 'm-4 -4h8l-4 7z" fill="' + D.codeColors[app.code[i]] + '">' + title + "</path>");
      } else if (code.indexOf("MISSED_DEADLINE") === 0) {
        out.push('<path class="abort code-' + slug(code) + '" d="M' + px + " " + py + 'm-4 -4l8 8m0 -8l-8 8" stroke="' + D.codeColors[app.code[i]] + '">' + title + "</path>");
      } else {
        out.push('<rect class="failure code-' + slug(code) + '" x="' + num(xOf(app.A[i]) - 3) + '" y="' + num(bottom - (app.E[i] - app.A[i]) * sy - 3) + '" width="6" height="6" fill="' + D.codeColors[app.code[i]] + '">' + title + "</rect>");
      }
    });
    out.push("</g>");
    y += PANEL_H;
  });
  var axisOut = [];
  axis(y + 2, axisOut);
  out.push(axisOut.join("").replace('id="detail-axis-ticks"', 'id="latency-time-axis"'));
  svg.setAttribute("height", y + 24);
  svg.innerHTML = out.join("");
}

function drawBrush() {
  var brush = document.getElementById("overview-brush");
  brush.setAttribute("x", num(L + v0 / END * W));
  brush.setAttribute("width", num(Math.max(1, (v1 - v0) / END * W)));
  document.getElementById("view-label").textContent = "showing " + fmt(v0 / 1000) + " to " + fmt(v1 / 1000) + " ms of " + fmt(END / 1000) + " ms";
}

function zoom(t0, t1) {
  t0 = Math.max(0, Math.min(t0, END)); t1 = Math.max(0, Math.min(t1, END));
  if (t1 < t0) { var t = t0; t0 = t1; t1 = t; }
  if (t1 - t0 < 10) { var mid = (t0 + t1) / 2; t0 = Math.max(0, mid - 5); t1 = Math.min(END, t0 + 10); }
  v0 = Math.round(t0); v1 = Math.round(t1);
  drawDetail(); drawLatency(); drawBrush();
  try { history.replaceState(null, "", "#t0=" + fmt(v0 / 1000) + "&t1=" + fmt(v1 / 1000)); } catch (e) { /* file: URLs may refuse */ }
}

function fromHash() {
  var m = /t0=([0-9.]+)&t1=([0-9.]+)/.exec(location.hash);
  if (m) zoom(parseFloat(m[1]) * 1000, parseFloat(m[2]) * 1000); else zoom(0, END);
}

// Brushing on the overview.
var overview = document.getElementById("overview"), dragFrom = null;
function timeAt(ev) {
  var box = overview.getBoundingClientRect();
  var x = (ev.clientX - box.left) * (overview.width.baseVal.value / box.width);
  return (Math.max(L, Math.min(L + W, x)) - L) / W * END;
}
overview.addEventListener("mousedown", function (ev) { dragFrom = timeAt(ev); ev.preventDefault(); });
overview.addEventListener("mousemove", function (ev) {
  if (dragFrom === null) return;
  var t = timeAt(ev), brush = document.getElementById("overview-brush");
  brush.setAttribute("x", num(L + Math.min(t, dragFrom) / END * W));
  brush.setAttribute("width", num(Math.max(1, Math.abs(t - dragFrom) / END * W)));
});
window.addEventListener("mouseup", function (ev) {
  if (dragFrom === null) return;
  var t = timeAt(ev), from = dragFrom, span = v1 - v0;
  dragFrom = null;
  if (Math.abs(t - from) / END * W < 3) zoom(t - span / 2, t + span / 2);  // a click: centre the window there
  else zoom(Math.min(t, from), Math.max(t, from));
});
function centreZoom(factor) { var mid = (v0 + v1) / 2, half = (v1 - v0) * factor / 2; zoom(Math.max(0, mid - half), Math.min(END, mid + half)); }
function pan(share) { var span = v1 - v0, t0 = Math.max(0, Math.min(END - span, v0 + span * share)); zoom(t0, t0 + span); }
document.getElementById("zoom-reset").addEventListener("click", function () { zoom(0, END); });
document.getElementById("zoom-in").addEventListener("click", function () { centreZoom(0.5); });
document.getElementById("zoom-out").addEventListener("click", function () { centreZoom(2); });
document.getElementById("pan-left").addEventListener("click", function () { pan(-0.5); });
document.getElementById("pan-right").addEventListener("click", function () { pan(0.5); });
window.addEventListener("hashchange", fromHash);
window.nnemuView = {
  zoom: function (t0ms, t1ms) { zoom(t0ms * 1000, t1ms * 1000); },
  window: function () { return [v0 / 1000, v1 / 1000]; }
};
document.getElementById("timeline-controls").hidden = false;
fromHash();
})();
"""
