"""`nnemu replay` on the command line: plan, -n, -l, --set, --save-scenario, manual control."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import attrs
import pytest

from nnemu.hal import Priority
from nnemu.replay import (
    OverrideError,
    apply_overrides,
    build_replay,
    extract_plan,
    loop_problem,
)
from nnemu.scenario import WorkloadKind, load_scenario
from tests.commands import run_cli
from tests.unit.replay.helpers import OMR1, QUICKSTART, assert_balanced, la_pe_begins, record


@pytest.fixture(name="quick_trace")
def _quick_trace(tmp_path: Path) -> Path:
    path = tmp_path / "quickstart.html"
    record(QUICKSTART, path)
    return path


def test_replay_omr1_prints_the_plan_and_runs(tmp_path: Path):
    """The omr1 replay prints what it extracted and assumed, runs 5 executions and writes a valid trace."""
    trace, report = tmp_path / "r.html", tmp_path / "r.json"
    code, out, err = run_cli("replay", str(OMR1), "--trace", str(trace), "--report", str(report))
    assert code == 0, err
    assert "app app-27005: pid 27005" in out
    assert "gaps ms: 793.597, 658.493, 691.891, 813.249" in out
    assert "driver hvx: pid 756 (android.hardware.neuralnetworks@1.0-service-hvx)" in out
    assert "HAL 1.0; 5 executions, median 14.184 ms" in out
    assert "priority, deadline: not in the trace" in out
    assert "assumed (not in the trace):" in out
    assert json.loads(report.read_text())["apps"]["app-27005"]["completed"] == 5
    assert_balanced(trace)
    begins = la_pe_begins(trace)
    assert [b - a for a, b in itertools.pairwise(begins)] == [
        793_597,
        658_493,
        691_891,
        813_249,
    ]


def test_power_use_is_named_as_assumed_and_set_moves_the_energy(quick_trace: Path):
    """No trace carries power use: the replay says which power_usage its energy column
    assumes, and --set of the recorded scenario's value brings the energy down with it."""
    code, out, err = run_cli("replay", str(quick_trace), "-n")
    assert code == 0, err
    assumed = out.split("assumed (not in the trace):")[1].split("\n\n")[0]
    assert "devices.npu.performance.float32/quant8.power_usage: 1, 1 (defaults" in assumed

    def energy(text: str) -> float:
        return float(re.search(r"^npu +1\.3 +\d+ +[\d.]+% +\d+ +([\d.]+)$", text, re.M).group(1))  # type: ignore[union-attr]

    code, lower, err = run_cli(
        "replay", str(quick_trace), "-n", "--set", "devices.npu.performance.float32.power_usage=0.4"
    )
    assert code == 0, err
    assert energy(lower) == pytest.approx(energy(out) * 0.4, rel=0.02)


def test_fast_mode_runs_back_to_back(quick_trace: Path, tmp_path: Path):
    """-n keeps the execution count but ignores the 33.3 ms gaps (a closed loop)."""
    trace = tmp_path / "fast.html"
    code, out, _ = run_cli("replay", str(quick_trace), "-n", "--trace", str(trace))
    assert code == 0
    assert "-n: timestamps ignored" in out
    begins = la_pe_begins(trace)
    assert len(begins) == 30
    gaps = [b - a for a, b in itertools.pairwise(begins)]
    assert max(gaps) < 10_000  # µs: one execution after the other, not 33.3 ms apart
    built = build_replay(extract_plan(str(quick_trace)), fast=True)
    assert built.scenario.apps[0].workload.kind is WorkloadKind.CLOSED_LOOP
    assert built.scenario.apps[0].workload.executions == 30


def test_loop_count_repeats_the_arrivals(quick_trace: Path, tmp_path: Path):
    """-l 2 runs the 30 arrivals twice in one run, the second loop a span plus a gap later."""
    report = tmp_path / "r.json"
    code, out, _ = run_cli("replay", str(quick_trace), "-l", "2", "--report", str(report))
    assert code == 0
    assert "-l 2: arrivals repeated every 999.000 ms" in out
    assert json.loads(report.read_text())["apps"]["camera"]["completed"] == 60
    arrivals = build_replay(extract_plan(str(quick_trace)), loops=2).scenario.apps[0]
    assert arrivals.workload.arrivals_ms[30] == pytest.approx(999.0)


