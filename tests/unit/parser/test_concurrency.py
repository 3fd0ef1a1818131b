"""The Application's Total self time when an app runs NNAPI work on several threads at once."""

from __future__ import annotations

import pytest

from nnemu.tracer import Layer, Phase
from tests.unit.parser.helpers import only_run, parse_rows

MS = 1_000_000


def _app_total_self_ms(run) -> float:
    return run.self_times[Phase.OVERALL][Layer.APPLICATION]


def test_sequential_app_subtracts_the_runtime_total():
    """One thread at a time: the Application's Total self time is its span minus the
    runtime's Total, as Android computes it."""
    rows = [
        (0, 10, 10, "[NN_LA_PO]app"),
        (1, 10, 10, "[NN_LR_PC]ANeuralNetworksCompilation_finish"),
        (3, 10, 10, "E"),
        (4, 10, 10, "[NN_LR_PE]ANeuralNetworksExecution_compute"),
        (9, 10, 10, "E"),
        (12, 10, 10, "E"),
    ]
    run = only_run(rows)
    assert run.runtime_overlap_ns == 0
    assert run.application_total_self_ns() == (12 - 2 - 5) * MS
    assert _app_total_self_ms(run) == pytest.approx(5.0)


def test_overlapping_executions_subtract_runtime_wall_clock_once():
    """Two threads computing at once: their overlap is subtracted from the app once,
    while the runtime's execution column still sums both threads."""
    rows = [
        (0, 10, 10, "[NN_LA_PO]app"),
        (1, 10, 10, "[NN_LR_PE]ANeuralNetworksExecution_compute"),
        (2, 11, 10, "[NN_LR_PE]ANeuralNetworksExecution_compute"),
        (7, 10, 10, "E"),
        (8, 11, 10, "E"),
        (10, 10, 10, "E"),
    ]
    run = only_run(rows)
    # Runtime intervals [1, 7] and [2, 8]: 12 ms summed, 7 ms of wall-clock.
    assert run.totals_ns(Layer.RUNTIME, Phase.EXECUTION) == 12 * MS
    assert run.runtime_overlap_ns == 5 * MS
    assert run.application_total_self_ns() == (10 - 7) * MS
    assert _app_total_self_ms(run) == pytest.approx(3.0)


def test_two_executions_in_flight_on_one_thread():
    """Two startCompute..Event_wait windows of one thread that overlap count their
    shared wall-clock once for the app."""
    rows = [
        (0, 10, 10, "[NN_LA_PO]app"),
        (1, 10, 10, "[NN_LR_PE]ANeuralNetworksExecution_startCompute"),
        (2, 10, 10, "E"),
        (2, 10, 10, "[NN_LR_PE]ANeuralNetworksExecution_startCompute"),
        (3, 10, 10, "E"),
        (6, 10, 10, "[NN_LR_PE]ANeuralNetworksEvent_wait"),
        (7, 10, 10, "E"),
        (7, 10, 10, "[NN_LR_PE]ANeuralNetworksEvent_wait"),
        (8, 10, 10, "E"),
        (11, 10, 10, "E"),
    ]
    run = only_run(rows)
    # Sections 1+1+1+1 and gaps [2, 6] and [3, 7]: 12 ms summed over [1, 8].
    assert run.totals_ns(Layer.RUNTIME, Phase.EXECUTION) == 12 * MS
    assert run.application_total_self_ns() == (11 - 7) * MS


def test_callee_moved_out_of_a_concurrent_runtime_section():
    """Time the contract moves out of a runtime section (getCapabilities inside
    Compilation_create) is not runtime time, concurrently as sequentially."""
    rows = [
        (0, 10, 10, "[NN_LA_PO]app"),
        (0, 10, 10, "[NN_LR_PC]ANeuralNetworksCompilation_create"),
        (2, 10, 10, "[NN_LI_PI]getCapabilities"),
        (4, 11, 10, "[NN_LR_PE]ANeuralNetworksExecution_compute"),
        (6, 10, 10, "E"),
        (8, 11, 10, "E"),
        (10, 10, 10, "E"),
        (12, 10, 10, "E"),
    ]
    run = only_run(rows)
    # Runtime counted on thread 10: [0, 2] and [6, 10]; on thread 11: [4, 8].
    assert run.totals_ns(Layer.RUNTIME, Phase.OVERALL) == (6 + 4) * MS
    assert run.runtime_overlap_ns == 2 * MS
    assert run.application_total_self_ns() == (12 - 8) * MS


def test_covered_worker_section_is_not_runtime_time_twice():
    """A worker's runtime section inside another thread's startCompute..Event_wait
    window adds nothing: the window already counts that wall-clock time."""
    rows = [
        (0, 10, 10, "[NN_LA_PO]app"),
        (1, 10, 10, "[NN_LR_PE]ANeuralNetworksExecution_startCompute"),
        (2, 10, 10, "E"),
        (3, 11, 10, "[NN_LR_PE]StepExecutor::compute"),
        (5, 11, 10, "E"),
        (6, 10, 10, "[NN_LR_PE]ANeuralNetworksEvent_wait"),
        (7, 10, 10, "E"),
        (9, 10, 10, "E"),
    ]
    run = only_run(rows)
    assert run.totals_ns(Layer.RUNTIME, Phase.EXECUTION) == 6 * MS
    assert run.runtime_overlap_ns == 0
    assert run.application_total_self_ns() == (9 - 6) * MS


def test_app_whose_time_is_all_runtime_time_prints_zero():
    """An app span filled with runtime work gets exactly 0 (printed "-"), not -0.00."""
    rows = [
        (0, 10, 10, "[NN_LA_PO]app"),
        (0, 10, 10, "[NN_LR_PC]ANeuralNetworksCompilation_finish"),
        (0.1, 10, 10, "E"),
        (0.1, 10, 10, "[NN_LR_PE]ANeuralNetworksExecution_compute"),
        (0.3, 10, 10, "E"),
        (0.3, 10, 10, "E"),
    ]
    run = only_run(rows)
    assert 0.1 + 0.2 != 0.3  # the float sum of the runtime's phases is not exact
    assert _app_total_self_ms(run) == 0.0


def test_runtime_work_still_open_when_the_next_run_starts():
    """Runtime work a run boundary cuts off (dropped, reported) leaves the run's
    last stretch with no overlap assumed; the next run starts from nothing."""
    make_rows = [
        (0, 10, 10, "[NN_LA_PO]first"),
        (1, 11, 10, "[NN_LR_PE]ANeuralNetworksExecution_compute"),
        (2, 10, 10, "[NN_LR_PE]ANeuralNetworksExecution_compute"),
        (4, 10, 10, "E"),
        (5, 10, 10, "E"),
        (6, 10, 10, "[NN_LA_PO]second"),
        (7, 10, 10, "[NN_LR_PE]ANeuralNetworksExecution_compute"),
        (8, 10, 10, "E"),
        (9, 10, 10, "E"),
    ]
    result = parse_rows(make_rows)
    first, second = result.runs
    # First run: [2, 4] counted, [1, 6] open on thread 11 (dropped, reported).
    assert first.totals_ns(Layer.RUNTIME, Phase.EXECUTION) == 2 * MS
    assert first.runtime_overlap_ns == 0
    assert first.application_total_self_ns() == (5 - 2) * MS
    assert second.runtime_overlap_ns == 0
    assert second.application_total_self_ns() == (3 - 1) * MS
    assert any("still open" in d.message for d in result.diagnostics)
