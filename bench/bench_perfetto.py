"""Reading Perfetto protobuf traces: CPU time and peak RSS on a large trace.

Writes a Perfetto trace of about ``--mb`` MB under /tmp (deleted afterwards):
a ``process_tree`` packet, then per-CPU ``FtraceEventBundle``s of ftrace
``print`` events, read period by read period as ``traced_probes`` writes them
(the app's rows on CPU 0, the driver's on CPU 1: the file is not in time order
across CPUs).  The events are the 18-row executions of ``bench_parser.py``, in
runs of 20.  With ``--text`` the same rows are also written as ftrace text, for
the ratio protobuf / text on the same content.

Each measurement runs in a fresh subprocess, so its peak RSS
(``ru_maxrss``) is its own: ``read_perfetto`` alone (counting records), and
``parse_file`` (``nnemu parse``), best CPU time of ``--repeat``.

    python bench/bench_perfetto.py [--mb 100] [--repeat 3] [--text]

``--ratios`` measures issue 26's two ratios instead, side by side in one run, on an
emulated run recorded as ``.html`` and as ``.pftrace`` (``nnemu run SCENARIO --set
duration_ms=...``, default ``scenarios/two_apps_one_npu.yaml`` for 120 s): the CPU time of
``nnemu parse x.pftrace`` over ``nnemu parse x.html`` (target <= 1.5), and the wall time
of ``nnemu query x.pftrace`` (the load and one ``count(*)``) over Perfetto's
``trace_processor_shell -q`` on the same file and query (target <= 3; its CPU ratio is
printed too).  Each is a whole process, best of ``--repeat``, alternating.

    python bench/bench_perfetto.py --ratios [--scenario PATH] [--seconds 120] [--repeat 3]
        [--shell ../shared/tools/trace_processor_shell]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb2

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_parser import _child_result, _execution, _line

_CHILD = r"""
import json, resource, sys, time
path, what, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3])
cpus = []
for _ in range(repeat):
    start = time.process_time()
    if what == "read":
        from nnemu.trace import read_perfetto
        count = sum(1 for _ in read_perfetto(path))
    else:
        from nnemu.parser import parse_file
        count = len(parse_file(path).runs)
    cpus.append(time.process_time() - start)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"cpu": min(cpus), "count": count, "peak_mb": peak}))
"""
_PERIOD_EVENTS = 4000
_RUN = 20


def _rows(target_bytes: int) -> object:
    """(ts_us, who, payload) rows, in time order, until about ``target_bytes`` of packets."""
    ts_us = 1_000_000
    run = 0
    while True:
        run += 1
        yield (ts_us, "app-1000  ( 1000)", f"B|1000|[NN_LA_PO]run{run}")
        for _ in range(_RUN):
            rows, ts_us = _execution(ts_us)
            yield from rows
        ts_us += 10
        yield (ts_us, "app-1000  ( 1000)", "E|1000")
        ts_us += 100


def _write(path: Path, text: Path | None, target_mb: int) -> int:
    """Write the trace (and its text form); return the number of print events."""
    target = target_mb * 1_000_000
    events = 0
    tree = pb2.TracePacket()
    for pid, name in ((1000, "app"), (2000, "android.hardware.neuralnetworks@1.3-service-bench")):
        process = tree.process_tree.processes.add()
        process.pid = pid
        process.cmdline.append(name)
    for tid, tgid, name in ((1000, 1000, "app"), (2001, 2000, "HwBinder:2000_1")):
        thread = tree.process_tree.threads.add()
        thread.tid, thread.tgid, thread.name = tid, tgid, name
    written = 0
    text_out = text.open("w", encoding="utf-8") if text is not None else None
    with path.open("wb") as out:
        trace = pb2.Trace()
        trace.packet.append(tree)
        out.write(trace.SerializeToString())
        if text_out is not None:
            text_out.write("# tracer: nop\n#\n")
        period: list[tuple[int, str, str]] = []
        for row in _rows(target):
            period.append(row)
            if len(period) < _PERIOD_EVENTS:
                continue
            trace = pb2.Trace()
            for cpu, prefix in ((0, "app-"), (1, "HwBinder")):
                packet = trace.packet.add()
                packet.ftrace_events.cpu = cpu
                for ts_us, who, payload in period:
                    if who.startswith(prefix):
                        event = packet.ftrace_events.event.add()
                        event.timestamp = ts_us * 1000
                        event.pid = 1000 if cpu == 0 else 2001
                        event.print.buf = payload + "\n"
            data = trace.SerializeToString()
            out.write(data)
            if text_out is not None:
                text_out.writelines(_line(*row) for row in period)
            written += len(data)
            events += len(period)
            period = []
            if written >= target:
                break
    if text_out is not None:
        text_out.close()
    return events


def _measure(path: Path, what: str, repeat: int) -> dict[str, float]:
    return _child_result(_CHILD, str(path), what, str(repeat))


_REPO = Path(__file__).resolve().parents[1]
_COUNT = "select count(*) from slice"


def _process(command: list[str]) -> tuple[float, float]:
    """(wall s, CPU s: user + system) of one whole process running ``command``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu


