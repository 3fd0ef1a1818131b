"""docs/cli.md's exit-code table lists exactly the codes of ``nnemu.errors.ExitCode``."""

from __future__ import annotations

import re
from pathlib import Path

from nnemu.errors import ExitCode

CLI_MD = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def _documented_codes() -> set[int]:
    text = CLI_MD.read_text(encoding="utf-8")
    table = text.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    return {int(code) for code in re.findall(r"^\| (\d+) \|", table, flags=re.MULTILINE)}


def test_exit_code_table_matches_exit_code_enum() -> None:
    """Every ExitCode member has a row in docs/cli.md's table, and every row is a member."""
    assert _documented_codes() == {int(code) for code in ExitCode}
