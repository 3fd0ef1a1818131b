"""Format detection, ``open_trace`` dispatch and Chrome JSON reading (``TraceEvents``)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from nnemu.errors import TraceFormatError
from nnemu.trace import (
    BEGIN,
    PROBLEM,
    FtraceLines,
    TraceEvents,
    TraceFormat,
    detect_format,
    json_time_ns,
    open_trace,
)


def _events(tmp_path: Path, text: str) -> list[tuple[object, ...]]:
    """The canonical events of a JSON file holding ``text``."""
    path = tmp_path / "t.json"
    path.write_text(text)
    return list(TraceEvents(path).events())


@pytest.mark.parametrize(
    ("head", "kind"),
    [
        (gzip.compress(b"# tracer: nop\n", mtime=0), TraceFormat.GZIP),
        (b"PK\x03\x04rest", TraceFormat.ARCHIVE),
        (b"\x28\xb5\x2f\xfdzstd", TraceFormat.ARCHIVE),
        (b"\n\x85\x02\x00\x01", TraceFormat.BINARY),
        (b"\xff\xfe\xfa garbage" * 10, TraceFormat.BINARY),
        (b'\xef\xbb\xbf  {"traceEvents": [{}]}', TraceFormat.JSON),
        (b"\n [{}]", TraceFormat.JSON),
        (b"42\n", TraceFormat.JSON),
        (b'"x"', TraceFormat.JSON),
        (b"<!DOCTYPE html>", TraceFormat.TEXT),
        (b"# tracer: nop\n" + "é".encode() * 2047 + "é".encode()[:1], TraceFormat.TEXT),
        (b"1 2\n", TraceFormat.TEXT),
        (b"", TraceFormat.EMPTY),
        (b"\xef\xbb\xbf \r\n\t", TraceFormat.EMPTY),
        (b"[ ]", TraceFormat.EMPTY),
        (b'{"displayTimeUnit": "ns", "traceEvents": [\n]}\n', TraceFormat.EMPTY),
        (b'{"traceEvents": [], "systemTraceEvents": "# tracer: nop"}', TraceFormat.JSON),
        (b" " * 8192, TraceFormat.TEXT),
        (b"[]" + b" " * 8190, TraceFormat.JSON),
    ],
)
def test_detect_format_by_first_bytes(head: bytes, kind: TraceFormat):
    """Compressed, binary, JSON and text files are told apart by their first bytes; a file
    short enough to be read whole with no trace in it (blank, no events) is EMPTY, and a
    bare JSON value is JSON (which no reader takes for a trace)."""
    assert detect_format(head) is kind


def test_open_trace_gives_a_text_stream_and_json_its_events(tmp_path: Path):
    """Text comes as a stream for FtraceLines; JSON has no rows (open_trace refuses it) and
    comes as canonical events from TraceEvents, each on its line."""
    text = tmp_path / "t.txt"
    text.write_text("# tracer: nop\n")
    with open_trace(text) as source:
        assert list(FtraceLines(source)) == [(1, "# tracer: nop\n")]
    events = [{"ph": "B", "pid": 7, "tid": 8, "ts": 1.5, "name": "[NN_LA_PE]m"}]
    chrome = tmp_path / "t.json"
    chrome.write_text(json.dumps({"traceEvents": events}))
    with pytest.raises(TraceFormatError), open_trace(chrome):
        pass
    assert list(TraceEvents(chrome).events())[1:] == [(BEGIN, 1500, 1, 7, 8, "[NN_LA_PE]m", None)]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            gzip.compress(b"x", mtime=0),
            "the file is gzip-compressed; decompress it first (gunzip -k)",
        ),
        (b"PK\x03\x04", "the file is a compressed archive; extract the trace from it first"),
        (b"\x00\x01", "the file is binary and not a Perfetto protobuf trace"),
        (b'{"traceEvents": 3}', "not a Chrome trace"),
        (b'{"ts": ' + b"9" * 5000 + b"}", "not a JSON trace: a number of more than 4300 digits"),
        (b"[" * 100_000, "not a JSON trace: nested too deeply"),
    ],
)
def test_the_reader_refuses_what_no_reader_reads(tmp_path: Path, content: bytes, message: str):
    """Compressed, binary and non-trace JSON files raise TraceFormatError with a reason."""
    path = tmp_path / "bad"
    path.write_bytes(content)
    with pytest.raises(TraceFormatError) as info:
        list(TraceEvents(path).events())
    assert info.value.message.startswith(message)


def test_chrome_json_times_are_exact_and_problems_are_named(tmp_path: Path):
    """nnemu's µs values come back as exact ns; bad events are skipped with their line."""
    text = (
        '{"traceEvents": [\n'
        '{"ph": "M", "pid": 7, "tid": 7, "name": "process_name", "args": {"name": "app"}},\n'
        '{"ph": "B", "pid": 7, "tid": 7, "ts": 1000.001, "name": "x"},\n'
        '{"ph": "E", "pid": 7, "tid": 7, "ts": -1},\n'
        '{"ph": "E", "pid": true, "tid": 7, "ts": 2}\n'
        "]}"
    )
    events = _events(tmp_path, text)
    assert [event[:3] for event in events if event[0] == BEGIN] == [(BEGIN, 1_000_001, 3)]
    assert [(event[2], event[5].split(":")[0]) for event in events if event[0] == PROBLEM] == [
        (4, "timestamp -1 µs is out of range (0 to 1e+17 µs)"),
        (5, "trace event without a numeric pid/tid"),
    ]


