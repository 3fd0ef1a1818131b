"""The emulated client application: scenario workload -> runtime calls."""

from nnemu.app._app import Application
from nnemu.app._stats import SPLIT_PARTS, AppStats, ExecutionRecord, LatencyHistogram

__all__ = ["SPLIT_PARTS", "AppStats", "Application", "ExecutionRecord", "LatencyHistogram"]
