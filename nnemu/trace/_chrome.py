"""Reading Chrome trace-event JSON (what ``nnemu run --trace x.json`` writes) as canonical
events (``nnemu.trace._events``): ``chrome_events``.

The document is ``{"traceEvents": [...]}`` or a bare list of events; a file of one event a
line (as nnemu and Chrome write it) is streamed (``json_line_events``), any other is read
as one document (``chrome_document_events``).  ``B``, ``E`` and ``X`` events are slices,
``M`` events give process and thread names, ``C`` counters and ``s``/``t``/``f`` (and a
slice's ``bind_id``) flows; an event of the wrong shape is a ``PROBLEM`` on its line.  A
document's ``systemTraceEvents`` text (the capture's ftrace, as catapult's systrace writes
it beside the events) gives its rows too (``system_text``), before or after the events as
the text is before or after them in the file, each on the file line the text is on (a JSON
string is one line).  Timestamps are µs, read as ns rounded to the nearest
(``json_time_ns``: nnemu's own ``ts_ns / 1000`` values come back exact).  An event's
"line" is the file line it starts on, however the document is laid out (one event a line,
one line, or pretty-printed).
"""

from __future__ import annotations

import decimal
import json
import math
import re
import sys
from collections.abc import Callable, Generator, Iterable, Iterator
from typing import Final

import attrs

from nnemu.errors import TraceFormatError
from nnemu.trace._events import (
    ARGS,
    BEGIN,
    COMPLETE,
    COUNTER,
    END,
    FLOW,
    FLOW_END,
    FLOW_END_NEXT,
    FLOW_IN,
    FLOW_OUT,
    FLOW_START,
    FLOW_STEP,
    FLOW_THROUGH,
    INSTANT,
    PROBLEM,
    PROCESS,
    RESTART,
    THREAD,
    Event,
)
from nnemu.trace._ftrace import DumpEvents, row_batches
from nnemu.trace._html import FtraceLines
from nnemu.trace._rows import MAX_ABS_NS, MAX_ID

_MAX_TS_US: Final = decimal.Decimal(10) ** 17
"""The end of the range of timestamps ``negative_ts`` names, in µs."""


NOT_AN_EVENT: Final = "trace event is not a JSON object: skipped"
"""What parse, query and replay say of an event that is not an object (a warning)."""
NO_PHASE: Final = "trace event without a phase (ph): skipped"
"""... of an event object with no ``ph`` (a warning; Perfetto counts it as a tokenizer
failure)."""
NO_PID_TID: Final = "trace event without a numeric pid/tid: skipped"
"""... of a ``B``/``E``/``X``/metadata event whose pid or tid is not a number (a warning)."""


def not_a_number_ts(value: object) -> str:
    """What parse, query and replay say of an event whose ``ts`` is not a number."""
    return f"timestamp {value!r} is not a number: event skipped"


def not_a_number_dur(value: object) -> str:
    """What query and replay say of an ``X`` event whose ``dur`` is there but no number."""
    return f"duration {value!r} is not a number: event skipped"


def negative_ts(value: object) -> str:
    """What parse, query and replay say of an event whose ``ts`` is below 0 (Perfetto's trace
    processor drops it too: ``trace_sorter_negative_timestamp_dropped``)."""
    return f"timestamp {value} µs is out of range (0 to {_MAX_TS_US:.0e} µs): event skipped"


NO_DUR: Final = "X event without a duration (dur): event skipped"
"""What query and replay say of an ``X`` (complete) event with no ``dur`` (Perfetto's trace
processor cannot read it either: ``json_parser_failure``)."""


def negative_dur(value: object) -> str:
    """What query and replay say of an ``X`` event whose ``dur`` is below 0 (Perfetto drops
    the slice: ``slice_negative_duration``)."""
    return f"duration {value} µs is negative: event skipped"


def is_json_number(value: object) -> bool:
    """``value`` is a JSON number, or a string of digits (as a pid or tid may be written)."""
    if isinstance(value, str):
        digits = value.strip().removeprefix("-")
        return digits.isascii() and digits.isdigit()
    return isinstance(value, int | float | decimal.Decimal) and not isinstance(value, bool)


