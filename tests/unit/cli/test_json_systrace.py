"""A Chrome JSON trace that carries its capture's ftrace text in ``systemTraceEvents`` (as
catapult's systrace writes it) is read by parse and replay as query reads it: the text's rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.commands import run_cli

REPO = Path(__file__).resolve().parents[3]
TWO_APPS = str(REPO / "scenarios/two_apps_one_npu.yaml")


@pytest.fixture(name="pair", scope="module")
def _pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """two_apps_one_npu's trace as ftrace text, and the same text in a JSON's systemTraceEvents."""
    where = tmp_path_factory.mktemp("systrace-json")
    text = where / "two.txt"
    code, _out, err = run_cli("run", TWO_APPS, "--trace", str(text))
    assert code == 0, err
    document = {"traceEvents": [], "systemTraceEvents": text.read_text(encoding="utf-8")}
    wrapped = where / "two.json"
    wrapped.write_text(json.dumps(document, indent=1), encoding="utf-8")
    return text, wrapped


def test_parse_reads_the_ftrace_text_of_a_json_trace(pair: tuple[Path, Path]) -> None:
    """parse prints the same tables for the JSON as for the ftrace text it carries."""
    text, wrapped = pair
    code, expected, err = run_cli("parse", str(text))
    assert code == 0, err
    code, out, err = run_cli("parse", str(wrapped))
    assert (code, err) == (0, "")
    assert out == expected


def test_replay_reads_the_ftrace_text_of_a_json_trace(pair: tuple[Path, Path]) -> None:
    """replay extracts the same plan and runs the same replay from the JSON as from the text."""
    text, wrapped = pair
    code, expected, err = run_cli("replay", "-n", str(text))
    assert code == 0, err
    code, out, err = run_cli("replay", "-n", str(wrapped))
    assert code == 0, err
    # Only the first line (the file and its format) and the replay's name differ.
    assert out.replace("two.json (json)", "two.txt (ftrace)") == expected


def test_query_reads_the_ftrace_text_of_a_json_trace(pair: tuple[Path, Path]) -> None:
    """query loads the same slices from the JSON as from the ftrace text."""
    text, wrapped = pair
    sql = "SELECT count(*), sum(dur), count(DISTINCT track_id) FROM slice"
    assert run_cli("query", str(wrapped), sql, "--csv") == run_cli("query", str(text), sql, "--csv")


_MIXED_ROWS = (
    "# tracer: nop\n#\n"
    "          sys-201   (  200) [000] ...1     0.002000: tracing_mark_write: B|200|sys_mid\n"
    "          sys-201   (  200) [000] ...1     0.000800: tracing_mark_write: B|200|sys_early\n"
    "          sys-201   (  200) [000] ...1     0.000900: tracing_mark_write: E|200\n"
    "          sys-201   (  200) [000] ...1     0.002500: tracing_mark_write: E|200\n"
    "          sys-201   (  200) [000] ...1     0.007000: tracing_mark_write: B|x\n"
)


def _mixed(tmp_path: Path) -> Path:
    """A JSON document whose events (one of them out of time order) come first and whose
    systemTraceEvents text (rows out of order, a malformed one) is on line 9, below its key."""
    events = [
        {"ph": "M", "pid": 100, "tid": 101, "name": "thread_name", "args": {"name": "worker"}},
        {"ph": "E", "pid": 100, "tid": 101, "ts": 3000},
        {"ph": "B", "pid": 100, "tid": 101, "ts": 1000, "name": "json_a"},
        {"ph": "B", "pid": 100, "tid": 101, "ts": 5000, "name": "json_late"},
        {"ph": "E", "pid": 100, "tid": 101, "ts": 6000},
    ]
    path = tmp_path / "mixed.json"
    path.write_text(
        '{"traceEvents": [\n'
        + ",\n".join(json.dumps(event) for event in events)
        + '\n],\n"systemTraceEvents":\n'
        + json.dumps(_MIXED_ROWS)
        + "\n}\n",
        encoding="utf-8",
    )
    return path


def test_query_reads_system_rows_and_events_again_in_one_time_order(tmp_path: Path) -> None:
    """A JSON document read again in time order has its systemTraceEvents rows and its events
    in one time order (the slice ids Perfetto's trace processor gives), and each warning on
    the file line it concerns: the text's own line for its rows, not a line of the text."""
    path = _mixed(tmp_path)
    sql = "SELECT id, ts, name FROM slice WHERE name GLOB '[sj]*' ORDER BY id"
    code, out, err = run_cli("query", str(path), sql, "--csv")
    assert code == 0, err
    assert out.splitlines()[1:] == [
        "0,800000,sys_early",
        "1,1000000,json_a",
        "2,2000000,sys_mid",
        "3,5000000,json_late",
    ]
    warnings = err.splitlines()
    assert warnings[0].startswith(f"{path}:4: warning: 3 rows are earlier than the row before")
    assert warnings[1:] == [
        f"{path}:9: warning: malformed begin mark: expected B|<tgid>|<name>; row skipped",
    ]


def test_query_orders_a_mixed_json_as_perfettos_trace_processor(tmp_path: Path) -> None:
    """The slices of the mixed document come in the trace processor's order and with its
    timestamps and durations."""
    from tests.commands import trace_processor_shell

    shell = trace_processor_shell()
    path = _mixed(tmp_path)
    sql = "SELECT id, ts, dur FROM slice ORDER BY id"
    query = tmp_path / "q.sql"
    query.write_text(sql + ";\n", encoding="utf-8")
    import subprocess

    done = subprocess.run(
        [shell, "-q", str(query), str(path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    theirs = [line.replace('"', "") for line in done.stdout.splitlines()[1:]]
    code, out, err = run_cli("query", str(path), sql, "--csv")
    assert code == 0, err
    assert out.splitlines()[1:] == theirs


def _out_of_order(text: str) -> str:
    """``text`` (ftrace) with its first B row whose next row on the thread is its E, at a
    later time, written after that E: an end mark before its begin in the file (an empty
    section, such as nnemu's ``nnemu::qos`` mark, ends at its begin's time: no disorder)."""
    lines = text.splitlines(keepends=True)
    for index, line in enumerate(lines):
        if "tracing_mark_write: B|" not in line:
            continue
        head, stamp = line.split("[", 1)[0], line.split(": tracing_mark_write")[0].split()[-1]
        later = next(j for j in range(index + 1, len(lines)) if lines[j].startswith(head))
        if "tracing_mark_write: E|" in lines[later] and f" {stamp}: " not in lines[later]:
            lines[index], lines[later] = lines[later], lines[index]
            return "".join(lines)
    raise AssertionError("no B row followed by its E")


@pytest.fixture(name="unordered", scope="module")
def _unordered(
    pair: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path]:
    """The pair's ftrace text with an end mark before its begin, and the JSON carrying it."""
    where = tmp_path_factory.mktemp("unordered")
    text = where / "two.txt"
    text.write_text(_out_of_order(pair[0].read_text(encoding="utf-8")), encoding="utf-8")
    document = {"traceEvents": [], "systemTraceEvents": text.read_text(encoding="utf-8")}
    wrapped = where / "two.json"
    wrapped.write_text(json.dumps(document, indent=1), encoding="utf-8")
    return text, wrapped


def test_query_and_replay_read_unordered_system_rows_as_the_text_itself(
    unordered: tuple[Path, Path],
) -> None:
    """Rows out of time order inside systemTraceEvents are matched in time order, as in the
    ftrace text they came from: the same slices in the same order for query, the same plan
    and replay for replay, the warning on the line of the JSON string."""
    text, wrapped = unordered
    sql = "SELECT id, ts, dur, name, depth FROM slice ORDER BY id"
    code, expected, err = run_cli("query", str(text), sql, "--csv")
    assert code == 0, err
    assert "1 row is earlier than the row before it" in err
    code, out, err = run_cli("query", str(wrapped), sql, "--csv")
    assert code == 0, err
    assert out == expected
    line = wrapped.read_text(encoding="utf-8").count("\n", 0, wrapped.read_text().find('"# tracer'))
    assert err.startswith(f"{wrapped}:{line + 1}: warning: 1 row is earlier than the row before")
    code, expected, _ = run_cli("replay", "-n", str(text))
    code, out, _ = run_cli("replay", "-n", str(wrapped))
    assert out.replace("two.json (json)", "two.txt (ftrace)") == expected
