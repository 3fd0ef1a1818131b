"""nnemu's build backend: setuptools', asking for mypy only when a wheel is compiled.

A wheel's hot modules are compiled by mypyc (``setup.py``), which needs mypy and the packages
their sources import in the build environment.  An editable install compiles nothing, so it
asks for setuptools alone: ``pip install -e .`` does not fetch and install mypy for a build
that does not use it.  ``NNEMU_BUILD_PURE=1`` builds a pure wheel, without mypy too.
"""

from __future__ import annotations

import os
from typing import Any

from setuptools import build_meta
from setuptools.build_meta import (  # noqa: F401 (the PEP 517 and 660 hooks, as setuptools has them)
    build_editable,
    build_sdist,
    build_wheel,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

COMPILE_REQUIRES = [
    "mypy>=1.20",
    "mypy_extensions>=1.0",
    "librt>=0.16",
    "attrs>=23.1",
    "trio>=0.25",
    "structlog>=24.1",
]
"""mypyc, and every package the compiled modules import (so mypyc sees their types; mypy brings
mypy_extensions, whose ``mypyc_attr`` the compiled driver reads while type checking only)."""


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    """setuptools' requirements, and mypyc's unless ``NNEMU_BUILD_PURE`` is set."""
    pure = os.environ.get("NNEMU_BUILD_PURE", "").strip() not in ("", "0")
    requires: list[str] = build_meta.get_requires_for_build_wheel(config_settings)
    return requires if pure else [*requires, *COMPILE_REQUIRES]
