"""Pictures of a run: a self-contained HTML page (inline SVG) and PNG figures (matplotlib).

pictures = {}
report = run(
    scenario,
    keep_executions=True,
    inspect=lambda emulator: pictures.update(data=collect(emulator)),
)
write_html(pictures["data"], report, "run.html")
write_plots(pictures["data"], report, "plots/")  # needs the ``plots`` extra
"""

from nnemu.pictures._collect import (
    AppPicture,
    DevicePicture,
    ExecutionPicture,
    FaultPicture,
    JobPicture,
    ResultPicture,
    RunPictures,
    collect,
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
    "AppPicture",
    "DevicePicture",
    "ExecutionPicture",
    "FaultPicture",
    "JobPicture",
    "PlotsUnavailable",
    "ResultPicture",
    "RunPictures",
    "collect",
    "plots_available",
    "render_html",
    "write_html",
    "write_plots",
]
