"""The experiment file of ``nnemu sweep``: a base scenario, what varies, how many replications.

::

    scenario: ../two_apps_one_npu.yaml       # relative to this file
    set:                                     # fixed changes, applied before the varied keys
      apps.indexer.workload: {kind: poisson, rate_hz: 5}
    vary:                                    # the cross product of these
      devices.npu.scheduler: [fifo, per_app_priority]
      apps.indexer.workload.rate_hz: {range: [5, 50], steps: 10}
    replications: 20                         # seeds seed, seed+1, ... per point
    seed: 1                                  # default: the scenario's seed
    metrics: [apps.camera.latency_ms.p99, devices.npu.busy_fraction]

Every problem is found before anything runs and reported as ``file:line:col``: unknown
keys, values of the wrong shape, a varied key the scenario does not have or a value it
refuses (each value and each point is applied to the scenario with
``nnemu.overrides.apply_overrides``), and metrics the report does not have.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final, TextIO

import attrs
import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from nnemu._files import DocumentTooLarge, read_document
from nnemu._progress import CountProgress
from nnemu.errors import Problem, ScenarioError
from nnemu.overrides import OverrideError, apply_overrides, ineffective_sets
from nnemu.scenario import Scenario, load_scenario_text
from nnemu.scenario._limits import finite_number
from nnemu.scenario._yaml import _clip, compose_text, file_problem, unreadable_scalars
from nnemu.sweep._worker import Job

_KEYS: Final = ("scenario", "set", "vary", "replications", "seed", "metrics")
_MAX_REPLICATIONS: Final = 100_000
_MAX_STEPS: Final = 10_000
_MAX_VARIANTS: Final = 10_000_000
_SET_PREFIX: Final = re.compile(r"--set ([^:\s]+): ")
_EXPONENT: Final = re.compile(r"[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+")


@attrs.frozen(kw_only=True)
class Variant(Job):
    """One run of a sweep: a point of the varied keys and a replication (its seed), the job a
    worker runs, with its place in the experiment."""

    index: int
    """Position in the experiment's order (points in the order of ``vary``, replications inner)."""


@attrs.frozen(kw_only=True)
class Experiment:
    """A loaded, validated experiment file."""

    source: str
    """The experiment file as the user named it."""
    scenario_path: str
    """The base scenario's path (resolved against the experiment file's directory)."""
    scenario_text: str
    """The base scenario's YAML text."""
    scenario: Scenario
    """The base scenario, loaded."""
    fixed: tuple[tuple[str, Any], ...]
    """``set``: keys changed in every variant, with their values."""
    vary: tuple[tuple[str, tuple[Any, ...]], ...]
    """``vary``: each key with its values, in file order."""
    replications: int
    """Runs per point, with seeds ``seed``, ``seed + 1``, ..."""
    seed: int
    """The first replication's seed."""
    metrics: tuple[str, ...]
    """Report paths summarised per point."""

    @property
    def varied_keys(self) -> tuple[str, ...]:
        """The varied keys in file order."""
        return tuple(key for key, _ in self.vary)

    def points(self) -> list[dict[str, Any]]:
        """Every point of the cross product, the first key varying slowest."""
        return list(self.each_point())

    def each_point(self) -> Iterator[dict[str, Any]]:
        """The points one by one (``points`` without the list)."""
        keys = self.varied_keys
        for values in itertools.product(*(values for _, values in self.vary)):
            yield dict(zip(keys, values, strict=True))

    def point_count(self) -> int:
        """How many points the cross product has (counted, not built)."""
        return math.prod(len(values) for _, values in self.vary)

    def overrides_of(self, point: Mapping[str, Any]) -> tuple[str, ...]:
        """The ``KEY=VALUE`` assignments of ``point`` (the fixed ``set`` first)."""
        return tuple(assignment(key, value) for key, value in (*self.fixed, *point.items()))

    def ineffective_keys(self, progress: TextIO | None = None) -> list[str]:
        """A warning for each varied key that cannot change the result at any point
        (``nnemu.overrides.ineffective_sets`` on each point's scenario), with the first
        point's reason; a bar on the terminal ``progress`` counts the points."""
        reasons: dict[str, str] = {}
        effective: set[str] = set()
        bar = CountProgress(progress, label="checking the keys", total=self.point_count())
        for point in self.each_point():
            bar.advance(1)
            scenario = apply_overrides(self.scenario, self.overrides_of(point))
            sets = [assignment(key, value) for key, value in point.items()]
            warned = {}
            for warning in ineffective_sets(scenario, sets):
                _, _, key, reason = warning.split(" ", 3)
                warned[key] = reason
            for key in point:
                if key in warned:
                    reasons.setdefault(key, warned[key])
                else:
                    effective.add(key)
        bar.clear()
        return [
            f"warning: vary {key} {reasons[key].replace(': ', ' at any point: ', 1)}"
            for key in self.varied_keys
            if key not in effective and key in reasons
        ]

    def variants(self) -> list[Variant]:
        """Every variant, in the experiment's order."""
        found: list[Variant] = []
        for point in self.points():
            overrides = self.overrides_of(point)
            first = point.get("seed")  # a varied seed is its point's first replication's
            if not isinstance(first, int) or isinstance(first, bool):
                first = self.seed
            for replication in range(self.replications):
                seed = first + replication
                found.append(
                    Variant(
                        index=len(found),
                        key=variant_key(self.scenario_text, overrides, seed),
                        point=point,
                        replication=replication,
                        seed=seed,
                        overrides=overrides,
                    )
                )
        return found

    def resolved(self, version: str) -> dict[str, Any]:
        """What was run, as DIR/experiment.yaml records it."""
        return {
            "nnemu": version,
            "experiment": self.source,
            "scenario": self.scenario_path,
            "scenario_sha256": hashlib.sha256(self.scenario_text.encode()).hexdigest(),
            "seed": self.seed,
            "replications": self.replications,
            "set": dict(self.fixed),
            "vary": {key: list(values) for key, values in self.vary},
            "metrics": list(self.metrics),
        }


