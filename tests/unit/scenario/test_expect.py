"""The expectation grammar ``<report path> <op> <number>``."""

from __future__ import annotations

import re

import pytest

from nnemu.scenario import EXPECTATION_METRICS, Expectation, ExpectOp, parse_expectation


@pytest.mark.parametrize(
    ("text", "path", "op", "value"),
    [
        ("apps.camera.completed >= 10", ("apps", "camera", "completed"), ExpectOp.GE, 10.0),
        (
            "apps.camera.latency_ms.p95<=30.5",
            ("apps", "camera", "latency_ms", "p95"),
            ExpectOp.LE,
            30.5,
        ),
        (
            "apps.a.errors.MISSED_DEADLINE_TRANSIENT == 0",
            ("apps", "a", "errors", "MISSED_DEADLINE_TRANSIENT"),
            ExpectOp.EQ,
            0.0,
        ),
        ("apps.a.errors.NO_ERROR != 1e3", ("apps", "a", "errors", "NO_ERROR"), ExpectOp.NE, 1000.0),
        (
            "devices.nnapi-reference.busy_fraction < 0.9",
            ("devices", "nnapi-reference", "busy_fraction"),
            ExpectOp.LT,
            0.9,
        ),
        ("  devices.npu.preemptions > -1 ", ("devices", "npu", "preemptions"), ExpectOp.GT, -1.0),
    ],
)
def test_valid_expectations_parse(text: str, path: tuple[str, ...], op: ExpectOp, value: float):
    """Each report path form parses into path, operator and value, keeping the text as written."""
    assert parse_expectation(text) == Expectation(text=text, path=path, op=op, value=value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "apps.a.completed = 3",
            "expected '<report path> <op> <number>' with op one of <, <=, >, >=, ==, !=, "
            "got 'apps.a.completed = 3'",
        ),
        ("apps.a.completed", "expected '<report path> <op> <number>'"),
        ("apps.a.completed >= many", "expected a finite number after '>=', got 'many'"),
        ("apps.a.completed >= nan", "expected a finite number after '>=', got 'nan'"),
        (
            "apps..completed >= 1",
            "expected a report path of dot-separated names, got 'apps..completed'",
        ),
        (
            "apps.a.errors.OOPS == 0",
            "expected a result code after 'errors.' (one of NO_ERROR, OUT_OF_MEMORY",
        ),
        (
            "apps.a.latency_ms.p90 < 5",
            "unknown metric 'apps.a.latency_ms.p90'; valid report paths: ",
        ),
        (
            "devices.npu.completed > 1",
            "unknown metric 'devices.npu.completed'; valid report paths: ",
        ),
        ("models.m.size > 1", "unknown metric 'models.m.size'"),
    ],
)
def test_invalid_expectations_say_why(text: str, message: str):
    """A malformed expectation raises ValueError with a message saying what was expected."""
    with pytest.raises(ValueError, match=f"^{re.escape(message)}"):
        parse_expectation(text)


def test_unknown_metric_lists_the_valid_paths():
    """The unknown-metric message lists every valid report path."""
    with pytest.raises(ValueError, match="unknown metric") as info:
        parse_expectation("apps.a.latency >= 1")
    for path in (
        "apps.<app>.deadline_miss_rate",
        "apps.<app>.errors.<RESULT_CODE>",
        "devices.<dev>.busy_fraction",
    ):
        assert path in str(info.value)


def test_metrics_documentation_names_every_metric():
    """EXPECTATION_METRICS documents each metric family."""
    for word in ("error_rate", "latency_ms.p50|p95|p99|max|mean", "DEAD_OBJECT", "preemptions"):
        assert word in EXPECTATION_METRICS