def test_loop_forever_until_interrupted(quick_trace: Path, monkeypatch: pytest.MonkeyPatch):
    """-l without a count replays again and again; two Ctrl-C end it (exit 130)."""
    import nnemu.replay._command as command

    calls = []
    real_run = command.run

    def counting_run(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            stepper = kwargs["attach"].__self__
            stepper.on_sigint(2, None)
            stepper.on_sigint(2, None)
        return real_run(*args, **kwargs)

    monkeypatch.setattr(command, "run", counting_run)
    code, out, err = run_cli("replay", str(quick_trace), "-l")
    assert code == 130
    assert len(calls) == 3
    assert "loop 3" in out
    assert len(re.findall(r"^app +submitted +completed", out, re.M)) == 3
    assert err.splitlines()[-1] == "interrupted by SIGINT"


def test_set_changes_priority_and_device_speed(quick_trace: Path):
    """--set edits the built scenario: a higher priority, a faster device, a timeout."""
    scenario = build_replay(extract_plan(str(quick_trace))).scenario
    changed = apply_overrides(
        scenario,
        [
            "apps.camera.priority=high",
            "devices.npu.performance.float32.exec_time=0.05",
            "apps.camera.execution_timeout_ms=20",
        ],
    )
    assert changed.apps[0].priority is Priority.HIGH
    assert changed.apps[0].execution_timeout_ms == 20
    assert changed.devices[0].performance.float32.exec_time == 0.05
    assert changed.source == scenario.source


def test_set_faster_device_lowers_latency(quick_trace: Path, tmp_path: Path):
    """A what-if run with a device twice as fast has a lower median latency."""
    base, fast = tmp_path / "base.json", tmp_path / "fast.json"
    assert run_cli("replay", str(quick_trace), "--report", str(base))[0] == 0
    ratio = build_replay(extract_plan(str(quick_trace))).scenario.devices[0].performance
    code, out, _ = run_cli(
        "replay",
        str(quick_trace),
        "--report",
        str(fast),
        "--set",
        f"devices.npu.performance.float32.exec_time={ratio.float32.exec_time / 2}",
    )
    assert code == 0
    assert "changed with --set:" in out
    p50 = {
        p: json.loads(p.read_text())["apps"]["camera"]["latency_ms"]["p50"] for p in (base, fast)
    }
    assert p50[fast] < p50[base] * 0.6


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        (
            "apps.camera.priorty=high",
            "--set apps.camera.priorty: unknown key 'priorty'; did you mean 'priority'?",
        ),
        (
            "apps.camera.priority=urgent",
            "--set apps.camera.priority: expected one of low, medium, high, got 'urgent'",
        ),
        ("apps.x.priority=high", "--set apps.x: expected the name of an app (camera), got 'x'"),
        (
            "devices.npu.performance.quant8.exec_time=-1",
            "--set devices.npu.performance.quant8.exec_time: expected a number in [1e-06, 1000000], got -1",
        ),
        ("seeed=3", "--set seeed: unknown key 'seeed'; did you mean 'seed'?"),
        ("priority", "--set priority: expected KEY=VALUE"),
        (
            "apps[0].priority=high",
            "--set apps[0].priority: list entries are named, not numbered: "
            "apps.<app>.priority, e.g. apps.camera.priority",
        ),
    ],
)
def test_bad_set_exits_two_with_the_key(quick_trace: Path, assignment: str, message: str):
    """A bad --set key or value is reported against the key as given, with exit code 2."""
    code, out, err = run_cli("replay", str(quick_trace), "--set", assignment)
    assert code == 2
    assert err.splitlines() == [message]
    assert out == ""


def test_override_error_lists_every_problem(quick_trace: Path):
    """Several bad assignments give one line each."""
    scenario = build_replay(extract_plan(str(quick_trace))).scenario
    with pytest.raises(OverrideError) as info:
        apply_overrides(scenario, ["apps.camera.priorty=high", "ipc.latency_us=-3"])
    assert len(info.value.problems) == 2


