"""The binder transport: call cost, trace marks, death, oneway delivery, pool exhaustion."""

from __future__ import annotations

import random

import pytest
import trio

from nnemu.ipc import DEAD, ONEWAY_SERVER_NS, Binder, Endpoint
from nnemu.scenario import IpcSpec
from nnemu.sim import Kernel, ProcessTable, SimThread, current_thread
from nnemu.tracer import Tracer

US = 1_000
LATENCY_US = 50


class RecordingSink:
    """A trace sink that keeps every event."""

    def __init__(self) -> None:
        self.events: list[tuple] = []
        self.processes: dict[int, str] = {}
        self.closed = False

    def process(self, pid: int, name: str) -> None:
        self.processes[pid] = name

    def begin(self, ts_ns: int, thread: SimThread, name: str) -> None:
        self.events.append(("B", ts_ns, thread, name))

    def end(self, ts_ns: int, thread: SimThread) -> None:
        self.events.append(("E", ts_ns, thread))

    def close(self) -> None:
        self.closed = True


class World:
    """A kernel, a tracer, a binder, a client process and a server process."""

    def __init__(self, *, binder_threads: int = 2, latency_us: float = LATENCY_US) -> None:
        self.kernel = Kernel()
        self.sink = RecordingSink()
        self.tracer = Tracer(self.kernel, [self.sink])
        spec = IpcSpec(latency_us=latency_us, binder_threads=binder_threads)
        self.binder = Binder(self.kernel, self.tracer, spec, random.Random(0))
        table = ProcessTable()
        self.client_proc = table.spawn("client", 10001)
        self.server_proc = table.spawn("server", 1000)
        self.client = Endpoint(self.kernel, self.client_proc, binder_threads)
        self.server = Endpoint(self.kernel, self.server_proc, binder_threads)

    async def run(self, *tasks) -> None:
        async with trio.open_nursery() as nursery:
            for thread, fn in tasks:
                self.kernel.spawn(nursery, fn, thread=thread)
            await self.kernel.run()
            nursery.cancel_scope.cancel()
        self.tracer.close()


async def test_call_costs_two_latencies_plus_server_time(autojump_clock):
    """A synchronous call returns after exactly twice the latency + the server's own time."""
    world = World()
    kernel = world.kernel
    results: list[tuple[object, int]] = []

    async def serve():
        kernel.work(30 * US)
        await kernel.sleep(100 * US)
        return "answer"

    async def client():
        start = kernel.task_now_ns()
        result = await world.binder.call(world.server, "IDevice", "getStatus", serve)
        results.append((result, kernel.task_now_ns() - start))

    await world.run((world.client_proc.main_thread, client))
    assert results == [("answer", (2 * LATENCY_US + 130) * US)]
    assert world.binder.transactions == 1


async def test_call_marks_client_and_server_on_their_threads(autojump_clock):
    """The ::client mark spans the call on the caller; ::server spans serve on a binder thread."""
    world = World()
    kernel = world.kernel
    served_on: list[SimThread] = []

    async def serve():
        served_on.append(current_thread())
        await kernel.sleep(100 * US)
        return None

    caller = world.client_proc.main_thread

    async def client():
        await world.binder.call(world.server, "IDevice", "getStatus", serve)
        assert current_thread() == caller  # the caller's identity is restored

    await world.run((caller, client))
    binder_thread = world.server.pool.threads[0]
    assert served_on == [binder_thread]
    assert binder_thread.pid == world.server_proc.pid
    assert binder_thread.name == f"HwBinder:{world.server_proc.pid}_1"
    assert world.sink.events == [
        ("B", 0, caller, "HIDL::IDevice::getStatus::client"),
        ("B", LATENCY_US * US, binder_thread, "HIDL::IDevice::getStatus::server"),
        ("E", (LATENCY_US + 100) * US, binder_thread),
        ("E", (2 * LATENCY_US + 100) * US, caller),
    ]


async def test_call_to_dead_endpoint_returns_dead(autojump_clock):
    """A call to a killed process returns DEAD at once without running the server."""
    world = World()
    kernel = world.kernel
    results: list[tuple[object, int]] = []
    served: list[bool] = []

    async def serve():
        served.append(True)

    async def client():
        world.server.kill()
        result = await world.binder.call(world.server, "IDevice", "getStatus", serve)
        results.append((result, kernel.task_now_ns()))

    await world.run((world.client_proc.main_thread, client))
    assert results == [(DEAD, 0)]
    assert served == []
    assert not world.server.alive


