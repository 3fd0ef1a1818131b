"""The summary tables ``nnemu run`` and ``nnemu replay`` print: a report's apps and devices
(``summary``) and ``nnemu run --replications``'s means with their 95% intervals
(``replications_summary``)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any, Final, TextIO

from nnemu.report import SPLIT_PARTS

if TYPE_CHECKING:
    from nnemu.replications import Replications


HAL_WIDTH = 9
"""Width of the device tables' ``hal`` column (``aidl-v4`` and two spaces)."""


def hal_of(device: dict[str, Any]) -> str:
    """A report device's HAL (``devices.D.hal``: ``1.3``, ``aidl-v4``), ``-`` for the
    runtime's own CPU device, which speaks none."""
    return str(device.get("hal", "-"))


def summary(data: dict[str, Any], out: TextIO) -> None:
    """The run's summary tables: per app (submitted = completed + failed + dropped + in flight)
    and per device.  Latency percentiles are "-" for an app with no completion; a p95 or p99
    that is only the slowest execution is marked, with a footnote (``nnemu._tails``)."""
    from nnemu._tails import footnote, marked_cells, slowest_only
    from nnemu._text import cells, right

    out.write(
        f"scenario {data['scenario']}  seed {data['seed']}  virtual {data['virtual_ms']:.3f} ms\n"
    )
    how = data.get("interrupted")
    if how:
        from nnemu._text import ending

        out.write(f"{ending(how)}: the figures cover the run so far\n")
    out.write("\n")
    width = max([3, *(len(name) for name in data["apps"])]) + 2
    out.write(
        f"{'app':<{width}}{'submitted':>10}{'completed':>11}{'failed':>8}{'dropped':>9}"
        f"{'in flight':>11}{'p50 ms':>10}{'p95 ms':>10}{'p99 ms':>10}  errors\n"
    )
    marked: set[str] = set()
    for name, app in data["apps"].items():
        lat = app["latency_ms"]
        errors = ", ".join(f"{code}:{count}" for code, count in app["errors"].items()) or "-"
        if app["compile_result"] != "NO_ERROR":
            errors = f"compilation {app['compile_result']}"
        done = app["completed"]
        slowest = {q for q in ("p95", "p99") if slowest_only(q, done)}
        marked |= slowest
        quantiles, carry = marked_cells(
            [(f"{lat[q]:.3f}" if done else "-", 10, q in slowest) for q in ("p50", "p95", "p99")]
        )
        counts = cells(
            (app["submitted"], 10),
            (app["completed"], 11),
            (app["failed"], 8),
            (app["dropped"], 9),
            (app["in_flight"], 11),
        )
        out.write(f"{name:<{width}}{counts}{quantiles}{' ' * (2 - carry)}{errors}\n")
    if marked:
        out.write(footnote(marked) + "\n")
    _split_summary(data["apps"], out)
    width = max([6, *(len(name) for name in data["devices"])]) + 2
    out.write(
        f"\n{'device':<{width}}{'hal':<{HAL_WIDTH}}{'executions':>11}{'busy':>9}"
        f"{'preemptions':>13}{'energy':>10}\n"
    )
    for name, device in data["devices"].items():
        busy = right(f"{device['busy_fraction'] * 100:.1f}", 8)
        counts = cells((device["preemptions"], 13), (f"{device.get('energy', 0.0):.1f}", 10))
        hal = f"{hal_of(device):<{HAL_WIDTH}}"
        out.write(f"{name:<{width}}{hal}{right(device['executions'], 11)}{busy}%{counts}\n")
    if data["expectations"]:
        out.write("\nexpectations\n")
        for result in data["expectations"]:
            mark = "ok  " if result["passed"] else "FAIL"
            why = f"  ({result['why']})" if "why" in result else ""
            out.write(f"  {mark} {result['text']}{why}\n")


SPLIT_WIDTHS: Final = {part: max(9, len(part) + 1) for part in SPLIT_PARTS}
"""Each split column's width: 9, or its head and a space.  The columns are the parts of
``latency_split_ms`` (``SPLIT_PARTS``), in order, each headed by its key: one name per
quantity in the summary, the report, ``--executions`` and ``--set``."""


