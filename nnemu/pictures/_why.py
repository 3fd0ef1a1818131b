"""The page's "Why" section: what explains the latencies the page above shows.

``why_section`` renders an HTML fragment (tables and inline SVG, no script) from the
collected values (``RunPictures.why``: each device's configuration, the runtime's CPU
path, each app's settings, the NNAPI per-layer tables of the run's trace) and the run's
report (the counters, the latency split).  It has, with stable ids for tests and readers:

- ``why-reading``: a few sentences, each derived from numbers of the run (what stands
  out: a priority inverted by the scheduler, a part of the latency that dominates, a
  saturated device, preemptions, deadline refusals, the CPU path); none when nothing does;
- ``why-devices``: per device, its configuration next to the report's counters
  (``nnapi-reference``, the runtime's CPU path, included);
- ``why-apps``: per app, its settings and where its executions ran;
- ``latency-split``: per app, the mean latency split (``apps.<app>.latency_split_ms``) as
  stacked bars, drawn only when the report has it;
- ``layer-table-<n>``: the NNAPI per-layer timing tables, as ``nnemu parse`` prints them
  for the run's trace.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from nnemu._tails import MARK, footnote, slowest_only
from nnemu._text import counted
from nnemu.pictures._cause import Facts as _Facts
from nnemu.pictures._cause import join as _join
from nnemu.pictures._cause import mean_latency as _mean_latency
from nnemu.pictures._cause import small, split_sentence
from nnemu.pictures._collect import (
    LAYER_COLUMNS,
    AppPicture,
    DeviceConfig,
    FaultConfig,
    LayerTables,
    RunPictures,
    WhyPicture,
)
from nnemu.pictures._common import short_labels
from nnemu.report import SPLIT_PARTS
from nnemu.scenario import CPU_DEVICE_NAME
from nnemu.scheduling import policy_named, preemption_for

SPLIT_LABELS = {
    "app_wait": "app thread wait",
    "binder_wait": "binder thread wait",
    "device_queue": "device queue",
    "preempted": "preempted",
    "ipc": "IPC",
    "driver_launch": "driver launch",
    "compute": "compute",
    "queue_wait": "queue wait",
}
# A slate ramp (darkest first: the waits are what one looks for), then sand for any
# further part: no colour of the apps' or the result codes' palettes (tests check it).
SPLIT_COLORS = (
    "#1f2a40",
    "#2f3e5c",
    "#3f5275",
    "#5b7399",
    "#93a7c7",
    "#b4c2d8",
    "#cfd8dc",
    "#e8c07d",
    "#b08b5b",
    "#f3e1bb",
)
_DARK_PARTS = 4
"""The first parts are dark: their labels are white."""

WHY_CSS = """
#why .reading{font-size:14px;max-width:900px;line-height:1.45;margin:6px 0 10px}
#why .reading li{margin:3px 0}
#why table td.cfg{background:#fbfbfd;text-align:left}#why th.group{text-align:left;background:#eceff5}
#why .split-label{font-size:10px}#why .split-total{font-size:11px}
#why table.layers{font-variant-numeric:tabular-nums}#why table.layers caption{text-align:left;
font-size:13px;padding:4px 0;color:#444}#why table.layers code{font-size:12px}
"""
"""Rules of the section, added to the page's stylesheet."""

_SPLIT_W = 760
_SPLIT_LEFT = 150
_SPLIT_RIGHT = 70
_SPLIT_ROW = 26
_SPLIT_BAR = 18


def split_color(index: int) -> str:
    """Colour of the ``index``-th part of the latency split."""
    return SPLIT_COLORS[index % len(SPLIT_COLORS)]


def why_section(data: RunPictures, report: Mapping[str, Any]) -> str:
    """The "Why" section of the page of a run (an HTML fragment)."""
    why = data.why
    parts = ['<section id="why"><h2>Why: configuration, counters, where the time goes</h2>']
    if why is None:
        parts.append(
            '<p class="note">These pictures were collected without the run\'s configuration.</p>'
        )
    sentences = reading(data, report)
    if sentences:
        parts.append(
            '<ul class="reading" id="why-reading">'
            + "".join(f"<li>{escape(sentence)}</li>" for sentence in sentences)
            + "</ul>"
        )
    if why is not None:
        parts.append(_device_table(why, report))
        parts.append(_app_table(data, why, report))
    parts.append(_split_bars(data, report))
    if why is not None:
        parts.append(_layer_tables(why.layers))
    parts.append("</section>")
    return "".join(parts)


