"""The package build: pyproject.toml holds the metadata; this adds the compiled modules.

A wheel (``pip install .``, ``python -m build``) carries the hot modules
(``nnemu._native.COMPILED_MODULES``) compiled by mypyc, under their own names beside their
sources, so they are what the installed package imports.  A compile that fails fails the
build, with mypyc's or the C compiler's output; ``NNEMU_BUILD_PURE=1`` builds a pure-Python
(py3-none-any) wheel instead, for a machine with no C compiler.

Each build compiles every group from scratch, with a mypy cache of its own that starts empty:
mypyc does not keep, in the IR it caches, which float and native-int attributes of a class its
undefined-attribute bitmap tracks, so a group generated against another group's cached IR
could not read them (``emit_undefined_attr_check``: ``ValueError: value is not in list``).
The metadata commands (``egg_info``, ``dist_info``: pip's first hooks) compile nothing.

An editable install (``pip install -e .``) compiles nothing: it runs the source as edited.
It removes any compiled module of nnemu's that a by-hand in-place build left beside the
sources, which would run instead of them.
"""

from __future__ import annotations

import os
import sys
import tempfile
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


METADATA_COMMANDS = frozenset({"egg_info", "dist_info"})
"""Commands that write the package's metadata alone (pip's hooks before the wheel's build):
they finalize ``build_ext`` (the manifest asks it for its sources) but build nothing."""


class NoMypyc(Exception):
    """mypyc cannot be imported: a wheel cannot be compiled (an editable install needs none)."""


def mypyc_extensions(groups: list[tuple[list[str], str]]) -> list[Any]:
    """mypyc's extensions for ``groups`` (each: its source paths, relative to the working
    directory, and its name), their C generated into ``build/`` (mypyc type-checks them first).

    mypy's cache is a new empty directory, removed afterwards: mypyc generates a group's C
    against another group's classes from their IR as built in this run, never from the IR a
    former run cached, which lacks the classes' attribute bitmaps (see the module docstring).
    """
    try:
        from mypyc.build import mypycify
    except ImportError as err:  # the build backend asks for mypy for a wheel
        raise NoMypyc(
            f"nnemu: mypyc is needed to build the wheel ({err}); "
            f"{BUILD_PURE_ENV}=1 builds a pure-Python one"
        ) from err
    sources = [source for files, _ in groups for source in files]
    with tempfile.TemporaryDirectory(prefix="nnemu-mypy-cache-") as cache_dir:
        extensions: list[Any] = mypycify(
            [
                f"--cache-dir={cache_dir}",
                "--ignore-missing-imports",
                "--follow-imports=silent",
                *sources,
            ],
            opt_level="3",
            separate=groups,
        )
    return extensions


def _extensions() -> list[Any]:
    """The compiled modules' extensions: one group per area, each area's C compiled apart (in
    parallel); one type-check."""
    return mypyc_extensions(
        [
            (
                [_native.module_path(module).relative_to(HERE).as_posix() for module in modules],
                modules[0],
            )
            for modules in _native.COMPILED_MODULES.values()
        ]
    )


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
        metadata_only = set(self.distribution.commands) <= METADATA_COMMANDS
        if not (self.inplace or self.editable_mode or build_pure() or metadata_only):
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


if __name__ == "__main__":  # setuptools runs this file as __main__; tests import its functions
    setup(distclass=NativeDistribution, cmdclass={"build": Build, "build_ext": BuildNative})
