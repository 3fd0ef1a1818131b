"""``dump_scenario``: a ``Scenario`` back to YAML text that loads to the same value."""

from __future__ import annotations

import enum
from typing import Any, Final

import attrs
import yaml

from nnemu.scenario._model import (
    AppSpec,
    DeviceSpec,
    Expectation,
    LayerSpec,
    ModelSpec,
    Scenario,
    WorkloadSpec,
)
from nnemu.scenario._schema import (
    _NOT_KEYS,
    _SPELLINGS,
)

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
            if (
                (cls, field.name) == (WorkloadSpec, "arrivals_ms")
                and isinstance(obj, WorkloadSpec)
                and obj.arrivals_file
            ):
                continue  # loaded again from the file
            if (cls, field.name) == (ModelSpec, "params"):
                result["params"] = dict(value)
            elif (cls, field.name) in _FLOW_FIELDS and value is not None:
                result[field.name] = _Flow(_plain(item) for item in value)
            else:
                result[field.name.rstrip("_")] = _plain(value)
        return result
    return obj
