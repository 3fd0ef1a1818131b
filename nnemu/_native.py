"""Which hot modules run compiled by mypyc, and when the compiled code may be used.

Some of nnemu's hot loops (the parser's state machine, ...) are also compiled to C
extension modules by mypyc (``python -m nnemu._build``, or the package build).  Each
``Target`` is a group of source modules; each is compiled from a *copy* under another
name (``nnemu/parser/_engine.py`` -> ``nnemu.parser._cengine``), so the compiled
module never shadows the source: with no compiled module, or a stale one, the pure
Python source runs, and outputs are the same either way (the same code, compiled).

A compiled module records ``SOURCE_CRC``, the CRC-32 of its target's sources
(``Target.sources``) at the build; ``compiled`` uses it only while the sources on disk
still have that CRC, so an edit never runs stale compiled code.  ``NNEMU_PURE`` set to
``1`` (or ``all``) turns every compiled module off, set to target names
(``parser,tracer``) turns those off; ``NNEMU_PURE_PARSER=1`` is the older spelling for
the parser alone.

Each build leaves a stamp file (``STAMP_FILE``) beside the package's ``__init__.py``: per
target, the CRC and extension suffix it was built for and the files written, or why it
was not built (the package build's fallback).  ``status`` and ``describe`` read it to say
what runs compiled (``nnemu --version``).

Standard library only: the package build imports this file by its path, before any of
nnemu's dependencies are installed.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import os
import zlib
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Final, NamedTuple

PACKAGE_DIR: Final = Path(__file__).resolve().parent
"""The ``nnemu`` package directory: the targets' paths are relative to it."""

PURE_ENV: Final = "NNEMU_PURE"
"""Environment variable: ``1``/``all``, or comma-separated target names, to run pure Python."""

STAMP_FILE: Final = ".nnemu-native.json"
"""Beside the package's ``__init__.py`` of a built tree: target -> ``Stamp`` as JSON."""


class Stamp(NamedTuple):
    """What the last build of one target left in a package directory."""

    crc: int
    """CRC-32 of the target's sources at that build (``source_crc``)."""
    suffix: str = ""
    """The extension-module suffix it was compiled for (``extension_suffix``)."""
    files: tuple[str, ...] = ()
    """The extension modules written, relative to the package directory (POSIX form)."""
    unbuilt: str = ""
    """Why nothing was compiled (the package build's fallback); empty after a build."""

    def to_json(self) -> dict[str, object]:
        """The stamp as a JSON object (empty fields left out)."""
        data: dict[str, object] = {"crc": self.crc}
        if self.suffix:
            data["suffix"] = self.suffix
        if self.files:
            data["files"] = list(self.files)
        if self.unbuilt:
            data["unbuilt"] = self.unbuilt
        return data

    @classmethod
    def from_json(cls, data: object) -> Stamp | None:
        """The stamp a JSON value records, or None for anything else (an older format)."""
        if not isinstance(data, Mapping):
            return None
        crc, suffix, files, unbuilt = (
            data.get("crc"),
            data.get("suffix", ""),
            data.get("files", []),
            data.get("unbuilt", ""),
        )
        if (
            not isinstance(crc, int)
            or not isinstance(suffix, str)
            or not isinstance(unbuilt, str)
            or not isinstance(files, list)
            or not all(isinstance(name, str) for name in files)
        ):
            return None
        return cls(crc=crc, suffix=suffix, files=tuple(files), unbuilt=unbuilt)


def extension_suffix() -> str:
    """The file suffix of this interpreter's extension modules (``.cpython-311-...so``)."""
    return importlib.machinery.EXTENSION_SUFFIXES[0]


