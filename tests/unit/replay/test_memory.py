"""Replay keeps its executions in 8-byte columns, not a Python object each: issue 26's bound
(``replay -n`` of a 1 GB trace, ~1.4M executions, under 300 MB: bench/README.md) rests on it."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import attrs
import pytest

from nnemu.replay import _columns, _extract
from nnemu.replay._extract import extract_plan
from nnemu.scenario import load_scenario

from .helpers import REPO, record

_BYTES_AN_EXECUTION = 42
"""Most memory the extraction may take an execution after the read (its columns, the sorts'
orders, the medians' sorted chunks): ~34 on two_apps_one_npu joined six times; ~96 with
each sort and median a list of Python numbers and the read's rows sliced into copies
(main at 7dc07f9); ~147 with the read's columns kept beside the plan's copies (311e59d);
~530 with a tuple a row."""


def _joined(tmp_path: Path, copies: int) -> Path:
    """A 10 s run of two_apps_one_npu as a Perfetto trace, ``copies`` times end to end (the
    rows of each copy earlier than the last of the one before: sorted runs)."""
    pytest.importorskip("perfetto")
    scenario = load_scenario(REPO / "scenarios/two_apps_one_npu.yaml")
    one = tmp_path / "one.pftrace"
    record(attrs.evolve(scenario, duration_ms=10_000), one)
    joined = tmp_path / "joined.pftrace"
    joined.write_bytes(one.read_bytes() * copies)
    return joined


def test_runtime_and_hal_rows_are_not_kept_beside_la_pe(tmp_path: Path) -> None:
    """An app whose arrivals come from [NN_LA_PE] keeps no row an execution of its runtime
    and HAL calls, only their last rows (what the end-of-capture test counts)."""
    reader, _ = _extract._read(str(_joined(tmp_path, 1)), None)
    apps = [app for app in reader.apps.values() if app.la_begins]
    assert len(apps) == 2
    for app in apps:
        assert len(app.la_closed) // 3 > 200
        assert len(app.lr_closed) // 3 <= 1
        assert len(app.hal_closed) // 3 <= 1
        assert not app.lr_begins
        assert not app.hal_begins


@pytest.mark.slow  # six copies of a 10 s run recorded and read under tracemalloc: ~15 s
def test_extraction_after_the_read_takes_a_few_bytes_an_execution(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Turning the read into the plan (device units, closed loops, sorts of rows out of
    order) takes at most ``_BYTES_AN_EXECUTION`` an execution more than the read kept, as
    tracemalloc counts it (the read traced too, so the read's columns freed as the plan
    takes them over count), with its sorts a chunk at a time as a big trace's are."""
    path = str(_joined(tmp_path, 6))
    # Sorted a chunk at a time as a big trace's columns are (``_columns.ascending``).
    monkeypatch.setattr(_columns, "CHUNK", 256)
    tracemalloc.start()
    try:
        read = _extract._read(path, None)
        monkeypatch.setattr(_extract, "_read", lambda path, progress: read)
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        plan = extract_plan(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    executions = sum(len(app.arrivals_ns) for app in plan.apps)
    assert executions > 6000
    assert (peak - before) / executions < _BYTES_AN_EXECUTION
