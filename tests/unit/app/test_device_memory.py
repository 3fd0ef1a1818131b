"""The app key ``memory: device`` and the driver cost ``io_us_per_kb``, run end to end
(docs/scenario-format.md; the memory domains of docs/hal-semantics.md)."""

from __future__ import annotations

import pytest

from nnemu import run
from nnemu.scenario import dump_scenario, load_scenario_text
from tests.unit.tracer.helpers import RecordingSink

BASE = """\
name: memory
seed: 5
devices:
  - name: npu
    hal_version: "HAL"
    cost: {io_us_per_kb: IO}
    performance:
      float32: {exec_time: 0.3, power_usage: 0.4}
models:
  - name: add
    preset: add
    params: {size: 4096}
apps:
  - name: app
    model: add
    devices: [npu]
    memory: MEMORY
    workload: {kind: closed_loop, executions: 4}
"""


def _text(memory: str, io: str = "1.0", hal: str = "1.3") -> str:
    return BASE.replace("MEMORY", memory).replace("IO", io).replace("HAL", hal)


def _run(memory: str, io: str = "1.0", hal: str = "1.3") -> dict:
    scenario = load_scenario_text(_text(memory, io, hal), source="s.yaml")
    assert load_scenario_text(dump_scenario(scenario), source="s.yaml") == scenario
    return run(scenario).data


def _names(scenario) -> list[str]:
    sink = RecordingSink()
    run(scenario, sinks=[sink])
    return [mark.name for mark in sink.marks]


def _mean_ms(data: dict) -> float:
    return data["apps"]["app"]["latency_ms"]["mean"]


def test_ashmem_executions_pay_the_drivers_io_and_device_memory_does_not() -> None:
    """The add preset moves 32 KiB in and 16 KiB out per execution: at 1 us/KiB an ashmem
    execution takes 48 us more than with io_us_per_kb 0; a device-memory execution pays
    none of it, only its output copy: Memory_copy's NDK call (2 us), IBuffer::copyTo's
    binder round trip (100 us) and 16 KiB at 4 GB/s (4 us); its first execution also copies
    the two 16 KiB inputs in and frees their ashmem regions (2 x (106 + 2) us)."""
    ashmem, free_io = _run("ashmem"), _run("ashmem", io="0")
    device = _run("device")
    base = free_io["apps"]["app"]["latency_ms"]
    assert _mean_ms(ashmem) - _mean_ms(free_io) == pytest.approx(0.048, abs=1e-6)
    latency = device["apps"]["app"]["latency_ms"]
    assert latency["p50"] - base["p50"] == pytest.approx(0.106, abs=1e-6)
    assert latency["max"] - latency["p50"] == pytest.approx(2 * 0.108, abs=1e-6)
    assert device["apps"]["app"]["completed"] == 4


def test_device_memory_writes_the_allocate_and_copy_marks() -> None:
    """A device-memory app allocates one memory per input and output (IDevice::allocate),
    copies its two inputs in once and its output out after each of its 4 executions."""
    scenario = load_scenario_text(_text("device"), source="s.yaml")
    names = _names(scenario)
    assert names.count("HIDL::IDevice::allocate::client") == 3
    assert names.count("HIDL::IBuffer::copyFrom::server") == 2
    assert names.count("HIDL::IBuffer::copyTo::server") == 4
    assert names.count("[NN_LR_PE]ANeuralNetworksMemory_copy") == 6


def test_device_memory_on_an_aidl_driver_uses_its_allocate() -> None:
    """On an AIDL driver the same app calls AIDL::ndk::IDevice::allocate and IBuffer's copies."""
    scenario = load_scenario_text(_text("device", hal="aidl-v4"), source="s.yaml")
    sink = RecordingSink()
    data = run(scenario, sinks=[sink]).data
    names = [mark.name for mark in sink.marks]
    assert names.count("AIDL::ndk::IDevice::allocate::client") == 3
    assert names.count("AIDL::ndk::IBuffer::copyTo::server") == 4
    assert data["apps"]["app"]["completed"] == 4


@pytest.mark.parametrize("explicit", [False, True], ids=["Compilation_create", "createForDevices"])
def test_device_memory_on_a_hal_1_2_driver_falls_back_to_ashmem(explicit) -> None:
    """A 1.2 driver has no allocate, and no allocate call is made (VersionedIDevice): for
    Compilation_create, createFromDesc falls back to ashmem (Memory.cpp) and the app sets
    its arguments from it; for createForDevices it fails (OP_FAILED, no fallback) and the app
    keeps to its own buffers.  Either way each execution pays the driver's I/O."""
    text = _text("device", hal="1.2")
    if not explicit:
        text = text.replace("    devices: [npu]\n", "")
    sink = RecordingSink()
    data = run(load_scenario_text(text, source="s.yaml"), sinks=[sink]).data
    names = [mark.name for mark in sink.marks]
    assert not [n for n in names if "::allocate::" in n or "IBuffer" in n]
    assert names.count("[NN_LR_PC]ANeuralNetworksMemory_createFromDesc") >= 1
    from_memory = names.count("[NN_LR_PIO]ANeuralNetworksExecution_setInputFromMemory")
    assert from_memory == (0 if explicit else 4 * 2)
    assert data["apps"]["app"]["completed"] == 4
    ashmem = _run("ashmem", hal="1.2")
    assert _mean_ms(data) >= _mean_ms(ashmem)


