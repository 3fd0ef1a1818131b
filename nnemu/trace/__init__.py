"""Reading traces: what parser, query, replay and verify share.

* rows: ``ROW_RE`` (the one ``tracing_mark_write`` row pattern), ``HEAD_RE``,
  ``timestamp_ns`` / ``exact_timestamp_ns`` (any number of fraction digits);
* HTML blocks: ``FtraceLines`` (the ftrace block of systrace HTML, or plain
  ftrace text) and its ``PROCESS DUMP`` (``ProcessDump``: process and thread rows);
  a text stream's lines are read with ``bounded_lines`` (none longer than ``MAX_LINE``);
* Chrome trace-event JSON: ``read_chrome_json`` (events as ftrace rows),
  ``json_time_ns``;
* formats: ``detect_format`` (gzip, archives, binary, JSON, text) and
  ``open_trace``, the one function that opens a path by its format;
* marks: ``classify`` (NNTRACE layer/phase tags, HIDL calls).
"""

from nnemu.trace._chrome import ChromeJsonError, ChromeRows, json_time_ns, read_chrome_json
from nnemu.trace._detect import (
    GZIP_MAGIC,
    HEAD_BYTES,
    TraceFormat,
    detect_format,
    file_format,
    open_trace,
    refuse_unreadable,
)
from nnemu.trace._html import (
    MAX_LINE,
    PROCESS_DUMP,
    TRACE_DATA_OPEN,
    DumpProcess,
    DumpThread,
    FtraceLines,
    ProcessDump,
    bounded_lines,
    process_name,
)
from nnemu.trace._marks import OPAQUE, Mark, classify
from nnemu.trace._rows import (
    HEAD_RE,
    MALFORMED_ROW,
    MAX_ABS_NS,
    MAX_ID,
    MAX_SECONDS_DIGITS,
    ROW_RE,
    ROW_SEPARATOR,
    UNKNOWN_TGID,
    exact_timestamp_ns,
    is_mark_row,
    pid_of,
    timestamp_ns,
)

__all__ = [
    "GZIP_MAGIC",
    "HEAD_BYTES",
    "HEAD_RE",
    "MALFORMED_ROW",
    "MAX_ABS_NS",
    "MAX_ID",
    "MAX_LINE",
    "MAX_SECONDS_DIGITS",
    "OPAQUE",
    "PROCESS_DUMP",
    "ROW_RE",
    "ROW_SEPARATOR",
    "TRACE_DATA_OPEN",
    "UNKNOWN_TGID",
    "ChromeJsonError",
    "ChromeRows",
    "DumpProcess",
    "DumpThread",
    "FtraceLines",
    "Mark",
    "ProcessDump",
    "TraceFormat",
    "bounded_lines",
    "classify",
    "detect_format",
    "exact_timestamp_ns",
    "file_format",
    "is_mark_row",
    "json_time_ns",
    "open_trace",
    "pid_of",
    "process_name",
    "read_chrome_json",
    "refuse_unreadable",
    "timestamp_ns",
]
