"""HIDL-over-binder transport between emulated processes."""

from nnemu.ipc._binder import DEAD, Binder, DeadObject, Endpoint

__all__ = ["DEAD", "Binder", "DeadObject", "Endpoint"]
