"""``nnemu compare A B``: the metrics of two runs, replications or sweeps side by side.

Each side is a run report (``nnemu run --report``), a replications report (``nnemu run
--replications N --report``) or a sweep directory (``nnemu sweep --out DIR``: its
``results.jsonl``, one run per line).  A side is read as *points*: a sweep has one per
combination of its varied values (its ``point``), a report or replications report has one,
the empty point.  Points are matched by their values; a side with only the empty point is
matched against every point of the other (a baseline against a sweep).  Per matched point
and metric the table gives A's and B's mean, the difference and, where both sides have two
or more runs, Welch's t-test at 95% (``nnemu.stats.welch_test``), each figure to the precision
its runs give it (``nnemu._text``: a mean ± its 95% half-width over several runs, the
difference to that of its Welch interval).  ``--fail-if`` decides on the exact means.

``--fail-if 'PATH OP VALUE'`` turns the comparison into a gate: it holds when B's value (a
plain number: ``2.5``), B's change from A (a signed number: ``+0.5``) or B's relative change
from A (a percentage: ``+5%``) compares with VALUE by OP, at any point.
"""

from __future__ import annotations

import json
import math
import operator
import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TextIO

import attrs

from nnemu._files import DocumentTooLarge, read_document
from nnemu._tails import TAIL_MIN, slowest_only
from nnemu._text import counted, counts, fixed, interval_text, places
from nnemu.errors import ExitCode, ResultsFormatError
from nnemu.replications import REPLICATIONS_KIND, metric_samples
from nnemu.stats import mean_interval, sample_variance, t_quantile, welch_test

RESULTS_FILE: Final = "results.jsonl"
"""The file of a sweep directory that ``nnemu compare`` reads (one run per line)."""

_DEFAULT_LEAVES: Final = frozenset({"deadline_miss_rate", "error_rate", "busy_fraction"})
_QUANTILES: Final = frozenset({"p50", "p95", "p99"})

_OPS: Final[Mapping[str, Callable[[float, float], bool]]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
}
_CONDITION: Final = re.compile(
    r"^\s*(?P<path>[^\s<>=]+)\s*(?P<op>>=|<=|>|<)\s*"
    r"(?P<value>(?P<sign>[+-])?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)(?P<percent>%)?\s*$"
)


@attrs.frozen
class Point:
    """The runs of one point of a side: per metric, its value in each run."""

    point: Mapping[str, Any]
    """The varied keys and their values (empty for a report)."""
    samples: Mapping[str, tuple[float, ...]]
    """Per metric path, its values (one per run that has it)."""
    runs: int
    """How many runs the point has."""

    @property
    def label(self) -> str:
        """``key=value, ...`` of the point, or ``""`` for the empty point."""
        return ", ".join(f"{key}={json.dumps(value)}" for key, value in self.point.items())


@attrs.frozen
class Side:
    """One side of a comparison, as read from its file or directory."""

    source: str
    """The path as the user gave it."""
    kind: str
    """``report``, ``replications`` or ``sweep``."""
    points: Mapping[str, Point]
    """Points by their key (the point's values as sorted JSON), sorted."""
    skipped: int = 0
    """Sweep variants without a report (failed, crashed, or a line cut off by a crash)."""

    @property
    def description(self) -> str:
        """What the side is, for the table's header."""
        runs = sum(point.runs for point in self.points.values())
        if self.kind == "report":
            return "a run report"
        if self.kind == "replications":
            return counted(runs, "replication")
        skipped = (
            f", {counted(self.skipped, 'variant')} without a report skipped" if self.skipped else ""
        )
        return f"a sweep: {counted(len(self.points), 'point')}, {counted(runs, 'run')}{skipped}"


def _point_key(point: Mapping[str, Any]) -> str:
    return json.dumps(point, sort_keys=True)