def read_stamps(package_dir: Path = PACKAGE_DIR) -> dict[str, Stamp]:
    """The stamps of ``package_dir`` (a built tree): empty if there is none or it is unreadable."""
    import json

    try:
        data = json.loads((package_dir / STAMP_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    stamps = {str(name): Stamp.from_json(value) for name, value in data.items()}
    return {name: stamp for name, stamp in stamps.items() if stamp is not None}


class Target(NamedTuple):
    """A group of modules compiled together, and the sources whose edits make it stale."""

    name: str
    """Short name (``NNEMU_PURE=name`` turns it off)."""
    modules: tuple[tuple[str, str], ...]
    """(source module, compiled module) pairs, dotted names under ``nnemu``."""
    depends: tuple[str, ...]
    """Other source files (relative to the package directory) whose definitions mypyc may
    compile into the group (``Final`` constants, classes it calls natively)."""
    legacy_env: str | None = None
    """An older environment variable that also turns this target off."""

    @property
    def sources(self) -> tuple[Path, ...]:
        """Every file whose content the compiled group depends on, in a fixed order."""
        own = tuple(module_path(source) for source, _ in self.modules)
        return own + tuple(PACKAGE_DIR / relative for relative in self.depends)


def module_path(dotted: str) -> Path:
    """The source file of a module under ``nnemu`` (``nnemu.parser._engine`` -> its .py)."""
    parts = dotted.split(".")
    if parts[0] != "nnemu":
        raise ValueError(f"not an nnemu module: {dotted}")
    return PACKAGE_DIR.joinpath(*parts[1:]).with_suffix(".py")


TARGETS: Final[tuple[Target, ...]] = (
    Target(
        name="parser",
        modules=(("nnemu.parser._engine", "nnemu.parser._cengine"),),
        depends=(
            "parser/_model.py",
            "trace/_rows.py",
            "trace/_marks.py",
            "tracer/_vocab.py",
        ),
        legacy_env="NNEMU_PURE_PARSER",
    ),
    Target(
        name="tracer",
        modules=(
            ("nnemu.tracer._tracer", "nnemu.tracer._ctracer"),
            ("nnemu.tracer._writers", "nnemu.tracer._cwriters"),
            ("nnemu.sim._kernel", "nnemu.sim._ckernel"),
        ),
        depends=(
            "tracer/_events.py",
            "tracer/_vocab.py",
            "sim/__init__.py",
            "sim/_threads.py",
            "sim/_waits.py",
            "ipc/_split.py",
            "errors.py",
        ),
    ),
    Target(
        name="query",
        modules=(("nnemu.query._loader", "nnemu.query._cloader"),),
        depends=(
            "query/_marks.py",
            "query/_perfetto_tables.py",
            "query/_schema.py",
            "query/_summary.py",
            "trace/__init__.py",
            "trace/_chrome.py",
            "trace/_detect.py",
            "trace/_html.py",
            "trace/_rows.py",
            "_progress.py",
            "_text.py",
            "errors.py",
        ),
    ),
)
"""Every compiled group.  The build compiles them; ``compiled`` finds their modules."""


def target(name: str) -> Target:
    """The target called ``name``.

    Raises:
        KeyError: no such target.
    """
    for candidate in TARGETS:
        if candidate.name == name:
            return candidate
    raise KeyError(name)


def target_of(source_module: str) -> Target:
    """The target that compiles ``source_module``.

    Raises:
        KeyError: no target compiles it.
    """
    for candidate in TARGETS:
        if any(source == source_module for source, _ in candidate.modules):
            return candidate
    raise KeyError(source_module)


def crc_of(paths: tuple[Path, ...]) -> int:
    """CRC-32 of these files' contents, one after the other."""
    crc = 0
    for path in paths:
        crc = zlib.crc32(path.read_bytes(), crc)
    return crc


def source_crc(group: Target) -> int:
    """CRC-32 of a target's sources as they are on disk now."""
    return crc_of(group.sources)


def disabled(group: Target) -> bool:
    """Whether the environment asks for this target's pure-Python code."""
    if group.legacy_env and os.environ.get(group.legacy_env):
        return True
    value = os.environ.get(PURE_ENV, "").strip()
    if not value or value == "0":
        return False
    names = {part.strip() for part in value.split(",")}
    return bool(names & {"1", "all", group.name})


def compiled(source_module: str) -> ModuleType | None:
    """The compiled twin of ``source_module``, or None to run the source.

    None when no target compiles it, the target is turned off (``NNEMU_PURE``), its
    compiled module is not built or does not load, or it was built from other sources
    than those on disk now.
    """
    try:
        group = target_of(source_module)
    except KeyError:
        return None
    if disabled(group):
        return None
    name = dict(group.modules)[source_module]
    try:
        module = importlib.import_module(name)
    except (ImportError, ValueError):
        # (ValueError: a compiled module built against a newer ``librt`` than the one
        # installed says so on import, "API version conflict for librt.strings".)
        return None
    try:
        current = source_crc(group)
    except OSError:
        return None
    if getattr(module, "SOURCE_CRC", None) != current:
        return None
    return module


def status() -> list[tuple[str, str]]:
    """(target, state) for every target: ``compiled``, ``off``, ``stale``, ``not built`` or
    ``does not load: <why>`` (built, but its import fails: a too old ``librt``)."""
    rows = []
    for group in TARGETS:
        source, name = group.modules[0]
        if disabled(group):
            state = "off"
        elif compiled(source) is not None:
            state = "compiled"
        else:
            try:
                importlib.import_module(name)
            except ImportError:
                state = "not built"
            except ValueError as exc:
                state = f"does not load: {exc}"
            else:
                state = "stale"
        rows.append((group.name, state))
    return rows


def describe(package_dir: Path | None = None) -> str:
    """What runs compiled and what pure Python, and why: ``nnemu --version``'s note.

    ``compiled: parser, tracer; pure Python: query (not built: the build failed: ...)``,
    with ``none`` for an empty side.  The reason a target is not built comes from the
    stamp the package build left in ``package_dir`` (this package's), if any.
    """
    stamps = read_stamps(PACKAGE_DIR if package_dir is None else package_dir)
    compiled_names: list[str] = []
    pure: list[str] = []
    for name, state in status():
        if state == "compiled":
            compiled_names.append(name)
            continue
        group = target(name)
        if state == "off":
            legacy = group.legacy_env
            why = f"off: {legacy}" if legacy and os.environ.get(legacy) else f"off: {PURE_ENV}"
        elif state == "stale":
            why = "stale: sources edited since the build"
        elif state.startswith("does not load"):
            why = state
        else:
            stamp = stamps.get(name)
            why = f"not built: {stamp.unbuilt}" if stamp and stamp.unbuilt else "not built"
        pure.append(f"{name} ({why})")
    return (
        f"compiled: {', '.join(compiled_names) or 'none'}; pure Python: {', '.join(pure) or 'none'}"
    )
