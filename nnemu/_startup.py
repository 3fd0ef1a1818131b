"""A Ctrl-C while the command line is still loading: ``interrupted``, exit 130, no traceback.

Python turns SIGINT into ``KeyboardInterrupt`` as soon as it has started, so a Ctrl-C while
``nnemu.cli`` and the modules it needs are still being imported (the first ~50 ms of every
command) would end in a traceback from whatever import it hit. The entry points (the ``nnemu``
console script, ``python -m nnemu``, ``python -m nnemu.cli``) call ``quiet_start`` first:
until the CLI's ``console_main`` takes over (and reports a Ctrl-C itself), SIGINT ends the
process at once, as a Ctrl-C later on does. A SIGINT that comes before Python has set up its
own handler kills the process as the signal does (a shell reports status 130 too), and one
during Python's own start-up (``site``) is Python's to report: nothing of nnemu has run then.
"""

import os
import sys

# The C module itself: ``signal`` would import ``enum`` (~3 ms, in which a Ctrl-C is a traceback).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal as _signal
else:
    import _signal

CLI_MODULES = ("nnemu", "nnemu.cli")
"""The modules that ``python -m`` runs as the command line."""


def exit_interrupted(signum: int, frame: object) -> None:
    """SIGINT handler while the CLI is loading: say ``interrupted`` and exit 130 at once."""
    os.write(2, b"\ninterrupted\n" if os.isatty(2) else b"interrupted\n")
    os._exit(130)


def quiet_start() -> None:
    """Make SIGINT end the process quietly until ``console_main`` runs (kept if SIGINT is ignored)."""
    if _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:
        _signal.signal(_signal.SIGINT, exit_interrupted)


def running_cli_module() -> bool:
    """Whether ``python -m nnemu`` or ``python -m nnemu.cli`` is importing the package now.

    While ``python -m`` looks for its module (and imports its packages), ``sys.argv[0]`` is
    ``"-m"``; the module's name is the argument after ``-m`` in ``sys.orig_argv``.
    """
    if sys.argv[:1] != ["-m"]:
        return False
    args = sys.orig_argv[1:]
    for at, arg in enumerate(args):
        if arg == "-m":
            return args[at + 1 : at + 2] in ([name] for name in CLI_MODULES)
        if arg.startswith("-m"):
            return arg[2:] in CLI_MODULES
    return False
