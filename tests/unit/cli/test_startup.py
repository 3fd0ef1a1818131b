"""The readers' commands (parse, query, compare) load only what they use (start-up time is import time)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
OMR1 = REPO / "tests/data/omr1.html"
COMPARE = REPO / "tests/golden/compare"

_HEAVY = (
    "trio",
    "structlog",
    "hypothesis",
    "matplotlib",
    "yaml",
    "apsw",
    "nnemu.sim",
    "nnemu._emulator",
)
"""Packages a reader command has no use for: the emulator's, the tests', the pictures', and
apsw (only a query calling a table function needs it)."""

_CHECK = """
import io, sys
from nnemu.cli import main
code = main(sys.argv[1:], out=io.StringIO(), err=io.StringIO())
heavy = {heavy!r}
loaded = sorted(m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in heavy))
print(code, *loaded)
"""


def _loaded_after(*argv: str) -> list[str]:
    """Run ``nnemu ARGV`` in a fresh interpreter; its exit code and the heavy modules it loaded."""
    done = subprocess.run(
        [sys.executable, "-c", _CHECK.format(heavy=_HEAVY), *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        cwd=REPO,
    )
    return done.stdout.split()


@pytest.mark.parametrize(
    "argv",
    [
        ("parse", str(OMR1)),
        ("parse", "--json", str(OMR1)),
        ("query", str(OMR1), "select count(*) from slice"),
        ("parse", "no-such-file.html"),
        ("compare", str(COMPARE / "reports/a.json"), str(COMPARE / "sweeps/b")),
    ],
    ids=["parse", "parse-json", "query", "parse-missing", "compare"],
)
def test_reader_commands_load_no_emulator(argv: tuple[str, ...]) -> None:
    """parse, query and compare finish without importing trio, structlog, the emulator or the test tools."""
    code, *loaded = _loaded_after(*argv)
    assert code in ("0", "2")
    assert loaded == []


def test_logging_options_still_configure_structlog_for_parse() -> None:
    """Asking for logs (``--log-format json``) on parse still sets up structlog, as for every command."""
    _code, *loaded = _loaded_after("--log-format", "json", "parse", str(OMR1))
    assert "structlog" in loaded


def test_help_loads_no_command_modules() -> None:
    """``nnemu --help`` builds the option parser only: no command module is imported."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys\nfrom nnemu.cli import console_main\ntry:\n    console_main()\n"
            "except SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith('nnemu.')), file=sys.stderr)",
            "--help",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        cwd=REPO,
    )
    assert "parse" in done.stdout
    assert done.stderr.strip() == "['nnemu.cli', 'nnemu.errors']"
