"""YAML composition for the scenario loader: positions kept, alias bombs refused.

The document is composed (not constructed) so every value keeps its ``file:line:col``;
``compose_text`` turns every way PyYAML can fail into one ``ScenarioError`` problem.
Also the quoting helpers every loader message uses.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Final, cast, overload

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from nnemu.errors import EmulatorBug, Problem, ScenarioError

_MERGE_TAG: Final = "tag:yaml.org,2002:merge"
_STR_TAG: Final = "tag:yaml.org,2002:str"
_NULL_TAG: Final = "tag:yaml.org,2002:null"
_NUMBER_TAGS: Final = frozenset({"tag:yaml.org,2002:int", "tag:yaml.org,2002:float"})
# PyYAML (YAML 1.1) reads 1e3 as a string; accept it as the number users mean.
_EXPONENT: Final = re.compile(r"[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+")
# A double-quoted "\ud800" gives a lone surrogate, which no file or terminal can encode.
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
QUOTE_LIMIT: Final = 60
"""Most characters of a value a problem message quotes (the rest becomes ``…``)."""


def _clip(text: str) -> str:
    """``text`` cut to QUOTE_LIMIT characters for a message."""
    return text if len(text) <= QUOTE_LIMIT else text[:QUOTE_LIMIT] + "…"


def _quote_list(names: Iterable[str]) -> str:
    return ", ".join(_clip(name.encode("utf-8", "backslashreplace").decode()) for name in names)


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


class _Items(Sequence[Node]):
    """A sequence node's items, each scalar kept as its text and position (about 110 bytes)
    rather than as a ``ScalarNode`` with two marks (about 800): a trace workload's
    ``arrivals_ms`` of 400,000 times composes in 45 MB, not 320.  An item read is made a
    node again (a new object each time: compare nodes by position, not identity).
    """

    __slots__ = ("_kinds", "_name", "_positions", "_values")
    _NODE: Final = 255
    """The kind of an item kept as its node (a collection)."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._values: list[object] = []
        """Each scalar's text, or the node of a collection."""
        self._kinds: array[int] = array("B")
        """Each item's index in ``_KINDS`` ((tag, style) of a scalar), or _NODE."""
        self._positions: array[int] = array("q")
        """Six numbers an item: start index, line, column, end index, line, column."""

    def append(self, node: Node) -> None:
        """Add ``node`` (as PyYAML's composer adds to a list)."""
        number = self._NODE
        if isinstance(node, ScalarNode):
            kind = (node.tag, node.style)
            number = _KINDS.get(kind, self._NODE)
            if number == self._NODE and len(_KIND_LIST) < self._NODE:
                number = _KINDS[kind] = len(_KIND_LIST)
                _KIND_LIST.append(kind)
        self._kinds.append(number)
        if number == self._NODE:  # (a collection may be unfinished: an alias to its anchor)
            self._values.append(node)
            self._positions.extend((0, 0, 0, 0, 0, 0))
            return
        start, end = node.start_mark, node.end_mark
        self._values.append(node.value)
        self._positions.extend(
            (start.index, start.line, start.column, end.index, end.line, end.column)
        )

    def __len__(self) -> int:
        return len(self._values)

    @overload
    def __getitem__(self, index: int) -> Node: ...
    @overload
    def __getitem__(self, index: slice) -> list[Node]: ...
    def __getitem__(self, index: int | slice) -> Node | list[Node]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        value, number = self._values[index], self._kinds[index]
        if number == self._NODE:
            return cast(Node, value)
        tag, style = _KIND_LIST[number]
        at = (index % len(self)) * 6
        p = self._positions
        start = yaml.Mark(self._name, p[at], p[at + 1], p[at + 2], None, None)  # type: ignore[arg-type]
        end = yaml.Mark(self._name, p[at + 3], p[at + 4], p[at + 5], None, None)  # type: ignore[arg-type]
        return ScalarNode(tag, value, start, end, style=style)

    def __iter__(self) -> Iterator[Node]:
        for index in range(len(self._values)):
            yield self[index]


