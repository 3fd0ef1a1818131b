"""Helpers for the tracer tests: a recording sink and small scenarios."""

from __future__ import annotations

import attrs

from nnemu import run
from nnemu.scenario import load_scenario_text
from nnemu.sim import SimThread


@attrs.define
class Mark:
    """One begin mark with the stack it opened on."""

    ts_ns: int
    thread: SimThread
    name: str
    stack: tuple[str, ...]
    """Names open on the thread before this one (outermost first)."""


@attrs.define
class RecordingSink:
    """A TraceSink that keeps every begin mark with its thread's open stack."""

    marks: list[Mark] = attrs.field(factory=list)
    stacks: dict[SimThread, list[str]] = attrs.field(factory=dict)
    processes: dict[int, str] = attrs.field(factory=dict)
    closed: bool = False

    def process(self, pid: int, name: str) -> None:
        self.processes[pid] = name

    def begin(self, ts_ns: int, thread: SimThread, name: str) -> None:
        stack = self.stacks.setdefault(thread, [])
        self.marks.append(Mark(ts_ns, thread, name, tuple(stack)))
        stack.append(name)

    def end(self, ts_ns: int, thread: SimThread) -> None:
        self.stacks[thread].pop()

    def close(self) -> None:
        self.closed = True

    def first(self, name: str) -> Mark:
        """The first mark called ``name``."""
        return next(m for m in self.marks if m.name == name)

    def names(self) -> list[str]:
        """Every mark name in order."""
        return [m.name for m in self.marks]


SCENARIO = """\
name: {name}
seed: 1
devices:
  - name: npu
    hal_version: "{hal}"
    type: accelerator
    performance:
      float32: {{exec_time: 0.3, power_usage: 0.4}}
      quant8: {{exec_time: 0.1, power_usage: 0.2}}
{extra_device}
models:
  - name: m
    preset: {preset}
    dtype: float32
apps:
  - name: app
    uid: 10050
    model: m
    execution_mode: {mode}
    workload: {{kind: closed_loop, executions: {executions}}}
"""


def scenario_text(
    *,
    name: str = "t",
    hal: str = "1.3",
    mode: str = "sync",
    executions: int = 2,
    preset: str = "mobilenet_v1",
    extra_device: str = "",
) -> str:
    """A one-device, one-app scenario."""
    return SCENARIO.format(
        name=name,
        hal=hal,
        mode=mode,
        executions=executions,
        preset=preset,
        extra_device=extra_device,
    )


def record(text: str) -> RecordingSink:
    """Run the scenario text with a recording sink."""
    sink = RecordingSink()
    run(load_scenario_text(text), sinks=[sink])
    return sink


class FlowRecorder:
    """A flow sink that keeps the flows and counter values it is told (one call per event)."""

    def __init__(self) -> None:
        self.flows: list[tuple[int, int, bool]] = []
        """(tid, flow id, terminating) of each flow event."""
        self.counters: list[tuple[int, int, str, int]] = []
        """(ts_ns, pid, name, value) of each counter event."""

    def process(self, pid: int, name: str) -> None:
        pass

    def begin(self, ts_ns: int, thread: SimThread, name: str) -> None:
        pass

    def end(self, ts_ns: int, thread: SimThread) -> None:
        pass

    def flow(self, ts_ns: int, thread: SimThread, flow_id: int, terminating: bool) -> None:
        self.flows.append((thread.tid, flow_id, terminating))

    def counter(self, ts_ns: int, pid: int, name: str, value: int) -> None:
        self.counters.append((ts_ns, pid, name, value))

    def close(self) -> None:
        pass
