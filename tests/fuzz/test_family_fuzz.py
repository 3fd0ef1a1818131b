"""The input families test_cli_fuzz.py leaves out: experiments, SQL statements, and traces in
ftrace text and Perfetto's protobuf.  Seeded (``derandomize``), small and fast: each example
ends in a result or a message with exit 0, 1 or 2, never a traceback, and leaves its inputs
as they were.  ``bench/fuzz_cli.py`` runs the same families thousands of times as separate
commands, with their memory and time.
"""

from __future__ import annotations

import hashlib
import pathlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.commands import run_cli

# About a minute in all: the slow tier (CI runs it), beside the names family.
pytestmark = pytest.mark.slow

ROOT = pathlib.Path(__file__).parents[2]
QUICKSTART = ROOT / "scenarios" / "quickstart.yaml"
FUZZ = settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def assert_clean(code: int, err: str) -> None:
    """The command ended as the CLI promises: exit 0/1/2 and no traceback."""
    assert code in (0, 1, 2), err
    assert "Traceback" not in err, err


def digest(path: pathlib.Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module", name="traces")
def _traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pathlib.Path]:
    """nnemu's own ftrace text and Perfetto traces of a 300 ms quickstart run."""
    where = tmp_path_factory.mktemp("seeds")
    found = {}
    for suffix in (".txt", ".pftrace"):
        target = where / f"quickstart{suffix}"
        code, _, err = run_cli(
            "run", str(QUICKSTART), "--set", "duration_ms=300", "--trace", str(target)
        )
        assert code in (0, 1), err
        found[suffix] = target
    return found


# -- SQL ------------------------------------------------------------------------------

TABLES = st.sampled_from(["slice", "thread", "process", "track", "counter", "flow", "args"])
NUMBERS = st.sampled_from(["0", "1", "-1", "7", "9223372036854775807", "1e308", "NULL"])
JUNK = st.sampled_from(["", "'", '"', "\x00", "é", "%s", "--", "/*", ";", "\\"])
statements = st.one_of(
    st.builds("SELECT count(*) FROM {}".format, TABLES),
    st.builds("SELECT * FROM {} LIMIT {}".format, TABLES, NUMBERS),
    st.builds("SELECT * FROM ancestor_slice({})".format, NUMBERS),
    st.builds("SELECT * FROM descendant_slice({})".format, NUMBERS),
    st.builds("SELECT * FROM following_flow({})".format, NUMBERS),
    st.builds("SELECT s.id FROM slice s JOIN ancestor_slice(s.id) a LIMIT {}".format, NUMBERS),
    st.builds(
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT {}) "
        "SELECT sum(x) FROM c".format,
        st.sampled_from(["0", "10", "1000"]),
    ),
    st.builds("SELECT {} / 0, -{}".format, NUMBERS, NUMBERS),
    st.builds("SELECT '{}'".format, JUNK),
    st.builds("{}".format, JUNK),
    st.sampled_from(["SELECT", "DROP TABLE slice", "SELECT * FROM nowhere", "SELECT 1; SELECT 2"]),
)


@FUZZ
@given(sql=statements, mode=st.sampled_from([(), ("--csv",), ("--json",)]))
def test_generated_sql_gives_rows_or_a_message(
    traces: dict[str, pathlib.Path], sql: str, mode: tuple[str, ...]
) -> None:
    """Any statement, valid or not, gives rows or a one-line error; the trace stays as it was."""
    trace = traces[".txt"]
    before = digest(trace)
    code, _, err = run_cli("query", *mode, str(trace), sql)
    assert_clean(code, err)
    assert digest(trace) == before


# -- traces: ftrace text and Perfetto protobuf ------------------------------------------

byte_edits = st.lists(
    st.tuples(
        st.floats(0, 1, exclude_max=True),
        st.sampled_from(["flip", "cut", "repeat", "ff"]),
        st.integers(0, 255),
    ),
    min_size=1,
    max_size=4,
)


def mutate_bytes(data: bytes, edits: list[tuple[float, str, int]]) -> bytes:
    """``data`` with bytes flipped, the tail cut, a stretch repeated or 0xff bytes inserted."""
    buf = bytearray(data)
    for where, action, value in edits:
        i = int(where * len(buf)) if buf else 0
        if action == "flip" and buf:
            buf[i] = value
        elif action == "cut":
            del buf[i:]
        elif action == "repeat":
            buf[i:i] = buf[i : i + value + 1]
        else:
            buf[i:i] = b"\xff" * (value % 12 + 1)
    return bytes(buf)


@settings(FUZZ, max_examples=10)
@given(edits=byte_edits)
@pytest.mark.parametrize("suffix", [".txt", ".pftrace"])
def test_mutated_trace_parses_or_is_refused(
    tmp_path: pathlib.Path,
    traces: dict[str, pathlib.Path],
    suffix: str,
    edits: list[tuple[float, str, int]],
) -> None:
    """A text or Perfetto trace with bytes changed gives parse, query and replay -n a result or
    a message, never a traceback."""
    path = tmp_path / f"mutant{suffix}"
    path.write_bytes(mutate_bytes(traces[suffix].read_bytes(), edits))
    for argv in (
        ["parse", str(path)],
        ["query", str(path), "SELECT count(*), max(dur), min(ts) FROM slice"],
        ["replay", "-n", str(path)],
    ):
        code, _, err = run_cli(*argv)
        assert_clean(code, err)


# -- experiments ----------------------------------------------------------------------

VARIED = st.sampled_from(
    [
        "seed: [1, 2]",
        "seed: [1, 1]",
        "seed: [1.5]",
        "devices.npu.compute_units: [1, 2]",
        "devices.npu.compute_units: [0]",
        "apps.camera.priority: [low, LOW]",
        "apps.camera.priority: [!!bool maybe]",
        "apps.camera.workload.period_ms: {range: [10, 20], steps: 2}",
        "ipc.latency_us: {range: [5, 1], steps: 0}",
        "apps.nope.priority: [low]",
        "duration_ms: [3600001]",
    ]
)


@settings(FUZZ, max_examples=5)
@given(
    vary=st.lists(VARIED, min_size=1, max_size=2, unique_by=lambda v: v.split(":")[0]),
    replications=st.sampled_from(["1", "0", "x", "1000000000"]),
    metrics=st.sampled_from(["[apps.camera.latency_ms.p99]", "[apps.nope.x]", "[]"]),
)
def test_generated_experiment_runs_or_is_refused(
    tmp_path: pathlib.Path, vary: list[str], replications: str, metrics: str
) -> None:
    """A generated experiment (odd values, duplicates, a varied seed) runs or is refused with
    a message, never a traceback; the experiment file stays as it was."""
    path = tmp_path / "exp.yaml"
    lines = "".join(f"  {item}\n" for item in vary)
    path.write_text(
        f"scenario: {QUICKSTART}\nset:\n  duration_ms: 60\nvary:\n{lines}"
        f"replications: {replications}\nmetrics: {metrics}\n",
        encoding="utf-8",
    )
    before = digest(path)
    out = tmp_path / "out"
    code, _, err = run_cli("sweep", str(path), "--workers", "1", "--out", str(out))
    assert_clean(code, err)
    assert digest(path) == before
