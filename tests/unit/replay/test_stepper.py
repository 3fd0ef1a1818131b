"""Manual control: a scripted prompt stops at HAL calls, events and times; Ctrl-C handling."""

from __future__ import annotations

import io
import re
import signal
from pathlib import Path

from nnemu import run
from nnemu.replay import PROMPT, Stepper
from nnemu.scenario import load_scenario
from nnemu.tracer import open_trace_writer
from tests.unit.replay.helpers import QUICKSTART, assert_balanced

_STOP = re.compile(r"^\[(\d+\.\d+) s\] ", re.MULTILINE)


def _stepped(commands: str, tmp_path: Path, **kwargs: object) -> tuple[Stepper, str, dict]:
    stdin, out = io.StringIO(commands), io.StringIO()
    stepper = Stepper(stdin, out, **kwargs)  # type: ignore[arg-type]
    trace = tmp_path / "t.html"
    report = run(
        load_scenario(QUICKSTART),
        sinks=[stepper.new_sink(), open_trace_writer(trace)],
        attach=stepper.attach,
    )
    assert_balanced(trace)
    return stepper, out.getvalue(), dict(report.data)


def test_n_stops_at_the_next_hidl_call(tmp_path: Path):
    """`n` from the start stops at the first HIDL transaction and names it; the run then completes."""
    stepper, out, data = _stepped("n\nc\n", tmp_path, manual=True)
    assert "start of the run" in out
    assert "HAL call HIDL::IDevice::getCapabilities_1_3 from camera" in out
    assert stepper.stops == 2
    assert data["apps"]["camera"]["completed"] == 30


def test_enter_repeats_and_ni_steps_kernel_events(tmp_path: Path):
    """Enter repeats `n` (the next HIDL call each time); `ni` stops at the next kernel event."""
    _, out, _ = _stepped("n\n\n\nni\nc\n", tmp_path, manual=True)
    calls = re.findall(r"HAL call (HIDL::\S+)", out)
    assert calls == [
        "HIDL::IDevice::getCapabilities_1_3",
        "HIDL::IDevice::getVersionString",
        "HIDL::IDevice::getType",
    ]
    assert re.search(r"next kernel event at \d+\.\d+ s: (wake|call) ", out)


def test_c_ms_and_s_timestamp_stop_at_virtual_times(tmp_path: Path):
    """`c 5` stops at the first event at least 5 ms later; `s 0.1` at the first event from 0.1 s."""
    _, out, data = _stepped("c 5\ns 0.1\nc\n", tmp_path, manual=True)
    stops = [float(t) for t in _STOP.findall(out)]
    assert stops[0] == 0.0
    assert "stop at 0.005000 s" in out
    assert "stop at 0.100000 s" in out
    next_events = [float(t) for t in re.findall(r"next kernel event at (\d+\.\d+) s", out)]
    assert next_events[0] >= 0.005
    assert next_events[1] >= 0.1
    assert stops[2] < 0.1  # virtual time is frozen before the event at or after 0.1 s
    assert data["apps"]["camera"]["completed"] == 30


def test_repeated_c_ms_never_announces_a_stop_in_the_past(tmp_path: Path):
    """After `c 5`, Enter counts 5 ms from the pending event: every stop target is at or after the clock."""
    _, out, data = _stepped("c 5\n\n\n\n\nc\n", tmp_path, manual=True)
    stops = re.findall(
        r"^\[(\d+\.\d+) s\] stop at (\d+\.\d+) s: the next kernel event at (\d+\.\d+)", out, re.M
    )
    assert len(stops) == 5
    for now, target, upcoming in stops:
        assert float(now) <= float(target) <= float(upcoming)
    assert data["apps"]["camera"]["completed"] == 30


def test_l_lists_threads_in_calls(tmp_path: Path):
    """`l` shows the virtual time and each thread's open sections, innermost last."""
    _, out, _ = _stepped("s 0.04\nl\nc\n", tmp_path, manual=True)
    listing = out.split("(nnemu) l\n", 1)[1]
    assert listing.startswith("virtual time 0.0")
    assert "camera (pid 707, tid 707): [NN_LA_PO]camera" in listing
    assert "camera-exec1 (pid 707, tid 712): [NN_LA_PE]execute > " in listing


def test_eof_continues_to_the_end(tmp_path: Path):
    """End of input at the prompt means `c`: the run finishes normally."""
    stepper, out, data = _stepped("", tmp_path, manual=True)
    assert out.count(PROMPT) == 1
    assert "c (end of input)" in out
    assert not stepper.aborted
    assert data["apps"]["camera"]["completed"] == 30


def test_s_option_runs_to_a_timestamp_then_prompts(tmp_path: Path):
    """`stop_at_s` (replay -s) runs without a prompt until that virtual time."""
    _, out, _ = _stepped("l\nc\n", tmp_path, stop_at_s=0.5)
    assert out.startswith("[0.4")
    assert "stop at 0.500000 s" in out


def test_q_ends_the_run_with_a_valid_trace(tmp_path: Path):
    """`q` stops the kernel at the current virtual time; the trace is still balanced."""
    stepper, _, data = _stepped("s 0.2\nq\n", tmp_path, manual=True)
    assert stepper.aborted
    assert data["virtual_ms"] < 200
    assert data["apps"]["camera"]["completed"] < 30


