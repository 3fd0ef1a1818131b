"""Queries over a real device trace and an nnemu-generated one."""

from __future__ import annotations

from pathlib import Path

import pytest

from nnemu import run
from nnemu.query import open_trace
from nnemu.scenario import load_scenario
from nnemu.tracer import open_trace_writer

REPO = Path(__file__).resolve().parents[3]
OMR1 = REPO / "tests/data/omr1.html"


def test_omr1_has_five_driver_executions():
    """The OMR1 device trace has five IPreparedModel::execute server slices, one per run."""
    conn = open_trace(str(OMR1))
    (count,) = conn.execute(
        "SELECT count(*) FROM slice WHERE name = 'HIDL::IPreparedModel::execute::server'"
    ).fetchone()
    assert count == 5
    (runs,) = conn.execute(
        "SELECT count(*) FROM nnapi_slice WHERE layer = 'LA' AND phase = 'PO'"
    ).fetchone()
    assert runs == 5


def test_omr1_driver_thread_and_process_names():
    """The driver's server calls run in the HVX service process, named from the process dump."""
    conn = open_trace(str(OMR1))
    rows = conn.execute(
        "SELECT DISTINCT process_name, thread_name FROM nnapi_slice"
        " WHERE name = 'HIDL::IPreparedModel::execute::server' ORDER BY thread_name"
    ).fetchall()
    assert rows == [
        ("android.hardware.neuralnetworks@1.0-service-hvx", "HwBinder:756_2"),
        ("android.hardware.neuralnetworks@1.0-service-hvx", "HwBinder:756_3"),
        ("android.hardware.neuralnetworks@1.0-service-hvx", "neuralnetworks"),
    ]


@pytest.mark.parametrize("suffix", ["html", "json", "txt"])
def test_nnemu_trace_counts_the_reported_executions(tmp_path, suffix):
    """An nnemu trace loads and has one executeSynchronously_1_3 server slice per reported execution."""
    path = tmp_path / f"t.{suffix}"
    report = run(
        load_scenario(str(REPO / "scenarios/quickstart.yaml")), sinks=[open_trace_writer(path)]
    )
    conn = open_trace(str(path))
    (count,) = conn.execute(
        "SELECT count(*) FROM slice"
        " WHERE name LIKE 'HIDL::IPreparedModel::executeSynchronously_1_3::server'"
    ).fetchone()
    assert count == report.data["devices"]["npu"]["executions"] == 30
    assert conn.execute("SELECT count(*) FROM slice WHERE dur < 0").fetchone() == (0,)
