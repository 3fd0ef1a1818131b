"""Running ``nnemu`` in-process, as a user runs it from a shell; import it as ``tests.commands``.

Used by the CLI, replay and pictures tests; ``run_parse`` by the parser's and the golden tests.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

from nnemu.cli import main
from nnemu.parser import run_parse_command


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


def run_parse(
    path: str | Path,
    *,
    as_json: bool = False,
    print_detail: bool = False,
    include_incomplete: bool = False,
) -> tuple[int, str, str]:
    """Run ``nnemu parse PATH`` through ``run_parse_command``; return (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    code = run_parse_command(
        str(path),
        as_json=as_json,
        per_execution=False,
        total_times=False,
        print_detail=print_detail,
        stdout=out,
        stderr=err,
        include_incomplete=include_incomplete,
    )
    return code, out.getvalue(), err.getvalue()