# ---------------------------------------------------------------- devices
def _fmt(value: float) -> str:
    return f"{value:g}"


def _fault_text(fault: FaultConfig) -> str:
    if fault.kind == "transient_failure":
        return f"transient_failure p={_fmt(fault.probability or 0.0)}"
    window = f"at {_fmt(fault.at_ms or 0.0)} ms"
    if fault.until_ms is not None:
        window = f"{_fmt(fault.at_ms or 0.0)}\u2013{_fmt(fault.until_ms)} ms"
    if fault.kind == "slowdown":
        return f"slowdown \u00d7{_fmt(fault.factor)} {window}"
    return f"{fault.kind} {window}"


def _performance_text(device: DeviceConfig) -> str:
    return "; ".join(
        f"{kind} {_fmt(exec_time)}/{_fmt(power)}" for kind, exec_time, power in device.performance
    )


_COUNTERS = (
    ("executions", "executions", "executions that occupied the device"),
    ("busy_fraction", "busy", "busy unit-time / (virtual time \u00d7 compute units)"),
    ("preemptions", "preemptions", "times an execution yielded its unit to higher priority"),
    (
        "rejected_persistent",
        "deadline refusals, idle estimate",
        "refused before starting: even an idle device could not meet the deadline",
    ),
    (
        "rejected_transient",
        "deadline refusals, busy estimate",
        "refused before starting: the busy device could not meet the deadline",
    ),
    ("deadline_aborts", "deadline aborts", "stopped at a checkpoint once the deadline passed"),
    ("loop_timeouts", "loop timeouts", "stopped inside a WHILE loop by the loop timeout"),
)


def _counter_text(key: str, counters: Mapping[str, Any]) -> str:
    value = counters.get(key)
    if value is None:
        return "-"
    if key == "busy_fraction":
        return f"{value * 100:.1f}%"
    return str(value)


_CONFIG = (
    ("hal_version", "HAL version"),
    ("type", "type"),
    ("compute_units", "compute units"),
    ("scheduler", "scheduler"),
    ("preemption", "preemption"),
    ("deadline_policy", "deadline policy"),
    ("queue_limit", "queue limit"),
    ("performance", "exec time / power (ratio to the CPU)"),
    ("launch_us", "launch overhead \u00b5s"),
    ("jitter", "compute jitter (sigma)"),
    ("faults", "injected faults"),
)


def _config_texts(device: DeviceConfig) -> dict[str, str]:
    return {
        "hal_version": device.hal_version,
        "type": device.type,
        "compute_units": str(device.compute_units),
        "scheduler": device.scheduler,
        "preemption": device.preemption,
        "deadline_policy": device.deadline_policy,
        "queue_limit": "none" if device.queue_limit is None else str(device.queue_limit),
        "performance": _performance_text(device),
        "launch_us": _fmt(device.launch_us),
        "jitter": _fmt(device.jitter),
        "faults": ", ".join(map(_fault_text, device.faults)) or "none",
    }


