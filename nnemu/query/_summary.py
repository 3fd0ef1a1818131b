"""What a load put into the database (one class, whichever loader ran: compiled or pure)."""

from __future__ import annotations

import attrs


@attrs.frozen(kw_only=True)
class LoadSummary:
    """What a load put into the database."""

    source: str
    """File name as given."""
    format: str
    """``ftrace``, ``systrace`` or ``json``."""
    slices: int
    """Rows in ``slice``."""
    open_slices: int
    """Slices still open at the end (``dur = -1``)."""
    unmatched_ends: int
    """End marks with nothing open, skipped."""
    out_of_order: int = 0
    """Rows earlier than the row before them on their thread (then read again in time
    order, as Perfetto matches them, unless the trace is too big to)."""
    threads: int
    """Rows in ``thread``."""
    processes: int
    """Rows in ``process``."""
