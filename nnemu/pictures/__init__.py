"""Pictures of a run: a self-contained HTML page (inline SVG) and PNG figures (matplotlib).

pictures = {}
report = run(
    scenario,
    sinks=[open_trace_writer("run.trace.html")],  # optional: for the per-layer tables
    keep_executions=True,
    inspect=lambda emulator: pictures.update(data=collect(emulator)),
)
data = with_layer_tables(pictures["data"], "run.trace.html")  # the "Why" section's tables
write_html(data, report, "run.html")
write_plots(data, report, "plots/")  # needs the ``plots`` extra
"""

from nnemu.pictures._collect import (
    AppConfig,
    AppPicture,
    CpuConfig,
    DeviceConfig,
    DevicePicture,
    ExecutionPicture,
    FaultConfig,
    FaultPicture,
    JobPicture,
    LayerRow,
    LayerRun,
    LayerTables,
    LayerTrace,
    ResultPicture,
    RunPictures,
    WhyPicture,
    collect,
    layer_tables,
    why_picture,
    with_layer_tables,
)
from nnemu.pictures._html import render_html, write_html
from nnemu.pictures._plots import (
    MISSING_MATPLOTLIB,
    PlotsUnavailable,
    plots_available,
    write_plots,
)

__all__ = [
    "MISSING_MATPLOTLIB",
    "AppConfig",
    "AppPicture",
    "CpuConfig",
    "DeviceConfig",
    "DevicePicture",
    "ExecutionPicture",
    "FaultConfig",
    "FaultPicture",
    "JobPicture",
    "LayerRow",
    "LayerRun",
    "LayerTables",
    "LayerTrace",
    "PlotsUnavailable",
    "ResultPicture",
    "RunPictures",
    "WhyPicture",
    "collect",
    "layer_tables",
    "plots_available",
    "render_html",
    "why_picture",
    "with_layer_tables",
    "write_html",
    "write_plots",
]