def _point_order(point: Mapping[str, Any]) -> tuple[tuple[str, int, float, str], ...]:
    """Points in the order of their values, numbers by size (2 before 10)."""
    order = []
    for key, value in sorted(point.items()):
        if isinstance(value, int | float) and not isinstance(value, bool):
            order.append((key, 0, float(value), ""))
        else:
            order.append((key, 1, 0.0, json.dumps(value, sort_keys=True)))
    return tuple(order)


def _experiment_vary(directory: str) -> list[tuple[str, list[Any]]] | None:
    """The varied keys and their values, in the order of the sweep's ``experiment.yaml``
    (None when it is missing or unreadable: the points are then ordered by their values)."""
    try:
        text = read_document(os.path.join(directory, "experiment.yaml"))
    except (OSError, ValueError):  # ValueError: not UTF-8, too large
        return None
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    vary = data.get("vary") if isinstance(data, Mapping) else None
    if not isinstance(vary, Mapping) or not all(isinstance(v, list) for v in vary.values()):
        return None
    return [(str(key), list(values)) for key, values in vary.items()]


def _experiment_order(
    point: Mapping[str, Any], vary: Sequence[tuple[str, list[Any]]] | None
) -> tuple[int, ...] | None:
    """The point's place in its experiment's cross product (the summary's order), or None
    when the point is not one of the experiment's."""
    if vary is None or set(point) != {key for key, _ in vary}:
        return None
    place = []
    for key, values in vary:
        if point[key] not in values:
            return None
        place.append(values.index(point[key]))
    return tuple(place)


def _read_json(path: str) -> Any:
    try:
        text = read_document(path, limit=None)
    except DocumentTooLarge as err:
        raise ResultsFormatError(path, 0, str(err)) from err
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise ResultsFormatError(path, err.lineno, f"expected JSON: {err.msg}") from err


def _numbers(values: object) -> tuple[float, ...] | None:
    if not isinstance(values, list) or not values:
        return None
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return None
    return tuple(float(v) for v in values)


def _replications_side(path: str, data: Mapping[str, Any]) -> Side:
    metrics = data.get("metrics")
    if not isinstance(metrics, Mapping):
        raise ResultsFormatError(path, 0, "metrics: expected an object of metrics")
    samples: dict[str, tuple[float, ...]] = {}
    for name in sorted(metrics):
        entry = metrics[name]
        values = _numbers(entry.get("values") if isinstance(entry, Mapping) else None)
        if values is None:
            raise ResultsFormatError(
                path, 0, f"metrics.{name}.values: expected a non-empty list of numbers"
            )
        samples[str(name)] = values
    runs = data.get("replications")
    if not isinstance(runs, int) or isinstance(runs, bool) or runs < 1:
        raise ResultsFormatError(path, 0, "replications: expected a number of runs >= 1")
    return Side(path, "replications", {_point_key({}): Point({}, samples, runs)})


def _is_report(data: object) -> bool:
    return (
        isinstance(data, Mapping)
        and isinstance(data.get("apps"), Mapping)
        and isinstance(data.get("devices"), Mapping)
    )


def _report_side(path: str) -> Side:
    data = _read_json(path)
    if isinstance(data, Mapping) and data.get("kind") == REPLICATIONS_KIND:
        return _replications_side(path, data)
    if not _is_report(data):
        raise ResultsFormatError(
            path, 0, "expected an nnemu report (with apps and devices) or a replications report"
        )
    samples = {name: tuple(values) for name, values in metric_samples([data]).items() if values}
    return Side(path, "report", {_point_key({}): Point({}, samples, 1)})