def test_chrome_json_that_is_not_json_names_its_line(tmp_path: Path):
    """Invalid JSON is a TraceFormatError at the line of the fault, worded as every reader
    says it."""
    with pytest.raises(TraceFormatError) as info:
        _events(tmp_path, '[\n{"ph": }')
    assert (info.value.line_number, info.value.message) == (2, "not a JSON trace: Expecting value")


def test_chrome_json_with_a_number_too_long_to_read_says_so(tmp_path: Path):
    """A JSON number of more digits than Python reads is no JSON trace, said in the reader's
    words (Python's own named sys.set_int_max_str_digits)."""
    with pytest.raises(TraceFormatError) as info:
        _events(tmp_path, '{"traceEvents": [{"ph": "B", "ts": ' + "9" * 5000 + "}]}")
    assert info.value.message == "not a JSON trace: a number of more than 4300 digits"


@pytest.mark.parametrize(
    ("value", "ns"),
    [
        (1.5, 1500),
        (2, 2000),
        (True, None),
        ("1", None),
        (float("nan"), None),
        (2**62, None),
        (10**400, None),
        (-(10**400), None),
    ],
)
def test_json_time_ns_rounds_finite_numbers_in_range(value: object, ns: int | None):
    """Query and replay read JSON µs as rounded ns; booleans, text and NaN are not times, nor
    an integer too large for a float (JSON allows one: it was an OverflowError traceback)."""
    assert json_time_ns(value) == ns


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        # One event a line, with a non-object among them: still each event's own line.
        (
            '{"traceEvents": [\n{"ph": "M", "pid": 1},\n42,\n"x",\n{"ph": "M", "pid": 1}\n]}\n',
            [3, 4],
        ),
        # One line: every event is on line 1.
        ('[{"ph": "M", "pid": 1}, 1, {"ph": "M", "pid": 1}, 2]', [1, 1]),
        # Pretty-printed (an event over several lines): the line each event starts on (the
        # object without a ph is skipped with a warning too).
        (
            '{\n "traceEvents": [\n  {\n   "ph": "M",\n   "pid": 1\n  },\n  7,\n  {"a": "[x,"}, 8\n ]\n}',
            [7, 8, 8],
        ),
    ],
    ids=["per-line", "one-line", "pretty"],
)
def test_chrome_json_problems_name_the_line_the_event_is_on(
    tmp_path: Path, text: str, lines: list[int]
):
    """A skipped event's diagnostic names the file line the event starts on, however the
    JSON is laid out (not its position in the event list, which is no line of the file)."""
    events = _events(tmp_path, text)
    assert [event[2] for event in events if event[0] == PROBLEM] == lines
