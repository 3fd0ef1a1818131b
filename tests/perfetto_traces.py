"""Building Perfetto protobuf traces from systrace ones, with the ``perfetto`` package's classes.

``systrace_to_perfetto`` turns a systrace HTML (a phone's, or nnemu's own) into
the protobuf trace a phone records today: ``process_tree`` from its
``PROCESS DUMP`` (and the threads its rows show), then each ``tracing_mark_write``
row as an ftrace ``print`` event in per-CPU ``FtraceEventBundle``s, read period
by read period as ``traced_probes`` writes them (so the file is not in time
order across CPUs).  Variants: thread names from ``compact_sched`` interned
comms instead of ``process_tree`` threads; the B/E marks as ``track_event``
slices with interned names; gzip.  Import it as ``tests.perfetto_traces``.
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from nnemu.trace import DumpProcess, DumpThread, FtraceLines

pb2 = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")

ROW = re.compile(
    r"\s*(.+?)-(\d+)\s+\(\s*(-----|\d+)\)\s+\[(\d+)\]\s+\S+\s+(\d+)\.(\d+): tracing_mark_write: (.*)"
)
READ_PERIOD_ROWS = 200
"""Rows per read period: each period gives one bundle per CPU."""
SEQUENCE = 1


def _rows(path: Path) -> tuple[list[DumpProcess], list[DumpThread], list[tuple[str, ...]]]:
    processes: list[DumpProcess] = []
    threads: list[DumpThread] = []

    def on_dump(row: DumpProcess | DumpThread) -> None:
        (processes if isinstance(row, DumpProcess) else threads).append(row)  # type: ignore[arg-type]

    rows = []
    with open(path, encoding="utf-8") as stream:
        for _, line in FtraceLines(stream, on_dump=on_dump):
            m = ROW.match(line.rstrip("\n"))
            if m is not None:
                rows.append(m.groups())
    return processes, threads, rows


def _ns(seconds: str, fraction: str) -> int:
    return int(seconds) * 1_000_000_000 + int(fraction.ljust(9, "0"))


def _packet_bytes(packet: object) -> bytes:
    trace = pb2.Trace()
    trace.packet.append(packet)
    return trace.SerializeToString()


def _packets(html: Path, *, compact: bool, track_event: bool, per_cpu: bool) -> Iterator[bytes]:
    processes, threads, rows = _rows(html)
    names: dict[int, tuple[int | None, str]] = {}
    for task, tid, tgid, *_ in rows:
        names.setdefault(int(tid), (None if tgid == "-----" else int(tgid), task.strip()))
    tree = pb2.TracePacket()
    tree.timestamp = _ns(*rows[0][4:6]) if rows else 0
    tree.trusted_packet_sequence_id = SEQUENCE
    seen_pids = set()
    for process in processes:
        entry = tree.process_tree.processes.add()
        entry.pid = process.pid
        entry.cmdline.append(process.name)
        seen_pids.add(process.pid)
    if not compact:
        for thread in threads:
            added = tree.process_tree.threads.add()
            added.tid, added.tgid, added.name = thread.tid, thread.pid, thread.name
        dumped = {thread.tid for thread in threads}
        for tid, (tgid, task) in sorted(names.items()):
            if tid not in dumped:
                added = tree.process_tree.threads.add()
                added.tid, added.name = tid, task
                if tgid is not None:
                    added.tgid = tgid
    else:
        for tid, (tgid, _) in sorted(names.items()):
            if tgid is not None and tgid != tid:
                added = tree.process_tree.threads.add()
                added.tid, added.tgid = tid, tgid  # no name: the scheduler names it
    yield _packet_bytes(tree)
    if track_event:
        yield from _track_event_packets(rows, names)
        return
    if compact:
        yield _compact_sched(rows, names)
    for start in range(0, len(rows), READ_PERIOD_ROWS):
        period = rows[start : start + READ_PERIOD_ROWS]
        cpus = sorted({int(row[3]) for row in period}) if per_cpu else [-1]
        for cpu in cpus:
            packet = pb2.TracePacket()
            packet.trusted_packet_sequence_id = SEQUENCE
            bundle = packet.ftrace_events
            bundle.cpu = max(cpu, 0)
            for _task, tid, _tgid, row_cpu, seconds, fraction, text in period:
                if cpu >= 0 and int(row_cpu) != cpu:
                    continue
                event = bundle.event.add()
                event.timestamp = _ns(seconds, fraction)
                event.pid = int(tid)
                event.print.buf = text + "\n"
            yield _packet_bytes(packet)


def _compact_sched(rows: list[tuple[str, ...]], names: dict[int, tuple[int | None, str]]) -> bytes:
    """One bundle whose compact sched_switch records name every thread (interned comms)."""
    packet = pb2.TracePacket()
    packet.trusted_packet_sequence_id = SEQUENCE
    bundle = packet.ftrace_events
    bundle.cpu = 0
    compact = bundle.compact_sched
    table: dict[str, int] = {}
    previous = 0
    first = max(_ns(*rows[0][4:6]) - 1000, 0) if rows else 0
    for tid, (_, task) in sorted(names.items()):
        index = table.setdefault(task, len(table))
        compact.switch_timestamp.append(first - previous)
        previous = first
        compact.switch_prev_state.append(0)
        compact.switch_next_pid.append(tid)
        compact.switch_next_prio.append(120)
        compact.switch_next_comm_index.append(index)
    compact.intern_table.extend(table)
    return _packet_bytes(packet)


def _track_event_packets(
    rows: list[tuple[str, ...]], names: dict[int, tuple[int | None, str]]
) -> Iterator[bytes]:
    """Thread tracks and TrackEvent slices (interned names) for the B/E rows."""
    for tid, (tgid, task) in sorted(names.items()):
        packet = pb2.TracePacket()
        packet.trusted_packet_sequence_id = SEQUENCE
        packet.track_descriptor.uuid = tid
        packet.track_descriptor.thread.tid = tid
        packet.track_descriptor.thread.pid = tgid if tgid is not None else tid
        packet.track_descriptor.thread.thread_name = task
        yield _packet_bytes(packet)
    interned: dict[str, int] = {}
    first = True
    for _task, tid, _tgid, _cpu, seconds, fraction, text in rows:
        packet = pb2.TracePacket()
        packet.trusted_packet_sequence_id = SEQUENCE
        packet.timestamp = _ns(seconds, fraction)
        packet.track_event.track_uuid = int(tid)
        if text.startswith("B|"):
            name = text.split("|", 2)[2]
            if name not in interned:
                interned[name] = len(interned) + 1
                entry = packet.interned_data.event_names.add()
                entry.iid, entry.name = interned[name], name
            packet.track_event.type = pb2.TrackEvent.TYPE_SLICE_BEGIN
            packet.track_event.name_iid = interned[name]
        elif text.startswith("E"):
            packet.track_event.type = pb2.TrackEvent.TYPE_SLICE_END
        else:
            continue  # not a slice: a track_event trace does not carry it
        # SEQ_NEEDS_INCREMENTAL_STATE (interned names), first SEQ_INCREMENTAL_STATE_CLEARED.
        packet.sequence_flags = 3 if first else 2
        first = False
        yield _packet_bytes(packet)


def systrace_to_perfetto(
    html: Path,
    out: Path,
    *,
    compact: bool = False,
    track_event: bool = False,
    compress: bool = False,
    per_cpu: bool = True,
) -> Path:
    """Write the systrace ``html`` as a Perfetto protobuf trace at ``out``; return ``out``.

    ``per_cpu=False`` puts each read period's rows in one bundle in their order (a
    one-CPU device): events at one time on different CPUs keep the HTML's order,
    which an emulated trace (many events at one virtual time) needs.
    """
    data = b"".join(_packets(html, compact=compact, track_event=track_event, per_cpu=per_cpu))
    out.write_bytes(gzip.compress(data, mtime=0) if compress else data)
    return out
