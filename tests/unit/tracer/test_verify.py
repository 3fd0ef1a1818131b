"""``nnemu verify``: the ground truth agrees with the parsed trace on every shipped scenario."""

from __future__ import annotations

import io
import re
from pathlib import Path

import attrs
import pytest

from nnemu.parser import ParseResult, format_text, parse_file
from nnemu.scenario import load_scenario, load_scenario_text
from nnemu.tracer import GroundTruth, Layer, Phase
from nnemu.verify import (
    CellResult,
    compare,
    format_verification,
    run_labels,
    run_verify_command,
    run_with_truth,
)
from tests.unit.tracer.helpers import scenario_text

_ROOT = Path(__file__).resolve().parents[3]
SCENARIOS = sorted(
    [*(_ROOT / "scenarios").glob("**/*.yaml"), *(_ROOT / "nnemu/demo/scenarios").glob("*.yaml")]
)


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_verify_passes_on_every_scenario(path: Path):
    """Every cell of every run agrees within 1 µs, or is listed as not reconstructable."""
    out, err = io.StringIO(), io.StringIO()
    code = run_verify_command(str(path), seed=None, trace=None, stdout=out, stderr=err)
    assert code == 0, out.getvalue() + err.getvalue()
    assert out.getvalue().rstrip().endswith("verify: ok")