def test_override_error_mixes_form_and_scenario_problems(quick_trace: Path):
    """An assignment without '=' is reported together with a misspelt key in another."""
    scenario = build_replay(extract_plan(str(quick_trace))).scenario
    with pytest.raises(OverrideError) as info:
        apply_overrides(scenario, ["bogus", "apps.camera.priorty=high"])
    assert info.value.problems == [
        "--set bogus: expected KEY=VALUE",
        "--set apps.camera.priorty: unknown key 'priorty'; did you mean 'priority'?",
    ]


def test_save_scenario_can_be_run(quick_trace: Path, tmp_path: Path):
    """--save-scenario writes the built scenario; `nnemu run` runs it to the same count."""
    saved = tmp_path / "replay.yaml"
    code, out, _ = run_cli(
        "replay",
        str(quick_trace),
        "--save-scenario",
        str(saved),
        "--set",
        "apps.camera.priority=low",
    )
    assert code == 0
    assert f"scenario written to {saved}" in out
    scenario = load_scenario(saved)
    assert scenario.apps[0].priority is Priority.LOW
    code, out, _ = run_cli("run", str(saved))
    assert code == 0
    assert re.search(r"^camera +30 +30 ", out, re.M)


def test_manual_start_steps_to_a_hal_call_and_quits(quick_trace: Path, tmp_path: Path):
    """-m prompts before the run; `n` stops at a HIDL call; `q` ends with exit 130 and a valid trace."""
    trace = tmp_path / "m.html"
    code, out, err = run_cli(
        "replay", str(quick_trace), "-m", "--trace", str(trace), stdin="n\nq\n"
    )
    assert code == 130
    assert "start of the run" in out
    assert "HAL call HIDL::IDevice::getCapabilities_1_3" in out
    assert err.splitlines()[-1] == f"ended at the prompt (q); the trace so far is in {trace}"
    assert_balanced(trace)


@pytest.mark.parametrize("command", ["run --step", "replay -m"])
def test_q_at_the_prompt_writes_the_report_of_the_run_so_far(
    quick_trace: Path, tmp_path: Path, command: str
):
    """`q` at the prompt of `run --step` or `replay -m` still writes --report (marked
    "interrupted": "q", as a signal's run is marked) and --executions, and a whole trace."""
    trace, report, table = tmp_path / "q.html", tmp_path / "q.json", tmp_path / "q.csv"
    target = ["run", str(QUICKSTART), "--step"] if command == "run --step" else None
    target = target or ["replay", str(quick_trace), "-m"]
    outputs = ["--trace", str(trace), "--report", str(report), "--executions", str(table)]
    code, out, err = run_cli(*target, *outputs, stdin="c 200\nq\n")
    assert code == 130, err
    assert "ended at the prompt (q): the figures cover the run so far" in out
    assert err.splitlines()[-1] == f"ended at the prompt (q); the trace so far is in {trace}"
    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["interrupted"] == "q"
    assert 0 < data["virtual_ms"] < 300  # the full run: 1008 ms
    finished = data["apps"]["camera"]["completed"] + data["apps"]["camera"]["failed"]
    assert 0 < finished == len(table.read_text(encoding="utf-8").splitlines()) - 1
    assert_balanced(trace)


def test_s_runs_to_a_timestamp_then_prompts(quick_trace: Path):
    """-s 0.5 runs without stopping until 0.5 s of virtual time; EOF then continues."""
    code, out, _ = run_cli("replay", str(quick_trace), "-s", "0.5", stdin="l\n")
    assert code == 0
    assert "stop at 0.500000 s" in out
    assert "virtual time 0.4" in out
    assert re.search(r"^camera +30 +30 ", out, re.M)


def test_run_step_gives_run_a_prompt(tmp_path: Path):
    """`nnemu run --step` starts at the prompt; `c 5` and EOF run the scenario to its end."""
    code, out, _ = run_cli("run", str(QUICKSTART), "--step", stdin="c 5\n")
    assert code == 0
    assert out.startswith("[0.000000 s] start of the run")
    assert "stop at 0.005000 s" in out
    assert re.search(r"^camera +30 +30 ", out, re.M)


