"""Ctrl-C and SIGTERM during ``nnemu run``, ``verify``, ``demo``, ``replay``: exit code, message, whole trace."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nnemu.parser import parse_file

pytestmark = pytest.mark.slow
"""Whole nnemu processes signalled at moments of their runs."""

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "scenarios" / "quickstart.yaml"

_UNBALANCED = ("still open", "no open section", "no closing </script>")


def _long_scenario(tmp_path: Path) -> Path:
    """Quickstart made to run for an hour of virtual time (many seconds of wall time)."""
    text = QUICKSTART.read_text(encoding="utf-8")
    text = text.replace("executions: 30}", "executions: 10000000}")
    text = text.replace("expect:", "duration_ms: 3600000\nexpect:")
    path = tmp_path / "long.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _signal_when_traced(
    args: list[str], trace: Path, signum: int, after_bytes: int
) -> tuple[int, str, str]:
    """Start ``nnemu *args``, send ``signum`` once ``trace`` holds ``after_bytes``; (code, out, err)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "nnemu.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        deadline = time.monotonic() + 60
        while not (trace.exists() and trace.stat().st_size >= after_bytes):
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the trace did not grow"
            time.sleep(0.02)
        process.send_signal(signum)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return process.returncode, out, err


def _interrupt(tmp_path: Path, trace: Path, signum: int, after_bytes: int) -> tuple[int, str, str]:
    """Start ``nnemu run``, send ``signum`` once the trace holds ``after_bytes``; (code, out, err)."""
    scenario = _long_scenario(tmp_path)
    report = tmp_path / "report.json"
    args = ["run", str(scenario), "--trace", str(trace), "--report", str(report)]
    return _signal_when_traced(args, trace, signum, after_bytes)


def _assert_well_formed(trace: Path) -> None:
    text = trace.read_text(encoding="utf-8")
    if trace.suffix == ".json":
        depth: dict[tuple[int, int], int] = {}
        for event in json.loads(text)["traceEvents"]:
            if event["ph"] in ("B", "E"):
                key = (event["pid"], event["tid"])
                depth[key] = depth.get(key, 0) + (1 if event["ph"] == "B" else -1)
                assert depth[key] >= 0, f"an E with no open section: {event}"
        assert depth
        assert set(depth.values()) == {0}
        return
    result = parse_file(trace)
    problems = [d.message for d in result.diagnostics if any(t in d.message for t in _UNBALANCED)]
    assert problems == []
    assert result.runs


@pytest.mark.parametrize(
    ("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"]
)
@pytest.mark.parametrize("suffix", [".html", ".txt", ".json"])
@pytest.mark.parametrize("after_bytes", [1, 200_000], ids=["early", "later"])
def test_a_signal_ends_the_run_cleanly(
    tmp_path: Path, signum: int, code: int, suffix: str, after_bytes: int
):
    """A signal mid-run exits 130/143 with a message, the summary, the report and a well-formed trace."""
    trace = tmp_path / f"trace{suffix}"
    returncode, out, err = _interrupt(tmp_path, trace, signum, after_bytes)
    name = signal.Signals(signum).name
    assert returncode == code, err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == f"interrupted by {name}; the trace so far is in {trace}"
    assert "scenario quickstart" in out
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert report["interrupted"] == name
    assert 0 < report["virtual_ms"] < 3_600_000
    _assert_well_formed(trace)


def test_sigterm_ends_a_replay_cleanly(tmp_path: Path):
    """SIGTERM during ``nnemu replay --realtime`` exits 143 with a message and valid JSON trace."""
    from nnemu import run
    from nnemu.scenario import load_scenario
    from nnemu.tracer import open_trace_writer

    recorded = tmp_path / "recorded.html"
    run(load_scenario(QUICKSTART), sinks=[open_trace_writer(recorded)])
    trace = tmp_path / "replayed.json"
    args = ["replay", str(recorded), "--realtime", "--trace", str(trace)]
    returncode, _, err = _signal_when_traced(args, trace, signal.SIGTERM, 1)
    assert returncode == 143, err
    assert err.strip().splitlines()[-1] == f"interrupted by SIGTERM; the trace so far is in {trace}"
    _assert_well_formed(trace)


# A signal raised from inside the run at a set virtual time: the command is certainly in
# the middle of its run when it arrives, however fast the machine.
_SIGNAL_AT = """
import signal
import sys

from nnemu.cli import console_main
from nnemu.sim import Kernel

at_ns, signum = int(sys.argv.pop(1)), signal.Signals[sys.argv.pop(1)]
run = Kernel.run


async def run_and_signal(self, *, stop_ns=None):
    self.call_at(at_ns, lambda: signal.raise_signal(signum))
    await run(self, stop_ns=stop_ns)


Kernel.run = run_and_signal
console_main()
"""

