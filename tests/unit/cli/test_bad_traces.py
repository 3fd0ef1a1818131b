"""A cut or malformed trace is reported alike by ``nnemu parse``, ``query`` and ``replay``:
``FILE:LINE: error: what is wrong`` and exit 2, or, for a cut systrace HTML file that can
still be read, the same ``FILE:LINE: warning:`` line."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from nnemu.trace import NO_TRACE_EVENTS, NOT_CHROME_TRACE, TRUNCATED_HTML
from tests.commands import run_cli

REPO = Path(__file__).resolve().parents[3]
QUICKSTART = str(REPO / "scenarios/quickstart.yaml")
COMMANDS = (("parse",), ("query",), ("replay", "-n"))


@pytest.fixture(name="traces", scope="module")
def _traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """quickstart's trace as Chrome JSON and as systrace HTML."""
    where = tmp_path_factory.mktemp("traces")
    texts = {}
    for suffix in ("json", "html"):
        path = where / f"quickstart.{suffix}"
        code, _out, err = run_cli("run", QUICKSTART, "--trace", str(path))
        assert code == 0, err
        texts[suffix] = path.read_text(encoding="utf-8")
    return texts


def _all_say(path: Path) -> list[tuple[int, str]]:
    """(exit code, stderr) of each command on ``path``."""
    said = []
    for command in COMMANDS:
        code, _out, err = run_cli(*command, str(path))
        said.append((int(code), err))
    return said


