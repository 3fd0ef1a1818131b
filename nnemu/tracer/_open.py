"""``open_trace_writer``: the trace writer a file's name asks for.

Interpreted on purpose: it imports the compiled Perfetto writer before the other writers, so
no compiled module of the tracer's group imports another first (mypyc would give that one a
wrong ``__file__``: ``nnemu._native``).
"""

from __future__ import annotations

import os
from typing import Final

from nnemu.tracer._perfetto_writer import PerfettoWriter
from nnemu.tracer._writers import ChromeJsonWriter, FtraceWriter

PERFETTO_SUFFIXES: Final = (".pftrace", ".perfetto-trace")
"""File name endings that select the Perfetto protobuf writer."""


def open_trace_writer(
    path: str | os.PathLike[str],
) -> FtraceWriter | ChromeJsonWriter | PerfettoWriter:
    """A writer for ``path``, chosen by extension: .html (systrace), .json (Chrome),
    .pftrace or .perfetto-trace (Perfetto protobuf), else ftrace text."""
    name = os.fspath(path)
    if name.endswith(PERFETTO_SUFFIXES):
        # Unbuffered: the writer writes whole blocks of packets, so the file never ends mid-packet.
        return PerfettoWriter(open(name, "wb", buffering=0))
    # The other writers make UTF-8 themselves, as they write it.
    out = open(name, "wb")  # noqa: SIM115 - closed by the writer
    if name.endswith(".json"):
        return ChromeJsonWriter(out)
    return FtraceWriter(out, html=name.endswith((".html", ".htm")))
