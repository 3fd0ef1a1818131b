"""No output overwrites an input or another output: such a command is refused, exit 2, before
it reads or writes anything (``nnemu._outputs``)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.commands import run_cli

ROOT = Path(__file__).resolve().parents[3]
QUICKSTART = ROOT / "scenarios" / "quickstart.yaml"


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    path = tmp_path / "s.yaml"
    shutil.copy(QUICKSTART, path)
    return path


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A short systrace of the quickstart scenario (kept unchanged by every test)."""
    path = tmp_path_factory.mktemp("trace") / "t.html"
    code, _, err = run_cli("run", str(QUICKSTART), "--trace", str(path))
    assert code == 0, err
    return path


@pytest.mark.parametrize(
    ("command", "option", "what"),
    [
        ("run", "--trace", "trace"),
        ("run", "--report", "report"),
        ("run", "--html", "pictures"),
        ("verify", "--trace", "trace"),
    ],
)
def test_an_output_that_is_the_scenario_is_refused(
    scenario: Path, command: str, option: str, what: str
) -> None:
    """``nnemu run s.yaml --trace s.yaml`` leaves the scenario as it was, and says why."""
    before = scenario.read_bytes()
    code, out, err = run_cli(command, str(scenario), option, str(scenario))
    assert code == 2
    assert err == (
        f"{scenario}: cannot write the {what}: it is {scenario}, "
        "the scenario this command reads; not overwriting it\n"
    )
    assert out == ""
    assert scenario.read_bytes() == before


@pytest.mark.parametrize("link", [os.link, os.symlink], ids=["hard", "symbolic"])
def test_a_link_to_the_scenario_is_the_scenario(scenario: Path, link: object) -> None:
    """A hard or symbolic link to the input is the input: refused too."""
    other = scenario.parent / "other.json"
    link(scenario, other)  # type: ignore[operator]
    before = scenario.read_bytes()
    code, _, err = run_cli("run", str(scenario), "--report", str(other))
    assert code == 2
    assert f"{other}: cannot write the report: it is {scenario}, the scenario" in err
    assert scenario.read_bytes() == before


@pytest.mark.parametrize(
    ("option", "what"),
    [
        ("--trace", "trace"),
        ("--report", "report"),
        ("--save-scenario", "scenario"),
    ],
)
@pytest.mark.parametrize("suffix", [".html", ".pftrace"])
def test_replay_does_not_write_over_its_trace(
    trace: Path, tmp_path: Path, option: str, what: str, suffix: str
) -> None:
    """``nnemu replay t.html -n --trace t.html`` (or ``--report``, ``--save-scenario``) is refused."""
    source = tmp_path / f"t{suffix}"
    if suffix == ".html":
        shutil.copy(trace, source)
    else:
        assert run_cli("run", str(QUICKSTART), "--trace", str(source))[0] == 0
    before = source.read_bytes()
    code, _, err = run_cli("replay", str(source), "-n", option, str(source))
    assert code == 2
    assert err == (
        f"{source}: cannot write the {what}: it is {source}, "
        "the trace this command reads; not overwriting it\n"
    )
    assert source.read_bytes() == before


def test_two_outputs_on_one_path_are_refused(scenario: Path, tmp_path: Path) -> None:
    """``--trace x.json --report x.json`` would keep only the report: refused, nothing written."""
    target = tmp_path / "x.json"
    code, out, err = run_cli(
        "run", str(scenario), "--trace", str(target), "--report", f"{tmp_path}/./x.json"
    )
    assert code == 2
    assert err == (
        f"{tmp_path}/./x.json: cannot write the report: it is {target}, "
        "where --trace writes the trace; give each output its own file\n"
    )
    assert "written" not in out
    assert not target.exists()


def test_outputs_may_share_a_device(scenario: Path) -> None:
    """Files that are not regular are not compared: two outputs may both go to /dev/null."""
    code, out, err = run_cli("run", str(scenario), "--trace", os.devnull, "--report", os.devnull)
    assert code == 0, err
    assert f"report written to {os.devnull}" in out


def test_query_db_that_is_the_trace_is_refused(trace: Path) -> None:
    """``query --db`` on the trace itself: refused as every other output is."""
    before = trace.read_bytes()
    code, _, err = run_cli("query", str(trace), "--db", str(trace), "select 1")
    assert code == 2
    assert "the trace this command reads; not overwriting it" in err
    assert trace.read_bytes() == before


def test_a_sweep_does_not_write_over_its_scenario(tmp_path: Path) -> None:
    """A sweep directory whose summary.txt is the experiment's own scenario is refused."""
    out = tmp_path / "out"
    out.mkdir()
    shutil.copy(QUICKSTART, out / "summary.txt")
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(
        "scenario: out/summary.txt\nvary:\n  duration_ms: [100, 200]\nmetrics: [virtual_ms]\n",
        encoding="utf-8",
    )
    code, _, err = run_cli("sweep", str(experiment), "--out", str(out), "--workers", "1")
    assert code == 2, err
    assert err == (
        f"{out}: cannot write the results: it would replace summary.txt in it, "
        "the scenario this command reads; not overwriting it\n"
    )
    assert (out / "summary.txt").read_bytes() == QUICKSTART.read_bytes()
    assert not (out / "results.jsonl").exists()