def pid_tid_problem(ph: object, pid: object, tid: object) -> str:
    """What query and replay say of a slice event whose pid or tid they cannot use:
    ``NO_PID_TID`` unless both are numbers (then: out of range, or not whole)."""
    if is_json_number(pid) and is_json_number(tid):
        return f"{ph!s} event's pid/tid out of range (> {MAX_ID}) or not whole; skipped"
    return NO_PID_TID


NOT_CHROME_TRACE: Final = 'not a Chrome trace: expected {"traceEvents": [...]} or a list of events'
"""What parse and replay say of a JSON document that holds no list of trace events."""


def json_problem(err: ValueError | RecursionError) -> tuple[int, str]:
    """(line, message) of a JSON document that ``json`` could not read, as every reader says
    it (``FILE:LINE: error: not a JSON trace: ...``; line 0 when the error has no place).

    A file cut short ends in one (``Expecting value``, ``Unterminated string``), at its last line.
    """
    if isinstance(err, RecursionError):
        return 1, "not a JSON trace: nested too deeply"
    if not hasattr(err, "lineno") and "integer string conversion" in str(err):
        # (Python's own words name a function to call; no place is given.)
        limit = sys.get_int_max_str_digits()
        return 0, f"not a JSON trace: a number of more than {limit} digits"
    return getattr(err, "lineno", 0), f"not a JSON trace: {getattr(err, 'msg', str(err))}"


class NotLineJson(Exception):
    """A JSON file does not hold one event per line; it must be read as one document."""


_LINE_JSON_FRAME: Final = frozenset({"]", "]}", "],", "}"})
"""Lines around the events of a one-event-per-line file (besides the ``... [`` header)."""


def json_line_events(
    lines: Iterable[str], *, strict: bool = False
) -> Iterator[tuple[int, dict[str, object]]]:
    """(line number, event) of a JSON trace written one event per line, as nnemu and Chrome
    write it (``{"traceEvents": [`` or ``[``, one event a line, then ``]}`` or ``]``),
    read one line at a time: memory does not grow with the file.

    With ``strict``, the file must be exactly that: a first line ``[`` or an object
    opening ``"traceEvents": [`` last, the events, and the matching last line (a file cut short, or
    with other keys, raises ``NotLineJson``, so the caller's document parse reports it).
    Without, the frame lines are skipped wherever they are, but a file that opens the events
    (a ``... [`` line) and ends before a closing ``]`` line was cut short: ``NotLineJson`` too,
    so that it is refused as the document parse refuses it, not read as if whole.

    Raises:
        NotLineJson: A line is not a whole event (an object with ``ph``), the events
            opened are never closed, or (``strict``) the frame is not as above; the caller reads the file as one document instead.
    """
    scan: Callable[[str, int], tuple[object, int]]
    scan = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # set in __init__
    closing: str | None = None
    closed = False
    opened = False  # (not strict) a header line opened the events: ``... [``
    for line_number, line in enumerate(lines, 1):
        text = line.strip()
        if not text:
            continue
        if strict:
            if closed:
                raise NotLineJson
            if closing is None:
                closing = _closing_of(text)
                if closing is None:
                    raise NotLineJson
                continue
            if text == closing:
                closed = True
                continue
        elif text.endswith("[") or text in _LINE_JSON_FRAME:
            # The {"traceEvents": [ header and the ]} tail (frame lines only: no cost per event).
            if text.endswith("["):
                opened = True
            elif text.startswith("]"):
                closed = True
            continue
        # What json.loads does, less its per-call overhead (half the time of a line).
        try:
            event, end = scan(text, 0)
        except (StopIteration, ValueError, RecursionError) as err:
            raise NotLineJson from err
        if end != len(text) and text[end:].strip() != ",":
            raise NotLineJson
        if not isinstance(event, dict) or "ph" not in event:
            raise NotLineJson
        yield line_number, event
    if (strict or opened) and not closed:
        raise NotLineJson


def _closing_of(header: str) -> str | None:
    """The last line matching the first line ``header`` of a strict one-event-per-line
    file: ``]`` for ``[``, ``]}`` for an object whose last key opens ``traceEvents``
    (``{"displayTimeUnit": "ns", "traceEvents": [``); None for anything else."""
    if header == "[":
        return "]"
    if not (header.startswith("{") and header.endswith("[")):
        return None
    try:
        document = json.loads(header + "]}")
    except (ValueError, RecursionError):
        return None
    if isinstance(document, dict) and document.get("traceEvents") == []:
        return "]}"
    return None