def test_missing_trace_exits_two(tmp_path: Path):
    """A trace that does not exist is bad input, said as parse and query say it."""
    code, _, err = run_cli("replay", str(tmp_path / "nope.html"))
    assert code == 2
    assert (
        err
        == f"{tmp_path / 'nope.html'}: error: cannot read the trace: No such file or directory\n"
    )


def test_loop_count_past_an_hour_is_refused_naming_l():
    """-l N whose arrivals would end past the one-hour limit exits 2 naming -l and the most N allowed."""
    code, out, err = run_cli("replay", str(OMR1), "-l", "20000")
    assert code == 2
    assert err == (
        "-l 20000: the last arrival would come at 73998737.256 ms, past a scenario's limit"
        " of 3600000 ms (one hour); use -l 973 at most\n"
    )
    assert "arrivals_ms" not in err
    assert out == ""


def test_loop_limit_is_the_last_count_that_builds():
    """The most loops named is exactly the last count whose scenario builds; one more is refused."""
    plan = extract_plan(str(OMR1))
    assert loop_problem(plan, fast=False, loops=973) is None
    build_replay(plan, loops=973)
    assert "use -l 973 at most" in (loop_problem(plan, fast=False, loops=974) or "")


def test_fast_loop_count_past_the_execution_limit_is_refused():
    """-n -l N with more than ten million executions per app exits 2 naming -l and its limit."""
    code, _, err = run_cli("replay", str(OMR1), "-n", "-l", "3000000")
    assert code == 2
    assert err.startswith("-l 3000000: an app would run 15000000 executions")
    assert "use -l 2000000 at most" in err


def test_trace_spanning_past_an_hour_is_refused_naming_the_trace():
    """A trace whose arrivals span more than an hour is refused naming the trace and -n, even once."""
    plan = extract_plan(str(OMR1))
    app = plan.apps[0]
    late = (*app.arrivals_ns, app.arrivals_ns[0] + 3_700_000 * 1_000_000)
    long_plan = attrs.evolve(plan, apps=(attrs.evolve(app, arrivals_ns=late),))
    problem = loop_problem(long_plan, fast=False, loops=1)
    assert problem == (
        f"{OMR1}: the trace's arrivals span 3700000.000 ms, past a scenario's limit of"
        " 3600000 ms (one hour); replay it with -n"
    )
    assert loop_problem(long_plan, fast=True, loops=1) is None


def test_a_set_value_is_named_under_the_assumed_or_derived_line_it_replaces(tmp_path: Path):
    """An assumed or derived value a --set changed is followed by the --set that ran instead
    ("partly" when the line gives other values too); lines no --set touches are not."""
    trace = tmp_path / "two.html"
    record(QUICKSTART.parent / "two_apps_one_npu.yaml", trace)
    code, out, err = run_cli(
        "replay",
        str(trace),
        "--set",
        "apps.camera.priority=medium",
        "--set",
        "devices.npu.scheduler=global_priority",
        "--set",
        "devices.npu.preemption=checkpoint",
        "--set",
        "ipc.latency_us=80",
    )
    assert code == 0, err
    lines = out.splitlines()

    def below(start: str) -> str:
        return lines[next(i for i, line in enumerate(lines) if line.startswith(start)) + 1]

    assert below("  apps.camera.priority: high, no deadline (nnemu::qos)") == (
        "    partly replaced with --set apps.camera.priority=medium"
    )
    assert below("  devices.npu: type accelerator, 1 compute unit") == (
        "    partly replaced with --set devices.npu.scheduler=global_priority, "
        "--set devices.npu.preemption=checkpoint"
    )
    assert below("  ipc.latency_us: 50 (median of") == "    replaced with --set ipc.latency_us=80"
    assert not below("  apps.indexer.priority: low, no deadline").startswith("    ")
    assert sum("replaced with" in line for line in lines) == 3
