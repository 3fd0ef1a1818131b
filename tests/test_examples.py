"""Every ``examples/*.py`` runs and prints exactly its ``examples/<name>.out``.

Each example is run with this interpreter from the repository root; its stdout is compared
with the golden file and a failure shows a unified diff. ``pytest --update-goldens``
rewrites the ``.out`` files (review that diff like code).
"""

from __future__ import annotations

import difflib
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((REPO / "examples").glob("*.py"))
NEEDS = {"latency_per_app": ("pandas", "matplotlib")}
"""The optional packages (extras) an example imports: it is skipped without them."""


def test_there_are_examples() -> None:
    """The examples directory holds the documented examples."""
    names = {path.stem for path in EXAMPLES}
    assert {
        "build_scenario_in_code",
        "custom_scheduler",
        "deadline_property",
        "latency_per_app",
        "parse_a_device_trace",
    } <= names


@pytest.mark.parametrize("example", EXAMPLES, ids=[path.stem for path in EXAMPLES])
def test_example_output_matches_its_golden(example: Path, update_goldens: bool) -> None:
    """The example exits 0 and its stdout equals the checked-in ``.out`` file."""
    for module in NEEDS.get(example.stem, ()):
        pytest.importorskip(module, reason=f"examples/{example.name} needs {module}")
    source = example.read_text()
    assert source.lstrip().startswith('"""'), "each example opens with a docstring"
    proc = subprocess.run(
        [sys.executable, str(example)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    golden = example.with_suffix(".out")
    if update_goldens:
        golden.write_text(proc.stdout)
        return
    assert golden.exists(), f"{golden.name} missing: run pytest --update-goldens"
    expected = golden.read_text()
    if proc.stdout != expected:
        diff = difflib.unified_diff(
            expected.splitlines(keepends=True),
            proc.stdout.splitlines(keepends=True),
            fromfile=f"examples/{golden.name}",
            tofile="actual stdout",
        )
        pytest.fail("".join(diff))
