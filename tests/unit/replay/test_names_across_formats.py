"""One capture, one set of names: replay names apps and drivers alike from every format."""

from __future__ import annotations

from pathlib import Path

import pytest

from nnemu.replay import extract_plan
from tests.unit.replay.helpers import OMR1

VARIANTS = {
    "ftrace": {},
    "compact": {"compact": True},
    "track-event": {"track_event": True},
    "gzip": {"compress": True},
}


def _names(path: Path) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    plan = extract_plan(str(path))
    return [(a.pid, a.name) for a in plan.apps], [(d.pid, d.name) for d in plan.drivers]


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_phone_capture_as_perfetto_names_what_its_systrace_names(variant: str, tmp_path: Path):
    """omr1 as a Perfetto protobuf trace (every variant a phone or converter writes) names
    the driver ``hvx`` and the app ``app-27005`` as its systrace HTML does, so one ``--set
    devices.hvx...`` applies to both (issue 25 item 5)."""
    from tests.perfetto_traces import systrace_to_perfetto

    pftrace = systrace_to_perfetto(OMR1, tmp_path / "omr1.pftrace", **VARIANTS[variant])
    assert _names(pftrace) == _names(OMR1) == ([(27005, "app-27005")], [(756, "hvx")])
