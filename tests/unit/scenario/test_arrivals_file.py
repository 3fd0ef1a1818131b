"""A trace workload's arrivals: read from a CSV or Parquet file (``arrivals_file``), and a long
``arrivals_ms`` list loaded in bounded memory (issue 28, item 12)."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from nnemu.errors import ScenarioError
from nnemu.scenario import dump_scenario, load_scenario, load_scenario_text
from tests.commands import run_cli

SCENARIO = """\
name: t
devices:
  - name: npu
models:
  - name: m
    preset: mobilenet_v1
    dtype: quant8
apps:
  - name: cam
    model: m
    workload: {{kind: trace, {arrivals}}}
"""


def write(tmp_path: Path, arrivals: str, csv_text: str | None = None) -> Path:
    """A scenario s.yaml whose workload holds ``arrivals``, beside arr.csv holding ``csv_text``."""
    if csv_text is not None:
        (tmp_path / "arr.csv").write_text(csv_text, encoding="utf-8")
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.format(arrivals=arrivals), encoding="utf-8")
    return path


def test_csv_with_a_header_gives_the_arrivals(tmp_path):
    """The column arrival_ms of a CSV with a header becomes the workload's arrivals_ms."""
    path = write(tmp_path, "arrivals_file: arr.csv", "frame,arrival_ms\n1,0\n2,2.5\n\n3,2.5\n")
    workload = load_scenario(path).apps[0].workload
    assert workload.arrivals_ms == (0.0, 2.5, 2.5)
    assert workload.arrivals_file == str(tmp_path / "arr.csv")


def test_csv_without_a_header_gives_its_first_column(tmp_path):
    """A CSV whose first row is numbers is read from its first column."""
    path = write(tmp_path, "arrivals_file: arr.csv", "1\n4.5,x\n1e1\n")
    assert load_scenario(path).apps[0].workload.arrivals_ms == (1.0, 4.5, 10.0)


def test_parquet_gives_its_arrival_column(tmp_path):
    """A Parquet file's arrival_ms column becomes the workload's arrivals_ms."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    table = pa.table({"frame": [1, 2, 3], "arrival_ms": [0.0, 1.0, 3]})
    pq.write_table(table, tmp_path / "arr.parquet")
    path = write(tmp_path, "arrivals_file: arr.parquet")
    assert load_scenario(path).apps[0].workload.arrivals_ms == (0.0, 1.0, 3.0)


def test_parquet_bad_rows_are_placed(tmp_path):
    """A Parquet file's null or negative arrival is a problem at its row number."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.table({"arrival_ms": [0.0, None, -1.0]}), tmp_path / "arr.parquet")
    path = write(tmp_path, "arrivals_file: arr.parquet")
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    lines = str(caught.value).splitlines()
    where = str(tmp_path / "arr.parquet")
    assert f"{where}:2:1: arrival_ms: expected a number in [0, 3600000], got 'null'" in lines
    assert f"{where}:3:1: arrival_ms: expected a number in [0, 3600000], got -1.0" in lines


def test_bad_rows_exit_2_with_file_and_line(tmp_path):
    """Every bad row of the CSV is a file:line problem and `nnemu run` exits 2 without a traceback."""
    path = write(tmp_path, "arrivals_file: arr.csv", "arrival_ms\n1\nsoon\n0.5\n-3\n7\n")
    code, _, err = run_cli("run", str(path))
    assert code == 2
    assert "Traceback" not in err
    csv_path = tmp_path / "arr.csv"
    assert f"{csv_path}:3:1: arrival_ms: expected a number in [0, 3600000], got 'soon'" in err
    assert (
        f"{csv_path}:4:1: arrival_ms: expected a time not earlier than the one before (1), "
        "got 0.5" in err
    )
    assert f"{csv_path}:5:1: arrival_ms: expected a number in [0, 3600000], got -3.0" in err


@pytest.mark.parametrize(
    ("arrivals", "csv_text", "message"),
    [
        ("arrivals_file: missing.csv", None, "cannot read the arrivals: No such file"),
        ("arrivals_file: arr.csv", "", "expected at least one arrival_ms, got none"),
        ("arrivals_file: arr.csv", "when,what\n", "expected a header naming the column"),
        ("arrivals_file: arr.csv, arrivals_ms: [1]", "1\n", "got both"),
        ("executions: 2", None, "expected 'arrivals_ms' or 'arrivals_file'"),
    ],
)
def test_unusable_files_are_problems(tmp_path, arrivals, csv_text, message):
    """A missing, empty or headless file, or both or neither key, is a problem, not a crash."""
    path = write(tmp_path, arrivals, csv_text)
    with pytest.raises(ScenarioError, match=message):
        load_scenario(path)


def test_dump_names_the_file_and_loads_again(tmp_path, monkeypatch):
    """A dumped scenario names its arrivals file rather than listing the arrivals, and loads
    to the same value (as ``--set`` reloads it)."""
    write(tmp_path, "arrivals_file: arr.csv", "".join(f"{i}\n" for i in range(500)))
    monkeypatch.chdir(tmp_path)
    scenario = load_scenario("s.yaml")
    text = dump_scenario(scenario)
    assert "arrivals_file: arr.csv" in text
    assert "arrivals_ms" not in text
    assert load_scenario_text(text, "--set").apps[0] == scenario.apps[0]


def peak_bytes(load: object) -> int:
    """Peak bytes Python allocated while calling ``load``."""
    tracemalloc.start()
    try:
        load()  # type: ignore[operator]
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_long_arrivals_ms_list_loads_in_bounded_memory():
    """4,000 inline arrivals load with under 400 bytes an arrival at the peak (each used to
    keep a node with two marks alive: about 800)."""
    count = 4_000
    text = SCENARIO.format(arrivals="arrivals_ms: [" + ",".join(map(str, range(count))) + "]")
    peak = peak_bytes(lambda: load_scenario_text(text, "s.yaml"))
    assert peak / count < 400


def test_an_arrivals_file_loads_in_bounded_memory(tmp_path):
    """50,000 arrivals from a CSV load with under 100 bytes an arrival at the peak."""
    count = 50_000
    path = write(tmp_path, "arrivals_file: arr.csv", "".join(f"{i}.5\n" for i in range(count)))
    peak = peak_bytes(lambda: load_scenario(path))
    assert peak / count < 100
