"""Loading Chrome trace-event JSON into the query tables: ``JsonLoader``, the ``Loader``
that also reads JSON events (B, E, X, thread instants and marks, flows, counters, name
metadata), one per line or a document's, in file order or in time order.

A wheel runs this module compiled by mypyc with the loader (``nnemu._native``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from nnemu.query._loader import Loader
from nnemu.query._slice_rows import END_AT
from nnemu.trace import (
    MAX_ABS_NS,
    MAX_ID,
    NO_DUR,
    NO_PHASE,
    NO_PID_TID,
    NOT_AN_EVENT,
    ROW_RE,
    FtraceLines,
    SystemText,
    flow_id,
    is_json_number,
    json_line_events,
    json_time_ns,
    negative_dur,
    negative_ts,
    not_a_number_dur,
    not_a_number_ts,
    pid_tid_problem,
    timestamp_ns,
)

_JSON_SLICE_PHASES: Final = frozenset({"B", "E", "X", "i", "I", "R"})
"""Phases of thread slices, as trace processor reads them: ``i``/``I`` (an instant of its
thread unless its scope ``s`` is ``g`` or ``p``) and ``R`` (a mark) are slices of dur 0;
``n`` (a nestable async instant) is an async track's, not loaded (as ``b``/``e``)."""
_OTHER_SCOPES: Final = frozenset({"g", "p"})
"""An instant's ``s`` that puts it on a global or process track, not its thread's."""
NO_NAME: Final = "[No name]"
"""The name trace processor gives a JSON slice whose ``name`` is empty, missing or no string."""
_JSON_FLOW_PHASES: Final = frozenset({"s", "t", "f"})


