"""``nnemu run --set`` and ``nnemu run --replications``: changes, replications, their summary."""

from __future__ import annotations

import json
import math
import signal
from pathlib import Path

import pytest

import nnemu._emulator
from nnemu.errors import Interrupted
from nnemu.stats import mean_interval
from tests.commands import run_cli

REPO = Path(__file__).resolve().parents[3]
TWO_APPS = str(REPO / "scenarios/two_apps_one_npu.yaml")


def test_set_changes_the_run(tmp_path: Path) -> None:
    """Each --set changes the scenario that runs, as the report shows."""
    report = tmp_path / "r.json"
    code, out, _ = run_cli(
        "run",
        TWO_APPS,
        "--set",
        "duration_ms=1000",
        "--set",
        "seed=5",
        "--set",
        "expect=[]",
        "--report",
        str(report),
    )
    assert code == 0
    assert "seed 5  virtual 1000.000 ms" in out
    data = json.loads(report.read_text())
    assert (data["seed"], data["virtual_ms"]) == (5, 1000.0)


def test_set_reads_an_enum_value_in_any_case() -> None:
    """``--set ...priority=HIGH`` (as every output prints it) is the same change as ``high``."""
    args = ("run", TWO_APPS, "--set", "expect=[]", "--set", "devices.npu.scheduler=GLOBAL_PRIORITY")
    lower = run_cli(*args, "--set", "apps.indexer.priority=high")
    upper = run_cli(*args, "--set", "apps.indexer.priority=HIGH")
    assert upper[0] == lower[0] == 0
    assert upper == lower


def test_set_that_cannot_change_the_run_is_named() -> None:
    """A priority change the per-app scheduler never compares is warned about, with the way out,
    and a change that does matter gets no warning."""
    code, _, err = run_cli(
        "run", TWO_APPS, "--set", "expect=[]", "--set", "apps.indexer.priority=high"
    )
    assert code == 0
    assert err.startswith("warning: --set apps.indexer.priority cannot change the result:")
    assert "set devices.npu.scheduler=global_priority" in err
    contended = (
        *("--set", "expect=[]", "--set", "devices.npu.scheduler=global_priority"),
        *("--set", "apps.indexer.workload={kind: poisson, rate_hz: 40}"),
        *("--set", "apps.indexer.threads=4"),
    )
    code, high, err = run_cli("run", TWO_APPS, *contended, "--set", "apps.indexer.priority=high")
    assert code == 0
    assert "warning" not in err
    assert high != run_cli("run", TWO_APPS, *contended)[1]


@pytest.mark.parametrize(
    ("assignment", "shown"),
    [("seed=11", "11"), ("ipc.jitter=0", "0"), ("apps.camera.priority=high", "high")],
)
def test_set_to_the_value_the_scenario_has_is_named(assignment: str, shown: str) -> None:
    """A --set that gives a key the value the scenario already has is named, not silently run."""
    key = assignment.partition("=")[0]
    code, _, err = run_cli("run", TWO_APPS, "--set", assignment)
    assert code == 0
    assert err == (
        f"warning: --set {key} changes nothing: the scenario already has {key} = {shown}\n"
    )


def test_drop_late_frames_without_a_timeout_is_named() -> None:
    """drop_late_frames on an app without an execution timeout is warned about, with the way
    out; with a timeout it is not."""
    code, _, err = run_cli("run", TWO_APPS, "--set", "apps.camera.drop_late_frames=true")
    assert code == 0
    assert err == (
        "warning: --set apps.camera.drop_late_frames cannot change the result: a frame is "
        "dropped only when it is older than its execution timeout, and camera has none; add "
        "apps.camera.execution_timeout_ms=<ms> (with apps.camera.devices=[npu])\n"
    )
    code, _, err = run_cli(
        "run",
        TWO_APPS,
        *("--set", "apps.camera.devices=[npu]", "--set", "apps.camera.execution_timeout_ms=8"),
        *("--set", "apps.camera.drop_late_frames=true", "--set", "expect=[]"),
    )
    assert code == 0
    assert "warning" not in err


