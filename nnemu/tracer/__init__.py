"""NNTRACE-style events, the layer/phase vocabulary, and trace writers."""

from nnemu.tracer._vocab import EXECUTION_SUBPHASES, Layer, Phase, tag

__all__ = ["EXECUTION_SUBPHASES", "Layer", "Phase", "tag"]
