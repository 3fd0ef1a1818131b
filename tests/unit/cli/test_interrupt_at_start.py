"""Ctrl-C while ``nnemu`` is still starting (importing its modules): ``interrupted``, exit 130,
never a traceback, from the console script and from ``python -m nnemu.cli`` alike."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
QUICKSTART = str(REPO / "scenarios/quickstart.yaml")

# The child: what Python does for ``python -m nnemu.cli ARGS`` (argv[0] "-m" while the module
# is looked for, ``runpy._run_module_as_main``) or for the console script (``nnemu.__main__``),
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
if entry == "-m":
    sys.orig_argv = [sys.executable, "-m", "nnemu.cli", *args]
    sys.argv = ["-m", *args]
    runpy._run_module_as_main("nnemu.cli")
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


@pytest.mark.parametrize("entry", ["-m", "console"])
@pytest.mark.parametrize(
    "module",
    # In the order nnemu imports them: the CLI itself, its module-level imports, the logging
    # set up for ``run`` (structlog), the scenario's loader, the emulator and trio.
    ["nnemu.cli", "argparse", "nnemu.errors", "attr", "structlog", "yaml", "nnemu._emulator", "trio"],
)
def test_ctrl_c_during_an_import_says_interrupted(entry: str, module: str) -> None:
    """A SIGINT that arrives while a module of the CLI's start-up is being imported ends nnemu
    with ``interrupted`` and exit 130, not a traceback."""
    process = _start(entry, "signal", module)
    out, err = process.communicate(timeout=120)
    assert (process.returncode, err) == (130, "interrupted\n")
    assert out == ""


@pytest.mark.parametrize("entry", ["-m", "console"])
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
    # -SIGINT: Python ends a process that caught a KeyboardInterrupt raised inside exec() (a
    # dataclass being built) by the signal itself; a shell shows that as status 130 too.
    assert process.returncode in (0, 130, -signal.SIGINT), err
    if process.returncode != 0:
        assert err.splitlines()[-1] == "interrupted", err