def _sweep_side(directory: str) -> Side:
    path = os.path.join(directory, RESULTS_FILE)
    if not os.path.isfile(path):
        raise ResultsFormatError(
            directory, 0, f"not a sweep directory (no {RESULTS_FILE}) nor a report"
        )
    with open(path, encoding="utf-8") as stream:
        lines = stream.readlines()
    seen: set[str] = set()
    runs: dict[str, tuple[Mapping[str, Any], list[tuple[int, Mapping[str, Any]]]]] = {}
    skipped = 0
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            if number == len(lines) and not line.endswith("\n"):
                skipped += 1  # the last line of a sweep killed while writing it
                continue
            raise ResultsFormatError(path, number, f"expected JSON: {err.msg}") from err
        if not isinstance(row, Mapping):
            raise ResultsFormatError(path, number, "expected a JSON object")
        point, variant, replication = row.get("point"), row.get("variant"), row.get("replication")
        if not isinstance(point, Mapping):
            raise ResultsFormatError(path, number, "point: expected an object")
        if not isinstance(variant, str):
            raise ResultsFormatError(path, number, "variant: expected a string")
        if not isinstance(replication, int) or isinstance(replication, bool):
            replication = 0
        if variant in seen:  # written twice (a resumed sweep): the first one counts
            continue
        seen.add(variant)
        if row.get("status") != "ok":
            skipped += 1
            continue
        report = row.get("report")
        if not isinstance(report, Mapping) or not _is_report(report):
            raise ResultsFormatError(path, number, "report: expected an nnemu report")
        key = _point_key(point)
        runs.setdefault(key, (dict(sorted(point.items())), []))[1].append((replication, report))
    if not runs and not skipped:
        raise ResultsFormatError(path, 0, "no runs in it")
    # The experiment's order (its first varied key slowest, as summary.txt), else by value.
    vary = _experiment_vary(directory)
    places = {key: _experiment_order(runs[key][0], vary) for key in runs}
    ordered = sorted(k for k in runs if places[k] is not None)
    ordered.sort(key=lambda key: places[key] or ())
    ordered += sorted(
        (k for k in runs if places[k] is None), key=lambda key: _point_order(runs[key][0])
    )
    points = {}
    for key in ordered:
        point, reports = runs[key]
        if places[key] is not None and vary is not None:
            point = {name: point[name] for name, _ in vary}
        reports.sort(key=lambda item: item[0])
        samples = metric_samples([report for _, report in reports])
        values = {name: tuple(v) for name, v in samples.items() if v}
        points[key] = Point(point, values, len(reports))
    return Side(directory, "sweep", points, skipped)


def load_side(path: str) -> Side:
    """Read one side of a comparison: a report or replications report file, or a sweep directory.

    Raises:
        ResultsFormatError: the file or directory is not one of those (``file:line: ...``).
        OSError: it cannot be read.
    """
    if os.path.isdir(path):
        return _sweep_side(path)
    return _report_side(path)


@attrs.frozen
class Condition:
    """A ``--fail-if`` condition: ``PATH OP VALUE``."""

    text: str
    """As written."""
    path: str
    """The metric."""
    op: str
    """One of ``> < >= <=``."""
    value: float
    """The threshold."""
    kind: str
    """``value`` (B's value), ``change`` (B - A) or ``percent`` ((B - A) / |A| in %)."""

    def measure(self, a: float, b: float) -> float:
        """What the condition compares with its threshold, for means ``a`` and ``b``."""
        if self.kind == "value":
            return b
        if self.kind == "change":
            return b - a
        return _percent(a, b)

    def holds(self, a: float, b: float) -> bool:
        """Whether the condition holds for means ``a`` and ``b``."""
        return _OPS[self.op](self.measure(a, b), self.value)

    def format_measure(self, row: Row) -> str:
        """The measured quantity in the condition's own terms, as the table prints it (``B
        12.3``, ``B - A +0.5``, ``B - A +4.2%``); the condition is decided on the exact means."""
        texts = row.texts()
        if self.kind == "value":
            return f"B {texts.b}"
        if self.kind == "change":
            return f"B - A {texts.difference}"
        return f"B - A {texts.change}"


