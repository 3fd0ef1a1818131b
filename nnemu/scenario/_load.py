"""YAML text -> validated frozen ``Scenario`` (and back with ``dump_scenario``).

The YAML is composed, not constructed, so every value keeps its position; the
nodes are then checked against the attrs classes of ``_model.py`` (their type
hints are the schema), collecting every problem before raising one
``ScenarioError``.
"""

from __future__ import annotations

import difflib
import enum
import itertools
import math
import os
import re
import types
import typing
from collections.abc import Callable, Iterable
from typing import Any, Final

import attrs
import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from nnemu.errors import EmulatorBug, Problem, ScenarioError
from nnemu.hal import (
    DeviceType,
    ExecutionPreference,
    HalVersion,
    OperationType,
    Priority,
    build_chain,
    build_preset,
)
from nnemu.scenario._expect import parse_expectation
from nnemu.scenario._model import (
    AppSpec,
    CpuSpec,
    DeadlinePolicy,
    DeviceCostSpec,
    DeviceSpec,
    ExecutionMode,
    Expectation,
    FaultKind,
    FaultSpec,
    IpcSpec,
    LayerSpec,
    ModelSpec,
    PerformanceSpec,
    PerfSpec,
    PreemptionKind,
    RetrySpec,
    Scenario,
    SchedulerKind,
    WorkloadKind,
    WorkloadSpec,
)

CPU_DEVICE_NAME: Final = "nnapi-reference"
"""The runtime's CPU device: usable in ``apps[].devices``, never a ``devices[].name``."""
PRESETS: Final = ("mobilenet_v1", "mobilenet_v2", "lstm", "while_loop", "add")
"""Model presets ``models[].preset`` may name."""
DTYPES: Final = ("float32", "quant8")
"""Values of ``models[].dtype``."""
FIRST_UID: Final = 10000
"""An app without ``uid`` gets FIRST_UID + its index in ``apps``."""
LAYERS_WITH_FILTER: Final = frozenset(
    {OperationType.CONV_2D, OperationType.DEPTHWISE_CONV_2D, OperationType.FULLY_CONNECTED}
)
"""Layer types that need (and alone accept) a ``filter`` shape."""

# YAML spellings of every enum the format uses, in the order error messages list them.
_SPELLINGS: Final[dict[type[enum.Enum], dict[str, enum.Enum]]] = {
    HalVersion: {m.value: m for m in HalVersion},
    DeviceType: {m.name.lower(): m for m in DeviceType if m is not DeviceType.UNKNOWN},
    ExecutionPreference: {m.name.lower(): m for m in ExecutionPreference},
    Priority: {m.name.lower(): m for m in Priority},
    OperationType: {m.name: m for m in OperationType},
    SchedulerKind: {m.value: m for m in SchedulerKind},
    PreemptionKind: {m.value: m for m in PreemptionKind},
    DeadlinePolicy: {m.value: m for m in DeadlinePolicy},
    FaultKind: {m.value: m for m in FaultKind},
    ExecutionMode: {m.value: m for m in ExecutionMode},
    WorkloadKind: {m.value: m for m in WorkloadKind},
}


MAX_TIME_MS: Final = 3_600_000.0
"""Longest time a scenario may give (one hour of virtual time), in every ``*_ms`` key."""
MAX_TIME_US: Final = MAX_TIME_MS * 1000
"""The same limit for ``*_us`` keys."""
MAX_RATIO: Final = 1e6
"""Largest cost ratio or factor (``exec_time``, ``power_usage``, ``factor``, ``ns_per_*``)."""
MIN_RATIO: Final = 1e-6
"""Smallest positive cost ratio (``exec_time``, ``power_usage``, ``ns_per_*``)."""
MAX_JITTER: Final = 5.0
"""Largest log-normal sigma (``jitter``): a factor of e**5 at one standard deviation."""
MIN_PERIOD_MS: Final = 0.001
"""Shortest period or burst interval (one microsecond, the trace's resolution)."""
MAX_RATE_HZ: Final = 1e6
"""Highest Poisson rate (one arrival per microsecond on average)."""
MAX_THREADS: Final = 1024
"""Most threads, compute units or binder threads of one app, device or process."""
MAX_EXECUTIONS: Final = 10_000_000
"""Most executions of one app (``executions``, ``burst_size``)."""
MAX_COUNT: Final = 10_000
"""Most compilations of one app, retries of one execution, cache files of one driver."""
MAX_INT: Final = 2**31 - 1
"""Largest tensor dimension, queue limit or memory size (Android's int32)."""
MAX_SEED: Final = 2**64
"""Largest absolute seed."""
MAX_PARAM: Final = 10_000_000
"""Largest absolute value of a preset parameter."""
MAX_OPERATIONS: Final = 10_000
"""Most operations a model may have (its layers, or what its preset parameters build)."""


def _number_text(value: float) -> str:
    """A limit as a message shows it: whole numbers in full, others in %g."""
    if isinstance(value, int):
        return str(value)
    if value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    return f"{value:g}"


@attrs.frozen
class _Bound:
    """A numeric constraint, e.g. ``> 0`` or ``in [0, 3600000]``."""

    op: str
    limit: float
    high: float | None = None

    def holds(self, value: float) -> bool:
        if self.high is not None and value > self.high:
            return False
        if self.op == ">":
            return value > self.limit
        return value >= self.limit

    def describe(self) -> str:
        low = _number_text(self.limit)
        if self.high is None:
            return f"{self.op} {low}"
        high = _number_text(self.high)
        if self.op == ">":
            return f"> {low} and <= {high}"
        return f"in [{low}, {high}]"


