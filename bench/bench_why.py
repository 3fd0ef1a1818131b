"""What the HTML page's per-layer tables (its "Why" section) cost ``nnemu run --html``.

``nnemu run --html`` parses the run's trace for the tables: its ``--trace`` file after the
run, or the run's systrace in memory as the run goes (``nnemu.pictures.LayerTrace``).  This runs one
scenario (``--duration-ms`` replaces its duration; default qos_priority_checkpoint for
60 s) four ways, in this process, alternating, ``--repeat`` times each:

* ``page``                -- run with ``keep_executions``, ``collect``, ``render_html``;
* ``page + tables``       -- the same plus the in-memory parse of its systrace (``--html``);
* ``trace + page``        -- with a systrace sink of the user's (``--trace x.html --html``
  without the tables, the cost before the Why section);
* ``trace + page + tables`` -- the same plus the parse of that trace (``--trace --html``;
  also what ``--html`` alone cost when it wrote a temporary systrace and parsed it after).

It prints the best CPU seconds (``time.process_time``) of each, of the run alone and in
all, and the page's size.  The machine may be shared: read the ratios, not the seconds.

Usage: python bench/bench_why.py [SCENARIO] [--duration-ms MS] [--repeat R]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import attrs

from nnemu import run
from nnemu.pictures import LayerTrace, RunPictures, collect, render_html
from nnemu.scenario import Scenario, load_scenario
from nnemu.tracer import TraceSink, open_trace_writer

REPO = Path(__file__).resolve().parents[1]


def _once(scenario: Scenario, *, tables: bool, trace: bool) -> tuple[float, float, int]:
    """(CPU s of the run, CPU s in all, page bytes) of one way of writing the page."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.html")
        started = time.process_time()
        sinks: list[TraceSink] = [open_trace_writer(path)] if trace else []
        box: list[RunPictures] = []
        layers = LayerTrace(path if trace else None)
        report = run(
            scenario,
            sinks=[*sinks, *(layers.sinks if tables else [])],
            keep_executions=True,
            inspect=lambda emulator: box.append(collect(emulator)),
        )
        ran = time.process_time()
        data = layers.attach(box[0]) if tables else box[0]
        page = render_html(data, report)
        return ran - started, time.process_time() - started, len(page.encode())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "scenario", nargs="?", default=str(REPO / "scenarios/qos_priority_checkpoint.yaml")
    )
    parser.add_argument("--duration-ms", type=float, default=60_000.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    scenario = attrs.evolve(load_scenario(args.scenario), duration_ms=args.duration_ms)
    ways = {
        "page": (False, False),
        "page + tables": (True, False),
        "trace + page": (False, True),
        "trace + page + tables": (True, True),
    }
    best: dict[str, tuple[float, float, int]] = {}
    for _ in range(args.repeat):
        for name, (tables, trace) in ways.items():
            ran, total, size = _once(scenario, tables=tables, trace=trace)
            old = best.get(name)
            best[name] = (
                min(ran, old[0]) if old else ran,
                min(total, old[1]) if old else total,
                size,
            )
    print(f"{'way':24} {'run CPU s':>10} {'total CPU s':>12} {'page MB':>8}")
    for name, (ran, total, size) in best.items():
        print(f"{name:24} {ran:10.2f} {total:12.2f} {size / 1e6:8.2f}")


if __name__ == "__main__":
    main()
