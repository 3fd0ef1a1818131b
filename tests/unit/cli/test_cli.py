"""The command line: exit codes and messages for good and bad input."""

from __future__ import annotations

import io
import json
from pathlib import Path

from nnemu.cli import main

REPO = Path(__file__).resolve().parents[3]


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_quickstart_exits_zero_and_writes_report(tmp_path: Path) -> None:
    """The README's main job succeeds and writes a report with the documented keys."""
    report = tmp_path / "r.json"
    code, out, _ = _run("run", str(REPO / "scenarios/quickstart.yaml"), "--report", str(report))
    assert code == 0
    assert "camera" in out
    data = json.loads(report.read_text())
    assert set(data) == {
        "scenario",
        "seed",
        "virtual_ms",
        "wall_s",
        "apps",
        "devices",
        "expectations",
    }
    assert data["apps"]["camera"]["completed"] == 30


def test_bad_yaml_exits_two_with_position(tmp_path: Path) -> None:
    """A malformed scenario gets file:line:col messages and exit code 2, not a traceback."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nseed: seven\napps: []\n")
    code, _, err = _run("run", str(bad))
    assert code == 2
    assert f"{bad}:2:7: seed: expected an integer" in err
    assert "Traceback" not in err


def test_missing_file_exits_two() -> None:
    """A scenario file that does not exist is bad input."""
    code, _, err = _run("run", "no/such/scenario.yaml")
    assert code == 2
    assert "no/such/scenario.yaml" in err


def test_failed_expectation_exits_one(tmp_path: Path) -> None:
    """An expectation that does not hold makes the run exit 1 and names it."""
    text = (REPO / "scenarios/quickstart.yaml").read_text()
    scenario = tmp_path / "q.yaml"
    scenario.write_text(
        text.replace('"apps.camera.completed == 30"', '"apps.camera.completed == 31"')
    )
    code, _, err = _run("run", str(scenario))
    assert code == 1
    assert "apps.camera.completed == 31" in err


def test_trace_round_trips_through_parse(tmp_path: Path) -> None:
    """A trace written by run is read back by parse, with the app's run header."""
    trace = tmp_path / "t.html"
    assert _run("run", str(REPO / "scenarios/quickstart.yaml"), "--trace", str(trace))[0] == 0
    code, out, _ = _run("parse", str(trace))
    assert code == 0
    assert "[NN_LA_PO]camera" in out
    assert "NNAPI timing summary" in out
