"""The ``expect:`` grammar: ``<report path> <op> <number>``."""

from __future__ import annotations

import math
import re
from typing import Final

from nnemu.hal import ResultCode
from nnemu.scenario._model import Expectation, ExpectOp

APP_COUNTERS: Final = (
    "submitted",
    "completed",
    "failed",
    "dropped",
    "retries",
    "in_flight",
    "deadline_misses",
    "completed_late",
    "deadline_refused",
    "deadline_aborted",
    "deadline_miss_rate",
    "error_rate",
)
"""Per-app metrics that are a single number."""
LATENCY_STATS: Final = ("p50", "p95", "p99", "max", "mean")
"""Statistics of an app's end-to-end latency (``apps.<app>.latency_ms.<stat>``)."""
COMPILATION_STATS: Final = ("count", "from_cache", "first_ms", "last_ms")
"""Statistics of an app's compilations (``apps.<app>.compilations.<stat>``)."""
DEVICE_METRICS: Final = (
    "executions",
    "busy_fraction",
    "preemptions",
    "deadline_aborts",
    "loop_timeouts",
    "rejected_persistent",
    "rejected_transient",
)
"""Per-device metrics (``devices.<dev>.<metric>``)."""
RESULT_CODE_NAMES: Final = tuple(code.name for code in ResultCode)
"""Result code names allowed in ``apps.<app>.errors.<CODE>``."""

EXPECTATION_METRICS: Final = f"""\
An expectation is '<report path> <op> <number>', op one of < <= > >= == !=.
Report paths:
  apps.<app>.{"|".join(APP_COUNTERS)}
  apps.<app>.errors.<RESULT_CODE>   (RESULT_CODE one of {", ".join(RESULT_CODE_NAMES)})
  apps.<app>.latency_ms.{"|".join(LATENCY_STATS)}
  apps.<app>.compilations.{"|".join(COMPILATION_STATS)}
  devices.<dev>.{"|".join(DEVICE_METRICS)}   (<dev> may be nnapi-reference)
"""
"""Documentation of the expectation grammar and every valid report path."""

_VALID_PATHS: Final = (
    ", ".join(f"apps.<app>.{name}" for name in APP_COUNTERS)
    + ", apps.<app>.errors.<RESULT_CODE>, "
    + ", ".join(f"apps.<app>.latency_ms.{name}" for name in LATENCY_STATS)
    + ", "
    + ", ".join(f"apps.<app>.compilations.{name}" for name in COMPILATION_STATS)
    + ", "
    + ", ".join(f"devices.<dev>.{name}" for name in DEVICE_METRICS)
)

_OPS: Final = ", ".join(op.value for op in ExpectOp)
_SYNTAX: Final = re.compile(r"\s*([^\s<>=!]+)\s*(<=|>=|==|!=|<|>)\s*(\S+)\s*")


def parse_expectation(text: str) -> Expectation:
    """Parse one expectation such as ``apps.camera.latency_ms.p95 <= 30``.

    Only the shape of the report path is checked here; whether the app or
    device exists is checked by the scenario loader.

    Raises:
        ValueError: the text does not follow the grammar (the message says how).
    """
    match = _SYNTAX.fullmatch(text)
    if match is None:
        msg = f"expected '<report path> <op> <number>' with op one of {_OPS}, got {text!r}"
        raise ValueError(msg)
    path_text, op_text, number_text = match.groups()
    try:
        value = float(number_text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        msg = f"expected a finite number after '{op_text}', got {number_text!r}"
        raise ValueError(msg)
    path = tuple(path_text.split("."))
    _check_path(path, path_text)
    return Expectation(text=text, path=path, op=ExpectOp(op_text), value=value)


def _check_path(path: tuple[str, ...], path_text: str) -> None:
    """Raise ValueError unless ``path`` is one of the report paths."""
    if any(not part for part in path):
        msg = f"expected a report path of dot-separated names, got {path_text!r}"
        raise ValueError(msg)
    match path:
        case ("apps", _, metric) if metric in APP_COUNTERS:
            return
        case ("apps", _, "latency_ms", stat) if stat in LATENCY_STATS:
            return
        case ("apps", _, "compilations", stat) if stat in COMPILATION_STATS:
            return
        case ("apps", _, "errors", code):
            if code not in RESULT_CODE_NAMES:
                msg = (
                    f"expected a result code after 'errors.' (one of "
                    f"{', '.join(RESULT_CODE_NAMES)}), got {code!r}"
                )
                raise ValueError(msg)
            return
        case ("devices", _, metric) if metric in DEVICE_METRICS:
            return
    msg = f"unknown metric {path_text!r}; valid report paths: {_VALID_PATHS}"
    raise ValueError(msg)
