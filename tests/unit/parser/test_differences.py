"""One test per documented difference from Android's parser (docs/parser.md, D1..D11)."""

from __future__ import annotations

import json
import math

from nnemu.parser import format_json, format_text
from nnemu.tracer import Layer, Phase
from tests.unit.parser.helpers import only_run, parse_rows

MS = 1_000_000


def _execution(t, tid=11, tgid=10):
    """An LA_PE holding one synchronous runtime execution: 2 ms of runtime PE."""
    return [
        (t, tid, tgid, "[NN_LA_PE]run"),
        (t + 1, tid, tgid, "[NN_LR_PE]ANeuralNetworksExecution_create"),
        (t + 2, tid, tgid, "E"),
        (t + 2, tid, tgid, "[NN_LR_PE]ANeuralNetworksExecution_compute"),
        (t + 3, tid, tgid, "E"),
        (t + 4, tid, tgid, "E"),
    ]


def test_d1_warmup_phase_ends_with_its_section():
    """D1: after [NN_LA_PWU] ends, later executions count as benchmark/overall again."""
    rows = [
        (0, 11, 10, "[NN_LA_PO]m"),
        (1, 11, 10, "[NN_LA_PWU]warmup"),
        *_execution(2),
        (7, 11, 10, "E"),
        (8, 11, 10, "[NN_LA_PBM]benchmark"),
        *_execution(9),
        *_execution(14),
        (19, 11, 10, "E"),
        *_execution(20),
        (30, 11, 10, "E"),
    ]
    run = only_run(rows)
    assert dict(run.execution_counts) == {Phase.OVERALL: 1, Phase.WARMUP: 1, Phase.BENCHMARK: 2}
    assert run.app_phase_times[Phase.BENCHMARK][Phase.EXECUTION][Layer.RUNTIME] == 4.0
    assert run.times[Phase.EXECUTION][Layer.RUNTIME] == 8.0


def test_d2_only_warmup_does_not_drop_time():
    """D2: warmup executions without a benchmark phase are kept, and nothing crashes."""
    rows = [(0, 11, 10, "[NN_LA_PWU]warmup"), *_execution(1), (6, 11, 10, "E")]
    run = only_run(rows)
    assert run.execution_counts[Phase.WARMUP] == 1
    assert run.has_warmup_and_benchmark
    assert run.times[Phase.EXECUTION][Layer.RUNTIME] == 2.0
    assert "Benchmark" in format_text(parse_rows(rows), per_execution=True)


def test_d3_subtract_under_same_layer_counted_once():
    """D3: [SUB] runtime time inside LR > LI is not added to the runtime a second time."""
    rows = [
        (0, 11, 10, "[NN_LR_PC]ANeuralNetworksCompilation_finish"),
        (1, 11, 10, "[NN_LI_PC]prepareModel"),
        (2, 11, 10, "[SUB][NN_LR_PC]VersionedIDevice::prepareModel"),
        (4, 11, 10, "E"),
        (8, 11, 10, "E"),
        (10, 11, 10, "E"),
    ]
    run = only_run(rows)
    assert run.totals_ns(Layer.RUNTIME, Phase.COMPILATION) == 10 * MS
    assert run.totals_ns(Layer.IPC, Phase.COMPILATION) == (7 - 2) * MS


def test_d4_synchronous_compute_is_runtime_execution():
    """D4: ANeuralNetworksExecution_compute counts as runtime execution (self time >= 0)."""
    rows = [
        (0, 11, 10, "[NN_LR_PE]ANeuralNetworksExecution_compute"),
        (1, 11, 10, "HIDL::IPreparedModel::executeSynchronously::client"),
        (5, 11, 10, "E"),
        (6, 11, 10, "E"),
    ]
    run = only_run(rows)
    assert run.totals_ns(Layer.RUNTIME, Phase.EXECUTION) == 6 * MS
    assert run.self_times[Phase.EXECUTION][Layer.RUNTIME] == 2.0


def test_d5_hal12_driver_execution():
    """D5: execute_1_2 .. notify_1_2 and executeSynchronously give driver execution time."""
    rows = [
        (0, 31, 30, "HIDL::IPreparedModel::execute_1_2::server"),
        (1, 31, 30, "E"),
        (4, 32, 30, "HIDL::IExecutionCallback::notify_1_2::client"),
        (4, 32, 30, "E"),
        (5, 31, 30, "HIDL::IPreparedModel::executeSynchronously::server"),
        (8, 31, 30, "E"),
    ]
    run = only_run(rows)
    assert run.totals_ns(Layer.DRIVER, Phase.EXECUTION) == (4 + 3) * MS