def _device_table(why: WhyPicture, report: Mapping[str, Any]) -> str:
    """One column per device (the CPU path last), configuration rows then counter rows."""
    devices = report.get("devices", {})
    cpu = why.cpu
    columns: list[tuple[str, dict[str, str]]] = [
        (device.name, _config_texts(device)) for device in why.devices
    ]
    columns.append(
        (
            CPU_DEVICE_NAME,
            {
                "hal_version": "-",
                "type": "CPU (the runtime's own path)",
                "compute_units": "each calling app thread",
                "scheduler": "none (no queue)",
                "preemption": "none",
                "deadline_policy": "checked before each operation",
                "queue_limit": "none",
                "performance": f"{_fmt(cpu.ns_per_mac)} ns per MAC,"
                f" {_fmt(cpu.ns_per_element)} ns per element",
                "launch_us": "-",
                "jitter": "-",
                "faults": "none",
            },
        )
    )
    span = len(columns) + 1
    rows = [
        "<h3>Devices: configuration and counters</h3>"
        '<table id="why-devices"><tr><th class="name">device</th>'
        + "".join(
            f'<th class="name" data-device="{escape(name)}">{escape(name)}</th>'
            for name, _ in columns
        )
        + f'</tr><tr><th class="group" colspan="{span}">configuration (scenario)</th></tr>'
    ]
    for key, head in _CONFIG:
        rows.append(
            f'<tr data-key="{key}"><th class="name">{escape(head)}</th>'
            + "".join(
                f'<td class="cfg" data-device="{escape(name)}" data-key="{key}">'
                f"{escape(texts[key])}</td>"
                for name, texts in columns
            )
            + "</tr>"
        )
    rows.append(f'<tr><th class="group" colspan="{span}">counters (report)</th></tr>')
    for key, head, tip in _COUNTERS:
        rows.append(
            f'<tr data-key="{key}"><th class="name" title="{escape(tip)}">{escape(head)}</th>'
            + "".join(
                f'<td class="counter" data-device="{escape(name)}" data-key="{key}">'
                f"{_counter_text(key, devices.get(name, {}))}</td>"
                for name, _ in columns
            )
            + "</tr>"
        )
    rows.append("</table>")
    rows.append(
        '<p class="note">Schedulers: <b>fifo</b> runs executions in arrival order; '
        "<b>per_app_priority</b> (Android's rule) orders only an app's own executions by "
        "priority, while between apps the oldest waiting execution goes first; "
        "<b>global_priority</b> orders all executions by priority. Preemption "
        "<b>checkpoint</b> yields a unit at the next operation boundary keeping progress, "
        "<b>restart</b> starts the yielding execution over.</p>"
    )
    return "".join(rows)


# ---------------------------------------------------------------- apps
def _app_table(data: RunPictures, why: WhyPicture, report: Mapping[str, Any]) -> str:
    apps = report.get("apps", {})
    where = _Facts(data, why, report).jobs
    rows = [
        "<h3>Apps: settings and where they ran</h3>"
        '<table id="why-apps"><tr><th class="name">app</th><th>priority</th>'
        '<th>mode</th><th>threads</th><th class="name">workload</th><th>deadline ms</th>'
        '<th class="name">ran on (executions)</th><th>mean ms</th><th>p95 ms</th>'
        "<th>deadline refused</th><th>deadline aborted</th></tr>"
    ]
    marked = False
    for app in why.apps:
        entry = apps.get(app.name, {})
        latency = entry.get("latency_ms", {})
        done = bool(entry.get("completed"))
        slowest = slowest_only("p95", entry.get("completed", 0))
        marked |= slowest
        ran = [f"{name} {count}" for name, count in where.get(app.name, Counter()).items()]
        if app.cpu_executions:
            ran.append(f"{CPU_DEVICE_NAME} {app.cpu_executions}")
        rows.append(
            f'<tr data-app="{escape(app.name)}"><td class="name">{escape(app.name)}</td>'
            f"<td>{escape(app.priority)}</td><td>{escape(app.execution_mode)}</td>"
            f"<td>{app.threads}</td>"
            f'<td class="name">{escape(app.workload)}</td>'
            f"<td>{'-' if app.timeout_ms is None else _fmt(app.timeout_ms)}</td>"
            f'<td class="name">{escape(", ".join(ran) or "nowhere")}</td>'
            f"<td>{_quantile_cell(latency, 'mean', done)}</td>"
            f"<td>{_quantile_cell(latency, 'p95', done)}{MARK if slowest else ''}</td>"
            f"<td>{entry.get('deadline_refused', '-')}</td>"
            f"<td>{entry.get('deadline_aborted', '-')}</td></tr>"
        )
    rows.append("</table>")
    if marked:
        rows.append(f'<p class="note" id="why-apps-tails">{escape(footnote(["p95"]))}</p>')
    return "".join(rows)


def _quantile_cell(latency: Mapping[str, Any], key: str, done: bool) -> str:
    value = latency.get(key)
    return f"{value:.3f}" if done and value is not None else "-"