def test_scheduler_set_that_never_had_a_choice_is_named() -> None:
    """A scheduler the run never used (never two executions waiting at once, no preemption, no
    deadlines) is named after the run; under contention it is not."""
    code, out, err = run_cli("run", TWO_APPS, "--set", "devices.npu.scheduler=global_priority")
    assert code == 0
    assert err == (
        "warning: --set devices.npu.scheduler changed nothing in this run: npu never had two "
        "executions waiting for a unit at once, so its scheduler never chose; with preemption "
        "(devices.npu.preemption=checkpoint) a higher-priority arrival takes a running "
        "execution's unit\n"
    )
    _, baseline, _ = run_cli("run", TWO_APPS)
    assert out == baseline
    code, _, err = run_cli(
        "run",
        TWO_APPS,
        *("--set", "devices.npu.scheduler=global_priority", "--set", "expect=[]"),
        *("--set", "apps.indexer.workload={kind: poisson, rate_hz: 40}"),
        *("--set", "apps.indexer.threads=4"),
    )
    assert code == 0
    assert "warning" not in err


def test_priority_set_that_never_had_a_choice_is_named() -> None:
    """Under global_priority without preemption, an app's priority that no pick compared is
    named after the run."""
    code, _, err = run_cli(
        "run",
        TWO_APPS,
        *("--set", "devices.npu.scheduler=global_priority", "--set", "apps.indexer.priority=high"),
    )
    assert code == 0
    assert err.endswith(
        "warning: --set apps.indexer.priority changed nothing in this run: npu never had two "
        "executions waiting for a unit at once, so no scheduler compared priorities; with "
        "preemption (devices.npu.preemption=checkpoint) a higher-priority arrival takes a "
        "running execution's unit\n"
    )


QUICKSTART = str(REPO / "scenarios/quickstart.yaml")
BUSY_RETRIES = str(REPO / "scenarios/qos_busy_retries.yaml")


def test_retry_set_of_an_app_that_never_failed_transiently_is_named() -> None:
    """A retry policy changed for an app none of whose attempts ended in a TRANSIENT error is
    named after the run, and the run is the same; where attempts were retried it is not."""
    code, out, err = run_cli("run", QUICKSTART, "--set", "apps.camera.retry.max_attempts=3")
    assert code == 0
    assert err == (
        "warning: --set apps.camera.retry.max_attempts changed nothing in this run: no attempt "
        "of camera ended in a TRANSIENT error (RESOURCE_EXHAUSTED_TRANSIENT, "
        "MISSED_DEADLINE_TRANSIENT), so its retry policy was never asked\n"
    )
    assert out == run_cli("run", QUICKSTART)[1]
    code, out, err = run_cli(
        "run", BUSY_RETRIES, "--set", "apps.batcher.retry.max_attempts=0", "--set", "expect=[]"
    )
    assert code == 0
    assert "warning" not in err
    assert out != run_cli("run", BUSY_RETRIES, "--set", "expect=[]")[1]


def test_queue_limit_no_arrival_reached_is_named() -> None:
    """A queue limit above the longest queue an arrival at a busy device met (and the scenario's
    own limit) is named after the run, with that length; one that turned executions away (to
    the CPU) is not."""
    code, out, err = run_cli("run", TWO_APPS, "--set", "devices.npu.queue_limit=1")
    assert code == 0
    assert err == (
        "warning: --set devices.npu.queue_limit changed nothing in this run: executions that "
        "arrived with every unit of npu busy found at most 0 waiting, below both the "
        "scenario's limit (unbounded) and this one (1), so neither turned one away\n"
    )
    assert out == run_cli("run", TWO_APPS)[1]
    code, out, err = run_cli(
        "run", TWO_APPS, "--set", "devices.npu.queue_limit=0", "--set", "expect=[]"
    )
    assert code == 0
    assert "warning" not in err
    assert out != run_cli("run", TWO_APPS, "--set", "expect=[]")[1]


def test_raising_a_queue_limit_the_run_reached_is_not_named() -> None:
    """Raising a device's queue limit that the scenario's run filled is not named: with the
    scenario's lower limit the run would have turned executions away."""
    code, _, err = run_cli(
        "run", BUSY_RETRIES, "--set", "devices.npu.queue_limit=100", "--set", "expect=[]"
    )
    assert code == 0
    assert "warning" not in err


