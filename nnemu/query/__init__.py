"""``nnemu query``: SQL over traces, in tables shaped like Perfetto's trace processor.

``open_trace(path)`` gives a ``sqlite3.Connection`` with the tables
``process``, ``thread``, ``thread_track``, ``slice``, ``args``, ``flow``,
``counter`` and ``process_counter_track`` and the views ``counter_track``,
``nnapi_slice``, ``slice_ancestor`` and ``slice_descendant``; ``to_apsw(conn)``
copies it to an ``apsw.Connection`` that also has Perfetto's table functions
``ancestor_slice``, ``descendant_slice``, ``directly_connected_flow``,
``following_flow`` and ``preceding_flow``; see
``docs/query.md``.  ``TraceProcessor(trace=path)`` offers Perfetto's Python API shape
over the same tables (``query(sql)``, ``as_pandas_dataframe()``; docs/python-api.md).
"""

from __future__ import annotations

import sqlite3

from nnemu.query._command import run_query_command, split_statements
from nnemu.query._load import load_trace
from nnemu.query._loader import Warn
from nnemu.query._marks import KINDS, MarkInfo, describe
from nnemu.query._python import QueryResult, TraceProcessor
from nnemu.query._summary import LoadSummary
from nnemu.query._table_functions import to_apsw


def _ignore(line_number: int, message: str) -> None:
    """Drop a load warning."""


def open_trace(path: str, *, warn: Warn | None = None) -> sqlite3.Connection:
    """Load the trace at ``path`` into a new in-memory database and return it.

    Args:
        path: systrace ``.html``, ftrace text, or Chrome/nnemu ``.json``.
        warn: Receives (line number, message) per recoverable problem; dropped if None.

    Raises:
        TraceFormatError: Nothing to load.
        OSError: The file cannot be read.
    """
    conn = sqlite3.connect(":memory:")
    try:
        load_trace(path, conn, warn or _ignore)
    except BaseException:
        conn.close()
        raise
    return conn


__all__ = [
    "KINDS",
    "LoadSummary",
    "MarkInfo",
    "QueryResult",
    "TraceProcessor",
    "describe",
    "load_trace",
    "open_trace",
    "run_query_command",
    "split_statements",
    "to_apsw",
]
