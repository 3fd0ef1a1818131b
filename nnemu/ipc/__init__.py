"""HIDL-over-binder transport between emulated processes, and a burst's fast message queues."""

from nnemu.ipc._binder import DEAD, ONEWAY_SERVER_NS, Binder, DeadObject, Endpoint
from nnemu.ipc._fmq import FMQ_TRANSFER_NS
from nnemu.ipc._refs import CallbackRef
from nnemu.sim._split import ExecutionSplit

__all__ = [
    "DEAD",
    "FMQ_TRANSFER_NS",
    "ONEWAY_SERVER_NS",
    "Binder",
    "CallbackRef",
    "DeadObject",
    "Endpoint",
    "ExecutionSplit",
]
