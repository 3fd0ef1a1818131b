"""Which query loader runs: the one mypyc compiled or pure Python (``nnemu._native``).

The compiled module is ``nnemu/query/_cloader*.so``, built (``python -m nnemu._build``, or
the package build) from a copy of ``_loader.py`` that records the CRC-32 of the sources it
was built from (the ``query`` target's sources).  ``loader_module`` uses it only while those
sources are unchanged and not with ``NNEMU_PURE=1`` (or ``NNEMU_PURE=query``); else the
pure-Python ``_loader``.  Loads are the same either way (the same code, compiled).
``load_trace`` here is the one entry point every caller loads through.
"""

from __future__ import annotations

import sqlite3
from types import ModuleType
from typing import Final, TextIO

from nnemu import _native
from nnemu.query import _loader
from nnemu.query._summary import LoadSummary

LOADER_MODULE: Final = "nnemu.query._loader"
"""The loader's source module (its compiled twin is the ``query`` target's)."""

_chosen: ModuleType | None = None


def compiled_loader() -> ModuleType | None:
    """The compiled loader module, or None: not built, built from other sources, or disabled."""
    return _native.compiled(LOADER_MODULE)


def loader_module() -> ModuleType:
    """The loader that runs: compiled by mypyc if built from the current sources, else pure."""
    global _chosen
    if _chosen is None:
        _chosen = compiled_loader() or _loader
    return _chosen


def load_trace(
    path: str, conn: sqlite3.Connection, warn: _loader.Warn, *, progress: TextIO | None = None
) -> LoadSummary:
    """``_loader.load_trace`` run by the loader ``loader_module`` chooses (see there)."""
    summary: LoadSummary = loader_module().load_trace(path, conn, warn, progress=progress)
    return summary
