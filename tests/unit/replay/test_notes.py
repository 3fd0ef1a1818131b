"""The replay's notes on what it derived say what the numbers are, and their sums add up."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from nnemu.replay import build_replay, extract_plan
from nnemu.replay._build import describe_build
from tests.unit.replay.helpers import REPO, record

_EXEC_TIME = re.compile(
    r"exec_time: \S+ \(median device time of \d+ .*? ([\d.]+) ms"
    r"(?P<rest>(?: = |, less than ).*?([\d.]+) ms \+ launch ([\d.]+) us"
    r"(?: \+ validation (?P<validation>[\d.]+) us)?)\)"
)


@pytest.mark.parametrize("name", ["two_apps_one_npu", "burst_low_latency"])
def test_an_exec_time_note_is_an_equation_only_when_it_holds(name: str, tmp_path: Path) -> None:
    """Each device speed note says median = model + launch (+ the request's validation, for
    a one-layer stand-in model) only when that sum is the median, within 2 µs;
    burst_low_latency's hotword apps' medians (15 µs and less) are below any mobilenet, so
    their model is the one-layer stand-in."""
    path = tmp_path / "t.html"
    record(REPO / "scenarios" / f"{name}.yaml", path)
    lines = describe_build(build_replay(extract_plan(str(path))))
    notes = [m for line in lines if (m := _EXEC_TIME.search(line))]
    assert notes
    for note in notes:
        median, model, launch_us = float(note[1]), float(note[3]), float(note[4])
        validation_us = float(note["validation"] or 0)
        if " = " in note["rest"]:
            assert median == pytest.approx(model + (launch_us + validation_us) / 1000, abs=0.002)
        else:
            assert model + launch_us / 1000 > median
    small = [note for note in notes if "one SOFTMAX layer" in note["rest"]]
    assert bool(small) == (name == "burst_low_latency")


def test_a_partitioned_models_calls_give_no_jitter(tmp_path: Path) -> None:
    """partial_driver_fallback calls conv-dsp twice per execution (two partitions, 0.043 and
    5.842 ms, no jitter): the replay derives no jitter from them and says why."""
    path = tmp_path / "t.html"
    record(REPO / "scenarios/partial_driver_fallback.yaml", path)
    built = build_replay(extract_plan(str(path)))
    (device,) = (d for d in built.scenario.devices if d.name == "conv-dsp")
    assert device.cost.jitter == 0
    lines = describe_build(built)
    assert any(
        "conv-dsp.cost.jitter: none (gallery made 40 calls to it for 20 executions" in line
        for line in lines
    )
    assert not any("no jitter, " in line for line in lines)


_WIDTH = re.compile(
    r"params\.width: \S+ \(median device time of .*? ([\d.]+) ms (?P<op>[=~]) .*? width \S+ "
    r"([\d.]+) ms \+ launch ([\d.]+) us(?:, (?P<miss>[+-][\d.]+)%: the nearest a width gives)?\)"
)


def test_a_fitted_width_note_is_an_equation_only_when_it_holds(tmp_path: Path) -> None:
    """A fitted model's note says median = model + launch only within 2 µs; the camera of two_apps_one_npu, whose nearest width computes 31 µs over its median (the compute moves in steps of whole channels), gets '~' and its miss in %."""
    path = tmp_path / "t.html"
    record(REPO / "scenarios/two_apps_one_npu.yaml", path)
    lines = describe_build(build_replay(extract_plan(str(path))))
    notes = [m for line in lines if (m := _WIDTH.search(line))]
    assert notes
    for note in notes:
        median, model, launch_us = float(note[1]), float(note[3]), float(note[4])
        miss = model + launch_us / 1000 - median
        if note["op"] == "=":
            assert miss == pytest.approx(0, abs=0.002)
        else:
            assert abs(miss) > 0.002
            assert float(note["miss"]) == pytest.approx(100 * miss / median, abs=0.06)
    assert any(note["op"] == "~" for note in notes)
