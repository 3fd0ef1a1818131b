"""App and device names through every trace format: written, read back, the same names.

A seeded search over names (any Unicode, the characters that broke a format first): a name
``nnemu.tracer.name_problem`` refuses is a ``file:line:`` error with exit code 2 at scenario
load; a name it accepts is run and written as ``.txt``, ``.html``, ``.json`` and ``.pftrace``,
and ``nnemu query`` reads back from each the processes' names (the app's, the driver
service's that ends in the device's name) and the threads' (the first 15 characters, as
Linux keeps them). The ``.txt`` has no process listing: a process is named by its main
thread, so by the name's first 15 characters.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import attrs
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from nnemu import load_scenario, run
from nnemu.query import open_trace
from nnemu.tracer import name_problem, open_trace_writer, thread_name
from tests.commands import run_cli, run_parse

SUFFIXES = (".txt", ".html", ".json", ".pftrace")
NAMES = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
TRICKY = "</script>|<!--\x00\x01\x1b\u200b\u200d\ufeff\u2028 \t/.-:@()[]é测试🙂"
"""Characters that broke a format once, and some that never should."""

names = st.text(
    alphabet=st.one_of(
        st.sampled_from(TRICKY),
        st.characters(codec="utf-8"),
        st.characters(codec="utf-8", exclude_categories=("C", "Z")),
    ),
    min_size=1,
    max_size=24,
)


def _scenario(app: str, device: str) -> str:
    # JSON strings are YAML: every character escaped, so the YAML reader sees all of them.
    return f"""\
name: names
seed: 3
duration_ms: 40
devices:
  - name: {json.dumps(device)}
    performance: {{float32: {{exec_time: 0.2, power_usage: 0.2}}}}
models:
  - {{name: m, preset: mobilenet_v1}}
apps:
  - name: {json.dumps(app)}
    model: m
    workload: {{kind: periodic, period_ms: 10}}
"""


def _read_names(path: Path) -> tuple[dict[int, str], set[str]]:
    conn = open_trace(str(path))
    try:
        processes = dict(conn.execute("SELECT pid, name FROM process WHERE pid >= 700"))
        threads = {name for (name,) in conn.execute("SELECT name FROM thread WHERE tid >= 700")}
    finally:
        conn.close()
    return processes, threads


def _service(device: str) -> str:
    return f"android.hardware.neuralnetworks@1.3-service-{device}"


@pytest.mark.slow
@NAMES
@given(app=names, device=names)
@example(app="a</script>b", device="npu")
@example(app="cam\x00era", device="n\x01pu")
@example(app="cam\u200bera", device="npu")
@example(app="x|y", device="p|q")
@example(app="hotword_lowpower_app", device="hotword_lowpower")
def test_names_round_trip_through_every_format(tmp_path_factory, app: str, device: str):
    tmp = tmp_path_factory.mktemp("names")
    scenario = tmp / "s.yaml"
    scenario.write_text(_scenario(app, device), encoding="utf-8")
    refused = [line for line, name in ((10, app), (5, device)) if name_problem(name)]
    event("refused" if refused else "run")
    if refused or device == "nnapi-reference":
        code, _, err = run_cli("run", str(scenario), "-q")
        assert code == 2
        assert "Traceback" not in err
        for line in refused:
            assert re.search(rf"^{re.escape(str(scenario))}:{line}:\d+: ", err, re.MULTILINE), err
        assert all(line.isprintable() for line in err.splitlines()), err
        return
    paths = [tmp / f"t{suffix}" for suffix in SUFFIXES]
    run(load_scenario(scenario), sinks=[open_trace_writer(path) for path in paths])
    read = {path.suffix: _read_names(path) for path in paths}
    full = {_service(device), app}
    for suffix in (".html", ".json", ".pftrace"):
        processes, _ = read[suffix]
        assert set(processes.values()) == full, suffix
    processes, _ = read[".txt"]
    # The driver service's main thread writes no marks: only the app is named in ftrace text.
    assert thread_name(app) in processes.values()
    threads = {suffix: threads for suffix, (_, threads) in read.items()}
    assert thread_name(app) in threads[".json"]
    assert all(len(name) <= 15 for name in threads[".json"])
    assert all(other == threads[".json"] for other in threads.values()), threads


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("a</script>", "'/'"),
        ("cam\x00", "'\\x00'"),
        ("zero\u200bwidth", "'\\u200b'"),
        ("a.b", "'.'"),
        ("", "non-empty"),
    ],
)
def test_the_rule_names_the_character(name: str, problem: str):
    message = name_problem(name)
    assert message is not None
    assert problem in message


def test_linux_keeps_a_thread_names_first_characters():
    """TASK_COMM_LEN: ``prctl(PR_SET_NAME)`` and ``exec`` keep the first 15 characters."""
    assert thread_name("hotword_lowpower") == "hotword_lowpowe"


def test_ftrace_without_a_tgid_column_names_its_processes(tmp_path: Path):
    """Old kernels write ``TASK-PID [CPU]`` (no ``(TGID)``): the main thread (TID = the
    mark's pid) still names its process in ``nnemu parse``, as it does in ``nnemu query``."""
    scenario = load_scenario(Path(__file__).parents[2] / "scenarios/two_apps_one_npu.yaml")
    path = tmp_path / "t.txt"
    run(attrs.evolve(scenario, duration_ms=100), sinks=[open_trace_writer(path)])
    text = path.read_text(encoding="utf-8")
    stripped = tmp_path / "no-tgid.txt"
    stripped.write_text(re.sub(r"(?m)^( *\S+-\d+) +\( *\d+\) ", r"\1 ", text), encoding="utf-8")
    assert "(  " not in stripped.read_text(encoding="utf-8").split("tracing_mark_write")[1]
    for trace in (path, stripped):
        code, out, _ = run_parse(trace, as_json=True)
        assert code == 0
        names = [one["process"]["name"] for one in json.loads(out)]
        assert names == ["camera", "indexer"], trace.name
