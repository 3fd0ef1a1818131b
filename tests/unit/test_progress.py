"""The progress bar of big loads: drawn on a terminal only, and erased when done."""

from __future__ import annotations

import io
import sqlite3
from pathlib import Path

import pytest

from nnemu import _progress
from nnemu._progress import Progress, render
from nnemu.errors import TraceFormatError
from nnemu.query import load_trace
from nnemu.trace import MAX_LINE, FtraceLines


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_render_shows_bytes_rate_and_eta():
    """A bar line says the share done, MB read of the total, the rate and the time left."""
    line = render("loading t.html", 25_000_000, 100_000_000, 5.0)
    assert line == "loading t.html [######------------------]  25% 25.0/100.0 MB 5.0 MB/s ETA 15s"


def test_bar_drawn_on_a_terminal_and_erased(tmp_path: Path, monkeypatch):
    """On a terminal a big file's lines come through unchanged, the bar is drawn and erased."""
    monkeypatch.setattr(_progress, "_EVERY_LINES", 1)
    monkeypatch.setattr(_progress, "_INTERVAL_S", 0.0)
    path = tmp_path / "t.txt"
    path.write_text("row\n" * 1000)
    out = _Terminal()
    with (
        path.open() as stream,
        Progress(str(path), stream, out, label="loading", min_bytes=1) as bar,
    ):
        lines = list(bar.lines(stream))
    assert lines == ["row\n"] * 1000
    text = out.getvalue()
    assert text.startswith("\rloading [")
    assert "/0.0 MB" in text
    drawn = text.rsplit("\r", 2)
    assert drawn[-1] == ""
    assert drawn[-2].strip() == ""


def test_nothing_drawn_off_a_terminal_or_for_small_files(tmp_path: Path):
    """A pipe or file gets no bar, nor does a file under the size threshold; lines are untouched."""
    path = tmp_path / "t.txt"
    path.write_text("row\n" * 10)
    for out, min_bytes in ((io.StringIO(), 1), (_Terminal(), 10**6)):
        with (
            path.open() as stream,
            Progress(str(path), stream, out, label="x", min_bytes=min_bytes) as bar,
        ):
            assert bar.lines(stream) is stream
            bar.update()
        assert out.getvalue() == ""


def test_watched_stream_still_refuses_an_over_long_line(tmp_path: Path, monkeypatch):
    """With the bar shown, readers still read in bounded pieces: a line past MAX_LINE is refused."""
    monkeypatch.setattr(_progress, "_EVERY_LINES", 1)
    path = tmp_path / "t.txt"
    path.write_text("# tracer: nop\n" + "x" * (MAX_LINE + 10) + "\n")
    with (
        path.open() as stream,
        Progress(str(path), stream, _Terminal(), label="x", min_bytes=1) as bar,
        pytest.raises(TraceFormatError, match="line longer than"),
    ):
        list(FtraceLines(bar.lines(stream)))


def test_stage_replaces_the_bar_until_cleared(tmp_path: Path):
    """A stage draws ``label: text`` over the bar (padded to cover it) and is erased at the end."""
    path = tmp_path / "t.txt"
    path.write_text("row\n")
    out = _Terminal()
    with (
        path.open() as stream,
        Progress(str(path), stream, out, label="loading", min_bytes=1) as bar,
    ):
        bar.stage("building indexes")
        assert out.getvalue() == "\rloading: building indexes"
    assert out.getvalue().endswith("\r" + " " * len("loading: building indexes") + "\r")


def test_query_load_shows_the_index_stage_after_the_bar(tmp_path: Path, monkeypatch):
    """``nnemu query``'s load ends its bar with a 'building indexes' stage, not a stalled share."""
    monkeypatch.setattr(_progress, "_EVERY_LINES", 1)
    monkeypatch.setattr(_progress, "_INTERVAL_S", 0.0)
    monkeypatch.setattr(_progress, "MIN_BYTES", 1)
    row = "app-1000 ( 1000) [000] ...1 1.{:06d}: tracing_mark_write: {}\n"
    rows = [
        row.format(2 * i + j, "B|1000|x" if j == 0 else "E|1000") for i in range(50) for j in (0, 1)
    ]
    path = tmp_path / "t.txt"
    path.write_text("# tracer: nop\n" + "".join(rows))
    out = _Terminal()
    load_trace(str(path), sqlite3.connect(":memory:"), lambda line, message: None, progress=out)
    drawn = [piece.strip() for piece in out.getvalue().split("\r") if piece.strip()]
    assert drawn[0].startswith("loading t.txt [")
    assert drawn[-1] == "loading t.txt: file read; building indexes"
    assert out.getvalue().endswith("\r")


def test_count_bar_shows_done_failed_and_eta_of_what_this_run_did():
    """A count bar says done/total and failures; items done before it started are not in the rate."""
    line = _progress.render_count("sweep", 60, 100, 2, 10.0, already=40)
    assert line == "sweep [##############----------]  60% 60/100 2 failed ETA 20s"


def test_count_bar_drawn_only_on_a_terminal(monkeypatch):
    """The count bar draws on a terminal, and nothing anywhere else."""
    monkeypatch.setattr(_progress, "_INTERVAL_S", 0.0)
    terminal, pipe = _Terminal(), io.StringIO()
    for out in (terminal, pipe):
        bar = _progress.CountProgress(out, label="sweep", total=4, already=1)
        bar.advance(2, 1)
        bar.clear()
    assert "3/4 1 failed" in terminal.getvalue()
    assert terminal.getvalue().endswith("\r")
    assert pipe.getvalue() == ""


def test_query_load_of_json_shows_the_index_stage_after_the_bar(tmp_path: Path, monkeypatch):
    """A JSON trace's load (read by ``TraceEvents``) ends its bar with the same stage."""
    monkeypatch.setattr(_progress, "_EVERY_LINES", 1)
    monkeypatch.setattr(_progress, "_INTERVAL_S", 0.0)
    monkeypatch.setattr(_progress, "MIN_BYTES", 1)
    events = [
        f'{{"ph": "{ph}", "pid": 1000, "tid": 1000, "ts": {2 * i + j}, "name": "x"}}'
        for i in range(50)
        for j, ph in enumerate("BE")
    ]
    path = tmp_path / "t.json"
    path.write_text('{"traceEvents": [\n' + ",\n".join(events) + "\n]}\n")
    out = _Terminal()
    load_trace(str(path), sqlite3.connect(":memory:"), lambda line, message: None, progress=out)
    drawn = [piece.strip() for piece in out.getvalue().split("\r") if piece.strip()]
    assert drawn[0].startswith("loading t.json [")
    assert drawn[-1] == "loading t.json: file read; building indexes"
    assert out.getvalue().endswith("\r")
