"""The engines that run a sweep's chunks: a local process pool, or Dask (a LocalCluster or a
running scheduler).  Both hand each finished chunk's rows to ``on_rows`` as it finishes.

Local pool: ``ProcessPoolExecutor`` on the ``forkserver`` start method with nnemu
preloaded (``fork`` is unsafe with threads running, and no longer the default from
Python 3.14); its workers ignore SIGINT so Ctrl-C is the parent's to handle.  A worker
that dies (an OOM kill) breaks the pool: the pool is recreated, and each variant that
was in flight is run again alone (so an innocent neighbour is never blamed); a variant
that kills its worker a second time is recorded as ``crashed``.
"""

from __future__ import annotations

import collections
import functools
import importlib
import logging
import math
import multiprocessing
import os
import signal
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

import attrs

from nnemu.errors import NnemuError, Terminated
from nnemu.sweep._signals import signals_held
from nnemu.sweep._worker import Chunk, Job, row, run_chunk, run_job

OnRows = Callable[[list[dict[str, Any]]], None]
"""Receives the rows of each finished chunk (in the parent process)."""

MISSING_DASK: Final = "--engine dask needs Dask: pip install 'nnemu[dask]'"
CONNECT_TIMEOUT_S = 10.0
"""How long ``--address`` is tried before the sweep gives up on the scheduler."""
TASK_SECONDS: Final = 0.5
"""Work per Dask task to aim for: a task costs the scheduler a few ms."""


class EngineError(NnemuError):
    """An engine cannot start (Dask missing, no scheduler at the address)."""


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _crashed(chunk: Chunk, job: Job) -> dict[str, Any]:
    return row(job, chunk.version, "crashed", error="the worker process died twice running it")


