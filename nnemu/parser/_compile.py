"""Which parser engine runs: the one mypyc compiled (``python -m nnemu.parser._build``) or pure Python.

The compiled module is ``nnemu/parser/_cengine*.so``, built from a copy of
``_engine.py`` that records the CRC-32 of the sources it was built from (``SOURCES``).
``compiled_engine`` uses it only while those sources are unchanged, so editing
``_engine.py`` (or a module it imports from) never runs stale compiled code: until it is
compiled again the pure-Python engine is used.  ``NNEMU_PURE_PARSER=1`` forces the pure-Python
engine.  Outputs are the same either way (the same code, compiled).
"""

from __future__ import annotations

import importlib
import os
import zlib
from pathlib import Path
from typing import Final

COMPILED: Final = "_cengine"
"""Name of the compiled module inside ``nnemu.parser``."""
PURE_ENV: Final = "NNEMU_PURE_PARSER"
"""Environment variable: set to a non-empty value to ignore the compiled engine."""
HERE: Final = Path(__file__).resolve().parent
"""The ``nnemu/parser`` directory (where the compiled module goes)."""
SOURCE: Final = HERE / "_engine.py"
"""The engine's source."""
SOURCES: Final = (
    SOURCE,
    HERE / "_model.py",
    HERE.parent / "trace" / "_rows.py",
    HERE.parent / "trace" / "_marks.py",
    HERE.parent / "tracer" / "_vocab.py",
)
"""The engine and the modules defining what it imports from nnemu: mypyc may compile
their constants (``Final``) into the engine, so an edit to any of them makes the
compiled module stale."""


def source_crc(paths: tuple[Path, ...] = SOURCES) -> int:
    """CRC-32 of the engine's sources (``SOURCES``) as they are now."""
    crc = 0
    for path in paths:
        crc = zlib.crc32(path.read_bytes(), crc)
    return crc


def compiled_engine() -> type | None:
    """The compiled ``Engine`` class, or None: not built, built from other sources, or disabled."""
    if os.environ.get(PURE_ENV):
        return None
    try:
        module = importlib.import_module(f"nnemu.parser.{COMPILED}")
    except ImportError:
        return None
    try:
        current = source_crc()
    except OSError:
        return None
    if getattr(module, "SOURCE_CRC", None) != current:
        return None
    engine = getattr(module, "Engine", None)
    return engine if isinstance(engine, type) else None
