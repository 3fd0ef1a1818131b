"""Ctrl-C during a sweep: exit 130, no traceback, whole lines only, and --resume finishes it."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.commands import ROOT, start_nnemu
from tests.unit.sweep.sweeps import SCENARIO, results, write

LONGER = f"""\
scenario: {SCENARIO}
vary:
  apps.camera.workload.period_ms: {{range: [20, 60], steps: 20}}
replications: 5
metrics: [apps.camera.latency_ms.p99]
"""
"""100 variants of the 3 s scenario: a few seconds on two workers."""


def _nnemu(*argv: str) -> subprocess.Popen[str]:
    """Start ``nnemu ARGV`` in its own process group (as a terminal runs a command)."""
    return start_nnemu(
        *argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )


def _ctrl_c_once(process: subprocess.Popen[str], ready: Callable[[], bool]) -> str:
    """Wait (60 s at most) until ``ready()``, then SIGINT the process group as Ctrl-C does;
    the sweep must exit 130 without a traceback.  Its stderr."""
    deadline = time.monotonic() + 60
    while not ready():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "no result within 60 s"
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "Traceback" not in err
    return err


def test_ctrl_c_leaves_whole_lines_and_resume_finishes(tmp_path: Path) -> None:
    """SIGINT to the process group (as a terminal sends it) stops the sweep cleanly."""
    experiment = write(tmp_path, LONGER)
    out = tmp_path / "out"
    process = _nnemu("sweep", str(experiment), "--out", str(out), "--workers", "2")
    jsonl = out / "results.jsonl"
    err = _ctrl_c_once(process, lambda: jsonl.exists() and jsonl.stat().st_size > 0)
    assert "--resume" in err
    done = results(out)
    assert 0 < len(done) < 100
    assert jsonl.read_text().endswith("\n")
    resumed = _nnemu("sweep", str(experiment), "--out", str(out), "--workers", "2", "--resume")
    _, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    assert f"resuming: {len(done)} of 100 variants already done" in err
    rows = results(out)
    assert len(rows) == 100
    assert len({row["variant"] for row in rows}) == 100
    assert rows[: len(done)] == done


def test_sigterm_stops_like_ctrl_c_and_says_how_to_resume(tmp_path: Path) -> None:
    """SIGTERM (what a job scheduler sends) stops the sweep as Ctrl-C does: exit 143, whole
    lines, and the --resume line to finish it."""
    experiment = write(tmp_path, LONGER)
    out = tmp_path / "out"
    process = _nnemu("sweep", str(experiment), "--out", str(out), "--workers", "2")
    jsonl = out / "results.jsonl"
    deadline = time.monotonic() + 60
    while not (jsonl.exists() and jsonl.stat().st_size > 0):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "no result within 60 s"
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 143, err
    assert "Traceback" not in err
    done = results(out)
    assert err.endswith(
        f"interrupted by SIGTERM: {len(done)} of 100 variants are in {jsonl}; finish with: nnemu sweep "
        f"{experiment} --out {out} --resume\n"
    )
    assert jsonl.read_text().endswith("\n")


def test_ctrl_c_stops_a_local_dask_cluster_quietly(tmp_path: Path) -> None:
    """With --engine dask, SIGINT to the process group closes the LocalCluster: 130, no traceback."""
    pytest.importorskip("distributed")
    out = tmp_path / "out"
    process = _nnemu(
        "sweep",
        str(write(tmp_path, LONGER)),
        "--out",
        str(out),
        "--engine",
        "dask",
        "--workers",
        "2",
    )
    jsonl = out / "results.jsonl"
    _ctrl_c_once(process, lambda: jsonl.exists() and len(jsonl.read_text().splitlines()) > 1)
    assert all(line.startswith("{") for line in jsonl.read_text().splitlines())


def test_the_runs_diagnostics_stay_off_the_output(tmp_path: Path) -> None:
    """A sweep of runs whose driver dies prints its summary, not each run's warnings."""
    text = f"scenario: {ROOT / 'scenarios' / 'qos_driver_crash.yaml'}\nreplications: 2\nmetrics: [devices.npu.executions]\n"
    process = _nnemu(
        "sweep", str(write(tmp_path, text)), "--out", str(tmp_path / "o"), "--workers", "2"
    )
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert out.startswith("experiment ")
    assert "driver_died" not in out + err


def test_ctrl_c_while_the_pool_starts_a_worker_is_taken_once_it_started(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A Ctrl-C that lands while the pool starts its workers is taken once they are started,
    never in the middle: a half-started worker, unknown to the pool, outlived it and printed a
    traceback of its own."""
    import nnemu.sweep._engines as engines
    from nnemu.sweep._worker import Chunk, Job, nnemu_version

    started: list[bool] = []

    class Pool(engines.ProcessPoolExecutor):
        def submit(self, *args: Any, **kwargs: Any) -> Any:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C as the workers start
            future = super().submit(*args, **kwargs)
            started.append(True)
            return future

    monkeypatch.setattr(engines, "ProcessPoolExecutor", Pool)
    job = Job(key="a" * 16, point={}, replication=0, seed=1, overrides=("duration_ms=100",))
    chunk = Chunk(
        scenario_text=SCENARIO.read_text(),
        scenario_path=str(SCENARIO),
        version=nnemu_version(),
        jobs=(job,),
    )
    with pytest.raises(KeyboardInterrupt):
        engines.run_local([chunk], 1, lambda rows: None)
    assert started == [True]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_rows_are_appended_counts_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, signum: int
) -> None:
    """A signal that lands while a chunk's rows are written is taken once they are on disk
    and counted, so the interrupt message's count is the file's (it said 9 of a file of 12)."""
    import nnemu.sweep._results as results_module
    from nnemu.errors import Terminated
    from nnemu.sweep import load_experiment
    from nnemu.sweep._worker import nnemu_version

    def terminate(_signum: int, _frame: object) -> None:
        raise Terminated

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        experiment = load_experiment(write(tmp_path, LONGER))
        sweep = results_module.SweepDir(str(tmp_path / "out"), experiment, nnemu_version())
        sweep.open(resume=False)
        real_fsync = os.fsync

        def fsync_then_signal(fd: int) -> None:
            real_fsync(fd)
            os.kill(os.getpid(), signum)  # lands between the write and the count

        monkeypatch.setattr(results_module.os, "fsync", fsync_then_signal)
        row = {"variant": "a" * 16, "status": "ok"}
        with pytest.raises((KeyboardInterrupt, Terminated)):
            sweep.append([row])
        sweep.close()
        assert sweep.rows == [row]
        assert len((tmp_path / "out" / "results.jsonl").read_text().splitlines()) == 1
    finally:
        signal.signal(signal.SIGTERM, previous)


pytestmark = pytest.mark.slow
"""Sweeps in processes of their own, signalled mid-run.  In the slow tier (pytest -m slow; CI runs it)."""