_MAX_TS_NUMBER: Final = MAX_ABS_NS // 1000
"""The largest |time| in µs ``json_time_ns`` reads."""


def json_time_ns(value: object) -> int | None:
    """A JSON time in µs (``ts``, ``dur``) in ns (rounded), or None: not a finite
    number within ``MAX_ABS_NS``."""
    if isinstance(value, bool):
        return None
    # An int apart: one too large for a float, as JSON allows, is out of range too (and
    # mypyc, which reads ``int | float`` as float, would refuse it as a float).
    if isinstance(value, int):
        return value * 1000 if abs(value) <= _MAX_TS_NUMBER else None
    if not isinstance(value, float) or not math.isfinite(value) or abs(value) > _MAX_TS_NUMBER:
        return None
    return round(value * 1000)


_SPACE: Final = re.compile(r"[ \t\r\n]*")


def event_lines(text: str, document: object, count: int) -> list[int] | None:
    """The file line each of the ``count`` events of ``document`` (read from ``text``)
    starts on; None if the event list cannot be found in the text again."""
    lines = text.split("\n")
    starts = [number for number, line in enumerate(lines, 1) if line.lstrip().startswith("{")]
    if lines and lines[0].lstrip().startswith("{"):
        starts = starts[1:]  # the document's own opening brace
    if len(starts) == count:
        return starts  # one object a line (nnemu's own files)
    if len(lines) - lines.count("") == 1:
        return [1] * count  # one line (a compact document)
    # Any other layout: find each event's start by decoding the list again.
    start = _events_start(text, document)
    if start is None:
        return None
    decoder = json.JSONDecoder()
    starts = []
    line, counted, at = 1, 0, start + 1
    try:
        for _ in range(count):
            at = _SPACE.match(text, at).end()  # type: ignore[union-attr]  # always matches
            line += text.count("\n", counted, at)
            counted = at
            starts.append(line)
            at = _SPACE.match(text, decoder.raw_decode(text, at)[1]).end()  # type: ignore[union-attr]
            if text[at : at + 1] not in (",", "]"):
                return None
            at += 1
    except (ValueError, RecursionError):
        return None
    return starts


def _events_start(text: str, document: object) -> int | None:
    """Where the ``[`` of ``document``'s event list is in ``text`` (None: not found)."""
    if isinstance(document, list):
        at = len(text) - len(text.lstrip("\ufeff \t\r\n"))
    else:
        key = text.find('"traceEvents"')
        if key < 0:
            return None
        at = _SPACE.match(text, key + len('"traceEvents"')).end()  # type: ignore[union-attr]
        if text[at : at + 1] != ":":
            return None
        at = _SPACE.match(text, at + 1).end()  # type: ignore[union-attr]
    return at if text[at : at + 1] == "[" else None


_SYSTEM_KEY: Final = re.compile(r'"systemTraceEvents"[ \t\r\n]*:[ \t\r\n]*"')


@attrs.frozen
class SystemText:
    """A JSON document's ``systemTraceEvents`` text: the ftrace of the same capture."""

    text: str
    """The ftrace text."""
    line: int
    """The file line the JSON string is on (all of it: a JSON string has no line break);
    what places its rows' warnings.  0: not known."""
    first: bool
    """Whether it comes before the document's events in the file (file order reads its
    rows first)."""


def system_text(text: str | None, document: object) -> SystemText | None:
    """The ``systemTraceEvents`` text of ``document`` (parsed from ``text``), or None."""
    system = document.get("systemTraceEvents") if isinstance(document, dict) else None
    if not isinstance(system, str):
        return None
    if text is None:
        return SystemText(system, 0, True)
    keys = list(_SYSTEM_KEY.finditer(text))
    found = keys[-1] if keys else None  # the last: the value json.loads keeps
    if found is None:  # (a key written with escapes): the line of the document
        return SystemText(system, 1, True)
    events = _events_start(text, document)
    first = events is None or found.start() < events
    return SystemText(system, text.count("\n", 0, found.end()) + 1, first)