_TIME: Final = _Bound(">=", 0, MAX_TIME_MS)
_TIME_US: Final = _Bound(">=", 0, MAX_TIME_US)
_PERIOD: Final = _Bound(">=", MIN_PERIOD_MS, MAX_TIME_MS)
_DURATION: Final = _Bound(">", 0, MAX_TIME_MS)
_RATIO: Final = _Bound(">=", MIN_RATIO, MAX_RATIO)
_FACTOR: Final = _Bound(">=", 1, MAX_RATIO)
_JITTER: Final = _Bound(">=", 0, MAX_JITTER)
_THREADS: Final = _Bound(">=", 1, MAX_THREADS)
_EXECUTIONS: Final = _Bound(">=", 1, MAX_EXECUTIONS)
_COUNT0: Final = _Bound(">=", 0, MAX_COUNT)
_COUNT1: Final = _Bound(">=", 1, MAX_COUNT)
_INT0: Final = _Bound(">=", 0, MAX_INT)
_INT1: Final = _Bound(">=", 1, MAX_INT)
_UNIT: Final = _Bound(">=", 0, 1)

# Every number's range, declared once: the loader checks it and its message states it
# (docs/scenario-format.md, "Limits").  Keys not listed take the bound of their unit
# suffix (_SUFFIX_BOUNDS).
_BOUNDS: Final[dict[tuple[type, str], _Bound]] = {
    (Scenario, "seed"): _Bound(">=", -MAX_SEED, MAX_SEED),
    (Scenario, "duration_ms"): _DURATION,
    (PerfSpec, "exec_time"): _RATIO,
    (PerfSpec, "power_usage"): _RATIO,
    (DeviceCostSpec, "prepare_ms_per_op"): _TIME,
    (DeviceCostSpec, "jitter"): _JITTER,
    (FaultSpec, "probability"): _UNIT,
    (FaultSpec, "factor"): _FACTOR,
    (DeviceSpec, "compute_units"): _THREADS,
    (DeviceSpec, "worker_threads"): _THREADS,
    (DeviceSpec, "binder_threads"): _THREADS,
    (DeviceSpec, "memory_mb"): _Bound(">", 0, MAX_INT),
    (DeviceSpec, "queue_limit"): _INT0,
    (DeviceSpec, "cache_files"): _COUNT0,
    (CpuSpec, "ns_per_mac"): _RATIO,
    (CpuSpec, "ns_per_element"): _RATIO,
    (IpcSpec, "jitter"): _JITTER,
    (IpcSpec, "us_per_kb"): _TIME_US,
    (IpcSpec, "binder_threads"): _THREADS,
    (LayerSpec, "output"): _INT1,
    (LayerSpec, "filter"): _INT1,
    (WorkloadSpec, "executions"): _EXECUTIONS,
    (WorkloadSpec, "period_ms"): _PERIOD,
    (WorkloadSpec, "rate_hz"): _Bound(">=", 1 / 3600, MAX_RATE_HZ),  # one an hour at least
    (WorkloadSpec, "burst_size"): _EXECUTIONS,
    (WorkloadSpec, "burst_interval_ms"): _PERIOD,
    (RetrySpec, "max_attempts"): _COUNT0,
    (RetrySpec, "backoff_factor"): _Bound(">=", 1, 100),
    (AppSpec, "uid"): _Bound(">=", 0, 2**32 - 1),  # uid_t
    (AppSpec, "threads"): _THREADS,
    (AppSpec, "compilations"): _COUNT1,
}
_SUFFIX_BOUNDS: Final = {"_ms": _TIME, "_us": _TIME_US}
"""The bound of a time key not in _BOUNDS, by its unit suffix."""
_OWN_CHECK: Final = frozenset({(ModelSpec, "params")})
"""Numeric fields checked by their own code (``_Checker.params``, against MAX_PARAM)."""

# Fields that are not YAML keys.
_NOT_KEYS: Final = frozenset({(Scenario, "source")})

# Workload fields that only one kind uses: field -> kind.
_WORKLOAD_FIELDS: Final = {
    "period_ms": WorkloadKind.PERIODIC,
    "rate_hz": WorkloadKind.POISSON,
    "think_ms": WorkloadKind.CLOSED_LOOP,
    "burst_size": WorkloadKind.BURST,
    "burst_interval_ms": WorkloadKind.BURST,
    "arrivals_ms": WorkloadKind.TRACE,
}
_WORKLOAD_REQUIRED: Final = {
    WorkloadKind.PERIODIC: ("period_ms",),
    WorkloadKind.POISSON: ("rate_hz",),
    WorkloadKind.CLOSED_LOOP: (),
    WorkloadKind.BURST: ("burst_size", "burst_interval_ms"),
    WorkloadKind.TRACE: ("arrivals_ms",),
}

# Fault fields by kind: (required, allowed).
_WINDOW: Final = frozenset({"at_ms", "until_ms"})
_FAULT_FIELDS: Final = {
    FaultKind.CRASH: (("at_ms",), frozenset({"at_ms"})),
    FaultKind.BUSY: (("at_ms",), _WINDOW),
    FaultKind.OFFLINE: (("at_ms",), _WINDOW),
    FaultKind.TRANSIENT_FAILURE: (("probability",), frozenset({"probability"})),
    FaultKind.SLOWDOWN: (("at_ms",), _WINDOW | {"factor"}),
}

_MERGE_TAG: Final = "tag:yaml.org,2002:merge"
_STR_TAG: Final = "tag:yaml.org,2002:str"
_NULL_TAG: Final = "tag:yaml.org,2002:null"
_NUMBER_TAGS: Final = frozenset({"tag:yaml.org,2002:int", "tag:yaml.org,2002:float"})
# PyYAML (YAML 1.1) reads 1e3 as a string; accept it as the number users mean.
_EXPONENT: Final = re.compile(r"[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+")
_NAME: Final = re.compile(r"[^\s.]+")
# A double-quoted "\ud800" gives a lone surrogate, which no file or terminal can encode.
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
QUOTE_LIMIT: Final = 60
"""Most characters of a value a problem message quotes (the rest becomes ``…``)."""