def test_unused_sets_are_named_once_for_all_replications() -> None:
    """With --replications, a --set that changed nothing in every replication is named once,
    after the summary; one a replication used is not."""
    code, out, err = run_cli(
        "run",
        QUICKSTART,
        *("--replications", "3", "--set", "apps.camera.retry.max_attempts=3"),
        *("--set", "devices.npu.scheduler=global_priority"),
    )
    assert code == 0
    assert out.startswith("scenario quickstart  seeds 7..9 (3 replications)")
    assert err.splitlines() == [
        "warning: --set apps.camera.retry.max_attempts changed nothing in any of the 3 "
        "replications: no attempt of camera ended in a TRANSIENT error "
        "(RESOURCE_EXHAUSTED_TRANSIENT, MISSED_DEADLINE_TRANSIENT), so its retry policy was "
        "never asked",
        "warning: --set devices.npu.scheduler changed nothing in any of the 3 replications: npu "
        "never had two executions waiting for a unit at once, so its scheduler never chose; "
        "with preemption (devices.npu.preemption=checkpoint) a higher-priority arrival takes a "
        "running execution's unit",
    ]
    code, _, err = run_cli(
        "run",
        BUSY_RETRIES,
        *("--replications", "2", "--set", "apps.batcher.retry.max_attempts=3"),
        *("--set", "expect=[]"),
    )
    assert code == 0
    assert "warning" not in err


def test_set_with_a_bad_key_exits_two_with_replays_message() -> None:
    """A misspelt key exits 2 with the message replay --set gives, and nothing runs."""
    code, out, err = run_cli("run", TWO_APPS, "--set", "apps.camera.priorty=high")
    assert code == 2
    assert out == ""
    assert err == "--set apps.camera.priorty: unknown key 'priorty'; did you mean 'priority'?\n"


def test_set_reports_every_problem_of_every_assignment() -> None:
    """A --set without '=' does not hide a misspelt key, an unknown app or a bad value in others."""
    code, out, err = run_cli(
        "run",
        TWO_APPS,
        *("--set", "bogus", "--set", "apps.camera.priorty=high"),
        *("--set", "apps.x.priority=high", "--set", "ipc.latency_us=-3"),
    )
    assert code == 2
    assert out == ""
    lines = err.splitlines()
    assert lines[:2] == [
        "--set bogus: expected KEY=VALUE",
        "--set apps.x: expected the name of an app (camera, indexer), got 'x'",
    ]
    assert sorted(lines[2:]) == [
        "--set apps.camera.priorty: unknown key 'priorty'; did you mean 'priority'?",
        "--set ipc.latency_us: expected a number in [0, 3600000000], got -3",
    ]


def test_replications_report_holds_each_seeds_values(tmp_path: Path) -> None:
    """Replication i is the run with seed+i: its values are those of single runs with those seeds."""
    report = tmp_path / "reps.json"
    code, out, _ = run_cli(
        "run", TWO_APPS, "--replications", "3", "--seed", "20", "--report", str(report)
    )
    assert code == 0
    assert "seeds 20..22 (3 replications)" in out
    data = json.loads(report.read_text())
    assert data["kind"] == "nnemu-replications"
    assert data["seeds"] == [20, 21, 22]
    singles = []
    for seed in (20, 21, 22):
        single = tmp_path / f"{seed}.json"
        assert run_cli("run", TWO_APPS, "--seed", str(seed), "--report", str(single))[0] == 0
        singles.append(json.loads(single.read_text()))
    p99 = data["metrics"]["apps.camera.latency_ms.p99"]
    assert p99["values"] == [s["apps"]["camera"]["latency_ms"]["p99"] for s in singles]
    interval = mean_interval(p99["values"])
    assert (p99["mean"], p99["half_width"], p99["n"]) == (
        interval.mean,
        interval.half_width,
        3,
    )
    assert "seed" not in data["metrics"]