def task_name(name: str) -> str:
    """A JSON thread name as a row's ``TASK`` column shows it (no blanks, at most 64
    characters, ``<...>`` if empty): what parse names a thread's rows with."""
    return "".join("_" if ch.isspace() else ch for ch in name)[:64] or "<...>"


# -- as canonical events (``nnemu.trace._events``) ---------------------------------


def json_id(value: object) -> int | None:
    """A JSON pid or tid as an int (a number, or a string of digits, as parse reads it), or
    None: not one, or beyond Linux's ``pid_t``."""
    if isinstance(value, str):
        if not is_json_number(value) or len(value.strip()) > 11:
            return None  # (a longer one is beyond pid_t, and int() refuses > 4300 digits)
        value = int(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) <= MAX_ID:
        return value
    return None


def flow_id(value: object) -> int | str | None:
    """A JSON flow ``id`` (or ``bind_id``) as trace processor keys it (hex text read as a
    number); None if unusable."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            return int(value, 16)
        except ValueError:
            return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, int):
        return value
    return None  # an object, a list, a fraction: no id


_SLICE_PHASES: Final = frozenset({"B", "E", "X", "M", "i", "I", "R"})
"""The phases of thread slices and names (``chrome_events`` checks their pid and tid)."""
_FLOW_HOW: Final = {"s": FLOW_START, "t": FLOW_STEP}
_BOUND_HOW: Final = {(True, True): FLOW_THROUGH, (True, False): FLOW_IN, (False, True): FLOW_OUT}


def _flow_time(event: dict[str, object]) -> tuple[int | None, int | None]:
    """(pid, ts in ns; each None: none, or out of range) of a ``C`` or flow event."""
    ts = json_time_ns(event.get("ts"))
    return json_id(event.get("pid")), None if ts is None or ts < 0 else ts


def _counter_events(line_number: int, event: dict[str, object]) -> Iterator[Event]:
    """A JSON ``C`` event's ``COUNTER`` events: one per arg (a value per number; a string
    that reads as one counts, as in Perfetto)."""
    pid, ts = _flow_time(event)
    name = str(event.get("name", ""))
    if pid is None or ts is None:
        problem = "C event without a pid and a finite ts in range; skipped"
        yield (COUNTER, 0, line_number, -1, -1, name, problem)
        return
    args = event.get("args")
    if not isinstance(args, dict):
        return
    for key, raw in args.items():
        value: float | str | None = None
        if isinstance(raw, int | float | str) and not isinstance(raw, bool):
            try:
                value = float(raw)
            except (ValueError, OverflowError):  # not a number, or an int beyond a double
                value = None
        if value is None:
            value = f"counter {name!r} arg {key!r} is not a number; skipped"
        yield (COUNTER, ts, line_number, pid, -1, f"{name} {key}", value)


def _flow_event(line_number: int, event: dict[str, object], ph: str) -> Event:
    """A JSON v1 flow event's (``s``, ``t``, ``f``) ``FLOW``."""
    pid, ts = _flow_time(event)
    tid = json_id(event.get("tid", event.get("pid")))
    ident = flow_id(event.get("id"))
    name = str(event.get("name", ""))
    if tid is None or ts is None or ident is None:
        problem = f"{ph} event without a tid, an id and a finite ts in range; skipped"
        return (FLOW, 0, line_number, -1, 0, name, problem)
    how = _FLOW_HOW.get(ph, FLOW_END if event.get("bp") == "e" else FLOW_END_NEXT)
    cat = str(event.get("cat", ""))
    return (FLOW, ts, line_number, -1 if pid is None else pid, tid, name, (how, cat, ident))


