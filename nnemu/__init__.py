"""nnemu: an emulator of the Android Neural Networks API stack.

The public entry points::

    import nnemu
    report = nnemu.run(nnemu.load_scenario("scenarios/quickstart.yaml"))
    assert report.passed

``run`` drives a scenario to the end in virtual time; for finer control,
``open_emulator`` gives the live emulated world (kernel, driver services, apps)
inside an async function that ``run_virtual`` runs, as ``run`` itself does::

    async def main() -> None:
        async with nnemu.open_emulator(scenario) as emulator:
            await emulator.run()
            print(emulator.kernel.clock_ns)

    nnemu.run_virtual(main)

The names are imported on first use, so that ``import nnemu.cli`` is quick and the
command line installs its signal handlers before the emulator (trio) is loaded.
"""

from __future__ import annotations

TYPE_CHECKING = False

# A Ctrl-C while the command line is still loading: ``interrupted``, exit 130, no traceback.
#
# Python turns SIGINT into ``KeyboardInterrupt`` as soon as it has started, so a Ctrl-C while
# ``nnemu.cli`` and the modules it needs are imported (the first ~50 ms of every command) would
# end in a traceback from whatever import it hit. Where the command line starts, before it imports
# anything, it calls ``_quiet_start`` (``nnemu.__main__.main``: the ``nnemu`` console script and
# ``python -m nnemu``; the top of ``nnemu/cli.py`` run as ``python -m nnemu.cli``): until
# ``nnemu.cli.console_main`` takes over (and reports a Ctrl-C itself), SIGINT ends the process at
# once, as a Ctrl-C later on does. Importing the package does nothing of the kind (a program that
# imports nnemu keeps its own SIGINT handling). A SIGINT before Python has set up its own handler
# kills the process as the signal does (a shell reports status 130 too), and one during Python's
# own start-up (``site``) or while Python is still finding and reading nnemu's package and
# ``__main__`` is Python's to report: nothing of nnemu has run then.


def _exit_interrupted(signum: int, frame: object) -> None:
    """SIGINT handler while the CLI is loading: say ``interrupted by SIGINT`` and exit 130 at once."""
    import os  # loaded already (``site``): no file to find

    os.write(2, b"\ninterrupted by SIGINT\n" if os.isatty(2) else b"interrupted by SIGINT\n")
    os._exit(130)


def _quiet_start() -> None:
    """Make SIGINT end the process quietly until ``console_main`` runs (kept if SIGINT is ignored)."""
    # The C module itself: ``signal`` would import ``enum`` (~3 ms, in which a Ctrl-C is a traceback).
    if TYPE_CHECKING:
        import signal as _signal
    else:
        import _signal

    if _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:
        _signal.signal(_signal.SIGINT, _exit_interrupted)


# Nothing more at run time (not ``typing``, ``collections.abc``, ``importlib``): the command
# line imports this package before it can make a Ctrl-C quiet (above).
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

    from nnemu._emulator import Emulator, open_emulator, run, run_virtual
    from nnemu.parser import parse_trace
    from nnemu.report import Report
    from nnemu.scenario import Scenario, load_scenario, load_scenario_text

_HOMES = {
    "Emulator": "nnemu._emulator",
    "open_emulator": "nnemu._emulator",
    "run": "nnemu._emulator",
    "run_virtual": "nnemu._emulator",
    "Report": "nnemu.report",
    "parse_trace": "nnemu.parser",
    "Scenario": "nnemu.scenario",
    "load_scenario": "nnemu.scenario",
    "load_scenario_text": "nnemu.scenario",
}

__all__ = [
    "Emulator",
    "Report",
    "Scenario",
    "load_scenario",
    "load_scenario_text",
    "open_emulator",
    "parse_trace",
    "run",
    "run_virtual",
]


def _lazy_names(
    package: str, homes: Mapping[str, str], namespace: dict[str, Any], exported: Sequence[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, whose name ``N`` lives in module ``homes[N]``.

    A name is imported on first use and kept in ``namespace`` (the package's ``globals()``),
    so later uses do not come back here.
    """

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        from importlib import import_module

        value = getattr(import_module(home), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted([*namespace, *exported])

    return __getattr__, __dir__


__getattr__, __dir__ = _lazy_names(__name__, _HOMES, globals(), __all__)
