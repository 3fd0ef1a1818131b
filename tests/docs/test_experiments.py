"""docs/experiments.md's "Comparing runs" walk-through (reports, then two sweeps) runs and prints
what it shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.test_tutorial import REPO, Command, check_steps, extract_steps
from tests.docs.test_tutorial import _workdir as _workdir  # the `workdir` fixture

EXPERIMENTS = REPO / "docs" / "experiments.md"


def _section(markdown: str, title: str) -> str:
    """The text of the ``## title`` section, up to the next level-2 heading."""
    start = markdown.index(f"\n## {title}\n")
    end = markdown.find("\n## ", start + 1)
    return markdown[start : end if end != -1 else len(markdown)]


def test_comparing_runs_commands_print_what_they_show(workdir: Path) -> None:
    """Each console command of "Comparing runs" exits as shown (the gate: 1) and prints its lines."""
    steps = extract_steps(_section(EXPERIMENTS.read_text(), "Comparing runs"))
    commands = [step for step in steps if isinstance(step, Command)]
    assert [c.text.split()[1] for c in commands] == [
        *("run", "run", "compare", "run", "compare"),
        *("sweep", "sweep", "compare"),
    ]
    assert commands[4].exit_code == 1
    assert commands[-1].exit_code == 1
    problems = check_steps(steps, workdir, "docs/experiments.md")
    assert not problems, "\n\n".join(problems)


pytestmark = pytest.mark.slow
"""Every command of docs/experiments.md run as shown (replications, compare).  In the slow tier (pytest -m slow; CI runs it)."""
