"""Compile nnemu's hot modules (``nnemu._native.TARGETS``) to C with mypyc.

    python -m nnemu._build            # every target; needs mypy and a C compiler
    python -m nnemu._build parser     # named targets only
    python -m nnemu._build --check    # exit 1 unless every target runs compiled

Each target's modules are copied under their compiled names (``_engine.py`` ->
``_cengine.py``, references to the group's other modules renamed likewise), stamped
with ``SOURCE_CRC`` and compiled; the extension modules are put beside the sources.
``nnemu._native.compiled`` says when they are used.  Targets are built in parallel,
one process each.

The package build (``setup.py``: ``pip install .``, ``pip install -e .``, a wheel) calls
``package_build``: it compiles every target that is not up to date in the destination,
and when a compile fails (no mypyc, no C compiler, an error) it leaves that target pure
Python, records why in the stamp file and says so, so that the install still succeeds.
``NNEMU_BUILD_PURE=1`` compiles nothing.

Standard library only (mypy is imported by the compiling subprocess): the package
build runs this before nnemu's dependencies are installed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Final, NamedTuple, TextIO

from nnemu._native import (
    PACKAGE_DIR,
    STAMP_FILE,
    TARGETS,
    Stamp,
    Target,
    compiled,
    describe,
    extension_suffix,
    module_path,
    read_stamps,
    source_crc,
    status,
)

__all__ = [
    "BUILD_PURE_ENV",
    "STAMP_FILE",
    "Outcome",
    "build",
    "build_pure",
    "build_target",
    "check",
    "main",
    "package_build",
    "probe_toolchain",
    "summary",
    "up_to_date",
]

BUILD_PURE_ENV: Final = "NNEMU_BUILD_PURE"
"""Environment variable: set (not ``0``) to make the package build compile nothing."""

_SETUP = """\
from setuptools import setup
from mypyc.build import mypycify

setup(
    name="nnemu-native-{name}",
    ext_modules=mypycify({args!r}, opt_level="3", group_name={group!r}),
)
"""

_PROBE_SETUP: Final = """\
import mypyc.build  # noqa: F401  (missing mypyc fails here, before any C)
from setuptools import Extension, setup

