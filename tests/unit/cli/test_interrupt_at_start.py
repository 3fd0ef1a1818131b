"""Ctrl-C while ``nnemu`` is still starting (importing its modules): ``interrupted by SIGINT``, exit 130,
never a traceback, from the console script and from ``python -m nnemu.cli`` alike."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
"""Some 50 whole nnemu processes started and interrupted."""

REPO = Path(__file__).resolve().parents[3]
QUICKSTART = str(REPO / "scenarios/quickstart.yaml")

# The child: what Python does for ``python -m nnemu ARGS`` or ``python -m nnemu.cli ARGS`` (argv[0]
# "-m" while the module is looked for, ``runpy._run_module_as_main``) or for the console script
# (``nnemu.__main__``),
# with a finder that acts when the module named ``sys.argv[2]`` is first looked for: it sends
# SIGINT to the process ("signal") or says ``up`` on stdout ("mark") for the test's own clock.
_START = """
import runpy, signal, sys

entry, action, module = sys.argv[1:4]
args = sys.argv[4:]


class Hook:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == module:
            sys.meta_path.remove(Hook)
            if action == "signal":
                signal.raise_signal(signal.SIGINT)
            else:
                sys.stdout.write("up\\n")
                sys.stdout.flush()
        return None


sys.meta_path.insert(0, Hook)
if entry in ("-m nnemu", "-m nnemu.cli"):
    sys.argv = ["-m", *args]
    runpy._run_module_as_main(entry.split()[1])
else:
    sys.argv = ["nnemu", *args]
    from nnemu.__main__ import main

    main()
"""


def _start(entry: str, action: str, module: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-c", _START, entry, action, module, "run", QUICKSTART]
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO
    )


# In the order nnemu imports them: the CLI itself, its module-level imports, the logging set up
# for ``run`` (structlog), the scenario's loader, the emulator and trio.
_START_IMPORTS = [
    "nnemu.cli",
    "argparse",
    "nnemu.errors",
    "attr",
    "structlog",
    "yaml",
    "nnemu._emulator",
    "trio",
]


@pytest.mark.parametrize(
    ("entry", "module"),
    [
        (entry, module)
        for entry in ("-m nnemu", "-m nnemu.cli", "console")
        for module in _START_IMPORTS
        # python -m nnemu.cli's own lookup is Python's, before any of nnemu/cli.py runs.
        if (entry, module) != ("-m nnemu.cli", "nnemu.cli")
    ],
)
def test_ctrl_c_during_an_import_says_interrupted(entry: str, module: str) -> None:
    """A SIGINT that arrives while a module of the CLI's start-up is being imported ends nnemu
    with ``interrupted by SIGINT`` and exit 130, not a traceback."""
    process = _start(entry, "signal", module)
    out, err = process.communicate(timeout=120)
    assert (process.returncode, err) == (130, "interrupted by SIGINT\n")
    assert out == ""


@pytest.mark.parametrize("entry", ["-m nnemu", "console"])
@pytest.mark.parametrize("delay_ms", [0, 10, 30, 60])
def test_ctrl_c_at_any_moment_of_the_start(entry: str, delay_ms: int) -> None:
    """A Ctrl-C 0, 10, 30 or 60 ms after nnemu's package has loaded (while the CLI's modules are
    imported, then the run) gives exit 130 or a finished run, never a traceback."""
    process = _start(entry, "mark", "nnemu.cli")
    assert process.stdout is not None
    assert process.stdout.readline() == "up\n"
    time.sleep(delay_ms / 1000)
    process.send_signal(signal.SIGINT)
    _out, err = process.communicate(timeout=120)
    assert "Traceback" not in err
    assert process.returncode in (0, 130), err
    if process.returncode != 0:
        assert err.splitlines()[-1] == "interrupted by SIGINT", err


# Python imports ``sitecustomize`` at start-up: a hook that sends SIGINT from code that ``exec``
# runs from source text when the module named by the environment is first looked for.
_SITECUSTOMIZE = """import os, signal, sys


class Hook:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == os.environ.get("NNEMU_TEST_SIGINT_AT"):
            sys.meta_path.remove(Hook)
            exec("signal.raise_signal(signal.SIGINT)")
        return None


