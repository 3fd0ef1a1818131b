"""The sweep tests' shared sweep: ``SMALL`` run once by 2 workers, copied by each test that
reads, resumes or plots it (``copy_small_sweep``) instead of running it again."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.commands import run_cli
from tests.unit.sweep.sweeps import write


@pytest.fixture(scope="session", name="small_sweep")
def _small_sweep(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The directory holding ``exp.yaml`` (``SMALL``) and its sweep's directory ``out``, and
    what the sweep printed."""
    where = tmp_path_factory.mktemp("small")
    code, out, err = run_cli(
        "sweep", str(write(where)), "--out", str(where / "out"), "--workers", "2"
    )
    assert code == 0, err
    return where, out