setup(name="nnemu-native-probe", ext_modules=[Extension("nnemu_probe", ["nnemu_probe.c"])])
"""
_PROBE_C: Final = """\
#include <Python.h>
static struct PyModuleDef probe = {PyModuleDef_HEAD_INIT, "nnemu_probe", NULL, -1, NULL};
PyMODINIT_FUNC PyInit_nnemu_probe(void) { return PyModule_Create(&probe); }
"""


def probe_toolchain() -> None:
    """Check, in about a second, that mypyc imports and the C compiler builds an extension.

    A target's compile type-checks and generates C for 15-20 s before it runs the
    compiler; without this, an install on a machine with no C compiler or no Python
    headers spent that on every target before failing.

    Raises:
        RuntimeError: mypyc is missing or no extension module can be compiled (the
            output of the failed step is in the message).
    """
    with tempfile.TemporaryDirectory(prefix="nnemu-mypyc-probe-") as tmp:
        Path(tmp, "nnemu_probe.c").write_text(_PROBE_C, encoding="utf-8")
        Path(tmp, "nnemu_probe_setup.py").write_text(_PROBE_SETUP, encoding="utf-8")
        _build_ext(tmp, "nnemu_probe_setup.py", "no compiled module can be built here")


def _build_ext(folder: str, script: str, failure: str) -> None:
    """Run ``python SCRIPT build_ext --inplace`` in ``folder``.

    Raises:
        RuntimeError: it failed; ``failure``, then the ends of its output.
    """
    result = subprocess.run(
        [sys.executable, script, "build_ext", "--inplace"],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"{failure}:\n{result.stdout[-4000:]}{result.stderr[-4000:]}")


def _compiled_copy(group: Target, source: str, crc: int) -> str:
    text = module_path(source).read_text(encoding="utf-8")
    for other, compiled_name in group.modules:
        text = re.sub(rf"\b{re.escape(other)}\b", compiled_name, text)
    return (
        # Not annotated Final: the module need not import it.
        text + f"\n\nSOURCE_CRC = {crc}\n"
        '"""CRC-32 of the sources this module was compiled from (nnemu._native)."""\n'
    )


def _built_files(tree: Path) -> list[Path]:
    """The extension modules a build left in ``tree`` (a copy without any before it)."""
    return sorted(tree.rglob(f"*{extension_suffix()}"))


def _install_file(source: Path, target_file: Path) -> None:
    """Copy ``source`` to ``target_file`` as a new file renamed over any old one.

    A process that has the old module loaded keeps its (unlinked) file intact.
    """
    target_file.parent.mkdir(parents=True, exist_ok=True)
    partial = target_file.with_name(f".{target_file.name}.partial")
    try:
        shutil.copyfile(source, partial)
        os.replace(partial, target_file)
    except OSError:
        partial.unlink(missing_ok=True)
        raise


def build_target(group: Target, destination: Path = PACKAGE_DIR) -> list[Path]:
    """Compile one target with mypyc; put its extension modules under ``destination``.

    ``destination`` is a package directory laid out like ``nnemu`` (the source tree,
    or a wheel's build directory).  Returns the files written.

    Raises:
        RuntimeError: mypyc is missing or the build failed (its output is in the message).
    """
    crc = source_crc(group)
    with tempfile.TemporaryDirectory(prefix=f"nnemu-mypyc-{group.name}-") as tmp:
        tree = Path(tmp) / "nnemu"
        shutil.copytree(
            PACKAGE_DIR,
            tree,
            ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyd", STAMP_FILE),
        )
        paths = []
        for source, compiled_name in group.modules:
            relative = Path(*compiled_name.split(".")).with_suffix(".py")
            (Path(tmp) / relative).write_text(_compiled_copy(group, source, crc), encoding="utf-8")
            paths.append(relative.as_posix())
        args = ["--ignore-missing-imports", "--follow-imports=silent", *paths]
        setup = Path(tmp) / "nnemu_native_setup.py"
        setup.write_text(
            _SETUP.format(name=group.name, args=args, group=group.modules[0][1]),
            encoding="utf-8",
        )
        _build_ext(tmp, setup.name, f"mypyc failed for {group.name}")
        built = _built_files(tree)
        if not built:
            raise RuntimeError(f"mypyc wrote no extension module for {group.name}")
        written = []
        for path in built:
            target_file = destination / path.relative_to(tree)
            _install_file(path, target_file)
            written.append(target_file)
    _record_stamp(destination, group.name, _stamp_of(crc, destination, written))
    return written


def _stamp_of(crc: int, destination: Path, files: Sequence[Path]) -> Stamp:
    return Stamp(
        crc=crc,
        suffix=extension_suffix(),
        files=tuple(path.relative_to(destination).as_posix() for path in files),
    )


_STAMPS_LOCK: Final = threading.Lock()
"""Targets built in parallel threads each update the one stamp file."""


def _record_stamp(destination: Path, name: str, stamp: Stamp) -> None:
    with _STAMPS_LOCK:
        stamps = read_stamps(destination)
        stamps[name] = stamp
        text = json.dumps({k: v.to_json() for k, v in stamps.items()}, sort_keys=True) + "\n"
        path = destination / STAMP_FILE
        partial = path.with_name(f"{path.name}.partial")
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)


def up_to_date(group: Target, destination: Path = PACKAGE_DIR) -> bool:
    """Whether ``destination`` holds this target's extension modules built from today's sources.

    Built for this interpreter (its extension suffix), from sources with today's CRC, and
    every file that build wrote still there.
    """
    stamp = read_stamps(destination).get(group.name)
    return (
        stamp is not None
        and not stamp.unbuilt
        and bool(stamp.files)
        and stamp.suffix == extension_suffix()
        and stamp.crc == source_crc(group)
        and all((destination / name).is_file() for name in stamp.files)
    )


def build(
    names: Sequence[str] | None = None,
    destination: Path = PACKAGE_DIR,
    *,
    skip_up_to_date: bool = False,
    jobs: int | None = None,
) -> dict[str, list[Path] | RuntimeError | OSError]:
    """Build the named targets (all by default), in parallel; each one's files or its error."""
    groups = [g for g in TARGETS if names is None or g.name in names]
    if skip_up_to_date:
        groups = [g for g in groups if not up_to_date(g, destination)]
    workers = jobs or min(len(groups), os.cpu_count() or 1) or 1
    outcomes: dict[str, list[Path] | RuntimeError | OSError] = {}
    if groups:
        try:
            probe_toolchain()
        except (RuntimeError, OSError) as err:
            return {g.name: err for g in groups}

    def one(group: Target) -> None:
        try:
            outcomes[group.name] = build_target(group, destination)
        except (RuntimeError, OSError) as err:
            outcomes[group.name] = err

    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(one, groups))
    return {g.name: outcomes[g.name] for g in groups}


