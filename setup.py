"""The package build: pyproject.toml holds the metadata; this adds the compiled modules.

A wheel (``pip install .``, ``python -m build``) carries the hot modules
(``nnemu._native.COMPILED_MODULES``) compiled by mypyc, under their own names beside their
sources, so they are what the installed package imports.  A compile that fails fails the
build, with mypyc's or the C compiler's output; ``NNEMU_BUILD_PURE=1`` builds a pure-Python
(py3-none-any) wheel instead, for a machine with no C compiler.

An editable install (``pip install -e .``) compiles nothing: it runs the source as edited.
It removes any compiled module of nnemu's that a by-hand in-place build left beside the
sources, which would run instead of them.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, ClassVar

from setuptools import Distribution, setup
from setuptools.command.build import build
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
# nnemu._native is standard library only: it runs before nnemu's dependencies are installed.
sys.path.insert(0, str(HERE))
from nnemu import _native  # noqa: E402

BUILD_PURE_ENV = "NNEMU_BUILD_PURE"


def build_pure() -> bool:
    """Whether ``NNEMU_BUILD_PURE`` asks for a pure-Python wheel."""
    return os.environ.get(BUILD_PURE_ENV, "").strip() not in ("", "0")


class NoMypyc(Exception):
    """mypyc cannot be imported: a wheel cannot be compiled (an editable install needs none)."""


def _extensions() -> list[Any]:
    """The compiled modules' extensions, from mypyc (it type-checks them first)."""
    try:
        from mypyc.build import mypycify
    except ImportError as err:  # the build backend asks for mypy for a wheel
        raise NoMypyc(
            f"nnemu: mypyc is needed to build the wheel ({err}); "
            f"{BUILD_PURE_ENV}=1 builds a pure-Python one"
        ) from err
    # One group per area: each area's C is compiled apart (in parallel); one type-check.
    groups = [
        (
            [_native.module_path(module).relative_to(HERE).as_posix() for module in modules],
            modules[0],
        )
        for modules in _native.COMPILED_MODULES.values()
    ]
    sources = [source for files, _ in groups for source in files]
    extensions: list[Any] = mypycify(
        ["--ignore-missing-imports", "--follow-imports=silent", *sources],
        opt_level="3",
        separate=groups,
    )
    return extensions


class NativeDistribution(Distribution):
    """Has extension modules (a wheel is platform-specific) unless NNEMU_BUILD_PURE is set."""

    def has_ext_modules(self) -> bool:
        return not build_pure()


class Build(build):
    """``build`` that always runs ``build_ext`` (the extensions are made there, by mypyc)."""

    sub_commands: ClassVar = [
        (name, (lambda _self: True) if name == "build_ext" else predicate)
        for name, predicate in build.sub_commands
    ]


class BuildNative(build_ext):
    """``build_ext``: the compiled modules for a wheel; nothing for an editable install."""

    no_mypyc: NoMypyc | None = None
    """Why the extensions could not be made, raised only if a wheel's build runs."""

    def finalize_options(self) -> None:
        if not (self.inplace or self.editable_mode or build_pure()):
            # Setuptools finalizes this command for an editable install's metadata too, before
            # it says the install is editable: a missing mypyc is an error only in run().
            try:
                self.distribution.ext_modules = _extensions()
            except NoMypyc as err:
                self.no_mypyc = err
            self.parallel = os.cpu_count() or 1
        super().finalize_options()

    def run(self) -> None:
        if self.inplace or self.editable_mode:
            self._remove_in_place()
        elif build_pure():
            sys.stderr.write(f"nnemu: {BUILD_PURE_ENV} set: a pure-Python wheel\n")
        elif self.no_mypyc is not None:
            raise SystemExit(str(self.no_mypyc))
        else:
            super().run()

    def _remove_in_place(self) -> None:
        for modules in _native.COMPILED_MODULES.values():
            for module in modules:
                while (stray := _native.extension_of(module)) is not None:
                    sys.stderr.write(f"nnemu: removed {stray} (the source runs when editable)\n")
                    stray.unlink()


setup(distclass=NativeDistribution, cmdclass={"build": Build, "build_ext": BuildNative})
