"""Holding Ctrl-C and SIGTERM back over a few steps that must not be cut in the middle."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM back over the block, and take the first that came at its end.

    The sweep holds them while its pool starts worker processes (a KeyboardInterrupt, or the
    CLI's ``Terminated``, in the middle of that left a child the pool did not know of, which
    read its start-up data after the pool's semaphores were gone and printed a traceback of
    its own) and while a chunk's rows are written and counted (so the interrupt message
    counts what is on disk).  The handlers are swapped rather than the signals masked: a mask
    holds only this thread's signals, and another thread (the pool's) would take them.
    Outside the main thread, where Python runs no signal handler, it does nothing.
    """
    held: list[int] = []
    previous: dict[int, Any] = {}
    try:
        for number in (signal.SIGINT, signal.SIGTERM):
            previous[number] = signal.signal(number, lambda got, _frame: held.append(got))
    except ValueError:  # not the main thread
        for set_number, handler in previous.items():
            signal.signal(set_number, handler)
        yield
        return
    try:
        yield
    finally:
        for held_number, restored in previous.items():
            signal.signal(held_number, restored)
        if held:
            first = previous[held[0]]
            if callable(first):
                first(held[0], None)  # Python's raises KeyboardInterrupt, the CLI's Terminated
            elif first == signal.SIG_DFL:
                signal.raise_signal(held[0])
