"""A systrace capture as a phone's Perfetto recording of it, with the ``perfetto`` package's classes.

``phone_perfetto(html, out)`` writes what ``adb shell perfetto`` with the ``linux.ftrace``
(atrace) and ``linux.process_stats`` data sources gives for the same capture, where it
differs from the systrace: a ``process_tree`` whose processes carry their full command
line (``/vendor/bin/hw/android.hardware.neuralnetworks@1.0-service-hvx``, a service's
executable path, as ``/proc/PID/cmdline`` has it), threads named by their 15-character
comm (``neuralnetworks@``) and only those of processes the scan saw (a process that started
after it, and its threads, have no entry: no tgid), and the atrace marks as ftrace
``print`` events (``B|tgid|name``) in per-CPU ``ftrace_events`` bundles, one bundle per CPU
per read period, so the file is not in time order across CPUs.  Import it as
``tests.phone_pftrace``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.perfetto_traces import READ_PERIOD_ROWS, SEQUENCE, _ns, _packet_bytes, _rows

pb2 = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")

COMM_CHARS = 15
"""A thread's comm (``TASK_COMM_LEN`` 16, with its NUL): what the kernel names a thread."""

_SYSTEM_BINARIES = ("/vendor/bin/hw/", "/system/bin/")


def cmdline(name: str) -> str:
    """The ``cmdline[0]`` a process named ``name`` in a ``ps`` dump has: a HAL service's
    executable path under ``/vendor/bin/hw/``, a native daemon's under ``/system/bin/``, an
    app's package name as is."""
    if name.startswith(("android.hardware.", "vendor.")):
        return _SYSTEM_BINARIES[0] + name
    if "." not in name and "/" not in name and ":" not in name:
        return _SYSTEM_BINARIES[1] + name
    return name


def _packets(html: Path) -> Iterator[bytes]:
    processes, threads, rows = _rows(html)
    tree = pb2.TracePacket()
    tree.timestamp = _ns(*rows[0][4:6]) if rows else 0
    tree.trusted_packet_sequence_id = SEQUENCE
    scanned = set()
    for process in processes:
        if process.pid in scanned:
            continue  # (a dump taken twice lists a process twice)
        scanned.add(process.pid)
        entry = tree.process_tree.processes.add()
        entry.pid = process.pid
        entry.cmdline.append(cmdline(process.name))
    named = set()
    for thread in threads:
        if thread.pid in scanned and thread.tid not in named:
            named.add(thread.tid)
            added = tree.process_tree.threads.add()
            added.tid, added.tgid, added.name = thread.tid, thread.pid, thread.name[:COMM_CHARS]
    yield _packet_bytes(tree)
    for start in range(0, len(rows), READ_PERIOD_ROWS):
        period = rows[start : start + READ_PERIOD_ROWS]
        for cpu in sorted({int(row[3]) for row in period}):
            packet = pb2.TracePacket()
            packet.trusted_packet_sequence_id = SEQUENCE
            bundle = packet.ftrace_events
            bundle.cpu = cpu
            for _task, tid, _tgid, row_cpu, seconds, fraction, text in period:
                if int(row_cpu) == cpu:
                    event = bundle.event.add()
                    event.timestamp = _ns(seconds, fraction)
                    event.pid = int(tid)
                    event.print.buf = text + "\n"
            yield _packet_bytes(packet)


def phone_perfetto(html: Path, out: Path) -> Path:
    """Write the systrace ``html`` as a phone's Perfetto recording at ``out``; return ``out``."""
    out.write_bytes(b"".join(_packets(html)))
    return out