def chrome_events(events: Iterable[tuple[int, object]]) -> Generator[Event, None, int]:
    """The ``B``, ``E``, ``X``, thread instant (``i``/``I`` of thread scope, ``R``),
    name-metadata (``M``), counter (``C``) and flow (``s``, ``t``, ``f``, and ``bind_id``
    on a slice) events of a Chrome trace as canonical events, in file order, each placed
    on its file line (0: not known).

    ``events`` are (file line, event): a document's list or ``json_line_events``. An event
    that is not an object, has no ``ph``, a pid or tid that is no id, a ``ts`` (an ``X``:
    a ``dur``) that is no time, or a negative ``ts`` or ``dur`` is a ``PROBLEM`` (what
    parse, query and replay say of it); other phases (async events, global and process
    instants) are skipped.  ``X`` is one ``COMPLETE``, an instant one ``INSTANT``; a slice
    event's name is ``""`` unless a string.  A ``B``, ``X`` or instant with a ``cat`` or
    ``args`` comes after their ``ARGS``; a ``B`` or ``X`` with a ``bind_id`` and
    ``flow_in`` or ``flow_out`` is followed by its ``FLOW`` (``FLOW_IN``, ``FLOW_OUT`` or
    ``FLOW_THROUGH``).

    Returns:
        The line of the last event (0: none), read or skipped: where parse says that the
        trace holds no NNAPI marks.
    """
    line_number = 0
    for line_number, event in events:  # (the last is returned)
        if not isinstance(event, dict):
            yield (PROBLEM, 0, line_number, 0, 0, NOT_AN_EVENT, None)
            continue
        ph = event.get("ph")
        if ph not in _SLICE_PHASES or ((ph == "i" or ph == "I") and event.get("s") in ("g", "p")):
            if ph == "C":
                yield from _counter_events(line_number, event)
            elif ph in ("s", "t", "f"):
                yield _flow_event(line_number, event, ph)
            elif "ph" not in event:
                yield (PROBLEM, 0, line_number, 0, 0, NO_PHASE, None)
            continue
        raw_pid = event.get("pid")
        raw_tid = event.get("tid", raw_pid)
        # (An int in range, the usual pid, is taken as it is: json_id's checks cost.)
        pid = raw_pid if type(raw_pid) is int and -MAX_ID <= raw_pid <= MAX_ID else json_id(raw_pid)
        tid = raw_tid if type(raw_tid) is int and -MAX_ID <= raw_tid <= MAX_ID else json_id(raw_tid)
        if pid is None or tid is None:
            yield (PROBLEM, 0, line_number, 0, 0, pid_tid_problem(ph, raw_pid, raw_tid), ph)
            continue
        if ph == "M":
            args = event.get("args")
            name = args.get("name") if isinstance(args, dict) else None
            if isinstance(name, str):
                if event.get("name") == "process_name":
                    yield (PROCESS, 0, line_number, pid, 0, name, None)
                elif event.get("name") == "thread_name":
                    yield (THREAD, 0, line_number, pid, tid, name, True)
            continue
        raw_ts = event.get("ts")
        kind = type(raw_ts)
        if (kind is float or kind is int) and -_MAX_TS_NUMBER <= raw_ts <= _MAX_TS_NUMBER:  # type: ignore[operator]
            ts_ns: int | None = round(raw_ts * 1000)  # type: ignore[operator]  # (json_time_ns)
        else:
            ts_ns = json_time_ns(raw_ts)
        if ts_ns is None:
            problem = (
                f"{ph!s} event's ts {raw_ts!r} is not finite or out of range; skipped"
                if is_json_number(raw_ts)
                else not_a_number_ts(raw_ts)
            )
            yield (PROBLEM, 0, line_number, 0, 0, problem, ph)
            continue
        if ts_ns < 0:  # (parse and query refuse it, and Perfetto drops it)
            yield (PROBLEM, 0, line_number, 0, 0, negative_ts(raw_ts), ph)
            continue
        if ph == "X":
            raw_dur = event.get("dur")
            dur_ns = json_time_ns(raw_dur)
            if dur_ns is None or dur_ns < 0:
                if raw_dur is None:
                    problem = NO_DUR
                elif dur_ns is not None:
                    problem = negative_dur(raw_dur)
                elif is_json_number(raw_dur):
                    problem = f"X event's dur {raw_dur!r} is not finite or out of range; skipped"
                else:
                    problem = not_a_number_dur(raw_dur)
                yield (PROBLEM, 0, line_number, 0, 0, problem, ph)
                continue
        if ph == "E":
            yield (END, ts_ns, line_number, pid, tid, "", None)
            continue
        if "cat" in event or "args" in event:
            yield (ARGS, ts_ns, line_number, pid, tid, "", event)
        name = event.get("name", "")
        if not isinstance(name, str):
            name = ""
        if ph == "B":
            yield (BEGIN, ts_ns, line_number, pid, tid, name, None)
        elif ph == "X":
            yield (COMPLETE, ts_ns, line_number, pid, tid, name, dur_ns)
        else:
            yield (INSTANT, ts_ns, line_number, pid, tid, name, None)
            continue
        if "bind_id" in event:
            how = _BOUND_HOW.get((event.get("flow_in") is True, event.get("flow_out") is True))
            ident = flow_id(event["bind_id"])
            if how is not None and ident is not None:
                yield (FLOW, ts_ns, line_number, pid, tid, "", (how, "", ident))
    return line_number


