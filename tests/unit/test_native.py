"""The compiled modules: what ``nnemu --version`` says runs, and what a wheel's build needs."""

from __future__ import annotations

import ast
import importlib
import importlib.machinery
import importlib.util
import re
import sys
import tomllib
from pathlib import Path

import pytest

from nnemu import _native
from nnemu.cli import main

_MODULES = [module for modules in _native.COMPILED_MODULES.values() for module in modules]
_CHECKOUT = (_native.PACKAGE_DIR.parent / "pyproject.toml").is_file()
"""Whether nnemu runs from a checkout (``pip install -e .``) rather than an installed wheel."""


def _tree(tmp_path: Path, compiled: set[str]) -> Path:
    """A package directory holding every compiled module's source and, for ``compiled``, an
    extension module beside it."""
    package = tmp_path / "nnemu"
    for module in _MODULES:
        source = _native.module_path(module, package)
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_text("", encoding="utf-8")
        if module in compiled:
            source.with_suffix(importlib.machinery.EXTENSION_SUFFIXES[0]).write_bytes(b"")
    return package


def test_describe_says_source_compiled_or_which(tmp_path: Path) -> None:
    """``source`` with no extension module, ``compiled`` with all, else each area's state."""
    assert _native.describe(_tree(tmp_path / "a", set())) == "source"
    assert _native.describe(_tree(tmp_path / "b", set(_MODULES))) == "compiled"
    # An area runs compiled only when every one of its modules does (the tracer with the kernel).
    part = set(_MODULES) - {"nnemu.sim._kernel"}
    assert (
        _native.describe(_tree(tmp_path / "c", part))
        == "compiled: parser, split, stack, driver, query, tables, text, trace, pfpackets, perfetto; source: tracer"
    )


def test_an_extension_module_with_another_name_is_not_taken(tmp_path: Path) -> None:
    """Only ``<module><this Python's extension suffix>`` is what Python imports for a module."""
    package = _tree(tmp_path, set())
    engine = _native.module_path("nnemu.parser._engine", package)
    engine.with_name("_cengine.cpython-311-x86_64-linux-gnu.so").write_bytes(b"")  # 0.1.0's name
    engine.with_name("_engine.cpython-399-other.so").write_bytes(b"")  # another Python's
    assert _native.extension_of("nnemu.parser._engine", package) is None


@pytest.mark.parametrize("module", _MODULES)
def test_what_runs_is_what_describe_says(module: str) -> None:
    """Each compiled module's import is the extension module ``_native`` finds, else the source:
    so ``nnemu --version`` tells what runs.  From a checkout (an editable install) it is always
    the source: an extension module left beside it would run instead of the edited code."""
    loaded = Path(importlib.import_module(module).__file__ or "")
    extension = _native.extension_of(module)
    assert loaded == (extension or _native.module_path(module))
    if _CHECKOUT:
        assert extension is None, f"{extension} runs instead of the source (pip install -e .)"


def test_version_says_what_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """``nnemu --version``: the version, then ``(source)`` or ``(compiled)``."""
    with pytest.raises(SystemExit) as raised:
        main(["--version"])
    assert raised.value.code == 0
    out = capsys.readouterr().out
    assert re.fullmatch(r"nnemu \S+ \((source|compiled|compiled: .*; source: .*)\)\n", out), out
    assert out.endswith(f"({_native.describe()})\n")


def test_build_requirements_cover_the_compiled_modules_imports() -> None:
    """Every third-party package a compiled module imports is a requirement of the wheel's build
    ([build-system] requires and the backend's COMPILE_REQUIRES: mypyc must see its types)."""
    pyproject = _native.PACKAGE_DIR.parent / "pyproject.toml"
    if not pyproject.is_file():
        pytest.skip("an installed wheel: no pyproject.toml")
    requires = tomllib.loads(pyproject.read_text(encoding="utf-8"))["build-system"]["requires"]
    # A compiled wheel's build also gets what the build backend adds for mypyc.
    backend = pyproject.parent / "build_backend" / "nnemu_backend.py"
    compile_requires = re.search(
        r"COMPILE_REQUIRES = (\[.*?\])", backend.read_text(encoding="utf-8"), re.DOTALL
    )
    assert compile_requires is not None, "build_backend/nnemu_backend.py names no COMPILE_REQUIRES"
    requires = [*requires, *ast.literal_eval(compile_requires.group(1))]
    required = {re.split(r"[<>=!~ \[]", item)[0].lower() for item in requires}
    for module in _MODULES:
        path = _native.module_path(module)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top in ("nnemu", "__future__"):
                    continue
                assert top.lower() in required, f"{path.name} imports {top}"


_SPLIT = """\
class Split:
    def __init__(self) -> None:
        self.energy = 0.0
"""
_READER = """\
from pkg.split import Split


def energy(split: Split) -> float:
    return split.energy
"""


@pytest.mark.slow
def test_a_rebuild_generates_every_group_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A wheel's build in a tree that built before still generates a group that reads a float
    attribute of another group's class, after only the reader changed (setup.py: mypyc's cached
    IR has no attribute bitmap, and generating against it failed, ``value is not in list``)."""
    setup_py = _native.PACKAGE_DIR.parent / "setup.py"
    if not setup_py.is_file():
        pytest.skip("an installed wheel: no setup.py")
    pytest.importorskip("mypyc.build")
    spec = importlib.util.spec_from_file_location("nnemu_setup", setup_py)
    assert spec is not None
    assert spec.loader is not None
    setup = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(setup)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "pkg" / "split.py").write_text(_SPLIT, encoding="utf-8")
    reader = tmp_path / "pkg" / "reader.py"
    reader.write_text(_READER, encoding="utf-8")
    groups = [(["pkg/split.py"], "pkg.split"), (["pkg/reader.py"], "pkg.reader")]
    setup.mypyc_extensions(groups)
    reader.write_text(
        _READER + "\n\ndef twice(split: Split) -> float:\n    return 2 * split.energy\n",
        encoding="utf-8",
    )
    extensions = setup.mypyc_extensions(groups)
    assert {extension.name for extension in extensions} >= {"pkg.split", "pkg.reader"}
    # The reader reads the field natively, testing its bit in the class's attribute bitmap.
    assert "->_energy" in (tmp_path / "build" / "pkg" / "__native_reader.c").read_text("utf-8")
