"""The latency split: each execution's latency by where it went, per record and in the report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nnemu import run
from nnemu.app import SPLIT_PARTS, ExecutionRecord
from nnemu.hal import ResultCode
from nnemu.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[3]
SCENARIOS = sorted(
    [*(ROOT / "scenarios").glob("**/*.yaml"), *(ROOT / "nnemu/demo/scenarios").glob("*.yaml")]
)


def _run(path: Path) -> tuple[dict[str, Any], dict[str, list[ExecutionRecord]]]:
    """The report data and every app's execution records of one run of ``path``."""
    records: dict[str, list[ExecutionRecord]] = {}

    def inspect(emulator: Any) -> None:
        for app in emulator.apps:
            records[app.spec.name] = list(app.records)

    report = run(load_scenario(path), keep_executions=True, inspect=inspect)
    return report.data, records


def _parts(record: ExecutionRecord) -> list[int]:
    return [getattr(record, f"{part}_ns") for part in SPLIT_PARTS]


def _scenario(name: str) -> Path:
    return ROOT / "scenarios" / f"{name}.yaml"


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_parts_add_up_to_the_latency_in_every_shipped_scenario(path: Path) -> None:
    """Every execution's parts are >= 0 and add up to its latency; the report's mean parts add
    up to its mean latency (up to rounding) and are the records' means."""
    data, records = _run(path)
    for name, app in data["apps"].items():
        split = app["latency_split_ms"]
        assert list(split) == list(SPLIT_PARTS)
        completed = [r for r in records[name] if r.code is ResultCode.NO_ERROR]
        assert len(completed) == app["completed"]
        for record in records[name]:
            parts = _parts(record)
            assert min(parts) >= 0, (name, record)
            assert sum(parts) == record.finished_ns - record.arrival_ns, (name, record)
        assert sum(split.values()) == pytest.approx(app["latency_ms"]["mean"], abs=0.004)
        for index, part in enumerate(SPLIT_PARTS):
            total_ns = sum(_parts(r)[index] for r in completed)
            mean = round(total_ns / len(completed) / 1e6, 3) if completed else 0.0
            assert split[part] == mean, (name, part)


def test_time_preempted_is_queue_wait_not_compute() -> None:
    """Checkpoint preemption moves the indexer's preempted time into queue wait: its compute
    is what it is without preemption, and a preempted execution waited at the device."""
    with_preemption, records = _run(_scenario("qos_priority_checkpoint"))
    without, _ = _run(_scenario("qos_priority_no_preemption"))
    indexer = with_preemption["apps"]["indexer"]["latency_split_ms"]
    assert indexer["compute"] == without["apps"]["indexer"]["latency_split_ms"]["compute"]
    preempted = [r for r in records["indexer"] if r.preemptions]
    assert preempted
    for record in preempted:
        assert record.device_arrival_ns is not None
        assert record.device_end_ns is not None
        on_device = record.device_end_ns - record.device_arrival_ns
        assert record.queue_wait_ns >= on_device - record.compute_ns - record.driver_launch_ns > 0


def test_cpu_executions_have_no_ipc_and_no_driver_launch() -> None:
    """An app that runs on the runtime's CPU executor spends nothing on IPC or a driver launch."""
    data, records = _run(_scenario("qos_model_too_large"))
    flexible = [r for r in records["flexible"] if r.code is ResultCode.NO_ERROR]
    assert flexible
    for record in flexible:
        assert record.device == "nnapi-reference"
        assert record.ipc_ns == record.driver_launch_ns == 0
        assert record.compute_ns > 0
    split = data["apps"]["flexible"]["latency_split_ms"]
    assert split["ipc"] == split["driver_launch"] == 0.0


def test_earlier_attempts_and_back_off_are_retry() -> None:
    """A retried execution's earlier attempts and back-off are its retry part; others have none."""
    _, records = _run(_scenario("qos_busy_retries"))
    retried = [r for r in records["batcher"] if r.attempts > 1]
    assert retried
    assert all(r.retry_ns > 0 for r in retried)
    assert all(r.retry_ns == 0 for r in records["batcher"] if r.attempts == 1)


def test_records_carry_the_device_path_and_settings() -> None:
    """A record names its device, mode and priority, and its device times lie inside its latency."""
    _, records = _run(_scenario("two_apps_one_npu"))
    camera = records["camera"]
    assert [r.seq for r in camera] == sorted(r.seq for r in camera)
    for record in camera:
        assert record.device == "npu"
        assert record.mode == "sync"
        assert record.priority == "HIGH"
        assert record.device_arrival_ns is not None
        assert record.device_start_ns is not None
        assert record.device_end_ns is not None
        assert record.arrival_ns <= record.started_ns <= record.device_arrival_ns
        assert record.device_arrival_ns <= record.device_start_ns <= record.device_end_ns
        assert record.device_end_ns <= record.finished_ns
