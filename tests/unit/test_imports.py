"""The import graph of nnemu's modules: no circles, and the layers meet where docs/architecture.md says."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import nnemu

ROOT = Path(nnemu.__file__).parent


def _modules() -> dict[str, Path]:
    """Every module of the nnemu package by its dotted name (a package by its own name)."""
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imports(tree: ast.Module, *, module_level_only: bool) -> Iterator[tuple[int, str]]:
    """(line, imported module) of each absolute import of an nnemu module in ``tree``.

    ``from a.b import c`` imports ``a.b.c`` when that is a module, else ``a.b``.  Imports in
    ``if TYPE_CHECKING:`` blocks count (mypy follows them); so do those inside functions,
    unless ``module_level_only``.
    """
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in MODULES:
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if full in MODULES:
                    yield node.lineno, full
                elif node.module in MODULES:
                    yield node.lineno, node.module
        if module_level_only and isinstance(
            node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
        ):
            continue
        pending.extend(ast.iter_child_nodes(node))


def _graph() -> dict[str, set[str]]:
    """Who imports whom.  A module's import of a package it is inside is left out: Python has
    imported that package before the module, whatever the module says."""
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        graph[name] = {
            imported
            for _, imported in _imports(tree, module_level_only=False)
            if imported != name and not name.startswith(imported + ".")
        }
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph`` (its modules, the first repeated at the end), or None."""
    done: set[str] = set()
    path: list[str] = []
    on_path: set[str] = set()

    def visit(node: str) -> list[str] | None:
        path.append(node)
        on_path.add(node)
        for target in sorted(graph[node]):
            if target in on_path:
                return [*path[path.index(target) :], target]
            if target not in done:
                found = visit(target)
                if found:
                    return found
        path.pop()
        on_path.discard(node)
        done.add(node)
        return None

    for start in sorted(graph):
        if start not in done:
            found = visit(start)
            if found:
                return found
    return None


def test_no_module_of_nnemu_imports_itself_through_others() -> None:
    """No import circle in nnemu, counting TYPE_CHECKING and function-level imports."""
    cycle = _cycle(_graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle or ())


def test_the_cycle_finder_finds_a_circle() -> None:
    """The check above can fail: a two-module circle, and a longer one, are found."""
    assert _cycle({"a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"b", "d"}, "d": set()}) == ["b", "c", "b"]
    assert _cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def _layer_imports(package: str, *, module_level_only: bool) -> list[str]:
    """``file:line: imported module`` for each import of an nnemu module by a module of
    ``package`` (the callers pick what they refuse)."""
    found = []
    for name, path in MODULES.items():
        if name != package and not name.startswith(package + "."):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for line, imported in _imports(tree, module_level_only=module_level_only):
            found.append(f"{path.relative_to(ROOT.parent)}:{line}: {imported}")
    return found


def test_the_runtime_imports_nothing_of_the_driver_at_module_level() -> None:
    """nnemu.runtime reaches drivers through nnemu.hal's interfaces, never nnemu.driver."""
    found = _layer_imports("nnemu.runtime", module_level_only=True)
    assert found, "the runtime's imports were not found"
    driver = [row for row in found if row.endswith(": nnemu.driver") or ": nnemu.driver." in row]
    assert driver == []


def test_the_hal_imports_nothing_of_nnemu_but_itself() -> None:
    """nnemu.hal, the bottom layer (values, enums, interfaces), imports no other nnemu module."""
    found = _layer_imports("nnemu.hal", module_level_only=False)
    assert found, "the hal's imports were not found"
    outside = [row for row in found if not row.split(": ")[-1].startswith("nnemu.hal")]
    assert outside == []
