"""The describing packets read from their bytes (``_pbpackets``, ``Decoder.described``)
against protobuf's reading: the same records from the same bytes; and a trace nnemu wrote
read without importing protobuf."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from tests.tiers import tiered
from tests.unit.trace.test_pbdecode import BEGIN_50, _field, _same

_NUMBERS = st.sampled_from([0, 1, 5, 6, 7, 50, 99, 2**31, 2**32 + 5, 2**63, 2**64 - 1])
_TEXTS = st.sampled_from([b"", b"name", b"other", b"\xff\xfe", b"a\nb"])


@st.composite
def _message(
    draw: Any, shape: list[tuple[int, int]], nested: dict[int, Any] | None = None
) -> bytes:
    """A message of fields drawn from ``shape`` ((field, wire type)), in any order, any
    number of times; a field of ``nested`` holds a message drawn from its strategy."""
    out = b""
    for field, wire in draw(st.lists(st.sampled_from(shape), max_size=6)):
        if wire == 2 and nested and field in nested:
            out += _field(field, 2, draw(nested[field]))
        elif wire == 2:
            out += _field(field, 2, draw(_TEXTS))
        elif wire == 1:
            out += _field(field, 1, draw(_NUMBERS))
        else:
            out += _field(field, 0, draw(_NUMBERS))
    return out


_PROCESS = _message([(1, 0), (2, 2), (6, 2), (5, 0), (1, 2)])
_THREAD = _message([(1, 0), (2, 0), (5, 2), (4, 0), (2, 2)])
_COUNTER = st.sampled_from([b"", _field(1, 0, 1)])
_DESCRIPTOR = _message(
    [(1, 0), (5, 0), (2, 2), (10, 2), (13, 2), (14, 2), (3, 2), (4, 2), (8, 2), (9, 0), (1, 2)],
    {3: _PROCESS, 4: _THREAD, 8: _COUNTER},
)
_TREE = _message(
    [(1, 2), (2, 2), (3, 0), (4, 0)],
    {
        1: _message([(1, 0), (2, 0), (3, 2), (3, 0), (5, 0)]),
        2: _message([(1, 0), (3, 0), (2, 2), (2, 0), (4, 0)]),
    },
)
_NAME = _message([(1, 0), (2, 2), (2, 0), (3, 0)])
_INTERNED = _message([(2, 2), (3, 2), (1, 2), (2, 0)], {2: _NAME, 3: _NAME, 1: _NAME})
_ANNOTATION = _message([(1, 0), (10, 2), (2, 0), (6, 2), (5, 1), (8, 2), (11, 2), (6, 0), (99, 0)])
_EVENT = st.builds(
    lambda name, annotations: BEGIN_50 + name + b"".join(_field(4, 2, a) for a in annotations),
    st.sampled_from([_field(10, 0, 1), _field(10, 0, 3), _field(23, 2, b"inline")]),
    st.lists(_ANNOTATION, max_size=2),
)


@st.composite
def _packet(draw: Any) -> bytes:
    """A packet of one describing kind (or none, or two), maybe interning names."""
    out = _field(8, 0, draw(st.sampled_from([5, 2**40]))) + _field(
        10, 0, draw(st.sampled_from([3, 4]))
    )
    for field, strategy in draw(
        st.lists(
            st.sampled_from([(60, _DESCRIPTOR), (2, _TREE), (11, _EVENT), (12, _INTERNED)]),
            max_size=2,
        )
    ):
        out += _field(field, 2, draw(strategy))
    if draw(st.booleans()):
        out += _field(draw(st.sampled_from([13, 41, 42, 58, 87, 99])), 0, draw(_NUMBERS))
    return out


def _named_on(track: int) -> bytes:
    """A begin on ``track`` named by interned iid 1: what the state read so far makes of it."""
    event = _field(9, 0, 1) + _field(11, 0, track) + _field(10, 0, 1)
    return _field(8, 0, 9) + _field(10, 0, 3) + _field(11, 2, event)


@tiered(packets=st.lists(_packet(), min_size=1, max_size=4), quick=100, wide=400, derandomize=True)
def test_describing_packets_read_from_their_bytes_give_what_protobuf_gives(packets: list[bytes]):
    """Random process trees, track descriptors and track events that intern names (valid or
    not, fields in any order, any number of times) give protobuf's records, and leave the
    state (tracks, names) protobuf's reading leaves: the events after them agree too."""
    after = [_named_on(track) for track in (50, 6, 7, 99, 2**64 - 1)]
    _same(*packets, *after)


def test_a_trace_nnemu_wrote_is_read_without_protobuf(tmp_path: Path):
    """Reading a trace of nnemu's (track descriptors, process trees, interned names, debug
    annotations) imports no protobuf module: every packet is read from its bytes."""
    trace = tmp_path / "t.pftrace"
    scenario = Path(__file__).parents[3] / "scenarios" / "two_apps_one_npu.yaml"
    run = [sys.executable, "-m", "nnemu.cli", "run", str(scenario), "--set", "duration_ms=500"]
    # (exit 1: the scenario's expectations, set for a longer run, are not met)
    subprocess.run([*run, "--trace", str(trace), "-q"], check=False, capture_output=True)
    script = (
        "import sys\n"
        "from nnemu.trace import TraceEvents\n"
        "count = sum(len(batch) for batch in TraceEvents(sys.argv[1]).batches())\n"
        "loaded = [name for name in sys.modules if name.startswith(('google', 'perfetto'))]\n"
        "print(count, loaded)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(trace)], check=True, capture_output=True, text=True
    ).stdout.split(" ", 1)
    assert int(out[0]) > 100
    assert out[1] == "[]\n"
