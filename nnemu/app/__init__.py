"""The emulated client application: scenario workload -> runtime calls."""

from nnemu.app._app import FAILED_MARK, QOS_MARK, RETRY_MARK, WAITED_MARK, Application, qos_mark
from nnemu.app._stats import AppStats, ExecutionRecord, LatencyHistogram
from nnemu.report import SPLIT_PARTS

__all__ = [
    "FAILED_MARK",
    "QOS_MARK",
    "RETRY_MARK",
    "SPLIT_PARTS",
    "WAITED_MARK",
    "AppStats",
    "Application",
    "ExecutionRecord",
    "LatencyHistogram",
    "qos_mark",
]
