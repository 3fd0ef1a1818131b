"""``nnemu.run`` for library callers: its own exceptions unwrapped, signals ending a run cleanly."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

import pytest

import nnemu
from nnemu.errors import Interrupted, OutputError
from nnemu.parser import parse_file
from nnemu.sim import SimThread
from nnemu.tracer import open_trace_writer

REPO = Path(__file__).resolve().parents[3]
QUICKSTART = REPO / "scenarios/quickstart.yaml"


class _FailingSink:
    """A sink whose 5th mark fails as a broken device would."""

    def __init__(self, error: Exception) -> None:
        self.error = error
        self.marks = 0

    def process(self, pid: int, name: str) -> None:
        pass

    def begin(self, ts_ns: int, thread: SimThread, name: str) -> None:
        self.marks += 1
        if self.marks == 5:
            raise self.error

    def end(self, ts_ns: int, thread: SimThread) -> None:
        pass

    def close(self) -> None:
        pass


def test_an_error_inside_the_emulation_reaches_the_caller_unwrapped():
    """An exception raised in an emulated task is raised by nnemu.run as itself, not in a group."""
    with pytest.raises(OSError, match="sink broke") as info:
        nnemu.run(nnemu.load_scenario(QUICKSTART), sinks=[_FailingSink(OSError("sink broke"))])
    assert not isinstance(info.value, BaseExceptionGroup)


def test_a_full_disk_is_an_output_error_naming_the_file():
    """A trace written to /dev/full ends the run with OutputError naming the path."""
    with pytest.raises(OutputError) as info:
        nnemu.run(nnemu.load_scenario(QUICKSTART), sinks=[open_trace_writer("/dev/full")])
    assert str(info.value) == "/dev/full: cannot write the trace: No space left on device"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_stops_the_run_between_kernel_steps(tmp_path: Path, signum: int):
    """With handle_signals, a signal mid-run raises Interrupted with the partial report; the trace is whole."""
    scenario = nnemu.load_scenario(QUICKSTART)
    trace = tmp_path / "t.html"

    def attach(emulator: nnemu.Emulator) -> None:
        emulator.kernel.call_at(500_000_000, lambda: signal.raise_signal(signum))

    with pytest.raises(Interrupted) as info:
        nnemu.run(
            scenario,
            sinks=[open_trace_writer(trace)],
            attach=attach,
            handle_signals=True,
        )
    report = info.value.report
    assert report is not None
    assert report.data["interrupted"] == signal.Signals(signum).name
    assert report.data["virtual_ms"] == pytest.approx(500.0, abs=1.0)
    assert 10 < report.data["apps"]["camera"]["completed"] < 30
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handlers restored
    result = parse_file(trace)
    assert not [d for d in result.diagnostics if "still open" in d.message]


def test_a_signal_cuts_a_realtime_wait_short():
    """Under --realtime a signal ends the run at once, not after the wall-clock wait in progress."""
    scenario = nnemu.load_scenario(QUICKSTART)  # ~1 s of virtual (here: wall) time
    before = signal.getsignal(signal.SIGTERM)
    finished = threading.Event()

    def terminate_once_handled() -> None:
        # A fixed 0.2 s timer raced the run's start on a loaded machine: a SIGTERM before
        # nnemu's handler is installed (or after it is removed) kills pytest itself.
        deadline = time.monotonic() + 60
        while signal.getsignal(signal.SIGTERM) is before:
            if finished.wait(0.01) or time.monotonic() > deadline:
                return
        if not finished.wait(0.2) and signal.getsignal(signal.SIGTERM) is not before:
            signal.raise_signal(signal.SIGTERM)

    timer = threading.Thread(target=terminate_once_handled)
    timer.start()
    try:
        with pytest.raises(Interrupted) as info:
            nnemu.run(scenario, realtime=True, handle_signals=True)
    finally:
        finished.set()
        timer.join()
    assert info.value.report is not None
    assert info.value.report.data["virtual_ms"] < 600


class _Processes:
    """A trace sink or observer that only notes the processes announced to it."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def process(self, pid: int, name: str) -> None:
        self.names.append(name)

    def begin(self, ts_ns: int, thread: SimThread, info: object) -> None:
        pass

    def end(self, ts_ns: int, thread: SimThread) -> None:
        pass

    def close(self) -> None:
        pass


def test_observers_see_every_process_from_the_start():
    """An observer passed to run() is told of every driver and app process, as the sinks are."""
    scenario = nnemu.load_scenario(REPO / "scenarios/two_apps_one_npu.yaml")
    sink, observer = _Processes(), _Processes()
    nnemu.run(scenario, sinks=[sink], observers=[observer])
    assert observer.names == sink.names
    assert len(observer.names) == len(scenario.devices) + len(scenario.apps)
    assert all(any(spec.name in name for name in observer.names) for spec in scenario.devices)


def test_executions_are_kept_only_when_asked():
    """inspect= alone keeps counters only; keep_executions=True keeps every record and device job."""
    scenario = nnemu.load_scenario(QUICKSTART)
    seen: dict[bool, tuple[int, int]] = {}
    for keep in (False, True):

        def inspect(emulator: nnemu.Emulator, keep: bool = keep) -> None:
            records = sum(len(app.records) for app in emulator.apps if app.records is not None)
            jobs = sum(len(s.device.history or ()) for s in emulator.services)
            seen[keep] = (records, jobs)

        report = nnemu.run(scenario, keep_executions=keep, inspect=inspect)
    completed = report.data["apps"]["camera"]["completed"]
    assert seen[False] == (0, 0)
    assert seen[True][0] == completed > 0
    assert seen[True][1] >= completed


def test_run_virtual_runs_an_open_emulator_as_run_does(tmp_path: Path):
    """open_emulator inside run_virtual ends at the virtual time run() reports, with the same trace."""
    scenario = nnemu.load_scenario(QUICKSTART)
    ours, theirs = tmp_path / "ours.html", tmp_path / "run.html"

    async def main() -> int:
        async with nnemu.open_emulator(scenario, sinks=[open_trace_writer(ours)]) as emulator:
            await emulator.run()
            return emulator.kernel.clock_ns

    end_ns = nnemu.run_virtual(main)
    report = nnemu.run(scenario, sinks=[open_trace_writer(theirs)])
    assert end_ns / 1e6 == report.data["virtual_ms"]
    assert ours.read_bytes() == theirs.read_bytes()


def test_run_virtual_stops_its_world_on_a_signal(tmp_path: Path):
    """With handle_signals, run_virtual stops the world main opened and raises Interrupted; the trace is whole."""
    scenario = nnemu.load_scenario(QUICKSTART)
    trace = tmp_path / "t.html"
    reached: list[int] = []

    async def main() -> None:
        async with nnemu.open_emulator(scenario, sinks=[open_trace_writer(trace)]) as emulator:
            emulator.kernel.call_at(300_000_000, lambda: signal.raise_signal(signal.SIGINT))
            await emulator.run()
            reached.append(emulator.kernel.clock_ns)

    with pytest.raises(Interrupted) as info:
        nnemu.run_virtual(main, handle_signals=True)
    assert info.value.signum == signal.SIGINT
    assert reached
    assert 300_000_000 <= reached[0] < 310_000_000
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    result = parse_file(trace)
    assert result.runs
    assert not [d for d in result.diagnostics if "still open" in d.message]
