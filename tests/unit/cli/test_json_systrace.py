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
