"""A reader that stops early (``| head``) ends every command quietly with exit 141."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nnemu import run
from nnemu.scenario import load_scenario
from nnemu.tracer import open_trace_writer
from tests.commands import ROOT, start_nnemu

SCENARIOS = ROOT / "scenarios"


@pytest.fixture(scope="module")
def big_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A trace whose query output fills more than a pipe's buffer."""
    path = tmp_path_factory.mktemp("pipes") / "big.html"
    run(load_scenario(SCENARIOS / "lstm_bursts.yaml"), sinks=[open_trace_writer(path)])
    return path


def _head(argv: list[str], cwd: Path, stdin: str = "") -> tuple[int, str]:
    """Run ``nnemu ARGV | head -1``: read one line, close the pipe; (exit code, stderr)."""
    commands = cwd / "stdin.txt"
    commands.write_text(stdin, encoding="utf-8")
    with commands.open("rb") as source:
        process = start_nnemu(
            *argv, stdin=source, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd
        )
    assert process.stdout is not None
    assert process.stderr is not None
    try:
        assert process.stdout.readline()
        process.stdout.close()
        err = process.stderr.read()
        process.wait(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stderr.close()
    return process.returncode, err.decode()


@pytest.mark.parametrize(
    ("argv", "stdin"),
    [
        (["query", "{trace}", "SELECT name FROM slice"], ""),
        (["query", "{trace}", "SELECT name FROM slice", "--csv"], ""),
        (["run", str(SCENARIOS / "quickstart.yaml"), "--step"], "ni\n" * 5000),
        (["demo", "deadlines", "--out", "{tmp}"], ""),
    ],
    # Not replay: its output (the plan, a summary) is a few KB, written whole into the pipe
    # before ``head`` reads when stdout is buffered (exit 0, as ``seq 3 | head -1``);
    # test_a_reader_gone_before_the_first_write_is_141_too checks it.
    ids=["query", "query-csv", "run-step", "demo"],
)
def test_closed_pipe_ends_quietly(
    big_trace: Path, tmp_path: Path, argv: list[str], stdin: str
) -> None:
    """``nnemu ... | head -1`` exits 141 with nothing on stderr, never a BrokenPipeError traceback."""
    argv = [a.format(trace=big_trace, tmp=tmp_path) for a in argv]
    code, err = _head(argv, tmp_path, stdin)
    assert (code, err) == (141, "")


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two reports of quickstart (seeds 1 and 2), for ``nnemu compare``."""
    where = tmp_path_factory.mktemp("reports")
    paths = (where / "a.json", where / "b.json")
    for seed, path in enumerate(paths, 1):
        report = run(load_scenario(SCENARIOS / "quickstart.yaml"), seed=seed)
        path.write_text(report.to_json(), encoding="utf-8")
    return paths


_EXPERIMENT = """\
scenario: {scenario}
set: {{duration_ms: 200}}
vary: {{devices.npu.scheduler: [fifo, global_priority]}}
metrics: [apps.camera.latency_ms.p99]
"""


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["--version"],
        ["run", "--help"],
        ["parse", "{trace}"],
        ["run", str(SCENARIOS / "two_apps_one_npu.yaml")],
        pytest.param(  # (a forkserver pool started: ~30 s under load)
            ["sweep", "{tmp}/exp.yaml", "--out", "{tmp}/out", "--workers", "1"],
            marks=pytest.mark.slow,
        ),
        ["query", "{trace}", "SELECT count(*) FROM slice"],
        ["compare", "{a}", "{b}"],
        ["replay", "-n", "{trace}"],
        ["verify", str(SCENARIOS / "quickstart.yaml")],
    ],
    ids=[
        "help",
        "version",
        "run-help",
        "parse",
        "run",
        "sweep",
        "query",
        "compare",
        "replay",
        "verify",
    ],
)
def test_a_reader_gone_before_the_first_write_is_141_too(
    big_trace: Path, reports: tuple[Path, Path], tmp_path: Path, argv: list[str]
) -> None:
    """Every command, its short outputs (``--help``, a summary) too, exits 141 with nothing on
    stderr when its stdout's reader has gone, also with Python's stdout buffered (the default:
    the text is written at exit, where Python would print "Exception ignored")."""
    (tmp_path / "exp.yaml").write_text(
        _EXPERIMENT.format(scenario=SCENARIOS / "two_apps_one_npu.yaml"), encoding="utf-8"
    )
    a, b = reports
    argv = [arg.format(trace=big_trace, tmp=tmp_path, a=a, b=b) for arg in argv]
    env = {key: value for key, value in os.environ.items() if key != "PYTHONUNBUFFERED"}
    read, write = os.pipe()
    os.close(read)
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "nnemu.cli", *argv],
            stdout=write,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            cwd=tmp_path,
            env={**env, "PYTHONPATH": str(ROOT)},
        )
    finally:
        os.close(write)
    _, err = process.communicate(timeout=120)
    assert (process.returncode, err.decode()) == (141, "")
