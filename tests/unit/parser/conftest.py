"""Fixtures for parser unit tests: build ftrace text from (ms, tid, tgid, payload) rows."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from tests.unit.parser.helpers import Row, ftrace_text


@pytest.fixture(name="make_trace")
def _make_trace() -> Callable[[Sequence[Row]], str]:
    """Return the function that renders rows as ftrace text."""
    return ftrace_text
