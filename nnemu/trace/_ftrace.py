"""Systrace HTML and ftrace text as canonical events (``nnemu.trace._events``).

``row_batches`` turns the blocks of lines ``FtraceLines.blocks`` gives (or ``time_ordered``
rows, ``one_line_blocks``) into lists of ``BEGIN``/``END`` events, each placed on its line,
with the thread name the row's ``TASK`` column shows, and its ``C|tgid|name|value`` rows
into ``COUNTER`` events; the process and thread names of a ``PROCESS DUMP`` come as
``PROCESS``/``THREAD`` events where the dump is.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from nnemu.trace._events import BEGIN, COUNTER, END, PROCESS, THREAD, Event
from nnemu.trace._html import DumpProcess, DumpThread
from nnemu.trace._rows import (
    COUNTER_RE,
    MALFORMED_COUNTER,
    ROW_RE,
    atrace_counter_value,
    atrace_tgid,
    pid_of,
    pid_of_tgid,
    timestamp_ns,
)


class DumpEvents:
    """An ``on_dump`` for ``FtraceLines`` that keeps its rows as events until
    ``row_batches`` gives them, in their place among the rows."""

    __slots__ = ("pending",)

    def __init__(self) -> None:
        self.pending: list[Event] = []

    def __call__(self, row: DumpProcess | DumpThread) -> None:
        if isinstance(row, DumpProcess):
            self.pending.append((PROCESS, 0, 0, row.pid, 0, row.name, None))
        else:
            self.pending.append((THREAD, 0, 0, row.pid, row.tid, row.name, False))


def row_batches(
    blocks: Iterable[tuple[int, list[str]]], dumps: DumpEvents | None = None
) -> Iterator[list[Event]]:
    """The ``tracing_mark_write`` B/E rows of ``blocks`` (the number of a block's first line,
    its consecutive lines: ``FtraceLines.blocks``) as events, a list per block.

    A row ``ROW_RE`` does not read, or whose time or tid is out of range, is no event (not
    a row a kernel writes).  ``B|tgid|name`` begins a slice of process ``tgid`` (read as
    Perfetto's trace processor reads it: ``+200``, `` 200``); ``B|tgid``, ``B|tgid|`` or any
    other ``B`` payload begins one with no name (``""``: its ``E`` closes it).  A row's TGID
    column, when it is a number, names the process; with neither, the thread is its own.
    An ``E`` row's pid is its TGID column, else its ``E|tgid``'s, else -1 (none).
    The event's last field is the row's ``TASK`` column as written (strip it to use it).
    A counter row is a ``COUNTER`` (``counter_event``).
    ``dumps``: the ``on_dump`` of the ``FtraceLines`` that reads the lines; its events come
    before the rows after them.
    """
    match = ROW_RE.match
    pending = dumps.pending if dumps is not None else []
    for first, block in blocks:
        out: list[Event] = []
        if pending:
            out += pending
            pending.clear()
        line_number = first - 1
        for line in block:
            line_number += 1
            if "tracing_mark_write" not in line:
                continue
            m = match(line)
            if m is None:
                counter = counter_event(line, line_number)
                if counter is not None:
                    out.append(counter)
                continue
            task, tid_text, tgid_column, seconds, fraction, kind, rest = m.groups()
            ts = timestamp_ns(seconds, fraction)
            tid = pid_of(tid_text)
            if ts is None or tid is None:
                continue  # out of range: not a row a kernel writes
            if kind == "B":
                pid, name = begin_payload(rest)
                if tgid_column is not None and tgid_column.isdigit():
                    pid = pid_of(tgid_column)
                out.append((BEGIN, ts, line_number, tid if pid is None else pid, tid, name, task))
            elif tgid_column is not None and tgid_column.isdigit():
                out.append((END, ts, line_number, pid_of(tgid_column) or 0, tid, "", task))
            else:
                parts = rest.split("|", 2)
                tgid = atrace_tgid(parts[1]) if len(parts) > 1 else None
                pid = None if tgid is None else pid_of_tgid(tgid)
                out.append((END, ts, line_number, -1 if pid is None else pid, tid, "", task))
        if out:
            yield out
    if pending:
        yield pending[:]
        pending.clear()


def begin_payload(rest: str) -> tuple[int | None, str]:
    """(pid or None, name) of a ``B`` mark's text after its ``B`` (``|tgid|name``), as
    ``row_batches`` reads it: the tgid as Perfetto's trace processor reads it, no pid when
    it is no number or beyond pid_t, and no name (``""``) without a tgid."""
    parts = rest.split("|", 2)
    tgid = atrace_tgid(parts[1]) if len(parts) > 1 else None
    pid = None if tgid is None else pid_of(str(tgid))
    name = parts[2].rstrip("\n") if tgid is not None and len(parts) == 3 else ""
    return pid, name


def counter_event(line: str, line_number: int) -> Event | None:
    """The ``COUNTER`` of a ``C|tgid|name|value`` row (``COUNTER_RE``), or None: not one.

    Read as Perfetto's trace processor reads it: the tgid as ``strtoul`` (``pid`` -1 when it
    names no process), the value an int64 as ``strtoll`` (`` 7`` and ``+7`` are 7; ``2.5``
    and ``7 |cat`` are none; the row's trailing whitespace dropped), a name not empty; a row
    that fails any of it (or its timestamp) has ``MALFORMED_COUNTER`` for its value.  ``tid``
    is the row's (0 when out of range: a counter row is never a track's value, -1).
    """
    m = COUNTER_RE.match(line)
    if m is None:
        return None
    _, tid_text, _, seconds, fraction, tgid_field, name, rest = m.groups()
    ts = timestamp_ns(seconds, fraction)
    tgid = atrace_tgid(tgid_field)
    value = atrace_counter_value(rest.rstrip().split("|", 1)[0])
    tid = pid_of(tid_text) or 0
    if ts is None or tgid is None or not name or value is None:
        return (COUNTER, ts or 0, line_number, -1, tid, name, MALFORMED_COUNTER)
    pid = pid_of_tgid(tgid)
    return (COUNTER, ts, line_number, -1 if pid is None else pid, tid, name, float(value))


def one_line_blocks(rows: Iterable[tuple[int, str]]) -> Iterator[tuple[int, list[str]]]:
    """Numbered lines (``time_ordered``'s, not consecutive) as ``row_batches`` reads blocks."""
    for number, line in rows:
        yield number, [line]
