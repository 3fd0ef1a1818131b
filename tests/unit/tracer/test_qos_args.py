"""nnemu's QoS facts as slice args: TrackEvent debug annotations in .pftrace, ``args`` in
Chrome JSON (docs/trace-contract.md, "nnemu's execution marks"), shown by Perfetto's trace
processor and by ``nnemu query``; the names stay, and ``nnemu parse`` ignores both."""

from __future__ import annotations

import csv
import io
import json
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from nnemu import run
from nnemu.parser import format_text, parse_file
from nnemu.query import open_trace
from nnemu.scenario import load_scenario_text
from nnemu.tracer import open_trace_writer
from tests.commands import trace_processor_shell
from tests.pftrace import packets

# Every kind of QoS mark: a HIGH app with both timeouts that drops late frames, retries
# refusals of a one-slot queue (nnemu::retry), waits for its threads (nnemu::waited) and
# fails some executions (nnemu::failed).
SCENARIO = """\
name: qos_args
seed: 3
devices:
  - name: npu
    hal_version: "1.3"
    type: accelerator
    queue_limit: 1
    performance:
      float32: {exec_time: 0.2, power_usage: 0.2}
      quant8: {exec_time: 0.1, power_usage: 0.1}
models:
  - name: classifier
    preset: mobilenet_v1
    dtype: quant8
apps:
  - name: camera
    uid: 10700
    model: classifier
    devices: [npu]
    priority: high
    compile_timeout_ms: 500
    execution_timeout_ms: 9
    drop_late_frames: true
    threads: 2
    workload: {kind: burst, burst_size: 6, burst_interval_ms: 40, executions: 24}
    retry: {max_attempts: 1, backoff_ms: 1}
"""

QOS_NAME = "nnemu::qos priority=HIGH execution_timeout_ns=9000000 compile_timeout_ns=500000000"
QOS_ARGS = {
    "priority": "HIGH",
    "execution_timeout_ns": 9000000,
    "compile_timeout_ns": 500000000,
    "drop_late_frames": True,
}


def _expected_args(name: str) -> dict[str, object]:
    """The args the contract gives a slice called ``name``."""
    kind, _, rest = name.partition(" ")
    if kind == "nnemu::qos":
        assert name == QOS_NAME + " drop_late_frames"
        return QOS_ARGS
    if kind in ("nnemu::retry", "nnemu::failed"):
        return {"code": rest}
    if kind == "nnemu::waited":
        return {"waited_ns": int(rest.removesuffix(" ns"))}
    return {}


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("qos_args")
    paths = {suffix: out / f"t{suffix}" for suffix in (".html", ".json", ".pftrace")}
    for path in paths.values():
        run(load_scenario_text(SCENARIO), sinks=[open_trace_writer(path)])
    return paths


def _kinds(names: list[str]) -> Counter[str]:
    return Counter(name.partition(" ")[0] for name in names if name.startswith("nnemu::"))


def test_the_scenario_has_every_kind_of_qos_mark(traces: dict[str, Path]):
    text = traces[".html"].read_text()
    for kind in ("nnemu::qos", "nnemu::retry", "nnemu::waited", "nnemu::failed"):
        assert f"|{kind} " in text, kind
    assert f"|{QOS_NAME} drop_late_frames\n" in text
    assert '"args"' not in text  # systrace: the names only


def test_pftrace_qos_slices_carry_interned_debug_annotations(traces: dict[str, Path]):
    """Each nnemu QoS slice has its facts as debug annotations, their names interned
    (``interned_data.debug_annotation_names``, each defined once before use); no other
    slice has any."""
    event_names: dict[int, str] = {}
    arg_names: dict[int, str] = {}
    seen: list[str] = []
    for packet in packets(traces[".pftrace"].read_bytes()):
        for entry in packet.interned_data.event_names:
            event_names[entry.iid] = entry.name
        for entry in packet.interned_data.debug_annotation_names:
            assert entry.iid not in arg_names, "an annotation name interned twice"
            arg_names[entry.iid] = entry.name
        event = packet.track_event
        if not packet.HasField("track_event") or event.type != 1:  # TYPE_SLICE_BEGIN
            continue
        name = event_names[event.name_iid]
        args = {}
        for annotation in event.debug_annotations:
            value = annotation.WhichOneof("value")
            args[arg_names[annotation.name_iid]] = getattr(annotation, value)
        assert args == _expected_args(name), name
        seen.append(name)
    assert _kinds(seen) == _kinds(
        [json.loads(line)["name"] for line in _json_lines(traces[".json"]) if '"B"' in line]
    )
    assert sorted(arg_names.values()) == sorted([*QOS_ARGS, "code", "waited_ns"])