def local_chunk_size(variants: int, workers: int) -> int:
    """Variants per local task: enough tasks to keep every worker busy to the end, few enough
    that a point's replications share their scenario."""
    return max(1, min(32, variants // max(1, workers * 16)))


def run_local(chunks: Sequence[Chunk], workers: int, on_rows: OnRows) -> None:
    """Run ``chunks`` on a local pool of ``workers`` processes (see the module docstring).

    On KeyboardInterrupt (or ``Terminated``: SIGTERM) nothing more is submitted, what is
    queued is cancelled, the chunks already running finish and are handed over, and the
    interrupt is raised again.
    """
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["nnemu.sweep._worker", "nnemu._emulator", "nnemu.overrides"])
    _start_forkserver()

    def new_pool() -> ProcessPoolExecutor:
        return ProcessPoolExecutor(workers, mp_context=context, initializer=_ignore_sigint)

    pending = collections.deque(chunks)
    suspects: collections.deque[Chunk] = collections.deque()
    """Single-variant chunks that were in flight when a worker died: run alone, once more."""
    second: set[int] = set()
    """``id`` of each chunk in ``suspects`` (held there, so ids stay unique)."""

    def retry(chunk: Chunk) -> None:
        for job in chunk.jobs:
            single = attrs.evolve(chunk, jobs=(job,))
            suspects.append(single)
            second.add(id(single))

    in_flight: dict[Future[list[dict[str, Any]]], Chunk] = {}
    pool = new_pool()
    try:
        while pending or suspects or in_flight:
            broken = False
            try:  # a chunk leaves its queue once submitted: a pool broken meanwhile keeps it
                with signals_held():  # submit starts the workers: never cut one short
                    if suspects:
                        if not in_flight:
                            in_flight[pool.submit(run_chunk, suspects[0])] = suspects[0]
                            suspects.popleft()
                    else:
                        while pending and len(in_flight) < 2 * workers:
                            in_flight[pool.submit(run_chunk, pending[0])] = pending[0]
                            pending.popleft()
            except BrokenProcessPool:
                broken = True
            done = set() if broken else wait(in_flight, return_when=FIRST_COMPLETED)[0]
            for future in done:
                chunk = in_flight.pop(future)
                try:
                    rows = future.result()
                except BrokenProcessPool:
                    broken = True
                    if id(chunk) in second:  # it ran alone: it killed its worker twice
                        on_rows([_crashed(chunk, chunk.jobs[0])])
                    else:
                        retry(chunk)
                    continue
                except Exception as err:  # the rows did not come back (cannot happen, but
                    # one chunk must not end the sweep): its variants are failed rows
                    message = f"{type(err).__name__}: {err}"
                    rows = [row(job, chunk.version, "failed", error=message) for job in chunk.jobs]
                on_rows(rows)  # outside the try: a results file that cannot be written ends it
            if broken:
                for future, chunk in in_flight.items():
                    if future.done() and not future.cancelled() and future.exception() is None:
                        on_rows(future.result())  # finished before the pool broke
                    elif id(chunk) in second:
                        on_rows([_crashed(chunk, chunk.jobs[0])])
                    else:
                        future.cancel()
                        retry(chunk)
                in_flight.clear()
                pool.shutdown(wait=True, cancel_futures=True)
                pool = new_pool()
    except (KeyboardInterrupt, Terminated):  # Ctrl-C, or SIGTERM through the CLI's handler
        for future in in_flight:
            future.cancel()
        try:
            pool.shutdown(wait=True, cancel_futures=True)
            for future, _chunk in in_flight.items():
                if future.done() and not future.cancelled() and future.exception() is None:
                    on_rows(future.result())
        except (KeyboardInterrupt, Terminated):  # a second signal: do not wait for the chunks
            _terminate(pool)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _start_forkserver() -> None:
    """Start the forkserver (once per process) in an empty directory.

    It runs ``python -c``, whose ``sys.path`` begins with the current directory (Python 3.11
    does not give it the parent's path): from the parent of a checkout, or any directory
    holding an ``nnemu`` folder, the workers imported that folder instead of this nnemu, and
    every variant crashed.  Started elsewhere, the workers import what the parent imported.
    """
    from multiprocessing import forkserver

    here = os.getcwd()
    os.chdir(_workers_directory())
    try:
        forkserver.ensure_running()
    finally:
        os.chdir(here)


@functools.cache
def _workers_directory() -> str:
    """An empty directory for the forkserver and its workers, removed when nnemu exits."""
    import atexit
    import shutil

    empty = tempfile.mkdtemp(prefix="nnemu-workers-")
    atexit.register(shutil.rmtree, empty, ignore_errors=True)
    return empty


def _terminate(pool: ProcessPoolExecutor) -> None:
    processes = getattr(pool, "_processes", None) or {}
    for process in list(processes.values()):
        process.terminate()


def dask_available() -> bool:
    """Whether distributed is installed (checked without importing it)."""
    import importlib.util

    return importlib.util.find_spec("distributed") is not None


def dask_chunk_size(variants: int, workers: int, seconds_per_variant: float) -> int:
    """Variants per Dask task: about ``TASK_SECONDS`` of work, but at least two tasks per worker."""
    wanted = math.ceil(TASK_SECONDS / max(seconds_per_variant, 1e-6))
    return max(1, min(wanted, math.ceil(variants / max(1, 2 * workers))))


def time_one(chunk: Chunk) -> tuple[dict[str, Any], float]:
    """Run a chunk's first variant here (its row, and the seconds it took): sizes Dask's tasks."""
    start = time.perf_counter()
    result = run_job(chunk, chunk.jobs[0])
    return result, time.perf_counter() - start


class _SyncCancelBug(logging.Filter):
    """Drops tornado's report of a NameError raised in ``distributed.utils.sync``'s
    ``cancel`` callback, and nothing else.

    When a Ctrl-C reaches ``sync`` before the coroutine it waits for has started, ``sync``
    schedules ``cancel``, which reads a ``future`` not yet assigned (distributed 2026.8): the
    loop thread logs that NameError's traceback on ``tornado.application`` after the sweep
    has already stopped in order.  The interrupt itself is handled (the sweep exits 130)."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, NameError) and error.__traceback__ is not None:
            last = traceback.extract_tb(error.__traceback__)[-1]
            if last.name == "cancel" and Path(last.filename).parts[-2:] == (
                "distributed",
                "utils.py",
            ):
                return False
        return True


@contextmanager
def sync_cancel_bug_quiet() -> Iterator[None]:
    """While inside, tornado does not print distributed's ``sync`` cancel NameError
    (``_SyncCancelBug``): a Ctrl-C prints no traceback."""
    logger = logging.getLogger("tornado.application")
    quiet = _SyncCancelBug()
    logger.addFilter(quiet)
    try:
        yield
    finally:
        logger.removeFilter(quiet)


def run_dask(
    make_chunks: Callable[[int], list[Chunk]],
    workers: int,
    address: str | None,
    on_rows: OnRows,
) -> None:
    """Run the chunks (``make_chunks(worker count)``) on Dask: a LocalCluster of ``workers``
    processes (scratch files in a temporary directory, closed on every exit path), or the
    scheduler at ``address``.  When Dask gives up on a task whose worker died each time it
    tried (twice on a LocalCluster), each of its variants is run again alone; one that still
    kills its worker is recorded as ``crashed``."""
    try:
        dask: Any = importlib.import_module("dask")
        distributed: Any = importlib.import_module("distributed")
    except ImportError as err:
        raise EngineError(MISSING_DASK) from err
    with (
        sync_cancel_bug_quiet(),
        tempfile.TemporaryDirectory(prefix="nnemu-dask-") as scratch,
        dask.config.set(
            {"temporary-directory": scratch, "distributed.scheduler.allowed-failures": 1}
        ),
    ):
        cluster = None
        try:
            if address is None:
                # The worker processes start with SIGINT ignored (they inherit it), so a
                # Ctrl-C reaches this process alone, which stops the cluster in order.
                previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
                try:
                    cluster = distributed.LocalCluster(
                        n_workers=workers,
                        threads_per_worker=1,
                        processes=True,
                        local_directory=scratch,
                        dashboard_address=None,
                        # No dashboard; the scheduler's HTTP server (health, metrics),
                        # which starts anyway, on a free port, not 8787: a second sweep
                        # or a Jupyter's Dask would have it ("Port 8787 is already in use").
                        scheduler_kwargs={"dashboard_address": ":0"},
                        silence_logs=logging.ERROR,
                    )
                finally:
                    signal.signal(signal.SIGINT, previous)
                client = distributed.Client(cluster)
            else:
                try:
                    client = distributed.Client(address, timeout=CONNECT_TIMEOUT_S)
                except (OSError, TimeoutError, ValueError) as err:
                    raise EngineError(
                        f"--address {address}: cannot reach a Dask scheduler: {err}"
                    ) from err
            try:
                count = max(1, len(client.nthreads()))
                chunks = make_chunks(count)
                futures = {client.submit(run_chunk, chunk, pure=False): chunk for chunk in chunks}
                finished = distributed.as_completed(list(futures))
                # A dying worker fails every task queued on it too: the runs of a task that
                # Dask gives up on are each run again alone, at the end, so that only the one
                # that kills its worker is recorded crashed.
                suspects: collections.deque[Chunk] = collections.deque()
                alone: set[int] = set()
                try:
                    for future in finished:
                        chunk = futures.pop(future)
                        try:
                            on_rows(future.result())
                        except distributed.KilledWorker:
                            if id(chunk) in alone:
                                on_rows([_crashed(chunk, chunk.jobs[0])])
                            else:
                                suspects.extend(
                                    attrs.evolve(chunk, jobs=(job,)) for job in chunk.jobs
                                )
                        if suspects and not futures:
                            single = suspects.popleft()
                            alone.add(id(single))
                            retry = client.submit(run_chunk, single, pure=False)
                            futures[retry] = single
                            finished.add(retry)
                finally:
                    client.cancel(list(futures))
            finally:
                client.close()
        finally:
            if cluster is not None:
                cluster.close()
