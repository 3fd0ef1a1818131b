"""A sweep's workers import the nnemu the command runs, whatever directory it runs in."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nnemu.sweep import load_experiment
from tests.commands import ROOT, run_cli
from tests.unit.sweep.sweeps import SCENARIO

_MAIN = "import sys; sys.path.remove(''); from nnemu.cli import console_main; console_main()"
"""``nnemu ARGV`` as the console script runs it: the current directory not on sys.path."""


def _sweep_in(directory: Path, experiment: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _MAIN, "sweep", str(experiment), "--workers", "1"],
        cwd=directory,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.slow  # a whole nnemu process and its worker pool started
def test_a_folder_named_nnemu_in_the_current_directory_is_not_imported(tmp_path: Path) -> None:
    """From a directory holding an ``nnemu`` package (a checkout's parent), every worker
    imported that one and every variant crashed, exit 0."""
    (tmp_path / "nnemu").mkdir()
    (tmp_path / "nnemu" / "__init__.py").write_text("", encoding="utf-8")
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(
        f"scenario: {SCENARIO}\nvary:\n  duration_ms: [50, 60]\nmetrics: [virtual_ms]\n",
        encoding="utf-8",
    )
    done = _sweep_in(tmp_path, experiment)
    assert done.returncode == 0, done.stderr
    assert "2 of 2 variants done: 2 ok, 0 failed, 0 crashed" in done.stdout


def test_a_sweep_whose_every_run_crashed_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When no run's worker lived to give a result the sweep says so and exits 1, not 0."""
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(
        f"scenario: {SCENARIO}\nvary:\n  duration_ms: [50, 60]\nmetrics: [virtual_ms]\n",
        encoding="utf-8",
    )
    keys = [variant.key for variant in load_experiment(experiment).variants()]
    monkeypatch.setenv("NNEMU_SWEEP_TEST_CRASH", ",".join(keys))
    out = tmp_path / "out"
    code, _, err = run_cli("sweep", str(experiment), "--out", str(out), "--workers", "1")
    assert code == 1
    assert f"every run crashed (its worker process died): see the error column of {out}" in err
