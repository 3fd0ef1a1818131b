"""Replay: re-drive the emulator from a recorded trace (nnemu's own or a device's systrace).

``extract_plan`` reads what the apps did (arrivals, models, drivers), ``build_replay``
turns it into a ``Scenario``, ``apply_overrides`` applies ``--set`` changes, and
``Stepper`` gives any run a manual-control prompt.  See docs/replay.md.
"""

from nnemu.overrides import OverrideError, apply_overrides
from nnemu.replay._build import build_replay, describe_build, describe_plan, loop_problem
from nnemu.replay._built import BuiltReplay, ModelChoice, choose_model
from nnemu.replay._command import run_replay_command
from nnemu.replay._devices import derive_exec_ratio
from nnemu.replay._extract import extract_plan
from nnemu.replay._plan import (
    ARRIVALS_HAL,
    ARRIVALS_LA,
    ARRIVALS_LR,
    TraceApp,
    TraceDriver,
    TracePlan,
)
from nnemu.replay._stepper import PROMPT, SectionStacks, Stepper

__all__ = [
    "ARRIVALS_HAL",
    "ARRIVALS_LA",
    "ARRIVALS_LR",
    "PROMPT",
    "BuiltReplay",
    "ModelChoice",
    "OverrideError",
    "SectionStacks",
    "Stepper",
    "TraceApp",
    "TraceDriver",
    "TracePlan",
    "apply_overrides",
    "build_replay",
    "choose_model",
    "derive_exec_ratio",
    "describe_build",
    "describe_plan",
    "extract_plan",
    "loop_problem",
    "run_replay_command",
]
