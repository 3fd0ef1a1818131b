"""Notebook-style: run a scenario, load its trace as a DataFrame, plot latency per app.

Shows: ``nnemu.run`` with a trace writer, ``nnemu.query.TraceProcessor(trace=...)`` (the
shape of Perfetto's Python API) with ``query(sql)`` rows read by attribute and
``as_pandas_dataframe()``, and ``nnemu.parse_trace`` for the parser's timing tables.
The scenario is ``scenarios/two_apps_one_npu.yaml`` (a camera app and a photo indexer
sharing one accelerator); each app's execution latency is the duration of its
application-layer execution slices (``[NN_LA_PE]``, layer ``LA`` phase ``PE``). The
histogram goes to a PNG in a temporary directory (needs matplotlib: ``pip install
'nnemu[plots]'``; the DataFrame needs pandas: ``pip install 'nnemu[pandas]'``).

Run it: ``python examples/latency_per_app.py``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display needed
import matplotlib.pyplot as plt

import nnemu
from nnemu.query import TraceProcessor
from nnemu.tracer import Layer, Phase, open_trace_writer

SCENARIO = Path(__file__).resolve().parent.parent / "scenarios" / "two_apps_one_npu.yaml"

with tempfile.TemporaryDirectory() as tmp:
    trace = Path(tmp) / "two_apps.html"
    report = nnemu.run(nnemu.load_scenario(SCENARIO), sinks=[open_trace_writer(trace)])
    print(f"ran {SCENARIO.name}: {report.passed=}")

    # The same SQL as `nnemu query`, over Perfetto-shaped tables.
    with TraceProcessor(trace=trace) as tp:
        for row in tp.query("SELECT name, pid FROM process ORDER BY pid"):
            print(f"process {row.pid}: {row.name}")
        latency = tp.query(
            "SELECT process_name AS app, ts, dur / 1e6 AS latency_ms FROM nnapi_slice"
            " WHERE layer = 'LA' AND phase = 'PE' ORDER BY ts"
        ).as_pandas_dataframe()

    summary = latency.groupby("app")["latency_ms"].describe(percentiles=[0.5, 0.9])
    print(summary[["count", "mean", "50%", "90%", "max"]].round(3).to_string())

    figure, axes = plt.subplots(figsize=(6, 3.5))
    for app, rows in latency.groupby("app"):
        axes.hist(rows["latency_ms"], bins=30, alpha=0.6, label=str(app))
    axes.set_xlabel("execution latency (ms)")
    axes.set_ylabel("executions")
    axes.legend()
    figure.tight_layout()
    png = Path(tmp) / "latency_per_app.png"
    figure.savefig(png, dpi=80)
    print(f"wrote a histogram of {len(latency)} executions: {png.stat().st_size > 0}")

    # The parser's view of the same trace: the tables `nnemu parse` prints, as data.
    for run in nnemu.parse_trace(trace).runs:
        app_ms = (run.totals_ns(Layer.APPLICATION, Phase.EXECUTION) or 0) / 1e6
        count = run.execution_counts[Phase.OVERALL]
        print(f"{run.process_name}: {count} executions, application PE {app_ms:.3f} ms in all")