async def test_callee_dying_during_call_returns_dead_and_tells_listeners(autojump_clock):
    """A callee that dies while serving makes the call return DEAD; death listeners run once."""
    world = World()
    kernel = world.kernel
    results: list[tuple[object, int]] = []
    deaths: list[int] = []
    world.server.death_listeners.append(lambda: deaths.append(kernel.clock_ns))

    async def serve():
        await kernel.sleep(100 * US)
        return "too late"

    async def client():
        result = await world.binder.call(world.server, "IDevice", "getStatus", serve)
        results.append((result, kernel.task_now_ns()))

    async def killer():
        await kernel.sleep(80 * US)
        world.server.kill()
        world.server.kill()  # a second kill is a no-op

    await world.run(
        (world.client_proc.main_thread, client), (world.server_proc.main_thread, killer)
    )
    assert results == [(DEAD, (LATENCY_US + 100) * US)]
    assert deaths == [80 * US]


async def test_oneway_delivers_after_latency_on_callee_binder_thread(autojump_clock):
    """A oneway call returns at once and delivers after the latency plus the stub's time."""
    world = World()
    kernel = world.kernel
    delivered: list[tuple[int, SimThread]] = []
    sent: list[tuple[bool, int]] = []

    async def server_task():
        ok = world.binder.oneway(
            world.client,
            "IPreparedModelCallback",
            "notify_1_3",
            lambda: delivered.append((kernel.clock_ns, current_thread())),
        )
        sent.append((ok, kernel.task_now_ns()))

    caller = world.server_proc.main_thread
    await world.run((caller, server_task))
    callback_thread = world.client.pool.threads[0]
    arrive = LATENCY_US * US
    assert sent == [(True, 0)]
    assert delivered == [(arrive + ONEWAY_SERVER_NS, callback_thread)]
    name = "HIDL::IPreparedModelCallback::notify_1_3"
    assert world.sink.events == [
        ("B", 0, caller, name + "::client"),
        ("E", 0, caller),
        ("B", arrive, callback_thread, name + "::server"),
        ("E", arrive + ONEWAY_SERVER_NS, callback_thread),
    ]


async def test_oneway_to_dead_endpoint_is_not_sent(autojump_clock):
    """A oneway call to a dead process returns False and delivers nothing."""
    world = World()
    delivered: list[bool] = []
    sent: list[bool] = []

    async def server_task():
        world.client.kill()
        sent.append(
            world.binder.oneway(world.client, "I", "notify", lambda: delivered.append(True))
        )

    await world.run((world.server_proc.main_thread, server_task))
    assert sent == [False]
    assert delivered == []


async def test_oneway_not_delivered_if_callee_dies_in_flight(autojump_clock):
    """A oneway call whose callee dies before it arrives is dropped."""
    world = World()
    kernel = world.kernel
    delivered: list[bool] = []

    async def server_task():
        assert world.binder.oneway(world.client, "I", "notify", lambda: delivered.append(True))
        await kernel.sleep(10 * US)
        world.client.kill()

    await world.run((world.server_proc.main_thread, server_task))
    assert delivered == []


async def test_exhausted_binder_pool_queues_the_call(autojump_clock):
    """With every binder thread busy, a call waits for one and pays the wait in its duration."""
    world = World(binder_threads=1)
    kernel = world.kernel
    done: dict[str, tuple[int, SimThread]] = {}

    def client(name: str):
        async def fn():
            served_on: list[SimThread] = []

            async def serve():
                served_on.append(current_thread())
                await kernel.sleep(200 * US)

            await world.binder.call(world.server, "IDevice", "prepareModel", serve)
            done[name] = (kernel.task_now_ns(), served_on[0])

        return fn

    second = world.client_proc.new_thread("second")
    await world.run((world.client_proc.main_thread, client("first")), (second, client("second")))
    only = world.server.pool.threads[0]
    # first: 50 latency + 200 serve + 50 back; second arrives at 50, waits until 250.
    assert done == {
        "first": ((2 * LATENCY_US + 200) * US, only),
        "second": ((LATENCY_US + 200 + 200 + LATENCY_US) * US, only),
    }
    assert world.server.pool.peak_in_use == 1


def test_latency_is_whole_microseconds_and_seeded():
    """Jittered latencies are whole µs, vary per call and repeat with the same seed."""

    def sample(seed: int) -> list[int]:
        kernel = Kernel()
        spec = IpcSpec(latency_us=50, jitter=0.3)
        binder = Binder(kernel, Tracer(kernel), spec, random.Random(seed))
        return [binder.latency_ns() for _ in range(20)]

    first = sample(1)
    assert first == sample(1)
    assert first != sample(2)
    assert all(ns % 1000 == 0 for ns in first)
    assert len(set(first)) > 1


@pytest.mark.parametrize(
    ("us_per_kb", "payload", "expected_ns"), [(0, 4096, 50_000), (2, 4096, 58_000)]
)
def test_latency_grows_with_payload(us_per_kb, payload, expected_ns):
    """Without jitter a transaction costs latency_us + us_per_kb per KiB of payload."""
    kernel = Kernel()
    spec = IpcSpec(latency_us=50, us_per_kb=us_per_kb)
    binder = Binder(kernel, Tracer(kernel), spec, random.Random(0))
    assert binder.latency_ns(payload) == expected_ns
