"""The Perfetto packets that describe a trace, read from their bytes: what ``_pbdecode``'s
``Decoder.described`` reads without protobuf.

An nnemu trace's packets that are not one slice begin or end or counter value
(``Decoder.fast``'s) are few and of three kinds: a ``process_tree``, a ``track_descriptor``,
and a ``track_event`` whose packet interns its name (``interned_data.event_names``, and
the names of its debug annotations, which ``annotation_read`` walks and nnemu reads
nowhere).  Each
function here reads one message of those from ``data[pos:end]`` into plain values, or gives
None for anything it does not read exactly as protobuf would (a field it does not know, a
field of the wrong wire type, a message field twice, which protobuf merges, a string that
is not UTF-8): such a packet is left to protobuf.  So a trace made only of these packets
is read without importing protobuf at all.

A wheel runs this module compiled by mypyc, in a group of its own (``nnemu._native``).
"""

from __future__ import annotations

from typing import Final

from nnemu.trace._pbwire import varint

EVENT: Final = 1
"""``read_packet``'s kind: a ``track_event``."""
DESCRIPTOR: Final = 2
"""A ``track_descriptor``."""
TREE: Final = 3
"""A ``process_tree``."""

Field = tuple[int, int, int, int]
"""(field number, wire type, value or start, end): a varint's value (end 0), or where a
length-delimited field's bytes start and end."""
Packet = tuple[int, int, int, bool, int, int, int, int, int]
"""``read_packet``'s: timestamp, sequence id, sequence flags, ``incremental_state_cleared``,
the kind of its data (0 none, ``EVENT``, ``DESCRIPTOR``, ``TREE``) and where its bytes start
and end, where its ``interned_data`` starts and ends (-1: none)."""
Descriptor = tuple[
    int,
    int,
    str | bytes,
    tuple[int, str | bytes] | None,
    tuple[int, int, str | bytes] | None,
    bool,
]
"""``read_descriptor``'s: uuid, parent uuid, name, process (pid, name), thread (pid, tid,
name), whether it is a counter track (``Decoder.describe_track`` takes protobuf's too,
whose strings that are not UTF-8 come as bytes)."""
Tree = tuple[list[tuple[int, str]], list[tuple[int, int, str]]]
"""``read_tree``'s: processes (pid, first cmdline or ""), threads (tid, tgid, name)."""

_PACKET_VARINTS: Final = frozenset((8, 10, 13, 41, 42, 58, 87))
"""``TracePacket``'s varints read here: ``timestamp``, ``trusted_packet_sequence_id``,
``sequence_flags``, ``incremental_state_cleared`` and the three read nowhere
(``previous_packet_dropped``, ``timestamp_clock_id``, ``first_packet_on_sequence``)."""
_PACKET_DATA: Final = {11: EVENT, 60: DESCRIPTOR, 2: TREE}
"""``TracePacket``'s ``data`` fields read here, and their kinds."""


def fields(data: bytes, pos: int, end: int) -> list[Field] | None:
    """The varint and length-delimited fields of ``data[pos:end]``, or None if there is
    another wire type or the bytes do not walk as fields."""
    out: list[Field] = []
    while pos < end:
        key = varint(data, pos, end)
        if key is None or key[0] >> 3 == 0:
            return None
        tag, pos = key
        found = varint(data, pos, end)
        if found is None or found[0] >> 64:
            return None
        value, pos = found
        wire = tag & 7
        if wire == 0:
            out.append((tag >> 3, 0, value, 0))
        elif wire == 2:
            if pos + value > end:
                return None
            out.append((tag >> 3, 2, pos, pos + value))
            pos += value
        else:
            return None
    return out


def _int32(value: int) -> int:
    """A varint as protobuf reads an ``int32``: its low 32 bits, signed."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >> 31 else value


def _int64(value: int) -> int:
    """A varint as protobuf reads an ``int64``."""
    return value - (1 << 64) if value >> 63 else value


def _text(data: bytes, start: int, stop: int) -> str | None:
    """A string field's text, or None if it is not UTF-8."""
    try:
        return data[start:stop].decode()
    except UnicodeDecodeError:
        return None


def read_packet(data: bytes, pos: int, end: int) -> Packet | None:
    """The ``TracePacket`` in ``data[pos:end]``, if made only of what this module reads (one
    ``data`` field at most, ``interned_data`` once at most)."""
    found = fields(data, pos, end)
    if found is None:
        return None
    ts = seq = flags = 0
    cleared = False
    kind = 0
    start = stop = interned_start = interned_stop = -1
    for field, wire, value, until in found:
        if wire == 0:
            if field not in _PACKET_VARINTS:
                return None
            if field == 8:
                ts = value
            elif field == 10:
                seq = value & 0xFFFFFFFF
            elif field == 13:
                flags = value & 0xFFFFFFFF
            elif field == 41:
                cleared = value != 0
        elif field == 12:
            if interned_start >= 0:
                return None
            interned_start, interned_stop = value, until
        else:
            data_kind = _PACKET_DATA.get(field, 0)
            if data_kind == 0 or kind:
                return None
            kind, start, stop = data_kind, value, until
    return ts, seq, flags, cleared, kind, start, stop, interned_start, interned_stop


_ANNOTATION_VARINTS: Final = frozenset((1, 2, 3, 4, 7, 13, 17))
"""``DebugAnnotation``'s varints: ``name_iid``, ``bool_value``, ``uint_value``, ``int_value``,
``pointer_value``, ``proto_type_name_iid``, ``string_value_iid``."""
_ANNOTATION_STRINGS: Final = frozenset((6, 9, 10, 16))
"""Its strings: ``string_value``, ``legacy_json_value``, ``name``, ``proto_type_name``."""


