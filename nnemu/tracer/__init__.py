"""NNTRACE-style events, the layer/phase vocabulary, trace writers and the ground truth.

The vocabulary (``Layer``, ``Phase``, ...) is imported at once; the tracer, the
writers and the ground truth on first use (a module ``__getattr__``), so that the
trace readers (``nnemu parse``, ``nnemu query``) get the vocabulary without the
emulator's kernel (trio) behind the tracer.  A wheel carries the tracer and the writers
compiled by mypyc (``nnemu._native``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nnemu import _lazy_names
from nnemu.tracer._names import NAME_RULE, name_problem, safe_name, thread_name
from nnemu.tracer._vocab import (
    EXECUTION_FAMILY,
    EXECUTION_SUBPHASES,
    NNAPI_HIDL_INTERFACES,
    SUBPHASES,
    Layer,
    Phase,
    tag,
)

if TYPE_CHECKING:
    from nnemu.tracer._events import (
        BatchSink,
        FlowSink,
        SectionInfo,
        SectionKind,
        TraceEvent,
        TraceObserver,
        TraceSink,
    )
    from nnemu.tracer._open import open_trace_writer
    from nnemu.tracer._tracer import (
        BATCH_EVENTS,
        CounterTrack,
        Mark,
        Section,
        Tracer,
        mark,
        raw_mark,
    )
    from nnemu.tracer._truth import GroundTruth
    from nnemu.tracer._truth_records import CELL_LAYERS, CELL_PHASES, ProcessTruth, RunTruth
    from nnemu.tracer._writers import ChromeJsonWriter, FtraceWriter

_HOMES = {
    "BATCH_EVENTS": "nnemu.tracer._tracer",
    "BatchSink": "nnemu.tracer._events",
    "CounterTrack": "nnemu.tracer._tracer",
    "FlowSink": "nnemu.tracer._events",
    "Mark": "nnemu.tracer._tracer",
    "mark": "nnemu.tracer._tracer",
    "raw_mark": "nnemu.tracer._tracer",
    "TraceEvent": "nnemu.tracer._events",
    "Section": "nnemu.tracer._tracer",
    "SectionInfo": "nnemu.tracer._events",
    "SectionKind": "nnemu.tracer._events",
    "TraceObserver": "nnemu.tracer._events",
    "Tracer": "nnemu.tracer._tracer",
    "TraceSink": "nnemu.tracer._events",
    "GroundTruth": "nnemu.tracer._truth",
    "CELL_LAYERS": "nnemu.tracer._truth_records",
    "CELL_PHASES": "nnemu.tracer._truth_records",
    "ProcessTruth": "nnemu.tracer._truth_records",
    "RunTruth": "nnemu.tracer._truth_records",
    "ChromeJsonWriter": "nnemu.tracer._writers",
    "FtraceWriter": "nnemu.tracer._writers",
    "open_trace_writer": "nnemu.tracer._open",
}
"""Where each lazily imported name lives."""

__all__ = [
    "BATCH_EVENTS",
    "CELL_LAYERS",
    "CELL_PHASES",
    "EXECUTION_FAMILY",
    "EXECUTION_SUBPHASES",
    "NAME_RULE",
    "NNAPI_HIDL_INTERFACES",
    "SUBPHASES",
    "BatchSink",
    "ChromeJsonWriter",
    "CounterTrack",
    "FlowSink",
    "FtraceWriter",
    "GroundTruth",
    "Layer",
    "Mark",
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
    "mark",
    "name_problem",
    "open_trace_writer",
    "raw_mark",
    "safe_name",
    "tag",
    "thread_name",
]


__getattr__, __dir__ = _lazy_names(__name__, _HOMES, globals(), __all__)