def _split_summary(apps: dict[str, Any], out: TextIO) -> None:
    """Where each app's mean latency went (ms, ``latency_split_ms``): one line per app with a
    completion (none for report data without the split)."""
    from nnemu._text import cells

    shown = {
        name: app for name, app in apps.items() if app["completed"] and "latency_split_ms" in app
    }
    if not shown:
        return
    width = max([3, *(len(name) for name in shown)]) + 2
    heads = "".join(f"{part:>{SPLIT_WIDTHS[part]}}" for part in SPLIT_PARTS)
    out.write(f"\n{'mean ms':<{width}}{'latency':>9}{heads}\n")
    for name, app in shown.items():
        split = app["latency_split_ms"]
        mean = f"{app['latency_ms']['mean']:.3f}"
        parts = cells(
            (mean, 9), *((f"{split[part]:.3f}", SPLIT_WIDTHS[part]) for part in SPLIT_PARTS)
        )
        out.write(f"{name:<{width}}{parts}\n")


def replications_summary(replications: Replications, out: TextIO) -> None:
    """``nnemu run --replications``'s summary: the tables of ``summary`` with, per figure,
    the mean over the replications and below it the half-width of its 95% interval."""
    from nnemu._tails import MARK, footnote, marked_cells, slowest_only
    from nnemu._text import counted, seed_span

    intervals = replications.intervals()
    seeds = replications.seeds
    count = len(seeds)
    span = seed_span(seeds[0], count)
    virtual = intervals.get("virtual_ms")
    out.write(
        f"scenario {replications.scenario.name}  {span} ({counted(count, 'replication')})"
        + (f"  virtual {virtual.mean:.3f} ms" if virtual else "")
        + "\n"
    )
    if replications.interrupted:
        out.write(
            f"interrupted by {replications.interrupted}: {count} of "
            f"{replications.requested} replications finished\n"
        )
    out.write(
        "each figure: the mean over the replications; below it, ± the half-width "
        "of its 95% confidence interval (Student t)\n\n"
    )

    def cells(
        paths: Sequence[str],
        widths: Sequence[int],
        digits: Sequence[int],
        marked: Collection[str] = (),
    ) -> tuple[str, str]:
        """The row of means (those of ``marked`` paths followed by ``*``) and of half-widths."""
        means: list[tuple[str, int, bool]] = []
        halves = ""
        for path, width, places in zip(paths, widths, digits, strict=True):
            interval = intervals.get(path)
            if interval is None:
                means.append(("-", width, False))
                halves += f"{'':>{width}}"
                continue
            scale = 100.0 if path.endswith("busy_fraction") else 1.0
            unit = "%" if scale != 1.0 else ""
            means.append((f"{interval.mean * scale:.{places}f}{unit}", width, path in marked))
            if interval.n < 2:  # one value has no spread to estimate: no interval, not 0
                halves += f"{'-':>{width}}"
            else:
                halves += f"{interval.half_width * scale:>{width - len(unit)}.{places}f}{unit}"
        return marked_cells(means)[0], halves

    apps = sorted({path.split(".")[1] for path in intervals if path.startswith("apps.")})
    names = [str(name) for name in replications.reports[0].data.get("apps", {})]
    apps = [name for name in names if name in apps] + [n for n in apps if n not in names]
    width = max([10, *(len(name) for name in apps)]) + 2
    columns = ("submitted", "completed", "failed", "dropped", "in_flight")
    quantiles = ("p50", "p95", "p99")
    out.write(
        f"{'app':<{width}}{'submitted':>10}{'completed':>11}{'failed':>8}{'dropped':>9}"
        f"{'in flight':>11}{'p50 ms':>10}{'p95 ms':>10}{'p99 ms':>10}  errors\n"
    )
    notes: list[str] = []
    marked: set[str] = set()
    for name in apps:
        paths = [f"apps.{name}.{c}" for c in columns] + [
            f"apps.{name}.latency_ms.{q}" for q in quantiles
        ]
        completed = [
            report.data["apps"][name].get("completed", 0)
            for report in replications.reports
            if name in report.data.get("apps", {})
        ]
        # A quantile's mean is marked when it was the slowest execution in any replication.
        slowest = {q for q in quantiles if any(slowest_only(q, n) for n in completed)}
        marked |= slowest
        means, halves = cells(
            paths,
            (10, 11, 8, 9, 11, 10, 10, 10),
            (1,) * 5 + (3,) * 3,
            marked={f"apps.{name}.latency_ms.{q}" for q in slowest},
        )
        prefix = f"apps.{name}.errors."
        errors = ", ".join(
            f"{path.removeprefix(prefix)}:{interval.mean:.1f}"
            for path, interval in intervals.items()
            if path.startswith(prefix)
        )
        compile_results = [
            report.data["apps"][name].get("compile_result", "NO_ERROR")
            for report in replications.reports
            if name in report.data.get("apps", {})
        ]
        failed = sorted({result for result in compile_results if result != "NO_ERROR"})
        if failed:
            times = sum(result != "NO_ERROR" for result in compile_results)
            errors = f"compilation {'/'.join(failed)}" + (
                f" in {times} of {count}" if times < count else ""
            )
        gap = " " if means.endswith(MARK) else "  "  # a mark takes a column of the gap
        out.write(f"{name:<{width}}{means}{gap}{errors or '-'}\n")
        out.write(f"{'  ± 95% CI':<{width}}{halves}".rstrip() + "\n")
        latency = intervals.get(f"apps.{name}.latency_ms.p50")
        if latency is not None and latency.n < count:
            notes.append(
                f"{name}: latency over the {latency.n} of {count} replications "
                f"where it completed something"
            )
    if marked:
        out.write(footnote(marked, " in at least one replication") + "\n")
    split = [name for name in apps if f"apps.{name}.latency_split_ms.compute" in intervals]
    if split:
        heads = "".join(f"{part:>{SPLIT_WIDTHS[part]}}" for part in SPLIT_PARTS)
        out.write(f"\n{'mean ms':<{width}}{'latency':>9}{heads}\n")
        for name in split:
            paths = [f"apps.{name}.latency_ms.mean"] + [
                f"apps.{name}.latency_split_ms.{part}" for part in SPLIT_PARTS
            ]
            widths = (9, *SPLIT_WIDTHS.values())
            means, halves = cells(paths, widths, (3,) * len(paths))
            out.write(f"{name:<{width}}{means}\n")
            out.write(f"{'  ± 95% CI':<{width}}{halves}".rstrip() + "\n")
    devices = sorted({path.split(".")[1] for path in intervals if path.startswith("devices.")})
    names = [str(name) for name in replications.reports[0].data.get("devices", {})]
    devices = [name for name in names if name in devices] + [n for n in devices if n not in names]
    width = max([10, *(len(name) for name in devices)]) + 2
    out.write(
        f"\n{'device':<{width}}{'hal':<{HAL_WIDTH}}{'executions':>11}{'busy':>9}"
        f"{'preemptions':>13}{'energy':>10}\n"
    )
    reported = replications.reports[0].data.get("devices", {})
    for name in devices:
        paths = [
            f"devices.{name}.{key}"
            for key in ("executions", "busy_fraction", "preemptions", "energy")
        ]
        means, halves = cells(paths, (11, 9, 13, 10), (1, 1, 1, 1))
        hal = f"{hal_of(reported.get(name, {})):<{HAL_WIDTH}}"
        out.write(
            f"{name:<{width}}{hal}{means}\n"
            + f"{'  ± 95% CI':<{width}}{'':<{HAL_WIDTH}}{halves}".rstrip()
            + "\n"
        )
    if notes:
        out.write("\n" + "".join(f"{note}\n" for note in notes))
    expectations = replications.expectations()
    if expectations:
        out.write(f"\nexpectations (on the means over {counted(count, 'replication')})\n")
        for result in expectations:
            mark = "ok  " if result.passed else "FAIL"
            if result.why is not None:
                mean = f"  ({result.why})"
            else:
                mean = "" if result.actual is None else f"  (mean {result.actual:g})"
            out.write(f"  {mark} {result.text}{mean}\n")