# ---------------------------------------------------------------- latency split
def split_parts(split: Mapping[str, float]) -> list[str]:
    """The parts of a latency split in drawing order: the known ones, then the rest."""
    known = [part for part in SPLIT_PARTS if part in split]
    return known + sorted(part for part in split if part not in SPLIT_PARTS)


def _split_label(part: str) -> str:
    return SPLIT_LABELS.get(part, part.replace("_", " "))


def _split_bars(data: RunPictures, report: Mapping[str, Any]) -> str:
    """Per app, its mean latency split as a stacked horizontal bar (report key
    ``apps.<app>.latency_split_ms``); a note instead when the report has no split."""
    apps = report.get("apps", {})
    splits = {
        name: entry["latency_split_ms"]
        for name, entry in apps.items()
        if isinstance(entry.get("latency_split_ms"), Mapping)
    }
    head = "<h3>Latency split per app (mean per completed execution)</h3>"
    if not splits:
        return (
            head + '<p class="note" id="latency-split">The report has no latency split '
            "(apps.&lt;app&gt;.latency_split_ms).</p>"
        )
    parts = split_parts({part: 0.0 for split in splits.values() for part in split})
    names = list(apps)
    labels = short_labels(names, limit=20)
    priorities = {app.name: app.priority for app in data.apps}
    totals = {
        name: sum(max(0.0, float(value)) for value in split.values())
        for name, split in splits.items()
    }
    means = {name: _mean_latency(apps[name], totals[name]) for name in splits}
    widest = max(totals.values(), default=0.0) or 1.0
    scale = (_SPLIT_W - _SPLIT_LEFT - _SPLIT_RIGHT) / widest
    height = 8 + len(names) * _SPLIT_ROW + 4
    out = [
        head,
        '<div class="legend">'
        + "".join(
            f'<span><span class="swatch" style="background:{split_color(i)}"></span>'
            f"{escape(_split_label(part))}</span>"
            for i, part in enumerate(parts)
        )
        + "</div>",
        f'<svg id="latency-split" width="{_SPLIT_W}" height="{height}">',
    ]
    for row, name in enumerate(names):
        y = 8 + row * _SPLIT_ROW
        priority = priorities.get(name, "")
        label = f"{labels[name]} ({priority})" if priority else labels[name]
        out.append(
            f'<text x="{_SPLIT_LEFT - 8}" y="{y + 13}" text-anchor="end" class="app-label">'
            f"<title>{escape(name)}</title>{escape(label)}</text>"
        )
        split = splits.get(name)
        if split is None or not apps[name].get("completed"):
            out.append(
                f'<text x="{_SPLIT_LEFT}" y="{y + 13}" class="split-none">'
                "no completed executions</text>"
            )
            continue
        total = means[name]
        x = float(_SPLIT_LEFT)
        for index, part in enumerate(parts):
            value = max(0.0, float(split.get(part, 0.0)))
            if value <= 0.0:
                continue
            width = value * scale
            share = value / total if total else 0.0
            out.append(
                f'<rect class="split split-{escape(part)}" data-app="{escape(name)}"'
                f' data-part="{escape(part)}" data-ms="{value:.3f}" x="{x:.1f}" y="{y}"'
                f' width="{width:.1f}" height="{_SPLIT_BAR}" fill="{split_color(index)}">'
                f"<title>{escape(name)}: {escape(_split_label(part))} {value:.3f} ms"
                f" ({share:.0%} of {total:.3f} ms)</title></rect>"
            )
            text = f"{value:.2f}"
            if width >= 7 * len(text) + 6:
                color = "#fff" if index < _DARK_PARTS else "#222"
                out.append(
                    f'<text class="split-label" x="{x + width / 2:.1f}" y="{y + 13}"'
                    f' text-anchor="middle" style="fill:{color}">{text}</text>'
                )
            x += width
        out.append(f'<text class="split-total" x="{x + 6:.1f}" y="{y + 13}">{total:.2f} ms</text>')
    out.append("</svg>")
    return "".join(out)


