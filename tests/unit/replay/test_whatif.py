"""Replay what-ifs: warnings for --set keys that cannot change the run, recorded vs replayed latency."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.commands import run_cli
from tests.unit.replay.helpers import OMR1, REPO, record

TWO_APPS = REPO / "scenarios/two_apps_one_npu.yaml"


@pytest.fixture(scope="module", name="two_trace")
def _two_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("two") / "two.html"
    record(TWO_APPS, path)
    return path


@pytest.fixture(scope="module", name="plain")
def _plain(two_trace: Path) -> tuple[int, str, str]:
    """``nnemu replay`` of the two-app trace without a --set: the baseline of every what-if."""
    return run_cli("replay", str(two_trace))


def _device(out: str) -> str:
    """The replay's device name for the two-app trace's driver."""
    line = next(line for line in out.splitlines() if line.startswith("  driver "))
    return line.split()[1].rstrip(":")


def _table(out: str) -> str:
    """The summary table the run printed (from the scenario line on)."""
    return out[out.index("\nscenario ") :]


def test_priority_set_under_per_app_isolation_warns(
    two_trace: Path, plain: tuple[int, str, str]
) -> None:
    """A cross-app priority change under the default per-app scheduler is named as ineffective."""
    code, out, err = run_cli("replay", str(two_trace), "--set", "apps.camera.priority=low")
    assert code == 0, err
    device = _device(out)
    assert "warning: --set apps.camera.priority cannot change the result" in err
    assert "per_app_priority" in err
    assert f"set devices.{device}.scheduler=global_priority to compare across apps" in err
    assert _table(out) == _table(plain[1])


def test_priority_set_that_can_matter_does_not_warn(
    two_trace: Path, plain: tuple[int, str, str]
) -> None:
    """Under global_priority with checkpoint preemption a priority change runs without a
    warning and moves the camera (recorded high, from its nnemu::qos mark; the indexer low)."""
    device = _device(plain[1])
    sets = [
        "--set",
        f"devices.{device}.scheduler=global_priority",
        "--set",
        f"devices.{device}.preemption=checkpoint",
    ]
    code, medium, err = run_cli(
        "replay", str(two_trace), *sets, "--set", "apps.camera.priority=medium"
    )
    assert code == 0, err
    assert "warning" not in err
    _, low, _ = run_cli("replay", str(two_trace), *sets, "--set", "apps.camera.priority=low")
    assert _table(medium) != _table(low)


def test_deadline_on_a_pre_13_driver_warns() -> None:
    """An execution timeout on a HAL 1.0 driver says the driver never sees the deadline."""
    code, _, err = run_cli("replay", str(OMR1), "--set", "apps.app-27005.execution_timeout_ms=5")
    assert code == 0, err
    assert "warning: --set apps.app-27005.execution_timeout_ms cannot reach the driver" in err
    assert "hvx (HAL 1.0)" in err


def test_deadline_policy_without_deadlines_warns(
    two_trace: Path, plain: tuple[int, str, str]
) -> None:
    """A deadline policy is named as ineffective when no app on the device has a deadline."""
    device = _device(plain[1])
    code, _, err = run_cli(
        "replay", str(two_trace), "--set", f"devices.{device}.deadline_policy=ignore"
    )
    assert code == 0, err
    assert f"warning: --set devices.{device}.deadline_policy cannot change the result" in err


def _rows(out: str, app: str) -> tuple[list[str], list[str]]:
    lines = out[out.index("recorded vs replayed latency") :].splitlines()
    at = next(i for i, line in enumerate(lines) if line.split()[:2] == [app, "recorded"])
    return lines[at].split()[2:], lines[at + 1].split()[1:]


def test_replay_prints_recorded_and_replayed_latency(
    two_trace: Path, plain: tuple[int, str, str]
) -> None:
    """Each app's recorded latencies (from its sections in the trace) are printed beside the replayed ones."""
    code, out, err = plain
    assert code == 0, err
    recorded, replayed = _rows(out, "camera")
    assert recorded[0] == "89"
    assert replayed[0] == "89"
    # The camera never queued in the recorded run: its [NN_LA_PE] sections are the latencies
    # the recording's own report gave (the report rounds to its histogram's 0.1%).
    report = record(TWO_APPS, two_trace.with_name("again.html")).data["apps"]["camera"]
    assert float(recorded[1]) == pytest.approx(report["latency_ms"]["p50"], rel=2e-3)
    assert float(recorded[3]) == pytest.approx(report["latency_ms"]["max"], abs=0.002)
    assert all(float(v) > 0 for v in replayed[1:])


