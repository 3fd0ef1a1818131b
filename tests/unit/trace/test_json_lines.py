"""``json_line_events``: a JSON trace of one event per line is read a line at a time."""

from __future__ import annotations

import json

import pytest

from nnemu.trace import NotLineJson, json_line_events

_EVENTS = [
    {"ph": "B", "pid": 1, "tid": 2, "ts": 1.0, "name": "a"},
    {"ph": "E", "pid": 1, "tid": 2, "ts": 2.0},
]


def _lines(header: str, events: list[dict[str, object]], tail: str) -> list[str]:
    body = ",\n".join(json.dumps(event) for event in events)
    return [line + "\n" for line in (header, *body.split("\n"), tail)]


@pytest.mark.parametrize(
    ("header", "tail"),
    [("[", "]"), ('{"traceEvents": [', "]}"), ('{"displayTimeUnit": "ns", "traceEvents": [', "]}")],
)
def test_events_come_with_their_line_numbers(header: str, tail: str):
    """Each event is the object on its line, numbered from the file's first line; frames are skipped."""
    lines = _lines(header, _EVENTS, tail)
    for strict in (False, True):
        assert list(json_line_events(lines, strict=strict)) == [(2, _EVENTS[0]), (3, _EVENTS[1])]


@pytest.mark.parametrize(
    "lines",
    [
        ['{"traceEvents": [{"ph": "B"}, {"ph": "E"}]}\n'],  # one document on one line
        ["[\n", '{"ph": "B",\n', '"ts": 1}\n', "]\n"],  # an event over two lines
        ["[\n", "[1, 2],\n", "]\n"],  # not an object
        ["[\n", '{"name": "x"}\n', "]\n"],  # no "ph"
    ],
)
def test_other_layouts_are_refused(lines: list[str]):
    """Anything but one whole event per line raises NotLineJson (the caller parses a document)."""
    with pytest.raises(NotLineJson):
        list(json_line_events(lines))


@pytest.mark.parametrize(
    "lines",
    [
        _lines('{"traceEvents": [', _EVENTS, "]}")[:-1],  # cut short after a whole event
        _lines("[", _EVENTS, "]")[:-1],
    ],
)
def test_a_file_cut_short_is_refused_also_when_not_strict(lines: list[str]):
    """A file that opens its events and ends before a closing ``]`` raises NotLineJson in either
    mode, so the caller's document parse reports the cut rather than reading it as whole."""
    for strict in (False, True):
        with pytest.raises(NotLineJson):
            list(json_line_events(lines, strict=strict))


@pytest.mark.parametrize(
    "lines",
    [
        _lines('{"traceEvents": [', _EVENTS, "]}")[:-1],  # cut short: no closing line
        _lines("[", _EVENTS, "]}"),  # the wrong closing line
        [*_lines("[", _EVENTS, "]"), '{"ph": "B"}\n'],  # something after the end
        [*_lines('{"traceEvents": [', _EVENTS, "],"), '"other": 1}\n'],  # more keys after
        _lines('{"meta": {"list": [', _EVENTS, "]}"),  # the events are not traceEvents
    ],
)
def test_strict_refuses_what_is_not_exactly_a_framed_file(lines: list[str]):
    """Strict reading refuses a file json.load would read differently or not at all."""
    with pytest.raises(NotLineJson):
        list(json_line_events(lines, strict=True))
