"""What emulated code awaits: the kernel's suspension and its waits with more than one step.

Never compiled (``nnemu._native``): ``await`` takes a coroutine or a generator-based
coroutine (``types.coroutine``), and a mypyc-compiled generator or coroutine is neither
kind to an interpreted caller (it would be wrapped, or resumed through a method call).
So the kernel's waits (``Kernel.sleep_until``, ``park``, ``SimQueue.get``, ...), compiled
or not, do their work when called and hand out one of these to await: ``NO_WAIT``
(nothing to wait for), ``done(value)`` (a value at once), ``suspended()`` (give the baton
back to the stepper).  A wait that must sync first, when the sync itself gives the baton
up, hands out ``then(synced, wait)``, which awaits the sync and then the wait once more.

Emulated code awaits what the wait returned at once (``await kernel.sleep(d)``), so the
work done at the call is done when it would have been done inside the await.
"""

from __future__ import annotations

import types
from collections.abc import Awaitable, Callable, Generator
from typing import Any, Final, cast

from trio.lowlevel import current_task, wait_task_rescheduled

# The kernel's objects below are typed Any: they are the compiled kernel's or the pure
# one's (a wheel's or the source's), and this module, which the kernel imports, is typed
# against neither.


class _Suspend:
    """What a parking thread yields: control goes back to the kernel's stepper, which
    resumes it (``coroutine.send``) with the value it is woken with."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<kernel park>"


SUSPEND: Final = _Suspend()
"""The one object a thread gives the baton back with (``Kernel._step`` checks it)."""


@types.coroutine
def _finished() -> Generator[_Suspend, object, None]:
    return
    yield  # (a generator: awaiting one that has finished returns None at once)


NO_WAIT: Final[Awaitable[None]] = _finished()
"""What a wait hands out when there is nothing to wait for: a generator-based coroutine
that has run to its end, so that awaiting it (again and again, unlike a native coroutine)
returns None at once, without making a coroutine per call."""
for _ in cast(Generator[_Suspend, object, None], NO_WAIT):
    pass


@types.coroutine
def suspended() -> Generator[_Suspend, object, object]:
    """Give the baton back to the stepper; the value the thread is woken with (``wake``)."""
    return (yield SUSPEND)


@types.coroutine
def done(value: object) -> Generator[_Suspend, object, Any]:
    """``value`` at once, as what to await."""
    return value
    yield  # (a generator that never suspends)


@types.coroutine
def then(
    synced: Awaitable[None], wait: Callable[[], Awaitable[Any]]
) -> Generator[_Suspend, object, Any]:
    """A wait whose sync gave up the baton (``synced``): await that, then call the wait
    again (``wait``: ``SimQueue.get``, say), now that the task is not ahead of the clock,
    and await what it returns."""
    yield from cast(Generator[_Suspend, object, None], synced)
    return (yield from cast(Generator[_Suspend, object, Any], wait()))


async def shell(kernel: Any, proc: Any) -> None:
    """The trio task of an emulated thread (``Kernel.spawn``): it waits until the thread's
    code ends, and closes the code if the nursery is cancelled first."""
    if proc.done:
        return
    proc.task = current_task()
    proc.shell_waiting = True
    try:
        await wait_task_rescheduled(kernel._abort)
    except BaseException as cancelled:
        proc.shell_waiting = False
        if not proc.done:
            # Cancelled first (the end of a run): the code's cleanup runs now.
            proc.done = True
            if proc.context is not None and proc.coro is not None:
                proc.context.run(proc.coro.close)
            kernel._reached_ns = max(kernel._reached_ns, kernel.clock_ns + proc.lag_ns)
            proc.lag_ns = 0
        # Named, not a bare ``raise``: closing a compiled coroutine leaves its GeneratorExit
        # as the exception being handled, which a bare ``raise`` would send to the nursery.
        raise cancelled
