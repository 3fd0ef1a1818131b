"""The args of nnemu's QoS slices, for the writers that carry args (Chrome JSON, Perfetto).

nnemu's ``nnemu::`` sections (docs/trace-contract.md, "nnemu's execution marks") carry
their facts in their names, which every format keeps.  The Chrome JSON and Perfetto
writers also give them as the slice's args (JSON ``args``, TrackEvent debug annotations),
so Perfetto's ``args`` table and UI show them as values.  ``qos_args`` reads the facts
back from the name: the one rule both writers use, called once per distinct name (the
writers cache what they build for a name), and only for a name in the ``nnemu::`` family.
"""

from __future__ import annotations

import json
from typing import Final

PREFIX: Final = "nnemu::"
"""The family of the sections that may carry args; every other slice carries none."""

ArgValue = str | int | bool
Args = tuple[tuple[str, ArgValue], ...]


def qos_args(name: str) -> Args:
    """The args of the slice called ``name``: empty unless it is an ``nnemu::`` QoS mark.

    ``nnemu::qos priority=P [execution_timeout_ns=N] [compile_timeout_ns=N]
    [drop_late_frames]`` gives ``priority`` (text), the timeouts (integers, ns) and
    ``drop_late_frames`` (true); ``nnemu::retry CODE`` and ``nnemu::failed CODE`` give
    ``code`` (the attempt's result code, text); ``nnemu::waited N ns`` gives ``waited_ns``.
    A word that does not fit is left out, as a reader skips it.
    """
    if not name.startswith(PREFIX):
        return ()
    kind, _, rest = name[len(PREFIX) :].partition(" ")
    words = rest.split()
    if kind == "qos":
        args: list[tuple[str, ArgValue]] = []
        for word in words:
            key, equals, value = word.partition("=")
            if not equals:
                if key == "drop_late_frames":
                    args.append((key, True))
            elif key == "priority" and value:
                args.append((key, value))
            elif key.endswith("_timeout_ns") and value.isdigit():
                args.append((key, int(value)))
        return tuple(args)
    if kind in ("retry", "failed") and len(words) == 1:
        return (("code", words[0]),)
    if kind == "waited" and len(words) == 2 and words[0].isdigit() and words[1] == "ns":
        return (("waited_ns", int(words[0])),)
    return ()


def json_args(name: str) -> bytes:
    """The ``"args": {...}, `` member of a JSON event for a slice called ``name`` (as
    ``json.dumps(event, sort_keys=True)`` writes it, ``args`` being its first key), or
    nothing when it has none."""
    args = qos_args(name)
    if not args:
        return b""
    return b'"args": ' + json.dumps(dict(args), sort_keys=True).encode() + b", "


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _field(tag: int, payload: bytes) -> bytes:
    return _varint(tag) + _varint(len(payload)) + payload


def debug_annotations(name: str, iids: dict[str, int]) -> tuple[bytes, bytes]:
    """A slice called ``name``'s args as ``TrackEvent.debug_annotations`` (field 4), and the
    ``InternedData.debug_annotation_names`` (field 3) entries to send with them.

    Each annotation's name is interned: ``iids`` holds the iids given so far on the
    sequence (the names new here are added to it, and their entries returned to go in
    this packet's ``interned_data``).  Values: ``string_value`` (6), ``int_value`` (4),
    ``bool_value`` (2).
    """
    annotations = b""
    interned = b""
    for key, value in qos_args(name):
        iid = iids.get(key)
        if iid is None:
            iid = iids[key] = len(iids) + 1
            interned += _field(0x1A, b"\x08" + _varint(iid) + _field(0x12, key.encode()))
        if isinstance(value, bool):
            payload = b"\x10" + (b"\x01" if value else b"\x00")
        elif isinstance(value, int):
            payload = b"\x20" + _varint(value)
        else:
            payload = _field(0x32, value.encode())
        annotations += _field(0x22, b"\x08" + _varint(iid) + payload)
    return annotations, interned
