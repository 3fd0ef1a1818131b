"""Multi-process attribution and HAL 1.2/1.3 call names."""

from __future__ import annotations

from nnemu.parser import parse_lines
from nnemu.tracer import Layer, Phase
from tests.unit.parser.helpers import only_run, parse_rows

MS = 1_000_000


def test_two_clients_two_drivers():
    """Interleaved clients and drivers: each thread's stack is its own, totals add up."""
    rows = [
        (0, 10, 10, "[NN_LA_PO]bench"),
        (1, 11, 10, "[NN_LR_PC]ANeuralNetworksCompilation_finish"),
        (1, 21, 20, "[NN_LR_PC]ANeuralNetworksCompilation_finish"),
        (2, 11, 10, "HIDL::IDevice::prepareModel_1_3::client"),
        (2, 21, 20, "HIDL::IDevice::prepareModel_1_2::client"),
        (3, 31, 30, "HIDL::IDevice::prepareModel_1_3::server"),
        (3, 41, 40, "HIDL::IDevice::prepareModel_1_2::server"),
        (5, 31, 30, "E"),
        (7, 41, 40, "E"),
        (8, 11, 10, "E"),
        (9, 21, 20, "E"),
        (10, 11, 10, "E"),
        (12, 21, 20, "E"),
        (13, 10, 10, "E"),
    ]
    run = only_run(rows)
    assert run.totals_ns(Layer.DRIVER, Phase.COMPILATION) == (5 - 3 + 7 - 3) * MS
    assert run.totals_ns(Layer.IPC, Phase.COMPILATION) == (8 - 2 + 9 - 2) * MS
    assert run.totals_ns(Layer.RUNTIME, Phase.COMPILATION) == (10 - 1 + 12 - 1) * MS


def test_cpu_in_driver_is_driver_and_in_client_is_cpu():
    """[NN_LC_*] counts as Driver inside a driver process and as CPU in a client process."""
    rows = [
        (0, 11, 10, "[NN_LR_PE]ANeuralNetworksExecution_compute"),
        (1, 11, 10, "[NN_LC_PCO]cpuFallback"),
        (3, 11, 10, "E"),
        (4, 11, 10, "E"),
        (5, 31, 30, "HIDL::IPreparedModel::executeSynchronously_1_3::server"),
        (6, 31, 30, "[NN_LD_PE]SampleDriver::executeSynchronouslyBase"),
        (7, 31, 30, "[NN_LC_PTR]convFloat32"),
        (8, 31, 30, "[SW][NN_LC_PCO]optimized_ops::Conv"),
        (10, 31, 30, "E"),
        (10, 31, 30, "E"),
        (11, 31, 30, "E"),
        (12, 31, 30, "E"),
    ]
    run = only_run(rows)
    assert run.totals_ns(Layer.CPU, Phase.COMPUTATION) == 2 * MS
    assert run.totals_ns(Layer.CPU, Phase.EXECUTION) == 2 * MS
    assert run.totals_ns(Layer.DRIVER, Phase.EXECUTION) == 7 * MS
    assert run.totals_ns(Layer.DRIVER, Phase.TRANSFORMATION) == 1 * MS
    assert run.totals_ns(Layer.DRIVER, Phase.COMPUTATION) == 2 * MS
    assert run.totals_ns(Layer.RUNTIME, Phase.EXECUTION) == 4 * MS


