"""Property: random well-nested NNAPI sections -> ftrace text -> parse -> the same totals."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from nnemu.parser import parse_lines
from nnemu.tracer import Layer, Phase, tag

from .conftest import ftrace_text
from .helpers import contract_problems

PHASES = (Phase.PREPARATION, Phase.COMPILATION, Phase.TERMINATION)

child = st.tuples(
    st.integers(0, 50),  # gap before, µs
    st.integers(1, 200),  # length, µs
    st.sampled_from(["lower", "detail"]),  # other layer (counted) or same-layer detail
)
section = st.tuples(
    st.integers(1, 100),  # gap before, µs
    st.sampled_from(PHASES),
    st.lists(child, max_size=3),
    st.integers(0, 50),  # tail after the last child, µs
)
# (is_driver, sections) per thread; client threads use LR > LI, driver threads LD > LD.
thread = st.tuples(st.booleans(), st.lists(section, min_size=1, max_size=4))


def _events(tid, tgid, driver, sections, totals):
    """Lay out one thread's sections; add the expected totals; return its events."""
    top, lower = (Layer.DRIVER, None) if driver else (Layer.RUNTIME, Layer.IPC)
    events = []
    now = 0
    for gap, phase, children, tail in sections:
        now += gap
        begin = now
        events.append((now, tid, tgid, tag(top, phase) + "top"))
        for child_gap, length, kind in children:
            now += child_gap
            layer = lower if kind == "lower" and lower is not None else top
            events.append((now, tid, tgid, tag(layer, phase) + "child"))
            now += length
            events.append((now, tid, tgid, "E"))
            if layer is not top:
                totals[(layer, phase)] += length
        now += tail + 1
        events.append((now, tid, tgid, "E"))
        totals[(top, phase)] += now - begin
    return events


@settings(max_examples=60, deadline=None)
@given(st.lists(thread, min_size=1, max_size=5))
def test_totals_round_trip(threads):
    """Parsed per-layer x phase totals equal those computed from the generated intervals."""
    totals: Counter[tuple[Layer, Phase]] = Counter()
    events = []
    for index, (driver, sections) in enumerate(threads):
        tgid = 500 + index % 2 if not driver else 900
        tid = 1000 + index
        per_thread = _events(tid, tgid, driver, sections, totals)
        if driver:
            # Mark the process as a driver the way real traces do.
            per_thread.insert(0, (0, tid, tgid, "HIDL::IDevice::getCapabilities::server"))
            per_thread.insert(1, (0, tid, tgid, "E"))
            totals[(Layer.DRIVER, Phase.INITIALIZATION)] += 0
        events.extend((t, tid, seq, tgid, p) for seq, (t, tid, tgid, p) in enumerate(per_thread))
    events.sort()
    rows = [(t / 1000, tid, tgid, payload) for t, tid, _, tgid, payload in events]
    result = parse_lines(ftrace_text(rows).splitlines())
    assert contract_problems(result) == []
    (run,) = result.runs
    for layer in (Layer.RUNTIME, Layer.IPC, Layer.DRIVER):
        for phase in PHASES:
            assert run.totals_ns(layer, phase) == totals[(layer, phase)] * 1000, (layer, phase)
