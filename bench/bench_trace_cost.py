"""What tracing costs an execution, in one process: untraced, a do-nothing batch sink, the writer.

The workload of ``bench_stack.py`` (its scenario, ``N`` executions) run in this process
``--repeat`` times per variant, the variants alternating, best CPU time (``process_time``)
of each kept:

* ``off``      -- tracing off;
* ``null``     -- a batch sink whose ``receive`` does nothing (the tracer's own bookkeeping);
* ``systrace`` -- the systrace HTML writer to a temporary file (what ``--trace x.html`` costs).

It prints µs an execution for ``off`` and the extra of the other two, and on/off by CPU.
Run it in two trees (each with its own build and ``PYTHONPATH``) alternately to compare
code: one process per tree and round, ratios from the same round (bench/README.md).

Usage: python bench/bench_trace_cost.py [--executions N] [--repeat R] [--variants off null ...]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_stack import APPS, scenario_text


class NullSink:
    """A batch sink that takes every batch and does nothing with it."""

    def process(self, pid: int, name: str) -> None:
        """Nothing."""

    def begin(self, ts_ns: int, thread: object, name: str) -> None:
        """Nothing (never called: the sink takes batches)."""

    def end(self, ts_ns: int, thread: object) -> None:
        """Nothing (never called: the sink takes batches)."""

    def receive(self, *batch: Any) -> None:
        """Nothing, whatever the batch's shape."""

    def close(self) -> None:
        """Nothing."""


def one(variant: str, executions: int, tmp: Path) -> float:
    """CPU seconds of one run of ``variant``."""
    from nnemu._emulator import run
    from nnemu.scenario import load_scenario_text
    from nnemu.tracer import open_trace_writer

    scenario = load_scenario_text(scenario_text(executions), "bench_trace_cost.py")
    sinks: list[Any] = []
    if variant == "null":
        sinks = [NullSink()]
    elif variant == "systrace":
        sinks = [open_trace_writer(tmp / "t.html")]
    start = time.process_time()
    report = run(scenario, sinks=sinks)
    cpu = time.process_time() - start
    done = sum(report.data["apps"][name]["completed"] for name, _ in APPS)
    if done != executions:
        raise SystemExit(f"{variant}: {done} executions completed, not {executions}")
    return cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executions", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--variants", nargs="+", default=["off", "null", "systrace"])
    args = parser.parse_args()
    from nnemu import _native

    best = {variant: float("inf") for variant in args.variants}
    with tempfile.TemporaryDirectory() as tmp:
        one("off", 200, Path(tmp))  # (imports and first-use costs, untimed)
        for _ in range(args.repeat):
            for variant in args.variants:
                best[variant] = min(best[variant], one(variant, args.executions, Path(tmp)))
    us = {variant: cpu / args.executions * 1e6 for variant, cpu in best.items()}
    print(f"# {_native.describe()}")
    parts = []
    for variant in args.variants:
        if variant == "off" or "off" not in us:
            parts.append(f"{variant} {us[variant]:.2f}")
        else:
            parts.append(f"{variant} +{us[variant] - us['off']:.2f}")
    if "off" in us and "systrace" in us:
        parts.append(f"on/off {us['off'] / us['systrace']:.3f}")
    print("µs/exec: " + "  ".join(parts))


if __name__ == "__main__":
    main()