def test_hal13_names():
    """HAL 1.3 getCapabilities/getSupportedOperations/prepareModel/execute/notify are mapped."""
    rows = [
        (0, 11, 10, "HIDL::IDevice::getCapabilities_1_3::client"),
        (0, 31, 30, "HIDL::IDevice::getCapabilities_1_3::server"),
        (1, 31, 30, "E"),
        (2, 11, 10, "E"),
        (3, 11, 10, "[NN_LR_PC]ANeuralNetworksCompilation_finish"),
        (3, 11, 10, "HIDL::IDevice::getSupportedOperations_1_3::client"),
        (3, 31, 30, "HIDL::IDevice::getSupportedOperations_1_3::server"),
        (4, 31, 30, "E"),
        (5, 11, 10, "E"),
        (5, 11, 10, "HIDL::IDevice::prepareModel_1_3::client"),
        (6, 31, 30, "HIDL::IDevice::prepareModel_1_3::server"),
        (7, 31, 30, "HIDL::IPreparedModelCallback::notify_1_3::client"),
        (7, 31, 30, "E"),
        (8, 31, 30, "E"),
        (9, 11, 10, "E"),
        (10, 11, 10, "E"),
        (11, 11, 10, "[NN_LR_PE]ANeuralNetworksExecution_startCompute"),
        (11, 11, 10, "HIDL::IPreparedModel::execute_1_3::client"),
        (12, 31, 30, "HIDL::IPreparedModel::execute_1_3::server"),
        (13, 31, 30, "E"),
        (13, 11, 10, "E"),
        (14, 11, 10, "E"),
        (15, 11, 10, "[NN_LR_PE]ANeuralNetworksEvent_wait"),
        (19, 32, 30, "HIDL::IExecutionCallback::notify_1_3::client"),
        (19, 32, 30, "E"),
        (20, 11, 10, "E"),
    ]
    run = only_run(rows)
    assert run.totals_ns(Layer.DRIVER, Phase.INITIALIZATION) == 1 * MS
    assert run.totals_ns(Layer.IPC, Phase.INITIALIZATION) == 2 * MS
    assert run.totals_ns(Layer.DRIVER, Phase.COMPILATION) == (1 + 2) * MS
    assert run.totals_ns(Layer.IPC, Phase.COMPILATION) == (2 + 4) * MS
    assert run.totals_ns(Layer.RUNTIME, Phase.COMPILATION) == 7 * MS
    assert run.totals_ns(Layer.DRIVER, Phase.EXECUTION) == (19 - 12) * MS
    assert run.totals_ns(Layer.IPC, Phase.EXECUTION) == 2 * MS
    assert run.totals_ns(Layer.RUNTIME, Phase.EXECUTION) == (20 - 11) * MS


def test_fenced_execution():
    """startComputeWithDependencies .. Event_wait is runtime execution; executeFenced is driver."""
    rows = [
        (0, 11, 10, "[NN_LR_PE]ANeuralNetworksExecution_startComputeWithDependencies"),
        (1, 11, 10, "HIDL::IPreparedModel::executeFenced::client"),
        (1, 31, 30, "HIDL::IPreparedModel::executeFenced::server"),
        (3, 31, 30, "E"),
        (3, 11, 10, "E"),
        (4, 11, 10, "E"),
        (6, 11, 10, "[NN_LR_PE]ANeuralNetworksEvent_wait"),
        (9, 11, 10, "E"),
    ]
    run = only_run(rows)
    assert run.totals_ns(Layer.RUNTIME, Phase.EXECUTION) == 9 * MS
    assert run.totals_ns(Layer.DRIVER, Phase.EXECUTION) == 2 * MS
    assert run.totals_ns(Layer.IPC, Phase.EXECUTION) == 2 * MS


def test_old_format_and_dashed_tgid():
    """Rows without the TGID column and with a ----- TGID are read from the payload's pid."""
    lines = [
        "# tracer: nop",
        "  <...>-11    [001] ...1  100.000000: tracing_mark_write: B|10|[NN_LR_PP]f",
        "  <...>-11    [001] ...1  100.002000: tracing_mark_write: E",
        "  <...>-12  (-----) [001] ...1  100.003000: tracing_mark_write: B|10|[NN_LR_PP]g",
        "  <...>-12  (-----) [001] ...1  100.004000: tracing_mark_write: E|10",
    ]
    result = parse_lines(lines)
    assert result.diagnostics == ()
    assert result.runs[0].totals_ns(Layer.RUNTIME, Phase.PREPARATION) == 3 * MS


def test_sections_before_tracking_stay_balanced():
    """An E for a non-NNAPI section opened before the thread's first NN mark pops that section."""
    rows = [
        (0, 11, 10, "Choreographer#doFrame"),
        (1, 11, 10, "[NN_LR_PP]f"),
        (2, 11, 10, "E"),
        (3, 11, 10, "E"),
        (4, 11, 10, "[NN_LR_PP]g"),
        (6, 11, 10, "E"),
    ]
    run = only_run(rows)
    assert run.totals_ns(Layer.RUNTIME, Phase.PREPARATION) == 3 * MS


