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

import sys

if sys.argv[:1] == ["-m"]:  # ``python -m`` imports the package of its module first
    from nnemu._startup import quiet_start, running_cli_module

    if running_cli_module():  # ``python -m nnemu.cli``: a Ctrl-C during its imports is quiet
        quiet_start()

# Nothing more at run time (not ``typing``, ``collections.abc``, ``importlib``): the console
# script imports this package before it can make a Ctrl-C quiet (nnemu._startup).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

    from nnemu._emulator import Emulator, open_emulator, run, run_virtual
    from nnemu.report import Report
    from nnemu.scenario import Scenario, load_scenario, load_scenario_text

_HOMES = {
    "Emulator": "nnemu._emulator",
    "open_emulator": "nnemu._emulator",
    "run": "nnemu._emulator",
    "run_virtual": "nnemu._emulator",
    "Report": "nnemu.report",
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