_KINDS: Final[dict[tuple[str, str | None], int]] = {}
"""The (tag, style) of the scalars ``_Items`` keeps, numbered (shared by every document)."""
_KIND_LIST: Final[list[tuple[str, str | None]]] = []
"""The same, by number."""


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
        if node is not None and not isinstance(node, ScalarNode):  # a scalar's size is 1
            self._sizes[id(node)] = self.expanded - before
        return node

    def compose_sequence_node(self, anchor: Any) -> SequenceNode:
        """PyYAML's (``yaml.composer.Composer``), with the items kept in ``_Items``."""
        start_event = self.get_event()  # type: ignore[no-untyped-call]
        tag = start_event.tag
        if tag is None or tag == "!":
            tag = self.resolve(SequenceNode, None, start_event.implicit)  # type: ignore[no-untyped-call]
        items = _Items(start_event.start_mark.name)
        node = SequenceNode(
            tag, items, start_event.start_mark, None, flow_style=start_event.flow_style
        )
        if anchor is not None:
            self.anchors[anchor] = node
        index = 0
        while not self.check_event(yaml.SequenceEndEvent):
            item = self.compose_node(node, index)
            if item is None:
                raise EmulatorBug("PyYAML composed no node for a sequence item")
            items.append(item)
            index += 1
        node.end_mark = self.get_event().end_mark  # type: ignore[no-untyped-call]
        return node


def _compose(text: str) -> Node | None:
    """``yaml.compose(text, Loader=yaml.SafeLoader)``, refusing alias bombs."""
    loader = _Loader(text)
    try:
        return loader.get_single_node()
    finally:
        loader.dispose()


def compose_text(text: str, source: str) -> Node | None:
    """The composed YAML document of ``text`` (None when empty).

    Raises:
        ScenarioError: the text is not YAML nnemu can read, with the position of the fault.
    """
    try:
        return _compose(text)
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
        raise ScenarioError([file_problem(source, f"invalid YAML: {err}")]) from err
    except RecursionError as err:
        raise ScenarioError([file_problem(source, "invalid YAML: nested too deeply")]) from err
    except (ValueError, OverflowError) as err:  # a "\U" escape beyond U+10FFFF
        message = f"invalid YAML: a character escape beyond U+10FFFF ({_clip(str(err))})"
        raise ScenarioError([file_problem(source, message)]) from err


def construct_reason(err: Exception, tag: str) -> str:
    """Why PyYAML could not construct a scalar tagged ``tag``, from what its constructor raised
    (``!!bool maybe`` raises KeyError, ``!!timestamp x`` AttributeError, ``!!int 1x``
    ValueError)."""
    reason = getattr(err, "problem", None) or str(err)
    if isinstance(err, KeyError | AttributeError) or not reason:
        reason = f"not a valid {tag.rsplit(':', 1)[-1]}"
    return _clip(reason)


def unreadable_scalars(root: Node | None) -> list[tuple[ScalarNode, str]]:
    """The scalars of a composed document that PyYAML cannot construct (``!!bool maybe``,
    ``!!int 1x``, ``!!timestamp 2001-13-45``), each with why, in document order."""
    constructor = yaml.constructor.SafeConstructor()
    found: list[tuple[ScalarNode, str]] = []
    seen: set[int] = set()
    checked: set[tuple[int, int]] = set()
    stack = [root] if root is not None else []
    while stack:
        node = stack.pop()
        # An alias is checked where its anchor is: a collection by identity, a scalar by
        # position (a sequence's scalars are made again each time they are read).
        if isinstance(node, ScalarNode):
            where = (node.start_mark.line, node.start_mark.column)
            if where in checked:
                continue
            checked.add(where)
        elif id(node) in seen:
            continue
        else:
            seen.add(id(node))
        if isinstance(node, ScalarNode):
            try:
                constructor.construct_object(node)
            except Exception as err:  # PyYAML's constructors raise KeyError, ValueError, ...
                found.append((node, construct_reason(err, node.tag)))
        elif isinstance(node, SequenceNode):
            stack.extend(node.value)
        elif isinstance(node, MappingNode):
            stack.extend(item for pair in node.value for item in pair)
    return sorted(found, key=lambda item: (item[0].start_mark.line, item[0].start_mark.column))


def file_problem(source: str, message: str) -> Problem:
    """A problem with the document as a whole (unreadable, not YAML), placed at its start."""
    return Problem(source=source, line=1, column=1, key_path="", message=message)


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
