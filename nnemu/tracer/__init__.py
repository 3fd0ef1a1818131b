"""NNTRACE-style events, the layer/phase vocabulary, and trace writers."""

from nnemu.tracer._tracer import Tracer, TraceSink
from nnemu.tracer._vocab import EXECUTION_SUBPHASES, Layer, Phase, tag
from nnemu.tracer._writers import ChromeJsonWriter, FtraceWriter, open_trace_writer

__all__ = [
    "EXECUTION_SUBPHASES",
    "ChromeJsonWriter",
    "FtraceWriter",
    "Layer",
    "Phase",
    "TraceSink",
    "Tracer",
    "open_trace_writer",
    "tag",
]