class Outcome(NamedTuple):
    """What the package build did for one target."""

    name: str
    """The target."""
    action: str
    """``compiled``, ``up to date`` (kept), ``copied`` (from the source tree's build),
    ``failed`` or ``skipped`` (``NNEMU_BUILD_PURE``)."""
    files: tuple[Path, ...] = ()
    """Its extension modules in the destination (none when failed or skipped)."""
    error: str = ""
    """The build's whole error output, when it failed."""
    reason: str = ""
    """One line on why it is not compiled (in the stamp, and said by the install)."""


def _short_reason(error: str) -> str:
    """One line from a failed build's output saying what went wrong.

    The first type error mypy found, else the last line naming an error (the C
    compiler's command cut to its program), else the last line.
    """
    if re.search(r"No module named '?mypyc", error):
        return "mypyc is not installed (it comes with mypy)"
    lines = [line.strip() for line in error.splitlines()[1:] if line.strip()]
    typed = [line for line in lines if re.search(r"\.py:\d+: error:", line)]
    errors = [line for line in lines if re.search(r"\berror\b", line, re.IGNORECASE)]
    chosen = typed[0] if typed else errors[-1] if errors else lines[-1] if lines else error
    chosen = re.sub(r"Command '\['([^']*)'.*\]' (returned .*)", r"command \1 \2", chosen)
    return chosen if len(chosen) <= 160 else chosen[:157] + "..."


def _remove_built(group: Target, destination: Path) -> None:
    """Delete the extension modules a build of ``group`` left in ``destination`` (any Python)."""
    stamp = read_stamps(destination).get(group.name)
    doomed = {destination / name for name in (stamp.files if stamp else ())}
    for _, compiled_name in group.modules:
        *package, leaf = compiled_name.split(".")
        folder = destination.joinpath(*package[1:])
        doomed.update(
            path
            for path in folder.glob(f"{leaf}*")
            if path.suffix in (".so", ".pyd")
            and path.name.split(".")[0] in (leaf, f"{leaf}__mypyc")
        )
    for path in doomed:
        path.unlink(missing_ok=True)


def _copy_build(group: Target, source_dir: Path, destination: Path) -> tuple[Path, ...]:
    """Copy an up-to-date build of ``group`` from ``source_dir`` into ``destination``."""
    stamp = read_stamps(source_dir)[group.name]
    written = []
    for name in stamp.files:
        _install_file(source_dir / name, destination / name)
        written.append(destination / name)
    _record_stamp(destination, group.name, stamp)
    return tuple(written)


