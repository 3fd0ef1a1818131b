"""Reading traces: what parser, query, replay and verify share.

* rows: ``ROW_RE`` (the one ``tracing_mark_write`` row pattern), ``HEAD_RE``,
  ``timestamp_ns`` / ``exact_timestamp_ns`` (any number of fraction digits),
  ``out_of_order_warning`` (every reader's words for ends earlier than their begins) and
  ``time_ordered`` (rows in time order, as Perfetto matches them, to read them again);
* HTML blocks: ``FtraceLines`` (the ftrace block of systrace HTML, or plain
  ftrace text) and its ``PROCESS DUMP`` (``ProcessDump``: process and thread rows);
  ``TRUNCATED_HTML``, the warning for an ftrace block with no end;
  a text stream's lines are read with ``bounded_lines`` (none longer than ``MAX_LINE``);
* Chrome trace-event JSON (its events read by ``TraceEvents``): ``task_name`` (a thread
  name as a row's TASK column shows it), ``time_ordered_events`` (a reading's events in
  time order, as Perfetto matches them), ``json_time_ns``, ``json_line_events`` (a file of
  one event per line, streamed) and what every reader says of an event it skips
  (``NOT_AN_EVENT``, ``NO_PHASE``, ``NO_PID_TID``, ``not_a_number_ts``, ``negative_ts``,
  ``not_a_number_dur``, ``NO_DUR``, ``negative_dur``) or of a document that is no trace
  (``NOT_CHROME_TRACE``);
* Perfetto protobuf traces: ``read_perfetto`` (typed records, streamed a block of
  packets at a time) and ``PerfettoLines`` (the same as ftrace rows); imported on first
  use (telling a file's format, or reading systrace, does not load them);
* formats: ``detect_format`` (gzip, archives, Perfetto, binary, JSON, text, or no trace
  at all: ``NO_TRACE_EVENTS``) and ``open_trace``, the one function that opens a path by
  its format;
* marks: ``classify`` (NNTRACE layer/phase tags, HIDL calls);
* canonical events: ``TraceEvents`` (the one reader: a file's format told once, its events
  from the module of that format) and the event kinds (``BEGIN``, ``END``, ``COMPLETE``,
  ``COUNTER``, ``FLOW`` with how a flow binds, ``FLOW_START`` ... ``FLOW_THROUGH``,
  ``INSTANT``, ``ARGS``, ``PROCESS``, ``THREAD``, ``PROBLEM`` (``NO_SLICE``), ``RESTART``;
  ``Event``; ``TraceEvents.feed`` gives them to a ``RowSink``, a text trace's usual rows
  as calls); ``row_batches`` (a text trace's numbered lines as events; with ``texts``,
  the rows as written: ``LINES``, ``HEAD``, ``RowHead``, what ``nnemu parse`` reads) and
  ``numbered_blocks`` (numbered lines as its blocks); ``flow_id`` (a JSON flow id as trace processor keys it), ``COUNTER_RE`` and ``MALFORMED_COUNTER`` (a counter row).
"""

from typing import TYPE_CHECKING, Final

from nnemu.trace._chrome import (
    NO_DUR,
    NO_PHASE,
    NO_PID_TID,
    NOT_AN_EVENT,
    NOT_CHROME_TRACE,
    NotLineJson,
    flow_id,
    json_line_events,
    json_time_ns,
    negative_dur,
    negative_ts,
    not_a_number_dur,
    not_a_number_ts,
    task_name,
    time_ordered_events,
)
from nnemu.trace._detect import (
    GZIP_MAGIC,
    HEAD_BYTES,
    NO_TRACE_EVENTS,
    STDIN_UNSUPPORTED,
    TraceFormat,
    detect_format,
    file_format,
    is_perfetto_lines,
    open_trace,
    refuse_stdin,
    refuse_unreadable,
)
from nnemu.trace._events import (
    ARGS,
    BEGIN,
    COMPLETE,
    COUNTER,
    CUT_ROW,
    END,
    FLOW,
    FLOW_END,
    FLOW_END_NEXT,
    FLOW_IN,
    FLOW_OUT,
    FLOW_START,
    FLOW_STEP,
    FLOW_THROUGH,
    HEAD,
    INSTANT,
    LINES,
    NO_SLICE,
    PROBLEM,
    PROCESS,
    RESTART,
    THREAD,
    Event,
    RowHead,
)
from nnemu.trace._ftrace import (
    CUT_ROW_PROBLEM,
    MALFORMED_BEGIN,
    TID_OUT_OF_RANGE,
    RowSink,
    counter_event,
    numbered_blocks,
    row_batches,
)
from nnemu.trace._html import (
    MAX_LINE,
    PROCESS_DUMP,
    TRACE_DATA_OPEN,
    TRUNCATED_HTML,
    DumpProcess,
    DumpThread,
    FtraceLines,
    ProcessDump,
    bounded_lines,
    process_name,
)
from nnemu.trace._marks import OPAQUE, Mark, classify
from nnemu.trace._reader import TraceEvents
from nnemu.trace._rows import (
    COUNTER_RE,
    HEAD_RE,
    MALFORMED_COUNTER,
    MALFORMED_ROW,
    MAX_ABS_NS,
    MAX_ID,
    MAX_SECONDS_DIGITS,
    MAX_SORTED_BYTES,
    ROW_RE,
    ROW_SEPARATOR,
    UNKNOWN_TGID,
    atrace_counter_value,
    atrace_tgid,
    exact_timestamp_ns,
    head_groups,
    is_mark_row,
    out_of_order_warning,
    pid_of,
    pid_of_column,
    pid_of_tgid,
    time_ordered,
    timestamp_ns,
)

