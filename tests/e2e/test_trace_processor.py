"""Perfetto's own trace processor loads every format nnemu writes as nnemu's query reads it.

Needs Perfetto's ``trace_processor_shell``: set ``NNEMU_TRACE_PROCESSOR`` to it (the
default is ``../shared/tools/trace_processor_shell`` beside the checkout when present;
``tests.commands.trace_processor_shell`` finds it).  Get one with
``curl -LO https://get.perfetto.dev/trace_processor && chmod +x trace_processor`` (a
launcher that downloads the binary) or build it from github.com/google/perfetto.
"""

from __future__ import annotations

import csv
import io
import subprocess
from pathlib import Path

import pytest

from nnemu import run
from nnemu.query import open_trace
from nnemu.scenario import load_scenario
from nnemu.tracer import open_trace_writer
from tests.commands import trace_processor_shell

ROOT = Path(__file__).resolve().parents[2]
TWO_APPS = ROOT / "scenarios/two_apps_one_npu.yaml"
FORMATS = (".html", ".txt", ".json", ".pftrace")

SLICES = (
    "SELECT s.ts, s.dur, s.name, s.depth, p.name AS parent, t.tid FROM slice s"
    " LEFT JOIN slice p ON p.id = s.parent_id"
    " JOIN thread_track tt ON s.track_id = tt.id JOIN thread t USING (utid)"
)


def _shell() -> str:
    return trace_processor_shell()


def _tp(shell: str, trace: Path, sql: str) -> list[dict[str, str]]:
    """The rows of ``sql`` over ``trace`` in Perfetto's trace processor, as strings."""
    query = trace.with_suffix(".sql")
    query.write_text(sql, encoding="utf-8")
    done = subprocess.run(
        [shell, "-q", str(query), str(trace)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return list(csv.DictReader(io.StringIO(done.stdout.strip())))


def _slice_key(ts: object, dur: object, name: object, depth: object, parent: object, tid: object):
    # trace processor reads the text forms' seconds as doubles: round ts and dur to whole µs.
    parent = None if parent in (None, "[NULL]") else parent
    return (
        round(int(ts) / 1000),
        round(int(dur) / 1000),
        name,
        int(depth),
        parent,
        int(tid),
    )


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The two-app scenario's trace in every format nnemu writes (one run each, same seed)."""
    out = tmp_path_factory.mktemp("tp")
    paths = {suffix: out / f"two{suffix}" for suffix in FORMATS}
    for path in paths.values():
        run(load_scenario(TWO_APPS), sinks=[open_trace_writer(path)])
    return paths


def _nnemu_slices(trace: Path) -> list[tuple[object, ...]]:
    conn = open_trace(str(trace))
    try:
        return sorted(_slice_key(*row) for row in conn.execute(SLICES).fetchall())
    finally:
        conn.close()


@pytest.mark.parametrize("suffix", FORMATS)
def test_trace_processor_sees_the_slices_nnemu_query_sees(traces: dict[str, Path], suffix: str):
    """Same slice count, names, threads, depths and parents in trace processor as in nnemu query."""
    shell = _shell()
    rows = _tp(shell, traces[suffix], SLICES)
    perfetto = sorted(
        _slice_key(r["ts"], r["dur"], r["name"], r["depth"], r["parent"], r["tid"]) for r in rows
    )
    # nnemu query reads the text forms and JSON itself; the .pftrace holds the same run's
    # slices as the .html (tests/unit/tracer/test_perfetto_writer.py checks it exactly).
    source = traces[suffix] if suffix != ".pftrace" else traces[".html"]
    assert len(perfetto) > 4000
    assert perfetto == _nnemu_slices(source)


@pytest.mark.parametrize("suffix", [".json", ".pftrace"])
def test_trace_processor_has_a_flow_for_every_binder_transaction(
    traces: dict[str, Path], suffix: str
):
    """Each ::client slice has a flow to its ::server slice; each notify one from its launch."""
    shell = _shell()
    flows = _tp(
        shell,
        traces[suffix],
        "SELECT o.name AS out_name, i.name AS in_name FROM flow f"
        " JOIN slice o ON o.id = f.slice_out JOIN slice i ON i.id = f.slice_in",
    )
    (clients,) = _tp(
        shell,
        traces[suffix],
        "SELECT count(*) AS n, sum(name LIKE '%Callback::notify%') AS notifies"
        " FROM slice WHERE name LIKE '%::client'",
    )
    binder = [
        f
        for f in flows
        if f["out_name"].endswith("::client")
        and f["in_name"] == f["out_name"].replace("::client", "::server")
    ]
    assert len(binder) == int(clients["n"]) > 300
    completions = [f for f in flows if f["in_name"].endswith("::notify_1_3::client")]
    assert len(completions) == int(clients["notifies"]) > 0
    assert all(f["out_name"].startswith("HIDL::IDevice::prepareModel") for f in completions)
    assert len(flows) == len(binder) + len(completions)


@pytest.mark.parametrize("suffix", [".json", ".pftrace"])
def test_trace_processor_shows_the_counter_tracks(traces: dict[str, Path], suffix: str):
    """The driver service has its three device counters, each app its executions in flight."""
    shell = _shell()
    rows = _tp(
        shell,
        traces[suffix],
        "SELECT p.name AS process, t.name AS track, count(*) AS n FROM counter c"
        " JOIN process_counter_track t ON c.track_id = t.id JOIN process p USING (upid)"
        " GROUP BY t.id",
    )
    # trace processor names a JSON counter "<event name> <argument name>".
    tail = " value" if suffix == ".json" else ""
    service = "android.hardware.neuralnetworks@1.3-service-npu"
    assert {(r["process"], r["track"]) for r in rows} == {
        (service, "executions waiting" + tail),
        (service, "compute units busy" + tail),
        (service, "memory in use" + tail),
        ("camera", "executions in flight" + tail),
        ("indexer", "executions in flight" + tail),
    }
    assert all(int(r["n"]) > 0 for r in rows)


def test_trace_processor_names_processes_in_every_format_but_text(traces: dict[str, Path]):
    """The .html (its PROCESS DUMP), .json and .pftrace name the emulated processes."""
    shell = _shell()
    for suffix in (".html", ".json", ".pftrace"):
        rows = _tp(shell, traces[suffix], "SELECT pid, name FROM process WHERE pid >= 700")
        assert {(int(r["pid"]), r["name"]) for r in rows} == {
            (700, "android.hardware.neuralnetworks@1.3-service-npu"),
            (707, "camera"),
            (713, "indexer"),
        }, suffix
