"""HIDL-over-binder transport: synchronous transactions, oneway calls, death.

A synchronous transaction is modelled the way binder runs it: the calling
thread blocks while one of the callee's binder threads serves the call.  The
calling trio task itself carries the call across (it *becomes* the binder
thread for the server side, via ``as_thread``), so a call costs no task switch
unless the callee's binder pool is exhausted and the call must queue.  The
HIDL proxy and stub write ``HIDL::<Iface>::<method>::client`` on the caller's
thread and ``...::server`` on the binder thread, as the generated code does.  An AIDL
interface is passed qualified (``AIDL::ndk::IDevice``, ``HalVersion.interface``) and its
marks are ``AIDL::ndk::<Iface>::<method>::client|server``, as the AIDL compiler's NDK
backend writes them.

A oneway call (a callback's ``notify``) does not block the caller: its server
side runs on a binder thread of the callee when the transaction arrives.
"""

from __future__ import annotations

import math
import random
from collections.abc import Awaitable, Callable
from typing import ClassVar, TypeVar, TypeVarTuple

import structlog

from nnemu.scenario import IpcSpec
from nnemu.sim import Kernel, SimProcess, ThreadPool, as_thread, enter_thread, leave_thread, us
from nnemu.sim._split import ExecutionSplit
from nnemu.tracer import Mark, Tracer, raw_mark

logger = structlog.get_logger(layer="ipc")

T = TypeVar("T")
Ts = TypeVarTuple("Ts")

ONEWAY_SERVER_NS = 20_000
"""How long a callback's server stub runs (latching the result and waking waiters)."""


class DeadObject:
    """The transport error a call to a dead process gets (``DEAD_OBJECT`` in the runtime)."""

    _instance: ClassVar[DeadObject | None] = None

    def __new__(cls) -> DeadObject:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "DEAD_OBJECT"


DEAD = DeadObject()
"""The one DeadObject value."""


class Endpoint:
    """A process as seen by the transport: its binder thread pool and whether it is alive."""

    def __init__(self, kernel: Kernel, process: SimProcess, binder_threads: int) -> None:
        self.process = process
        pid = process.pid
        threads = [process.new_thread(f"HwBinder:{pid}_{i + 1}") for i in range(binder_threads)]
        self.pool = ThreadPool(kernel, threads)
        self.alive = True
        self.death_listeners: list[Callable[[], None]] = []
        self.on_kill: Callable[[int], None] | None = None
        """Called with the number of death recipients as the process dies, before they are
        told (the demo's recorder notes it)."""

    def kill(self) -> None:
        """The process dies: later calls fail with DEAD_OBJECT and death recipients are told."""
        if not self.alive:
            return
        if self.on_kill is not None:
            self.on_kill(len(self.death_listeners))
        self.alive = False
        listeners, self.death_listeners = self.death_listeners, []
        for listener in listeners:
            listener()


