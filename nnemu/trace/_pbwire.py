"""Telling a Perfetto protobuf trace by its first bytes, without the protobuf package.

A trace is a ``Trace`` message: ``Trace.packet`` records (tag ``0x0a``, a
varint length, the packet).  ``looks_like_perfetto`` walks the records and the
fields inside each packet (valid wire types, field numbers above 0) as far as
the bytes it is given go.  Kept apart from ``_perfetto`` so that telling a
file's format costs no import of the reader.
"""

from __future__ import annotations

import zlib
from typing import Final

GZIP_MAGIC: Final = b"\x1f\x8b"
PACKET_TAG: Final = 0x0A
"""Field 1 (``Trace.packet``), wire type 2 (length-delimited)."""
SUFFIXES: Final = (".perfetto-trace", ".pftrace", ".pb")
"""The names Perfetto traces go by (and the same with ``.gz``)."""
MAX_PACKET: Final = 1 << 30
"""A packet longer than this is taken as a sign of garbage, not read."""
MAX_VARINT_BYTES: Final = 10


def varint(data: bytes | bytearray, pos: int, end: int) -> tuple[int, int] | None:
    """(value, next position) of the varint at ``pos``, or None: cut off at ``end`` or too long."""
    value = shift = 0
    for index in range(pos, min(end, pos + MAX_VARINT_BYTES)):
        byte = data[index]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, index + 1
        shift += 7
    return None


def fields_valid(data: bytes, pos: int, end: int) -> bool:
    """Whether ``data[pos:end]`` walks as protobuf fields (a cut at ``len(data)`` is fine)."""
    limit = min(end, len(data))
    while pos < limit:
        tag = varint(data, pos, limit)
        if tag is None:
            return pos + MAX_VARINT_BYTES > limit  # cut off by the head
        key, pos = tag
        field, wire = key >> 3, key & 7
        if field == 0:
            return False
        if wire == 0:
            value = varint(data, pos, limit)
            if value is None:
                return limit - pos < MAX_VARINT_BYTES
            pos = value[1]
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        elif wire == 2:
            length = varint(data, pos, limit)
            if length is None:
                return limit - pos < MAX_VARINT_BYTES
            pos = length[1] + length[0]
        else:
            return False  # groups (3, 4) and 6, 7: not a TracePacket's fields
    return pos == end or end > len(data)


def looks_like_perfetto(head: bytes, *, binary: bool = True) -> bool:
    """Whether a file's first bytes walk as ``Trace.packet`` records of valid protobuf fields.

    ``binary``: the bytes are not text.  Bytes that are also text (a small trace
    of ASCII bytes) must hold at least one whole packet: text that starts with a
    line break (``0x0a``, the packet tag) does not walk that far.
    """
    pos = 0
    whole = 0
    while pos < len(head):
        if head[pos] != PACKET_TAG:
            return False
        length = varint(head, pos + 1, len(head))
        if length is None:
            return whole > 0 and len(head) - pos <= MAX_VARINT_BYTES
        size, start = length
        if size > MAX_PACKET or not fields_valid(head, start, start + size):
            return False
        pos = start + size
        if pos <= len(head):
            whole += 1
        elif not binary:
            return whole > 0
    return whole > 0 or (binary and pos > 0)


def gunzip_head(head: bytes, size: int) -> bytes:
    """The first ``size`` bytes of what a gzip file's first bytes decompress to ("" if corrupt)."""
    try:
        return zlib.decompressobj(wbits=31).decompress(head, size)
    except zlib.error:
        return b""