def test_verify_bad_scenario_exits_2(tmp_path: Path):
    """A malformed scenario prints its problems and exits 2."""
    path = tmp_path / "bad.yaml"
    path.write_text("name: x\ndevices: 5\napps: nope\n", encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    assert run_verify_command(str(path), seed=None, trace=None, stdout=out, stderr=err) == 2
    assert err.getvalue().splitlines() == [
        f"{path}:2:10: devices: expected a list, got 5",
        f"{path}:3:7: apps: expected a list, got 'nope'",
    ]


def test_verify_takes_run_s_set_changes():
    """``nnemu verify --set`` verifies the changed scenario (a what-if such as the AIDL HAL
    for a HIDL device: its trace holds AIDL marks), and a change that cannot apply exits 2
    before the run, as ``nnemu run --set`` does."""
    path = str(_ROOT / "scenarios" / "two_apps_one_npu.yaml")
    out, err = io.StringIO(), io.StringIO()
    code = run_verify_command(
        path,
        seed=None,
        trace=None,
        stdout=out,
        stderr=err,
        sets=["devices.npu.hal_version=aidl-v4"],
    )
    assert (code, err.getvalue()) == (0, "")
    assert out.getvalue().rstrip().endswith("verify: ok")
    out, err = io.StringIO(), io.StringIO()
    sets = ["devices.nope.compute_units=2"]
    code = run_verify_command(path, seed=None, trace=None, stdout=out, stderr=err, sets=sets)
    assert (code, out.getvalue()) == (2, "")
    assert err.getvalue() == "--set devices.nope: expected the name of a device (npu), got 'nope'\n"


def test_ground_truth_of_a_sync_execution():
    """The truth applies the contract: PIO is part of runtime PE, IPC time is inside runtime time."""
    truth = GroundTruth()
    run_with_truth(load_scenario_text(scenario_text(executions=1, preset="add")), truth)
    (only,) = truth.runs
    assert only.starting_app == "app"
    assert only.executions == 1
    assert only.unreconstructable == {}
    assert only.cell_ns(Layer.RUNTIME, Phase.EXECUTION) > only.cell_ns(Layer.IPC, Phase.EXECUTION)
    assert (
        only.cell_ns(Layer.IPC, Phase.EXECUTION) > only.cell_ns(Layer.DRIVER, Phase.EXECUTION) > 0
    )
    assert only.cell_ns(Layer.RUNTIME, Phase.COMPILATION) > 0
    kinds = {p.kind for p in only.processes}
    assert kinds == {"app", "driver"}


def test_verify_fails_a_run_with_no_data_for_an_app_that_executed():
    """An empty parsed run of an app that executed fails verify instead of "cells agree"."""
    from nnemu.parser import ParseResult, RunStats
    from nnemu.verify import compare

    truth = GroundTruth()
    run_with_truth(load_scenario_text(scenario_text(executions=2, preset="add")), truth)
    (true_run,) = truth.runs
    empty = RunStats.from_totals(
        starting_mark="B|1|[NN_LA_PO]app",
        totals_ns={},
        execution_counts={},
        pid=str(true_run.pid),
    )
    result = compare(ParseResult(runs=[empty], diagnostics=[]), truth.runs)
    assert not result.passed
    assert result.run_count_problem is not None
    assert "no data in the trace for an app that executed 2 times" in result.run_count_problem


def test_verify_counts_missing_runs_in_words(tmp_path: Path):
    """A parse with fewer runs than the truth says how many in words ("1 run", not "1 runs")."""
    scenario = Path(__file__).resolve().parents[3] / "scenarios" / "two_apps_one_npu.yaml"
    trace = tmp_path / "trace.html"
    truth = GroundTruth()
    run_with_truth(load_scenario(scenario), truth, trace=str(trace))
    first = ParseResult(runs=parse_file(trace).runs[:1], diagnostics=[])
    result = compare(first, truth.runs)
    assert result.run_count_problem == "the parser found 1 run, the ground truth has 2"


def test_verify_reads_back_a_chrome_json_trace(tmp_path: Path):
    """``verify --trace x.json`` writes the Chrome JSON trace and reads it back."""
    out, err = io.StringIO(), io.StringIO()
    scenario = Path(__file__).resolve().parents[3] / "scenarios" / "two_apps_one_npu.yaml"
    trace = tmp_path / "trace.json"
    code = run_verify_command(str(scenario), seed=None, trace=str(trace), stdout=out, stderr=err)
    assert code == 0, out.getvalue() + err.getvalue()
    assert out.getvalue().startswith("camera (pid 707), run 1 of 1: 89 executions, ")
    assert "\nindexer (pid 713), run 1 of 1: 226 executions, " in out.getvalue()


def test_verify_checks_the_application_total_self_time(tmp_path: Path):
    """The truth's own sweep gives the Application's Total self time of an app executing on
    two threads at once; a parser that subtracted the overlapping runtime time twice fails."""
    scenario = Path(__file__).resolve().parents[3] / "scenarios" / "legacy_hal10_async.yaml"
    trace = tmp_path / "trace.html"
    truth = GroundTruth()
    run_with_truth(load_scenario(scenario), truth, trace=str(trace))
    parsed = parse_file(trace)
    (run,) = parsed.runs
    (true_run,) = truth.runs
    assert run.runtime_overlap_ns > 0
    assert true_run.runtime_wall_ns < run.totals_ns(Layer.RUNTIME, Phase.OVERALL)
    assert run.application_total_self_ns() == true_run.application_total_self_ns() >= 0
    assert compare(parsed, truth.runs).passed
    # Android's rule: the span minus the runtime's Total summed over threads.
    android = ParseResult(runs=[attrs.evolve(run, runtime_overlap_ns=0)], diagnostics=[])
    result = compare(android, truth.runs)
    assert not result.passed
    (differs,) = [cell for cell in result.cells if not cell.agrees]
    assert differs.self_time
    assert differs.label == "LA_PO self"
    assert differs.parsed_ns < 0
    out = io.StringIO()
    format_verification(result, truth.runs, out)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("mlbench (pid 707), run 1 of 1: 40 executions, ")
    assert lines[2].split() == ["run", "cell", "trace", "us", "truth", "us", "diff", "us", "status"]
    assert lines[3].startswith(
        "mlbench (pid 707), run 1 of 1  LA_PO self (Application, Total in the self-time table) "
    )
    assert lines[3].endswith("DIFFERS")


def test_verify_names_runs_as_the_parser_titles_them(tmp_path: Path):
    """Verify's runs carry the parser's per-process 1-based "run N of M", as ``nnemu parse`` prints."""
    scenario = Path(__file__).resolve().parents[3] / "scenarios" / "two_apps_one_npu.yaml"
    trace = tmp_path / "trace.html"
    truth = GroundTruth()
    run_with_truth(load_scenario(scenario), truth, trace=str(trace))
    titles = [
        line.removeprefix("=== process ")
        for line in format_text(parse_file(trace)).splitlines()
        if line.startswith("=== process ")
    ]
    assert (
        run_labels(truth.runs)
        == titles
        == [
            "camera (pid 707), run 1 of 1",
            "indexer (pid 713), run 1 of 1",
        ]
    )


def test_a_differing_cell_is_named_by_the_row_and_column_of_parses_table(tmp_path: Path):
    """A trace whose driver execution was stretched by hand by 1.5 ms fails with the cells it
    moves named as ``nnemu parse --total-times`` prints them, each with its difference."""
    scenario = Path(__file__).resolve().parents[3] / "scenarios" / "quickstart.yaml"
    trace = tmp_path / "trace.txt"
    truth = GroundTruth()
    run_with_truth(load_scenario(scenario), truth, trace=str(trace))
    lines = trace.read_text("utf-8").splitlines(keepends=True)
    # The first synchronous server call of the driver ends 1.5 ms later.
    begin = next(i for i, line in enumerate(lines) if "executeSynchronously_1_3::server" in line)
    task = lines[begin].split()[0]
    depth = 0
    for at in range(begin, len(lines)):
        if lines[at].split()[:1] != [task]:
            continue
        depth += 1 if ": B|" in lines[at] else -1
        if depth == 0:
            stamp = re.search(r" (\d+)\.(\d{6}): ", lines[at])
            assert stamp is not None
            later = int(stamp[1]) * 1_000_000 + int(stamp[2]) + 1500
            moved = f" {later // 1_000_000}.{later % 1_000_000:06d}: "
            lines[at] = lines[at].replace(stamp[0], moved)
            break
    trace.write_text("".join(lines), "utf-8")
    result = compare(parse_file(trace), truth.runs)
    assert not result.passed
    out = io.StringIO()
    format_verification(result, truth.runs, out)
    differs = [line for line in out.getvalue().splitlines() if line.endswith("DIFFERS")]
    assert len(differs) == 2
    assert "  LD_PE (Driver, Ex. total)  " in differs[0]
    assert "  LD_PO (Driver, Total)  " in differs[1]
    assert [line.split()[-2] for line in differs] == ["1500.000", "1500.000"]


def test_cells_the_table_has_no_column_for_are_named_by_their_json_key():
    """A sub-phase with no column of its own (Compute is derived) is named as --json keys it."""
    cell = CellResult(
        run=0, layer=Layer.DRIVER, phase=Phase.COMPUTATION, parsed_ns=0, truth_ns=0, reasons=()
    )
    assert cell.where == "Driver, PCO in --json --total-times"