if TYPE_CHECKING:
    from nnemu.trace._perfetto import (
        Counter,
        Flow,
        PerfettoEvent,
        PerfettoLines,
        Print,
        ProcessName,
        SliceBegin,
        SliceEnd,
        ThreadName,
        read_perfetto,
    )

_PERFETTO_NAMES: Final = frozenset(
    (
        "Counter",
        "Flow",
        "PerfettoEvent",
        "PerfettoLines",
        "Print",
        "ProcessName",
        "SliceBegin",
        "SliceEnd",
        "ThreadName",
        "read_perfetto",
    )
)


def __getattr__(name: str) -> object:
    """The Perfetto reader's names, imported on first use."""
    if name in _PERFETTO_NAMES:
        from nnemu.trace import _perfetto

        return getattr(_perfetto, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ARGS",
    "BEGIN",
    "COMPLETE",
    "COUNTER",
    "COUNTER_RE",
    "CUT_ROW",
    "CUT_ROW_PROBLEM",
    "END",
    "FLOW",
    "FLOW_END",
    "FLOW_END_NEXT",
    "FLOW_IN",
    "FLOW_OUT",
    "FLOW_START",
    "FLOW_STEP",
    "FLOW_THROUGH",
    "GZIP_MAGIC",
    "HEAD",
    "HEAD_BYTES",
    "HEAD_RE",
    "INSTANT",
    "LINES",
    "MALFORMED_BEGIN",
    "MALFORMED_COUNTER",
    "MALFORMED_ROW",
    "MAX_ABS_NS",
    "MAX_ID",
    "MAX_LINE",
    "MAX_SECONDS_DIGITS",
    "MAX_SORTED_BYTES",
    "NOT_AN_EVENT",
    "NOT_CHROME_TRACE",
    "NO_DUR",
    "NO_PHASE",
    "NO_PID_TID",
    "NO_SLICE",
    "NO_TRACE_EVENTS",
    "OPAQUE",
    "PROBLEM",
    "PROCESS",
    "PROCESS_DUMP",
    "RESTART",
    "ROW_RE",
    "ROW_SEPARATOR",
    "STDIN_UNSUPPORTED",
    "THREAD",
    "TID_OUT_OF_RANGE",
    "TRACE_DATA_OPEN",
    "TRUNCATED_HTML",
    "UNKNOWN_TGID",
    "Counter",
    "DumpProcess",
    "DumpThread",
    "Event",
    "Flow",
    "FtraceLines",
    "Mark",
    "NotLineJson",
    "PerfettoEvent",
    "PerfettoLines",
    "Print",
    "ProcessDump",
    "ProcessName",
    "RowHead",
    "RowSink",
    "SliceBegin",
    "SliceEnd",
    "ThreadName",
    "TraceEvents",
    "TraceFormat",
    "atrace_counter_value",
    "atrace_tgid",
    "bounded_lines",
    "classify",
    "counter_event",
    "detect_format",
    "exact_timestamp_ns",
    "file_format",
    "flow_id",
    "head_groups",
    "is_mark_row",
    "is_perfetto_lines",
    "json_line_events",
    "json_time_ns",
    "negative_dur",
    "negative_ts",
    "not_a_number_dur",
    "not_a_number_ts",
    "numbered_blocks",
    "open_trace",
    "out_of_order_warning",
    "pid_of",
    "pid_of_column",
    "pid_of_tgid",
    "process_name",
    "read_perfetto",
    "refuse_stdin",
    "refuse_unreadable",
    "row_batches",
    "task_name",
    "time_ordered",
    "time_ordered_events",
    "timestamp_ns",
]
