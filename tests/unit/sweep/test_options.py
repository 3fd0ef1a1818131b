"""``nnemu sweep``'s options that are refused before anything runs."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from tests.commands import run_cli
from tests.unit.sweep.sweeps import write


def test_dask_engine_without_dask_says_how_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without distributed, --engine dask exits 2 naming the extra, and runs nothing."""
    monkeypatch.setattr("nnemu.sweep._command.dask_available", lambda: False)
    out = tmp_path / "out"
    code, _, err = run_cli("sweep", str(write(tmp_path)), "--engine", "dask", "--out", str(out))
    assert (code, err) == (2, "--engine dask needs Dask: pip install 'nnemu[dask]'\n")
    assert not out.exists()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--address", "tcp://127.0.0.1:8786"], "--address: only with --engine dask\n"),
        (["--workers", "0"], "--workers: expected a number of processes >= 1, got 0\n"),
    ],
)
def test_contradictory_options_exit_2(tmp_path: Path, options: list[str], message: str) -> None:
    """An --address without Dask, or no workers, is one line on stderr and exit 2."""
    out = tmp_path / "out"
    code, _, err = run_cli("sweep", str(write(tmp_path)), "--out", str(out), *options)
    assert (code, err) == (2, message)
    assert not out.exists()


def test_an_out_path_that_is_a_file_is_refused(tmp_path: Path) -> None:
    """--out naming an existing file is refused before the sweep starts."""
    (tmp_path / "file").write_text("")
    code, _, err = run_cli("sweep", str(write(tmp_path)), "--out", str(tmp_path / "file"))
    assert code == 2
    assert "cannot write the results" in err


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc")
def test_an_out_directory_the_system_refuses_is_named_first(tmp_path: Path) -> None:
    """--out where no directory can be made (/proc, also for root) is one line, exit 2, no run."""
    code, out, err = run_cli("sweep", str(write(tmp_path)), "--out", "/proc/nnemu-sweep")
    assert (code, out) == (2, "")
    assert err == "/proc/nnemu-sweep: cannot write the results: No such file or directory\n"


def test_a_results_file_that_cannot_be_written_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk under results.jsonl names that file (it said "standard output"), exit 2."""

    def full(_fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr("nnemu.sweep._results.os.fsync", full)
    out = tmp_path / "out"
    code, _, err = run_cli("sweep", str(write(tmp_path)), "--out", str(out), "--workers", "1")
    assert code == 2
    assert err.endswith(
        f"{out / 'results.jsonl'}: cannot write the results: No space left on device\n"
    )
    assert "standard output" not in err


def test_a_results_file_that_is_a_device_is_refused(tmp_path: Path) -> None:
    """results.jsonl that is a device (/dev/zero) is refused, not read until memory runs out."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.jsonl").symlink_to(os.devnull)
    code, _, err = run_cli("sweep", str(write(tmp_path)), "--out", str(out), "--workers", "1")
    assert code == 2
    assert err == f"{out / 'results.jsonl'}: expected a regular file of a sweep\n"