def test_runs_are_per_client_process():
    """A client's [NN_LA_PO] starts a run of that client only; runs come in the order they start."""
    rows = [
        (0, 10, 10, "[NN_LA_PO]camera"),
        (1, 10, 10, "[NN_LR_PC]ANeuralNetworksCompilation_finish"),
        (2, 20, 20, "[NN_LA_PO]indexer"),
        (3, 20, 20, "[NN_LR_PC]ANeuralNetworksCompilation_finish"),
        (5, 10, 10, "E"),
        (6, 10, 10, "E"),
        (8, 20, 20, "E"),
        (9, 20, 20, "E"),
    ]
    result = parse_rows(rows)
    assert result.diagnostics == ()
    camera, indexer = result.runs
    assert (camera.pid, camera.starting_mark) == ("10", "B|10|[NN_LA_PO]camera")
    assert (indexer.pid, indexer.starting_mark) == ("20", "B|20|[NN_LA_PO]indexer")
    assert camera.totals_ns(Layer.RUNTIME, Phase.COMPILATION) == 4 * MS
    assert camera.totals_ns(Layer.APPLICATION, Phase.OVERALL) == 6 * MS
    assert indexer.totals_ns(Layer.RUNTIME, Phase.COMPILATION) == 5 * MS
    assert indexer.totals_ns(Layer.APPLICATION, Phase.OVERALL) == 7 * MS


def test_server_call_serves_the_waiting_call_of_its_method():
    """A driver's server section counts for the client whose call of the same method waits."""
    rows = [
        (0, 10, 10, "[NN_LA_PO]a"),
        (0, 20, 20, "[NN_LA_PO]b"),
        (1, 10, 10, "HIDL::IDevice::getSupportedOperations_1_3::client"),
        (1, 20, 20, "HIDL::IDevice::prepareModel_1_3::client"),
        (2, 31, 30, "HIDL::IDevice::prepareModel_1_3::server"),
        (2, 32, 30, "HIDL::IDevice::getSupportedOperations_1_3::server"),
        (3, 32, 30, "E"),
        (6, 31, 30, "E"),
        (7, 10, 10, "E"),
        (7, 20, 20, "E"),
        (8, 10, 10, "E"),
        (8, 20, 20, "E"),
    ]
    a, b = parse_rows(rows).runs
    assert a.totals_ns(Layer.DRIVER, Phase.COMPILATION) == 1 * MS
    assert b.totals_ns(Layer.DRIVER, Phase.COMPILATION) == 4 * MS


def test_worker_thread_serves_the_client_that_launched_its_work():
    """Work a prepareModel call launched on a driver worker counts for that call's client."""
    rows = [
        (0, 10, 10, "[NN_LA_PO]a"),
        (0, 20, 20, "[NN_LA_PO]b"),
        (1, 20, 20, "HIDL::IDevice::prepareModel_1_3::client"),
        (2, 31, 30, "HIDL::IDevice::prepareModel_1_3::server"),
        (3, 31, 30, "E"),
        (4, 20, 20, "E"),
        (4, 33, 30, "[NN_LD_PC]SamplePreparedModel::initialize"),
        (9, 33, 30, "HIDL::IPreparedModelCallback::notify_1_3::client"),
        (9, 33, 30, "E"),
        (9, 33, 30, "E"),
        (10, 10, 10, "E"),
        (10, 20, 20, "E"),
    ]
    a, b = parse_rows(rows).runs
    assert a.totals_ns(Layer.DRIVER, Phase.COMPILATION) == 0
    assert b.totals_ns(Layer.DRIVER, Phase.COMPILATION) == (1 + 5) * MS


def test_async_execution_counts_for_its_client_until_its_notify():
    """An asynchronous execute's driver time (server begin to notify) goes to its own client."""
    rows = [
        (0, 10, 10, "[NN_LA_PO]a"),
        (0, 20, 20, "[NN_LA_PO]b"),
        (1, 20, 20, "HIDL::IPreparedModel::execute_1_3::client"),
        (2, 31, 30, "HIDL::IPreparedModel::execute_1_3::server"),
        (3, 31, 30, "E"),
        (4, 20, 20, "E"),
        (3, 33, 30, "[NN_LD_PE]SampleDriver::asyncExecute"),
        (8, 33, 30, "E"),
        (8, 33, 30, "HIDL::IExecutionCallback::notify_1_3::client"),
        (8, 33, 30, "E"),
        (10, 10, 10, "E"),
        (10, 20, 20, "E"),
    ]
    a, b = parse_rows(rows).runs
    assert a.totals_ns(Layer.DRIVER, Phase.EXECUTION) == 0
    assert b.totals_ns(Layer.DRIVER, Phase.EXECUTION) == (8 - 2) * MS


