"""Per-process summaries the trace reader keeps: an app's executions in flight and closed
sections (``_AppTally``), a driver's calls and executions (``_DriverTally``)."""

from __future__ import annotations

from array import array

from nnemu.hal import HalVersion
from nnemu.replay._attempts import AttemptMarks
from nnemu.scenario import ExecutionMode


class _InFlight:
    """Most threads with an execution open at once, fed begins and ends in time order.

    A thread runs one execution at a time, so sections nested on one thread (a
    malformed or cut trace: begins without their ends) count once; a section the
    trace leaves open counts until the end.  At one timestamp, ends count before begins.
    """

    __slots__ = ("_begins", "_ends", "_now", "_open_on", "best", "busy")

    def __init__(self) -> None:
        self._now: int | None = None
        self._begins: list[int] = []
        self._ends: list[int] = []
        self._open_on: dict[int, int] = {}
        self.busy = 0
        self.best = 0

    def begin(self, ts: int, tid: int) -> None:
        if ts != self._now:
            self.flush()
            self._now = ts
        self._begins.append(tid)

    def end(self, ts: int, tid: int) -> None:
        if ts != self._now:
            self.flush()
            self._now = ts
        self._ends.append(tid)

    def flush(self) -> None:
        """Apply the events of the current timestamp."""
        open_on = self._open_on
        for tid in self._ends:
            before = open_on.get(tid, 0)
            open_on[tid] = before - 1
            if before == 1:
                self.busy -= 1
        for tid in self._begins:
            before = open_on.get(tid, 0)
            open_on[tid] = before + 1
            if before == 0:
                self.busy += 1
                self.best = max(self.best, self.busy)
        for tid in self._ends:
            if not open_on.get(tid):
                open_on.pop(tid, None)
        self._ends.clear()
        self._begins.clear()


def _marks(app: _AppTally) -> AttemptMarks:
    """``app``'s execution marks (made at its first)."""
    if app.attempts is None:
        app.attempts = AttemptMarks()
    return app.attempts


class _AppTally:
    """What one process did as a client (kept for every process; drivers dropped at the end)."""

    __slots__ = (
        "attempts",
        "fallbacks",
        "finishes",
        "flight",
        "hal_begins",
        "hal_closed",
        "la_begins",
        "la_closed",
        "la_compiles",
        "la_inside",
        "lr_begins",
        "lr_closed",
        "modes",
        "po_begin",
        "po_name",
        "prepares",
        "priority_calls",
        "qos",
        "reusable_calls",
        "timeout_calls",
    )

    def __init__(self) -> None:
        # Begins of [NN_LA_PE], runtime execution calls and IPreparedModel::execute* client
        # calls; (begin, tid, duration) of the closed ones, flat; in flight per kind.
        self.la_begins = array("q")
        self.lr_begins = array("q")
        self.hal_begins = array("q")
        self.la_closed = array("q")
        self.la_inside: array[int] | None = None
        """Compile time inside each row of ``la_closed`` (None until one held a compile)."""
        self.lr_closed = array("q")
        self.hal_closed = array("q")
        self.attempts: AttemptMarks | None = None
        """nnemu's execution marks, when the app wrote any (``_attempts``)."""
        self.flight = (_InFlight(), _InFlight(), _InFlight())
        self.modes: dict[ExecutionMode, int] = {}
        self.po_name: str | None = None
        self.po_begin: int | None = None
        """When its first ``[NN_LA_PO]`` section began."""
        self.qos: str | None = None
        """What its first ``nnemu::qos`` mark names after the prefix (``_attempts.parse_qos``)."""
        self.fallbacks = 0
        self.reusable_calls = 0
        """Its runtime's ``ANeuralNetworksExecution_setReusable`` sections."""
        """Its runtime's ``cpuFallbackFull``/``cpuFallbackPartial`` sections."""
        self.finishes = 0
        self.la_compiles = 0
        self.prepares = 0
        self.priority_calls = 0
        self.timeout_calls = 0


class _DriverTally:
    """What one driver process served."""

    __slots__ = (
        "async_begins",
        "async_slots",
        "burst_claims",
        "burst_closed",
        "burst_last_end",
        "burst_owner",
        "burst_seen",
        "clients",
        "evidence",
        "ipc",
        "prep_begins",
        "sync_closed",
        "sync_slots",
        "version",
    )

    def __init__(self) -> None:
        self.version = HalVersion.V1_0
        self.evidence = ""
        self.async_begins = array("q")
        """Begins of asynchronous execute server calls (each ends at the next notify)."""
        self.sync_closed = array("q")
        """(begin, tid, duration) of closed synchronous/fenced execute server calls, flat."""
        self.clients = array("q")
        """The client pid of each execute server call, in begin order (0 until paired)."""
        self.async_slots = array("q")
        """The ``clients`` slot of each of ``async_begins``."""
        self.sync_slots = array("q")
        """The ``clients`` slot of each row of ``sync_closed``."""
        self.burst_closed = array("q")
        """(begin, tid, duration) of closed burst executions (``_BURST_EXECUTOR``), flat."""
        self.burst_seen = array("q")
        """(burst tid, client pid, delivery, idle) of each burst execution that took an open
        request (``_Collector._burst_begin``), flat: the request's begin to the execution's
        begin, and the thread's previous execution end to the request's begin (-1: none)."""
        self.burst_last_end: dict[int, int] = {}
        """burst tid -> the end of its latest burst execution."""
        self.burst_claims: dict[int, dict[int, int]] = {}
        """burst tid -> client pid -> requests of that client its executions took."""
        self.burst_owner: dict[int, int] = {}
        """burst tid -> the client it served (most requests taken), set by ``finish``."""
        self.prep_begins = array("q")
        """Begins of prepareModel server calls."""
        self.ipc = array("q")
        """Client begin -> server begin of each call it served that had a client."""
