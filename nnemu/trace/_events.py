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
``PROBLEM``   0     where  0           0    what is wrong       None
``RESTART``   0     0      0           0    ``""``              None
============  ====  =====  ==========  ===  ==================  ===============================

``place`` is where the event is in the file, as its format places warnings: a line number
(text, JSON; 0 when not known) or a Perfetto packet's byte offset.  ``PROBLEM`` is an event
the reader skipped and why (a JSON event of the wrong shape; a bad Perfetto packet).
``RESTART`` says that what came before it is void and the file is read again from its start
(a JSON file that turned out not to hold one event per line, read as one document).

One module per format makes them: ``_ftrace`` (systrace HTML, ftrace text), ``_chrome``
(Chrome JSON), ``_perfetto`` (a Perfetto protobuf trace, from its decoded packets:
``perfetto_event_batches``); ``_reader.TraceEvents`` opens a file, tells its format once and
gives its events.
"""

from __future__ import annotations

from typing import Final

BEGIN: Final = 0
END: Final = 1
COUNTER: Final = 2
FLOW: Final = 3
COMPLETE: Final = 4
PROCESS: Final = 5
THREAD: Final = 6
PROBLEM: Final = 7
RESTART: Final = 8

Event = tuple[int, int, int, int, int, str, str | int | None]
"""``(kind, ts, place, pid, tid, name, extra)``: see the module's table."""
