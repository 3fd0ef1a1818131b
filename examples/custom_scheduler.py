"""A driver scheduling policy of your own: shortest job first.

Shows: subclassing ``nnemu.driver.Device`` and overriding ``pick_index(waiting)``, the one
method that decides which waiting execution gets the next free compute unit; plugging the
subclass into a run with ``run(scenario, device_types={"npu": ShortestJobFirst})``; and
comparing it with the driver's built-in FIFO on the same scenario and seed.

Each waiting ``Job`` carries its prepared model's ``plan`` (the nominal duration of every
operation on this device), its ``priority``, ``uid``, ``deadline_ns`` and its arrival order
``seq``. Shortest job first picks the smallest ``plan.total_ns``: a camera's short MobileNet
v1 frame overtakes the background indexer's longer MobileNet v2 executions queued before
it. Nothing else changes: the HAL allows a driver to order its queue as it likes.

Run it: ``python examples/custom_scheduler.py``.
"""

from __future__ import annotations

from nnemu import run
from nnemu.driver import Device, Job
from nnemu.scenario import load_scenario_text


class ShortestJobFirst(Device):
    """Give a free unit to the waiting execution with the least work left (oldest on ties)."""

    def pick_index(self, waiting: list[Job]) -> int:
        return min(range(len(waiting)), key=lambda i: (waiting[i].plan.total_ns, waiting[i].seq))


SCENARIO = """
name: sjf_vs_fifo
seed: 5
duration_ms: 3000
devices:
  - name: npu
    scheduler: fifo
    performance:
      float32: {exec_time: 0.3, power_usage: 0.3}
      quant8: {exec_time: 0.08, power_usage: 0.1}
models:
  - {name: camera_net, preset: mobilenet_v1, dtype: quant8}
  - {name: indexer_net, preset: mobilenet_v2, dtype: float32}
apps:
  - name: camera
    model: camera_net
    workload: {kind: periodic, period_ms: 33.3}
  - name: indexer
    model: indexer_net
    threads: 2
    workload: {kind: closed_loop}
"""

scenario = load_scenario_text(SCENARIO, source="sjf_vs_fifo.yaml")
fifo = run(scenario).data
sjf = run(scenario, device_types={"npu": ShortestJobFirst}).data

print(f"{'app':8} {'policy':6} {'completed':>9} {'p50 ms':>8} {'p99 ms':>8}")
for app in ("camera", "indexer"):
    for policy, data in (("fifo", fifo), ("sjf", sjf)):
        stats = data["apps"][app]
        latency = stats["latency_ms"]
        print(
            f"{app:8} {policy:6} {stats['completed']:9} {latency['p50']:8.3f} {latency['p99']:8.3f}"
        )

camera_gain = (
    fifo["apps"]["camera"]["latency_ms"]["p99"] - sjf["apps"]["camera"]["latency_ms"]["p99"]
)
print(f"camera p99: {camera_gain:.3f} ms lower with shortest job first")
assert camera_gain > 0
# The device did the same kind of work either way; only the order changed.
assert sjf["devices"]["npu"]["preemptions"] == fifo["devices"]["npu"]["preemptions"] == 0
