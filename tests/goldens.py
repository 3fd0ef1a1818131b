"""The golden-file check shared by the golden and diff tests (tests/golden, tests/diff).

``check_golden(actual, expected_path, update)`` compares text with an expected
file; a mismatch fails the test with a unified diff (expected → actual), and
with ``pytest --update-goldens`` (the ``update_goldens`` fixture of
tests/conftest.py) the expected file is rewritten instead.
"""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest


def check_golden(actual: str, expected_path: Path, update: bool) -> None:
    """Fail with a unified diff unless ``actual`` equals the file; with ``update``, write it."""
    if update:
        expected_path.write_text(actual, encoding="utf-8")
        return
    expected = expected_path.read_text(encoding="utf-8")
    if actual != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True),
                actual.splitlines(keepends=True),
                fromfile=str(expected_path),
                tofile="actual",
            )
        )
        pytest.fail(f"output differs from {expected_path.name}:\n{diff}", pytrace=False)
