"""A Chrome JSON event with a field of the wrong type (``"pid": "x"``, a non-number ``ts``,
no ``ph``, not an object) is skipped by ``nnemu parse``, ``query`` and ``replay`` alike, each
saying so with the same ``FILE:LINE: warning:`` line at the line the event is on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nnemu.query import open_trace
from nnemu.trace import (
    NO_DUR,
    NO_PHASE,
    NO_PID_TID,
    NOT_AN_EVENT,
    negative_dur,
    negative_ts,
    not_a_number_dur,
    not_a_number_ts,
)
from tests.commands import run_cli

COMMANDS = ((("parse",), ()), (("query",), ("select 1",)), (("replay", "-n"), ()))
GOOD = [
    {"ph": "B", "pid": 1, "tid": 6, "ts": 40, "name": "[NN_LA_PE]good"},
    {"ph": "E", "pid": 1, "tid": 6, "ts": 50},
]


def _write(path: Path, events: list[object]) -> Path:
    """One event a line, as nnemu and Chrome write JSON."""
    body = ",\n".join(json.dumps(event) for event in events)
    path.write_text('{"traceEvents": [\n' + body + "\n]}\n")
    return path


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if ": warning: " in line]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"ph": "B", "pid": "x", "tid": 5, "ts": 10, "name": "a"}, NO_PID_TID),
        ({"ph": "B", "pid": 1, "tid": [5], "ts": 10, "name": "a"}, NO_PID_TID),
        ({"ph": "B", "pid": 1, "tid": 5, "ts": "abc", "name": "a"}, not_a_number_ts("abc")),
        ({"ph": "E", "pid": 1, "tid": 5, "ts": None}, not_a_number_ts(None)),
        ({"ph": "B", "pid": 1, "tid": 5, "ts": -5, "name": "a"}, negative_ts(-5)),
        ({"pid": 1, "tid": 5, "ts": 10, "name": "a"}, NO_PHASE),
        ([1, 2], NOT_AN_EVENT),
    ],
    ids=["pid-text", "tid-list", "ts-text", "ts-null", "ts-negative", "no-ph", "not-object"],
)
def test_every_reader_warns_of_the_event_at_its_line(tmp_path, bad, message):
    """parse, query and replay each skip the event with the same warning at its file line
    (query loaded ``"pid": "x"`` silently and replay skipped every such event silently) and
    exit 0 with the good events read."""
    path = _write(tmp_path / "t.json", [*GOOD[:1], bad, *GOOD[1:]])
    for command, after in COMMANDS:
        code, _out, err = run_cli(*command, str(path), *after)
        assert code == 0, err
        assert _warnings(err) == [f"{path}:3: warning: {message}"], command
    conn = open_trace(str(path))
    try:
        assert conn.execute("SELECT name, dur FROM slice").fetchall() == [
            ("[NN_LA_PE]good", 10_000)
        ]
    finally:
        conn.close()


def test_a_document_warns_once_per_event_after_the_line_reading_gave_up(tmp_path):
    """An event without ph ends query's one-event-a-line reading; the document read after
    it warns of the events before it once, not twice (the second time without a line)."""
    events = [
        GOOD[0],
        {"ph": "B", "pid": 1, "tid": 6, "ts": "abc", "name": "b"},
        {"pid": 1, "tid": 6, "ts": 30, "name": "c"},
        GOOD[1],
    ]
    path = _write(tmp_path / "t.json", events)
    expected = [
        f"{path}:3: warning: {not_a_number_ts('abc')}",
        f"{path}:4: warning: {NO_PHASE}",
    ]
    for command, after in COMMANDS:
        code, _out, err = run_cli(*command, str(path), *after)
        assert code == 0, err
        assert _warnings(err) == expected, command


def test_replay_counts_what_it_does_not_show(tmp_path):
    """Past 20 skipped events replay prints one line counting the rest, as query does."""
    bad = [{"ph": "B", "pid": "x", "tid": 5, "ts": 10, "name": "a"}] * 25
    path = _write(tmp_path / "t.json", [GOOD[0], *bad, GOOD[1]])
    code, _out, err = run_cli("replay", "-n", str(path))
    assert code == 0, err
    warnings = _warnings(err)
    assert warnings[:20] == [f"{path}:{line}: warning: {NO_PID_TID}" for line in range(3, 23)]
    assert warnings[20:] == [f"{path}: warning: 5 more events skipped (not shown)"]


@pytest.mark.parametrize(
    ("dur", "message"),
    [("abc", not_a_number_dur("abc")), (None, NO_DUR), (-3, negative_dur(-3))],
    ids=["text", "missing", "negative"],
)
def test_a_complete_event_without_a_good_dur_is_skipped_with_a_warning(tmp_path, dur, message):
    """An X event whose dur is no number, missing or negative is skipped by query (it loaded
    as 0 long, or ending before it began) and replay, both saying so at its line, as
    Perfetto's trace processor drops it; parse reads no X events and says nothing."""
    bad: dict[str, object] = {"ph": "X", "pid": 1, "tid": 6, "ts": 60, "name": "[NN_LA_PE]x"}
    if dur is not None:
        bad["dur"] = dur
    path = _write(tmp_path / "t.json", [*GOOD, bad])
    expected = [f"{path}:4: warning: {message}"]
    for command, after in COMMANDS[1:]:
        code, _out, err = run_cli(*command, str(path), *after)
        assert code == 0, err
        assert _warnings(err) == expected, command
    code, _out, err = run_cli("parse", str(path))
    assert code == 0, err
    assert _warnings(err) == []
    conn = open_trace(str(path))
    try:
        assert conn.execute("SELECT name FROM slice").fetchall() == [("[NN_LA_PE]good",)]
    finally:
        conn.close()


def test_an_instant_of_the_wrong_shape_is_said_only_by_query(tmp_path):
    """An ``i`` event whose pid is no number is skipped with a warning by query, which loads
    instants (as trace processor does); parse and replay, which read none, say nothing."""
    bad = {"ph": "i", "pid": "x", "tid": 6, "ts": 45, "name": "[NN_LA_PE]i", "s": "t"}
    path = _write(tmp_path / "t.json", [*GOOD[:1], bad, *GOOD[1:]])
    code, _out, err = run_cli("query", str(path), "select 1")
    assert code == 0, err
    assert _warnings(err) == [f"{path}:3: warning: {NO_PID_TID}"]
    for command in (("parse",), ("replay", "-n")):
        code, _out, err = run_cli(*command, str(path))
        assert code == 0, err
        assert _warnings(err) == [], command
