"""Running ``nnemu`` in-process, as a user runs it from a shell; import it as ``tests.commands``.

Used by the CLI, replay and pictures tests.
"""

from __future__ import annotations

import io
import sys

from nnemu.cli import main


def run_cli(*argv: str, stdin: str = "") -> tuple[int, str, str]:
    """Run ``nnemu ARGV`` with ``stdin`` as its standard input; return (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdin
    sys.stdin = io.StringIO(stdin)
    try:
        code = main(list(argv), out=out, err=err)
    finally:
        sys.stdin = saved
    return code, out.getvalue(), err.getvalue()
