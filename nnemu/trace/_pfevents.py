"""A Perfetto trace's packets as records in time order, and as canonical events.

``record_lists`` reads a trace file's packets (``_pbstream.packet_runs``, ``_pbdecode``'s
``Decoder``) into the reader's records, the timed ones put in time order in a bounded
window; ``event_batches`` turns them into the canonical events (``nnemu.trace._events``)
``_perfetto.perfetto_event_batches`` gives.  The loops over every record of a trace, apart
from ``_perfetto``'s typed records and text rows: a wheel runs this module compiled by
mypyc (``nnemu._native``), so it imports no protobuf package (the packet parser is handed
in: ``ParsePacket``).
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from typing import IO, Any

from nnemu.errors import TraceFormatError
from nnemu.trace._events import BEGIN as E_BEGIN
from nnemu.trace._events import END as E_END
from nnemu.trace._events import PROBLEM as E_PROBLEM
from nnemu.trace._events import PROCESS as E_PROCESS
from nnemu.trace._events import THREAD as E_THREAD
from nnemu.trace._events import Event
from nnemu.trace._ftrace import begin_payload
from nnemu.trace._pbdecode import (
    BEGIN,
    COUNTER,
    END,
    FLOW,
    PROCESS,
    TIMED,
    Decoder,
    ParsePacket,
    Problem,
    Record,
)
from nnemu.trace._pbstream import StreamStop, packet_runs
from nnemu.trace._pbwire import GZIP_MAGIC
from nnemu.trace._pftrack import track_record_events
from nnemu.trace._rows import MAX_ABS_NS, MAX_ID


def open_raw(path: str) -> IO[bytes] | gzip.GzipFile:
    """The file at ``path``, decompressed when it is gzip."""
    with open(path, "rb") as head:
        compressed = head.read(2) == GZIP_MAGIC
    if compressed:
        return gzip.open(path, "rb")
    return open(path, "rb")


def record_lists(
    path: str, parse: ParsePacket, problem: Problem, limit: int, *, values: bool = True
) -> Iterator[list[Record]]:
    """The records of the trace at ``path`` (``_perfetto.read_perfetto``'s, as tuples), the
    timed ones in time order (a record may come up to ``limit`` records after later ones
    in the file), in lists, a list per run of packets read (a loop over a list costs less
    per record than a generator's); ``values``: as ``_decoded``'s."""
    # Sorted in batches: a batch of 2 x limit records is sorted (timsort merges the
    # per-CPU runs it holds in about linear time; a stable sort by time keeps ties in
    # file order) and its first half goes out.  A batch already in order is not sorted.
    pending: list[Record] = []
    in_order = True
    previous = last_ts = -(2**63)
    warned = False
    for records in _decoded(path, parse, problem, values=values):
        out: list[Record] = []
        for record in records:
            kind: int = record[2]
            if kind >= TIMED:
                out.append(record)
                continue
            ts: int = record[0]
            if ts < previous:
                in_order = False
                if ts < last_ts and not warned:
                    warned = True
                    problem(
                        record[1],
                        f"events more than {limit} places out of time order:"
                        " some are read out of order",
                    )
            previous = ts
            pending.append(record)
            if len(pending) >= 2 * limit:
                if not in_order:
                    pending.sort(key=_time)
                    in_order = True
                    previous = _time(pending[-1])
                last_ts = _time(pending[limit - 1])
                out += pending[:limit]
                del pending[:limit]
        if out:
            yield out
    if not in_order:
        pending.sort(key=_time)
    if pending:
        yield pending


def _time(record: Record) -> int:
    """A timed record's time (its sort key)."""
    ts: int = record[0]
    return ts


def _decoded(
    path: str, parse: ParsePacket, problem: Problem, *, values: bool = True
) -> Iterator[list[Record]]:
    """``read_perfetto``'s records in file order, a run of packets at a time.

    Without ``values`` a ``TrackEvent``'s lists (flow ids, extra counter values) are not
    read (what costs most in a trace with flows): only the counter value of a counter
    track's own events is.
    """
    decoder = Decoder(problem, parse, values=values)
    out = decoder.out
    packets = 0
    with open_raw(path) as raw:
        runs = packet_runs(raw)
        while True:
            try:
                run = next(runs, None)
            except StreamStop as stop:
                _give_up(path, stop.offset, stop.message, packets, problem)
                return
            if run is None:
                return
            offsets, data = run
            if data is None and packets == 0:
                raise TraceFormatError(
                    path, 0, "", "not a Perfetto trace: expected a packet", offset=offsets[0]
                )
            if data is None:
                problem(offsets[0], "unknown field in the Trace message: skipped")
                continue
            packets += decoder.run(offsets, data)
            if decoder.stop is not None:
                # An undecodable packet: the records of those before it are kept.
                _give_up(path, *decoder.stop, packets, problem)
                yield out[:]
                return
            yield out[:]
            out.clear()


def _give_up(path: str, offset: int, message: str, packets: int, problem: Problem) -> None:
    """End the reading at a bad record: an error if nothing was read, else a warning."""
    if packets == 0:
        where = offset if offset >= 0 else None
        raise TraceFormatError(path, 0, "", f"not a Perfetto trace: {message}", offset=where)
    problem(offset, f"{message}; the trace is read up to here")


_Columns = tuple[bool, Any, Any, str]
"""What a thread's rows take of the names read: whether its TGID column is no number (no
row), an end's pid (its process, else -1), a begin's pid when its process is known (else
None: the mark's own), its TASK column."""


def _columns(tid: int, tgid: dict[int, int], tasks: dict[int, str]) -> _Columns:
    """``_Columns`` of thread ``tid``."""
    column = tgid.get(tid)
    task = tasks.get(tid, "<...>")
    if column is None:
        return False, -1, None, task
    return column < 0, column, column if column <= MAX_ID else tid, task


def event_batches(
    path: str, parse: ParsePacket, window: int, *, slices_only: bool = False
) -> Iterator[list[Event]]:
    """``_perfetto.perfetto_event_batches``: the canonical events of the trace at ``path``
    (``window``: ``record_lists``' ``limit``)."""
    out: list[Event] = []
    problems: list[Event] = []  # read with the records of the next list (or at the end)

    def problem(offset: int, message: str) -> None:
        problems.append((E_PROBLEM, 0, offset, 0, 0, message, None))

    tasks: dict[int, str] = {}  # tid -> its TASK column (a row's, stripped on the left)
    tgid: dict[int, int] = {}  # tid -> its process, as the trace gave it
    # tid -> what its rows take of those two (``_Columns``), made on its first row after
    # a name is read; the event's fields are the record's own objects (none made again).
    columns: dict[Any, _Columns] = {}
    for records in record_lists(path, parse, problem, window, values=not slices_only):
        if problems:
            out += problems
            problems.clear()
        for record in records:
            kind: int = record[2]
            if kind >= TIMED:  # a name
                columns.clear()
                place: int = record[1]
                pid: int | None = record[3]
                if kind == PROCESS:
                    assert pid is not None
                    tgid[pid] = pid
                    out.append((E_PROCESS, 0, place, pid, 0, record[4], None))
                    continue
                tid: int = record[4]
                name: str = record[5]
                if pid is not None:
                    tgid[tid] = pid
                if name:
                    tasks[tid] = name.lstrip() or " "
                    if pid is not None:
                        out.append((E_THREAD, 0, place, pid, tid, name, False))
                continue
            if kind in (COUNTER, FLOW):
                if not slices_only:
                    out += track_record_events(record)
                continue
            ts_at: Any = record[0]
            tid_at: Any = record[4]
            ts: int = ts_at
            tid = tid_at
            if ts < 0 or ts > MAX_ABS_NS or tid < 0 or tid > MAX_ID:
                continue  # no row: a time or tid no kernel writes
            known = columns.get(tid_at)
            if known is None:
                known = columns[tid_at] = _columns(tid, tgid, tasks)
            if known[0]:
                continue  # no row: its TGID column is no number
            begin_pid: Any
            if kind == BEGIN:
                name = record[5]
                begin_pid = known[2]
                if begin_pid is None:
                    given: Any = record[3]
                    number: int = given
                    if 0 < number <= MAX_ID:
                        begin_pid = given
                    else:  # as the text's tgid (pid_of_tgid): 0 or beyond pid_t, none
                        number %= 2**32
                        begin_pid = -1 if number == 0 or number > MAX_ID else number
            elif kind == END or record[6][:1] == "E":  # (a print that begins with E)
                out.append((E_END, ts_at, record[1], known[1], tid_at, "", known[3]))
                continue
            elif record[6][:1] == "B":
                payload_pid, name = begin_payload(record[6][1:])
                begin_pid = known[2]
                if begin_pid is None:
                    begin_pid = -1 if payload_pid is None else payload_pid
            else:
                continue  # a print that is no B/E row
            out.append((E_BEGIN, ts_at, record[1], begin_pid, tid_at, name, known[3]))
        if out:
            yield out
            out = []
    out += problems
    if out:
        yield out
