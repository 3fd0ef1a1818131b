"""A sweep's directory: experiment.yaml, results.jsonl (as variants finish), the table, the summary.

``results.jsonl`` is the record: one whole, fsync'd JSON line per finished variant, so
an interrupted sweep leaves only whole lines (a line cut by a power loss is dropped
when the sweep is resumed) and ``--resume`` knows what is done.  The table
(``results.parquet``, or ``results.csv`` without pyarrow) and ``summary.txt`` are
rebuilt from it at the end, sorted in the experiment's order, so they are the same
bytes whichever engine and however many workers ran the variants.
"""

from __future__ import annotations

import contextlib
import csv
import importlib
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import IO, Any, Final

import yaml

from nnemu._tails import MARK, TAIL_MIN, footnote, slowest_only
from nnemu._text import counted, counts, interval_text, seed_span
from nnemu.errors import NnemuError
from nnemu.report import PER_COMPLETION, measured
from nnemu.stats import mean_interval
from nnemu.sweep._experiment import Experiment, Variant
from nnemu.sweep._signals import signals_held

EXPERIMENT: Final = "experiment.yaml"
RESULTS: Final = "results.jsonl"
PARQUET: Final = "results.parquet"
CSV: Final = "results.csv"
SUMMARY: Final = "summary.txt"
_FIXED_COLUMNS: Final = ("variant", "replication", "seed", "status", "error", "app", "virtual_ms")


class SweepDirError(NnemuError):
    """A sweep directory that cannot be used (another experiment, another nnemu, unreadable)."""


