"""``nnemu verify``: run a scenario, parse its trace, compare with the ground truth."""

from __future__ import annotations

from typing import TextIO


def run_verify_command(
    scenario: str, *, seed: int | None, trace: str | None, stdout: TextIO, stderr: TextIO
) -> int:
    """Exit code of ``nnemu verify`` (being built: issue 4)."""
    stderr.write("nnemu verify: not available in this build yet\n")
    return 2
