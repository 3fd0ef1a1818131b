"""Compile nnemu's hot modules (``nnemu._native.TARGETS``) to C with mypyc.

    python -m nnemu._build            # every target; needs mypy and a C compiler
    python -m nnemu._build parser     # named targets only

Each target's modules are copied under their compiled names (``_engine.py`` ->
``_cengine.py``, references to the group's other modules renamed likewise), stamped
with ``SOURCE_CRC`` and compiled; the extension modules are put beside the sources.
``nnemu._native.compiled`` says when they are used.  Targets are built in parallel,
one process each.

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
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from nnemu._native import PACKAGE_DIR, TARGETS, Target, module_path, source_crc

STAMP_FILE = ".nnemu-native.json"
"""Beside the package's ``__init__.py`` of a built tree: target -> CRC it was built from
(lets a repeated build skip a target whose extension modules are up to date without
importing them)."""

_SETUP = """\
from setuptools import setup
from mypyc.build import mypycify

setup(
    name="nnemu-native-{name}",
    ext_modules=mypycify({args!r}, opt_level="3", group_name={group!r}),
)
"""


def _compiled_copy(group: Target, source: str, crc: int) -> str:
    text = module_path(source).read_text(encoding="utf-8")
    for other, compiled_name in group.modules:
        text = re.sub(rf"\b{re.escape(other)}\b", compiled_name, text)
    return (
        text + f"\n\nSOURCE_CRC: Final = {crc}\n"
        '"""CRC-32 of the sources this module was compiled from (nnemu._native)."""\n'
    )


def _built_files(tree: Path, group: Target) -> list[Path]:
    """The extension modules one target's build left in ``tree``."""
    found: list[Path] = []
    for _, compiled_name in group.modules:
        *package, leaf = compiled_name.split(".")
        folder = tree.joinpath(*package[1:])
        found.extend(
            path
            for path in sorted(folder.glob(f"{leaf}*"))
            if path.suffix in (".so", ".pyd")
            and path.name.split(".")[0] in (leaf, f"{leaf}__mypyc")
        )
    return found


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
        result = subprocess.run(
            [sys.executable, setup.name, "build_ext", "--inplace"],
            cwd=tmp,
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise RuntimeError(
                f"mypyc failed for {group.name}:\n{result.stdout[-4000:]}{result.stderr[-4000:]}"
            )
        built = _built_files(tree, group)
        if not built:
            raise RuntimeError(f"mypyc wrote no extension module for {group.name}")
        written = []
        for path in built:
            target_file = destination / path.relative_to(tree)
            # A new file renamed over the old one: a process that has the old module
            # loaded keeps its (unlinked) file intact.
            partial = target_file.with_name(f".{target_file.name}.partial")
            try:
                shutil.copyfile(path, partial)
                os.replace(partial, target_file)
            except OSError:
                partial.unlink(missing_ok=True)
                raise
            written.append(target_file)
    _record_stamp(destination, group.name, crc)
    return written


def _read_stamps(destination: Path) -> dict[str, int]:
    try:
        data = json.loads((destination / STAMP_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return (
        {str(k): v for k, v in data.items() if isinstance(v, int)} if isinstance(data, dict) else {}
    )


def _record_stamp(destination: Path, name: str, crc: int) -> None:
    stamps = _read_stamps(destination)
    stamps[name] = crc
    (destination / STAMP_FILE).write_text(
        json.dumps(stamps, sort_keys=True) + "\n", encoding="utf-8"
    )


def up_to_date(group: Target, destination: Path = PACKAGE_DIR) -> bool:
    """Whether ``destination`` holds this target's extension modules built from today's sources."""
    if _read_stamps(destination).get(group.name) != source_crc(group):
        return False
    for _, compiled_name in group.modules:
        *package, leaf = compiled_name.split(".")
        folder = destination.joinpath(*package[1:])
        if not any(p.suffix in (".so", ".pyd") for p in folder.glob(f"{leaf}.*")):
            return False
    return True


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

    def one(group: Target) -> None:
        try:
            outcomes[group.name] = build_target(group, destination)
        except (RuntimeError, OSError) as err:
            outcomes[group.name] = err

    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(one, groups))
    return {g.name: outcomes[g.name] for g in groups}


def main(argv: Sequence[str] | None = None) -> int:
    """Build; print what was written, or each failure (exit 1 if any target failed)."""
    args = list(sys.argv[1:] if argv is None else argv)
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
    sys.exit(main())
