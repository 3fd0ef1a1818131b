"""The NNTRACE vocabulary: layer and phase codes, defined once.

Codes are those of AOSP ``frameworks/ml/nn/common/include/Tracing.h``.  A bare
``"LR"`` anywhere else in nnemu is a bug: use ``Layer.RUNTIME``.
"""

from __future__ import annotations

import enum


class Layer(enum.StrEnum):
    """NNTRACE layer codes."""

    APPLICATION = "LA"
    RUNTIME = "LR"
    IPC = "LI"
    DRIVER = "LD"
    CPU = "LC"
    OTHER = "LO"
    UTILITY = "LU"


class Phase(enum.StrEnum):
    """NNTRACE phase codes (the last four are sub-phases of EXECUTION)."""

    OVERALL = "PO"
    WARMUP = "PWU"
    BENCHMARK = "PBM"
    INITIALIZATION = "PI"
    PREPARATION = "PP"
    COMPILATION = "PC"
    EXECUTION = "PE"
    TERMINATION = "PT"
    UNSPECIFIED = "PU"
    INPUTS_AND_OUTPUTS = "PIO"
    TRANSFORMATION = "PTR"
    COMPUTATION = "PCO"
    RESULTS = "PR"


EXECUTION_SUBPHASES: frozenset[Phase] = frozenset(
    {Phase.INPUTS_AND_OUTPUTS, Phase.TRANSFORMATION, Phase.COMPUTATION, Phase.RESULTS}
)
"""Sub-phases of ``Phase.EXECUTION``."""

SUBPHASES: dict[Phase, frozenset[Phase]] = {
    Phase.EXECUTION: EXECUTION_SUBPHASES,
    Phase.OVERALL: frozenset(
        {
            Phase.WARMUP,
            Phase.BENCHMARK,
            Phase.INITIALIZATION,
            Phase.PREPARATION,
            Phase.COMPILATION,
            Phase.EXECUTION,
            Phase.TERMINATION,
        }
    ),
    Phase.WARMUP: frozenset({Phase.EXECUTION}),
    Phase.BENCHMARK: frozenset({Phase.EXECUTION}),
}
"""Phases the contract lets nest inside each phase as its sub-phases (the parser's nesting check)."""

EXECUTION_FAMILY: frozenset[Phase] = frozenset({Phase.EXECUTION, *EXECUTION_SUBPHASES})
"""EXECUTION and its sub-phases."""


def tag(layer: Layer, phase: Phase) -> str:
    """Return the bracketed NNTRACE tag, e.g. ``[NN_LR_PE]``."""
    return f"[NN_{layer.value}_{phase.value}]"


NNAPI_HIDL_INTERFACES: frozenset[str] = frozenset(
    {
        "IDevice",
        "IPreparedModel",
        "IBuffer",
        "IBurstContext",
        "IBurstCallback",
        "IExecutionCallback",
        "IPreparedModelCallback",
        "IFencedExecutionCallback",
    }
)
"""The NNAPI HAL interfaces as they appear in ``HIDL::<Iface>::<method>::client|server`` marks."""