def _clip(text: str) -> str:
    """``text`` cut to QUOTE_LIMIT characters for a message."""
    return text if len(text) <= QUOTE_LIMIT else text[:QUOTE_LIMIT] + "…"


class _Bad:
    """Marker of a value that failed validation (its problem is already recorded)."""


_BAD: Final = _Bad()


@attrs.frozen
class _Field:
    """One YAML key of a class."""

    attr: str
    key: str
    hint: Any
    required: bool
    bound: _Bound | None


def _is_number(hint: Any) -> bool:
    """Whether a field's type hint holds numbers (int, float, optional or in a tuple)."""
    if hint in (int, float):
        return True
    return any(_is_number(arg) for arg in typing.get_args(hint))


def _fields_of(cls: type) -> dict[str, _Field]:
    """The YAML keys of an attrs class, from its type hints."""
    hints = typing.get_type_hints(cls)
    result: dict[str, _Field] = {}
    for field in attrs.fields(cls):
        if (cls, field.name) in _NOT_KEYS:
            continue
        key = field.name.rstrip("_")
        bound = _BOUNDS.get((cls, field.name))
        if bound is None:
            bound = _SUFFIX_BOUNDS.get(key[-3:])
        if bound is None and _is_number(hints[field.name]) and (cls, field.name) not in _OWN_CHECK:
            msg = f"scenario schema: {cls.__name__}.{field.name} has no declared range"
            raise EmulatorBug(msg)
        required = field.default is attrs.NOTHING and (cls, field.name) != (AppSpec, "uid")
        result[key] = _Field(field.name, key, hints[field.name], required, bound)
    return result


_SCHEMA: Final[dict[type, dict[str, _Field]]] = {
    cls: _fields_of(cls)
    for cls in (
        Scenario,
        DeviceSpec,
        PerformanceSpec,
        PerfSpec,
        DeviceCostSpec,
        FaultSpec,
        CpuSpec,
        IpcSpec,
        ModelSpec,
        LayerSpec,
        AppSpec,
        WorkloadSpec,
        RetrySpec,
    )
}


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _quote_list(names: Iterable[str]) -> str:
    return ", ".join(_clip(name.encode("utf-8", "backslashreplace").decode()) for name in names)


@attrs.define
class _Mapped:
    """A YAML mapping being checked against a class: what was given and what converted."""

    node: MappingNode
    path: str
    index: int | None
    nodes: dict[str, Node] = attrs.Factory(dict)
    """attr -> value node, for every key given."""
    values: dict[str, object] = attrs.Factory(dict)
    """attr -> converted value, for every key given and valid."""

    def given(self, attr: str) -> bool:
        return attr in self.nodes

    def valid(self, attr: str) -> bool:
        return attr in self.values

    def has(self, attr: str) -> bool:
        """Whether ``attr`` is given and not null (an invalid value counts as given)."""
        return attr in self.nodes and self.values.get(attr, _BAD) is not None

    def at(self, attr: str) -> tuple[Node, str]:
        """Node and key path to report a problem with ``attr`` (the mapping when it is absent)."""
        if attr in self.nodes:
            return self.nodes[attr], _join(self.path, attr.rstrip("_"))
        return self.node, self.path


