"""YAML composition for the scenario loader: positions kept, alias bombs refused.

The document is composed (not constructed) so every value keeps its ``file:line:col``;
``compose_text`` turns every way PyYAML can fail into one ``ScenarioError`` problem.
Also the quoting helpers every loader message uses.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from nnemu.errors import Problem, ScenarioError

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
    stack = [root] if root is not None else []
    while stack:
        node = stack.pop()
        if id(node) in seen:  # an alias: checked where its anchor is
            continue
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
