"""A reader that stops early (``| head``) ends every command quietly with exit 141."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from nnemu import run
from nnemu.scenario import load_scenario
from nnemu.tracer import open_trace_writer
from tests.commands import ROOT, start_nnemu

SCENARIOS = ROOT / "scenarios"


@pytest.fixture(scope="module")
def big_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A trace whose query, parse and replay output fills more than a pipe's buffer."""
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
        (["replay", "-n", "{trace}"], ""),
        (["run", str(SCENARIOS / "quickstart.yaml"), "--step"], "ni\n" * 5000),
        (["demo", "deadlines", "--out", "{tmp}"], ""),
    ],
    ids=["query", "query-csv", "replay", "run-step", "demo"],
)
def test_closed_pipe_ends_quietly(
    big_trace: Path, tmp_path: Path, argv: list[str], stdin: str
) -> None:
    """``nnemu ... | head -1`` exits 141 with nothing on stderr, never a BrokenPipeError traceback."""
    argv = [a.format(trace=big_trace, tmp=tmp_path) for a in argv]
    code, err = _head(argv, tmp_path, stdin)
    assert (code, err) == (141, "")
