"""Each emulated call writes the marks docs/hal-semantics.md §6 lists, nested as it shows."""

from __future__ import annotations

from pathlib import Path

from nnemu import run
from nnemu.scenario import load_scenario
from tests.unit.tracer.helpers import RecordingSink, record, scenario_text

SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios"


def _after(sink: RecordingSink, name: str) -> list[str]:
    """Names of the marks from the first ``name`` on."""
    names = sink.names()
    return names[names.index(name) :]


def test_sync_compute_on_a_13_driver_nests_as_the_contract_shows():
    """A synchronous compute on a 1.3 driver: compute ⊃ PIO → [SW] LI PE ⊃ HIDL client, then [SW] PR."""
    sink = record(scenario_text(executions=1, preset="add"))
    compute = "[NN_LR_PE]ANeuralNetworksExecution_compute"
    assert sink.first(compute).stack == ("[NN_LA_PE]execute",)
    pio = sink.first("[NN_LR_PIO]DriverPreparedModel::execute")
    assert pio.stack[-1] == compute
    ipc = sink.first("[SW][NN_LI_PE]DriverPreparedModel::execute::execute")
    assert ipc.stack[-1] == pio.name
    client = sink.first("HIDL::IPreparedModel::executeSynchronously_1_3::client")
    assert client.stack[-1] == ipc.name
    assert client.thread == pio.thread
    server = sink.first("HIDL::IPreparedModel::executeSynchronously_1_3::server")
    assert server.thread.pid != client.thread.pid
    driver = sink.first("[NN_LD_PE]SampleDriver::executeSynchronouslyBase")
    assert driver.stack == (server.name,)
    assert _after(sink, driver.name)[1:3] == [
        "[SW][NN_LD_PIO]SampleDriver::executeSynchronouslyBase",
        "[SW][NN_LD_PE]SampleDriver::executeSynchronouslyBase",
    ]
    results = sink.first("[SW][NN_LR_PR]DriverPreparedModel::execute")
    assert results.stack[-1] == ipc.name
    assert results.thread == pio.thread


def test_cpu_driver_execution_traces_the_cpu_executor():
    """§6: a CPU-type (sample) driver's executeSynchronouslyBase ⊃ [NN_LC_PE]run ⊃ a mark per operation."""
    text = scenario_text(executions=1, preset="mobilenet_v1").replace(
        "type: accelerator", "type: cpu"
    )
    sink = record(text)
    run_mark = sink.first("[NN_LC_PE]run")
    assert run_mark.stack[0].startswith("HIDL::IPreparedModel::")
    assert run_mark.stack[-1] == "[SW][NN_LD_PE]SampleDriver::executeSynchronouslyBase"
    conv = sink.first("[NN_LC_PCO]optimized_ops::Conv")
    assert conv.stack[-1] == "[NN_LC_PE]run"
    assert conv.thread == run_mark.thread


def test_accelerator_driver_writes_no_cpu_executor_marks():
    """An accelerator's driver does not run the CpuExecutor, so it writes no [NN_LC_*] marks."""
    sink = record(scenario_text(executions=1, preset="add"))
    assert not [name for name in sink.names() if "[NN_LC_" in name]


def test_hal10_execute_and_callback_on_the_right_threads():
    """HAL 1.0: execute server launches a worker; IExecutionCallback::notify client on it, server on the app's binder thread."""
    sink = record(scenario_text(hal="1.0", mode="async", executions=1, preset="add"))
    server = sink.first("HIDL::IPreparedModel::execute::server")
    assert sink.first("[NN_LD_PE]SampleDriver::executeBase").stack == (server.name,)
    worker = sink.first("[NN_LD_PIO]SampleDriver::asyncExecute")
    assert worker.stack == ()
    assert worker.thread.pid == server.thread.pid
    assert worker.thread != server.thread
    assert _after(sink, worker.name)[1] == "[SW][NN_LD_PE]SampleDriver::asyncExecute"
    notify_client = sink.first("HIDL::IExecutionCallback::notify::client")
    assert notify_client.thread == worker.thread
    notify_server = sink.first("HIDL::IExecutionCallback::notify::server")
    client = sink.first("HIDL::IPreparedModel::execute::client")
    assert notify_server.thread.pid == client.thread.pid
    assert notify_server.thread.name.startswith("HwBinder:")
    assert notify_server.ts_ns > notify_client.ts_ns