def build_pure(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``NNEMU_BUILD_PURE`` asks the package build to compile nothing."""
    env = os.environ if environ is None else environ
    return env.get(BUILD_PURE_ENV, "").strip() not in ("", "0")


def package_build(
    destination: Path,
    *,
    copy_from: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> list[Outcome]:
    """The package build's step: every target compiled into ``destination``, or pure Python.

    A target already up to date in ``destination`` is kept; one up to date in
    ``copy_from`` (the source tree, when building a wheel) is copied from there; the others
    are compiled.  A target whose compile fails is left pure Python (any older build of it
    removed) and the reason recorded in the stamp file; nothing is raised, so the install
    goes on.  With ``NNEMU_BUILD_PURE`` set, nothing is compiled and earlier builds in
    ``destination`` are removed.
    """
    env = os.environ if environ is None else environ
    destination.mkdir(parents=True, exist_ok=True)
    if build_pure(env):
        reason = f"{BUILD_PURE_ENV}={env[BUILD_PURE_ENV].strip()} at install"
        for group in TARGETS:
            _remove_built(group, destination)
            _record_stamp(destination, group.name, Stamp(crc=source_crc(group), unbuilt=reason))
        return [Outcome(group.name, "skipped", reason=reason) for group in TARGETS]
    outcomes: dict[str, Outcome] = {}
    todo: list[str] = []
    for group in TARGETS:
        if up_to_date(group, destination):
            files = read_stamps(destination)[group.name].files
            outcomes[group.name] = Outcome(
                group.name, "up to date", tuple(destination / name for name in files)
            )
        elif copy_from is not None and copy_from != destination and up_to_date(group, copy_from):
            outcomes[group.name] = Outcome(
                group.name, "copied", _copy_build(group, copy_from, destination)
            )
        else:
            todo.append(group.name)
    results: Mapping[str, list[Path] | BaseException]
    try:
        results = build(todo, destination) if todo else {}
    except Exception as err:  # a bug here must not fail the install: pure Python still works
        results = {name: err for name in todo}
    for name in todo:
        result = results[name]
        if isinstance(result, list):
            outcomes[name] = Outcome(name, "compiled", tuple(result))
            continue
        group = next(g for g in TARGETS if g.name == name)
        error = str(result) or type(result).__name__
        reason = f"the build failed: {_short_reason(error)}"
        try:
            _remove_built(group, destination)
            _record_stamp(destination, name, Stamp(crc=source_crc(group), unbuilt=reason))
        except OSError:
            pass
        outcomes[name] = Outcome(name, "failed", error=error, reason=reason)
    return [outcomes[group.name] for group in TARGETS]


def summary(outcomes: Sequence[Outcome]) -> str:
    """One line for the install's output: what is compiled, or what is not and why."""
    left = [o for o in outcomes if o.action in ("failed", "skipped")]
    done = ", ".join(f"{o.name} ({o.action})" for o in outcomes if o not in left) or "none"
    if not left:
        return f"nnemu: compiled with mypyc: {done}"
    if all(o.action == "skipped" for o in left) and len(left) == len(outcomes):
        return f"nnemu: {left[0].reason}: nothing compiled, pure Python runs"
    why = "; ".join(f"{o.name} ({o.reason})" for o in left)
    return (
        f"nnemu: warning: not compiled, pure Python runs instead: {why}; compiled: {done} "
        "(`nnemu --version` says which; `pip install -v` shows the build's output)"
    )


def check(out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Print each target's state and compiled module; 1 unless every target runs compiled."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    missing = []
    for group, (name, state) in zip(TARGETS, status(), strict=True):
        module = compiled(group.modules[0][0])
        file = getattr(module, "__file__", None)
        where = f" ({file})" if file else ""
        out.write(f"{name}: {state}{where}\n")
        if state != "compiled":
            missing.append(name)
    if missing:
        err.write(
            f"nnemu: error: not every compiled module is in use ({describe()}); "
            "build them with `python -m nnemu._build` or `pip install -v -e .` to see why\n"
        )
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Build; print what was written, or each failure (exit 1 if any target failed)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--check"]:
        return check()
    known = {g.name for g in TARGETS}
    unknown = [a for a in args if a not in known]
    if unknown:
        sys.stderr.write(
            f"nnemu: error: unknown target(s) {', '.join(unknown)}; targets: {', '.join(sorted(known))}\n"
        )
        return 2
    failed = False
    for name, outcome in build(args or None).items():
        if isinstance(outcome, list):
            for path in outcome:
                sys.stdout.write(f"{name}: wrote {path}\n")
        else:
            failed = True
            sys.stderr.write(f"nnemu: error: {name}: {outcome}\n")
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader of stdout went away (``--check | head -1``): end quietly, with the exit
        # code of nnemu's commands (141), and let the exit-time flush write to /dev/null.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        code = 141
    sys.exit(code)
