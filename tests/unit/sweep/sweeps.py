"""Small experiments for the sweep tests; import it as ``tests.unit.sweep.sweeps``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

SCENARIO = Path(__file__).resolve().parents[3] / "scenarios" / "two_apps_one_npu.yaml"

SMALL = f"""\
scenario: {SCENARIO}
set:
  duration_ms: 400
  apps.indexer.workload: {{kind: poisson, rate_hz: 5}}
vary:
  devices.npu.scheduler: [fifo, global_priority]
  apps.indexer.workload.rate_hz: {{range: [10, 60], steps: 2}}
replications: 3
metrics: [apps.camera.latency_ms.p99, devices.npu.busy_fraction]
"""
"""4 points x 3 replications of a 400 ms two-app run: 12 variants, a fraction of a second each."""


SHARES_SMALL_SWEEP = pytest.mark.xdist_group("small_sweep")
"""The mark of a test using the ``small_sweep`` fixture: one xdist group, so that one pytest
worker runs that sweep rather than each."""


def write(tmp_path: Path, text: str = SMALL, name: str = "exp.yaml") -> Path:
    """Write an experiment file into ``tmp_path``; its path."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def results(directory: Path) -> list[dict[str, Any]]:
    """The rows of ``directory``/results.jsonl, in file order."""
    lines = (directory / "results.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def copy_small_sweep(small_sweep: tuple[Path, str], tmp_path: Path, out: str = "out") -> Path:
    """A copy of the shared sweep of ``SMALL`` (the ``small_sweep`` fixture) as
    ``tmp_path``/``out``, with its experiment file as ``tmp_path``/exp.yaml: the sweep's
    results without running it again."""
    where, _ = small_sweep
    shutil.copyfile(where / "exp.yaml", tmp_path / "exp.yaml")
    shutil.copytree(where / "out", tmp_path / out)
    return tmp_path / out
