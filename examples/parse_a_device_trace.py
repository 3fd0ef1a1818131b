"""Parse a systrace captured on a real phone and print per-run driver execution time.

Shows: ``nnemu.parser.parse_file`` on a device trace (``tests/data/omr1.html``, an
Android 8.1 phone running a quantized MobileNet five times through a HAL 1.0 driver), the
``ParseResult`` it returns (``runs``, ``diagnostics``), and ``RunStats.totals_ns(layer,
phase)``: the exact nanoseconds the NNAPI tracing contract assigns to a layer and phase,
the numbers behind ``nnemu parse``'s table. Runs start at each ``[NN_LA_PO]`` mark.

Run it: ``python examples/parse_a_device_trace.py``.
"""

from __future__ import annotations

from pathlib import Path

from nnemu.parser import parse_file
from nnemu.tracer import Layer, Phase

TRACE = Path(__file__).resolve().parent.parent / "tests" / "data" / "omr1.html"


def ms(ns: int | None) -> str:
    """Nanoseconds as milliseconds for the table; n/a when the layer has no data."""
    return "n/a" if ns is None else f"{ns / 1e6:.2f}"


result = parse_file(TRACE)
print(f"{TRACE.name}: {len(result.runs)} runs, {len(result.diagnostics)} diagnostics")
print(
    f"{'run':>3}  {'app':24} {'executions':>10} {'app PE ms':>10} {'driver PE ms':>12} {'driver PC ms':>12}"
)
for index, run in enumerate(result.runs):
    app = run.starting_mark.split("]", 1)[-1]  # B|pid|[NN_LA_PO]<app name>
    executions = run.execution_counts[Phase.OVERALL]
    app_pe = run.totals_ns(Layer.APPLICATION, Phase.EXECUTION)
    driver_pe = run.totals_ns(Layer.DRIVER, Phase.EXECUTION)
    driver_pc = run.totals_ns(Layer.DRIVER, Phase.COMPILATION)
    print(
        f"{index:3}  {app:24} {executions:10} {ms(app_pe):>10} {ms(driver_pe):>12} {ms(driver_pc):>12}"
    )

total_pe = sum(run.totals_ns(Layer.DRIVER, Phase.EXECUTION) or 0 for run in result.runs)
print(f"driver execution time over all runs: {total_pe / 1e6:.2f} ms")
