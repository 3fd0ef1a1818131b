"""The device's load counters (``executions waiting``, ``compute units busy``): what the driver
hands the tracer."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from nnemu import run
from nnemu.scenario import load_scenario
from nnemu.tracer import Tracer, open_trace_writer

ROOT = Path(__file__).resolve().parents[3]
LOAD = {"executions waiting", "compute units busy"}


def test_device_passes_the_tracer_only_changed_load_counters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Each load counter reaches ``Tracer.counter`` only when its value changed: the tracer
    writes nothing for an unchanged one, and a call costs ~2k instructions (bench/README.md,
    bench_trace_write), so the trace is the same with half the calls."""
    calls: list[tuple[int, str, int]] = []
    counter = Tracer.counter

    def spy(self: Tracer, pid: int, name: str, value: int) -> None:
        if name in LOAD:
            calls.append((pid, name, value))
        counter(self, pid, name, value)

    monkeypatch.setattr(Tracer, "counter", spy)
    scenario = attrs.evolve(
        load_scenario(ROOT / "scenarios/two_apps_one_npu.yaml"), duration_ms=2000
    )
    run(scenario, sinks=[open_trace_writer(tmp_path / "t.json")])
    last: dict[tuple[int, str], int] = {}
    for pid, name, value in calls:
        assert last.get((pid, name)) != value, (pid, name, value)
        last[pid, name] = value
    assert {name for _, name in last} == LOAD
    assert sum(name == "executions waiting" for _, name, _ in calls) > 10