# ---------------------------------------------------------------- per-layer tables
def _layer_tables(layers: LayerTables | None) -> str:
    head = "<h3>NNAPI per-layer time (what <code>nnemu parse</code> prints)</h3>"
    if layers is None:
        return (
            head + '<p class="note" id="layer-tables">Not built for these pictures: '
            "<code>nnemu run --html</code> builds them, or "
            "<code>nnemu.pictures.with_layer_tables(pictures, trace)</code>.</p>"
        )
    if layers.problem is not None:
        return (
            head + f'<p class="note" id="layer-tables">No table: {escape(layers.source)}: '
            f"{escape(layers.problem)}</p>"
        )
    out = [
        head,
        f'<p class="note" id="layer-tables">Self-times in ms of wall-clock (virtual) time per '
        f"layer and phase, parsed from {escape(layers.source)} by Android's rules "
        "(docs/parser.md); one table per client process and run. * This total ignores missing "
        "(n/a) values and thus is not necessarily consistent with the rest of the numbers.</p>",
    ]
    if not layers.runs:
        out.append(
            '<p class="note">The trace has no complete run (<code>nnemu parse'
            " --include-incomplete</code> prints the ones it cuts off).</p>"
        )
    for number, run in enumerate(layers.runs, start=1):
        who = f"{run.process_name} " if run.process_name else ""
        caption = (
            f"process {who}(pid {run.pid}), run {run.ordinal[0]} of {run.ordinal[1]}: "
            f"{run.executions} executions, started by "
        )
        out.append(
            f'<table class="layers" id="layer-table-{number}" data-pid="{escape(run.pid)}">'
            f"<caption>{escape(caption)}<code>{escape(run.starting_mark)}</code></caption>"
            '<tr><th class="name">layer</th>'
            + "".join(f"<th>{escape(column)}</th>" for column in LAYER_COLUMNS)
            + "</tr>"
        )
        for row in run.rows:
            out.append(
                f'<tr data-layer="{escape(row.layer)}"><td class="name">{escape(row.layer)}</td>'
                + "".join(f"<td>{escape(cell)}</td>" for cell in row.cells)
                + "</tr>"
            )
        out.append("</table>")
    if layers.warnings:
        shown = layers.warnings[:5]
        more = len(layers.warnings) - len(shown)
        out.append(
            '<p class="note" id="layer-warnings">The parser warned: '
            + "; ".join(escape(text) for text in shown)
            + (f"; and {more} more" if more else "")
            + "</p>"
        )
    return "".join(out)


# ---------------------------------------------------------------- the reading
def _inversions(facts: _Facts) -> list[str]:
    """A higher-priority app with a worse p95 than a lower-priority one on a shared device,
    put down to that device's scheduler (or its lack of preemption)."""
    sentences = []
    for device_name, names in facts.users.items():
        device = facts.configs.get(device_name)
        if device is None:
            continue
        for high in names:
            for low in names:
                p95_high, p95_low = facts.p95(high), facts.p95(low)
                if (
                    facts.rank(high) <= facts.rank(low)
                    or p95_high is None
                    or p95_low is None
                    or p95_high <= p95_low
                    or high in facts.explained
                    or _queued_little(facts, high)
                ):
                    continue
                reason = _scheduler_reason(device, high, [low])
                if reason is None:
                    continue
                facts.explained.add(high)
                sentences.append(
                    f"{facts.labelled(high)} has a worse p95 than {facts.labelled(low)}"
                    f" ({p95_high:.2f} vs {p95_low:.2f} ms): {reason}."
                )
    return sentences


def _queued_little(facts: _Facts, app: str) -> bool:
    """Whether the report's split says ``app`` waited little in its device's queue (then its
    device's scheduler is not what made it slow)."""
    entry = facts.apps.get(app, {})
    split = entry.get("latency_split_ms")
    if not isinstance(split, Mapping):
        return False
    queued = max(0.0, float(split.get("device_queue", split.get("queue_wait", 0.0))))
    total = _mean_latency(entry, sum(max(0.0, float(value)) for value in split.values()))
    return small(queued, total, bool(entry.get("deadline_misses")))


def _scheduler_reason(device: DeviceConfig, app: str, lower: Sequence[str]) -> str | None:
    """Why ``app``'s executions wait behind those of the ``lower``-priority apps on
    ``device``; None when its scheduler and preemption would not make them."""
    name, others = device.name, _join(lower)
    if not lower:
        return None
    policy = policy_named(device.scheduler)
    reason = policy.waits_behind(name, app, others) if policy is not None else None
    if reason is not None:
        return reason
    if not preemption_for(device.preemption).preempts:
        return (
            f"{name} orders by priority but does not preempt (preemption none), so an execution"
            f" of {app} that arrives while one of {others} runs waits until it ends"
        )
    return None


