"""A Perfetto trace file's ``Trace.packet`` records, in runs of whole packets, streamed.

A trace is a ``Trace`` message: repeated field 1, ``TracePacket``, each a
length-delimited record (tag ``0x0a``, a varint length, the packet's bytes).
``packet_runs`` reads the file a block at a time and gives the records of each block
as one run of bytes with each record's byte offset (``_pbdecode.Decoder.run`` reads
them), so memory stays bounded whatever the file's size.  It needs no protobuf package
(a wheel runs it compiled: ``nnemu._native``).
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator
from typing import IO, Final

from nnemu.trace._pbwire import MAX_PACKET, MAX_VARINT_BYTES, PACKET_TAG, varint

CHUNK: Final = 1 << 20
"""Bytes read at a time: about the size of a run."""


class StreamStop(Exception):
    """The packet stream cannot go on: (offset, message)."""

    def __init__(self, offset: int, message: str) -> None:
        super().__init__(message)
        self.offset = offset
        self.message = message


Run = tuple[list[int], bytes | None]
"""(byte offset of each record, the records' bytes): packets, or None for one record of
another field of ``Trace`` (its offset alone)."""


def packet_runs(raw: IO[bytes] | gzip.GzipFile) -> Iterator[Run]:
    """The records of ``raw`` in runs (``Run``), in file order.

    Raises ``StreamStop`` at a record that cannot be read (after the run before it):
    not a ``Trace`` record, a truncated header or packet, a length over ``MAX_PACKET``,
    or (at the end) a compressed stream that is corrupt or cut off.
    """
    # A gzip stream is read a block at a time, so a cut one loses only its last block.
    read = raw.read1 if isinstance(raw, gzip.GzipFile) else raw.read
    buf = b""
    base = 0  # offset of buf[0] in the stream
    eof = False
    broken = ""  # why a compressed stream ended early
    need = 1
    while not eof or buf:
        if not eof and len(buf) < need:
            try:
                chunk = read(max(CHUNK, need - len(buf)))
            except (EOFError, zlib.error, gzip.BadGzipFile) as err:
                broken = f"the compressed stream is corrupt or cut off ({err})"
                chunk = b""
            if chunk:
                buf = buf + chunk if buf else chunk
                continue
            eof = True
        pos, offsets, need, unknown = _walk(buf, base, eof, broken)
        if offsets:
            yield offsets, buf[: pos if unknown is None else unknown]
        if unknown is not None:
            yield [base + unknown], None
        base += pos
        buf = buf[pos:]
    if broken:
        raise StreamStop(base, broken)


def _walk(buf: bytes, base: int, eof: bool, broken: str) -> tuple[int, list[int], int, int | None]:
    """Walk the whole records at the start of ``buf``.

    Returns (position after the last whole record, their offsets, how many bytes the next
    record needs from that position, the position of a record of another field of
    ``Trace`` that ended the walk or None).  At the end of the stream (``eof``) a record
    that cannot be read raises ``StreamStop``; before it the walk stops to read more.
    """
    offsets: list[int] = []
    append = offsets.append
    pos = 0
    end = len(buf)
    while pos < end:
        # The common record: tag 0x0a and a length of one or two bytes, all present.
        if buf[pos] == PACKET_TAG and pos + 2 < end:
            size = buf[pos + 1]
            start = pos + 2
            if size >= 0x80:
                low = buf[pos + 2]
                if low < 0x80:
                    size = (size & 0x7F) | low << 7
                    start = pos + 3
                else:
                    size = -1
            if size >= 0 and start + size <= end:
                append(base + pos)
                pos = start + size
                continue
        record = _record(buf, pos, base, eof, broken)
        if record is None:  # more bytes needed: at least what _record reads a header from
            # (a short last record, whole but under that, must make the caller read to the
            # end of the stream, not walk the same bytes again)
            needed = max(_needed(buf, pos), 1 + 2 * MAX_VARINT_BYTES)
            return pos, offsets, needed, None
        start, size, is_packet = record
        if not is_packet:
            return start + size, offsets, 1, pos
        append(base + pos)
        pos = start + size
    return pos, offsets, 1, None


def _needed(buf: bytes, pos: int) -> int:
    """How many bytes from ``pos`` the record there needs (its header, then its body)."""
    key = varint(buf, pos, len(buf))
    if key is not None:
        length = varint(buf, key[1], len(buf))
        if length is not None and key[0] & 7 == 2:
            return length[1] + length[0] - pos
    return 1 + 2 * MAX_VARINT_BYTES


def _record(
    buf: bytes, pos: int, base: int, eof: bool, broken: str
) -> tuple[int, int, bool] | None:
    """(body start, body size, whether a ``Trace.packet``) of the record at ``pos``, or
    None when more bytes are needed (never at ``eof``)."""
    end = len(buf)
    offset = base + pos

    def cut(message: str) -> str:
        return f"{message}; {broken}" if broken else message

    if not eof and end - pos < 1 + 2 * MAX_VARINT_BYTES:
        return None
    key = varint(buf, pos, end)
    if key is None:
        raise StreamStop(offset, cut("truncated record header"))
    tag, after_tag = key
    if tag >> 3 == 0 or tag & 7 in (3, 4, 6, 7):
        raise StreamStop(offset, f"not a protobuf Trace record (byte 0x{buf[pos]:02x})")
    wire = tag & 7
    if wire == 0:
        value = varint(buf, after_tag, end)
        if value is None:
            raise StreamStop(offset, cut("truncated record"))
        size, start = 0, value[1]
    elif wire == 2:
        length = varint(buf, after_tag, end)
        if length is None:
            raise StreamStop(offset, cut("truncated record length"))
        size, start = length
    else:
        size, start = (8 if wire == 1 else 4), after_tag
    if size > MAX_PACKET:
        raise StreamStop(offset, f"record of {size} bytes: not a Perfetto trace (or corrupt)")
    if start + size > end:
        if not eof:
            return None
        have = end - start
        message = f"truncated packet: {size} bytes announced, {max(have, 0)} present"
        raise StreamStop(offset, cut(message))
    return start, size, tag == PACKET_TAG
