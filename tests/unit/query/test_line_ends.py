"""How ``nnemu query`` reads line ends, a file cut mid-line and HTML with two ftrace blocks:
as Perfetto's trace processor reads them (checked against ``trace_processor_shell`` when it
is present)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.commands import run_query, trace_processor_shell

SLICES = "SELECT ts, dur, name, depth FROM slice ORDER BY id"


def _row(seconds: float, payload: str, tid: int = 200) -> str:
    return f"             app-{tid:<5} ({tid:>5}) [000] ...1 {seconds:.6f}: tracing_mark_write: {payload}"


ROWS = [_row(1.0, "B|200|outer"), _row(1.5, "B|200|inner"), _row(1.8, "E|200"), _row(2.0, "E|200")]


def _write(path: Path, text: str) -> Path:
    path.write_bytes(text.encode("utf-8"))
    return path


def _slices(path: Path) -> tuple[list[str], str]:
    code, out, err = run_query(path, SLICES, as_csv=True)
    assert code == 0, err
    return out.splitlines()[1:], err


def _perfetto(path: Path, tmp_path: Path) -> list[str]:
    shell = trace_processor_shell()
    sql = tmp_path / "q.sql"
    sql.write_text(SLICES)
    done = subprocess.run(
        [shell, "-q", str(sql), str(path)], capture_output=True, text=True, check=True
    )
    return [line.replace('"', "") for line in done.stdout.strip().splitlines()[1:]]


def test_crlf_line_ends_give_the_slices_of_lf_ones(tmp_path: Path) -> None:
    """A trace written with CRLF line ends has the same slices, names without the CR."""
    lf = _write(tmp_path / "lf.txt", "# tracer: nop\n" + "\n".join(ROWS) + "\n")
    crlf = _write(tmp_path / "crlf.txt", "# tracer: nop\r\n" + "\r\n".join(ROWS) + "\r\n")
    assert _slices(crlf) == _slices(lf)
    assert _slices(crlf)[0][1] == "1500000000,300000000,inner,1"


@pytest.mark.parametrize("cut", [3, 9])
def test_a_row_cut_mid_line_at_the_end_of_the_file_is_skipped_with_a_warning(
    tmp_path: Path, cut: int
) -> None:
    """The last row of a file that ends without a line break (``E|`` of ``E|200``, a begin
    cut in its name) is skipped with a warning at its line, as trace processor skips it: the
    cut E closes nothing, the cut begin is no slice."""
    ended = [*ROWS[:3], ROWS[3][:-3]] if cut == 3 else [ROWS[0], ROWS[1][:-cut]]
    path = _write(tmp_path / "cut.txt", "# tracer: nop\n" + "\n".join(ended))
    slices, err = _slices(path)
    last = len(ended) + 1
    assert (
        f"cut.txt:{last}: warning: the file ends mid-line (no line break after this row): row"
        " skipped, as Perfetto's trace processor skips it" in err
    )
    if cut == 3:
        assert slices == ["1000000000,-1,outer,0", "1500000000,300000000,inner,1"]
    else:
        assert slices == ["1000000000,-1,outer,0"]


def test_a_cut_last_row_is_skipped_in_a_trace_read_again_in_time_order(tmp_path: Path) -> None:
    """Read again in time order (a row out of it), a cut last row is skipped there too."""
    rows = [ROWS[0], ROWS[2], ROWS[1], ROWS[3][:-3]]  # the E before its begin
    path = _write(tmp_path / "cut.txt", "# tracer: nop\n" + "\n".join(rows))
    slices, err = _slices(path)
    assert "rows out of time order" in err
    assert "cut.txt:5: warning: the file ends mid-line" in err
    assert slices == ["1000000000,-1,outer,0", "1500000000,300000000,inner,1"]


def test_a_cut_file_gives_trace_processors_slices(tmp_path: Path) -> None:
    """trace_processor_shell gives the same slices for the cut files above."""
    for name, rows in (("e.txt", [*ROWS[:3], ROWS[3][:-3]]), ("b.txt", [ROWS[0], ROWS[1][:-4]])):
        path = _write(tmp_path / name, "# tracer: nop\n" + "\n".join(rows))
        assert _slices(path)[0] == _perfetto(path, tmp_path)


COLUMNS = (
    "#           TASK-PID    TGID   CPU#  ||||    TIMESTAMP  FUNCTION\n"
    "#              | |        |      |   ||||       |         |\n"
)
"""The column header systrace writes (trace processor reads no HTML block without it)."""


def _html(blocks: list[list[str]]) -> str:
    head = "<!DOCTYPE html>\n<html>\n<head>\n<title>Android System Trace</title>\n</head>\n<body>\n"
    body = "".join(
        '  <script class="trace-data" type="application/text">\n# tracer: nop\n#\n'
        + COLUMNS
        + "\n".join(rows)
        + "\n  </script>\n"
        for rows in blocks
    )
    return head + body + "<!-- END TRACE -->\n</body>\n</html>\n"


def test_html_with_two_ftrace_blocks_is_read_from_the_first(tmp_path: Path) -> None:
    """Of two ftrace blocks in systrace HTML only the first is read, as trace processor and
    Android's parser read it."""
    second = [_row(3.0, "B|300|second", 300), _row(4.0, "E|300", 300)]
    path = _write(tmp_path / "two.html", _html([ROWS, second]))
    slices, err = _slices(path)
    assert err == ""
    assert slices == ["1000000000,1000000000,outer,0", "1500000000,300000000,inner,1"]


def test_html_with_two_ftrace_blocks_agrees_with_trace_processor(tmp_path: Path) -> None:
    """trace_processor_shell reads the same slices of such a file."""
    second = [_row(3.0, "B|300|second", 300), _row(4.0, "E|300", 300)]
    path = _write(tmp_path / "two.html", _html([ROWS, second]))
    assert _slices(path)[0] == _perfetto(path, tmp_path)
