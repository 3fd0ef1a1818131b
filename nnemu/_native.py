"""Which of nnemu's hot modules run compiled by mypyc: ``nnemu --version``'s note.

A built wheel (``pip install .``, ``python -m build``) carries the hot modules
(``COMPILED_MODULES``) compiled by mypyc as extension modules under their own names
(``nnemu/parser/_engine.cpython-311-x86_64-linux-gnu.so`` beside ``_engine.py``), and
Python's import system takes an extension module over a source file of the same name: so a
wheel runs its compiled modules, which were built from the sources it ships.  An editable
install (``pip install -e .``) compiles nothing and runs the source as it is on disk.

Standard library only: ``setup.py`` imports this file before nnemu's dependencies are
installed, and ``nnemu --version`` reads it without importing the modules it names.
"""

from __future__ import annotations

import importlib.machinery
from pathlib import Path
from typing import Final

PACKAGE_DIR: Final = Path(__file__).resolve().parent
"""The ``nnemu`` package directory."""

COMPILED_MODULES: Final[dict[str, tuple[str, ...]]] = {
    "parser": ("nnemu.parser._engine",),
    "tracer": (
        "nnemu.tracer._tracer",
        "nnemu.tracer._perfetto_writer",
        "nnemu.tracer._writers",
        "nnemu.sim._kernel",
    ),
    "split": ("nnemu.sim._split",),
    "stack": ("nnemu.ipc._binder", "nnemu.runtime._execution", "nnemu.app._app"),
    "driver": (
        "nnemu.driver._job",
        "nnemu.driver._device",
        "nnemu.driver._prepared",
        "nnemu.runtime._versioned",
    ),
    "query": ("nnemu.query._loader", "nnemu.query._json_loader", "nnemu.query._event_loader"),
    "tables": ("nnemu.query._perfetto_tables",),
    "text": ("nnemu.trace._ftrace",),
    "trace": ("nnemu.trace._chrome",),
    "pfpackets": ("nnemu.trace._pbpackets",),
    "perfetto": (
        "nnemu.trace._pbdecode",
        "nnemu.trace._pbstream",
        "nnemu.trace._pftrack",
        "nnemu.trace._pfevents",
    ),
}
"""The modules a wheel carries compiled, by area (the tracer is compiled with the kernel,
whose clock it reads natively; ``split``: the latency split, which the kernel holds typed so
that the execution's path reads and sets its fields natively (a group of its own: the kernel
imports it; the tracer, stack and driver groups read it, which holds in every build because
``setup.py`` generates every group afresh: mypyc's cached IR of a class lacks what another
group needs to read its float fields); the stack is an execution's path above the driver: the app's
frame, the runtime's execution, the binder's transaction; ``driver``: the path below it, the
device and its jobs, the prepared model and the runtime's HIDL adapter that calls it; ``text``: the systrace
and ftrace text reader, whose per-row loop parse, query and replay share (a group of its own: the
Chrome JSON reader imports it); ``trace``: the Chrome JSON reader, whose per-event work parse,
query and replay share; ``perfetto``: the Perfetto
protobuf reader's decoder and its loops over every record, not its typed records or text
rows, ``nnemu.trace._perfetto``).  A module of a group that another compiled module of the
group imports first gets a wrong ``__file__`` from mypyc (``nnemu/trace/nnemu/trace/...so``;
it runs compiled all the same): so each group's modules are listed before those that import
them, and ``_perfetto`` (interpreted) imports the Perfetto group's in that order.
``nnemu.query._slice_rows``, the loader's INSERT helpers (called once per 200 rows), stays
Python: compiled in the query group its ``__file__`` came out as
``nnemu/query/nnemu/query/...so``, which no path names; ``tables`` (the counter and flow
rows every ``COUNTER`` and ``FLOW`` event becomes, ``nnemu.query._perfetto_tables``) is a
group of its own for the same reason: the query loaders import it, and so is ``pfpackets``
(``nnemu.trace._pbpackets``, the describing packets read from their bytes), which
``_pbdecode`` imports.  Classes that Python code
subclasses or patches say so to mypyc: ``Device`` (users subclass it, ``examples/``) allows
interpreted subclasses, ``PreparedModel`` (tests patch its methods) and ``FencedResult`` (an attrs
value) are Python classes with compiled methods (``native_class=False``); ``Job``
(``nnemu.driver._job``) is a native class of the driver group, and ``DeviceStats``, an attrs
class with factories, stays Python (``nnemu.driver._device_stats``)."""


def module_path(dotted: str, package_dir: Path = PACKAGE_DIR) -> Path:
    """The source file of a module under ``nnemu`` (``nnemu.parser._engine`` -> its .py)."""
    parts = dotted.split(".")
    if parts[0] != "nnemu":
        raise ValueError(f"not an nnemu module: {dotted}")
    return package_dir.joinpath(*parts[1:]).with_suffix(".py")


def extension_of(dotted: str, package_dir: Path = PACKAGE_DIR) -> Path | None:
    """The extension module that Python imports for ``dotted`` instead of its source, if any.

    Looked up as the import system does (an extension module of this interpreter beside the
    source wins over it), without importing anything.
    """
    source = module_path(dotted, package_dir)
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        candidate = source.with_suffix(suffix)
        if candidate.is_file():
            return candidate
    return None


def compiled_areas(package_dir: Path = PACKAGE_DIR) -> dict[str, bool]:
    """Area -> whether every one of its modules runs compiled."""
    return {
        area: all(extension_of(module, package_dir) is not None for module in modules)
        for area, modules in COMPILED_MODULES.items()
    }


def describe(package_dir: Path = PACKAGE_DIR) -> str:
    """``compiled`` (a wheel's compiled modules run), ``source`` (pure Python: an editable or
    pure install), or, for a tree holding only some, which areas are which."""
    areas = compiled_areas(package_dir)
    if all(areas.values()):
        return "compiled"
    if not any(areas.values()):
        return "source"
    compiled = ", ".join(area for area, done in areas.items() if done)
    source = ", ".join(area for area, done in areas.items() if not done)
    return f"compiled: {compiled}; source: {source}"