def _ratios(args: argparse.Namespace) -> None:
    """Issue 26's parse and query-load ratios on an emulated run, side by side."""
    nnemu = [sys.executable, "-m", "nnemu.cli"]
    folder = Path(tempfile.mkdtemp(prefix="nnemu-bench-ratios-"))
    html, pftrace, sql = folder / "x.html", folder / "x.pftrace", folder / "count.sql"
    sql.write_text(_COUNT + "\n", encoding="utf-8")
    try:
        for trace in (html, pftrace):
            subprocess.run(
                [*nnemu, "run", args.scenario, "--set", f"duration_ms={args.seconds * 1000}",
                 "--trace", str(trace), "-q"],
                check=True, stdout=subprocess.DEVNULL,
            )  # fmt: skip
        commands = {
            "parse html": [*nnemu, "parse", str(html)],
            "parse pftrace": [*nnemu, "parse", str(pftrace)],
            "query pftrace": [*nnemu, "query", str(pftrace), _COUNT],
            "trace_processor_shell": [args.shell, "-q", str(sql), str(pftrace)],
        }
        best: dict[str, tuple[float, float]] = {}
        for _ in range(args.repeat):
            for label, command in commands.items():
                wall, cpu = _process(command)
                old = best.get(label, (float("inf"), float("inf")))
                best[label] = (min(old[0], wall), min(old[1], cpu))
        print(
            f"{args.scenario}, {args.seconds} s: .html {html.stat().st_size / 1e6:.1f} MB,"
            f" .pftrace {pftrace.stat().st_size / 1e6:.1f} MB; best of {args.repeat}"
        )
        print(f"{'process':<24}{'wall s':>9}{'cpu s':>9}")
        for label, (wall, cpu) in best.items():
            print(f"{label:<24}{wall:>9.2f}{cpu:>9.2f}")
        parse = best["parse pftrace"][1] / best["parse html"][1]
        query_wall = best["query pftrace"][0] / best["trace_processor_shell"][0]
        query_cpu = best["query pftrace"][1] / best["trace_processor_shell"][1]
        print(f"{'ratio':<44}{'value':>8}{'target':>8}")
        print(f"{'parse .pftrace / parse .html (CPU)':<44}{parse:>8.2f}{'<= 1.5':>8}")
        print(f"{'query .pftrace / trace_processor (wall)':<44}{query_wall:>8.2f}{'<= 3':>8}")
        print(f"{'query .pftrace / trace_processor (CPU)':<44}{query_cpu:>8.2f}{'':>8}")
    finally:
        for path in folder.iterdir():
            path.unlink()
        os.rmdir(folder)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--mb", type=int, default=100, help="trace size in MB (default 100)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--text", action="store_true", help="also time the ftrace text form")
    parser.add_argument("--ratios", action="store_true", help="issue 26's two ratios instead")
    parser.add_argument("--scenario", default=str(_REPO / "scenarios/two_apps_one_npu.yaml"))
    parser.add_argument("--seconds", type=int, default=120, help="emulated run (default 120)")
    parser.add_argument(
        "--shell",
        default=os.environ.get("NNEMU_TRACE_PROCESSOR")
        or str(_REPO.parent / "shared/tools/trace_processor_shell"),
        help="Perfetto's trace_processor_shell (default: $NNEMU_TRACE_PROCESSOR, else"
        " ../shared/tools beside the checkout)",
    )
    args = parser.parse_args()
    if args.ratios:
        _ratios(args)
        return
    folder = Path(tempfile.mkdtemp(prefix="nnemu-bench-perfetto-"))
    trace = folder / "big.perfetto-trace"
    text = folder / "big.txt" if args.text else None
    try:
        start = time.perf_counter()
        events = _write(trace, text, args.mb)
        size = trace.stat().st_size / 1e6
        print(
            f"wrote {size:.0f} MB, {events:,} print events in {time.perf_counter() - start:.0f} s"
        )
        print(f"{'what':<28}{'cpu s':>9}{'events/cpu-s':>14}{'peak RSS MB':>13}")
        measured = [
            ("read_perfetto (protobuf)", trace, "read"),
            ("parse_file (protobuf)", trace, "parse"),
        ]
        if text is not None:
            measured.append(("parse_file (ftrace text)", text, "parse"))
        for label, path, what in measured:
            result = _measure(path, what, args.repeat)
            rate = events / result["cpu"] if result["cpu"] else 0.0
            print(f"{label:<28}{result['cpu']:>9.2f}{rate:>14,.0f}{result['peak_mb']:>13.0f}")
    finally:
        for path in folder.iterdir():
            path.unlink()
        os.rmdir(folder)


if __name__ == "__main__":
    main()