@pytest.mark.parametrize(
    ("hal", "execute"),
    [
        ("1.3", "HIDL::IPreparedModel::executeSynchronously_1_3::server"),
        ("aidl-v4", "AIDL::ndk::IBurst::executeSynchronouslyWithConfig::server"),
    ],
)
def test_device_memory_bursts_compute_on_the_drivers_memory(hal, execute) -> None:
    """``execution_mode: burst`` with ``memory: device``: every execution completes and its
    output copies out of the driver's buffer -- on a HIDL driver through the prepared
    model (no FMQ packet: HAL 1.2's request cannot name device memory), on an AIDL one
    through the IBurst; neither pays the driver's I/O for the device-memory arguments."""
    burst = "    memory: device\n    execution_mode: burst\n"
    text = _text("device", hal=hal).replace("    memory: device\n", burst)
    sink = RecordingSink()
    data = run(load_scenario_text(text, source="s.yaml"), sinks=[sink]).data
    no_io = _text("device", io="0", hal=hal).replace("    memory: device\n", burst)
    assert _mean_ms(run(load_scenario_text(no_io, source="s.yaml")).data) == _mean_ms(data)
    names = [mark.name for mark in sink.marks]
    assert data["apps"]["app"]["completed"] == 4
    assert names.count(execute) == 4
    assert not [n for n in names if "ExecutionBurstController::compute" in n]
    copy = "AIDL::ndk::IBuffer::copyTo::server" if hal != "1.3" else "HIDL::IBuffer::copyTo::server"
    assert names.count(copy) == 4


@pytest.mark.parametrize("mode", ["sync", "async", "fenced", "burst"])
def test_ahwb_memory_is_read_in_place_and_moved_like_ashmem(mode) -> None:
    """``memory: ahwb``: one BLOB AHardwareBuffer per input and output, wrapped once
    (Memory_createFromAHardwareBuffer) and set whole by every execution (no Memory_copy);
    the driver moves them as it moves ashmem (io_us_per_kb), so an execution takes what an
    ashmem one does, in every execution mode."""
    ahwb_text = _text("ahwb").replace(
        "    memory: ahwb\n", f"    memory: ahwb\n    execution_mode: {mode}\n"
    )
    ashmem_text = _text("ashmem").replace(
        "    memory: ashmem\n", f"    memory: ashmem\n    execution_mode: {mode}\n"
    )
    sink = RecordingSink()
    data = run(load_scenario_text(ahwb_text, source="s.yaml"), sinks=[sink]).data
    names = [mark.name for mark in sink.marks]
    assert data["apps"]["app"]["completed"] == 4
    assert names.count("[NN_LR_PP]ANeuralNetworksMemory_createFromAHardwareBuffer") == 3
    assert names.count("[NN_LR_PIO]ANeuralNetworksExecution_setInputFromMemory") == 4 * 2
    assert names.count("[NN_LR_PIO]ANeuralNetworksExecution_setOutputFromMemory") == 4
    assert "[NN_LR_PE]ANeuralNetworksMemory_copy" not in names
    ashmem = run(load_scenario_text(ashmem_text, source="s.yaml")).data
    assert _mean_ms(data) == _mean_ms(ashmem)


def test_ahwb_memory_on_a_hal_1_0_driver_runs_on_the_cpu() -> None:
    """A 1.0 driver cannot take an AHardwareBuffer pool (compliantWithV1_0): the runtime makes
    no execute call and, the app's compilation not being for explicit devices, computes on
    the CPU; with ``devices: [npu]`` every execution is OP_FAILED."""
    text = _text("ahwb", hal="1.0")
    sink = RecordingSink()
    data = run(
        load_scenario_text(text.replace("    devices: [npu]\n", ""), source="s.yaml"), sinks=[sink]
    ).data
    names = [mark.name for mark in sink.marks]
    assert data["apps"]["app"]["completed"] == 4
    assert not [n for n in names if "IPreparedModel::execute" in n]
    assert names.count("[NN_LR_PE]cpuFallbackPartial") == 4
    explicit = run(load_scenario_text(text, source="s.yaml")).data
    assert explicit["apps"]["app"]["errors"] == {"OP_FAILED": 4}
