"""Canonical trace events: what every format's reader gives, whatever the file was.

An event is a plain 7-tuple ``(kind, ts, place, pid, tid, name, extra)`` (no class: a
reader gives millions of them, and a consumer unpacks them in its loop header):

============  ====  =====  ==========  ===  ==================  ===============================
kind          ts    place  pid         tid  name                extra
============  ====  =====  ==========  ===  ==================  ===============================
``BEGIN``     ns    where  process     yes  slice name          the row's ``TASK`` column (a
                                                                text row), None (a JSON event)
``END``       ns    where  pid or -1   yes  ``""``              as ``BEGIN``
``COMPLETE``  ns    where  process     yes  slice name          duration in ns
``PROCESS``   0     where  process     0    process name        None
``THREAD``    0     where  process     yes  thread name         True: a rename (JSON
                                                                ``thread_name``); False: a
                                                                process dump's row
``INSTANT``   ns    where  process     yes  slice name          None
``ARGS``      ns    where  process     yes  ``""``              the JSON event (a dict)
``PROBLEM``   0     where  0           0    what is wrong       a JSON event's ``ph``,
                                                                ``NO_SLICE``, ``CUT_ROW``
                                                                or None (below)
``RESTART``   0     0      0           0    ``""``              None
``COUNTER``   ns    where  process or  see  counter name        the value (a float), or why
                           -1          below                    it is none (a str)
``FLOW``      ns    where  process     yes  a JSON v1 flow's    ``(how, cat, id)``, or why it
                                            name, else ``""``   is none (a str)
============  ====  =====  ==========  ===  ==================  ===============================

``place`` is where the event is in the file, as its format places warnings: a line number
(text, JSON; 0 when not known) or a Perfetto packet's byte offset. ``PROBLEM`` is an event
the reader skipped and why (a JSON event of the wrong shape, with its ``ph`` when it is one
of the slice phases, so that a reader that reads no ``X`` or instants says nothing of one; a
bad Perfetto packet). A text row's ``PROBLEM`` (``TraceEvents`` reading a file:
``row_batches``' ``problems``) comes before the events of its row, at the same place; its
``extra`` is ``NO_SLICE`` when the ``BEGIN`` after it is a ``B`` mark with no tgid
(Perfetto's trace processor opens no slice for it: a reader that follows it, as ``nnemu
query`` does, names the thread, in the process of the ``PROBLEM``'s ``pid``, the row's TGID
column's or -1, and opens none; replay reads a nameless begin) and ``CUT_ROW`` when the
row's events after it are of the file's last line, cut off before its line break (trace
processor does not read it: such a reader skips them). A row of a JSON document's
``systemTraceEvents`` text that is a ``B`` mark with no tgid has a ``PROBLEM`` with
``extra`` ``NO_SLICE`` right before its ``BEGIN``, at its place, as a text row's. An
``INSTANT`` is a slice of no duration on its thread (a JSON ``i`` or ``I`` of thread scope,
or ``R``: what ``nnemu query`` loads, as trace processor does; parse and replay skip it). An
``ARGS`` comes right before the ``BEGIN``, ``COMPLETE`` or ``INSTANT`` of a JSON event that
has a ``cat`` or ``args``: the event itself, whose ``cat`` (if a string) and ``args`` (if an
object) ``nnemu query`` loads into ``slice.category`` and the ``args`` table.
``RESTART`` says that what came before it is void and the file is read again from its start
(a JSON file that turned out not to hold one event per line, read as one document).

A ``COUNTER`` is one value of a counter track: an atrace ``C|tgid|name|value`` row (``tid``
the row's thread; the value read as Perfetto's trace processor reads it, an integer), a
numeric arg of a JSON ``C`` event (one event per arg, named ``"<name> <arg key>"``, as trace
processor names its track) or a Perfetto counter track's value; those two have ``tid`` -1
(the track is the process's, or no process's: ``pid`` -1).  A ``FLOW`` binds a flow to a
slice of its thread: ``how`` says which and what it does (``FLOW_START`` ...
``FLOW_THROUGH``), ``cat`` and ``id`` (a JSON flow's ``cat`` or ``""``; its id, hex text
read as a number, or a Perfetto flow id) with ``name`` key it.  The v2 kinds
(``FLOW_IN``, ``FLOW_OUT``, ``FLOW_THROUGH``: Perfetto's ``flow_ids`` and
``terminating_flow_ids``, JSON's ``bind_id`` with ``flow_in``/``flow_out``) come right
after the ``BEGIN`` or ``COMPLETE`` of the slice they bind to.  A ``COUNTER`` or ``FLOW``
whose ``extra`` is a str could not be read (a malformed counter row, a non-numeric JSON
counter arg, a flow event without an id): what ``nnemu query`` warns (it follows trace
processor, which loads counters and flows); the other readers skip both kinds.

One module per format makes them: ``_ftrace`` (systrace HTML, ftrace text), ``_chrome``
(Chrome JSON), ``_perfetto`` (a Perfetto protobuf trace, from its decoded packets:
``perfetto_event_batches``); ``_reader.TraceEvents`` opens a file, tells its format once and
gives its events.

Read with ``texts`` (``row_batches``: what ``nnemu parse`` reads, which prints rows as
written), a text trace's events also carry what the rows say as written: each list starts
with a ``LINES`` event, whose ``place`` is the number of the first of its lines and whose
``extra`` is the list of them, so that the text of an event's row is
``lines[place - first]``; a row's ``BEGIN`` or ``END`` has its text after
``tracing_mark_write: `` (the payload as written) for ``name`` and its head's ``RowHead``
(task, tid and TGID column as written) for ``extra``; a ``HEAD`` event (``name`` the task,
``extra`` its ``RowHead``) comes where a distinct row head is first read (again after the
reader's cache of heads is emptied), the heads of every row with a ``tracing_mark_write``
payload, counter rows too.  Such a reading keeps times exact (a time finer than a ns is a
``PROBLEM``, ``exact_timestamp_ns``'s message) and a tid beyond pid_t as written.
"""

