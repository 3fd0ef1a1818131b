"""``nnemu query``: SQL over traces, in tables shaped like Perfetto's trace processor."""

from __future__ import annotations

from typing import TextIO


def run_query_command(
    trace: str,
    sql: str | None,
    *,
    as_csv: bool,
    as_json: bool,
    db: str | None,
    stdin: TextIO,
    stdout: TextIO,
    stderr: TextIO,
) -> int:
    """Exit code of ``nnemu query`` (being built: issue 5)."""
    stderr.write("nnemu query: not available in this build yet\n")
    return 2