def time_ordered_events(events: Iterable[Event]) -> list[Event]:
    """The events of a JSON trace's reading (``TraceEvents.events``; those after its last
    ``RESTART``) sorted by time, ties in file order: the order in which Perfetto's trace
    processor matches them.  An event of no time (a name, a ``PROBLEM``, a counter or flow
    that could not be read) keeps its place after the event before it."""
    keyed: list[tuple[int, int, Event]] = []
    last = -MAX_ABS_NS - 1
    for index, event in enumerate(events):
        kind = event[0]
        if kind in _TIMED or (kind in (COUNTER, FLOW) and not isinstance(event[6], str)):
            last = event[1]
        elif kind == RESTART:
            keyed.clear()
            last = -MAX_ABS_NS - 1
            continue
        keyed.append((last, index, event))
    keyed.sort(key=_time_then_place)
    return [event for _, _, event in keyed]


_TIMED: Final = frozenset({BEGIN, END, COMPLETE, INSTANT, ARGS})
"""The kinds whose ``ts`` is always a time (a ``COUNTER``'s or ``FLOW``'s unless unread)."""


def _time_then_place(item: tuple[int, int, Event]) -> tuple[int, int]:
    return item[0], item[1]


def chrome_document_events(source: str, text: str) -> Generator[Event, None, int]:
    """A Chrome trace read as one document (``{"traceEvents": [...]}`` or a list) as
    canonical events: ``chrome_events`` of its events, each on the file line it starts on,
    and the rows of its ``systemTraceEvents`` text (``row_batches``, each on the line the
    text is on) before or after them as the text is in the file; the text's process dump
    first.

    Returns:
        The line of its last event (``chrome_events``').

    Raises:
        TraceFormatError: ``text`` is not JSON, or holds no list of events.
    """
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as err:  # also an int of > 4300 digits
        line, message = json_problem(err)
        raise TraceFormatError(source, line, "", message) from err
    events = document.get("traceEvents") if isinstance(document, dict) else document
    embedded = system_text(text, document)
    rows: list[tuple[int, str]] = []
    dumps = DumpEvents()
    if embedded is not None:
        ftrace = FtraceLines(embedded.text.splitlines(keepends=True), on_dump=dumps)
        rows = [(embedded.line, line) for _, line in ftrace]
        if events is None:
            events = []
    if not isinstance(events, list):
        raise TraceFormatError(source, 1, "", NOT_CHROME_TRACE)
    lines = event_lines(text, document, len(events))
    text = ""  # (not needed again: its memory goes)
    yield from dumps.pending
    dumps.pending.clear()
    first = embedded is None or embedded.first
    if first:
        yield from _system_row_events(rows)
    last = yield from chrome_events(_placed(lines, events))
    if not first:
        yield from _system_row_events(rows)
    return last


def _placed(lines: list[int] | None, events: list[object]) -> Iterator[tuple[int, object]]:
    """(file line, event) of a document's ``events`` (``event_lines``; 0: not known)."""
    for index, event in enumerate(events):
        yield (0 if lines is None else lines[index]), event


def _system_row_events(rows: list[tuple[int, str]]) -> Iterator[Event]:
    """The events of a document's ``systemTraceEvents`` rows (``row_batches``), each
    row's problems (``PROBLEM``, as a text file's rows have them) before its events."""
    for number, line in rows:
        # A row of the text is whole (the document holds it), its line break or none.
        whole = line if line.endswith("\n") else line + "\n"
        for batch in row_batches([(number, [whole])], problems=True):
            yield from batch
