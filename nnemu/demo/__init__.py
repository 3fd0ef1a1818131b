"""``nnemu demo``: narrated walkthroughs of the HAL semantics, in virtual time."""

from nnemu.demo._demo import (
    SCENARIO_DIR,
    DemoRun,
    load_topic_scenario,
    run_demo_command,
    run_topic,
    scenario_path,
)
from nnemu.demo._topics import TOPICS, StepSpec, Topic

__all__ = [
    "SCENARIO_DIR",
    "TOPICS",
    "DemoRun",
    "StepSpec",
    "Topic",
    "load_topic_scenario",
    "run_demo_command",
    "run_topic",
    "scenario_path",
]
