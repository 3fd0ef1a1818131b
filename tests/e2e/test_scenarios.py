"""Every shipped scenario end to end, and the determinism of whole runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nnemu import run
from nnemu.report import Report
from nnemu.scenario import load_scenario
from nnemu.tracer import open_trace_writer

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
QUICKSTART = SCENARIOS / "quickstart.yaml"


DEMO_SCENARIOS = SCENARIOS.parent / "nnemu" / "demo" / "scenarios"


def _scenario_files() -> list[Path]:
    """The shipped scenarios: the repository's and the demos' (package data)."""
    return sorted([*SCENARIOS.glob("**/*.yaml"), *DEMO_SCENARIOS.glob("*.yaml")])


@pytest.mark.parametrize("path", _scenario_files(), ids=lambda p: p.stem)
def test_scenario_runs_and_meets_its_expectations(path: Path):
    """A shipped scenario runs to the end, meets every expectation and leaves no work in flight."""
    scenario = load_scenario(path)
    report = run(scenario)
    failed = [r for r in report.expectations if not r.passed]
    assert report.passed, f"failed expectations: {failed}"
    if scenario.duration_ms is None:
        in_flight = {name: app["in_flight"] for name, app in report.data["apps"].items()}
        assert in_flight == dict.fromkeys(in_flight, 0)


def test_scenarios_exist():
    """The repository ships scenarios, quickstart among them."""
    assert QUICKSTART in _scenario_files()


def _traced_run(path: Path, trace: Path, *, seed: int | None = None) -> Report:
    return run(load_scenario(path), sinks=[open_trace_writer(trace)], seed=seed)


def test_quickstart_is_deterministic(tmp_path: Path):
    """Running quickstart twice gives byte-identical traces and report JSON."""
    first = _traced_run(QUICKSTART, tmp_path / "a.html")
    second = _traced_run(QUICKSTART, tmp_path / "b.html")
    trace_a = (tmp_path / "a.html").read_bytes()
    trace_b = (tmp_path / "b.html").read_bytes()
    assert trace_a
    assert trace_a == trace_b
    assert first.to_json() == second.to_json()
    assert first.data["wall_s"] is None


def test_trace_formats_are_deterministic(tmp_path: Path):
    """The Chrome JSON and ftrace writers are byte-identical across runs too."""
    for suffix in (".json", ".txt"):
        _traced_run(QUICKSTART, tmp_path / f"a{suffix}")
        _traced_run(QUICKSTART, tmp_path / f"b{suffix}")
        assert (tmp_path / f"a{suffix}").read_bytes() == (tmp_path / f"b{suffix}").read_bytes()


def test_different_seeds_with_jitter_give_different_latencies():
    """With jitter configured, another seed gives other latencies; the same seed the same ones."""
    scenario = load_scenario(QUICKSTART)
    assert scenario.devices[0].cost.jitter > 0
    one = run(scenario, seed=1).data["apps"]["camera"]["latency_ms"]
    again = run(scenario, seed=1).data["apps"]["camera"]["latency_ms"]
    two = run(scenario, seed=2).data["apps"]["camera"]["latency_ms"]
    assert one == again
    assert one != two


def test_seed_is_recorded_in_the_report():
    """The report names the seed the run used (the override, when one is given)."""
    scenario = load_scenario(QUICKSTART)
    assert run(scenario).data["seed"] == scenario.seed
    assert run(scenario, seed=99).data["seed"] == 99


_DIGESTS = """
import hashlib, io, sys
from nnemu import run
from nnemu.scenario import load_scenario
from nnemu.tracer import ChromeJsonWriter, FtraceWriter

class Kept(io.StringIO):
    def close(self):  # the writers close their file; keep the text
        self.kept = self.getvalue()
        super().close()

for path in sys.argv[2:]:
    for _ in range(int(sys.argv[1])):
        outs = [Kept(), Kept(), Kept()]
        sinks = [FtraceWriter(outs[0], html=True), FtraceWriter(outs[1]), ChromeJsonWriter(outs[2])]
        report = run(load_scenario(path), sinks=sinks)
        texts = [out.kept for out in outs] + [report.to_json()]
        print("digest", path, *(hashlib.sha256(t.encode()).hexdigest()[:16] for t in texts))
"""


@pytest.mark.slow  # every scenario twice in processes of their own
def test_every_shipped_scenario_is_byte_identical_across_runs_and_hash_seeds():
    """Every shipped scenario gives the same HTML, text and JSON traces and report in every run and process."""
    paths = [str(p) for p in _scenario_files()]
    lines: set[str] = set()
    for hash_seed in ("0", "1"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run(
            [sys.executable, "-c", _DIGESTS, "3", *paths],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=300,
        )
        lines.update(line for line in done.stdout.splitlines() if line.startswith("digest "))
    by_scenario: dict[str, set[str]] = {}
    for line in lines:
        _, name, digests = line.split(" ", 2)
        by_scenario.setdefault(name, set()).add(digests)
    assert sorted(by_scenario) == sorted(paths)
    differing = {name: len(d) for name, d in by_scenario.items() if len(d) > 1}
    assert differing == {}