def _int(value: object) -> int | None:
    """A JSON pid or tid as an int, or None (not an integer, or out of pid_t's range)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        text = value.strip()
        digits = text.removeprefix("-")
        if not (digits.isascii() and digits.isdigit() and len(digits) <= 10):
            return None
        value = int(text)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and abs(value) <= MAX_ID:
        return value
    return None


def _arg_value(value: object) -> object:
    """A JSON arg as SQLite stores it (JSON text for what SQLite has no type for)."""
    if isinstance(value, str | float) or (
        isinstance(value, int) and not isinstance(value, bool) and abs(value) < 2**63
    ):
        return value
    return json.dumps(value, sort_keys=True)


class JsonLoader(Loader):
    """A ``Loader`` that also reads Chrome trace-event JSON."""

    def json_event(
        self, event: object, line_number: int | None, *, store_line: bool = True
    ) -> None:
        """Load one Chrome trace event (B, E, X, instants and name metadata); warn of one that
        is not an object, has no ``ph``, or a pid, tid or ts of the wrong type, as parse does.
        ``line_number`` places warnings, and is the slice's ``line`` if ``store_line``."""
        where = line_number or 0
        if not isinstance(event, Mapping):
            self.warn(where, NOT_AN_EVENT)
            return
        ph = event.get("ph")
        if ph == "M":
            self._json_metadata(event, where)
            return
        if ph not in _JSON_SLICE_PHASES or (ph in ("i", "I") and event.get("s") in _OTHER_SCOPES):
            if ph in _JSON_FLOW_PHASES or ph == "C":
                self._json_flow_or_counter(event, ph, where)
            elif "ph" not in event:
                self.warn(where, NO_PHASE)
            return  # async events and global or process instants have no thread slice
        raw_pid = event.get("pid")
        raw_tid = event.get("tid", raw_pid)
        pid = _int(raw_pid)
        tid = _int(raw_tid)
        if pid is None or tid is None:
            self.warn(where, pid_tid_problem(ph, raw_pid, raw_tid))
            return
        raw_ts = event.get("ts")
        ts = json_time_ns(raw_ts)
        if ts is None:
            if not is_json_number(raw_ts):
                self.warn(where, not_a_number_ts(raw_ts))
            else:
                self.warn(
                    where, f"{ph!s} event's ts {raw_ts!r} is not finite or out of range; skipped"
                )
            return
        if ts < 0:  # (parse refuses it, and Perfetto drops it)
            self.warn(where, negative_ts(raw_ts))
            return
        raw_dur = event.get("dur")
        dur = 0
        if ph == "X":
            if raw_dur is None:
                self.warn(where, NO_DUR)
                return
            if not is_json_number(raw_dur):
                self.warn(where, not_a_number_dur(raw_dur))
                return
            dur = json_time_ns(raw_dur) or 0
            if dur < 0:
                self.warn(where, negative_dur(raw_dur))
                return
        thread = self._thread(tid, pid)
        self._check_order(thread, ts, where)
        if ph == "E":
            self.end(thread, ts, where)
            return
        end: int | None = None
        if ph == "X":
            end = min(MAX_ABS_NS, ts + dur)
        elif ph != "B":
            end = ts
        args: list[tuple[str, object]] = []
        event_args = event.get("args")
        if isinstance(event_args, Mapping):
            for key, value in event_args.items():
                args.append((f"args.{key}", _arg_value(value)))
        category = event.get("cat")
        name = event.get("name")
        self.begin(
            thread,
            ts,
            name if isinstance(name, str) and name else NO_NAME,
            category=category if isinstance(category, str) else None,
            args=args,
            end=end,
            line=line_number if store_line else None,
        )

    def _json_flow_or_counter(self, event: Mapping[str, object], ph: str, where: int) -> None:
        """A JSON flow (``s``, ``t``, ``f``) or counter (``C``) event."""
        pid = _int(event.get("pid"))
        ts = json_time_ns(event.get("ts"))
        if ts is not None and ts < 0:
            ts = None  # (out of range, as for the other events)
        name = str(event.get("name", ""))
        if ph == "C":
            args = event.get("args")
            if pid is None or ts is None:
                self.warn(where, "C event without a pid and a finite ts in range; skipped")
            elif isinstance(args, Mapping):
                self.perfetto.json_counter(pid, name, ts, args, where)
            return
        tid = _int(event.get("tid", pid))
        ident = flow_id(event.get("id"))
        if tid is None or ts is None or ident is None:
            self.warn(where, f"{ph} event without a tid, an id and a finite ts in range; skipped")
            return
        thread = self._thread(tid, pid)
        if thread.stack and thread.stack[-1][END_AT] is not None:
            self._expire(thread, ts)
        top = thread.top()
        key = (str(event.get("cat", "")), name, ident)
        self.perfetto.flow_event(ph, key, thread.utid, top, event.get("bp") == "e", where)

    def _json_metadata(self, event: Mapping[str, object], where: int) -> None:
        args = event.get("args")
        name = args.get("name") if isinstance(args, Mapping) else None
        raw_pid = event.get("pid")
        pid = _int(raw_pid)
        if not is_json_number(raw_pid) or not is_json_number(event.get("tid", raw_pid)):
            self.warn(where, NO_PID_TID)  # as parse says it; out of range: no name, silently
            return
        if not isinstance(name, str):
            return
        if event.get("name") == "process_name" and pid is not None:
            self._process_names[pid] = name
        elif event.get("name") == "thread_name":
            tid = _int(event.get("tid"))
            if tid is not None:
                self._json_thread_names[(pid, tid)] = name

    def load_json_in_time_order(
        self,
        events: Iterable[tuple[int | None, object]],
        *,
        store_line: bool,
        rows: Sequence[tuple[int, str]] = (),
        rows_first: bool = True,
    ) -> None:
        """Load (file line, event) pairs sorted by ``ts``, ties in file order (as Perfetto
        matches them); an event without a usable ``ts`` keeps its place after the one before
        it.  ``store_line``: as ``json_event``'s.  ``rows``: the document's
        ``systemTraceEvents`` rows (``system_rows``), merged with the events by time (in
        file order before them with ``rows_first``, else after them), as Perfetto sorts
        both."""
        keyed: list[tuple[int, int, int | None, object]] = []
        if rows_first:
            _key_rows(keyed, rows)
        last = -MAX_ABS_NS - 1
        for line_number, event in events:
            if isinstance(event, Mapping):
                ts = json_time_ns(event.get("ts"))
                if ts is not None:
                    last = ts
            keyed.append((last, len(keyed), line_number, event))
        if not rows_first:
            _key_rows(keyed, rows)
        keyed.sort(key=_by_time_then_place)
        for _, _, line_number, event in keyed:
            if isinstance(event, _SystemRow):
                self._slow_row(0 if line_number is None else line_number, event.text)
            else:
                self.json_event(event, line_number, store_line=store_line)

    def system_rows(self, embedded: SystemText) -> list[tuple[int, str]]:
        """The ``tracing_mark_write`` rows of a JSON document's ``systemTraceEvents`` text,
        each numbered with the file line the text is on (its process dump read here); its
        slices keep line NULL, as the document's events do."""
        self._file_lines = False
        source = FtraceLines(embedded.text.splitlines(keepends=True), on_dump=self._dump_row)
        return [(embedded.line, line) for _, line in source if "tracing_mark_write" in line]

    def load_json_lines(self, stream: Iterable[str]) -> None:
        """Load a JSON trace written one event per line (as nnemu and Chrome write it).

        Raises:
            NotLineJson: A line is not a whole event; the caller reads the document.
        """
        for line_number, event in json_line_events(stream):
            self.json_event(event, line_number)


def _by_time_then_place(item: tuple[int, int, int | None, object]) -> tuple[int, int]:
    return item[0], item[1]


class _SystemRow:
    """An ftrace row of a JSON document's ``systemTraceEvents``, among its events."""

    def __init__(self, text: str) -> None:
        self.text = text


def _key_rows(
    keyed: list[tuple[int, int, int | None, object]], rows: Sequence[tuple[int, str]]
) -> None:
    """Append ``rows`` to ``keyed`` as ``load_json_in_time_order`` sorts them: by their
    timestamp (a row without one after the row before it), then their place."""
    last = -MAX_ABS_NS - 1
    for line_number, line in rows:
        m = ROW_RE.match(line)
        if m is not None:
            ts = timestamp_ns(m.group(4), m.group(5))
            if ts is not None:
                last = ts
        keyed.append((last, len(keyed), line_number, _SystemRow(line)))
