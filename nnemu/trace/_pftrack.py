"""A Perfetto trace's counter values and flow ids as canonical ``COUNTER`` and ``FLOW`` events.

``track_record_events`` turns one decoded record (``_pbdecode``'s tuples) into them, read as
the trace's systrace text form reads: a counter of a thread of a known process is the
atrace ``C|pid|name|value`` row it would be (an integer value, as Perfetto's trace
processor reads such a row), any other a counter track's value (``tid`` -1); a flow id
binds to the slice its thread began last (``FLOW_THROUGH``; a terminating id
``FLOW_IN``).  (The one place these records become events, whatever reads the decoded
packets.)
"""

from __future__ import annotations

from nnemu.trace._events import COUNTER, FLOW, FLOW_IN, FLOW_THROUGH, Event
from nnemu.trace._pbdecode import Record
from nnemu.trace._rows import MALFORMED_COUNTER, MAX_ID


def track_record_events(record: Record) -> list[Event]:
    """The events of a decoded counter value (``(ts, offset, COUNTER, pid or None, tid or
    None, name, value)``) or flow id (``(ts, offset, FLOW, pid, tid, flow id,
    terminating)``)."""
    ts: int = record[0]
    offset: int = record[1]
    pid: int | None = record[3]
    tid: int | None = record[4]
    if record[2] == FLOW:
        how = FLOW_IN if record[6] else FLOW_THROUGH
        return [(FLOW, ts, offset, pid or 0, tid or 0, "", (how, "", record[5]))]
    name: str = record[5]
    value: float = record[6]
    if tid is None or pid is None:
        return [(COUNTER, ts, offset, -1 if pid is None else pid, -1, name, value)]
    if ts < 0 or not 0 <= tid <= MAX_ID:
        return []  # no row: a time or tid no kernel writes
    if not name or "|" in name or not (value.is_integer() and abs(value) < 2**63):
        return [(COUNTER, ts, offset, -1, tid, name, MALFORMED_COUNTER)]
    return [(COUNTER, ts, offset, pid if 0 < pid <= MAX_ID else -1, tid, name, float(value))]
