"""Running ``nnemu`` in-process, as a user runs it from a shell; import it as ``tests.commands``.

Used by the CLI, replay and pictures tests; ``run_parse`` by the parser's and the golden tests;
``run_query`` by the query's; ``start_nnemu`` (a separate process) by the sweep's Ctrl-C and
the pipe tests.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import nnemu
from nnemu.cli import main
from nnemu.parser import run_parse_command
from nnemu.query import run_query_command

ROOT = Path(__file__).resolve().parents[1]
"""The checkout the tests are in."""
SITE = Path(nnemu.__file__).resolve().parents[1]
"""Where the ``nnemu`` the tests run is: the checkout (an editable install) or an installed wheel's
site-packages."""


def start_nnemu(*argv: str, **popen: Any) -> subprocess.Popen[Any]:
    """Start ``python -m nnemu.cli ARGV`` on the nnemu the tests import; ``popen`` goes to ``Popen``."""
    env = {**os.environ, "PYTHONPATH": str(SITE)}
    return subprocess.Popen([sys.executable, "-m", "nnemu.cli", *argv], env=env, **popen)


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


def run_query(
    trace: str | Path,
    sql: str | None = None,
    *,
    stdin: str = "",
    as_csv: bool = False,
    as_json: bool = False,
    db: str | Path | None = None,
) -> tuple[int, str, str]:
    """Run ``nnemu query TRACE [SQL]`` through ``run_query_command``; return (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    code = run_query_command(
        str(trace),
        sql,
        as_csv=as_csv,
        as_json=as_json,
        db=None if db is None else str(db),
        stdin=io.StringIO(stdin),
        stdout=out,
        stderr=err,
    )
    return code, out.getvalue(), err.getvalue()


TRACE_PROCESSOR_BESIDE = Path(__file__).resolve().parents[2] / "shared/tools/trace_processor_shell"
"""Where the team's checkouts (and CI) keep Perfetto's trace processor: ``shared/`` beside the clone."""


def trace_processor_shell() -> str:
    """Perfetto's ``trace_processor_shell`` to compare with, or skip the calling test.

    ``NNEMU_TRACE_PROCESSOR`` names it; otherwise ``../shared/tools/trace_processor_shell``
    beside the checkout is used when present. A binary that does not start here (it needs
    Debian's ``libprotobuf32``) skips too, saying why.
    """
    import os
    import subprocess

    import pytest

    shell = os.environ.get("NNEMU_TRACE_PROCESSOR") or (
        str(TRACE_PROCESSOR_BESIDE) if TRACE_PROCESSOR_BESIDE.exists() else ""
    )
    if not shell or not os.access(shell, os.X_OK):
        pytest.skip(
            "needs Perfetto's trace_processor_shell (a Perfetto release, or built from its"
            " source): set NNEMU_TRACE_PROCESSOR to its path"
        )
    probe = subprocess.run([shell, "--version"], capture_output=True, text=True, timeout=60)
    if probe.returncode != 0:
        pytest.skip(f"{shell} does not run here: {probe.stderr.strip()[-200:]}")
    return shell
