"""The trace readers share ``nnemu.trace`` and none reaches into another's private modules."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import nnemu
from nnemu.trace import ROW_RE

PACKAGE = Path(nnemu.__file__).parent
READERS = ("parser", "query", "replay", "trace", "verify.py")


def _modules(reader: str) -> list[Path]:
    path = PACKAGE / reader
    return [path] if path.suffix == ".py" else sorted(path.glob("*.py"))


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module is not None
    ]


@pytest.mark.parametrize("reader", READERS)
def test_readers_import_only_public_names_of_other_packages(reader: str):
    """parser, query, replay, verify and trace import ``nnemu.<pkg>`` of others, never ``_x``."""
    own = reader.removesuffix(".py")
    for path in _modules(reader):
        for module in _imports(path):
            parts = module.split(".")
            if parts[0] != "nnemu" or len(parts) < 3 or parts[1] == own:
                continue
            assert not parts[2].startswith("_"), f"{path.name} imports {module}"


def test_row_pattern_is_defined_once():
    """No module besides nnemu.trace compiles its own tracing_mark_write row pattern."""
    for path in PACKAGE.rglob("*.py"):
        if path.parent.name == "trace":
            continue
        text = path.read_text(encoding="utf-8")
        assert "tracing_mark_write: ([BE])" not in text, path
    assert ROW_RE.pattern.endswith(r"tracing_mark_write: ([BE])(.*)")
