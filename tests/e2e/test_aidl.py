"""A scenario with an AIDL driver beside a HIDL one: its run, report, trace, parse and verify."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from nnemu import run
from nnemu.scenario import load_scenario
from nnemu.tracer import open_trace_writer
from tests.commands import run_cli, run_parse, trace_processor_shell

ROOT = Path(__file__).resolve().parents[2]
AIDL_SCENARIO = ROOT / "scenarios/aidl_npu_hidl_gpu.yaml"


def _traced(tmp_path: Path, suffix: str) -> tuple[Path, dict[str, object]]:
    trace = tmp_path / f"trace{suffix}"
    report = run(load_scenario(AIDL_SCENARIO), sinks=[open_trace_writer(trace)])
    return trace, report.data


def test_report_says_which_hal_each_device_spoke(tmp_path: Path):
    """devices.D.hal is the HAL the driver spoke: aidl-v4 for the NPU, 1.3 for the GPU."""
    _, data = _traced(tmp_path, ".html")
    devices = data["devices"]
    assert isinstance(devices, dict)
    assert devices["npu"]["hal"] == "aidl-v4"
    assert devices["gpu"]["hal"] == "1.3"
    assert "hal" not in devices["nnapi-reference"]


def test_trace_carries_aidl_ndk_marks_for_the_aidl_driver_only(tmp_path: Path):
    """The AIDL driver's calls are AIDL::ndk::<Iface>::<method> marks, the HIDL one's HIDL::...;
    the v4 NPU is prepared with prepareModelWithConfig and its fenced app runs
    executeFencedWithConfig, as the runtime calls a feature-level-8 driver."""
    trace, _ = _traced(tmp_path, ".html")
    text = trace.read_text()
    assert "AIDL::ndk::IDevice::prepareModelWithConfig::server" in text
    assert "AIDL::ndk::IPreparedModel::executeFencedWithConfig::server" in text
    assert "AIDL::ndk::IDevice::prepareModel::server" not in text
    assert "AIDL::ndk::IPreparedModelCallback::notify::client" in text
    assert "HIDL::IDevice::prepareModel_1_3::server" in text
    assert "AIDL::ndk::IDevice::prepareModel_1_3" not in text
    assert "HIDL::IPreparedModel::executeFenced" not in text  # the GPU's app is synchronous


def test_parse_attributes_aidl_server_calls_to_the_driver(tmp_path: Path):
    """nnemu parse files an AIDL driver's server time under the driver layer, as HIDL's: the
    app on the AIDL NPU has driver execution time and no CPU time."""
    trace, _ = _traced(tmp_path, ".html")
    code, out, err = run_parse(trace, as_json=True)
    assert code == 0, err
    runs = {r["process"]["name"]: r for r in json.loads(out)}
    photos = runs["photos"]["self_times"]
    assert photos["PE"]["LD"] > 100.0  # unread AIDL marks: 0, the driver's time left as CPU
    assert photos["PE"]["LC"] == 0.0
    assert photos["PE"]["LR"] >= 0.0  # the runtime is not charged the driver's time


def test_verify_passes():
    """nnemu verify: the parsed trace agrees with the emulator's ground truth, cell by cell."""
    code, out, err = run_cli("-q", "verify", str(AIDL_SCENARIO))
    assert code == 0, out + err
    assert "verify: ok" in out


def test_trace_processor_opens_the_pftrace(tmp_path: Path):
    """Perfetto's trace processor reads the AIDL marks of the .pftrace as slices."""
    shell = trace_processor_shell()  # (skips when the tool is absent)
    trace, _ = _traced(tmp_path, ".pftrace")
    query = tmp_path / "q.sql"
    query.write_text(
        "SELECT count(*) AS n FROM slice"
        " WHERE name = 'AIDL::ndk::IPreparedModel::executeFencedWithConfig::server';\n"
    )
    done = subprocess.run(
        [shell, "-q", str(query), str(trace)], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip().splitlines()[-1] == "62"


V4_SCENARIO = ROOT / "scenarios/aidl_v4_reusable.yaml"


def test_v4_scenario_runs_reusable_executions_and_bursts_over_aidl(tmp_path: Path):
    """scenarios/aidl_v4_reusable.yaml: the camera's reusable execution is one
    createReusableExecution and one IExecution::executeSynchronously per frame; the NPU's
    burst is one IBurst::executeSynchronouslyWithConfig per execution; the GPU's HIDL burst
    sends no binder call per execution; nothing reaches the NPU's IPreparedModel execute."""
    trace = tmp_path / "trace.txt"
    report = run(load_scenario(V4_SCENARIO), sinks=[open_trace_writer(trace)]).data
    text = trace.read_text()

    def count(name: str) -> int:
        return text.count(f"|{name}::server\n")

    assert report["apps"]["camera"]["completed"] == 60
    assert report["apps"]["hotword_npu"]["completed"] == 200
    assert count("AIDL::ndk::IPreparedModel::createReusableExecution") == 1
    assert count("AIDL::ndk::IExecution::executeSynchronously") == 60
    assert count("AIDL::ndk::IBurst::executeSynchronouslyWithConfig") == 200
    assert count("AIDL::ndk::IPreparedModel::configureExecutionBurst") == 1
    assert "AIDL::ndk::IPreparedModel::executeSynchronously" not in text
    assert count("HIDL::IPreparedModel::configureExecutionBurst") == 1
    assert "HIDL::IPreparedModel::executeSynchronously" not in text


def test_v4_scenario_verifies():
    """nnemu verify on the v4 scenario: the parsed IBurst / IExecution / createReusableExecution
    marks agree with the ground truth, cell by cell."""
    code, out, err = run_cli("-q", "verify", str(V4_SCENARIO))
    assert code == 0, out + err
    assert "verify: ok" in out
