"""Who runs: the emulated thread identity and the context variables the kernel keeps.

Never compiled (``nnemu._native``): the compiled kernel and the pure one share these
objects, so a ``SimThread``, the current thread's context variable and ``KernelStopped``
are the same whichever kernel runs.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar, Token
from typing import Protocol

import attrs

from nnemu.errors import EmulatorBug


@attrs.frozen
class SimThread:
    """An emulated thread: the identity the tracer writes on every mark."""

    pid: int
    """Process id (the tgid in traces)."""
    tid: int
    """Thread id."""
    name: str
    """Thread name (the TASK column of ftrace, at most 15 characters shown)."""


class KernelStopped(Exception):
    """Raised inside emulated tasks that try to wait after the kernel has shut down."""


_current_thread: ContextVar[SimThread | None] = ContextVar("nnemu_thread", default=None)


class _Clocked(Protocol):
    """A kernel, compiled or pure, as far as ``virtual_time_ms`` reads it."""

    def task_now_ns(self) -> int: ...


_active_kernel: ContextVar[_Clocked | None] = ContextVar("nnemu_kernel", default=None)


def virtual_time_ms() -> float | None:
    """Virtual time of the emulation the caller runs in, in ms (None outside one).

    Logs carry it (the ``vt`` field), so a log line can be matched to the trace.
    """
    kernel = _active_kernel.get()
    return None if kernel is None else kernel.task_now_ns() / 1e6


def current_thread() -> SimThread:
    """The emulated thread the calling code runs on."""
    thread = _current_thread.get()
    if thread is None:
        raise EmulatorBug("no emulated thread is bound to this task")
    return thread


class _AsThread:
    """The block of ``as_thread``: the code inside runs as ``thread``."""

    __slots__ = ("_thread", "_token")

    def __init__(self, thread: SimThread) -> None:
        self._thread = thread

    def __enter__(self) -> SimThread:
        self._token = _current_thread.set(self._thread)
        return self._thread

    def __exit__(self, *exc_info: object) -> None:
        _current_thread.reset(self._token)


def as_thread(thread: SimThread) -> _AsThread:
    """Run the enclosed code as ``thread`` (a binder thread serving a transaction, say):
    ``with as_thread(thread):``."""
    return _AsThread(thread)


enter_thread: Callable[[SimThread], Token[SimThread | None]] = _current_thread.set
"""``as_thread`` in two calls without a block object, for a hot path: ``token =
enter_thread(thread)``, then ``leave_thread(token)`` in a ``finally``."""

leave_thread: Callable[[Token[SimThread | None]], None] = _current_thread.reset
"""Undo ``enter_thread(thread)``: the calling code runs as the thread it ran as before."""
