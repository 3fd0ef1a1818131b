"""glibc's mmap threshold held (``nnemu._malloc``): replay's freed columns leave the process."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's allocator")

_PROBE = """
import ctypes, sys
from nnemu._malloc import map_large_blocks

class Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd",
        "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

libc = ctypes.CDLL(None)
if not hasattr(libc, "mallinfo2"):
    sys.exit(3)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
libc.mallinfo2.restype = Mallinfo2
if sys.argv[1] == "held":
    assert map_large_blocks()
libc.free(libc.malloc(8 << 20))
mapped = libc.mallinfo2().hblks
block = libc.malloc(1 << 20)
print(libc.mallinfo2().hblks - mapped)
"""


def _mapped(mode: str) -> int:
    """How many mappings a 1 MiB block took, after an 8 MiB block was freed, in a fresh
    process (the heap of a process that ran other tests may serve it from a hole)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, mode], capture_output=True, text=True, env=env, timeout=60
    )
    if done.returncode == 3:
        pytest.skip("glibc older than 2.33 has no mallinfo2")
    assert done.returncode == 0, done.stderr
    return int(done.stdout)


def test_a_block_after_a_freed_large_one_is_mapped_not_on_the_heap() -> None:
    """Freeing an 8 MiB block raises glibc's threshold to 8 MiB, so a 1 MiB block then comes
    from the heap, where freed space stays in the process; held at 128 KiB, the 1 MiB block
    is a mapping of its own, given back when freed."""
    assert _mapped("default") == 0
    assert _mapped("held") == 1