def test_a_call_never_served_does_not_pair_with_a_later_server():
    """A client call that ends unserved (passthrough) is not matched to another client's server."""
    rows = [
        (0, 10, 10, "[NN_LA_PO]a"),
        (0, 20, 20, "[NN_LA_PO]b"),
        (1, 10, 10, "HIDL::IDevice::getCapabilities_1_3::client"),
        (2, 10, 10, "E"),
        (3, 20, 20, "HIDL::IDevice::getCapabilities_1_3::client"),
        (4, 31, 30, "HIDL::IDevice::getCapabilities_1_3::server"),
        (6, 31, 30, "E"),
        (7, 20, 20, "E"),
        (10, 10, 10, "E"),
        (10, 20, 20, "E"),
    ]
    a, b = parse_rows(rows).runs
    assert a.totals_ns(Layer.DRIVER, Phase.INITIALIZATION) == 0
    assert b.totals_ns(Layer.DRIVER, Phase.INITIALIZATION) == 2 * MS


def test_a_new_run_of_one_client_leaves_the_other_clients_sections_alone():
    """Only the client whose run ends loses its open sections (with a warning)."""
    rows = [
        (0, 10, 10, "[NN_LA_PO]a"),
        (0, 20, 20, "[NN_LA_PO]b"),
        (1, 20, 20, "[NN_LR_PC]ANeuralNetworksCompilation_finish"),
        (2, 10, 10, "E"),
        (3, 10, 10, "[NN_LA_PO]a"),
        (5, 20, 20, "E"),
        (6, 10, 10, "E"),
        (7, 20, 20, "E"),
    ]
    result = parse_rows(rows)
    assert result.diagnostics == ()
    first_a, b, second_a = result.runs
    assert [r.pid for r in result.runs] == ["10", "20", "10"]
    assert b.totals_ns(Layer.RUNTIME, Phase.COMPILATION) == 4 * MS
    assert first_a.totals_ns(Layer.APPLICATION, Phase.OVERALL) == 2 * MS
    assert second_a.totals_ns(Layer.APPLICATION, Phase.OVERALL) == 3 * MS


def test_incomplete_run_is_left_out_unless_asked_for():
    """A run whose [NN_LA_PO] the trace cuts off is left out with a warning, or marked incomplete."""
    rows = [
        (0, 10, 10, "[NN_LA_PO]a"),
        (1, 10, 10, "E"),
        (2, 10, 10, "[NN_LA_PO]a"),
        (3, 10, 10, "[NN_LR_PC]ANeuralNetworksCompilation_finish"),
        (4, 10, 10, "E"),
    ]
    result = parse_rows(rows)
    (complete,) = result.runs
    assert not complete.incomplete
    assert any("is cut off by the end of the trace" in d.message for d in result.diagnostics)
    both = parse_rows(rows, include_incomplete=True).runs
    assert [r.incomplete for r in both] == [False, True]
    assert both[1].totals_ns(Layer.RUNTIME, Phase.COMPILATION) == 1 * MS


def test_process_dump_names_the_runs_process(make_trace):
    """A systrace PROCESS DUMP block before the ftrace block names each run's process."""
    rows = [
        (0, 10, 10, "[NN_LA_PO]a"),
        (0, 20, 20, "[NN_LA_PO]b"),
        (1, 10, 10, "E"),
        (1, 20, 20, "E"),
    ]
    html = (
        "<!DOCTYPE html>\n<html>\n"
        '  <script class="trace-data" type="application/text">\n'
        "PROCESS DUMP\n"
        "USER           PID  PPID     VSZ    RSS WCHAN  PC S NAME                        COMM\n"
        "u0_app          10     0       0      0 SyS_epoll_wait 0 S com.example.camera app_process64\n"
        "u0_app          20     0       0      0 SyS_epoll_wait 0 S my indexer  app_process64\n"
        "  </script>\n"
        '  <script class="trace-data" type="application/text">\n'
        + make_trace(rows)
        + "  </script>\n</html>\n"
    )
    result = parse_lines(html.splitlines(keepends=True))
    assert [(r.pid, r.process_name) for r in result.runs] == [
        ("10", "com.example.camera"),
        ("20", "my indexer"),
    ]
