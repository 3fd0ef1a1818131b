"""Ctrl-C and SIGTERM around ``nnemu run --html``: before the run, after it while the outputs
are written; one line said, the exit code of the signal, no traceback."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

import nnemu.cli
import nnemu.pictures
from tests.commands import run_cli

REPO = Path(__file__).resolve().parents[3]
TWO_APPS = str(REPO / "scenarios/two_apps_one_npu.yaml")


def test_ctrl_c_before_the_run_ends_the_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Ctrl-C while nnemu starts (logging being set up) says "interrupted by SIGINT" on a line of its
    own and exits 130."""

    def interrupted(*_args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(nnemu.cli, "configure_logging", interrupted)
    assert run_cli("run", TWO_APPS) == (130, "", "interrupted by SIGINT\n")


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_while_the_page_is_written_lets_it_finish(
    signum: signal.Signals, code: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A signal that comes after the run, while the page is rendered, waits for the page and
    the report to be written, then ends nnemu with the signal's exit code and one line."""
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    render = nnemu.pictures._html.render_html
    calls: list[int] = []

    def render_with_signal(*args: object) -> str:
        calls.append(1)
        signal.raise_signal(signum)
        return render(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(nnemu.pictures._html, "render_html", render_with_signal)
    page, report = tmp_path / "run.html", tmp_path / "report.json"
    got, out, err = run_cli("run", TWO_APPS, "--html", str(page), "--report", str(report))
    assert calls == [1]
    assert got == code
    name = signal.Signals(signum).name
    assert err == f"interrupted by {name} after the run ended: its outputs were written\n"
    assert f"pictures written to {page}" in out
    assert page.read_text(encoding="utf-8").rstrip().endswith("</html>")
    assert report.stat().st_size > 0
    assert {s: signal.getsignal(s) for s in before} == before


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_second_signal_while_writing_stops_at_once(
    signum: signal.Signals, code: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second Ctrl-C (or SIGTERM) while the outputs are written stops nnemu there, before the
    page is rendered: "interrupted by SIGINT" (SIGTERM), 130 (143); the handlers are restored."""
    # SIGTERM's handler as the console script (console_main) installs it.
    previous_term = signal.signal(signal.SIGTERM, nnemu.cli._terminate)
    render = nnemu.pictures._html.render_html
    rendered: list[int] = []

    def render_with_two(*args: object) -> str:
        signal.raise_signal(signum)
        signal.raise_signal(signum)
        rendered.append(1)
        return render(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(nnemu.pictures._html, "render_html", render_with_two)
    try:
        code_got, _, err = run_cli("run", TWO_APPS, "--html", str(tmp_path / "run.html"))
        assert (code_got, err) == (code, f"interrupted by {signal.Signals(signum).name}\n")
        assert rendered == []  # the second signal stopped it inside the rendering
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        assert signal.getsignal(signal.SIGTERM) is nnemu.cli._terminate
    finally:
        signal.signal(signal.SIGTERM, previous_term)
