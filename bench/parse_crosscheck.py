"""Check cells of `nnemu parse`'s tables against the trace's slices as `nnemu query` loads them.

Not a benchmark: a cross-check of the parser's arithmetic and attribution by an independent
route (SQL over the slices, and for a Chrome JSON or Perfetto trace the flows binding each
client call to the server call that served it, where the parser pairs calls by order).  For
each run of each client process of each trace given, per run (a run is the span of its
``[NN_LA_PO]`` section on the client's threads):

* execution count: ``ANeuralNetworksExecution_create`` sections of the run (``[NN_LA_PE]``
  sections where there are none);
* ``LA PO`` (Total) and ``LA PE``: the run's application sections (less the runtime and
  IPC calls of another phase in an execution, which Android's rules move out);
* ``LI PE``, when every execution is a synchronous call: the run's
  ``IPreparedModel::executeSynchronously*`` client calls (nnemu's traces switch into the
  IPC phase where the call starts and out where it ends);
* ``LD PE``, flows only: the execute server calls that those client calls flow to (a
  synchronous call) or, for an asynchronous one, from the server call's begin to the
  begin of the ``IExecutionCallback::notify*`` client call its launch flows to; burst
  and fenced executions are not reconstructed (the cell is skipped);
* the per-execution means (``--per-execution``'s ``template_inputs``): ``LA PE``, ``LI PE``
  and ``LD PE`` over the count.

The parser's values are its ``--json --total-times`` ``times`` (ms, whole ns / 1e6) and
``--json --per-execution --total-times``.  Prints one line per run and each cell that
differs.

    python bench/parse_crosscheck.py TRACE...

Exit 1 when a cell differs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from nnemu.query import open_trace

RUNS = """
SELECT s.id, s.ts, s.dur, t.upid, p.pid, s.name FROM slice s
JOIN thread_track tt ON tt.id = s.track_id JOIN thread t USING (utid)
LEFT JOIN process p USING (upid)
WHERE s.layer = 'LA' AND s.phase = 'PO' ORDER BY s.ts, s.id
"""


_OTHER_CLIENT = "({0}.kind = 'hidl_client' AND {0}.name NOT LIKE '%::notify%')"
"""A client call of another HIDL interface (no layer in query): Android's parser counts it
as IPC, phase PI (PU for IAllocator), docs/query.md."""


def _parse(trace: Path, *extra: str) -> list[dict[str, object]]:
    done = subprocess.run(
        [sys.executable, "-m", "nnemu.cli", "parse", "--json", "--total-times", *extra, str(trace)],
        capture_output=True,
        text=True,
        check=True,
    )
    return list(json.loads(done.stdout))


def _in_run(conn, upid: int, start: int, end: int, where: str) -> list[tuple]:
    """Slices of process ``upid`` beginning in [start, end) that match ``where``."""
    return conn.execute(
        "SELECT s.id, s.ts, s.dur, s.name, s.kind FROM slice s"
        " JOIN thread_track tt ON tt.id = s.track_id JOIN thread t USING (utid)"
        f" WHERE t.upid = ? AND s.ts >= ? AND s.ts < ? AND ({where}) ORDER BY s.id",
        (upid, start, end),
    ).fetchall()


def _driver_pe(conn, clients: list[tuple]) -> int | None:
    """The driver execution time of these client calls, by the flows; None if some call
    is not one this script reconstructs."""
    total = 0
    for client_id, *_ in clients:
        served = conn.execute(
            "SELECT i.id, i.ts, i.dur, i.name FROM flow f JOIN slice i ON i.id = f.slice_in"
            " WHERE f.slice_out = ? AND i.kind = 'hidl_server'",
            (client_id,),
        ).fetchall()
        if len(served) != 1:
            return None
        server_id, ts, dur, name = served[0]
        if "executeSynchronously" in name:
            total += dur
            continue
        if "::execute" not in name or "Fenced" in name:
            return None
        notified = conn.execute(
            "SELECT i.ts FROM flow f JOIN slice i ON i.id = f.slice_in"
            " WHERE f.slice_out = ? AND i.name LIKE 'HIDL::IExecutionCallback::notify%::client'",
            (server_id,),
        ).fetchall()
        if len(notified) != 1:
            return None
        total += notified[0][0] - ts
    return total


def check(trace: Path) -> tuple[int, list[str]]:
    """The number of cells compared and the lines for those that differ."""
    parsed = _parse(trace)
    per_exec = _parse(trace, "--per-execution")
    conn = open_trace(str(trace))
    has_flows = conn.execute("SELECT count(*) FROM flow").fetchone()[0] > 0
    runs = conn.execute(RUNS).fetchall()
    if len(runs) != len(parsed):
        return 0, [f"{trace}: {len(runs)} [NN_LA_PO] sections, parse prints {len(parsed)} runs"]
    compared = 0
    problems: list[str] = []
    for index, ((_, start, dur, upid, pid, name), run, per) in enumerate(
        zip(runs, parsed, per_exec, strict=True)
    ):
        end = start + dur
        times = run["times"]
        assert isinstance(times, dict)
        label = f"{trace.name} run {index + 1} ({name}, pid {pid})"
        process = run.get("process")
        if isinstance(process, dict) and str(process["pid"]) != str(pid):
            problems.append(f"{label}: parse's run is of pid {process['pid']}")
            continue
        creates = _in_run(conn, upid, start, end, "s.name LIKE '%ANeuralNetworksExecution_create'")
        la_pe = _in_run(conn, upid, start, end, "s.layer = 'LA' AND s.phase = 'PE'")
        count = len(creates) or len(la_pe)
        # A runtime or IPC call of another phase under an application execution, with no
        # other NNAPI section between (ANeuralNetworksBurst_create, PP; omr1's prepareModel
        # and IServiceManager client calls) is moved out of it (Android's tree rewriting).
        moved = conn.execute(
            "SELECT coalesce(sum(c.dur), 0) FROM slice p JOIN slice c ON c.track_id = p.track_id"
            " AND c.id > p.id AND c.id <= p.subtree_end_id"
            f" WHERE p.id IN ({','.join(str(r[0]) for r in la_pe) or 'NULL'})"
            " AND ((c.layer IN ('LR', 'LI')"
            " AND c.phase NOT IN ('PE', 'PIO', 'PTR', 'PCO', 'PR', 'PU')) OR (c.layer IS NULL"
            f" AND {_OTHER_CLIENT.format('c')} AND c.name NOT LIKE 'HIDL::IAllocator::%'))"
            " AND c.dur >= 0 AND NOT EXISTS (SELECT 1 FROM slice a WHERE a.track_id = c.track_id"
            " AND a.id > p.id AND a.id < c.id AND a.subtree_end_id >= c.id"
            f" AND (a.layer IS NOT NULL OR {_OTHER_CLIENT.format('a')}))"
        ).fetchone()[0]
        la_pe_ns = sum(r[2] for r in la_pe) - moved
        clients = _in_run(
            conn,
            upid,
            start,
            end,
            "s.kind = 'hidl_client' AND s.name LIKE 'HIDL::IPreparedModel::execute%'",
        )
        means = per["template_inputs"]
        assert isinstance(means, dict)
        cells: dict[str, tuple[object, object]] = {
            "executions": (count, run["execution_counts"]["PO"]),  # type: ignore[index]
            "LA PO": (dur / 1e6, times["PO"]["LA"]),
            "LA PE": (la_pe_ns / 1e6 or None, times["PE"]["LA"]),
        }
        if count:
            cells["LA PE / execution"] = (
                round(la_pe_ns / 1e6 / count, 9),
                None if means["LA_PE"] is None else round(means["LA_PE"], 9),
            )
        synchronous = bool(clients) and all("executeSynchronously" in r[3] for r in clients)
        if synchronous:
            cells["LI PE"] = (sum(r[2] for r in clients) / 1e6, times["PE"]["LI"])
            cells["LI PE / execution"] = (
                round(sum(r[2] for r in clients) / 1e6 / count, 9),
                round(means["LI_PE"], 9),
            )
        if has_flows and clients:
            driver = _driver_pe(conn, clients)
            if driver is not None:
                cells["LD PE"] = (driver / 1e6, times["PE"]["LD"])
                cells["LD PE / execution"] = (
                    round(driver / 1e6 / count, 9),
                    round(means["LD_PE"], 9),
                )
        compared += len(cells)
        differ = {
            k: v
            for k, v in cells.items()
            if not (v[0] == v[1] or (v[0] in (0, 0.0, None) and v[1] in (0, 0.0, None)))
            and not (
                isinstance(v[0], float) and isinstance(v[1], float) and abs(v[0] - v[1]) < 1e-9
            )
        }
        shown = ", ".join(f"{k} {v[1]}" for k, v in cells.items())
        print(f"{label}: {shown}")
        for key, (mine, theirs) in differ.items():
            problems.append(f"{label}: {key}: the slices give {mine}, parse {theirs}")
    conn.close()
    return compared, problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="+", type=Path)
    args = parser.parse_args(argv)
    total = 0
    failed: list[str] = []
    for trace in args.traces:
        compared, problems = check(trace)
        total += compared
        failed += problems
    for line in failed:
        print("DIFFERS", line)
    print(f"{total} cells compared, {len(failed)} differ")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