def test_prepare_model_subtracts_the_runtime_work():
    """[NN_LI_PC]prepareModel ⊃ [SUB][NN_LR_PC]VersionedIDevice::prepareModel_1_3, then the HIDL call."""
    sink = record(scenario_text(executions=1, preset="add"))
    sub = sink.first("[SUB][NN_LR_PC]VersionedIDevice::prepareModel_1_3")
    assert sub.stack[-1] == "[NN_LI_PC]prepareModel"
    assert sub.stack[-2] == "[NN_LR_PC]ANeuralNetworksCompilation_finish"
    client = sink.first("HIDL::IDevice::prepareModel_1_3::client")
    assert client.stack[-1] == "[NN_LI_PC]prepareModel"
    assert sink.first("[NN_LD_PC]SampleDriver::prepareModel_1_3").stack == (
        "HIDL::IDevice::prepareModel_1_3::server",
    )


def test_discovery_is_one_time_initialisation():
    """Device discovery: [NN_LI_PI]getCapabilities_1_3 ⊃ the HIDL client, under the runtime's PI section."""
    sink = record(scenario_text(executions=1, preset="add"))
    caps = sink.first("[NN_LI_PI]getCapabilities_1_3")
    assert caps.stack[-1] == "[NN_LR_PI]DeviceManager::findAvailableDevices"
    assert _after(sink, caps.name)[1] == "HIDL::IDevice::getCapabilities_1_3::client"
    assert sink.first("[NN_LD_PI]SampleDriver::getCapabilities").stack == (
        "HIDL::IDevice::getCapabilities_1_3::server",
    )


def test_cpu_fallback_runs_ptr_then_switched_pco():
    """CPU fallback: [NN_LC_PE]run ⊃ per operation PTR then [SW] PCO, on the app's thread."""
    sink = RecordingSink()
    run(load_scenario(SCENARIOS / "partial_driver_fallback.yaml"), sinks=[sink])
    run_mark = sink.first("[NN_LC_PE]run")
    assert run_mark.stack[-1] == "[NN_LR_PE]StepExecutor::computeOnCpu"
    ops = [m for m in sink.marks if m.stack and m.stack[-1] == run_mark.name]
    assert ops
    assert ops[0].name.startswith("[NN_LC_PTR]")
    after = _after(sink, ops[0].name)
    assert after[1].startswith("[SW][NN_LC_PCO]")
    assert run_mark.thread.pid == sink.first("[NN_LA_PE]execute").thread.pid


def test_fenced_execution():
    """Fenced: startComputeWithDependencies ⊃ PIO executeFenced → [SW] LI PE ⊃ executeFenced client; Event_wait after."""
    sink = record(scenario_text(mode="fenced", executions=1, preset="add"))
    start = "[NN_LR_PE]ANeuralNetworksExecution_startComputeWithDependencies"
    pio = sink.first("[NN_LR_PIO]DriverPreparedModel::executeFenced")
    assert pio.stack[-1] == start
    ipc = sink.first("[SW][NN_LI_PE]DriverPreparedModel::executeFenced")
    assert sink.first("HIDL::IPreparedModel::executeFenced::client").stack[-1] == ipc.name
    assert sink.first("[NN_LD_PE]SamplePreparedModel::executeFenced").stack == (
        "HIDL::IPreparedModel::executeFenced::server",
    )
    assert sink.first("[NN_LR_PE]ANeuralNetworksEvent_wait").ts_ns >= pio.ts_ns


def test_async_execution_runs_on_an_async_thread():
    """Async: startCompute and Event_wait on the app's thread; the driver call on an nn-async thread."""
    sink = record(scenario_text(mode="async", executions=1, preset="add"))
    start = sink.first("[NN_LR_PE]ANeuralNetworksExecution_startCompute")
    wait = sink.first("[NN_LR_PE]ANeuralNetworksEvent_wait")
    assert start.thread == wait.thread
    assert start.stack == wait.stack == ("[NN_LA_PE]execute",)
    pio = sink.first("[NN_LR_PIO]DriverPreparedModel::execute")
    assert pio.thread != start.thread
    assert pio.thread.name.startswith("nn-async")
    assert pio.stack == ()
