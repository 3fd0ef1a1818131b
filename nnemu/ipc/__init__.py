"""HIDL-over-binder transport between emulated processes."""

from nnemu.ipc._binder import DEAD, ONEWAY_SERVER_NS, Binder, DeadObject, Endpoint
from nnemu.ipc._split import CURRENT_SPLIT, ExecutionSplit, current_split, open_split

__all__ = [
    "CURRENT_SPLIT",
    "DEAD",
    "ONEWAY_SERVER_NS",
    "Binder",
    "DeadObject",
    "Endpoint",
    "ExecutionSplit",
    "current_split",
    "open_split",
]