def _wait_sentences(facts: _Facts) -> list[str]:
    """Per app, its biggest wait with its cause and the ``--set`` that tests it when that
    wait is not small (``_cause.split_sentence``); without a split in the report, its mean
    wait for a unit of a device if that is a third or more of its mean latency, and why it
    waits if its device's scheduler explains it."""
    sentences = []
    for app in facts.data.apps:
        entry = facts.apps.get(app.name, {})
        if not entry.get("completed"):
            continue
        split = entry.get("latency_split_ms")
        if isinstance(split, Mapping):
            told = split_sentence(facts, app.name, split, _split_label, _scheduler_reason)
            if told is not None:
                sentences.append(told)
            continue
        mean_ms = float(entry.get("latency_ms", {}).get("mean", 0.0))
        sentence, device_name = _device_wait_sentence(facts.data, app, mean_ms)
        if sentence is None:
            continue
        device = facts.configs.get(device_name)
        if device is not None and app.name not in facts.explained:
            users = facts.users.get(device_name, [])
            lower = [name for name in users if facts.rank(name) < facts.rank(app.name)]
            reason = _scheduler_reason(device, app.name, lower)
            if reason is not None:
                facts.explained.add(app.name)
                sentence = sentence[:-1] + f": {reason}."
        sentences.append(sentence)
    return sentences


def _device_wait_sentence(
    data: RunPictures, app: AppPicture, mean_ms: float
) -> tuple[str | None, str]:
    """Without a split: (the sentence, the device) of the app's mean wait for a unit at the
    device where it waited longest, if that is a third or more of its mean latency."""
    best: tuple[float, str, int] | None = None
    for device in data.devices:
        waits = [
            job.started_ns - job.arrived_ns
            for job in device.jobs
            if job.app == app.name and job.started_ns is not None
        ]
        if waits:
            mean_wait = sum(waits) / len(waits) / 1e6
            if best is None or mean_wait > best[0]:
                best = (mean_wait, device.name, len(waits))
    if best is None or mean_ms <= 0 or best[0] < mean_ms / 3:
        return None, ""
    wait, device_name, count = best
    sentence = (
        f"{app.name}'s executions waited {wait:.2f} ms on average for a unit of {device_name}"
        f" ({count} executions), {wait / mean_ms:.0%} of its mean latency ({mean_ms:.2f} ms)."
    )
    return sentence, device_name


def _device_sentences(facts: _Facts) -> list[str]:
    """Saturation, preemptions, loop timeouts and a full queue, per device."""
    sentences = []
    for device in facts.why.devices:
        counters = facts.devices.get(device.name, {})
        busy = counters.get("busy_fraction", 0.0)
        if busy >= 0.85:
            units = counted(device.compute_units, "unit")
            sentences.append(
                f"{device.name} was busy {busy:.0%} of the run ({units}): there is little slack,"
                " so executions queue for it."
            )
        yielded: Counter[str] = Counter()
        for picture in facts.data.devices:
            if picture.name == device.name:
                for job in picture.jobs:
                    yielded[job.app] += job.preempted
        yielded = +yielded
        if counters.get("preemptions") and yielded:
            who = ", ".join(f"{name} {count}" for name, count in yielded.most_common())
            sentences.append(
                f"{device.name} preempted running work {counters['preemptions']} times"
                f" (preemption {device.preemption}); executions that yielded their unit: {who}."
            )
        if counters.get("loop_timeouts"):
            sentences.append(
                f"{device.name} stopped {counters['loop_timeouts']} executions inside a WHILE"
                " loop (the loop timeout)."
            )
        if device.queue_limit is not None:
            full = {
                name: count
                for name in facts.users.get(device.name, [])
                if (count := facts.apps.get(name, {}).get("errors", {}).get(_QUEUE_FULL, 0))
            }
            if full:
                who = ", ".join(f"{name} {count}" for name, count in full.items())
                sentences.append(
                    f"{device.name}'s queue holds at most"
                    f" {counted(device.queue_limit, 'waiting execution')}; finally turned away"
                    f" with {_QUEUE_FULL}: {who}."
                )
    return sentences