from __future__ import annotations

from typing import Final

import attrs

BEGIN: Final = 0
END: Final = 1
COUNTER: Final = 2
FLOW: Final = 3
COMPLETE: Final = 4
PROCESS: Final = 5
THREAD: Final = 6
PROBLEM: Final = 7
RESTART: Final = 8
INSTANT: Final = 9
ARGS: Final = 10
LINES: Final = 20
"""A reading with ``texts``: the lines of the events after it (module docstring)."""
HEAD: Final = 21
"""A reading with ``texts``: a row head read for the first time (module docstring)."""

FLOW_START: Final = 0
"""A JSON ``s``: the flow starts at the innermost slice open on its thread."""
FLOW_STEP: Final = 1
"""A JSON ``t``: the flow goes on from where it is to the innermost open slice, and on from it."""
FLOW_END: Final = 2
"""A JSON ``f`` with ``"bp": "e"``: the flow ends at the innermost open slice."""
FLOW_END_NEXT: Final = 3
"""A JSON ``f`` without it: the flow ends at the next slice to begin on its thread."""
FLOW_IN: Final = 4
"""The flow ends at the slice just begun (Perfetto ``terminating_flow_ids``, JSON
``flow_in`` alone)."""
FLOW_OUT: Final = 5
"""The flow starts at the slice just begun (JSON ``flow_out`` alone)."""
FLOW_THROUGH: Final = 6
"""The flow goes on to the slice just begun, or starts there (Perfetto ``flow_ids``, JSON
``flow_in`` and ``flow_out``)."""

NO_SLICE: Final = 1
"""A text row's ``PROBLEM``'s ``extra``: the ``BEGIN`` after it, at its place, is a ``B``
mark with no tgid, which opens no slice in Perfetto's trace processor."""
CUT_ROW: Final = 2
"""A text row's ``PROBLEM``'s ``extra``: the events after it, at its place, are of a row
the file ends in, without its line break, which Perfetto's trace processor does not read."""


@attrs.frozen
class RowHead:
    """A text row's head as written (a reading with ``texts``), before its timestamp."""

    task: str
    """The TASK column."""
    tid: str
    """The TID column, as written (``0123`` is not ``123``)."""
    tgid: str | None
    """The TGID column; None when the row has none or it is ``-----`` (unknown)."""


FlowInfo = tuple[int, str, int | str]
"""A ``FLOW``'s ``extra``: ``(how, cat, id)``."""

Event = tuple[
    int,
    int,
    int,
    int,
    int,
    str,
    str | int | float | FlowInfo | RowHead | list[str] | dict[str, object] | None,
]
"""``(kind, ts, place, pid, tid, name, extra)``: see the module's table."""
