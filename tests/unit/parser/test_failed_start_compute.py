"""A startCompute* that fails returns no event, so no ``Event_wait`` follows it: its window
ends with the app's ``[NN_LA_PE]`` (docs/parser.md D-NOWAIT).

AOSP ``runtime/NeuralNetworks.cpp`` ``ANeuralNetworksExecution_startComputeWithDependencies``
sets ``*event = nullptr`` when ``computeFenced`` fails; its NNTRACE_RT section is all the
trace shows of it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nnemu.parser import parse_file
from nnemu.scenario import load_scenario_text
from nnemu.tracer import GroundTruth, Layer, Phase
from nnemu.verify import compare, run_with_truth
from tests.unit.parser.helpers import only_run

MS = 1_000_000
_START = "[NN_LR_PE]ANeuralNetworksExecution_startComputeWithDependencies"
_WAIT = "[NN_LR_PE]ANeuralNetworksEvent_wait"
_SCENARIO = Path(__file__).parents[3] / "scenarios" / "fenced_pipeline.yaml"


@pytest.mark.parametrize("tid", [10, 11], ids=["app thread", "stage thread"])
def test_a_start_compute_with_no_event_wait_ends_with_the_app_execution(tid: int) -> None:
    """Frame 1's startCompute (1..2 ms) fails: its window ends with the frame's [NN_LA_PE]
    at 3 ms, not at frame 2's Event_wait on the same thread (main counted 1..11 ms)."""
    rows = [
        (0, 10, 10, "[NN_LA_PO]app"),
        (1, 10, 10, "[NN_LA_PE]execute"),
        (1, tid, 10, _START),
        (2, tid, 10, "E"),
        (3, 10, 10, "E"),
        (10, 10, 10, "[NN_LA_PE]execute"),
        (10, tid, 10, _START),
        (11, tid, 10, "E"),
        (11, tid, 10, _WAIT),
        (14, tid, 10, "E"),
        (15, 10, 10, "E"),
        (20, 10, 10, "E"),
    ]
    run = only_run(rows)
    # Two startComputes (1 ms each), the failed one's window (1 ms), the Event_wait (3 ms).
    assert run.totals_ns(Layer.RUNTIME, Phase.EXECUTION) == 6 * MS
    assert run.self_times[Phase.EXECUTION][Layer.APPLICATION] == pytest.approx(7 - 6)
    # [NN_LA_PO] 20 ms less the runtime's 1..3 and 10..14 ms.
    assert run.self_times[Phase.OVERALL][Layer.APPLICATION] == pytest.approx(20 - 6)


def test_a_pipeline_whose_driver_works_inside_executeFenced_verifies(tmp_path: Path) -> None:
    """fenced_pipeline with ``sync_fences: false``: the failed stages' startComputes return
    no event; the parse agrees with the ground truth and no Application cell is negative
    (main: Application Total -2756.32 ms, verify FAILED)."""
    text = _SCENARIO.read_text().replace("sync_fences: true", "sync_fences: false")
    assert "sync_fences: false" in text
    trace = tmp_path / "pipeline.html"
    truth = GroundTruth()
    run_with_truth(load_scenario_text(text, source="s.yaml"), truth, trace=str(trace))
    result = parse_file(trace)
    assert result.diagnostics == ()
    (run,) = result.runs
    for phase, row in run.self_times.items():
        assert not row[Layer.APPLICATION] < 0, (phase, row[Layer.APPLICATION])
    assert compare(result, truth.runs).passed