def annotation_read(data: bytes, pos: int, end: int) -> bool:
    """Whether the ``DebugAnnotation`` in ``data[pos:end]`` (which nnemu reads nowhere) is
    one protobuf reads as it is: a name and a plain value, no nested message."""
    while pos < end:
        key = varint(data, pos, end)
        if key is None:
            return False
        tag, pos = key
        field = tag >> 3
        wire = tag & 7
        if wire == 1:
            if field != 5 or pos + 8 > end:  # double_value
                return False
            pos += 8
            continue
        found = varint(data, pos, end)
        if found is None or found[0] >> 64:
            return False
        value, pos = found
        if wire == 0:
            if field not in _ANNOTATION_VARINTS:
                return False
        elif wire == 2:
            if field not in _ANNOTATION_STRINGS or pos + value > end:
                return False
            if _text(data, pos, pos + value) is None:
                return False
            pos += value
        else:
            return False
    return True


def read_interned(data: bytes, pos: int, end: int) -> list[tuple[int, str]] | None:
    """The ``event_names`` (iid, name) of the ``InternedData`` in ``data[pos:end]`` (its
    ``debug_annotation_names`` are read nowhere)."""
    found = fields(data, pos, end)
    if found is None:
        return None
    names: list[tuple[int, str]] = []
    for field, wire, start, stop in found:
        if field not in (2, 3) or wire != 2:
            return None
        entry = fields(data, start, stop)
        if entry is None:
            return None
        iid = 0
        name = ""
        for inner, inner_wire, value, until in entry:
            if inner == 1 and inner_wire == 0:
                iid = value
            elif inner == 2 and inner_wire == 2:
                text = _text(data, value, until)
                if text is None:
                    return None
                name = text
            else:
                return None
        if field == 2:
            names.append((iid, name))
    return names


def read_descriptor(data: bytes, pos: int, end: int) -> Descriptor | None:
    """The ``TrackDescriptor`` in ``data[pos:end]``: its uuid, parent, name (``name``,
    ``static_name`` or ``atrace_name``: the last given), process, thread and counter."""
    found = fields(data, pos, end)
    if found is None:
        return None
    uuid = parent = 0
    name = ""
    process: tuple[int, str] | None = None
    thread: tuple[int, int, str] | None = None
    counter = False
    for field, wire, value, until in found:
        if wire == 0:
            if field == 1:
                uuid = value
            elif field == 5:
                parent = value
            else:
                return None
        elif field in (2, 10, 13):
            text = _text(data, value, until)
            if text is None:
                return None
            name = text
        elif field == 3 and process is None:
            process = _process_descriptor(data, value, until)
            if process is None:
                return None
        elif field == 4 and thread is None:
            thread = _thread_descriptor(data, value, until)
            if thread is None:
                return None
        elif field == 8 and not counter and value == until:
            counter = True  # an empty CounterDescriptor: nnemu reads only that it is there
        else:
            return None
    return uuid, parent, name, process, thread, counter


def _process_descriptor(data: bytes, pos: int, end: int) -> tuple[int, str] | None:
    """(pid, process_name) of a ``ProcessDescriptor`` (its ``cmdline`` read nowhere)."""
    found = fields(data, pos, end)
    if found is None:
        return None
    pid = 0
    name = ""
    for field, wire, value, until in found:
        if field == 1 and wire == 0:
            pid = _int32(value)
        elif field in (2, 6) and wire == 2:
            text = _text(data, value, until)
            if text is None:
                return None
            if field == 6:
                name = text
        else:
            return None
    return pid, name


def _thread_descriptor(data: bytes, pos: int, end: int) -> tuple[int, int, str] | None:
    """(pid, tid, thread_name) of a ``ThreadDescriptor``."""
    found = fields(data, pos, end)
    if found is None:
        return None
    pid = tid = 0
    name = ""
    for field, wire, value, until in found:
        if field == 1 and wire == 0:
            pid = _int32(value)
        elif field == 2 and wire == 0:
            tid = _int64(value)
        elif field == 5 and wire == 2:
            text = _text(data, value, until)
            if text is None:
                return None
            name = text
        else:
            return None
    return pid, tid, name


def read_tree(data: bytes, pos: int, end: int) -> Tree | None:
    """The processes and threads of the ``ProcessTree`` in ``data[pos:end]``."""
    found = fields(data, pos, end)
    if found is None:
        return None
    processes: list[tuple[int, str]] = []
    threads: list[tuple[int, int, str]] = []
    for field, wire, value, until in found:
        if field == 3 and wire == 0:
            continue  # collection_end_timestamp: read nowhere
        if wire != 2 or field not in (1, 2):
            return None
        entry = fields(data, value, until)
        if entry is None:
            return None
        number = other = 0
        texts: list[str] = []
        for inner, inner_wire, inner_value, inner_until in entry:
            if inner_wire == 0 and inner in (1, 2, 3):
                if inner == 1:
                    number = _int32(inner_value)
                elif inner == 2 and field == 2:
                    return None  # a thread's name is a string
                elif inner == 3 and field == 2:
                    other = _int32(inner_value)  # tgid
                elif inner == 3:
                    return None  # a process's cmdline is a string
            elif inner_wire == 2 and inner == (3 if field == 1 else 2):
                text = _text(data, inner_value, inner_until)
                if text is None:
                    return None
                texts.append(text)
            else:
                return None
        if field == 1:
            processes.append((number, texts[0] if texts else ""))
        else:
            threads.append((number, other, texts[-1] if texts else ""))
    return processes, threads