class _Checker:
    """Walks the composed YAML, converting nodes and collecting problems."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.problems: list[Problem] = []
        self._constructor = yaml.constructor.SafeConstructor()
        self.device_names: set[str] = set()
        self.model_names: list[str] = []
        self.app_names: set[str] = set()
        self.has_duration = False
        self._hooks: dict[type, Callable[[_Mapped], None]] = {
            Scenario: self._check_scenario,
            DeviceSpec: self._check_device,
            FaultSpec: self._check_fault,
            ModelSpec: self._check_model,
            LayerSpec: self._check_layer,
            AppSpec: self._check_app,
            WorkloadSpec: self._check_workload,
        }

    # -- reporting ------------------------------------------------------------------

    def problem(self, node: Node, path: str, message: str) -> None:
        mark = node.start_mark
        self.problems.append(
            Problem(
                source=self.source,
                line=mark.line + 1,
                column=mark.column + 1,
                key_path=path,
                message=message,
            )
        )

    def expected(self, node: Node, path: str, what: str) -> _Bad:
        """Report ``expected <what>, got <node>`` and return the failure marker."""
        self.problem(node, path, f"expected {what}, got {self.found(node)}")
        return _BAD

    def found(self, node: Node) -> str:
        """How an error message shows a value."""
        if isinstance(node, MappingNode):
            return "a mapping" if node.value else "an empty mapping"
        if isinstance(node, SequenceNode):
            return "a list" if node.value else "an empty list"
        if node.tag == _NULL_TAG:
            return "null"
        plain = node.tag != _STR_TAG or (
            isinstance(node, ScalarNode) and node.style is None and _EXPONENT.fullmatch(node.value)
        )
        text = _clip(str(node.value)) if plain else repr(_clip(node.value))
        if not node.tag.startswith("tag:yaml.org,2002:"):
            text += f" (tagged {_clip(node.tag)})"
        return text

    # -- document -------------------------------------------------------------------

    def document(self, root: Node | None) -> Scenario | None:
        if root is None:
            self.problems.append(
                Problem(
                    source=self.source,
                    line=1,
                    column=1,
                    key_path="",
                    message="expected a mapping with the scenario, got an empty document",
                )
            )
            return None
        if not isinstance(root, MappingNode):
            self.expected(root, "", "a mapping with the scenario")
            return None
        self._collect_names(root)
        value = self.mapping(root, "", Scenario, None)
        return None if isinstance(value, _Bad) else typing.cast(Scenario, value)

    def _collect_names(self, root: MappingNode) -> None:
        """Gather device, model and app names first, so references can be checked anywhere."""
        top = {key: value for key, _, value in self.items(root, "", report=False)}
        duration = top.get("duration_ms")
        self.has_duration = duration is not None and duration.tag != _NULL_TAG
        for key, kind in (("devices", "device"), ("models", "model"), ("apps", "app")):
            seq = top.get(key)
            if not isinstance(seq, SequenceNode):
                continue
            first: dict[str, Node] = {}
            for index, item in enumerate(seq.value):
                if not isinstance(item, MappingNode):
                    continue
                fields = {k: v for k, _, v in self.items(item, "", report=False)}
                name_node = fields.get("name")
                if not isinstance(name_node, ScalarNode) or name_node.tag == _NULL_TAG:
                    continue
                name = str(name_node.value)
                if name in first:
                    line = first[name].start_mark.line + 1
                    self.problem(
                        name_node,
                        f"{key}[{index}].name",
                        f"expected a unique {kind} name, got {_clip(name)!r} again (first at line {line})",
                    )
                else:
                    first[name] = name_node
            names = list(first)
            if key == "devices":
                self.device_names = set(names)
            elif key == "models":
                self.model_names = names
            else:
                self.app_names = set(names)

    # -- mappings -------------------------------------------------------------------

    def items(
        self,
        node: MappingNode,
        path: str,
        *,
        report: bool = True,
        _active: frozenset[int] = frozenset(),
    ) -> list[tuple[str, Node, Node]]:
        """(key, key node, value node) of a mapping.

        Merge keys (``<<``) are resolved; of duplicate keys the first is kept.
        """
        active = _active | {id(node)}
        own: dict[str, tuple[Node, Node]] = {}
        merged: dict[str, tuple[Node, Node]] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                sources = value_node.value if isinstance(value_node, SequenceNode) else [value_node]
                for source in sources:
                    if not isinstance(source, MappingNode):
                        if report:
                            self.expected(source, path, "a mapping to merge with '<<'")
                        continue
                    if id(source) in active:
                        if report:
                            self.problem(
                                source,
                                path,
                                "expected a mapping to merge with '<<', got the mapping itself",
                            )
                        continue
                    for key, k, v in self.items(source, path, report=report, _active=active):
                        merged.setdefault(key, (k, v))
                continue
            if not isinstance(key_node, ScalarNode):
                if report:
                    self.expected(key_node, path, "a key name")
                continue
            key = str(key_node.value)
            if key in own:
                if report:
                    line = own[key][0].start_mark.line + 1
                    self.problem(
                        key_node,
                        _join(path, key),
                        f"expected each key once, got {_clip(key)!r} again (first at line {line})",
                    )
                continue
            own[key] = (key_node, value_node)
        result = [(key, k, v) for key, (k, v) in own.items()]
        result.extend((key, k, v) for key, (k, v) in merged.items() if key not in own)
        return result

    def mapping(self, node: Node, path: str, cls: type, index: int | None) -> object:
        """Convert a mapping node to an instance of the attrs class ``cls``."""
        if not isinstance(node, MappingNode):
            return self.expected(node, path, "a mapping")
        schema = _SCHEMA[cls]
        mapped = _Mapped(node, path, index)
        bad = False
        for key, key_node, value_node in self.items(node, path):
            field = schema.get(key)
            key_path = _join(path, key)
            if field is None:
                message = f"unknown key {_clip(key)!r}"
                close = difflib.get_close_matches(key, list(schema), n=1)
                if close:
                    message += f"; did you mean {_clip(close[0])!r}?"
                else:
                    message += f"; expected one of {_quote_list(schema)}"
                self.problem(key_node, key_path, message)
                bad = True
                continue
            mapped.nodes[field.attr] = value_node
            value = self.value(value_node, key_path, field.hint, field.bound, cls, field.attr)
            if isinstance(value, _Bad):
                bad = True
            else:
                mapped.values[field.attr] = value
        for field in schema.values():
            if field.required and not mapped.given(field.attr):
                self.problem(node, path, f"missing required key {field.key!r}")
                bad = True
        problems_before = len(self.problems)
        hook = self._hooks.get(cls)
        if hook is not None:
            hook(mapped)
        if bad or len(self.problems) != problems_before:
            return _BAD
        return cls(**mapped.values)

    # -- values ---------------------------------------------------------------------

    def value(
        self, node: Node, path: str, hint: Any, bound: _Bound | None, owner: type, attr: str
    ) -> object:
        """Convert ``node`` to the type ``hint`` (a field of ``owner``)."""
        if (owner, attr) == (ModelSpec, "params"):
            return self.params(node, path)
        origin = typing.get_origin(hint)
        args = typing.get_args(hint)
        if origin in (types.UnionType, typing.Union):
            if type(None) in args and node.tag == _NULL_TAG and isinstance(node, ScalarNode):
                return None
            (inner,) = (arg for arg in args if arg is not type(None))
            return self.value(node, path, inner, bound, owner, attr)
        if origin is tuple:
            if not isinstance(node, SequenceNode):
                return self.expected(node, path, "a list")
            item_hint = args[0]
            items = [
                self.mapping(item, f"{path}[{i}]", item_hint, i)
                if item_hint in _SCHEMA
                else self.value(item, f"{path}[{i}]", item_hint, bound, owner, attr)
                for i, item in enumerate(node.value)
            ]
            if any(isinstance(item, _Bad) for item in items):
                return _BAD
            return tuple(items)
        if hint is bool:
            scalar = self.scalar(node, path)
            if isinstance(scalar, _Bad):
                return scalar
            return (
                scalar if isinstance(scalar, bool) else self.expected(node, path, "true or false")
            )
        if hint is int or hint is float:
            return self.number(node, path, integer=hint is int, bound=bound)
        if hint is str:
            return self.string(node, path)
        if hint is Expectation:
            return self.expectation(node, path)
        if isinstance(hint, type) and issubclass(hint, enum.Enum):
            return self.enum(node, path, hint)
        if isinstance(hint, type) and attrs.has(hint):
            return self.mapping(node, path, hint, None)
        msg = f"scenario schema has an unsupported type {hint!r} at {path}"
        raise EmulatorBug(msg)

    def scalar(self, node: Node, path: str) -> object:
        """The Python value of a scalar node (YAML 1.1 rules, as yaml.safe_load)."""
        if not isinstance(node, ScalarNode):
            return self.expected(node, path, "a single value")
        try:
            return self._constructor.construct_object(node)
        except Exception as err:  # PyYAML's constructors raise KeyError, AttributeError, ...
            # (``!!bool maybe`` -> KeyError, ``!!timestamp x`` -> AttributeError)
            reason = getattr(err, "problem", None) or str(err)
            if isinstance(err, KeyError | AttributeError) or not reason:
                reason = f"not a valid {node.tag.rsplit(':', 1)[-1]}"
            reason = _clip(reason)
            self.problem(
                node, path, f"expected a readable value, got {self.found(node)} ({reason})"
            )
            return _BAD

    def number(self, node: Node, path: str, *, integer: bool, bound: _Bound | None) -> object:
        what = "an integer" if integer else "a number"
        if bound is not None:
            what += f" {bound.describe()}"
        if (
            isinstance(node, ScalarNode)
            and node.tag == _STR_TAG
            and node.style is None
            and not integer
            and _EXPONENT.fullmatch(node.value)
        ):
            value: object = float(node.value)
        else:
            value = self.scalar(node, path)
            if isinstance(value, _Bad):
                return value
        if isinstance(value, bool) or not isinstance(value, int | float):
            return self.expected(node, path, what)
        if integer and not isinstance(value, int):
            return self.expected(node, path, what)
        if not math.isfinite(value) or (bound is not None and not bound.holds(value)):
            return self.expected(node, path, what)
        return value if integer else float(value)

    def string(self, node: Node, path: str) -> object:
        # Plain numbers (version_string: 1.0) are taken as written.
        if isinstance(node, ScalarNode) and (
            node.tag == _STR_TAG or (node.tag in _NUMBER_TAGS and node.style is None)
        ):
            text = str(node.value)
            bad = _SURROGATE.search(text)
            if bad is not None:
                return self.expected(
                    node, path, f"text without lone surrogates (U+{ord(bad.group()):04X})"
                )
            return text
        return self.expected(node, path, "a string")

    def enum(self, node: Node, path: str, cls: type[enum.Enum]) -> object:
        spellings = _SPELLINGS[cls]
        if isinstance(node, ScalarNode):
            text = str(node.value)
            if node.tag == _STR_TAG and text in spellings:
                return spellings[text]
            if cls is HalVersion and node.tag == "tag:yaml.org,2002:float" and node.style is None:
                for spelling, member in spellings.items():
                    try:
                        if float(text) == float(spelling):
                            return member
                    except ValueError:
                        break
        return self.expected(node, path, f"one of {_quote_list(spellings)}")

    def params(self, node: Node, path: str) -> object:
        if not isinstance(node, MappingNode):
            return self.expected(node, path, "a mapping of parameter names to numbers")
        result: dict[str, int | float] = {}
        bad = False
        for key, _, value_node in self.items(node, path):
            value = self.scalar(value_node, _join(path, key))
            if isinstance(value, _Bad):
                bad = True
            elif (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or abs(value) > MAX_PARAM
            ):
                self.expected(
                    value_node,
                    _join(path, key),
                    f"a number in [-{_number_text(MAX_PARAM)}, {_number_text(MAX_PARAM)}]",
                )
                bad = True
            else:
                result[key] = value
        return _BAD if bad else tuple(sorted(result.items()))

    def expectation(self, node: Node, path: str) -> object:
        if not (isinstance(node, ScalarNode) and node.tag == _STR_TAG):
            return self.expected(node, path, "a string like 'apps.camera.latency_ms.p95 <= 30'")
        try:
            expectation = parse_expectation(str(node.value))
        except ValueError as err:
            self.problem(node, path, str(err))
            return _BAD
        kind, name = expectation.path[0], expectation.path[1]
        if kind == "apps" and name not in self.app_names:
            known = _quote_list(sorted(self.app_names)) or "none defined"
            self.problem(node, path, f"expected the name of an app ({known}), got {_clip(name)!r}")
            return _BAD
        if kind == "devices" and name not in self.device_names | {CPU_DEVICE_NAME}:
            known = _quote_list([*sorted(self.device_names - {CPU_DEVICE_NAME}), CPU_DEVICE_NAME])
            self.problem(
                node, path, f"expected the name of a device ({known}), got {_clip(name)!r}"
            )
            return _BAD
        return expectation

    # -- cross-field checks ---------------------------------------------------------

    def _name(self, m: _Mapped, what: str) -> None:
        """App and device names appear in report paths, so they cannot contain dots or spaces."""
        name = m.values.get("name")
        if isinstance(name, str) and not _NAME.fullmatch(name):
            node, path = m.at("name")
            self.problem(
                node, path, f"expected {what} without dots or whitespace, got {_clip(name)!r}"
            )

    def _check_scenario(self, m: _Mapped) -> None:
        if m.valid("name") and not m.values["name"]:
            self.expected(*m.at("name"), "a non-empty name")

    def _check_device(self, m: _Mapped) -> None:
        self._name(m, "a device name")
        if m.values.get("name") == CPU_DEVICE_NAME:
            node, path = m.at("name")
            self.problem(
                node,
                path,
                f"expected a device name other than {CPU_DEVICE_NAME!r} "
                f"(the runtime's CPU device), got {CPU_DEVICE_NAME!r}",
            )
        files = m.values.get("cache_files")
        if isinstance(files, tuple) and len(files) != 2:
            node, path = m.at("cache_files")
            self.problem(
                node,
                path,
                f"expected two counts [model files, data files], got {len(files)}",
            )

    def _check_fault(self, m: _Mapped) -> None:
        kind = m.values.get("kind")
        if not isinstance(kind, FaultKind):
            return
        required, allowed = _FAULT_FIELDS[kind]
        for attr in required:
            if not m.has(attr):
                self.problem(
                    m.node,
                    m.path,
                    f"missing required key {attr!r} (needed by a {kind.value} fault)",
                )
        for attr in ("at_ms", "until_ms", "probability", "factor"):
            if m.has(attr) and attr not in allowed:
                users = ", ".join(k.value for k, (_, ok) in _FAULT_FIELDS.items() if attr in ok)
                self.expected_only(m, attr, f"with kind {users}", f"kind {kind.value}")
        at, until = m.values.get("at_ms"), m.values.get("until_ms")
        if isinstance(at, float) and isinstance(until, float) and until <= at:
            node, path = m.at("until_ms")
            self.problem(node, path, f"expected a time after at_ms ({at:g}), got {until:g}")

    def expected_only(self, m: _Mapped, attr: str, condition: str, found: str) -> None:
        node, path = m.at(attr)
        self.problem(node, path, f"expected only {condition}, got {found}")

    def _check_model(self, m: _Mapped) -> None:
        has_preset = m.has("preset")
        has_layers = m.has("layers")
        if has_preset == has_layers:
            found = "both" if has_preset else "neither"
            self.problem(
                m.node, m.path, f"expected exactly one of 'preset' or 'layers', got {found}"
            )
        preset = m.values.get("preset")
        if isinstance(preset, str) and preset not in PRESETS:
            self.expected(*m.at("preset"), f"one of {_quote_list(PRESETS)}")
        if m.values.get("layers") == ():
            self.expected(*m.at("layers"), "a non-empty list of layers")
        if m.has("params") and not has_preset:
            self.expected_only(
                m, "params", "with 'preset'", "'layers'" if has_layers else "no preset"
            )
        dtype = m.values.get("dtype")
        if isinstance(dtype, str) and dtype not in DTYPES:
            self.expected(*m.at("dtype"), f"one of {_quote_list(DTYPES)}")
        if m.valid("name") and not m.values["name"]:
            self.expected(*m.at("name"), "a non-empty name")
        layers = m.values.get("layers")
        if isinstance(layers, tuple) and len(layers) > MAX_OPERATIONS:
            self.expected(*m.at("layers"), f"at most {MAX_OPERATIONS} layers")
        elif not self.problems_in(m):
            self._build_model(m)

    def problems_in(self, m: _Mapped) -> bool:
        """Whether a problem was recorded inside the mapping of ``m``."""
        return any(
            p.key_path == m.path or p.key_path.startswith(m.path + ".") for p in self.problems
        )

    def _build_model(self, m: _Mapped) -> None:
        """Build the model a valid spec describes, so what the HAL refuses is a problem here."""
        preset, dtype = m.values.get("preset"), m.values.get("dtype", "float32")
        params = dict(typing.cast(tuple[tuple[str, float], ...], m.values.get("params", ())))
        if preset == "lstm" and params.get("steps", 8) * params.get("layers", 2) > MAX_OPERATIONS:
            # The only preset whose size grows with its parameters: steps x layers cells.
            node, path = m.at("params")
            self.problem(
                node, path, f"expected steps x layers <= {MAX_OPERATIONS} (LSTM cells), got more"
            )
            return
        try:
            if isinstance(preset, str):
                build_preset(preset, str(dtype), params)
            else:
                layers = typing.cast(tuple[LayerSpec, ...], m.values.get("layers", ()))
                build_chain([(x.type, x.output, x.filter) for x in layers], str(dtype))
        except ValueError as err:
            node, path = m.at("params" if isinstance(preset, str) else "layers")
            self.problem(node, path, f"the model cannot be built: {_clip(str(err))}")
        except (ArithmeticError, LookupError, TypeError) as err:
            # The HAL's builders assume shapes of the rank each layer type takes.
            node, path = m.at("params" if isinstance(preset, str) else "layers")
            self.problem(
                node,
                path,
                f"the model cannot be built from these shapes ({type(err).__name__}: "
                f"{_clip(str(err))}); see docs/scenario-format.md, layer",
            )

    def _check_layer(self, m: _Mapped) -> None:
        kind = m.values.get("type")
        if not isinstance(kind, OperationType):
            return
        if kind in LAYERS_WITH_FILTER and not m.has("filter"):
            self.problem(m.node, m.path, f"missing required key 'filter' (needed by {kind.name})")
        if kind not in LAYERS_WITH_FILTER and m.has("filter"):
            names = ", ".join(sorted(t.name for t in LAYERS_WITH_FILTER))
            self.expected_only(m, "filter", f"with type {names}", f"type {kind.name}")

    def _check_app(self, m: _Mapped) -> None:
        self._name(m, "an app name")
        if not m.given("uid"):
            if m.index is None:
                raise EmulatorBug("an app was checked outside the apps list")
            m.values["uid"] = FIRST_UID + m.index
        model = m.values.get("model")
        if isinstance(model, str) and model not in self.model_names:
            known = _quote_list(self.model_names)
            if known:
                self.expected(*m.at("model"), f"the name of a model ({known})")
            else:
                self.expected(*m.at("model"), "the name of a model (none are defined)")
        devices_node = m.nodes.get("devices")
        devices = m.values.get("devices")
        if isinstance(devices, tuple) and isinstance(devices_node, SequenceNode):
            if not devices:
                self.expected(
                    devices_node, _join(m.path, "devices"), "a non-empty list of device names"
                )
            seen: set[str] = set()
            known_devices = [*sorted(self.device_names - {CPU_DEVICE_NAME}), CPU_DEVICE_NAME]
            for i, (name, node) in enumerate(zip(devices, devices_node.value, strict=True)):
                path = f"{m.path}.devices[{i}]"
                if name not in known_devices:
                    self.expected(
                        node, path, f"the name of a device ({_quote_list(known_devices)})"
                    )
                elif name in seen:
                    self.problem(
                        node, path, f"expected each device once, got {_clip(name)!r} again"
                    )
                seen.add(name)
        for attr in ("compile_timeout_ms", "execution_timeout_ms"):
            if not m.has(attr) or (m.given("devices") and not m.valid("devices")):
                continue
            count = len(devices) if isinstance(devices, tuple) else None
            if count != 1:
                found = "no 'devices' (all devices)" if count is None else f"{count} devices"
                self.expected_only(
                    m,
                    attr,
                    "when 'devices' lists exactly one device "
                    "(setTimeout needs a single-device compilation)",
                    found,
                )
        if not m.given("workload") and not self.has_duration:
            self.problem(
                m.node,
                m.path,
                "expected 'workload.executions' or a scenario 'duration_ms', "
                "got neither (the app would never finish)",
            )

    def _check_workload(self, m: _Mapped) -> None:
        if m.given("kind") and not m.valid("kind"):
            return
        kind = m.values.get("kind", WorkloadKind.CLOSED_LOOP)
        if not isinstance(kind, WorkloadKind):
            return
        for attr in _WORKLOAD_REQUIRED[kind]:
            if not m.has(attr):
                self.problem(
                    m.node,
                    m.path,
                    f"missing required key {attr!r} (needed by a {kind.value} workload)",
                )
        for attr, owner in _WORKLOAD_FIELDS.items():
            if m.has(attr) and owner is not kind:
                self.expected_only(m, attr, f"with kind {owner.value}", f"kind {kind.value}")
        if kind is WorkloadKind.TRACE:
            arrivals = m.values.get("arrivals_ms")
            if isinstance(arrivals, tuple) and any(
                later < earlier for earlier, later in itertools.pairwise(arrivals)
            ):
                self.problem(
                    m.node,
                    m.path + ".arrivals_ms",
                    "expected non-decreasing arrival times, got a time earlier than the one before",
                )
            return  # a trace workload ends after its last arrival
        if not m.has("executions") and not self.has_duration:
            self.problem(
                m.node,
                m.path,
                "expected 'executions' or a scenario 'duration_ms', "
                "got neither (the app would never finish)",
            )
        executions = m.values.get("executions")
        if isinstance(executions, int) and not self.has_duration:
            end = _last_arrival_ms(kind, executions, m.values)
            if end is not None and end > MAX_TIME_MS:
                node, path = m.at("executions")
                self.problem(
                    node,
                    path,
                    f"expected arrivals within {_number_text(MAX_TIME_MS)} ms (one hour of "
                    f"virtual time; or a scenario 'duration_ms'), got {executions} executions "
                    f"arriving until {end:.0f} ms",
                )


def _last_arrival_ms(
    kind: WorkloadKind, executions: int, values: dict[str, object]
) -> float | None:
    """When the last of ``executions`` arrivals comes (the mean for Poisson, the least for a
    closed loop), from the workload's valid values; None when they do not say."""
    start = values.get("start_ms", 0.0)
    if not isinstance(start, float | int):
        return None
    if kind is WorkloadKind.PERIODIC:
        gap, count = values.get("period_ms"), executions - 1
    elif kind is WorkloadKind.BURST:
        size = values.get("burst_size")
        if not isinstance(size, int):
            return None
        gap, count = values.get("burst_interval_ms"), -(-executions // size) - 1
    elif kind is WorkloadKind.POISSON:
        rate = values.get("rate_hz")
        gap, count = (1000 / rate if isinstance(rate, float) else None), executions
    else:
        gap, count = values.get("think_ms", 0.0), executions - 1
    if not isinstance(gap, float | int):
        return None
    return start + gap * count


ALIAS_EXPANSION_LIMIT: Final = 10
"""How many times its own size a document may grow when its aliases are expanded."""
_MIN_EXPANSION: Final = 10_000
"""Nodes an expanded document may always have, however small it is."""


class _AliasBomb(Exception):
    """Expanding the aliases of a document would exceed the limit (at ``mark``)."""

    def __init__(self, mark: yaml.Mark, expanded: int, distinct: int) -> None:
        self.mark = mark
        self.expanded = expanded
        self.distinct = distinct
        super().__init__()


class _Loader(yaml.SafeLoader):
    """SafeLoader's composer, refusing alias bombs ("billion laughs") in linear time.

    The checker walks the composed graph as a tree, visiting an aliased node once per
    alias (merge keys included), so its work is the size of the document with every
    alias expanded.  Each node's expanded size is known when it is composed; an alias
    adds the size of the node it names, and once the total passes
    ALIAS_EXPANSION_LIMIT times the distinct nodes (at least _MIN_EXPANSION) the
    document is refused at that alias.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.expanded = 0
        """Nodes composed so far, with every alias counted at its expanded size."""
        self.distinct = 0
        """Nodes composed so far, each once."""
        self._sizes: dict[int, int] = {}

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        if self.check_event(yaml.AliasEvent):
            mark: yaml.Mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
            node = super().compose_node(parent, index)
            # An alias to an enclosing node (a cycle) has no size yet: count it once.
            self.expanded += self._sizes.get(id(node), 1)
            if self.expanded > max(_MIN_EXPANSION, ALIAS_EXPANSION_LIMIT * self.distinct):
                raise _AliasBomb(mark, self.expanded, self.distinct)
            return node
        before = self.expanded
        node = super().compose_node(parent, index)
        self.expanded += 1
        self.distinct += 1
        if node is not None:
            self._sizes[id(node)] = self.expanded - before
        return node


def _compose(text: str) -> Node | None:
    """``yaml.compose(text, Loader=yaml.SafeLoader)``, refusing alias bombs."""
    loader = _Loader(text)
    try:
        return loader.get_single_node()
    finally:
        loader.dispose()


def load_scenario_text(text: str, source: str = "<string>") -> Scenario:
    """Load and validate a scenario from YAML text.

    Args:
        text: the YAML document.
        source: file name used in problem positions and stored in ``Scenario.source``.

    Raises:
        ScenarioError: every problem found, sorted by position.
    """
    checker = _Checker(source)
    try:
        root = _compose(text)
    except _AliasBomb as err:
        problem = Problem(
            source=source,
            line=err.mark.line + 1,
            column=err.mark.column + 1,
            key_path="",
            message=(
                f"expected aliases that grow the document at most {ALIAS_EXPANSION_LIMIT}-fold, "
                f"got {err.expanded} nodes from {err.distinct} at this alias (an alias bomb?)"
            ),
        )
        raise ScenarioError([problem]) from None
    except yaml.MarkedYAMLError as err:
        raise ScenarioError([_syntax_problem(source, err)]) from err
    except yaml.reader.ReaderError as err:
        line = text.count("\n", 0, err.position) + 1
        column = err.position - (text.rfind("\n", 0, err.position) + 1) + 1
        problem = Problem(
            source=source,
            line=line,
            column=column,
            key_path="",
            message=f"invalid YAML: unacceptable character {_character(err.character)}",
        )
        raise ScenarioError([problem]) from err
    except yaml.YAMLError as err:
        problem = Problem(
            source=source, line=1, column=1, key_path="", message=f"invalid YAML: {err}"
        )
        raise ScenarioError([problem]) from err
    except RecursionError as err:
        problem = Problem(
            source=source, line=1, column=1, key_path="", message="invalid YAML: nested too deeply"
        )
        raise ScenarioError([problem]) from err
    except (ValueError, OverflowError) as err:  # a "\U" escape beyond U+10FFFF
        problem = Problem(
            source=source,
            line=1,
            column=1,
            key_path="",
            message=f"invalid YAML: a character escape beyond U+10FFFF ({_clip(str(err))})",
        )
        raise ScenarioError([problem]) from err
    scenario = checker.document(root)
    if checker.problems or scenario is None:
        raise ScenarioError(list(dict.fromkeys(checker.problems)))
    return attrs.evolve(scenario, source=source)


def _character(character: object) -> str:
    """How a ReaderError's character is shown (PyYAML gives a code point or a byte)."""
    if isinstance(character, int):
        return f"U+{character:04X}"
    return repr(character)


def _syntax_problem(source: str, err: yaml.MarkedYAMLError) -> Problem:
    mark = err.problem_mark or err.context_mark
    line, column = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
    message = f"invalid YAML: {err.problem or 'syntax error'}"
    if err.context:
        message += f" ({err.context}"
        if err.context_mark is not None and err.context_mark is not mark:
            message += f" at line {err.context_mark.line + 1}, column {err.context_mark.column + 1}"
        message += ")"
    return Problem(source=source, line=line, column=column, key_path="", message=message)


def load_scenario(path: str | os.PathLike[str]) -> Scenario:
    """Load and validate a scenario file; ``Scenario.source`` is ``path`` as given.

    Raises:
        ScenarioError: the file cannot be read, or every problem found in it.
    """
    source = os.fsdecode(path)
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except UnicodeDecodeError as err:
        problem = Problem(
            source=source,
            line=1,
            column=1,
            key_path="",
            message=(
                f"expected UTF-8 text, got byte {err.object[err.start]:#04x} at offset {err.start}"
            ),
        )
        raise ScenarioError([problem]) from err
    except OSError as err:
        problem = Problem(
            source=source,
            line=1,
            column=1,
            key_path="",
            message=f"cannot read the file: {err.strerror or err}",
        )
        raise ScenarioError([problem]) from err
    return load_scenario_text(text, source)


# -- dumping ----------------------------------------------------------------------------


class _Flow(list[object]):
    """A list dumped in flow style (``[1, 224, 224, 3]``)."""


class _Dumper(yaml.SafeDumper):
    """SafeDumper that writes ``_Flow`` lists inline."""


def _represent_flow(dumper: yaml.SafeDumper, data: _Flow) -> yaml.Node:
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=True)


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
    # PyYAML's plain and single-quoted styles do not round-trip line separators such
    # as U+0085 (NEL); the double-quoted style escapes every non-printable character.
    style = None if data.isprintable() else '"'
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(_Flow, _represent_flow)
_Dumper.add_representer(str, _represent_str)

