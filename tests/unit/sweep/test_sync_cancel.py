"""A Ctrl-C that reaches Dask's ``sync`` early prints no traceback of Dask's own.

distributed's ``sync`` (``distributed/utils.py``) schedules a ``cancel`` callback when a
KeyboardInterrupt stops its wait; if the coroutine it waits for has not started yet, that
callback reads an unassigned ``future`` and the loop thread logs a NameError traceback on
``tornado.application``.  CI's Ctrl-C test of a local Dask sweep
(``test_interrupt.py::test_ctrl_c_stops_a_local_dask_cluster_quietly``) caught it under load.
Here the interrupt is made to land at that moment every time.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator

import pytest

from nnemu.sweep._engines import sync_cancel_bug_quiet

distributed_utils = pytest.importorskip("distributed.utils")


class _InterruptedOnce(threading.Event):
    """An Event whose first ``wait`` in the test's own thread is stopped by a Ctrl-C, as
    ``sync``'s can be.  (Patching ``threading.Event`` reaches every thread: another
    thread's wait is left alone.)"""

    thread: int | None = None

    def wait(self, timeout: float | None = None) -> bool:
        if threading.get_ident() == type(self).thread:
            type(self).thread = None
            raise KeyboardInterrupt
        return super().wait(timeout)


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def tornado_records() -> Iterator[_Records]:
    handler = _Records()
    logger = logging.getLogger("tornado.application")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


def _interrupt_sync_early(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run ``sync`` with its wait interrupted before its coroutine starts (the loop thread is
    held until then, so the coroutine cannot finish first); wait for the loop thread to run
    the ``cancel`` callback, then stop the loop."""
    runner = distributed_utils.LoopRunner(asynchronous=False)
    runner.start()
    gate = threading.Event()  # made before the patch: a plain Event
    done = threading.Event()
    runner.loop.add_callback(gate.wait, 10)  # holds the loop thread until sync is interrupted
    _InterruptedOnce.thread = threading.get_ident()
    monkeypatch.setattr(distributed_utils.threading, "Event", _InterruptedOnce)
    try:

        async def answer() -> int:
            return 1

        with pytest.raises(KeyboardInterrupt):
            distributed_utils.sync(runner.loop, answer)
        monkeypatch.undo()
        runner.loop.add_callback(done.set)  # after the cancel callback: the loop runs in order
        gate.set()
        assert done.wait(10)
        time.sleep(0.05)
    finally:
        gate.set()
        _InterruptedOnce.thread = None
        monkeypatch.undo()
        runner.stop()


def _name_errors(records: list[logging.LogRecord]) -> list[logging.LogRecord]:
    return [r for r in records if r.exc_info and isinstance(r.exc_info[1], NameError)]


def test_the_dask_bug_logs_a_traceback_without_the_filter(
    monkeypatch: pytest.MonkeyPatch, tornado_records: _Records
) -> None:
    """The bug this works around is there (when a distributed release fixes it, this skips
    and the filter can go)."""
    _interrupt_sync_early(monkeypatch)
    if not _name_errors(tornado_records.records):
        pytest.skip("this distributed's sync no longer logs the NameError")


def test_the_sweep_engine_drops_only_that_traceback(
    monkeypatch: pytest.MonkeyPatch, tornado_records: _Records
) -> None:
    """Inside ``sync_cancel_bug_quiet`` (what ``run_dask`` runs in) the NameError is not
    logged, while any other error of a loop callback still is."""
    with sync_cancel_bug_quiet():
        _interrupt_sync_early(monkeypatch)
        try:
            raise ValueError("another callback's error")
        except ValueError:
            logging.getLogger("tornado.application").error("Exception in callback", exc_info=True)
    assert not _name_errors(tornado_records.records)
    assert [type(r.exc_info[1]) for r in tornado_records.records if r.exc_info] == [ValueError]
