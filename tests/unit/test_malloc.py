"""glibc's mmap threshold held (``nnemu._malloc``): replay's freed columns leave the process."""

from __future__ import annotations

import ctypes
import platform

import pytest

from nnemu._malloc import map_large_blocks

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's allocator")


class _Mallinfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd",
            "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost",
        )
    ]  # fmt: skip


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None)
    if not hasattr(libc, "mallinfo2"):
        pytest.skip("glibc older than 2.33 has no mallinfo2")
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    libc.mallinfo2.restype = _Mallinfo2
    return libc


def test_a_block_freed_large_leaves_the_next_mapped_not_on_the_heap() -> None:
    """Freeing an 8 MiB block would raise glibc's threshold to 8 MiB, and a 1 MiB block would
    then come from the heap (where freed space stays in the process); held at 128 KiB, the
    1 MiB block is a mapping of its own, given back when freed."""
    libc = _libc()
    assert map_large_blocks()
    libc.free(libc.malloc(8 << 20))
    mapped = libc.mallinfo2().hblks
    block = libc.malloc(1 << 20)
    try:
        assert libc.mallinfo2().hblks == mapped + 1
    finally:
        libc.free(block)
    assert libc.mallinfo2().hblks == mapped