def _json_lines(path: Path) -> list[str]:
    return [line.rstrip(",\n") for line in path.read_text().splitlines() if '"ph": ' in line]


def test_chrome_json_qos_events_carry_args(traces: dict[str, Path]):
    """Each QoS ``B`` event has its facts as ``args``; a ``B`` event of any other slice has
    none; each line is still what ``json.dumps(event, sort_keys=True)`` writes."""
    begins = 0
    for line in _json_lines(traces[".json"]):
        event = json.loads(line)
        assert json.dumps(event, sort_keys=True) == line
        if event["ph"] == "B":
            begins += 1
            assert event.get("args", {}) == _expected_args(event["name"]), line
    assert begins > 500


def _tp(trace: Path, sql: str) -> list[dict[str, str]]:
    query = trace.with_suffix(trace.suffix + ".sql")
    query.write_text(sql, encoding="utf-8")
    done = subprocess.run(
        [trace_processor_shell(), "-q", str(query), str(trace)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return list(csv.DictReader(io.StringIO(done.stdout.strip())))


ARGS_SQL = (
    "SELECT s.name, a.key, a.int_value, a.string_value FROM slice s"
    " JOIN args a USING (arg_set_id) WHERE s.name GLOB 'nnemu::*' AND a.key GLOB '{}.*'"
)


def _rows_by_slice(rows: list[dict[str, str]], prefix: str) -> Counter[tuple[str, str, str]]:
    """(slice name, key without ``prefix``, value as text) counted."""
    out: Counter[tuple[str, str, str]] = Counter()
    for row in rows:
        value = row["string_value"] if row["int_value"] == "[NULL]" else row["int_value"]
        out[row["name"], row["key"].removeprefix(prefix), value] += 1
    return out


def _expected_rows(names: list[str], true: str = "1") -> Counter[tuple[str, str, str]]:
    """The (slice name, key, value as text) of the args of slices called ``names``, a true
    value written ``true``."""
    out: Counter[tuple[str, str, str]] = Counter()
    for name in names:
        for key, value in _expected_args(name).items():
            text = true if value is True else str(value)
            out[name, key, text] += 1
    return out


@pytest.mark.parametrize(("suffix", "prefix"), [(".pftrace", "debug."), (".json", "args.")])
def test_trace_processor_shows_the_args(traces: dict[str, Path], suffix: str, prefix: str):
    """Perfetto's trace processor puts each QoS fact in its ``args`` table, on its slice:
    ``debug.<key>`` from the .pftrace's debug annotations, ``args.<key>`` from the JSON."""
    rows = _tp(traces[suffix], ARGS_SQL.format(prefix.rstrip(".")))
    names = [
        json.loads(line)["name"]
        for line in _json_lines(traces[".json"])
        if '"ph": "B"' in line and '"nnemu::' in line
    ]
    assert _rows_by_slice(rows, prefix) == _expected_rows(names)
    assert {row["key"] for row in rows} >= {prefix + "code", prefix + "priority"}


def test_nnemu_query_loads_the_json_args(traces: dict[str, Path]):
    """``nnemu query`` reads a Chrome JSON event's args into its ``args`` table."""
    conn = open_trace(str(traces[".json"]))
    try:
        rows = conn.execute(
            "SELECT s.name, a.key, a.value FROM slice s"
            " JOIN args a USING (arg_set_id) WHERE s.name GLOB 'nnemu::*'"
        ).fetchall()
    finally:
        conn.close()
    found = Counter((name, key.removeprefix("args."), str(value)) for name, key, value in rows)
    names = [
        json.loads(line)["name"]
        for line in _json_lines(traces[".json"])
        if '"ph": "B"' in line and '"nnemu::' in line
    ]
    assert found == _expected_rows(names, true="true")  # (a JSON value, as the loader keeps it)


def test_parse_ignores_the_args(traces: dict[str, Path]):
    """``nnemu parse`` gives the same tables from the three formats: args change nothing."""
    tables = {suffix: format_text(parse_file(str(path))) for suffix, path in traces.items()}
    assert tables[".json"] == tables[".html"]
    assert tables[".pftrace"] == tables[".html"]
