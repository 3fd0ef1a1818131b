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


def test_a_phones_perfetto_recording_names_what_its_systrace_names(tmp_path: Path):
    """omr1 as a phone's own Perfetto recording (``tests.phone_pftrace``: full command lines
    in ``process_tree``, ``/vendor/bin/hw/android.hardware.neuralnetworks@1.0-service-hvx``;
    15-character thread comms; the marks as ftrace ``print`` events, the app's threads in no
    ``process_tree``) names the driver ``hvx`` and the app ``app-27005`` as omr1.html does,
    in the replay's plan and in the scenario ``--save-scenario`` writes (issue 25 item 5)."""
    from tests.commands import run_cli
    from tests.phone_pftrace import phone_perfetto

    pftrace = phone_perfetto(OMR1, tmp_path / "omr1.pftrace")
    assert _names(pftrace) == _names(OMR1) == ([(27005, "app-27005")], [(756, "hvx")])
    saved = {}
    for path in (OMR1, pftrace):
        out = tmp_path / f"{path.suffix[1:]}.yaml"
        code, text, err = run_cli("replay", str(path), "-n", "--save-scenario", str(out))
        assert code == 0, err
        assert "  driver hvx: pid 756 (" in text
        assert "  app app-27005: pid 27005" in text
        # the same scenario but for the header line that names the file
        saved[path.suffix] = out.read_text().split("\n", 2)[2]
    assert saved[".pftrace"] == saved[".html"]
