"""The emulated client application: scenario workload -> runtime calls."""

from nnemu.app._app import Application
from nnemu.app._stats import AppStats, ExecutionRecord, LatencyHistogram
from nnemu.report import SPLIT_PARTS

__all__ = ["SPLIT_PARTS", "AppStats", "Application", "ExecutionRecord", "LatencyHistogram"]