_LAST_MARK = re.compile(r"(\d+\.\d{6}): tracing_mark_write")


def _signalled_at(at_ns: int, signum: int, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``nnemu *args`` with ``signum`` raised when virtual time reaches ``at_ns`` (standard
    input at its end, as under a job runner)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-c", _SIGNAL_AT, str(at_ns), signal.Signals(signum).name, *args]
    return subprocess.run(
        command, capture_output=True, text=True, env=env, timeout=60, stdin=subprocess.DEVNULL
    )


def _last_mark_s(trace: Path) -> float:
    return max(float(ts) for ts in _LAST_MARK.findall(trace.read_text(encoding="utf-8")))


@pytest.mark.parametrize(
    ("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"]
)
def test_a_signal_ends_verify_cleanly(tmp_path: Path, signum: int, code: int):
    """A signal mid-run of ``nnemu verify`` exits 130/143 with one message, no verdict, a whole trace cut there."""
    trace = tmp_path / "verify.html"
    done = _signalled_at(500_000_000, signum, "verify", str(QUICKSTART), "--trace", str(trace))
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [f"interrupted by {signal.Signals(signum).name}"]
    assert "verify:" not in done.stdout  # a cut run is not compared
    _assert_well_formed(trace)
    assert 0.5 <= _last_mark_s(trace) < 0.51


@pytest.mark.parametrize(
    ("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"]
)
def test_a_signal_ends_the_demo_run_cleanly(tmp_path: Path, signum: int, code: int):
    """A signal during ``nnemu demo deadlines``' run exits 130/143 with one message and a whole trace cut there."""
    done = _signalled_at(20_000_000, signum, "demo", "deadlines", "--out", str(tmp_path))
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [f"interrupted by {signal.Signals(signum).name}"]
    assert "What happened" not in done.stdout  # no narration of a cut run
    trace = tmp_path / "nnemu-demo-deadlines.html"
    _assert_well_formed(trace)
    assert 0.02 <= _last_mark_s(trace) < 0.021


def test_ctrl_c_ends_a_long_verify_cleanly(tmp_path: Path):
    """Ctrl-C from outside, mid-way through a long ``nnemu verify``, exits 130 with a whole trace."""
    scenario = _long_scenario(tmp_path)
    trace = tmp_path / "verify.html"
    args = ["verify", str(scenario), "--trace", str(trace)]
    returncode, out, err = _signal_when_traced(args, trace, signal.SIGINT, 200_000)
    assert returncode == 130, err
    assert err.strip().splitlines() == ["interrupted by SIGINT"]
    assert "verify:" not in out
    _assert_well_formed(trace)
    assert _last_mark_s(trace) < 3600


def test_an_interrupted_run_writes_the_executions_that_finished(tmp_path: Path):
    """Ctrl-C mid-run still writes --executions: one row per execution finished by then."""
    scenario, table, report = _long_scenario(tmp_path), tmp_path / "x.csv", tmp_path / "r.json"
    args = ["run", str(scenario), "--executions", str(table), "--report", str(report)]
    result = _signalled_at(500_000_000, signal.SIGINT, *args)
    assert result.returncode == 130, result.stderr
    assert "Traceback" not in result.stderr
    camera = json.loads(report.read_text(encoding="utf-8"))["apps"]["camera"]
    rows = table.read_text(encoding="utf-8").splitlines()[1:]
    assert len(rows) == camera["completed"] + camera["failed"] > 10
    assert f"{len(rows)} executions written to {table}" in result.stdout
    assert max(float(row.split(",")[8]) for row in rows) <= 500  # result_ms


@pytest.mark.parametrize(
    ("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"]
)
@pytest.mark.parametrize("command", ["run --step", "replay"])
def test_a_stepped_run_names_the_signal_like_a_plain_run(
    tmp_path: Path, command: str, signum: int, code: int
):
    """``nnemu run --step`` and ``nnemu replay`` (whose stepper takes Ctrl-C) end on a signal
    with the words and exit code of a plain ``nnemu run``: "interrupted by SIGINT; the trace so
    far is in PATH", 130 (SIGTERM: 143)."""
    from nnemu import run
    from nnemu.scenario import load_scenario
    from nnemu.tracer import open_trace_writer

    trace = tmp_path / "cut.html"
    if command == "replay":
        recorded = tmp_path / "recorded.html"
        run(load_scenario(QUICKSTART), sinks=[open_trace_writer(recorded)])
        args = ["replay", str(recorded)]
    else:
        args = ["run", str(QUICKSTART), "--step"]
    report = tmp_path / "cut.json"
    done = _signalled_at(500_000_000, signum, *args, "--trace", str(trace), "--report", str(report))
    name = signal.Signals(signum).name
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        f"interrupted by {name}; the trace so far is in {trace}"
    )
    _assert_well_formed(trace)
    assert json.loads(report.read_text(encoding="utf-8"))["interrupted"] == name