@pytest.mark.parametrize(
    ("cut", "line", "message"),
    [
        # Half the file: the cut falls inside an event.
        (lambda text: text[: len(text) // 2], None, "not a JSON trace: "),
        # After a whole event line: nothing closes the event list.
        (lambda text: "".join(text.splitlines(True)[:100]), 101, "Expecting value"),
        # An event spoilt in the middle of the file.
        (lambda text: text.replace('"ph"', '"ph":', 1), 2, "Expecting value"),
    ],
    ids=["mid-event", "at-a-line-end", "malformed"],
)
def test_a_bad_json_trace_is_one_error_line_from_every_reader(
    traces: dict[str, str], tmp_path: Path, cut, line: int | None, message: str
) -> None:
    """parse, query and replay refuse a cut or malformed JSON trace with the same
    ``FILE:LINE: error: not a JSON trace: ...`` line and exit 2."""
    path = tmp_path / "bad.json"
    path.write_text(cut(traces["json"]), encoding="utf-8")
    said = _all_say(path)
    assert said[0] == said[1] == said[2], said
    code, err = said[0]
    assert code == 2
    assert err.count("\n") == 1
    where, what = err.rstrip("\n").split(": error: ")
    assert where.startswith(f"{path}:")
    if line is not None:
        assert where == f"{path}:{line}"
    assert what.startswith("not a JSON trace: ")
    assert message in what


def test_a_cut_systrace_file_is_the_same_warning_from_every_reader(
    traces: dict[str, str], tmp_path: Path
) -> None:
    """A systrace HTML file cut in its trace data is read up to the cut by parse, query and
    replay, each warning with the same ``FILE:LINE: warning:`` line."""
    text = traces["html"]
    path = tmp_path / "cut.html"
    path.write_text(text[: len(text) // 2], encoding="utf-8")
    lines = len(text[: len(text) // 2].splitlines())
    for code, err in _all_say(path):
        assert code == 0
        assert f"{path}:{lines}: warning: {TRUNCATED_HTML}\n" in err


def test_a_cut_gzip_file_is_the_same_error_from_every_reader(
    traces: dict[str, str], tmp_path: Path
) -> None:
    """A gzip file (cut or whole) is refused alike by parse, query and replay: decompress it first."""
    packed = gzip.compress(traces["json"].encode())
    path = tmp_path / "cut.json.gz"
    path.write_bytes(packed[: len(packed) // 2])
    expected = f"{path}: error: the file is gzip-compressed; decompress it first (gunzip -k)\n"
    assert _all_say(path) == [(2, expected)] * 3


@pytest.mark.parametrize(
    "text",
    ["42\n", "-1.5", '"a trace"\n', "null", "true\n"],
    ids=["number", "negative", "string", "null", "bool"],
)
def test_a_bare_json_value_is_not_a_chrome_trace_to_every_reader(
    tmp_path: Path, text: str
) -> None:
    """A JSON document that is a bare number, string, null or boolean is refused alike by
    parse, query and replay as not a Chrome trace, at line 1, exit 2."""
    path = tmp_path / "value.json"
    path.write_text(text, encoding="utf-8")
    expected = f"{path}:1: error: {NOT_CHROME_TRACE}\n"
    assert _all_say(path) == [(2, expected)] * 3


@pytest.mark.parametrize(
    "text",
    ["[]", "[\n]\n", '{"traceEvents": []}', '{"traceEvents": [\n]}\n', "", "\n \r\n\t\n"],
    ids=["empty-list", "empty-list-lines", "no-events", "no-events-lines", "empty", "blank"],
)
def test_a_trace_with_no_events_is_one_error_from_every_reader(tmp_path: Path, text: str) -> None:
    """An empty or blank file, or a JSON trace whose list of events is empty, gets the same
    one error line from parse, query and replay (not three readers' own "nothing found"),
    exit 2."""
    path = tmp_path / "nothing.json"
    path.write_text(text, encoding="utf-8")
    expected = f"{path}: error: {NO_TRACE_EVENTS}\n"
    assert _all_say(path) == [(2, expected)] * 3


def test_a_missing_trace_or_a_directory_is_one_error_from_every_reader(tmp_path: Path) -> None:
    """A trace path that does not exist, or is a directory, gets the same
    ``FILE: error: cannot read the trace: ...`` line from parse, query and replay, exit 2."""
    missing = tmp_path / "missing.html"
    expected = f"{missing}: error: cannot read the trace: No such file or directory\n"
    assert _all_say(missing) == [(2, expected)] * 3
    expected = f"{tmp_path}: error: cannot read the trace: Is a directory\n"
    assert _all_say(tmp_path) == [(2, expected)] * 3


def test_the_path_dash_is_one_error_from_every_reader(tmp_path: Path, monkeypatch) -> None:
    """``-`` (standard input to a user) is refused by parse, query and replay with one line
    saying so, exit 2 (they said ``cannot read the trace: No such file or directory``), also
    where a file named ``-`` exists (``./-`` reads it)."""
    expected = "-: error: reading standard input is not supported; give a file\n"
    monkeypatch.chdir(tmp_path)
    assert _all_say(Path("-")) == [(2, expected)] * 3
    code, _out, err = run_cli("query", "--db", str(tmp_path / "t.db"), "-", "select 1")
    assert (code, err) == (2, expected)
    (tmp_path / "-").write_text("not a trace\n")
    assert _all_say(Path("-")) == [(2, expected)] * 3
    for command in COMMANDS:
        _code, _out, err = run_cli(*command, "./-")
        assert err.startswith("./-:"), err  # read as a file (not a trace: refused as such)


def test_a_cut_perfetto_trace_is_the_same_warning_from_parse_query_and_replay(
    tmp_path: Path,
) -> None:
    """A Perfetto trace cut inside a packet is read up to the cut by parse, query and replay,
    each warning on stderr with the same ``FILE: byte OFFSET: warning: truncated packet ...``
    line (replay used to hide it among its plan's notes on stdout; query said
    ``FILE: warning: byte OFFSET: ...``)."""
    whole = tmp_path / "whole.pftrace"
    code, _out, err = run_cli("run", QUICKSTART, "--trace", str(whole))
    assert code == 0, err
    data = whole.read_bytes()
    path = tmp_path / "cut.pftrace"
    path.write_bytes(data[: len(data) * 2 // 3])
    lines = []
    for command, after in ((("parse",), ()), (("replay", "-n"), ()), (("query",), ("select 1",))):
        code, out, err = run_cli(*command, str(path), *after)
        assert code == 0, err
        (line,) = [x for x in err.splitlines() if "truncated packet" in x]
        assert "truncated packet" not in out
        lines.append(line)
    assert lines[0] == lines[1] == lines[2]
    assert lines[0].startswith(f"{path}: byte ")
    assert ": warning: truncated packet: " in lines[0]
