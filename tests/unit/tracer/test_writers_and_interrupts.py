"""The writers produce valid documents, and an interrupted run still leaves a balanced trace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nnemu import open_emulator, run
from nnemu.parser import parse_file
from nnemu.scenario import load_scenario, load_scenario_text
from nnemu.sim import SimThread
from nnemu.tracer import FtraceWriter, open_trace_writer
from tests.unit.tracer.helpers import scenario_text

_UNBALANCED = ("still open", "no open section", "no closing </script>")


def _balanced(path: Path) -> None:
    result = parse_file(path)
    problems = [d.message for d in result.diagnostics if any(t in d.message for t in _UNBALANCED)]
    assert problems == []
    assert result.runs


@pytest.mark.parametrize("suffix", [".html", ".txt", ".json"])
def test_writers_produce_valid_output(tmp_path: Path, suffix: str):
    """HTML has the trace-data block, text is ftrace, JSON loads with balanced B/E events."""
    path = tmp_path / f"t{suffix}"
    run(
        load_scenario_text(scenario_text(executions=2, preset="add")),
        sinks=[open_trace_writer(path)],
    )
    text = path.read_text(encoding="utf-8")
    if suffix == ".json":
        events = json.loads(text)["traceEvents"]
        begins = sum(1 for e in events if e["ph"] == "B")
        assert begins == sum(1 for e in events if e["ph"] == "E") > 0
        return
    assert "# tracer: nop" in text
    if suffix == ".html":
        assert '<script class="trace-data" type="application/text">' in text
        assert text.rstrip().endswith("</html>")
    _balanced(path)


def test_ftrace_stamps_are_seconds_and_six_decimals_across_second_boundaries(tmp_path: Path):
    """Each line's stamp is whole seconds and µs, in the first second, across a boundary, far
    out and back again (the writer keeps the current second's text between batches)."""
    path = tmp_path / "t.txt"
    writer = FtraceWriter(path.open("w", encoding="utf-8"))
    thread = SimThread(10001, 10002, "app")
    times_ns = [1_000, 999_999_000, 1_000_000_000, 1_000_001_000, 12_345_678_000, 3_000_001_000]
    writer.receive([(ts, thread, "x", None) for ts in times_ns[:3]])
    writer.receive([(ts, thread, None, None) for ts in times_ns[3:]])
    writer.close()
    stamps = [line.split()[4] for line in path.read_text().splitlines() if "tracing_mark" in line]
    assert stamps == [
        "0.000001:",
        "0.999999:",
        "1.000000:",
        "1.000001:",
        "12.345678:",
        "3.000001:",
    ]


def test_ftrace_writer_writes_the_same_text_to_a_binary_file_a_text_file_and_a_text_object(
    tmp_path: Path,
):
    """The lines made as UTF-8 bytes reach a binary file as they are and a text stream decoded,
    non-ASCII section and thread names included, so every kind of output reads the same."""

    class _Pieces:  # a text object that is no io stream (as the per-layer tables' sink)
        def __init__(self) -> None:
            self.pieces: list[str] = []

        def write(self, text: str) -> int:
            self.pieces.append(text)
            return len(text)

        def close(self) -> None:
            pass

    binary_path, text_path = tmp_path / "b.html", tmp_path / "t.html"
    pieces = _Pieces()
    writers = [
        FtraceWriter(binary_path.open("wb"), html=True),
        FtraceWriter(text_path.open("w", encoding="utf-8", newline="\n"), html=True),
        FtraceWriter(pieces, html=True),  # type: ignore[arg-type]
    ]
    thread = SimThread(10001, 10002, "caméra-αβγ")
    events = [
        (1_000, thread, "[NN_LA_PE]ANeuralNetworksExecution_compute·ünïcode", None),
        (2_000, thread, None, None),
        (1_500_003_000, thread, "x", None),
        (1_500_003_000, thread, None, None),
    ]
    for writer in writers:
        writer.process(10001, "com.example.αβγ")
        writer.receive(events[:2])
        writer.receive(events[2:])
        writer.close()
    text = text_path.read_text(encoding="utf-8")
    assert binary_path.read_bytes() == text.encode("utf-8")
    assert "".join(pieces.pieces) == text
    assert (
        "     caméra-αβγ-10002 (10001) [002] ...1 0.000001: tracing_mark_write: "
        "B|10001|[NN_LA_PE]ANeuralNetworksExecution_compute·ünïcode\n"
    ) in text
    assert "1.500003: tracing_mark_write: E|10001\n" in text


class _Boom(Exception):
    pass


@pytest.mark.parametrize("error", [_Boom, KeyboardInterrupt])
def test_interrupted_run_closes_every_section(tmp_path: Path, error: type[BaseException]):
    """An exception raised inside the emulation (or Ctrl-C) still writes a trace with every section closed."""
    import trio
    import trio.testing

    path = tmp_path / "t.html"
    scenario = load_scenario_text(scenario_text(executions=50, preset="mobilenet_v1"))

    async def main() -> None:
        async with open_emulator(scenario, sinks=[open_trace_writer(path)]) as emulator:
            emulator.kernel.call_at(40_000_000, lambda: (_ for _ in ()).throw(error()))
            await emulator.run()

    with pytest.raises((error, BaseExceptionGroup)):
        trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    text = path.read_text(encoding="utf-8")
    assert "[NN_LA_PE]" in text
    _balanced(path)


def _two_apps_trace(path: Path) -> None:
    run(
        load_scenario(Path(__file__).resolve().parents[3] / "scenarios/two_apps_one_npu.yaml"),
        sinks=[open_trace_writer(path)],
    )


def test_html_trace_names_its_processes(tmp_path: Path):
    """The HTML holds a PROCESS DUMP before the marks, so nnemu query names the driver service."""
    from nnemu.query import open_trace

    path = tmp_path / "t.html"
    _two_apps_trace(path)
    text = path.read_text(encoding="utf-8")
    dump = text.index("PROCESS DUMP\n")
    assert dump < text.index("# tracer: nop") < text.index("tracing_mark_write")
    conn = open_trace(str(path))
    try:
        names = dict(conn.execute("SELECT pid, name FROM process").fetchall())
    finally:
        conn.close()
    assert names == {
        700: "android.hardware.neuralnetworks@1.3-service-npu",
        707: "camera",
        713: "indexer",
    }


def test_perfetto_reads_the_process_names(tmp_path: Path):
    """Perfetto's trace processor names the driver service from the systrace's PROCESS DUMP."""
    import subprocess

    from tests.commands import trace_processor_shell

    shell = trace_processor_shell()
    path = tmp_path / "t.html"
    _two_apps_trace(path)
    query = tmp_path / "q.sql"
    query.write_text("select pid, name from process where pid >= 700 order by pid")
    done = subprocess.run(
        [shell, "-q", str(query), str(path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-3:] == [
        '700,"android.hardware.neuralnetworks@1.3-service-npu"',
        '707,"camera"',
        '713,"indexer"',
    ]
