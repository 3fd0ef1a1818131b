"""The schema walk: composed YAML nodes -> attrs values, collecting every problem.

``_Walker`` converts each mapping to its class by the schema (``_schema.py``) and each
scalar to its field's type and range, with the loader's ``expected …, got …`` messages;
the per-section rules (``_rules.py``) hook in after each mapping is read.
"""

from __future__ import annotations

import difflib
import enum
import types
import typing
from collections.abc import Callable
from typing import Any, Final

import attrs
import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from nnemu.errors import EmulatorBug, Problem, SpecValueError
from nnemu.hal import (
    HalVersion,
)
from nnemu.scenario._expect import parse_expectation
from nnemu.scenario._limits import Bound
from nnemu.scenario._model import (
    CPU_DEVICE_NAME,
    Expectation,
    ModelSpec,
    Scenario,
)
from nnemu.scenario._schema import (
    _ANY_CASE,
    _BAD,
    _SCHEMA,
    _SPELLINGS,
    _Bad,
    _join,
    _Mapped,
)
from nnemu.scenario._yaml import (
    _EXPONENT,
    _MERGE_TAG,
    _NULL_TAG,
    _NUMBER_TAGS,
    _STR_TAG,
    _SURROGATE,
    _clip,
    _quote_list,
    construct_reason,
    file_problem,
)

_MEANT: Final = {
    "deadline_ms": "execution_timeout_ms",
    "deadline": "execution_timeout_ms",
    "timeout_ms": "execution_timeout_ms",
    "timeout": "execution_timeout_ms",
}
"""Keys a newcomer tries for a key whose spelling is not close (NNAPI's deadlines are the
app's timeouts): the suggestion when that key is in the mapping, else difflib's."""


class _Walker:
    """Walks the composed YAML, converting nodes and collecting problems.

    ``_hooks`` maps a class to the rule run on each of its mappings once its keys are
    read (``_rules._Checker`` fills it).
    """

    def __init__(self, source: str) -> None:
        self.source = source
        self.problems: list[Problem] = []
        self._constructor = yaml.constructor.SafeConstructor()
        self.device_names: set[str] = set()
        self.model_names: list[str] = []
        self.app_names: set[str] = set()
        self.has_duration = False
        self._hooks: dict[type, Callable[[_Mapped], None]] = {}

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
            message = "expected a mapping with the scenario, got an empty document"
            self.problems.append(file_problem(self.source, message))
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
                meant = _MEANT.get(key)
                close = [meant] if meant in schema else difflib.get_close_matches(key, schema, n=1)
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
        return self.build(cls, mapped)

    def build(self, cls: type, mapped: _Mapped) -> object:
        """``cls(**mapped.values)``; what its validators refuse becomes a problem.

        The rules above report everything the validators check, with better positions; a
        refusal is left to the validators only after a problem outside this mapping (a
        repeated name) or, were the two to disagree, reported at the field.
        """
        try:
            return cls(**mapped.values)
        except SpecValueError as err:
            if not self.problems:
                if err.owner == cls.__name__:
                    node, path = mapped.at(err.attr)
                else:
                    node, path = mapped.node, mapped.path
                self.expected(node, path, f"{err.expected} ({err.owner}.{err.attr})")
            return _BAD

    # -- values ---------------------------------------------------------------------

    def value(
        self, node: Node, path: str, hint: Any, bound: Bound | None, owner: type, attr: str
    ) -> object:
        """Convert ``node`` to the type ``hint`` (a field of ``owner``)."""
        if (owner, attr) == (ModelSpec, "params"):
            return self.params(node, path, bound)
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
            value = self._constructor.construct_object(node)
            # The constructor keeps each node it built (for aliases to collections): a
            # scalar's is let go, or a list of 400,000 arrivals keeps 400,000 nodes alive.
            self._constructor.constructed_objects.pop(node, None)
            return value
        except Exception as err:  # PyYAML's constructors raise KeyError, AttributeError, ...
            reason = construct_reason(err, node.tag)
            self.problem(
                node, path, f"expected a readable value, got {self.found(node)} ({reason})"
            )
            return _BAD

    def number(self, node: Node, path: str, *, integer: bool, bound: Bound | None) -> object:
        if bound is None:
            msg = f"scenario schema: {path} has no declared range"
            raise EmulatorBug(msg)
        what = bound.expected(integer=integer)
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
        if not bound.admits(value, integer=integer) or not isinstance(value, int | float):
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
            if node.tag == _STR_TAG and text.casefold() in _ANY_CASE[cls]:
                return _ANY_CASE[cls][text.casefold()]
            if cls is HalVersion and node.tag == "tag:yaml.org,2002:float" and node.style is None:
                for spelling, member in spellings.items():
                    try:
                        if float(text) == float(spelling):
                            return member
                    except ValueError:
                        break
        return self.expected(node, path, f"one of {_quote_list(spellings)}")

    def params(self, node: Node, path: str, bound: Bound | None) -> object:
        if not isinstance(node, MappingNode) or bound is None:
            return self.expected(node, path, "a mapping of parameter names to numbers")
        result: dict[str, int | float] = {}
        bad = False
        for key, _, value_node in self.items(node, path):
            value = self.scalar(value_node, _join(path, key))
            if isinstance(value, _Bad):
                bad = True
            elif not bound.admits(value, integer=False):
                self.expected(value_node, _join(path, key), bound.expected(integer=False))
                bad = True
            else:
                result[key] = typing.cast(int | float, value)
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