sys.meta_path.insert(0, Hook)
"""


@pytest.mark.parametrize("module", ["nnemu._emulator", "trio"])
def test_ctrl_c_while_a_class_is_built_from_source_exits_130(tmp_path: Path, module: str) -> None:
    """A SIGINT raised in code run by ``exec`` (as when a dataclass or namedtuple is built during
    an import) ends ``python -m nnemu run`` with exit 130, not by the signal (-2)."""
    (tmp_path / "sitecustomize.py").write_text(_SITECUSTOMIZE)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)]),
        "NNEMU_TEST_SIGINT_AT": module,
    }
    done = subprocess.run(
        [sys.executable, "-m", "nnemu", "run", QUICKSTART],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stderr, done.stdout) == (130, "interrupted by SIGINT\n", "")


def test_importing_nnemu_leaves_sigint_alone() -> None:
    """A program that imports nnemu (and its command line, without running it) keeps Python's
    SIGINT handling: only the command line's start makes a Ctrl-C quiet."""
    code = (
        "import signal, nnemu, nnemu.cli, nnemu.__main__\n"
        "assert signal.getsignal(signal.SIGINT) is signal.default_int_handler\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr


# A console script as pip writes it, under its real name ``nnemu``.
_SCRIPT = """import signal, sys


class Hook:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == {module!r}:
            sys.meta_path.remove(Hook)
            signal.raise_signal(signal.SIGINT)
        return None


sys.meta_path.insert(0, Hook)
from {entry} import {function}

if __name__ == "__main__":
    sys.exit({function}())
"""


@pytest.mark.parametrize("module", ["nnemu.cli", "argparse", "nnemu.errors"])
def test_ctrl_c_while_the_console_script_imports(tmp_path: Path, module: str) -> None:
    """The ``nnemu`` script says ``interrupted by SIGINT`` and exits 130 when a SIGINT comes while
    it imports the command line."""
    script = tmp_path / "nnemu"
    script.write_text(_SCRIPT.format(module=module, entry="nnemu.__main__", function="main"))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, str(script), "run", QUICKSTART],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stderr, done.stdout) == (130, "interrupted by SIGINT\n", "")


def _open_for_writing(fifo: Path, process: subprocess.Popen[str]) -> int:
    """The FIFO's write end, opened once ``process`` has opened it to read (ENXIO before)."""
    while True:
        try:
            return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno != errno.ENXIO or process.poll() is not None:
                raise
            time.sleep(0.01)


def _wait_reading(process: subprocess.Popen[str]) -> None:
    """Wait until ``process`` waits in a read of a pipe (Linux's /proc says so; elsewhere, go on).

    Python notices a signal only between two steps of its own: one that lands after nnemu opened
    the pipe but before it called read() is acted on when the read returns, which it never does
    here (the test keeps the pipe open and empty).
    """
    wchan = Path(f"/proc/{process.pid}/wchan")
    for _ in range(2000):
        try:
            if "pipe" in wchan.read_text():
                return
        except OSError:
            return
        if process.poll() is not None:
            return
        time.sleep(0.005)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
@pytest.mark.parametrize(
    "command",
    [["run", "IN"], ["sweep", "IN", "--out", "OUT"], ["parse", "IN"], ["query", "IN", "select 1"]],
    ids=["run", "sweep", "parse", "query"],
)
def test_ctrl_c_while_loading_the_input(tmp_path: Path, command: list[str]) -> None:
    """A Ctrl-C while ``run``, ``sweep``, ``parse`` or ``query`` is still reading its input (a
    scenario, an experiment, a trace that comes slowly down a pipe) says ``interrupted by SIGINT``, exits
    130 and writes nothing."""
    fifo = tmp_path / "input"
    os.mkfifo(fifo)
    args = [str(fifo) if a == "IN" else str(tmp_path / "out") if a == "OUT" else a for a in command]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen(
        [sys.executable, "-m", "nnemu", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
    )
    writer = _open_for_writing(fifo, process)
    try:
        _wait_reading(process)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=120)
    finally:
        os.close(writer)
    assert (process.returncode, err, out) == (130, "interrupted by SIGINT\n", "")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["input"]


# The child: the console script's entry, with a command whose work drops an object whose weakref
# callback is interrupted (as the import system's module-lock cleanup was, by a real Ctrl-C in
# CI): CPython cannot raise from there, so it hands the exception to ``sys.unraisablehook``.
_LOST = """
import signal, sys, weakref
import nnemu.cli as cli

kind = sys.argv[1]


def command(argv=None):
    class Held:
        pass

    held = Held()

    def callback(_ref):
        if kind == "SIGINT":
            raise KeyboardInterrupt
        raise cli.Terminated

    ref = weakref.ref(held, callback)
    del held
    print("done")
    return 0


cli.main = command
cli.console_main()
"""


@pytest.mark.parametrize(("kind", "code"), [("SIGINT", 130), ("SIGTERM", 143)])
def test_a_signal_cpython_cannot_raise_ends_as_an_interruption(kind: str, code: int) -> None:
    """A Ctrl-C (or SIGTERM) that lands in a weakref callback is not printed as 'Exception ignored
    ... Traceback' and forgotten (exit 0): the command ends, then says it was interrupted."""
    result = subprocess.run(
        [sys.executable, "-c", _LOST, kind],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=REPO,
    )
    assert "Traceback" not in result.stderr
    assert "Exception ignored" not in result.stderr
    assert result.stdout == "done\n"
    assert (
        result.stderr
        == f"interrupted by {kind} after the command's work: its outputs were written\n"
    )
    assert result.returncode == code