def parse_condition(text: str) -> Condition:
    """Parse ``PATH OP VALUE`` (``apps.camera.latency_ms.p99 > +5%``).

    Raises:
        ValueError: the text is not of that form.
    """
    match = _CONDITION.match(text)
    if match is None:
        msg = (
            f"--fail-if {text!r}: expected PATH OP VALUE, OP one of > < >= <=, VALUE a number "
            f"(B's value: 2.5), a signed number (B - A: +0.5) or a percentage (of A: +5%)"
        )
        raise ValueError(msg)
    kind = "percent" if match["percent"] else "change" if match["sign"] else "value"
    return Condition(text.strip(), match["path"], match["op"], float(match["value"]), kind)


def _percent(a: float, b: float) -> float:
    if a == 0.0:
        return 0.0 if b == 0.0 else math.copysign(math.inf, b)
    return (b - a) / abs(a) * 100.0


def _side_text(values: Sequence[float], metric: str) -> tuple[str, str]:
    """A side's mean and the half-width of its 95% interval as text, to the interval's
    precision (``nnemu._text.interval_text``); one value: the mean to 4 significant digits
    (a count's whole value as it is: ``nnemu._text.counts``) and ``-``."""
    interval = mean_interval(values)
    return interval_text(
        interval.mean, interval.half_width if interval.n > 1 else None, whole=counts(metric)
    )


def _difference_text(a: Sequence[float], b: Sequence[float], a_text: str, b_text: str) -> str:
    """B - A, signed, to the precision the data gives it: with two or more values a side, to
    that of its 95% Welch interval (two significant digits of the half-width, as a mean); one
    run against several, to that of the several's interval (the difference is known no better);
    one run a side (or no spread at all), to the finer decimal place of the two means as
    printed."""
    difference = _mean(b) - _mean(a)
    if difference == 0.0:
        return "0"
    half_width = 0.0
    if len(a) > 1 and len(b) > 1:
        var_a, var_b = sample_variance(a) / len(a), sample_variance(b) / len(b)
        spread = var_a + var_b
        if spread > 0.0:
            df = spread**2 / (
                (var_a**2 / (len(a) - 1) if var_a else 0.0)
                + (var_b**2 / (len(b) - 1) if var_b else 0.0)
            )
            half_width = t_quantile(0.975, df) * math.sqrt(spread)
    elif len(a) > 1 or len(b) > 1:  # one run against several: their mean's interval
        half_width = mean_interval(a if len(a) > 1 else b).half_width
    if half_width > 0.0:
        text = interval_text(difference, half_width)[0]
    else:
        text = fixed(difference, max(places(a_text), places(b_text)))
    return text if text.startswith("-") or not text.strip("0.") else "+" + text


def _signed_percent(a: float, b: float) -> str:
    percent = _percent(a, b)
    if math.isinf(percent):
        return "-"
    return f"{percent:+.1f}%"


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def _default_metric(path: str) -> bool:
    parts = path.split(".")
    if parts[-1] in _DEFAULT_LEAVES:
        return True
    return len(parts) >= 2 and parts[-2] == "latency_ms" and parts[-1] in _QUANTILES


@attrs.frozen
class RowTexts:
    """A row's figures as the table prints them."""

    a: str
    """A's mean (to its interval's precision)."""
    a_half: str
    """The half-width of A's 95% interval, ``-`` for one value."""
    b: str
    """B's mean."""
    b_half: str
    """The half-width of B's interval."""
    difference: str
    """B - A, signed."""
    change: str
    """(B - A) / |A| in %, signed; ``-`` from A = 0."""


@attrs.frozen
class Row:
    """One metric at one point: A, B and the test."""

    metric: str
    """The metric's path."""
    a: tuple[float, ...]
    """A's values."""
    b: tuple[float, ...]
    """B's values."""

    @property
    def mean_a(self) -> float:
        """A's mean."""
        return _mean(self.a)

    @property
    def mean_b(self) -> float:
        """B's mean."""
        return _mean(self.b)

    def texts(self) -> RowTexts:
        """The row's figures as text, to the precision the values give them."""
        a, a_half = _side_text(self.a, self.metric)
        b, b_half = _side_text(self.b, self.metric)
        difference = _difference_text(self.a, self.b, a, b)
        change = _signed_percent(self.mean_a, self.mean_b)
        return RowTexts(a, a_half, b, b_half, difference, change)

    def p_value(self) -> float | None:
        """Welch's two-sided p-value, or None when a side has fewer than two values."""
        if len(self.a) < 2 or len(self.b) < 2:
            return None
        return welch_test(self.a, self.b).p_value


