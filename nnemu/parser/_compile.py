"""Which parser engine runs: the one mypyc compiled or pure Python (``nnemu._native``).

The compiled module is ``nnemu/parser/_cengine*.so``, built (``python -m nnemu._build``,
or the package build) from a copy of ``_engine.py`` that records the CRC-32 of the
sources it was built from (``SOURCES``).  ``compiled_engine`` uses it only while those
sources are unchanged, so editing ``_engine.py`` (or a module it imports from) never runs
stale compiled code: until it is compiled again the pure-Python engine is used.
``NNEMU_PURE_PARSER=1`` (or ``NNEMU_PURE=parser``) forces the pure-Python engine.
Outputs are the same either way (the same code, compiled).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from nnemu import _native

_TARGET: Final = _native.target("parser")
ENGINE_MODULE: Final = "nnemu.parser._engine"
COMPILED: Final = dict(_TARGET.modules)[ENGINE_MODULE].rpartition(".")[2]
"""Name of the compiled module inside ``nnemu.parser``."""
PURE_ENV: Final = _TARGET.legacy_env or _native.PURE_ENV
"""Environment variable: set to a non-empty value to ignore the compiled engine."""
HERE: Final = Path(__file__).resolve().parent
"""The ``nnemu/parser`` directory (where the compiled module goes)."""
SOURCE: Final = _native.module_path(ENGINE_MODULE)
"""The engine's source."""
SOURCES: Final = _TARGET.sources
"""The engine and the modules defining what it imports from nnemu: mypyc may compile
their constants (``Final``) into the engine, so an edit to any of them makes the
compiled module stale."""


def source_crc(paths: tuple[Path, ...] = SOURCES) -> int:
    """CRC-32 of the engine's sources (``SOURCES``) as they are now."""
    return _native.crc_of(paths)


def compiled_engine() -> type | None:
    """The compiled ``Engine`` class, or None: not built, built from other sources, or disabled."""
    module = _native.compiled(ENGINE_MODULE)
    engine = getattr(module, "Engine", None) if module is not None else None
    return engine if isinstance(engine, type) else None
