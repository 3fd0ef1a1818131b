"""The emulated client application: scenario workload -> runtime calls."""

from nnemu.app._app import Application
from nnemu.app._stats import AppStats, ExecutionRecord, LatencyHistogram

__all__ = ["AppStats", "Application", "ExecutionRecord", "LatencyHistogram"]