def test_d6_execution_count_is_a_sum_over_threads():
    """D6: executions on two threads add up instead of taking the maximum."""
    rows = [*_execution(0, tid=11), *_execution(0, tid=12), *_execution(10, tid=12)]
    run = only_run(rows)
    assert run.execution_counts[Phase.OVERALL] == 3


def test_d7_self_time_subtracts_every_called_layer():
    """D7: runtime self time subtracts both the IPC and the CPU-fallback totals."""
    rows = [
        (0, 11, 10, "[NN_LR_PE]ANeuralNetworksExecution_compute"),
        (1, 11, 10, "HIDL::IPreparedModel::executeSynchronously::client"),
        (3, 11, 10, "E"),
        (4, 11, 10, "[NN_LC_PCO]cpuFallback"),
        (7, 11, 10, "E"),
        (10, 11, 10, "E"),
    ]
    run = only_run(rows)
    assert run.self_times[Phase.EXECUTION][Layer.RUNTIME] == 10.0 - 2.0 - 3.0


def test_d8_several_client_processes():
    """D8: two client processes' runtime time is attributed to each and summed."""
    rows = [
        (0, 11, 10, "[NN_LR_PP]ANeuralNetworksModel_finish"),
        (1, 21, 20, "[NN_LR_PP]ANeuralNetworksModel_finish"),
        (2, 11, 10, "E"),
        (5, 21, 20, "E"),
    ]
    run = only_run(rows)
    assert run.totals_ns(Layer.RUNTIME, Phase.PREPARATION) == (2 + 4) * MS


def test_d9_per_execution_json_keeps_totals():
    """D9: --per-execution --json leaves times/self_times alone; only template_inputs change."""
    rows = [
        (0, 11, 10, "[NN_LA_PWU]w"),
        *_execution(1),
        (6, 11, 10, "E"),
        (7, 11, 10, "[NN_LA_PBM]b"),
        *_execution(8),
        *_execution(13),
        (18, 11, 10, "E"),
    ]
    result = parse_rows(rows)
    (obj,) = json.loads(format_json(result, per_execution=True))
    assert obj["self_times"]["PE"]["LR"] == 6.0
    assert obj["self_times"]["PBM"]["PE"]["LR"] == 4.0
    assert obj["template_inputs"]["LR_PE"] == 2.0


def test_d10_json_stays_valid_when_a_run_is_incomplete():
    """D10: an unfinished first run yields a diagnostic and still-valid JSON with both runs."""
    rows = [
        (0, 11, 10, "[NN_LA_PO]first"),
        (1, 11, 10, "[NN_LR_PP]never_closed"),
        (2, 11, 10, "[NN_LA_PO]second"),
        (3, 11, 10, "E"),
    ]
    result = parse_rows(rows)
    assert len(result.diagnostics) == 2
    parsed = json.loads(format_json(result))
    assert [run["starting_mark"] for run in parsed] == [
        "B|10|[NN_LA_PO]first",
        "B|10|[NN_LA_PO]second",
    ]


def test_d11_null_only_replaces_missing_values():
    """D11: NaN becomes null as a value, text such as 'NaNet' in a mark is left alone."""
    rows = [(0, 11, 10, "[NN_LA_PO]NaNet"), (1, 11, 10, "E")]
    result = parse_rows(rows)
    (obj,) = json.loads(format_json(result))
    assert obj["starting_mark"] == "B|10|[NN_LA_PO]NaNet"
    assert obj["times"]["PI"]["LA"] is None
    assert math.isnan(result.runs[0].times[Phase.INITIALIZATION][Layer.APPLICATION])


def test_d15_application_total_subtracts_its_ipc_when_the_driver_executed_nothing():
    """D15: Android's self-time walk has a rule for a PO column whose driver PE total is 0
    (LD self = LD total, LI self = LI - LD, and neither becomes what the layers above
    subtract), so the Application keeps its own IPC (omr1_incomplete, whose only driver
    execution the capture cut off: 171.81 ms, the app's listByInterface included). The
    contract subtracts the layers the application calls whatever the driver did: 20 - 1."""
    rows = [
        (0, 11, 10, "[NN_LA_PO]m"),
        (2, 11, 10, "[NN_LA_PE]benchmark"),
        (3, 11, 10, "HIDL::IServiceManager::listByInterface::client"),
        (4, 11, 10, "E"),
        (8, 11, 10, "E"),
        (20, 11, 10, "E"),
    ]
    run = only_run(rows)
    assert run.totals_ns(Layer.DRIVER, Phase.EXECUTION) == 0
    assert run.application_total_self_ns() == (20 - 1) * MS  # Android's rule: 20 (the IPC kept)
    application = next(
        line for line in format_text(parse_rows(rows)).splitlines() if line.startswith("Appl")
    )
    assert application.split()[-1] == "19.00*"
