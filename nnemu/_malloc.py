"""Large blocks straight from the kernel and back: glibc's mmap threshold held at 128 KiB.

glibc serves a block of ``M_MMAP_THRESHOLD`` bytes or more (128 KiB at start) with its own
``mmap``, which ``free`` unmaps.  But on freeing such a block it raises the threshold to the
block's size (up to 32 MiB), so later blocks of that size come from the heap, where freed
space that is not at its top stays in the process.  Replay builds and frees many columns of
one to tens of MB (an 8-byte value an execution), and on a 1 GB trace that fragmentation was
~90 MB of its peak (bench/README.md, `bench_memory.py`).  Setting the threshold, as
``MALLOC_MMAP_THRESHOLD_=131072`` in the environment does, also turns the raising off.
"""

from __future__ import annotations

import ctypes
import platform

_M_MMAP_THRESHOLD = -3
"""``mallopt``'s parameter number (glibc's ``malloc.h``)."""
_THRESHOLD = 128 * 1024


def map_large_blocks() -> bool:
    """Hold glibc's mmap threshold at 128 KiB in this process; False where the C library is
    not glibc (musl and other systems map large blocks their own way) or refused it."""
    if platform.libc_ver()[0] != "glibc":
        return False
    try:
        libc = ctypes.CDLL(None)
        return bool(libc.mallopt(_M_MMAP_THRESHOLD, _THRESHOLD))
    except (OSError, AttributeError):
        return False
