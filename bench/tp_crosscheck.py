"""Compare `nnemu query`'s slice, thread, process and thread_track rows with Perfetto's.

Not a benchmark: a check that is too slow and too dependent on a binary for the tests.
For each trace given (systrace HTML or text, Chrome JSON, Perfetto protobuf) it loads the
trace in nnemu's query and in Perfetto's ``trace_processor_shell`` and compares, row by row:

* ``slice``: count; per slice id: ts, dur, name, depth, parent_id, and its track's thread
  (tid and thread name); sums of ts and dur.
* ``thread``: (tid, name, pid of its process) for every thread that has a slice;
* ``process``: (pid, name) for every process of such a thread (a process Perfetto leaves
  unnamed: nnemu's name for it is not compared);
* ``thread_track``: (tid, utid's name) per track.

Known differences (docs/query.md, "Perfetto compatibility") are allowed and counted, not
reported: a systrace stamp read by trace processor as a double, truncated to ns (``ts`` or
``dur`` 1 ns off); Perfetto's upid/utid numbering (its idle process and swapper threads);
Perfetto's track ids (one id space with its counter and process tracks); a process that
no process dump or metadata names, which nnemu names after its main thread.  Anything else is printed.

    python bench/tp_crosscheck.py [--shell PATH] TRACE...

Exit 1 when any trace differs, 0 when all agree.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from nnemu.query import open_trace

SHELL = Path(__file__).resolve().parents[2] / "shared/tools/trace_processor_shell"

SLICES = """
SELECT s.id, s.ts, s.dur, s.name, s.depth, s.parent_id, t.tid, t.name AS thread_name,
       p.pid, p.name AS process_name
FROM slice s JOIN thread_track tt ON tt.id = s.track_id JOIN thread t USING (utid)
LEFT JOIN process p USING (upid) ORDER BY s.id
"""
THREADS = """
SELECT t.tid, t.name, p.pid FROM thread t LEFT JOIN process p USING (upid)
WHERE t.utid IN (SELECT utid FROM thread_track tt JOIN slice s ON s.track_id = tt.id)
ORDER BY 1, 2, 3
"""
PROCESSES = """
SELECT DISTINCT p.pid, p.name FROM process p JOIN thread t USING (upid)
WHERE t.utid IN (SELECT utid FROM thread_track tt JOIN slice s ON s.track_id = tt.id)
ORDER BY 1, 2
"""
TRACKS = """
SELECT tt.id, t.tid, t.name,
       (SELECT count(*) FROM slice s WHERE s.track_id = tt.id) AS slices
FROM thread_track tt JOIN thread t USING (utid)
WHERE tt.id IN (SELECT track_id FROM slice) ORDER BY tt.id
"""
QUERIES = {"slice": SLICES, "thread": THREADS, "process": PROCESSES, "thread_track": TRACKS}


def _cell(text: str) -> object:
    if text == "[NULL]":
        return None
    try:
        return int(text)
    except ValueError:
        return text


def perfetto_rows(shell: str, trace: Path, sql: str) -> list[tuple[object, ...]]:
    """The rows of ``sql`` in trace processor (numbers as int, NULL as None)."""
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as query:
        query.write(sql)
    try:
        done = subprocess.run(
            [shell, "-q", query.name, str(trace)], capture_output=True, text=True, timeout=600
        )
    finally:
        os.unlink(query.name)
    if done.returncode != 0:
        raise SystemExit(f"{trace}: trace_processor_shell failed: {done.stderr[-2000:]}")
    lines = done.stdout.strip("\n").splitlines()
    if not lines:
        return []
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    return [tuple(_cell(c) for c in row) for row in rows[1:]]


def nnemu_rows(trace: Path, sql: str) -> list[tuple[object, ...]]:
    conn = open_trace(str(trace))
    try:
        return [tuple(row) for row in conn.execute(sql)]
    finally:
        conn.close()


def _near(a: object, b: object, slack: int) -> bool:
    if isinstance(a, int) and isinstance(b, int):
        return abs(a - b) <= slack
    return a == b


def compare(shell: str, trace: Path) -> tuple[int, list[str]]:
    """The number of rows compared and the differences found."""
    text = trace.suffix in {".html", ".txt", ".ftrace", ""} or trace.suffix not in {
        ".json",
        ".perfetto-trace",
        ".pftrace",
    }
    slack = 1 if text else 0
    problems: list[str] = []
    compared = 0
    for table, sql in QUERIES.items():
        mine = nnemu_rows(trace, sql)
        theirs = perfetto_rows(shell, trace, sql)
        compared += len(mine)
        if len(mine) != len(theirs):
            problems.append(f"{table}: {len(mine)} rows in nnemu, {len(theirs)} in Perfetto")
        if table == "slice":
            off_by_ns = 0
            columns = ("id", "ts", "dur", "name", "depth", "parent_id", "tid", "thread")
            columns += ("pid", "process")
            differing: dict[tuple[str, ...], list[str]] = {}
            unnamed: set[object] = set()
            for a, b in zip(mine, theirs, strict=False):
                if a == b:
                    continue
                if b[9] is None and a[9] is not None:
                    # nnemu names a process no dump names after its main thread.
                    a = (*a[:9], None)
                    unnamed.add(a[8])
                    if a == b:
                        continue
                if all(_near(x, y, slack) for x, y in zip(a[:3], b[:3], strict=True)) and (
                    a[3:] == b[3:]
                ):
                    off_by_ns += 1
                    continue
                key = tuple(c for c, x, y in zip(columns, a, b, strict=True) if x != y)
                differing.setdefault(key, []).append(f"nnemu {a} Perfetto {b}")
            for key, rows in differing.items():
                problems.append(f"slice: {len(rows)} rows differ in {', '.join(key)}, e.g.")
                problems.extend(f"    {row}" for row in rows[:2])
            if off_by_ns:
                problems.append(f"(known) slice: {off_by_ns} rows with ts/dur 1 ns off")
            if unnamed:
                problems.append(f"(known) process: pids {sorted(unnamed)} unnamed in Perfetto")
        elif table == "thread_track":
            # Perfetto names no thread track; its ids count after its other tracks.
            a = [(r[1], r[2], r[3]) for r in mine]
            b = [(r[1], r[2], r[3]) for r in theirs]
            if a != b:
                problems.append(f"thread_track: nnemu {a[:5]}... Perfetto {b[:5]}...")
            same_ids = [r[0] for r in mine] == [r[0] for r in theirs]
            if not same_ids:
                problems.append("(known?) thread_track: ids differ")
        elif table == "process":
            named = {pid for pid, name in theirs if name is not None}
            mine = [(pid, name if pid in named else None) for pid, name in mine]
            if mine != theirs:
                problems.append(f"process: nnemu {mine[:8]} Perfetto {theirs[:8]}")
        elif mine != theirs:
            only_mine = sorted(set(mine) - set(theirs), key=repr)
            only_theirs = sorted(set(theirs) - set(mine), key=repr)
            problems.append(f"{table}: only nnemu {only_mine[:8]} only Perfetto {only_theirs[:8]}")
    return compared, problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shell", default=os.environ.get("NNEMU_TRACE_PROCESSOR", str(SHELL)))
    parser.add_argument("traces", nargs="+", type=Path)
    args = parser.parse_args(argv)
    failed = 0
    for trace in args.traces:
        compared, problems = compare(args.shell, trace)
        real = [p for p in problems if not p.startswith("(known")]
        failed += bool(real)
        print(f"{trace}: {compared} rows, {'differs' if real else 'agrees'}")
        for problem in problems[:30]:
            print("   ", problem)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
