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


def tag(layer: Layer, phase: Phase) -> str:
    """Return the bracketed NNTRACE tag, e.g. ``[NN_LR_PE]``."""
    return f"[NN_{layer.value}_{phase.value}]"
