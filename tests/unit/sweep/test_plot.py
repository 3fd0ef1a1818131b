"""``nnemu sweep --plot``: one PNG per metric, or a clear message when it cannot plot."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.commands import run_cli
from tests.unit.sweep.sweeps import SHARES_SMALL_SWEEP, SMALL, copy_small_sweep, results, write


def _plot_small_sweep(small_sweep: tuple[Path, str], tmp_path: Path) -> tuple[int, str, str]:
    """``nnemu sweep --resume --plot`` on a copy of the shared sweep of ``SMALL``
    (``tmp_path``/o): it runs nothing and writes the table, summary and plots."""
    out = copy_small_sweep(small_sweep, tmp_path, "o")
    return run_cli("sweep", str(tmp_path / "exp.yaml"), "--out", str(out), "--resume", "--plot")


@SHARES_SMALL_SWEEP
def test_plot_writes_one_png_per_metric(tmp_path: Path, small_sweep: tuple[Path, str]) -> None:
    """Each metric gets a PNG named after it, plotted against the numeric varied key."""
    pytest.importorskip("matplotlib")
    code, out, err = _plot_small_sweep(small_sweep, tmp_path)
    assert code == 0, err
    for metric in ("apps.camera.latency_ms.p99", "devices.npu.busy_fraction"):
        png = tmp_path / "o" / f"{metric}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert str(png) in out


def test_plot_without_a_numeric_key_says_so(tmp_path: Path) -> None:
    """A sweep that varies only names has nothing to plot against: it says so and still succeeds."""
    pytest.importorskip("matplotlib")
    text = SMALL.replace("  apps.indexer.workload.rate_hz: {range: [10, 60], steps: 2}\n", "")
    code, _, err = run_cli(
        "sweep", str(write(tmp_path, text)), "--out", str(tmp_path / "o"), "--plot"
    )
    assert code == 0
    assert "no varied key has numbers only" in err
    assert not list((tmp_path / "o").glob("*.png"))


def test_plot_without_matplotlib_says_how_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without matplotlib, --plot exits 2 before running, naming the extra to install."""
    monkeypatch.setattr("nnemu.pictures.plots_available", lambda: False)
    code, _, err = run_cli("sweep", str(write(tmp_path)), "--out", str(tmp_path / "o"), "--plot")
    assert code == 2
    assert err == "--plot needs matplotlib: pip install 'nnemu[plots]'\n"
    assert not (tmp_path / "o").exists()


@SHARES_SMALL_SWEEP
def test_a_p99_that_was_the_slowest_execution_is_an_open_marker_explained(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_sweep: tuple[Path, str]
) -> None:
    """A p99 point summary.txt marks (under 100 executions in some replication: the camera's
    ~12 a run here) is drawn as an open marker with the footnote under the plot; a metric
    that is no tail quantile (busy_fraction) gets neither."""
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    drawn: dict[str, tuple[list[str], int]] = {}
    save = Figure.savefig

    def recording(self: Figure, target: str, **kwargs: object) -> None:
        axes = self.axes[0]
        hollow = sum(line.get_markerfacecolor() == "white" for line in axes.get_lines())
        drawn[Path(target).stem] = ([text.get_text() for text in self.texts], hollow)
        save(self, target, **kwargs)

    monkeypatch.setattr(Figure, "savefig", recording)
    code, _, err = _plot_small_sweep(small_sweep, tmp_path)
    assert code == 0, err
    texts, hollow = drawn["apps.camera.latency_ms.p99"]
    assert texts == [
        "open markers: p99 over fewer than 100 executions in at least one replication of the "
        "point: the slowest execution, not a tail estimate"
    ]
    assert hollow == 2  # one line of open markers per scheduler
    assert drawn["devices.npu.busy_fraction"] == ([], 0)


@SHARES_SMALL_SWEEP
def test_a_band_stays_where_the_metric_can_be(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_sweep: tuple[Path, str]
) -> None:
    """A point whose three p99s are 1, 1 and 60 ms has a 95% interval reaching far below 0;
    the band drawn stops at 0 ms (a latency cannot be negative), a fraction's band at 1."""
    pytest.importorskip("matplotlib")
    from matplotlib.axes import Axes

    from nnemu.stats import mean_interval
    from nnemu.sweep._experiment import load_experiment
    from nnemu.sweep._plot import _bounds, write_plots

    assert _bounds(("devices", "npu", "busy_fraction"), [0.5, 0.9]) == (0.0, 1.0)
    assert _bounds(("apps", "a", "latency_ms", "p99"), [3.0]) == (0.0, float("inf"))
    assert _bounds(("x",), [-1.0, 2.0]) == (float("-inf"), float("inf"))

    copy_small_sweep(small_sweep, tmp_path, "o")
    experiment_path = tmp_path / "exp.yaml"
    rows = [row for row in results(tmp_path / "o") if row["status"] == "ok"]
    first = json.dumps(rows[0]["point"], sort_keys=True)
    spread = [row for row in rows if json.dumps(row["point"], sort_keys=True) == first]
    assert len(spread) == 3
    for row, p99 in zip(spread, (1.0, 1.0, 60.0), strict=True):
        row["report"]["apps"]["camera"]["latency_ms"]["p99"] = p99
    assert mean_interval([1.0, 1.0, 60.0]).low < -50  # what the band would show unbounded

    bands: list[tuple[list[float], list[float]]] = []
    fill = Axes.fill_between

    def recording(self: Axes, x: object, low: list[float], high: list[float], **kw: Any) -> Any:
        bands.append((list(low), list(high)))
        return fill(self, x, low, high, **kw)

    monkeypatch.setattr(Axes, "fill_between", recording)
    (tmp_path / "plots").mkdir()
    write_plots(load_experiment(experiment_path), rows, str(tmp_path / "plots"))
    p99_bands, busy_bands = bands[:2], bands[2:]  # (a line per scheduler, per metric)
    assert min(v for low, _ in p99_bands for v in low) == 0.0
    assert max(v for _, high in p99_bands for v in high) > 60
    assert all(0 <= v <= 1 for low, high in busy_bands for v in (*low, *high))