_DUMP = """  <script class="trace-data" type="application/text">
PROCESS DUMP
USER           PID  PPID     VSZ    RSS WCHAN  PC S NAME                        COMM
system         {pid}     1   19416   2728 binder_ioctl_write_read 0 S {name} {name}
  </script>
"""


def test_replay_names_the_driver_from_the_process_dump(
    two_trace: Path, plain: tuple[int, str, str], tmp_path: Path
) -> None:
    """A driver process named in the trace's process dump gives the replayed device its name."""
    pid = next(line for line in plain[1].splitlines() if line.startswith("  driver ")).split()[3]
    text = two_trace.read_text(encoding="utf-8")
    at = text.index('  <script class="trace-data"')
    service = "android.hardware.neuralnetworks@1.3-service-npu"
    dumped = tmp_path / "dumped.html"
    dumped.write_text(text[:at] + _DUMP.format(pid=pid, name=service) + text[at:], "utf-8")
    code, out, err = run_cli("replay", str(dumped), "--set", "apps.camera.priority=low")
    assert code == 0, err
    assert f"  driver npu: pid {pid} ({service})" in out
    assert "set devices.npu.scheduler=global_priority" in err


def test_compilations_inside_recorded_executions_are_shown_apart() -> None:
    """omr1's [NN_LA_PE] sections each hold a prepareModel: the table adds the recorded latency without it and says why."""
    code, out, err = run_cli("replay", str(OMR1))
    assert code == 0, err
    lines = out[out.index("recorded vs replayed latency") :].splitlines()
    at = next(i for i, line in enumerate(lines) if line.split()[:2] == ["app-27005", "recorded"])
    recorded, less, replayed = lines[at].split()[2:], lines[at + 1].split(), lines[at + 2].split()
    assert less[:2] == ["-", "compile"]
    assert replayed[0] == "replayed"
    # 665.661 ms recorded for the median section, 544.885 ms of it in prepareModel::client.
    assert recorded[1] == "665.661"
    assert float(less[3]) < 0.1 * float(recorded[1])
    assert float(less[3]) > float(replayed[2])
    assert (
        "app-27005: 5 of 5 recorded sections hold a compilation (median 544.885 ms): "
        "the app compiled before each execution, the replay compiles once" in out
    )


def test_nnemu_traces_show_no_compile_inside_executions(plain: tuple[int, str, str]) -> None:
    """An nnemu trace compiles before its executions, so no '- compile' row is printed."""
    code, out, err = plain
    assert code == 0, err
    assert "- compile" not in out
    assert "hold a compilation" not in out


def test_scheduler_set_the_replay_shows_changed_nothing_warns() -> None:
    """A scheduler what-if on a replay whose device never had two executions waiting at once
    is named after the summary as changing nothing (as nnemu run names it), and indeed the
    table is the baseline's."""
    sets = ("--set", "devices.hvx.scheduler=global_priority")
    code, out, err = run_cli("replay", "-n", str(OMR1), *sets)
    assert code == 0, err
    (line,) = [line for line in err.splitlines() if "--set" in line]
    assert line.startswith("warning: --set devices.hvx.scheduler changed nothing in this run: ")
    _, baseline, _ = run_cli("replay", "-n", str(OMR1))
    assert _table(out) == _table(baseline)


def test_dtype_of_a_stand_in_model_is_named_as_changing_nothing(tmp_path: Path) -> None:
    """The one-layer stand-in a replay gives an app faster than any mobilenet computes at the
    fastest an operation takes in either dtype: a --set of its dtype is named as changing
    nothing, and the replay is the one without it."""
    path = tmp_path / "burst.html"
    record(REPO / "scenarios/burst_low_latency.yaml", path)
    code, out, err = run_cli("replay", str(path), "--set", "models.hotword_sync-model.dtype=quant8")
    assert code == 0, err
    assert (
        "warning: --set models.hotword_sync-model.dtype cannot change the result: hotword_sync "
        "computes as without it on dsp and the CPU (the same time per operation, power and "
        "memory; each operation at the fastest an operation takes, 1 µs)"
    ) in err
    assert _table(out) == _table(run_cli("replay", str(path))[1])


def test_dtype_of_a_fitted_mobilenet_is_not_named(
    two_trace: Path, plain: tuple[int, str, str]
) -> None:
    """A replayed mobilenet's dtype moves its compute: no warning, and the replay differs."""
    code, out, err = run_cli("replay", str(two_trace), "--set", "models.camera-model.dtype=quant8")
    assert code == 0, err
    assert "warning" not in err
    assert _table(out) != _table(plain[1])