@attrs.frozen
class Pair:
    """A point of A matched with a point of B, and the metrics compared there."""

    a: Point
    """A's point."""
    b: Point
    """B's point."""
    rows: tuple[Row, ...]
    """The metrics shown, in path order."""
    hidden: int
    """Default metrics left out because they are 0 in every run of both sides."""
    only_a: tuple[str, ...] = ()
    """Default metrics only A's point has (B's app completed nothing there, say): not compared."""
    only_b: tuple[str, ...] = ()
    """Default metrics only B's point has."""


@attrs.frozen
class Comparison:
    """The whole comparison of two sides."""

    a: Side
    """Side A."""
    b: Side
    """Side B."""
    pairs: tuple[Pair, ...]
    """The matched points."""
    only_a: tuple[Point, ...]
    """Points of A with no match in B."""
    only_b: tuple[Point, ...]
    """Points of B with no match in A."""
    conditions: tuple[Condition, ...]
    """The ``--fail-if`` conditions."""

    def held(self) -> list[tuple[Condition, Pair, Row]]:
        """Each (condition, point, row) where a ``--fail-if`` condition holds."""
        found = []
        for condition in self.conditions:
            for pair in self.pairs:
                for row in pair.rows:
                    if row.metric == condition.path and condition.holds(row.mean_a, row.mean_b):
                        found.append((condition, pair, row))
        return found


def _match(a: Side, b: Side) -> tuple[list[tuple[Point, Point]], list[Point], list[Point]]:
    empty = _point_key({})
    if list(a.points) == [empty] and list(b.points) != [empty]:
        return [(a.points[empty], point) for point in b.points.values()], [], []
    if list(b.points) == [empty] and list(a.points) != [empty]:
        return [(point, b.points[empty]) for point in a.points.values()], [], []
    pairs = [(a.points[key], b.points[key]) for key in a.points if key in b.points]
    only_a = [point for key, point in a.points.items() if key not in b.points]
    only_b = [point for key, point in b.points.items() if key not in a.points]
    return pairs, only_a, only_b


def compare(
    a: Side, b: Side, metrics: Sequence[str] = (), conditions: Sequence[Condition] = ()
) -> Comparison:
    """Match the points of ``a`` and ``b`` and pick the metrics to show at each.

    ``metrics`` (else the default: every latency quantile, miss rate, error rate and busy
    fraction both sides have, left out where it is 0 in every run) and the conditions' paths
    are shown.

    Raises:
        ValueError: a named metric is on neither side's matched points, or no point matches.
    """
    matched, only_a, only_b = _match(a, b)
    if not matched:
        msg = f"no point of {a.source} matches a point of {b.source}"
        raise ValueError(msg)
    named = list(dict.fromkeys([*metrics, *(condition.path for condition in conditions)]))
    for path in named:
        for side, index in ((a, 0), (b, 1)):
            if not any(path in pair[index].samples for pair in matched):
                option = "--metrics" if path in metrics else "--fail-if"
                msg = f"{option} {path}: {_missing(side, path, [p[index] for p in matched])}"
                raise ValueError(msg)
    pairs = []
    for point_a, point_b in matched:
        shared = sorted(set(point_a.samples) & set(point_b.samples))
        chosen = set(named if metrics else [p for p in shared if _default_metric(p)])
        chosen |= {condition.path for condition in conditions}
        rows, hidden = [], 0
        for path in shared:
            if path not in chosen:
                continue
            row = Row(path, point_a.samples[path], point_b.samples[path])
            explicit = path in named
            if not explicit and not any(row.a) and not any(row.b):
                hidden += 1
                continue
            rows.append(row)
        one_sided = (
            tuple(sorted(p for p in set(mine) - set(theirs) if _default_metric(p)))
            if not metrics
            else ()
            for mine, theirs in (
                (point_a.samples, point_b.samples),
                (point_b.samples, point_a.samples),
            )
        )
        pairs.append(Pair(point_a, point_b, tuple(rows), hidden, *one_sided))
    return Comparison(a, b, tuple(pairs), tuple(only_a), tuple(only_b), tuple(conditions))


