"""``nnemu parse`` of a Chrome JSON trace reads its canonical events (``TraceEvents``): the
process names of its metadata wherever they are in the file, a thread's name as its rows'
task, and events out of time order read again in time order."""

from __future__ import annotations

import json
from pathlib import Path

from tests.commands import run_cli

C17 = Path(__file__).resolve().parents[2] / "diff" / "c17-chrome-json" / "trace.json"


def _events() -> list[dict[str, object]]:
    """c17's events (one a line between its header and its last line)."""
    return [json.loads(line.rstrip(",\n")) for line in C17.read_text().splitlines()[1:-1]]


def _write(path: Path, events: list[dict[str, object]]) -> Path:
    body = ",\n".join(json.dumps(event) for event in events)
    path.write_text('{"traceEvents": [\n' + body + "\n]}\n")
    return path


def _parse(path: Path) -> tuple[str, str]:
    code, out, err = run_cli("parse", str(path))
    assert code == 0, err
    return out, err


def test_events_in_reverse_file_order_give_the_tables_of_the_file(tmp_path: Path):
    """The events latest first (metadata last, each end before its begin; events of one
    time in file order) are read again in time order: the same tables, with one warning
    that says so."""
    expected, _ = _parse(C17)
    events = _events()
    order = sorted(range(len(events)), key=lambda i: (-float(events[i].get("ts", -1)), i))
    out, err = _parse(_write(tmp_path / "reversed.json", [events[i] for i in order]))
    assert out == expected
    assert "matched in time order, as Perfetto matches them" in err


def test_a_main_threads_name_names_its_process(tmp_path: Path):
    """Without process_name metadata, a process is named by its main thread's thread_name
    (as a row's task names it in ftrace text)."""
    events = [event for event in _events() if event.get("name") != "process_name"]
    out, _ = _parse(_write(tmp_path / "threads.json", events))
    assert "=== process first (pid 1000), run 1 of 1" in out
    assert "=== process second (pid 3000), run 1 of 1" in out