def test_replications_summary_prints_means_and_intervals() -> None:
    """The summary gives each figure's mean and, below it, its 95% half-width."""
    code, out, _ = run_cli("run", TWO_APPS, "--replications", "4")
    assert code == 0
    lines = out.splitlines()
    camera = next(i for i, line in enumerate(lines) if line.startswith("camera"))
    assert lines[camera + 1].startswith("  ± 95% CI")
    assert "expectations (on the means over 4 replications)" in out


def test_one_replication_has_no_interval() -> None:
    """With one replication the '± 95% CI' row shows '-' (one value has no spread to estimate),
    not an interval of 0 that reads as certainty."""
    code, out, _ = run_cli("run", str(REPO / "scenarios/quickstart.yaml"), "--replications", "1")
    assert code == 0
    lines = out.splitlines()
    camera = next(i for i, line in enumerate(lines) if line.startswith("camera"))
    assert lines[camera + 1].split() == ["±", "95%", "CI", *["-"] * 8]


def test_replications_are_deterministic(tmp_path: Path) -> None:
    """The same scenario and replications give the same summary and report bytes."""
    outputs = []
    for name in ("a.json", "b.json"):
        code, out, _ = run_cli(
            "run", TWO_APPS, "--replications", "3", "--report", str(tmp_path / name)
        )
        assert code == 0
        outputs.append((out.replace(name, ""), (tmp_path / name).read_bytes()))
    assert outputs[0] == outputs[1]


def test_expectations_are_evaluated_on_the_means(tmp_path: Path) -> None:
    """An expectation that fails on the mean exits 1 and says it was judged on the means."""
    code, out, err = run_cli(
        "run",
        TWO_APPS,
        "--replications",
        "2",
        "--set",
        'expect=["apps.indexer.completed > 10000"]',
    )
    assert code == 1
    assert "  FAIL apps.indexer.completed > 10000  (mean " in out
    assert err == "expectation failed (on the means): apps.indexer.completed > 10000\n"


@pytest.mark.parametrize("option", ["--trace", "--html", "--plots"])
def test_replications_refuse_single_run_outputs(option: str, tmp_path: Path) -> None:
    """An output of one run (trace, pictures) with --replications exits 2 before running."""
    code, out, err = run_cli(
        "run", TWO_APPS, "--replications", "2", option, str(tmp_path / "x.html")
    )
    assert code == 2
    assert out == ""
    assert err.startswith(f"{option}: not with --replications")


def test_replications_must_be_positive() -> None:
    """--replications 0 is a usage error (exit 2)."""
    with pytest.raises(SystemExit) as exit_info:
        run_cli("run", TWO_APPS, "--replications", "0")
    assert exit_info.value.code == 2


