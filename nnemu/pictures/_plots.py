"""The page's figures as PNG files, drawn with matplotlib (an optional extra: ``.[plots]``).

matplotlib is imported only when a figure is drawn, with the Agg backend, so the
rest of nnemu neither needs it nor pays for importing it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from nnemu._tails import MARK, footnote, slowest_only
from nnemu.pictures._collect import AppPicture, DevicePicture, RunPictures
from nnemu.pictures._common import (
    DEADLINE_MISS_COLOR,
    PREEMPTION_COLOR,
    app_color,
    code_color,
    slug,
)
from nnemu.pictures._timeline import devices_of
from nnemu.report import Report

PLOT_JOBS_PER_DEVICE = 200
"""Jobs drawn on a PNG timeline (the first ones): a fixed-size image stays legible that way."""

MISSING_MATPLOTLIB = "--plots needs matplotlib: pip install -e '.[plots]'"
"""What the CLI prints when the extra is not installed."""


class PlotsUnavailable(ImportError):
    """matplotlib is not installed."""


def plots_available() -> bool:
    """Whether matplotlib is installed (checked without importing it)."""
    import importlib.util

    return importlib.util.find_spec("matplotlib") is not None


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as err:
        raise PlotsUnavailable(MISSING_MATPLOTLIB) from err
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _timeline(plt: Any, data: RunPictures, device: DevicePicture, path: Path) -> None:
    colors = {app.name: app_color(index) for index, app in enumerate(data.apps)}
    jobs = device.jobs[:PLOT_JOBS_PER_DEVICE]
    lanes = max([device.units] + [lane + 1 for job in jobs for _, _, lane in job.segments])
    fig, ax = plt.subplots(figsize=(14, 1.2 + 0.6 * lanes))
    per_app: dict[str, list[tuple[float, float, int]]] = {}
    preemptions: list[tuple[float, int]] = []
    misses: list[tuple[float, int]] = []
    for job in jobs:
        for number, (start, end, lane) in enumerate(job.segments):
            per_app.setdefault(job.app, []).append((start / 1e6, (end - start) / 1e6, lane))
            if number < len(job.segments) - 1:
                preemptions.append((end / 1e6, lane))
        if job.deadline_missed:
            lane = job.segments[-1][2] if job.segments else 0
            misses.append((job.finished_ns / 1e6, lane))
    for app, bars in per_app.items():
        for lane in range(lanes):
            spans = [(start, width) for start, width, on in bars if on == lane]
            if spans:
                ax.broken_barh(
                    spans,
                    (lane - 0.35, 0.7),
                    facecolors=colors.get(app, "#7f7f7f"),
                    edgecolors="white",
                    linewidth=0.4,
                    label=app if lane == min(on for _, _, on in bars) else None,
                )
    if preemptions:
        ax.scatter(
            [t for t, _ in preemptions],
            [lane - 0.45 for _, lane in preemptions],
            marker="v",
            s=18,
            color=PREEMPTION_COLOR,
            label="preempted",
            zorder=3,
        )
    if misses:
        ax.scatter(
            [t for t, _ in misses],
            [lane for _, lane in misses],
            marker="x",
            s=30,
            color=DEADLINE_MISS_COLOR,
            label="deadline missed",
            zorder=3,
        )
    ax.set_yticks(range(lanes), [f"unit {lane}" for lane in range(lanes)])
    ax.set_ylim(-0.7, lanes - 0.3)
    ax.invert_yaxis()
    ax.set_xlabel("virtual time (ms)")
    shown = (
        f"first {len(jobs)} of {len(device.jobs)} jobs"
        if len(jobs) < len(device.jobs)
        else (f"{len(jobs)} jobs")
    )
    what = (
        "the runtime's CPU path, a unit per execution running at once"
        if data.cpu is not None and device is data.cpu
        else f"preemption {device.preemption}"
    )
    ax.set_title(f"{data.scenario}: {device.name} ({shown}, {what})")
    if per_app or preemptions or misses:
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _latency(plt: Any, data: RunPictures, index: int, app: AppPicture, path: Path) -> None:
    values = sorted(value / 1e6 for value in app.latencies_ns)
    fig, (hist, cdf) = plt.subplots(1, 2, figsize=(11, 3.6))
    color = app_color(index)
    marked: list[str] = []
    if values:
        hist.hist(values, bins=40, color=color)
        for row, q in enumerate((0.5, 0.95, 0.99)):
            rank = max(1, -(-int(q * len(values) * 1_000_000) // 1_000_000))
            value = values[min(len(values), rank) - 1]
            hist.axvline(value, color="#333", linestyle="--", linewidth=0.8)
            # One row per quantile, so close quantiles' labels cannot overlap; labels of
            # the right fifth go left of their line to stay inside the axes.
            right = value - values[0] > 0.8 * (values[-1] - values[0])
            name = f"p{round(q * 100)}"
            if slowest_only(name, len(values)):
                marked.append(name)
                name += MARK
            hist.annotate(
                f"{name} {value:.2f}",
                (value, 0.97 - 0.08 * row),
                xycoords=("data", "axes fraction"),
                xytext=(-3 if right else 3, 0),
                textcoords="offset points",
                fontsize=8,
                ha="right" if right else "left",
                va="top",
                bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.8},
            )
        cdf.plot(values, [(i + 1) / len(values) for i in range(len(values))], color=color)
    else:
        hist.text(0.5, 0.5, "no completed executions", ha="center", transform=hist.transAxes)
    hist.set_xlabel("latency, arrival to result (ms)")
    hist.set_ylabel("executions")
    hist.yaxis.get_major_locator().set_params(integer=True)  # counts: no 0.5 ticks
    cdf.set_xlabel("latency (ms)")
    cdf.set_ylabel("fraction")
    cdf.set_ylim(0, 1.02)
    fig.suptitle(f"{data.scenario}: {app.name} (priority {app.priority}), {len(values)} completed")
    if marked:
        fig.text(0.01, 0.01, footnote(marked), fontsize=7)
        fig.tight_layout(rect=(0, 0.05, 1, 1))
    else:
        fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _result_codes(plt: Any, data: RunPictures, path: Path) -> None:
    apps = data.apps
    codes = sorted(
        {code for app in apps for code, _ in app.codes}, key=lambda c: (c != "NO_ERROR", c)
    )
    fig, ax = plt.subplots(figsize=(10, 1.5 + 0.5 * max(1, len(apps))))
    names = [app.name for app in apps]
    left = [0] * len(apps)
    for code in codes:
        counts = [dict(app.codes).get(code, 0) for app in apps]
        ax.barh(names, counts, left=left, color=code_color(code), label=code)
        left = [a + b for a, b in zip(left, counts, strict=True)]
    ax.invert_yaxis()
    ax.set_xlabel("executions")
    ax.set_title(f"{data.scenario}: result codes per app")
    if codes:
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write_plots(data: RunPictures, report: Report, directory: str | os.PathLike[str]) -> list[Path]:
    """Write ``timeline-<device>.png`` (each driver device, then ``nnapi-reference``, the
    runtime's CPU path, as on the page), ``latency-<app>.png`` and ``result-codes.png``.

    Returns:
        The files written, in that order.

    Raises:
        PlotsUnavailable: matplotlib is not installed.
        OSError: the directory cannot be created or written.
    """
    del report  # the figures draw per-execution data only; kept for write_html's signature
    plt = _pyplot()
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for device in devices_of(data):  # the page's lanes: the drivers, then nnapi-reference
        path = out / f"timeline-{slug(device.name)}.png"
        _timeline(plt, data, device, path)
        written.append(path)
    for index, app in enumerate(data.apps):
        path = out / f"latency-{slug(app.name)}.png"
        _latency(plt, data, index, app, path)
        written.append(path)
    path = out / "result-codes.png"
    _result_codes(plt, data, path)
    written.append(path)
    return written
