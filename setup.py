"""The package build: pyproject.toml holds the metadata; this adds the compiled modules.

``pip install .``, ``pip install -e .`` and a wheel compile nnemu's hot modules
(``nnemu._native.TARGETS``) with mypyc through ``nnemu._build.package_build``: into the
source tree for an editable install (where setuptools' editable mode looks for extension
modules; targets already up to date there are kept), into the build directory for a wheel
(which then carries a platform tag; a build the source tree already holds for this Python
is copied).  A target that does not compile stays pure Python and the install goes on,
with one warning line (pip shows it; ``nnemu --version`` tells what runs compiled); a
wheel that ends up holding no compiled module at all (no target compiled) is a
py3-none-any wheel.  ``NNEMU_BUILD_PURE=1`` compiles nothing, removes the compiled
modules an earlier build left in the destination, and makes a py3-none-any wheel.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import ClassVar

from setuptools import Distribution, setup
from setuptools.command.build import build
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
# nnemu._build is standard library only: it runs before nnemu's dependencies are installed.
sys.path.insert(0, str(HERE))
from nnemu import _build, _native  # noqa: E402


class NativeDistribution(Distribution):
    """Has extension modules (a wheel is platform-specific) unless NNEMU_BUILD_PURE is set
    or the build compiled nothing."""

    compiled_nothing = False
    """Set by ``build_ext`` when no target was compiled (or copied): pure Python only."""

    def has_ext_modules(self) -> bool:
        return not (_build.build_pure() or self.compiled_nothing)


class Build(build):
    """``build`` that always runs ``build_ext``: a pure build still clears older compiled modules."""

    sub_commands: ClassVar = [
        (name, (lambda _self: True) if name == "build_ext" else predicate)
        for name, predicate in build.sub_commands
    ]


class BuildNative(build_ext):
    """``build_ext``: compile the targets with mypyc, or leave them pure Python."""

    def initialize_options(self) -> None:
        super().initialize_options()
        self._outputs: list[str] = []
        self._mapping: dict[str, str] = {}

    def run(self) -> None:
        editable = bool(self.inplace or self.editable_mode)
        package = HERE / "nnemu"
        if package != _native.PACKAGE_DIR:
            warnings.warn(
                f"nnemu: warning: nothing compiled: imported {_native.PACKAGE_DIR}, not {package}",
                stacklevel=1,
            )
            self._pure_after_all()
            return
        built = Path(self.build_lib) / "nnemu"
        destination = package if editable else built
        outcomes = _build.package_build(destination, copy_from=None if editable else package)
        for outcome in outcomes:
            if outcome.error:
                sys.stderr.write(f"nnemu: {outcome.name}: {outcome.error}\n")
            for path in outcome.files:
                output = built / path.relative_to(destination)
                self._outputs.append(str(output))
                if editable:
                    self._mapping[str(output)] = str(path)
        if not any(outcome.files for outcome in outcomes):
            self._pure_after_all()
        line = _build.summary(outcomes)
        if any(outcome.action == "failed" for outcome in outcomes):
            # pip shows a build backend's warnings (its output only with -v).
            warnings.warn(line, stacklevel=1)
        else:
            sys.stderr.write(line + "\n")

    def _pure_after_all(self) -> None:
        """No compiled module to ship: the wheel is pure (py3-none-any), as with
        NNEMU_BUILD_PURE=1.  bdist_wheel decided it was not before the build ran (from
        ``has_ext_modules``); it runs ``build`` before it installs into the wheel, tags and
        describes it, so telling it now makes all three pure."""
        distribution = self.distribution
        assert isinstance(distribution, NativeDistribution)
        distribution.compiled_nothing = True
        wheel = distribution.command_obj.get("bdist_wheel")
        if wheel is not None:
            wheel.root_is_pure = True

    def get_outputs(self) -> list[str]:
        return list(self._outputs)

    def get_output_mapping(self) -> dict[str, str]:
        return dict(self._mapping)


setup(distclass=NativeDistribution, cmdclass={"build": Build, "build_ext": BuildNative})
