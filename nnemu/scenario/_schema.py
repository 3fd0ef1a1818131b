"""The scenario schema: the YAML keys of each attrs class of ``_model.py``, read from
its type hints and field metadata (each number's ``Bound``, declared in ``_model.py``).
"""

from __future__ import annotations

import enum
import typing
from typing import Any, Final

import attrs
from yaml.nodes import MappingNode, Node

from nnemu.errors import EmulatorBug
from nnemu.hal import (
    DeviceType,
    ExecutionPreference,
    HalVersion,
    OperationType,
    Priority,
)
from nnemu.scenario._limits import (
    Bound,
    bound_of,
)
from nnemu.scenario._model import (
    AppSpec,
    CpuSpec,
    DeadlinePolicy,
    DeviceCostSpec,
    DeviceSpec,
    ExecutionMode,
    FaultKind,
    FaultSpec,
    IpcSpec,
    LayerSpec,
    MemoryMode,
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
    MemoryMode: {m.value: m for m in MemoryMode},
    WorkloadKind: {m.value: m for m in WorkloadKind},
}
_ANY_CASE: Final[dict[type[enum.Enum], dict[str, enum.Enum]]] = {
    cls: {spelling.casefold(): member for spelling, member in spellings.items()}
    for cls, spellings in _SPELLINGS.items()
}
"""The spellings by their case-folded text: a value is read in any case (``priority: HIGH``,
``--set apps.camera.priority=High``); messages and dumps write the one spelling above."""

# Fields that are not YAML keys.
_NOT_KEYS: Final = frozenset({(Scenario, "source")})


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
    bound: Bound | None


def _is_number(hint: Any) -> bool:
    """Whether a field's type hint holds numbers (int, float, optional or in a tuple)."""
    if hint in (int, float):
        return True
    return any(_is_number(arg) for arg in typing.get_args(hint))


def _fields_of(cls: type) -> dict[str, _Field]:
    """The YAML keys of an attrs class, from its type hints and its fields' bounds."""
    hints = typing.get_type_hints(cls)
    result: dict[str, _Field] = {}
    for field in attrs.fields(cls):
        if (cls, field.name) in _NOT_KEYS:
            continue
        key = field.name.rstrip("_")
        bound = bound_of(field)
        if bound is None and _is_number(hints[field.name]):
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
