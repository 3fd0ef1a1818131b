"""Benchmark of ``nnemu parse`` against a regex-only floor.

Generates ftrace texts of N lines (default 300k and 1M) in a temp dir, in two
shapes: many short ``[NN_LA_PO]`` runs, and one long run holding every
execution.  Each shape is measured in its own fresh subprocess, so that its
peak RSS (``resource.getrusage``) is its own.  In that process the floor and
the parser run back to back, alternating, ``--repeat`` times each; the best
wall time (``time.perf_counter``) and the best CPU time
(``time.process_time``) of each are reported, because on a shared machine
single runs are noisy.

The floor is the loop the parser cannot avoid: the same line source (the file
opened as ``parse_file`` opens it) and a pure-Python loop that only matches
each line with the readers' row pattern (``nnemu.trace.ROW_RE``), nothing else.

Process level (``--process``, on by default at 300k lines): the whole command,
``nnemu parse FILE > /dev/null`` as a subprocess (start-up, imports, parse,
output), against a subprocess that only starts Python, compiles the same row
pattern and runs the floor loop over the same file.  They alternate, R times
each; the best wall time and the best CPU time (the children's user + system
time, ``resource.getrusage(RUSAGE_CHILDREN)``) of each are reported.  Both read
compiled bytecode (a first, untimed run of each writes it under a private
``PYTHONPYCACHEPREFIX``), as an installed nnemu does.

The first line printed says which engine is measured: the mypyc-compiled one of a built
wheel (``pip install .``), or the pure-Python source (``pip install -e .``).

Usage: python bench/bench_parser.py [--lines N ...] [--repeat R] [--process N ...]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_CHILD = r"""
import json, resource, sys, time
path, repeat = sys.argv[1], int(sys.argv[2])
from nnemu.parser import parse_file
from nnemu.trace import ROW_RE

def floor():
    match = ROW_RE.match
    rows = 0
    with open(path, encoding="utf-8", errors="replace") as stream:
        for line in stream:
            if match(line) is not None:
                rows += 1
    return rows

def nnemu():
    return len(parse_file(path).runs)

def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, out

def peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

result = {"floor_wall": [], "floor_cpu": [], "nnemu_wall": [], "nnemu_cpu": []}
for rep in range(repeat):
    for name, fn in (("floor", floor), ("nnemu", nnemu)):
        wall, cpu, out = timed(fn)
        result[name + "_wall"].append(wall)
        result[name + "_cpu"].append(cpu)
        if rep == 0:
            # The floor runs first, so the first two readings are each one's peak.
            result[name + "_mb"] = peak_mb()
            result[name + "_out"] = out
print(json.dumps(result))
"""

_FLOOR_PROCESS = r"""
import re, sys
match = re.compile(sys.argv[2]).match
rows = 0
with open(sys.argv[1], encoding="utf-8", errors="replace") as stream:
    for line in stream:
        if match(line) is not None:
            rows += 1