class Binder:
    """The transport between emulated processes, with a seeded latency model."""

    def __init__(self, kernel: Kernel, tracer: Tracer, spec: IpcSpec, rng: random.Random) -> None:
        self.kernel = kernel
        self.tracer = tracer
        self.spec = spec
        self._rng = rng
        self._mean_ns = spec.latency_us * 1000.0
        self.transactions = 0
        # ``HIDL::<Iface>::<method>`` and its proxy's and stub's section marks, by
        # (iface, method): built once, not on every transaction.
        self._names: dict[tuple[str, str], tuple[str, Mark, Mark]] = {}
        # One-way latencies by payload size while there is no jitter (then no draw).
        self._fixed_latency: dict[int, int] | None = {} if spec.jitter <= 0 else None
        self.on_call: Callable[[str], None] | None = None
        """Called with ``HIDL::<Iface>::<method>`` as each transaction starts, on the caller's
        thread, before anything happens (manual stepping stops here)."""
        self.on_return: Callable[[str, str, object], None] | None = None
        """Called with (iface, method, answer) as each synchronous call returns to its caller,
        DEAD included (the demo's recorder notes what a call returned)."""

    def latency_ns(self, payload_bytes: int = 0) -> int:
        """One-way latency of a transaction carrying ``payload_bytes``, in whole µs."""
        fixed = self._fixed_latency
        if fixed is not None:
            latency = fixed.get(payload_bytes)
            if latency is None:
                latency = fixed[payload_bytes] = self._latency_ns(payload_bytes)
            return latency
        return self._latency_ns(payload_bytes)

    def _latency_ns(self, payload_bytes: int) -> int:
        base = self._mean_ns + self.spec.us_per_kb * 1000.0 * payload_bytes / 1024.0
        if self.spec.jitter > 0:
            sigma = self.spec.jitter
            # Log-normal with the given mean: mu = -sigma^2 / 2.
            base *= math.exp(self._rng.gauss(-sigma * sigma / 2.0, sigma))
        return us(base)

    def _start(self, iface: str, method: str) -> tuple[str, Mark, Mark]:
        """Count a transaction and tell ``on_call``; return its ``HIDL::<Iface>::<method>``
        and the section marks of its proxy (``...::client``) and stub (``...::server``)."""
        names = self._names.get((iface, method))
        if names is None:
            name = (
                f"{iface}::{method}" if iface.startswith("AIDL::") else f"HIDL::{iface}::{method}"
            )
            names = self._names[iface, method] = (
                name,
                raw_mark(name + "::client"),
                raw_mark(name + "::server"),
            )
        self.transactions += 1
        if self.on_call is not None:
            self.on_call(names[0])
        return names

    async def call(
        self,
        callee: Endpoint,
        iface: str,
        method: str,
        serve: Callable[[*Ts], Awaitable[T]],
        *args: *Ts,
        payload_bytes: int = 0,
        launches: object = None,
        reply_overlaps: Callable[[T], bool] | None = None,
    ) -> T | DeadObject:
        """A synchronous HIDL call: run ``serve(*args)`` on one of ``callee``'s binder threads.

        Returns what ``serve`` returns, or DEAD when the callee is (or dies) dead.
        ``launches`` is the flow key of the callback an asynchronous launch will notify
        (``oneway(..., completes=...)`` ends the flow).  ``reply_overlaps(answer)`` says
        whether the answer left work under way in the callee (a fenced execution's pending
        fence): its reply then travels while that work runs, off the execution's path.
        """
        kernel, tracer = self.kernel, self.tracer
        # (``_start`` and, without jitter, ``latency_ns``, inline: this is on every
        # execution's path, and each call saved counts, bench/README.md)
        names = self._names.get((iface, method))
        if names is None:
            names = self._start(iface, method)
        else:
            self.transactions += 1
            if self.on_call is not None:
                self.on_call(names[0])
        _, client, server = names
        fixed = self._fixed_latency
        flows = tracer.flows
        split = kernel.split
        with tracer.section(client):
            flow = tracer.flow_start() if flows else 0  # the arrow to the ::server slice
            if not callee.alive:
                return self._returned(iface, method, DEAD)
            request_ns = fixed.get(payload_bytes) if fixed is not None else None
            if request_ns is None:
                request_ns = self.latency_ns(payload_bytes)
            await kernel.sleep(request_ns)
            if not callee.alive:
                return self._returned(iface, method, DEAD)
            pool = callee.pool
            if split is not None:
                split.ipc_ns += request_ns
                waited_from = kernel.clock_ns
                thread = await pool.acquire()
                split.binder_ns += kernel.clock_ns - waited_from
            else:
                thread = await pool.acquire()
            try:
                token = enter_thread(thread)  # (``as_thread``, without its block object)
                try:
                    with tracer.section(server):
                        if flows:
                            tracer.flow_end(flow)
                            tracer.flow_out(launches)  # the arrow to the callback's notify
                        result = await serve(*args)
                finally:
                    leave_thread(token)
                await kernel.sync()
            finally:
                pool.release(thread)
            if not callee.alive:
                return self._returned(iface, method, DEAD)
            reply_ns = fixed.get(0) if fixed is not None else None
            if reply_ns is None:
                reply_ns = self.latency_ns()
            await kernel.sleep(reply_ns)
            if (
                split is not None
                and launches is None
                and (reply_overlaps is None or not reply_overlaps(result))
            ):
                # An asynchronous launch's reply travels while the driver already works:
                # the callback (or the fence), not the reply, is on the execution's path.
                split.ipc_ns += reply_ns
            if self.on_return is not None:
                self.on_return(iface, method, result)
            return result

    def _returned(self, iface: str, method: str, answer: DeadObject) -> DeadObject:
        """``answer``, told to ``on_return`` first (``call``'s early returns)."""
        if self.on_return is not None:
            self.on_return(iface, method, answer)
        return answer

    def oneway(
        self,
        callee: Endpoint,
        iface: str,
        method: str,
        deliver: Callable[[], None],
        *,
        payload_bytes: int = 0,
        completes: object = None,
        split: ExecutionSplit | None = None,
    ) -> bool:
        """A oneway HIDL call: ``deliver`` runs on a binder thread of ``callee`` when it arrives.

        Returns False (nothing is sent) if the callee is dead.  ``deliver`` must not wait.
        ``completes`` is the flow key (``Tracer.flow_out``) of the call a callback completes.
        ``split``: the execution a callback ends, whose IPC its delivery is (passed, not
        read from the context: kernel callbacks, which may send, run in whatever thread's
        context gave the baton up).
        """
        kernel, tracer = self.kernel, self.tracer
        _, client, server = self._start(iface, method)
        flows = tracer.flows
        with tracer.section(client):  # the proxy of a oneway call returns at once
            flow = 0
            if flows:
                flow = tracer.flow_start()
                tracer.flow_in(completes)  # the arrow from the call this notify completes
        if not callee.alive:
            return False
        latency = self.latency_ns(payload_bytes)
        arrive = kernel.task_now_ns() + latency
        if split is not None:
            split.ipc_ns += latency + ONEWAY_SERVER_NS
        thread = callee.pool.threads[0]

        def arrived() -> None:
            if not callee.alive:
                return
            # The server stub's section spans two kernel callbacks (it arrives, it is
            # served), so it is begun and ended by hand, as hidl-gen's stubs write
            # atrace_begin and atrace_end.
            with as_thread(thread):
                tracer.begin(server)
                if flows:
                    tracer.flow_end(flow)

            def served() -> None:
                with as_thread(thread):
                    if callee.alive:
                        deliver()
                    tracer.end()

            kernel.call_at(kernel.clock_ns + ONEWAY_SERVER_NS, served)

        kernel.call_at(arrive, arrived)
        return True