def assignment(key: str, value: Any) -> str:
    """The ``KEY=VALUE`` override that sets ``key`` to ``value`` (the value as JSON, which
    ``apply_overrides`` reads back as YAML)."""
    return f"{key}={json.dumps(value, sort_keys=True)}"


def variant_key(scenario_text: str, overrides: Sequence[str], seed: int) -> str:
    """The stable identity of a variant: 16 hex characters of a SHA-256."""
    text = json.dumps(
        {"overrides": list(overrides), "scenario": scenario_text, "seed": seed}, sort_keys=True
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _construct(node: Node) -> Any:
    value = yaml.constructor.SafeConstructor().construct_object(node, deep=True)
    if (
        isinstance(value, str)
        and isinstance(node, ScalarNode)
        and not node.style
        and _EXPONENT.fullmatch(value)
    ):
        return float(value)  # PyYAML (YAML 1.1) reads 1e3 as a string
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


class _Loader:
    """Collects the problems of one experiment file while reading it."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.problems: list[Problem] = []

    def problem(self, node: Node | None, key_path: str, message: str) -> None:
        mark = node.start_mark if node is not None else None
        line, column = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        self.problems.append(
            Problem(
                source=self.source, line=line, column=column, key_path=key_path, message=message
            )
        )

    def mapping(self, node: Node, key_path: str) -> list[tuple[str, Node, Node]]:
        """The (key, key node, value node) of a mapping with string keys; problems otherwise."""
        if not isinstance(node, MappingNode):
            self.problem(node, key_path, f"expected a mapping, got {_shape(node)}")
            return []
        entries: list[tuple[str, Node, Node]] = []
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = _construct(key_node) if isinstance(key_node, ScalarNode) else None
            if not isinstance(key, str) or not key:
                self.problem(key_node, key_path, f"expected a key name, got {_shape(key_node)}")
                continue
            if key in seen:
                self.problem(key_node, _join(key_path, key), "duplicate key")
                continue
            seen.add(key)
            entries.append((key, key_node, value_node))
        return entries

    def integer(self, node: Node, key_path: str, low: int, high: int) -> int | None:
        value = _construct(node) if isinstance(node, ScalarNode) else None
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            got = repr(value) if isinstance(node, ScalarNode) else _shape(node)
            self.problem(node, key_path, f"expected an integer in [{low}, {high}], got {got}")
            return None
        return value

    def values(self, node: Node, key: str) -> tuple[Any, ...] | None:
        """A varied key's values: a list of scalars or flow values, or {range: [lo, hi], steps: n}."""
        path = f"vary.{key}"
        if isinstance(node, SequenceNode):
            if not node.value:
                self.problem(node, path, "expected at least one value, got an empty list")
                return None
            values = tuple(_construct(item) for item in node.value)
            first: dict[tuple[str, object], Node] = {}
            for item, value in zip(node.value, values, strict=True):
                if value is None:
                    self.problem(item, path, "expected a value, got null")
                earlier = first.setdefault(_sameness(value), item)
                if earlier is not item:
                    mark = earlier.start_mark
                    where = f"{mark.line + 1}:{mark.column + 1}"
                    message = f"{_clip(repr(value))} is listed already, at {where}: each value once"
                    self.problem(item, path, message)
            return values
        if isinstance(node, MappingNode):
            entries = {key: (key_node, value) for key, key_node, value in self.mapping(node, path)}
            for name, (key_node, _) in entries.items():
                if name not in ("range", "steps"):
                    self.problem(
                        key_node, f"{path}.{name}", "unknown key; expected range and steps"
                    )
            if "range" not in entries or "steps" not in entries:
                self.problem(node, path, "expected {range: [low, high], steps: n}")
                return None
            range_node = entries["range"][1]
            bounds = _construct(range_node)
            if (
                not isinstance(bounds, list)
                or len(bounds) != 2
                or not all(finite_number(b) for b in bounds)
            ):
                got = _clip(repr(bounds))
                self.problem(range_node, f"{path}.range", f"expected [low, high], got {got}")
                return None
            steps = self.integer(entries["steps"][1], f"{path}.steps", 1, _MAX_STEPS)
            if steps is None:
                return None
            low, high = float(bounds[0]), float(bounds[1])
            if steps == 1:
                return (low,)
            values = tuple(round(low + (high - low) * i / (steps - 1), 12) for i in range(steps))
            if len(set(values)) < len(values):
                self.problem(
                    range_node,
                    f"{path}.range",
                    f"expected {steps} different values, got some twice: low and high are "
                    f"{'the same' if low == high else 'too close'} (one value: steps: 1)",
                )
                return None
            return values
        self.problem(
            node,
            path,
            f"expected a list of values or {{range: [low, high], steps: n}}, got {_shape(node)}",
        )
        return None


def _sameness(value: Any) -> tuple[str, object]:
    """What two varied values share when they make the same point: a number's value
    (``5`` and ``5.0``), else the value as canonical JSON."""
    if finite_number(value):
        return ("number", float(value))
    return ("value", json.dumps(value, sort_keys=True, default=str))


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _shape(node: Node) -> str:
    if isinstance(node, MappingNode):
        return "a mapping"
    if isinstance(node, SequenceNode):
        return "a list"
    return repr(_construct(node))


def load_experiment(path: str | os.PathLike[str], progress: TextIO | None = None) -> Experiment:
    """Load and check an experiment file (see the module docstring); a bar on the terminal
    ``progress`` counts the points checked.

    Raises:
        ScenarioError: every problem found, with its position in the experiment file
            (or in the base scenario, for a scenario that does not load).
    """
    source = os.fsdecode(path)
    try:
        text = read_document(path)
    except DocumentTooLarge as err:
        raise ScenarioError([file_problem(source, str(err))]) from err
    except UnicodeDecodeError as err:
        raise ScenarioError([file_problem(source, "expected UTF-8 text")]) from err
    except OSError as err:
        message = f"cannot read the file: {err.strerror or err}"
        raise ScenarioError([file_problem(source, message)]) from err
    root = compose_text(text, source)
    loader = _Loader(source)
    if root is None:
        raise ScenarioError([file_problem(source, "expected an experiment, got an empty file")])
    for scalar, reason in unreadable_scalars(root):
        found = _clip(scalar.value)
        loader.problem(scalar, "", f"expected a readable value, got {found} ({reason})")
    if loader.problems:
        raise ScenarioError(loader.problems)
    nodes: dict[str, Node] = {}
    for key, key_node, value_node in loader.mapping(root, ""):
        if key not in _KEYS:
            loader.problem(key_node, key, f"unknown key; expected one of {', '.join(_KEYS)}")
        else:
            nodes[key] = value_node
    if not isinstance(root, MappingNode):
        raise ScenarioError(loader.problems)
    for required in ("scenario", "metrics"):
        if required not in nodes:
            loader.problem(root, "", f"expected a '{required}' key")
    replications = 1
    if "replications" in nodes:
        replications = (
            loader.integer(nodes["replications"], "replications", 1, _MAX_REPLICATIONS) or 1
        )
    seed: int | None = None
    if "seed" in nodes:
        seed = loader.integer(nodes["seed"], "seed", 0, 2**63 - 1)
    vary: list[tuple[str, tuple[Any, ...], Node]] = []
    if "vary" in nodes:
        for key, _key_node, value_node in loader.mapping(nodes["vary"], "vary"):
            values = loader.values(value_node, key)
            if values is not None:
                vary.append((key, values, value_node))
    fixed: list[tuple[str, Any, Node]] = []
    if "set" in nodes:
        for key, _key_node, value_node in loader.mapping(nodes["set"], "set"):
            fixed.append((key, _construct(value_node), value_node))
    metrics: list[tuple[str, Node]] = []
    if "metrics" in nodes:
        node = nodes["metrics"]
        if not isinstance(node, SequenceNode) or not node.value:
            loader.problem(node, "metrics", "expected a non-empty list of report paths")
        else:
            for item in node.value:
                metric = _construct(item)
                if not isinstance(metric, str) or not metric:
                    loader.problem(item, "metrics", f"expected a report path, got {metric!r}")
                else:
                    metrics.append((metric, item))
    total = replications * math.prod(len(values) for _, values, _ in vary)
    if total > _MAX_VARIANTS:  # refused before the cross product is built
        loader.problem(root, "", f"expected at most {_MAX_VARIANTS:,} variants, got {total:,}")
        raise ScenarioError(list(dict.fromkeys(loader.problems)))
    scenario_path, scenario_text, scenario = _base_scenario(loader, nodes.get("scenario"), source)
    if scenario is None:
        raise ScenarioError(list(dict.fromkeys(loader.problems)))
    experiment = Experiment(
        source=source,
        scenario_path=scenario_path,
        scenario_text=scenario_text,
        scenario=scenario,
        fixed=tuple((key, value) for key, value, _ in fixed),
        vary=tuple((key, values) for key, values, _ in vary),
        replications=replications,
        seed=scenario.seed if seed is None else seed,
        metrics=tuple(metric for metric, _ in metrics),
    )
    base = _check_overrides(loader, experiment, nodes, fixed, vary, progress)
    if base is not None:
        _check_metrics(loader, base, metrics)
    if loader.problems:
        raise ScenarioError(list(dict.fromkeys(loader.problems)))
    return experiment


def _base_scenario(
    loader: _Loader, node: Node | None, source: str
) -> tuple[str, str, Scenario | None]:
    """The base scenario's path, text and loaded value (None, with a problem, if it fails)."""
    if node is None:
        return "", "", None
    name = _construct(node)
    if not isinstance(name, str) or not name:
        loader.problem(node, "scenario", f"expected the path of a scenario file, got {name!r}")
        return "", "", None
    path = name if os.path.isabs(name) else os.path.join(os.path.dirname(source), name)
    path = os.path.normpath(path)
    try:
        text = read_document(path)
    except (OSError, ValueError) as err:  # ValueError: not UTF-8, too large
        reason = getattr(err, "strerror", None) or str(err)
        loader.problem(node, "scenario", f"cannot read the scenario {path}: {reason}")
        return path, "", None
    return path, text, load_scenario_text(text, path)


def _where(key: str, entries: Sequence[tuple[str, Any, Node]]) -> tuple[str, Any, Node] | None:
    """The ``set``/``vary`` entry whose key is ``key`` or the longest prefix of it, else the
    one entry under ``key`` (``apps.nobody`` names ``apps.nobody.priority``'s unknown app)."""
    best = None
    for entry in entries:
        matches = key == entry[0] or key.startswith(entry[0] + ".")
        if matches and (best is None or len(entry[0]) > len(best[0])):
            best = entry
    if best is None:
        under = [entry for entry in entries if entry[0].startswith(key + ".")]
        if len(under) == 1:
            best = under[0]
    return best


def _check_overrides(
    loader: _Loader,
    experiment: Experiment,
    nodes: Mapping[str, Node],
    fixed: Sequence[tuple[str, Any, Node]],
    vary: Sequence[tuple[str, tuple[Any, ...], Node]],
    progress: TextIO | None = None,
) -> Scenario | None:
    """Apply ``set``, each varied value, then each point (counted by a bar on ``progress``);
    report what the scenario refuses.

    Returns the scenario with ``set`` applied (None if it does not apply).
    """
    base_overrides = experiment.overrides_of({})
    try:
        base = apply_overrides(experiment.scenario, base_overrides)
    except OverrideError as err:
        for text in err.problems:
            match = _SET_PREFIX.match(text)
            entry = _where(match.group(1), fixed) if match else None
            node = entry[2] if entry else nodes.get("set")
            loader.problem(node, f"set.{entry[0]}" if entry else "set", _strip(text))
        return None
    bad_values = False
    for key, values, node in vary:
        items = node.value if isinstance(node, SequenceNode) else [node] * len(values)
        refused: dict[tuple[int, str], tuple[Node, list[Any]]] = {}
        """(value node, problem) -> the values with that problem (a range's share one node)."""
        for value, item in zip(values, items, strict=True):
            try:
                apply_overrides(base, [assignment(key, value)])
            except OverrideError as err:
                bad_values = True
                for text in err.problems:
                    refused.setdefault((id(item), _strip(text)), (item, []))[1].append(value)
        for (_, text), (item, bad) in refused.items():
            shown = ", ".join(repr(value) for value in bad[:4])
            if len(bad) > 4:
                shown += f", ... ({len(bad)} values)"
            loader.problem(item, f"vary.{key}", f"{shown}: {text}")
    if bad_values or len(vary) < 2:
        return base
    bar = CountProgress(progress, label="checking the points", total=experiment.point_count())
    for point in experiment.each_point():
        bar.advance(1)
        try:
            apply_overrides(base, [assignment(k, v) for k, v in point.items()])
        except OverrideError as err:
            shown = json.dumps(point, sort_keys=True)
            for text in err.problems:
                loader.problem(nodes["vary"], "vary", f"the point {shown}: {_strip(text)}")
    bar.clear()
    return base


def _strip(text: str) -> str:
    """An override problem without its ``--set`` prefix (``key: message``)."""
    return text.removeprefix("--set ")


def _check_metrics(loader: _Loader, base: Scenario, metrics: Sequence[tuple[str, Node]]) -> None:
    """Check each metric against the keys of a report of ``base`` (run for 1 virtual ms)."""
    if not metrics:
        return
    from nnemu._emulator import run
    from nnemu.scenario._expect import RESULT_CODE_NAMES

    data = run(attrs.evolve(base, duration_ms=1.0, expect=())).data
    for metric, node in metrics:
        parts = metric.split(".")
        if (
            len(parts) == 4
            and parts[0] == "apps"
            and parts[2] == "errors"
            and parts[1] in data["apps"]
            and parts[3] in RESULT_CODE_NAMES
        ):
            continue
        reason = _missing(data, parts)
        if reason:
            loader.problem(node, "metrics", f"unknown metric {metric!r}: {reason}")


def _missing(data: Mapping[str, Any], parts: Sequence[str]) -> str:
    """Why ``parts`` names no number of the report ("" when it does)."""
    node: Any = data
    for depth, part in enumerate(parts):
        if not isinstance(node, Mapping) or part not in node:
            where = ".".join(parts[:depth]) or "the report"
            names = ", ".join(sorted(node)) if isinstance(node, Mapping) else ""
            if not names:
                return f"{where} is a number, not a group of metrics"
            return f"expected one of {names} after {where}, got {part!r}"
        node = node[part]
    if isinstance(node, Mapping):
        return f"it is a group; expected one of {', '.join(sorted(node))} after it"
    if node is not None and (isinstance(node, bool) or not _is_number(node)):
        return "it is not a number"
    return ""
