"""NNTRACE-style events, the layer/phase vocabulary, trace writers and the ground truth."""

from nnemu.tracer._tracer import (
    BATCH_EVENTS,
    BatchSink,
    Section,
    SectionInfo,
    SectionKind,
    TraceEvent,
    TraceObserver,
    Tracer,
    TraceSink,
)
from nnemu.tracer._truth import GroundTruth
from nnemu.tracer._truth_records import CELL_LAYERS, CELL_PHASES, ProcessTruth, RunTruth
from nnemu.tracer._vocab import (
    EXECUTION_FAMILY,
    EXECUTION_SUBPHASES,
    NNAPI_HIDL_INTERFACES,
    SUBPHASES,
    Layer,
    Phase,
    tag,
)
from nnemu.tracer._writers import ChromeJsonWriter, FtraceWriter, open_trace_writer

__all__ = [
    "BATCH_EVENTS",
    "CELL_LAYERS",
    "CELL_PHASES",
    "EXECUTION_FAMILY",
    "EXECUTION_SUBPHASES",
    "NNAPI_HIDL_INTERFACES",
    "SUBPHASES",
    "BatchSink",
    "ChromeJsonWriter",
    "FtraceWriter",
    "GroundTruth",
    "Layer",
    "Phase",
    "ProcessTruth",
    "RunTruth",
    "Section",
    "SectionInfo",
    "SectionKind",
    "TraceEvent",
    "TraceObserver",
    "TraceSink",
    "Tracer",
    "open_trace_writer",
    "tag",
]