def _missing(side: Side, path: str, points: Sequence[Point]) -> str:
    """Why ``side``'s matched ``points`` have no ``path``: an app's latency it never measured
    (the app completed nothing), or no such metric."""
    parts = path.split(".")
    if (
        len(parts) == 4
        and parts[0] == "apps"
        and parts[2] in ("latency_ms", "latency_split_ms")
        and any(f"apps.{parts[1]}.completed" in point.samples for point in points)
        and not any(any(point.samples.get(f"apps.{parts[1]}.completed", ())) for point in points)
    ):
        return f"not measured in {side.source}: {parts[1]} completed no execution"
    return f"no such metric in {side.source}"


def _p_text(p_value: float) -> str:
    text = "<0.001" if p_value < 0.001 else f"{p_value:.3f}"
    return text + (" *" if p_value < 0.05 else "  ")


def _side_column(figures: Sequence[tuple[str, str]]) -> list[str]:
    """A side's column: each mean with ``± half-width`` (the ``±`` aligned) where some row of
    the column has two or more values, else the means alone."""
    if all(half == "-" for _, half in figures):
        return [mean for mean, _ in figures]
    means = max(len(mean) for mean, _ in figures)
    halves = max(len(half) for _, half in figures)
    return [f"{mean:>{means}} ± {half:<{halves}}" for mean, half in figures]


def _table(rows: Sequence[Row]) -> list[str]:
    header = ("metric", "A", "B", "B - A", "change", "Welch p")
    figures = [row.texts() for row in rows]
    a_column = _side_column([(texts.a, texts.a_half) for texts in figures])
    b_column = _side_column([(texts.b, texts.b_half) for texts in figures])
    cells = []
    for row, texts, a, b in zip(rows, figures, a_column, b_column, strict=True):
        p_value = row.p_value()
        test = "-" if p_value is None else _p_text(p_value)
        cells.append((row.metric, a, b, texts.difference, texts.change, test))
    widths = [max(len(line[i]) for line in [header, *cells]) for i in range(len(header))]
    lines = []
    for line in [header, *cells]:
        text = f"{line[0]:<{widths[0]}}" + "".join(
            f"  {cell:>{width}}" for cell, width in zip(line[1:], widths[1:], strict=True)
        )
        lines.append(text.rstrip())
    return lines


def _tail_note(pair: Pair) -> list[str]:
    """The line under a table naming its p95 and p99 rows that are, in some run of a side,
    only the slowest execution (over fewer than ``TAIL_MIN`` executions: ``nnemu._tails``)."""
    found = []
    for row in pair.rows:
        parts = row.metric.split(".")
        if len(parts) != 4 or parts[0] != "apps" or parts[2] != "latency_ms":
            continue
        least = TAIL_MIN.get(parts[3])
        if least is None:
            continue
        sides = []
        for name, point, values in (("A", pair.a, row.a), ("B", pair.b, row.b)):
            completed = point.samples.get(f"apps.{parts[1]}.completed", ())
            few = sum(slowest_only(parts[3], round(n)) for n in completed)
            # the runs with a latency figure: those where the app completed something
            if few == len(values) == point.runs == 1:
                sides.append(name)
            elif few == len(values) == point.runs:
                sides.append(f"{'both' if few == 2 else f'all {few}'} runs of {name}")
            elif few:
                runs = "run" if len(values) == 1 else "runs"
                some = " with a completion" if len(values) < point.runs else ""
                sides.append(f"{few} of {len(values)} {runs} of {name}{some}")
        if sides:
            found.append(f"{row.metric} (fewer than {least} executions in {' and '.join(sides)})")
    if not found:
        return []
    return [f"the slowest execution, not a tail estimate: {'; '.join(found)}"]


