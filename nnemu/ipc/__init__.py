"""HIDL-over-binder transport between emulated processes."""

from nnemu.ipc._binder import DEAD, ONEWAY_SERVER_NS, Binder, DeadObject, Endpoint
from nnemu.ipc._split import ExecutionSplit

__all__ = [
    "DEAD",
    "ONEWAY_SERVER_NS",
    "Binder",
    "DeadObject",
    "Endpoint",
    "ExecutionSplit",
]
