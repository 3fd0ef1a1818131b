"""The device's load counters (``executions waiting``, ``compute units busy``): what the driver
hands the tracer."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest

from nnemu import _native, run
from nnemu.scenario import load_scenario
from nnemu.tracer import Tracer, open_trace_writer

ROOT = Path(__file__).resolve().parents[3]
LOAD = {"executions waiting", "compute units busy"}


@pytest.mark.skipif(
    _native.extension_of("nnemu.tracer._tracer") is not None,
    reason="a compiled tracer's methods cannot be patched (the source's run under pip install -e .)",
)
def test_device_writes_its_load_counters_through_its_own_tracks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The device asks the tracer for each load counter's track once and writes its values
    there, never through ``Tracer.counter`` (a lookup by name and pid per value, ~2k
    instructions a call: bench/README.md, bench_trace_write); the trace still has every
    change of both counters, and only changes."""
    asked: list[tuple[int, str]] = []
    by_name: list[str] = []
    counter_track, counter = Tracer.counter_track, Tracer.counter

    def track_spy(self: Tracer, pid: int, name: str):
        asked.append((pid, name))
        return counter_track(self, pid, name)

    def counter_spy(self: Tracer, pid: int, name: str, value: int) -> None:
        by_name.append(name)
        counter(self, pid, name, value)

    monkeypatch.setattr(Tracer, "counter_track", track_spy)
    monkeypatch.setattr(Tracer, "counter", counter_spy)
    scenario = attrs.evolve(
        load_scenario(ROOT / "scenarios/two_apps_one_npu.yaml"), duration_ms=2000
    )
    run(scenario, sinks=[open_trace_writer(tmp_path / "t.json")])
    assert not LOAD & set(by_name)
    load_asked = [key for key in asked if key[1] in LOAD]
    assert sorted(load_asked) == sorted(set(load_asked))
    assert {name for _, name in load_asked} == LOAD
    events = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    last: dict[tuple[int, str], int] = {}
    for event in events:
        if event["ph"] == "C" and event["name"] in LOAD:
            key, value = (event["pid"], event["name"]), event["args"]["value"]
            assert last.get(key) != value, (key, value)
            last[key] = value
    assert {name for _, name in last} == LOAD
    assert sum(e["ph"] == "C" and e["name"] == "executions waiting" for e in events) > 10
