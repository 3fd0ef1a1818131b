"""The tracer alone: an execution's marks in a loop on one emulated thread, traced and not.

One kernel task writes, per pattern, what one execution of ``bench_stack.py``'s workload
writes through the tracer's per-execution calls (``section`` x10, five with ``work_ns``, two of
them raw marks; ``switch`` x4: 30 events), then sleeps 10 µs of virtual time.  Variants, alternated, best of ``--repeat`` by ``process_time``:

* ``off``     -- no sink (the tracer disabled: what the call sites cost untraced);
* ``null``    -- a batch sink that does nothing (the tracer's own bookkeeping);
* ``devnull`` -- the ftrace writer to ``/dev/null`` (formatting, join, the write call);
* ``file``    -- the ftrace writer to a temporary file (and the kernel's page-cache copy).

Prints µs a pattern for ``off`` and the extra of the others.  Much less noisy than the
emulator (``bench_trace_cost.py``), but it misses what tracing costs the code around it
(caches, the other threads' order checks): a gain here must still show there.

Usage: python bench/bench_trace_loop.py [--patterns N] [--repeat R]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_trace_cost import NullSink

VARIANTS = ("off", "null", "devnull", "file")


def one(variant: str, patterns: int, tmp: Path) -> float:
    """CPU seconds of ``patterns`` patterns with ``variant``'s sink."""
    from nnemu.sim import Kernel, ProcessTable
    from nnemu.tracer import Layer, Phase, Tracer, mark, open_trace_writer, raw_mark

    kernel = Kernel()
    sinks: list[Any] = []
    if variant == "null":
        sinks = [NullSink()]
    elif variant == "devnull":
        sinks = [open_trace_writer("/dev/null")]
    elif variant == "file":
        sinks = [open_trace_writer(tmp / "loop.txt")]
    tracer = Tracer(kernel, sinks)
    thread = ProcessTable().spawn("app", 10001).main_thread
    m0, m1, m2, m3, m4, m5, m6, m7 = (
        mark(Layer.RUNTIME, Phase.EXECUTION, f"m{i}") for i in range(8)
    )
    client = raw_mark("HIDL::IDevice::execute::client")
    server = raw_mark("HIDL::IDevice::execute::server")

    async def task() -> None:
        for _ in range(patterns):
            with tracer.section(m0):
                with tracer.section(m1, work_ns=1000):
                    pass
                with tracer.section(m2, work_ns=1000):
                    pass
                with tracer.section(m3, work_ns=500) as call:
                    call.switch(m4)
                    with (
                        tracer.section(client),
                        tracer.section(server),
                        tracer.section(m5) as driver,
                    ):
                        driver.switch(m6)
                        driver.switch(m7)
                        kernel.work(300)
                    call.switch(m5)
                with tracer.section(m1, work_ns=1000):
                    pass
                with tracer.section(m2, work_ns=1000):
                    pass
            with tracer.section(m4):
                kernel.work(100)
            await kernel.sleep(10_000)

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            kernel.spawn(nursery, task, thread=thread)
            await kernel.run()
            nursery.cancel_scope.cancel()

    start = time.process_time()
    trio.run(main)
    tracer.close()
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--patterns", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    from nnemu import _native

    best = dict.fromkeys(VARIANTS, float("inf"))
    with tempfile.TemporaryDirectory() as tmp:
        one("off", 100, Path(tmp))  # (first-use costs, untimed)
        for _ in range(args.repeat):
            for variant in VARIANTS:
                best[variant] = min(best[variant], one(variant, args.patterns, Path(tmp)))
    us = {variant: cpu / args.patterns * 1e6 for variant, cpu in best.items()}
    print(f"# {_native.describe()}")
    extra = "  ".join(f"{v} +{us[v] - us['off']:.3f}" for v in VARIANTS[1:])
    print(f"µs/pattern (30 events): off {us['off']:.3f}  {extra}")


if __name__ == "__main__":
    main()