"""

_CLIENT = "app-1000  ( 1000)"
_WORKER = "HwBinder:2000_1-2001  ( 2000)"


def _execution(ts_us: int) -> tuple[list[tuple[int, str, str]], int]:
    """One async execution through runtime, IPC and driver (notified): 18 rows."""
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
    add(5, _WORKER, "B|2000|HIDL::IExecutionCallback::notify_1_3::client")
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


def _child_result(child: str, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run the Python code ``child`` with ``args`` in a fresh process; the JSON object it prints.

    The benchmarks' children (here, bench_perfetto.py, bench_query.py) each measure in their
    own process, so that ``ru_maxrss`` is theirs.
    """
    out = subprocess.run(
        [sys.executable, "-c", child, *args],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def _measure(path: Path, repeat: int) -> dict[str, object]:
    return _child_result(_CHILD, str(path), str(repeat))


def _timed_process(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Run ``argv`` with stdout to /dev/null; its (wall, CPU) seconds, CPU = user + system."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with open(os.devnull, "w") as devnull:
        subprocess.run(argv, stdout=devnull, stderr=subprocess.DEVNULL, check=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu


def _measure_processes(path: Path, repeat: int) -> dict[str, list[float]]:
    """``nnemu parse PATH`` and the floor loop, each as a whole process, alternating."""
    from nnemu.trace import ROW_RE

    commands = {
        "nnemu": [sys.executable, "-m", "nnemu.cli", "parse", str(path)],
        "floor": [sys.executable, "-c", _FLOOR_PROCESS, str(path), ROW_RE.pattern],
    }
    # Imports read compiled bytecode, as in an installed nnemu (written once, by the
    # untimed first runs, under a private prefix: PYTHONDONTWRITEBYTECODE is ignored).
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(path.parent / "pycache")
    for argv in commands.values():
        _timed_process(argv, env)
    result: dict[str, list[float]] = {}
    for _ in range(repeat):
        for name, argv in commands.items():
            wall, cpu = _timed_process(argv, env)
            result.setdefault(name + "_wall", []).append(wall)
            result.setdefault(name + "_cpu", []).append(cpu)
    return result


def _best(result: dict[str, object], key: str) -> float:
    values = result[key]
    assert isinstance(values, list)
    return float(min(values))


def main() -> None:
    """Generate the traces, measure, print a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, nargs="*", default=[300_000, 1_000_000])
    parser.add_argument("--repeat", type=int, default=5, help="runs of each (best is kept)")
    parser.add_argument(
        "--process",
        type=int,
        nargs="*",
        default=[300_000],
        metavar="N",
        help="also time whole processes at these line counts (default 300k; none: skip)",
    )
    args = parser.parse_args()
    header = (
        f"{'lines':>9}  {'shape':<13} {'runs':>5}  {'nnemu l/s':>9} {'floor l/s':>9}"
        f" {'ratio':>5}  {'nnemu l/cpu-s':>13} {'floor l/cpu-s':>13} {'ratio':>5}"
        f"  {'nnemu MB':>8} {'floor MB':>8}"
    )
    from nnemu import _native

    compiled = _native.extension_of("nnemu.parser._engine") is not None
    engine = "compiled (mypyc)" if compiled else "pure Python"
    print(f"parser engine: {engine}")
    print(f"best of {args.repeat}; l/s = lines per wall second, l/cpu-s = per CPU second")
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory() as tmp:
        for n_lines in args.lines:
            for shape, per_run in (("many runs", 20), ("one long run", None)):
                path = Path(tmp) / f"trace-{n_lines}-{per_run}.txt"
                _write_trace(path, n_lines, executions_per_run=per_run)
                with path.open(encoding="utf-8") as stream:
                    count = sum(1 for _ in stream)
                r = _measure(path, args.repeat)
                nw, fw = _best(r, "nnemu_wall"), _best(r, "floor_wall")
                nc, fc = _best(r, "nnemu_cpu"), _best(r, "floor_cpu")
                print(
                    f"{count:>9}  {shape:<13} {r['nnemu_out']!s:>5}"
                    f"  {count / nw:>9,.0f} {count / fw:>9,.0f} {nw / fw:>5.2f}"
                    f"  {count / nc:>13,.0f} {count / fc:>13,.0f} {nc / fc:>5.2f}"
                    f"  {r['nnemu_mb']:>8.1f} {r['floor_mb']:>8.1f}",
                    flush=True,
                )
        if args.process:
            _print_processes(Path(tmp), args.process, args.repeat)


def _print_processes(tmp: Path, counts: list[int], repeat: int) -> None:
    """The process-level table: ``nnemu parse FILE > /dev/null`` vs the floor loop's process."""
    header = (
        f"{'lines':>9}  {'shape':<13} {'nnemu s':>8} {'floor s':>8} {'ratio':>5}"
        f"  {'nnemu cpu-s':>11} {'floor cpu-s':>11} {'ratio':>5}"
    )
    print(f"\nwhole processes, best of {repeat}: nnemu parse FILE > /dev/null vs the floor loop")
    print(header)
    print("-" * len(header))
    for n_lines in counts:
        for shape, per_run in (("many runs", 20), ("one long run", None)):
            path = tmp / f"process-{n_lines}-{per_run}.txt"
            _write_trace(path, n_lines, executions_per_run=per_run)
            with path.open(encoding="utf-8") as stream:
                count = sum(1 for _ in stream)
            r = _measure_processes(path, repeat)
            nw, fw = min(r["nnemu_wall"]), min(r["floor_wall"])
            nc, fc = min(r["nnemu_cpu"]), min(r["floor_cpu"])
            print(
                f"{count:>9}  {shape:<13} {nw:>8.3f} {fw:>8.3f} {nw / fw:>5.2f}"
                f"  {nc:>11.3f} {fc:>11.3f} {nc / fc:>5.2f}",
                flush=True,
            )


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:  # `| head`: stop quietly
        sys.stderr.close()
        os._exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
