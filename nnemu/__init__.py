"""nnemu: an emulator of the Android Neural Networks API stack.

The public entry points::

    import nnemu
    report = nnemu.run(nnemu.load_scenario("scenarios/quickstart.yaml"))
    assert report.passed

``run`` drives a scenario to the end in virtual time; ``open_emulator`` gives the
live emulated world (kernel, driver services, apps) for finer control.
"""

from nnemu._emulator import Emulator, open_emulator, run
from nnemu.report import Report
from nnemu.scenario import Scenario, load_scenario, load_scenario_text

__all__ = [
    "Emulator",
    "Report",
    "Scenario",
    "load_scenario",
    "load_scenario_text",
    "open_emulator",
    "run",
]