@pytest.mark.parametrize(
    ("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"]
)
@pytest.mark.parametrize("command", ["run --step", "replay -m"])
def test_a_signal_at_the_prompt_ends_the_run_at_once(
    tmp_path: Path, command: str, signum: int, code: int
):
    """A Ctrl-C or SIGTERM while the prompt waits for input nobody types ends the stepped run at
    once, with the report of the run so far marked "interrupted" and a whole trace."""
    trace, report = tmp_path / "cut.html", tmp_path / "cut.json"
    target = [str(QUICKSTART), "--step"] if command == "run --step" else None
    if target is None:
        from nnemu import run
        from nnemu.scenario import load_scenario
        from nnemu.tracer import open_trace_writer

        recorded = tmp_path / "recorded.html"
        run(load_scenario(QUICKSTART), sinks=[open_trace_writer(recorded)])
        target = [str(recorded), "-m"]
    args = [command.split()[0], *target, "--trace", str(trace), "--report", str(report)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONFAULTHANDLER": "1"}
    with subprocess.Popen(
        [sys.executable, "-m", "nnemu.cli", *args],
        stdin=subprocess.PIPE,  # held open: the prompt waits
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    ) as process:
        assert process.stdin is not None
        assert process.stdout is not None
        assert process.stderr is not None
        try:
            process.stdin.write(b"c 100\n")
            process.stdin.flush()
            out = b""
            while out.count(b"(nnemu) ") < 2:  # the second prompt: after c 100
                chunk = process.stdout.read1(4096)
                assert chunk, process.stderr.read()
                out += chunk
            process.send_signal(signum)
            process.wait(timeout=20)  # without closing standard input
            out, err = out + process.stdout.read(), process.stderr.read()
        finally:
            if process.poll() is None:
                process.kill()
    name = signal.Signals(signum).name
    assert process.returncode == code, err
    assert b"Traceback" not in err
    assert f"interrupted by {name}: ending the run".encode() in out
    assert err.decode().strip().splitlines()[-1] == (
        f"interrupted by {name}; the trace so far is in {trace}"
    )
    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["interrupted"] == name
    assert 0 < data["virtual_ms"] < 200
    _assert_well_formed(trace)


def test_sigterm_while_python_shuts_down_exits_143():
    """A SIGTERM after the command's work, while the interpreter exits (an atexit callback
    stands for those last ~20 ms), exits 143 and says so: not a Terminated that Python prints
    as ignored (exit 0), nor death by the signal (-15)."""
    program = (
        "import atexit, os, signal, sys\n"
        "atexit.register(lambda: os.kill(os.getpid(), signal.SIGTERM))\n"
        "from nnemu.cli import console_main\n"
        f"sys.argv = ['nnemu', 'parse', {str(ROOT / 'tests/data/omr1.html')!r}]\n"
        "console_main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 143
    *warnings, said = done.stderr.splitlines()
    assert said == "interrupted by SIGTERM after the command's work: its outputs were written"
    assert all(" LI Total self time " in line for line in warnings)  # omr1's, as ever


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_interrupts_a_long_sql_statement(tmp_path: Path, signum: int, code: int):
    """Ctrl-C or SIGTERM during an endless recursive query ends it at once (SQLite ran the
    statement to its end first: this one lived 37 s after the signal, for ever)."""
    trace = tmp_path / "t.json"
    trace.write_text(
        '{"traceEvents": [{"name": "x", "ph": "X", "ts": 0, "dur": 1, "pid": 1, "tid": 1}]}',
        encoding="utf-8",
    )
    endless = (
        "with recursive c(x) as (select 1 union all select x + 1 from c) select count(*) from c"
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "nnemu.cli", "query", str(trace), endless],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    time.sleep(3.0)  # loaded (in 1 s) and in the statement
    process.send_signal(signum)
    try:
        _, err = process.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        pytest.fail("the statement went on after the signal")
    assert process.returncode == code
    assert err == f"interrupted by {signal.Signals(signum).name}\n"