def test_bad_commands_keep_the_prompt(tmp_path: Path):
    """Unknown commands and bad numbers print a message and prompt again; h prints help."""
    _, out, _ = _stepped("x\nc -1\ns abc\nh\nc\n", tmp_path, manual=True)
    assert "unknown command 'x'; h for help" in out
    assert "c: expected a number of milliseconds >= 0, got '-1'" in out
    assert "s: expected a number of seconds >= 0, got 'abc'" in out
    assert "run to the next HAL call" in out


class _InterruptingInput(io.StringIO):
    """Scripted input that simulates Ctrl-C on its ``n``-th read (while the prompt waits)."""

    def __init__(self, text: str, stepper: list[Stepper], at_read: int) -> None:
        super().__init__(text)
        self._stepper = stepper
        self._reads = 0
        self._at = at_read

    def readline(self, size: int = -1) -> str:  # type: ignore[override]
        self._reads += 1
        if self._reads == self._at:
            self._stepper[0].on_sigint(signal.SIGINT, None)
        return super().readline(size)


def _interrupted_run(
    tmp_path: Path,
    stdin: io.StringIO,
    at_ticks: dict[int, int],
    holder: list[Stepper] | None = None,
    **kwargs: object,
):
    """Run the quickstart under a stepper reading ``stdin``, with ``at_ticks[n]`` Ctrl-Cs at
    the n-th progress tick (100 ms of virtual time each); the trace must stay balanced."""
    out = io.StringIO()
    stepper = Stepper(stdin, out, **kwargs)  # type: ignore[arg-type]
    if holder is not None:
        holder.append(stepper)
    trace = tmp_path / "t.html"
    ticks = [0]

    def progress(_emulator: object) -> None:
        ticks[0] += 1
        for _ in range(at_ticks.get(ticks[0], 0)):
            stepper.on_sigint(signal.SIGINT, None)

    report = run(
        load_scenario(QUICKSTART),
        sinks=[stepper.new_sink(), open_trace_writer(trace)],
        attach=stepper.attach,
        progress=progress,
    )
    assert_balanced(trace)
    return stepper, out.getvalue(), dict(report.data)


def test_interrupt_switches_to_manual_control_and_a_second_at_the_prompt_ends(tmp_path: Path):
    """Ctrl-C while running prompts at the next event; Ctrl-C at the prompt ends the run cleanly."""
    holder: list[Stepper] = []
    stdin = _InterruptingInput("l\nc\n", holder, at_read=3)
    # Ctrl-C at 100 ms and 300 ms of virtual time; the trace stays balanced.
    stepper, text, data = _interrupted_run(tmp_path, stdin, {1: 1, 3: 1}, holder)
    assert text.count("interrupted by SIGINT; next kernel event") == 2
    assert "virtual time 0.1" in text  # `l` after the first interrupt
    assert "interrupted by SIGINT: ending the run" in text
    assert stepper.aborted
    assert 300 <= data["virtual_ms"] < 400
    assert data["apps"]["camera"]["completed"] < 30


def test_two_interrupts_while_running_end_the_run(tmp_path: Path):
    """A second Ctrl-C before the prompt shows ends the run at the next event, trace valid."""
    stepper, out, data = _interrupted_run(tmp_path, io.StringIO("c\n"), {2: 2})
    assert stepper.aborted
    assert PROMPT not in out
    assert 200 <= data["virtual_ms"] < 300
    assert data["apps"]["camera"]["completed"] < 30


def test_an_interrupt_with_no_input_ends_the_run(tmp_path: Path):
    """Ctrl-C with standard input at its end (``< /dev/null``) ends the run at the next event:
    there is no one to take control, so it is not swallowed by a prompt that reads nothing."""
    stepper, out, data = _interrupted_run(tmp_path, io.StringIO(""), {2: 1})
    assert "interrupted by SIGINT; next kernel event" in out
    assert "end of input: ending the run" in out
    assert "c (end of input)" not in out
    assert stepper.aborted
    assert 200 <= data["virtual_ms"] < 300
    assert data["apps"]["camera"]["completed"] < 30


def test_an_interrupt_after_the_script_ran_out_ends_the_run(tmp_path: Path):
    """Once scripted input has ended (``c`` at its end), a Ctrl-C ends the run without a prompt."""
    stepper, out, data = _interrupted_run(tmp_path, io.StringIO(""), {2: 1}, manual=True)
    assert out.count(PROMPT) == 1  # the start's prompt, which read the end of input
    assert "c (end of input)" in out
    assert stepper.aborted
    assert 200 <= data["virtual_ms"] < 300


def test_handler_is_installed_only_inside_the_block():
    """handling_sigint installs on_sigint for the block and restores the previous handler."""
    stepper = Stepper(io.StringIO(), io.StringIO())
    before = signal.getsignal(signal.SIGINT)
    with stepper.handling_sigint():
        assert signal.getsignal(signal.SIGINT) == stepper.on_sigint
    assert signal.getsignal(signal.SIGINT) == before