def format_comparison(comparison: Comparison) -> str:
    """The comparison as text: the sides, a table per matched point, the ``--fail-if`` results."""
    lines = [
        f"A  {comparison.a.source}: {comparison.a.description}",
        f"B  {comparison.b.source}: {comparison.b.description}",
    ]
    rows = [row for pair in comparison.pairs for row in pair.rows]
    if any(len(row.a) > 1 or len(row.b) > 1 for row in rows):
        lines.append(
            "A, B: mean ± half-width of its 95% CI (Student t) over the runs, to the "
            "half-width's 2nd significant digit"
        )
    if any(row.p_value() is not None for row in rows):
        lines.append(
            "B - A: to its 95% Welch CI's precision; Welch p: two-sided p-value of Welch's "
            "t-test (* significant at 95%)"
        )
    for pair in comparison.pairs:
        lines.append("")
        labels = [label for label in (pair.a.label, pair.b.label) if label]
        if labels:
            lines.append(
                f"point {labels[0]}  (A {counted(pair.a.runs, 'run')}, B {counted(pair.b.runs, 'run')})"
            )
        if pair.rows:
            lines.extend(_table(pair.rows))
            lines.extend(_tail_note(pair))
        else:
            lines.append("no metric to show")
        if pair.hidden:
            verb = "is" if pair.hidden == 1 else "are"
            lines.append(
                f"{counted(pair.hidden, 'metric')} {verb} 0 in every run on both sides: not shown"
            )
        for name, paths in (("A", pair.only_a), ("B", pair.only_b)):
            if paths:
                lines.append(f"only {name} measures (not compared): {', '.join(paths)}")
    for name, points in (("A", comparison.only_a), ("B", comparison.only_b)):
        if points:
            lines.append("")
            lines.append(f"only in {name} (not compared):")
            lines.extend(f"  {point.label}" for point in points)
    if comparison.conditions:
        held = comparison.held()
        lines.append("")
        lines.append("fail-if")
        for condition in comparison.conditions:
            hits = [(pair, row) for c, pair, row in held if c is condition]
            if not hits:
                lines.append(f"  ok    {condition.text}")
            for pair, row in hits:
                where = (
                    f" at {pair.b.label or pair.a.label}" if pair.b.label or pair.a.label else ""
                )
                measure = condition.format_measure(row)
                lines.append(f"  HELD  {condition.text}{where}  ({measure})")
    return "\n".join(lines) + "\n"


def run_compare_command(
    a: str,
    b: str,
    *,
    metrics: Sequence[str],
    fail_if: Sequence[str],
    stdout: TextIO,
    stderr: TextIO,
) -> int:
    """``nnemu compare A B``: print the comparison; 1 when a ``--fail-if`` condition held,
    2 for a condition or metric that cannot be used."""
    try:
        conditions = [parse_condition(text) for text in fail_if]
    except ValueError as exc:
        stderr.write(f"{exc}\n")
        return ExitCode.BAD_INPUT
    sides = load_side(a), load_side(b)
    try:
        comparison = compare(*sides, metrics=metrics, conditions=conditions)
    except ValueError as exc:
        stderr.write(f"{exc}\n")
        return ExitCode.BAD_INPUT
    stdout.write(format_comparison(comparison))
    held = comparison.held()
    if held:
        stderr.write("fail-if held: " + "; ".join(sorted({c.text for c, _, _ in held})) + "\n")
        return ExitCode.FAILED
    return ExitCode.OK