_QUEUE_FULL = "RESOURCE_EXHAUSTED_TRANSIENT"


def _retry_sentences(facts: _Facts) -> list[str]:
    """Apps that retried, with what on their devices turns executions away."""
    sentences = []
    for app in facts.why.apps:
        retries = facts.apps.get(app.name, {}).get("retries", 0)
        if not retries:
            continue
        causes = []
        for device_name in facts.jobs.get(app.name, {}):
            device = facts.configs.get(device_name)
            if device is None:
                continue
            if device.queue_limit is not None:
                causes.append(
                    f"{device_name} holds at most {counted(device.queue_limit, 'waiting execution')}"
                )
            causes += [
                f"{device_name} is {_fault_text(fault)}"
                for fault in device.faults
                if fault.kind in ("busy", "offline")
            ]
        sentence = f"{app.name} retried {retries} times ({app.retry})"
        sentences.append(sentence + (f"; {'; '.join(causes)}." if causes else "."))
    return sentences


def _deadline_sentences(facts: _Facts) -> list[str]:
    sentences = []
    for app in facts.why.apps:
        entry = facts.apps.get(app.name, {})
        refused = entry.get("deadline_refused", 0)
        aborted = entry.get("deadline_aborted", 0)
        if not refused and not aborted:
            continue
        deadline = f" ({_fmt(app.timeout_ms)} ms)" if app.timeout_ms is not None else ""
        parts = []
        if refused:
            parts.append(f"{refused} refused before starting (the driver's estimate)")
        if aborted:
            parts.append(f"{aborted} aborted at a checkpoint")
        sentences.append(
            f"{app.name}'s deadline{deadline}: "
            + " and ".join(parts)
            + f", of {entry.get('submitted', 0)} submitted."
        )
    return sentences


def _crash_and_cpu_sentences(facts: _Facts) -> list[str]:
    """A crashed device and what became of its apps; the CPU path's executions."""
    sentences = []
    fell_back = [app for app in facts.why.apps if app.cpu_executions]
    told: set[str] = set()
    for device in facts.why.devices:
        for fault in device.faults:
            if fault.kind != "crash":
                continue
            users = facts.users.get(device.name, [])
            clauses = []
            moved = [app for app in fell_back if app.name in users]
            if moved:
                who = _join([f"{app.name} ({app.cpu_executions})" for app in moved])
                clauses.append(f"executions of {who} ran on the CPU path ({CPU_DEVICE_NAME})")
                told.update(app.name for app in moved)
            for name in users:
                errors = facts.apps.get(name, {}).get("errors", {})
                if errors:
                    pinned = facts.settings.get(name)
                    asks = (
                        f", which asks for {_join(list(pinned.devices))} only,"
                        if pinned is not None and pinned.devices
                        else ""
                    )
                    codes = ", ".join(f"{code} {count}" for code, count in errors.items())
                    clauses.append(f"{name}{asks} failed ({codes})")
            tail = ": " + "; ".join(clauses) if clauses else ""
            sentences.append(
                f"{device.name} crashed at {_fmt(fault.at_ms or 0.0)} ms (injected fault){tail}."
            )
    rest = [app for app in fell_back if app.name not in told]
    if rest:
        who = ", ".join(f"{app.name} {app.cpu_executions}" for app in rest)
        sentences.append(f"Executions on the runtime's CPU path ({CPU_DEVICE_NAME}): {who}.")
    return sentences


def reading(data: RunPictures, report: Mapping[str, Any]) -> Sequence[str]:
    """Sentences that explain the run's latencies, each from numbers of the run; empty when
    nothing stands out."""
    if data.why is None:
        return []
    facts = _Facts(data, data.why, report)
    return [
        *_inversions(facts),
        *_wait_sentences(facts),
        *_device_sentences(facts),
        *_retry_sentences(facts),
        *_deadline_sentences(facts),
        *_crash_and_cpu_sentences(facts),
    ]


__all__ = ["WHY_CSS", "reading", "split_color", "split_parts", "why_section"]