class SweepDir:
    """The output directory of one experiment; see the module docstring."""

    def __init__(self, path: str, experiment: Experiment, version: str) -> None:
        self.path = path
        self.experiment = experiment
        self.version = version
        self.rows: list[dict[str, Any]] = []
        """Every row of results.jsonl: those found on resume, then those appended."""
        self._file: IO[str] | None = None

    def file(self, name: str) -> str:
        """The path of ``name`` in the directory."""
        return os.path.join(self.path, name)

    def open(self, *, resume: bool) -> None:
        """Create the directory or check that it holds this experiment; read what is done.

        Raises:
            SweepDirError: it holds results and ``resume`` is off, another experiment,
                results of another nnemu version, or a line that is not a result.
        """
        resolved = self.experiment.resolved(self.version)
        try:
            os.makedirs(self.path, exist_ok=True)
        except OSError as err:
            raise SweepDirError(
                f"{self.path}: cannot create the directory: {err.strerror}"
            ) from err
        recorded = self.file(EXPERIMENT)
        results = self.file(RESULTS)
        for path in (recorded, results):
            if os.path.exists(path) and not os.path.isfile(path):
                raise SweepDirError(f"{path}: expected a regular file of a sweep")
        if os.path.exists(recorded):
            self._check_same(recorded, resolved)
        if os.path.exists(results) and os.path.getsize(results) and not resume:
            raise SweepDirError(
                f"{self.path}: already holds results of a sweep; add --resume to finish it, "
                "or choose another --out"
            )
        with open(recorded, "w", encoding="utf-8") as file:
            yaml.safe_dump(resolved, file, sort_keys=False, allow_unicode=True)
        if os.path.exists(results):
            self.rows = self._read(results)
        self._file = open(results, "a", encoding="utf-8")  # noqa: SIM115 (closed in close())

    def _check_same(self, recorded: str, resolved: Mapping[str, Any]) -> None:
        try:
            with open(recorded, encoding="utf-8") as file:
                before = yaml.safe_load(file)
        except (OSError, yaml.YAMLError) as err:
            raise SweepDirError(f"{recorded}: cannot read: {err}") from err
        if not isinstance(before, dict):
            raise SweepDirError(f"{recorded}:1: expected a recorded experiment")
        if before.get("nnemu") != self.version:
            raise SweepDirError(
                f"{recorded}:1: the sweep here was run by nnemu {before.get('nnemu')}, this is "
                f"nnemu {self.version}; results of two versions are not mixed: choose another --out"
            )
        ignored = ("experiment", "scenario")  # paths: the same files may be named otherwise
        changed = [
            key for key in resolved if key not in ignored and before.get(key) != resolved[key]
        ]
        if changed:
            raise SweepDirError(
                f"{recorded}:1: the sweep here is of another experiment (changed: "
                f"{', '.join(changed)}); choose another --out"
            )

    def _read(self, path: str) -> list[dict[str, Any]]:
        """The whole lines of results.jsonl; a last line cut short is dropped from the file."""
        with open(path, "rb") as file:
            data = file.read()
        end = data.rfind(b"\n") + 1
        if end < len(data):  # the last line was cut by a crash: drop it
            with open(path, "r+b") as file:
                file.truncate(end)
        rows: list[dict[str, Any]] = []
        for number, line in enumerate(data[:end].splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except (ValueError, UnicodeDecodeError) as err:
                raise SweepDirError(f"{path}:{number}: expected a JSON result, got {err}") from err
            if not isinstance(row, dict) or not isinstance(row.get("variant"), str):
                raise SweepDirError(f"{path}:{number}: expected a result with a variant key")
            if row.get("nnemu") != self.version:
                raise SweepDirError(
                    f"{path}:{number}: written by nnemu {row.get('nnemu')}, this is nnemu "
                    f"{self.version}; choose another --out"
                )
            rows.append(row)
        return rows

    def done(self, *, retry_failed: bool = False) -> set[str]:
        """The variant keys whose result is kept on resume: the last row of each variant in
        results.jsonl says ``ok`` or ``failed`` (the scenario raised: it would again; not
        with ``retry_failed``). A ``crashed`` variant (its worker process died twice on it: an
        OOM kill, a signal to the worker) is not done: resuming runs it again."""
        kept = ("ok",) if retry_failed else ("ok", "failed")
        latest = {row["variant"]: row["status"] for row in self.rows}
        return {key for key, status in latest.items() if status in kept}

    def statuses(self) -> dict[str, str]:
        """The status of each variant's last row in results.jsonl."""
        return {row["variant"]: row["status"] for row in self.rows}

    def append(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Append rows to results.jsonl, each one whole line, flushed and fsync'd."""
        assert self._file is not None, "open() first"
        text = "".join(json.dumps(row, sort_keys=True) + "\n" for row in rows)
        if not text:
            return
        # Ctrl-C and SIGTERM wait until the lines are on disk and counted: an interrupt never
        # cuts one, and its message counts what the file holds.
        with signals_held():
            try:
                self._file.write(text)
                self._file.flush()
                os.fsync(self._file.fileno())
            except OSError as err:
                raise SweepDirError(
                    f"{self.file(RESULTS)}: cannot write the results: {err.strerror or err}"
                ) from err
            self.rows.extend(json.loads(line) for line in text.splitlines())

    def close(self) -> None:
        """Close results.jsonl (what a failed write left in its buffer is dropped)."""
        if self._file is not None:
            file, self._file = self._file, None
            with contextlib.suppress(OSError):  # the write that failed raised, naming the file
                file.close()

    def latest(self) -> list[dict[str, Any]]:
        """One row per variant of the experiment (the last written), in the experiment's order."""
        order = {variant.key: variant.index for variant in self.experiment.variants()}
        latest = {row["variant"]: row for row in self.rows if row["variant"] in order}
        return sorted(latest.values(), key=lambda row: order[row["variant"]])


def _flatten(prefix: str, node: Any, into: dict[str, Any]) -> None:
    if isinstance(node, Mapping):
        for key, value in node.items():
            _flatten(f"{prefix}.{key}" if prefix else str(key), value, into)
    elif not isinstance(node, list):
        into[prefix] = node


def table(experiment: Experiment, rows: Sequence[Mapping[str, Any]]) -> dict[str, list[Any]]:
    """The results table: one row per (variant, app), columns in a fixed order.

    Columns: variant, the varied keys, replication, seed, status, error, app, virtual_ms,
    each app metric flattened (``latency_ms.p99``; ``errors.<CODE>`` 0 where it never
    happened; ``latency_ms.*`` and ``latency_split_ms.*`` null for an app that completed
    nothing), then every device metric (``devices.<dev>.<metric>``).  A failed or
    crashed variant has one row with no app.
    """
    records: list[dict[str, Any]] = []
    app_columns: set[str] = set()
    device_columns: set[str] = set()
    for row in rows:
        base = {
            "variant": row["variant"],
            **{key: row["point"].get(key) for key in experiment.varied_keys},
            "replication": row["replication"],
            "seed": row["seed"],
            "status": row["status"],
            "error": row["error"],
        }
        report = row.get("report")
        if not report:
            records.append({**base, "app": None, "virtual_ms": None})
            continue
        devices: dict[str, Any] = {}
        _flatten("devices", report.get("devices", {}), devices)
        device_columns.update(devices)
        for app, data in report.get("apps", {}).items():
            metrics: dict[str, Any] = {}
            _flatten("", data, metrics)
            if data.get("completed") == 0:  # its latency figures are placeholders, not samples
                for column in metrics:
                    if column.startswith(tuple(f"{figures}." for figures in PER_COMPLETION)):
                        metrics[column] = None
            app_columns.update(metrics)
            records.append(
                {**base, "app": app, "virtual_ms": report.get("virtual_ms"), **metrics, **devices}
            )
    # A varied ``seed`` is the run's seed column (each point's first replication's seed).
    fixed = list(dict.fromkeys(["variant", *experiment.varied_keys, *_FIXED_COLUMNS[1:]]))
    columns = fixed + sorted(app_columns - set(fixed)) + sorted(device_columns - set(fixed))
    result: dict[str, list[Any]] = {column: [] for column in columns}
    for record in records:
        for column in columns:
            value = record.get(column)
            if value is None and column.startswith("errors.") and record["app"] is not None:
                value = 0
            result[column].append(value)
    return result


def write_table(sweep: SweepDir, columns: Mapping[str, list[Any]]) -> tuple[str, bool]:
    """Write results.parquet (or results.csv without pyarrow); (its path, whether Parquet).

    Raises:
        SweepDirError: it cannot be written (the message names the file).
    """
    try:
        pa: Any = importlib.import_module("pyarrow")
        pq: Any = importlib.import_module("pyarrow.parquet")
    except ImportError:
        pa = pq = None
    path = sweep.file(CSV if pq is None else PARQUET)
    try:
        if pq is None:
            _write_csv(path, columns)
        else:
            pq.write_table(pa.table(_arrays(pa, columns)), path)
    except OSError as err:
        raise SweepDirError(f"{path}: cannot write the table: {err.strerror or err}") from err
    return path, pq is not None


def _write_csv(path: str, columns: Mapping[str, list[Any]]) -> None:
    with open(path, "w", encoding="utf-8", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(columns)
        for record in zip(*columns.values(), strict=True):
            writer.writerow(
                "" if value is None else json.dumps(value) if isinstance(value, bool) else value
                for value in record
            )


def _arrays(pa: Any, columns: Mapping[str, list[Any]]) -> dict[str, Any]:
    """The table's columns as pyarrow arrays."""
    arrays = {}
    for name, values in columns.items():
        if any(isinstance(v, float) for v in values) and all(
            v is None or (isinstance(v, int | float) and not isinstance(v, bool)) for v in values
        ):  # a column of ints and floats (a report rounds 12.0 to 12): all floats
            values = [None if v is None else float(v) for v in values]
        arrays[name] = pa.array(values)
    return arrays


def summary(experiment: Experiment, rows: Sequence[Mapping[str, Any]]) -> str:
    """summary.txt: per point, each metric's mean ± its 95% CI half-width over the
    replications (to the half-width's precision: ``nnemu._text.interval_text``), n (runs that
    finished) and the failures (failed and crashed).  A p95 or p99 latency that was only the
    slowest execution in at least one replication of the point (``nnemu._tails``) is marked,
    with a footnote."""
    by_point: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        by_point.setdefault(json.dumps(row["point"], sort_keys=True), []).append(row)
    statuses = [row["status"] for row in rows]
    points, replications, seed = len(experiment.points()), experiment.replications, experiment.seed
    total = points * replications
    lines = [
        f"experiment {experiment.source}: scenario {experiment.scenario_path}",
        f"{counted(points, 'point')} x {counted(replications, 'replication')} "
        f"({seed_span(seed, replications)}); "
        f"{len(rows)} of {total} variants done: {statuses.count('ok')} ok, "
        f"{statuses.count('failed')} failed, {statuses.count('crashed')} crashed",
        "mean ± half-width of the 95% confidence interval (Student t) over the replications, "
        "to the half-width's second significant digit",
        "",
    ]
    header = [*experiment.varied_keys, "n", "failed"]
    body: list[list[str]] = []
    # per metric, per point: (mean, half-width and its "(n=k)", marked) or None ("-")
    figures: list[list[tuple[str, str, bool] | None]] = [[] for _ in experiment.metrics]
    for point in experiment.points():
        found = by_point.get(json.dumps(point, sort_keys=True), [])
        ok = [row for row in found if row["status"] == "ok"]
        cells = [_cell(point[key]) for key in experiment.varied_keys]
        cells += [str(len(ok)), str(len(found) - len(ok))]
        body.append(cells)
        for column, metric in zip(figures, experiment.metrics, strict=True):
            path = tuple(metric.split("."))
            counted_rows = [
                (row, v)
                for row in ok
                if (v := measured(row["report"], path)) is not None and math.isfinite(v)
            ]
            if not counted_rows:
                column.append(None)
                continue
            values = [v for _, v in counted_rows]
            interval = mean_interval(values)
            mean, half = interval_text(
                interval.mean,
                interval.half_width if interval.n > 1 else None,
                whole=counts(metric),
            )
            if len(values) != len(ok):
                half += f" (n={len(values)})"
            marked = slowest_only_in(path, [row for row, _ in counted_rows])
            column.append((mean, half, marked))
    marked_quantiles = set()
    for column, metric in zip(figures, experiment.metrics, strict=True):
        means = max((len(cell[0]) for cell in column if cell), default=0)
        halves = max((len(cell[1]) for cell in column if cell), default=0)
        mark = any(cell[2] for cell in column if cell)
        if mark:
            marked_quantiles.add(metric.rsplit(".", 1)[1])
        width = means + mark + 3 + halves
        header.append(metric)
        for cells, cell in zip(body, column, strict=True):
            if cell is None:
                cells.append("-".rjust(width))
                continue
            sign = MARK if cell[2] else " " * mark
            cells.append(f"{cell[0]:>{means}}{sign} ± {cell[1]:<{halves}}")
    widths = [max(len(text) for text in column) for column in zip(header, *body, strict=True)]
    numeric = len(experiment.varied_keys)
    for cells in [header, *body]:
        parts = [
            text.ljust(width) if index < numeric else text.rjust(width)
            for index, (text, width) in enumerate(zip(cells, widths, strict=True))
        ]
        lines.append("  ".join(parts).rstrip())
    if marked_quantiles:
        lines.append(footnote(marked_quantiles, " in at least one replication of the point"))
    return "\n".join(lines) + "\n"


def slowest_only_in(path: tuple[str, ...], rows: Sequence[Mapping[str, Any]]) -> bool:
    """Whether ``path`` is an app's p95 or p99 latency that, in at least one of ``rows``,
    was over too few executions to be more than the slowest (``nnemu._tails``)."""
    if len(path) != 4 or path[0] != "apps" or path[2] != "latency_ms" or path[3] not in TAIL_MIN:
        return False
    return any(
        slowest_only(path[3], row["report"]["apps"][path[1]].get("completed", 0)) for row in rows
    )


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True)


def variants_left(experiment: Experiment, done: set[str]) -> list[Variant]:
    """The variants of ``experiment`` not yet in ``done``, in order."""
    return [variant for variant in experiment.variants() if variant.key not in done]
