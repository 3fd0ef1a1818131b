"""The example in docs/python-api.md runs and prints exactly the output shown under it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "python-api.md"


def test_python_api_example_prints_what_the_page_shows(tmp_path: Path) -> None:
    """The page's Python block, run in a directory with ``scenarios``, prints its text block."""
    pytest.importorskip("pandas", reason="the example needs pandas: pip install 'nnemu[pandas]'")
    pytest.importorskip("perfetto", reason="reading a .pftrace needs the perfetto extra")
    match = re.search(r"```python\n(.*?)```\n\nprints\n\n```text\n(.*?)```", DOC.read_text(), re.S)
    assert match, "docs/python-api.md has a python block followed by its output"
    code, expected = match.groups()
    (tmp_path / "scenarios").symlink_to(REPO / "scenarios")
    (tmp_path / "example.py").write_text(code, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), *sys.path]))}
    done = subprocess.run(
        [sys.executable, "example.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == expected
