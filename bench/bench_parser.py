"""Benchmark of ``nnemu parse`` against a regex-only floor.

Generates ftrace texts of N lines (default 300k and 1M) in a temp dir, in two
shapes: many short ``[NN_LA_PO]`` runs, and one long run holding every
execution.  Each parse runs in a subprocess so that its peak RSS
(``resource.getrusage``) is its own.  The floor is a pure-Python loop that only
regex-matches each line with the parser's row pattern, measured the same way.

Usage: python bench/bench_parser.py [--lines N ...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

_CHILD = r"""
import json, resource, sys, time
mode, path = sys.argv[1], sys.argv[2]
start = time.perf_counter()
if mode == "floor":
    from nnemu.parser._engine import ROW_RE
    match = ROW_RE.match
    lines = 0
    with open(path, encoding="utf-8") as stream:
        for line in stream:
            match(line)
            lines += 1
    runs = 0
else:
    from nnemu.parser import parse_file
    result = parse_file(path)
    runs = len(result.runs)
elapsed = time.perf_counter() - start
peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": elapsed, "peak_mb": peak_kb / 1024, "runs": runs}))
"""

_CLIENT = "app-1000  ( 1000)"
_WORKER = "HwBinder:2000_1-2001  ( 2000)"


def _execution(ts_us: int) -> tuple[list[tuple[int, str, str]], int]:
    """One async execution through runtime, IPC and driver: 16 rows."""
    rows = []

    def add(delta_us: int, who: str, payload: str) -> None:
        nonlocal ts_us
        ts_us += delta_us
        rows.append((ts_us, who, payload))

    add(10, _CLIENT, "B|1000|[NN_LA_PE]executeOnce")
    add(5, _CLIENT, "B|1000|[NN_LR_PE]ANeuralNetworksExecution_create")
    add(5, _CLIENT, "E|1000")
    add(5, _CLIENT, "B|1000|[NN_LR_PIO]ANeuralNetworksExecution_setInput")
    add(5, _CLIENT, "E|1000")
    add(5, _CLIENT, "B|1000|[NN_LR_PE]ANeuralNetworksExecution_startCompute")
    add(5, _CLIENT, "B|1000|HIDL::IPreparedModel::execute_1_3::client")
    add(5, _WORKER, "B|2000|HIDL::IPreparedModel::execute_1_3::server")
    add(5, _WORKER, "B|2000|[NN_LD_PE]SampleDriver::executeBase")
    add(50, _WORKER, "E|2000")
    add(5, _WORKER, "E|2000")
    add(5, _CLIENT, "E|1000")
    add(5, _CLIENT, "E|1000")
    add(5, _CLIENT, "B|1000|[NN_LR_PE]ANeuralNetworksEvent_wait")
    add(5, _CLIENT, "E|1000")
    add(5, _CLIENT, "E|1000")
    return rows, ts_us


def _write_trace(path: Path, n_lines: int, *, executions_per_run: int | None) -> None:
    """Write about ``n_lines`` rows; a new run every ``executions_per_run``."""
    ts_us = 1_000_000
    written = 0
    in_run = False
    done_in_run = 0
    with path.open("w", encoding="utf-8") as out:
        out.write("# tracer: nop\n#\n")
        while written < n_lines:
            if not in_run:
                ts_us += 10
                out.write(_line(ts_us, _CLIENT, "B|1000|[NN_LA_PO]bench"))
                ts_us += 10
                out.write(_line(ts_us, _WORKER, "B|2000|HIDL::IDevice::prepareModel_1_3::server"))
                ts_us += 100
                out.write(_line(ts_us, _WORKER, "E|2000"))
                written += 3
                in_run, done_in_run = True, 0
            rows, ts_us = _execution(ts_us)
            out.writelines(_line(ts, who, payload) for ts, who, payload in rows)
            written += len(rows)
            done_in_run += 1
            if executions_per_run is not None and done_in_run >= executions_per_run:
                ts_us += 10
                out.write(_line(ts_us, _CLIENT, "E|1000"))
                written += 1
                in_run = False
        if in_run:
            out.write(_line(ts_us + 10, _CLIENT, "E|1000"))


def _line(ts_us: int, who: str, payload: str) -> str:
    seconds, micros = divmod(ts_us, 1_000_000)
    return f"{who:>28} [000] ...1 {seconds}.{micros:06d}: tracing_mark_write: {payload}\n"


def _measure(mode: str, path: Path) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, mode, str(path)],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, float] = json.loads(out.stdout)
    return result


def main() -> None:
    """Generate the traces, measure, print a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, nargs="*", default=[300_000, 1_000_000])
    args = parser.parse_args()
    header = (
        f"{'lines':>9}  {'shape':<16} {'runs':>6}  {'nnemu lines/s':>13} {'floor lines/s':>13}"
        f" {'ratio':>6}  {'nnemu MB':>8} {'floor MB':>8}"
    )
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory() as tmp:
        for n_lines in args.lines:
            for shape, per_run in (("many runs", 20), ("one long run", None)):
                path = Path(tmp) / f"trace-{n_lines}-{per_run}.txt"
                _write_trace(path, n_lines, executions_per_run=per_run)
                with path.open(encoding="utf-8") as stream:
                    count = sum(1 for _ in stream)
                nnemu = _measure("nnemu", path)
                floor = _measure("floor", path)
                print(
                    f"{count:>9}  {shape:<16} {int(nnemu['runs']):>6}"
                    f"  {count / nnemu['seconds']:>13,.0f} {count / floor['seconds']:>13,.0f}"
                    f" {nnemu['seconds'] / floor['seconds']:>6.2f}"
                    f"  {nnemu['peak_mb']:>8.1f} {floor['peak_mb']:>8.1f}"
                )


if __name__ == "__main__":
    main()
