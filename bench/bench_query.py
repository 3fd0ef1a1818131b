"""Benchmark of ``nnemu query`` loading and ``nnemu replay`` extracting big traces.

Generates ftrace texts of N lines (default 300k, 1M and 3M) with the generator of
``bench_parser.py`` (short ``[NN_LA_PO]`` runs of 20 executions, 18 rows each) and
times, each in its own fresh subprocess (so its peak RSS is its own):

* ``parse``: ``nnemu.parser.parse_file`` (the reference: the target is a query load
  at >= 1/2 of parse's lines/s);
* ``query``: ``nnemu.query.load_trace`` into an in-memory database;
* ``query --db``: ``run_query_command(trace, "SELECT 1", db=FILE)`` with no FILE yet
  (a load into SQLite on disk), and ``again``: the same command once FILE exists
  (reused when this nnemu caches it);
* ``replay``: ``nnemu.replay.extract_plan`` (reading the plan, not running it).

Each is run ``--repeat`` times, the kinds alternating, and the best wall time
(``perf_counter``) and best CPU time (``process_time``) are kept; clocks start after
the imports.  ``--baseline DIR`` runs every measurement a second time with
``PYTHONPATH=DIR`` (another checkout, e.g. ``main``) in the same loop, so both
versions see the same machine load.

Usage: python bench/bench_query.py [--lines N ...] [--repeat R] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from bench_parser import _child_result, _write_trace

_CHILD = r"""
import io, json, os, resource, sqlite3, sys, time
kind, path, db = sys.argv[1], sys.argv[2], sys.argv[3]
if kind == "parse":
    from nnemu.parser import parse_file
elif kind == "replay":
    from nnemu.replay import extract_plan
else:
    from nnemu.query import load_trace, run_query_command
if kind == "query-db" and os.path.exists(db):
    os.remove(db)  # a fresh load; "query-db-again" finds the file of the previous one
wall, cpu = time.perf_counter(), time.process_time()
if kind == "parse":
    out = len(parse_file(path).runs)
elif kind == "replay":
    out = sum(len(app.arrivals_ns) for app in extract_plan(path).apps)
elif kind == "query":
    conn = sqlite3.connect(":memory:")
    out = load_trace(path, conn, lambda line, message: None).slices
else:
    err = io.StringIO()
    out = run_query_command(
        path, "SELECT 1", as_csv=True, as_json=False, db=db,
        stdin=io.StringIO(), stdout=io.StringIO(), stderr=err,
    )
    if out:
        raise SystemExit(err.getvalue())
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"wall": wall, "cpu": cpu, "mb": mb, "out": out}))
"""

KINDS = ("parse", "query", "query-db", "query-db-again", "replay")
LABELS = {
    "parse": "parse",
    "query": "query (memory)",
    "query-db": "query --db",
    "query-db-again": "query --db again",
    "replay": "replay extract",
}


def _measure(kind: str, path: Path, db: Path, pythonpath: str) -> dict[str, float]:
    if kind == "query-db-again" and not db.exists():
        _measure("query-db", path, db, pythonpath)
    # PYTHONSAFEPATH: the child's sys.path does not start with the current directory,
    # which (run from a checkout) would shadow PYTHONPATH and measure that checkout twice.
    env = {**os.environ, "PYTHONPATH": pythonpath, "PYTHONSAFEPATH": "1"}
    return _child_result(_CHILD, kind, str(path), str(db), env=env)


def main() -> None:
    """Generate the traces, measure, print a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, nargs="*", default=[300_000, 1_000_000, 3_000_000])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each (best is kept)")
    parser.add_argument("--baseline", help="another checkout to measure alongside")
    parser.add_argument("--kinds", nargs="*", default=list(KINDS), choices=KINDS)
    parser.add_argument("--tmp", help="directory for the traces (default: a temp dir)")
    args = parser.parse_args()
    here = str(Path(__file__).resolve().parent.parent)
    versions = [("this", here)] + ([("baseline", args.baseline)] if args.baseline else [])
    print(f"best of {args.repeat}; l/s = lines per wall second; l/cpu-s = per CPU second;")
    print("ratio = that kind's l/cpu-s over parse's (same version); MB = peak RSS")
    header = (
        f"{'lines':>10} {'MB in':>6}  {'version':<8} {'kind':<17} {'wall s':>7} {'cpu s':>7}"
        f" {'l/s':>9} {'l/cpu-s':>9} {'ratio':>5} {'MB':>6}"
    )
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        for n_lines in args.lines:
            path = Path(tmp) / f"trace-{n_lines}.txt"
            _write_trace(path, n_lines, executions_per_run=20)
            with path.open(encoding="utf-8") as stream:
                count = sum(1 for _ in stream)
            size_mb = path.stat().st_size / 1e6
            best: dict[tuple[str, str], dict[str, float]] = {}
            for _ in range(args.repeat):
                for kind in args.kinds:
                    for version, pythonpath in versions:
                        db = Path(tmp) / f"{version}.db"
                        r = _measure(kind, path, db, pythonpath)
                        old = best.get((version, kind))
                        if old is None:
                            best[(version, kind)] = r
                        else:
                            old["wall"] = min(old["wall"], r["wall"])
                            old["cpu"] = min(old["cpu"], r["cpu"])
                            old["mb"] = max(old["mb"], r["mb"])
            for version, _ in versions:
                parse = best.get((version, "parse"))
                for kind in args.kinds:
                    r = best[(version, kind)]
                    ratio = f"{parse['cpu'] / r['cpu']:>5.2f}" if parse else f"{'-':>5}"
                    print(
                        f"{count:>10,} {size_mb:>6.0f}  {version:<8} {LABELS[kind]:<17}"
                        f" {r['wall']:>7.2f} {r['cpu']:>7.2f} {count / r['wall']:>9,.0f}"
                        f" {count / r['cpu']:>9,.0f} {ratio} {r['mb']:>6.0f}",
                        flush=True,
                    )
            path.unlink()
            for version, _ in versions:
                (Path(tmp) / f"{version}.db").unlink(missing_ok=True)


if __name__ == "__main__":
    main()
