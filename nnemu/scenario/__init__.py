"""Scenarios: YAML documents -> validated, frozen ``Scenario`` values (and back).

See docs/scenario-format.md for the format.
"""

from nnemu.scenario._expect import EXPECTATION_METRICS, parse_expectation
from nnemu.scenario._load import (
    CPU_DEVICE_NAME,
    PRESETS,
    dump_scenario,
    load_scenario,
    load_scenario_text,
)
from nnemu.scenario._model import (
    AppSpec,
    CpuSpec,
    DeadlinePolicy,
    DeviceCostSpec,
    DeviceSpec,
    ExecutionMode,
    Expectation,
    ExpectOp,
    FaultKind,
    FaultSpec,
    IpcSpec,
    LayerSpec,
    ModelSpec,
    PerformanceSpec,
    PerfSpec,
    PreemptionKind,
    RetrySpec,
    Scenario,
    SchedulerKind,
    WorkloadKind,
    WorkloadSpec,
)

__all__ = [
    "CPU_DEVICE_NAME",
    "EXPECTATION_METRICS",
    "PRESETS",
    "AppSpec",
    "CpuSpec",
    "DeadlinePolicy",
    "DeviceCostSpec",
    "DeviceSpec",
    "ExecutionMode",
    "ExpectOp",
    "Expectation",
    "FaultKind",
    "FaultSpec",
    "IpcSpec",
    "LayerSpec",
    "ModelSpec",
    "PerfSpec",
    "PerformanceSpec",
    "PreemptionKind",
    "RetrySpec",
    "Scenario",
    "SchedulerKind",
    "WorkloadKind",
    "WorkloadSpec",
    "dump_scenario",
    "load_scenario",
    "load_scenario_text",
    "parse_expectation",
]
