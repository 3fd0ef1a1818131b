"""Compile the parser's state machine (``_engine.py``) to C with mypyc: parsing ~1.4x faster.

    python -m nnemu.parser._build     # needs mypy (the ``fast`` extra) and a C compiler

Writes ``nnemu/parser/_cengine*.so`` beside the sources; ``nnemu.parser._compile``
says when it is used (only while ``_engine.py`` and what it imports are the sources it was built from).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from nnemu.parser._compile import COMPILED, HERE, SOURCE, compiled_engine, source_crc


def build(target: Path = HERE) -> list[Path]:
    """Compile ``_engine.py`` with mypyc and put the extension modules in ``target``.

    Returns the files written.

    Raises:
        RuntimeError: mypyc is missing or the build failed (its output is in the message).
    """
    package_root = HERE.parent
    with tempfile.TemporaryDirectory(prefix="nnemu-mypyc-") as tmp:
        tree = Path(tmp) / "nnemu"
        shutil.copytree(
            package_root, tree, ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyd")
        )
        text = SOURCE.read_text(encoding="utf-8")
        copy = tree / "parser" / f"{COMPILED}.py"
        copy.write_text(
            text + f"\n\nSOURCE_CRC: Final = {source_crc()}\n"
            '"""CRC-32 of the sources this module was compiled from (_compile.SOURCES)."""\n',
            encoding="utf-8",
        )
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "mypyc",
                "--ignore-missing-imports",
                "--follow-imports=silent",
                f"nnemu/parser/{COMPILED}.py",
            ],
            cwd=tmp,
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise RuntimeError(f"mypyc failed:\n{result.stdout}{result.stderr}")
        written = []
        for built in sorted((tree / "parser").glob(f"{COMPILED}*")):
            if built.suffix in (".so", ".pyd"):
                destination = target / built.name
                # A new file renamed over the old one: a process that has the old
                # module loaded keeps its (unlinked) file intact.
                partial = target / f".{built.name}.partial"
                try:
                    shutil.copyfile(built, partial)
                    os.replace(partial, destination)
                except OSError:
                    partial.unlink(missing_ok=True)
                    raise
                written.append(destination)
        if not written:
            raise RuntimeError(f"mypyc wrote no extension module:\n{result.stdout}")
        return written


def main() -> int:
    """Build the compiled engine; print what was written (exit 1 with mypyc's output on failure)."""
    try:
        written = build()
    except RuntimeError as err:
        sys.stderr.write(f"nnemu: error: {err}\n")
        return 1
    except OSError as err:
        sys.stderr.write(f"nnemu: error: cannot write the compiled engine: {err}\n")
        return 1
    for path in written:
        sys.stdout.write(f"wrote {path}\n")
    if compiled_engine() is None:
        sys.stderr.write("nnemu: error: the compiled engine does not load\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
