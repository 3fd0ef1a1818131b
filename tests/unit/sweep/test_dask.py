"""The Dask engine: a LocalCluster, and a real scheduler with two workers on 127.0.0.1."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.commands import run_cli
from tests.unit.sweep.sweeps import write

pytestmark = pytest.mark.slow
"""A Dask cluster started per test."""

pytest.importorskip("distributed")
pq = pytest.importorskip("pyarrow.parquet")

ROOT = Path(__file__).resolve().parents[3]
_START_TIMEOUT_S = 60.0


@contextlib.contextmanager
def dask_cluster(tmp_path: Path, workers: int = 2) -> Iterator[str]:
    """``dask scheduler`` and ``dask worker`` processes on 127.0.0.1; the scheduler's address."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    scheduler_file = tmp_path / "scheduler.json"
    dask = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
    processes = [
        subprocess.Popen(
            [
                *dask,
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--no-dashboard",
                "--scheduler-file",
                str(scheduler_file),
            ],
            env=env,
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    ]
    try:
        deadline = time.monotonic() + _START_TIMEOUT_S
        while not scheduler_file.exists():
            assert time.monotonic() < deadline, "the Dask scheduler did not start"
            time.sleep(0.1)
        time.sleep(0.2)
        address = json.loads(scheduler_file.read_text())["address"]
        for index in range(workers):
            processes.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "distributed.cli.dask_worker",
                        address,
                        "--nthreads",
                        "1",
                        "--no-dashboard",
                        "--name",
                        f"w{index}",
                        "--local-directory",
                        str(tmp_path / f"w{index}"),
                    ],
                    env=env,
                    cwd=tmp_path,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        import distributed

        with distributed.Client(address, timeout=_START_TIMEOUT_S) as client:
            client.wait_for_workers(workers, timeout=_START_TIMEOUT_S)
        yield address
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in reversed(processes):
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def test_a_running_scheduler_gives_the_local_engines_results(tmp_path: Path) -> None:
    """Against a scheduler and 2 workers, the table and summary are the local engine's bytes."""
    experiment = write(tmp_path)
    assert (
        run_cli("sweep", str(experiment), "--out", str(tmp_path / "local"), "--workers", "2")[0]
        == 0
    )
    with dask_cluster(tmp_path) as address:
        code, _, err = run_cli(
            "sweep",
            str(experiment),
            "--out",
            str(tmp_path / "dask"),
            "--engine",
            "dask",
            "--address",
            address,
        )
    assert code == 0, err
    for name in ("results.parquet", "summary.txt"):
        assert (tmp_path / "local" / name).read_bytes() == (tmp_path / "dask" / name).read_bytes()


def test_a_local_cluster_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--engine dask without --address runs a LocalCluster, with no scratch files in the cwd."""
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    experiment = write(tmp_path)
    code, out, err = run_cli("sweep", str(experiment), "--engine", "dask", "--workers", "2")
    assert code == 0, err
    assert "12 ok, 0 failed, 0 crashed" in out
    assert sorted(os.listdir(work)) == ["exp.sweep"]
    assert sorted(os.listdir(work / "exp.sweep")) == [
        "experiment.yaml",
        "results.jsonl",
        "results.parquet",
        "summary.txt",
    ]


def test_a_local_cluster_starts_when_port_8787_is_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No dashboard unless asked: the scheduler's HTTP server takes a free port, so a second
    sweep (or a notebook's Dask on 8787) gives no "Port 8787 is already in use" warning."""
    monkeypatch.chdir(tmp_path)
    experiment = write(tmp_path)
    with contextlib.ExitStack() as stack:
        taken = stack.enter_context(socket.socket())
        with contextlib.suppress(OSError):  # already taken: what this test needs anyway
            taken.bind(("", 8787))
            taken.listen()
        code, out, err = run_cli("sweep", str(experiment), "--engine", "dask", "--workers", "2")
    assert code == 0, err
    assert "12 ok, 0 failed, 0 crashed" in out
    assert "8787" not in err


def test_an_unreachable_scheduler_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An address with no scheduler is one line on stderr and exit 2, not a traceback."""
    monkeypatch.setattr("nnemu.sweep._engines.CONNECT_TIMEOUT_S", 1.0)
    code, _, err = run_cli(
        "sweep",
        str(write(tmp_path)),
        "--out",
        str(tmp_path / "out"),
        "--engine",
        "dask",
        "--address",
        "tcp://127.0.0.1:1",
    )
    assert code == 2
    assert err.startswith("--address tcp://127.0.0.1:1: cannot reach a Dask scheduler")


def test_a_variant_that_kills_its_dask_worker_is_crashed_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a LocalCluster, only the variant whose worker dies is 'crashed'; the others run."""
    from nnemu.sweep import load_experiment

    victim = load_experiment(write(tmp_path)).variants()[4].key
    monkeypatch.setenv("NNEMU_SWEEP_TEST_CRASH", victim)
    out = tmp_path / "out"
    code, text, err = run_cli(
        "sweep", str(write(tmp_path)), "--out", str(out), "--engine", "dask", "--workers", "2"
    )
    assert code == 0, err
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(row["status"] for row in rows) == ["crashed"] + ["ok"] * 11
    assert next(row["variant"] for row in rows if row["status"] == "crashed") == victim
    assert "11 ok, 0 failed, 1 crashed" in text