def test_interrupted_replications_summarise_those_finished(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C in the third replication prints and writes the two finished ones and exits 130."""
    real_run = nnemu._emulator.run
    calls = []

    def run_until_third(*args, **kwargs):
        calls.append(kwargs["seed"])
        if len(calls) == 3:
            raise Interrupted(signal.SIGINT)
        return real_run(*args, **kwargs)

    monkeypatch.setattr(nnemu._emulator, "run", run_until_third)
    report = tmp_path / "reps.json"
    code, out, err = run_cli("run", TWO_APPS, "--replications", "5", "--report", str(report))
    assert code == 130
    assert "seeds 11..12 (2 replications)" in out
    assert "interrupted by SIGINT: 2 of 5 replications finished" in out
    assert "interrupted by SIGINT: the summary covers the 2 replications finished" in err
    data = json.loads(report.read_text())
    assert (data["interrupted"], data["replications"], data["requested"]) == ("SIGINT", 2, 5)
    assert all(len(metric["values"]) == 2 for metric in data["metrics"].values())
    assert not any(math.isnan(metric["mean"]) for metric in data["metrics"].values())


def test_one_replication_is_named_in_the_singular(monkeypatch: pytest.MonkeyPatch) -> None:
    """A summary of one replication (or one finished before Ctrl-C) says "1 replication"."""
    real_run = nnemu._emulator.run
    calls = []

    def run_until_second(*args, **kwargs):
        calls.append(kwargs["seed"])
        if len(calls) == 2:
            raise Interrupted(signal.SIGINT)
        return real_run(*args, **kwargs)

    monkeypatch.setattr(nnemu._emulator, "run", run_until_second)
    code, out, err = run_cli("run", TWO_APPS, "--replications", "3")
    assert code == 130
    assert "seed 11 (1 replication)  virtual" in out
    assert "expectations (on the means over 1 replication)" in out
    assert "interrupted by SIGINT: the summary covers the 1 replication finished" in err


def test_replications_of_an_app_that_never_ran() -> None:
    """An app whose compilation fails shows no latency and its compile result; an expectation
    on its latency fails and says why, as on one run (the report's 0 is no measurement)."""
    code, out, err = run_cli(
        "run",
        str(REPO / "scenarios/qos_model_too_large.yaml"),
        "--replications",
        "2",
        "--set",
        'expect=["apps.pinned.latency_ms.p99 == 0"]',
    )
    assert code == 1
    pinned = next(line for line in out.splitlines() if line.startswith("pinned"))
    assert pinned.split()[6:] == ["-", "-", "-", "compilation", "RESOURCE_EXHAUSTED_PERSISTENT"]
    assert "  FAIL apps.pinned.latency_ms.p99 == 0  (pinned completed no execution)\n" in out
    assert err.endswith(
        "expectation failed (on the means): apps.pinned.latency_ms.p99 == 0 "
        "(pinned completed no execution)\n"
    )


def test_replications_show_the_latency_split_and_energy_of_the_runs(tmp_path: Path) -> None:
    """The split line and the energy column are the means of what each seed's run reports,
    and the replications report holds each seed's value of both."""
    report = tmp_path / "r.json"
    code, out, _ = run_cli("run", TWO_APPS, "--replications", "2", "--report", str(report))
    assert code == 0
    singles = []
    for seed in (11, 12):
        single = tmp_path / f"{seed}.json"
        assert run_cli("run", TWO_APPS, "--seed", str(seed), "--report", str(single))[0] == 0
        singles.append(json.loads(single.read_text()))
    lines = out.splitlines()
    head = lines.index(next(line for line in lines if line.startswith("mean ms")))
    assert lines[head].split() == [
        "mean", "ms", "latency", "app_wait", "binder_wait", "device_queue", "preempted", "ipc",
        "driver_launch", "compute", "retry", "runtime",
    ]  # fmt: skip
    camera = lines[head + 1].split()
    split = [s["apps"]["camera"]["latency_split_ms"] for s in singles]
    assert camera[0] == "camera"
    assert float(camera[8]) == pytest.approx(
        (split[0]["compute"] + split[1]["compute"]) / 2, abs=1e-3
    )
    assert lines[head + 2].startswith("  ± 95% CI")
    device_head = next(line for line in lines if line.startswith("device"))
    assert device_head.split()[-1] == "energy"
    npu = next(line for line in lines if line.startswith("npu")).split()
    energy = [s["devices"]["npu"]["energy"] for s in singles]
    assert float(npu[-1]) == pytest.approx(sum(energy) / 2, abs=0.05)
    metrics = json.loads(report.read_text())["metrics"]
    assert metrics["devices.npu.energy"]["values"] == energy
    assert metrics["apps.camera.latency_split_ms.device_queue"]["values"] == [
        s["device_queue"] for s in split
    ]


def test_performance_of_a_type_no_operation_has_is_named() -> None:
    """A device's float32 speed changed under a quantized model is named as changing nothing
    (its operations' times, power and memory are those without it), and the run is the one
    without it; the quant8 speed, which the model uses, changes the run with no warning."""
    code, out, err = run_cli(
        "run", QUICKSTART, "--set", "devices.npu.performance.float32.exec_time=0.5"
    )
    assert code == 0
    assert err == (
        "warning: --set devices.npu.performance.float32.exec_time cannot change the result: "
        "camera computes as without it on npu and the CPU (the same time per operation, power "
        "and memory)\n"
    )
    assert out == run_cli("run", QUICKSTART)[1]
    code, out, err = run_cli(
        "run", QUICKSTART, "--set", "devices.npu.performance.quant8.exec_time=0.5"
    )
    assert "warning" not in err
    assert out != run_cli("run", QUICKSTART)[1]
