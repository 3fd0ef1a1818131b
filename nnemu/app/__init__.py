"""The emulated client application: scenario workload -> runtime calls."""

from nnemu.app._app import RETRY_MARK, Application
from nnemu.app._stats import SPLIT_PARTS, AppStats, ExecutionRecord, LatencyHistogram

__all__ = [
    "RETRY_MARK",
    "SPLIT_PARTS", "AppStats", "Application", "ExecutionRecord", "LatencyHistogram"]