_FLOW_FIELDS: Final = frozenset(
    {
        (LayerSpec, "output"),
        (LayerSpec, "filter"),
        (AppSpec, "devices"),
        (DeviceSpec, "supported_operations"),
    }
)


def dump_scenario(s: Scenario) -> str:
    """YAML text of a scenario: ``load_scenario_text(dump_scenario(s)) == s`` but for ``source``.

    Keys whose value is the default are left out, except ``uid``.
    """
    data = _plain(s)
    return yaml.dump(
        data,
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=100,
    )


def _plain(obj: object) -> object:
    """The YAML data of a model value."""
    if isinstance(obj, Expectation):
        return obj.text
    if isinstance(obj, enum.Enum):
        for spelling, member in _SPELLINGS[type(obj)].items():
            if member is obj:
                return spelling
        msg = f"{obj!r} has no YAML spelling"
        raise ValueError(msg)
    if isinstance(obj, tuple):
        return [_plain(item) for item in obj]
    if attrs.has(type(obj)):
        cls: type[Any] = type(obj)
        result: dict[str, object] = {}
        for field in attrs.fields(cls):
            if (cls, field.name) in _NOT_KEYS:
                continue
            value = getattr(obj, field.name)
            keep = field.default is attrs.NOTHING or (cls, field.name) == (AppSpec, "uid")
            if not keep and value == field.default:
                continue
            if (cls, field.name) == (ModelSpec, "params"):
                result["params"] = dict(value)
            elif (cls, field.name) in _FLOW_FIELDS and value is not None:
                result[field.name] = _Flow(_plain(item) for item in value)
            else:
                result[field.name.rstrip("_")] = _plain(value)
        return result
    return obj
