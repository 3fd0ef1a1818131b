"""Reading a recorded trace: which app ran what, when, on which driver.

The input is a systrace HTML file, ftrace text or Chrome trace-event JSON, from
nnemu or from a device, read with ``nnemu.trace``.  Only the NNAPI sections are
kept: NNTRACE marks (``[NN_<layer>_<phase>]``, classified with ``nnemu.trace.classify``
as the parser does) and the HIDL marks of the NNAPI interfaces.  From them:

* an **app** is a process that issued executions.  Its arrivals are the begins of
  ``[NN_LA_PE]`` sections when it has any, else of the runtime's
  ``ANeuralNetworksExecution_compute/startCompute/startComputeWithDependencies``,
  else (a HAL-only trace) of its ``HIDL::IPreparedModel::execute*::client`` calls;
* a **driver** is a process serving ``IDevice``/``IPreparedModel`` calls.  Its HAL
  version is the highest one its method names show (``prepareModel_1_3`` -> 1.3,
  ``executeSynchronously`` -> 1.2, no suffix -> 1.0); its execution times run from
  an ``execute*::server`` begin to the ``IExecutionCallback::notify*::client`` begin
  that answers it (asynchronous HAL calls) or to the server section's end (synchronous
  and fenced calls), as the parser measures driver time.
"""

from __future__ import annotations

import collections
import heapq
import itertools
import json
import math
import os
import re
import statistics
from array import array
from collections.abc import Callable, Iterable, Sequence
from typing import Final, TextIO

import attrs

from nnemu._progress import Progress
from nnemu.errors import TraceFormatError
from nnemu.hal import HalVersion
from nnemu.replay._attempts import (
    FAILED_MARK,
    RETRY_MARK,
    WAITED_MARK,
    AttemptMarks,
    completed_only,
    join_attempts,
    waited_ns,
)
from nnemu.scenario import CPU_DEVICE_NAME, ExecutionMode
from nnemu.trace import (
    MAX_ID,
    MAX_SORTED_BYTES,
    NO_DUR,
    NO_PHASE,
    NOT_AN_EVENT,
    NOT_CHROME_TRACE,
    ROW_RE,
    TRUNCATED_HTML,
    DumpProcess,
    DumpThread,
    FtraceLines,
    NotLineJson,
    TraceFormat,
    atrace_tgid,
    classify,
    event_lines,
    file_format,
    is_json_number,
    json_line_events,
    json_problem,
    json_time_ns,
    negative_dur,
    negative_ts,
    not_a_number_dur,
    not_a_number_ts,
    out_of_order_warning,
    pid_of,
    pid_tid_problem,
    refuse_unreadable,
    system_text,
    time_ordered,
    timestamp_ns,
)
from nnemu.tracer import NNAPI_HIDL_INTERFACES, Layer, Phase, safe_name

_NN_INTERFACES: Final = NNAPI_HIDL_INTERFACES
_EXECUTION_API: Final = {
    "ANeuralNetworksExecution_compute": ExecutionMode.SYNC,
    "ANeuralNetworksExecution_startCompute": ExecutionMode.ASYNC,
    "ANeuralNetworksExecution_startComputeWithDependencies": ExecutionMode.FENCED,
    "ANeuralNetworksExecution_burstCompute": ExecutionMode.BURST,
}
# Methods that only exist from some HAL version on (without a version suffix).
_METHOD_VERSION: Final = {
    "executeSynchronously": HalVersion.V1_2,
    "getVersionString": HalVersion.V1_2,
    "getType": HalVersion.V1_2,
    "getSupportedExtensions": HalVersion.V1_2,
    "getNumberOfCacheFilesNeeded": HalVersion.V1_2,
    "prepareModelFromCache": HalVersion.V1_2,
    "configureExecutionBurst": HalVersion.V1_2,
    "executeFenced": HalVersion.V1_3,
    "allocate": HalVersion.V1_3,
}
_VERSIONS: Final = (HalVersion.V1_0, HalVersion.V1_1, HalVersion.V1_2, HalVersion.V1_3)
_SERVICE_RE: Final = re.compile(r"neuralnetworks@\d\.\d-service-?(.*)$")

_NOISE: Final = 1000
"""One execution in this many begun beside running ones is noise, not a compute unit."""
ARRIVALS_LA: Final = "[NN_LA_PE] begins"
ARRIVALS_LR: Final = "ANeuralNetworksExecution_compute/startCompute*/burstCompute begins"
ARRIVALS_HAL: Final = "HIDL IPreparedModel::execute* ::client begins"


def _column(values: Iterable[int]) -> array[int]:
    """A plan's per-execution times as 8-byte ints (a tuple of ints takes ~40 bytes each)."""
    return array("q", values)


@attrs.frozen(kw_only=True)
class TraceApp:
    """What one client process did."""

    pid: int
    """Process id in the trace."""
    name: str
    """The app's name in the replay scenario (unique, a name every trace format carries:
    ``nnemu.tracer.safe_name``)."""
    process_name: str | None
    """Process name from the trace (process dump, JSON metadata, main thread), if any."""
    model_name: str | None
    """Detail of its first ``[NN_LA_PO]`` mark (a model name on devices, the app on nnemu)."""
    arrivals_ns: array[int] = attrs.field(converter=_column)
    """When each execution was issued (trace clock, sorted)."""
    arrival_source: str
    """Which marks gave the arrivals (``ARRIVALS_LA`` / ``_LR`` / ``_HAL``)."""
    execution_mode: ExecutionMode | None
    """From the runtime's execution API; None when the trace has no runtime marks."""
    max_in_flight: int
    """Most executions open at once (-> app threads)."""
    compilations: int
    """Compilations recorded (``Compilation_finish``, else ``[NN_LA_PC]``, else prepareModel)."""
    driver_pids: tuple[int, ...]
    """Drivers that served its executions, most used first."""
    driver_executions: tuple[int, ...]
    """How many of its executions each of ``driver_pids`` served."""
    priority_calls: int
    """``ANeuralNetworksCompilation_setPriority`` calls seen (the value is not traced)."""
    timeout_calls: int
    """``Compilation_setTimeout``/``Execution_setTimeout`` calls seen (values not traced)."""
    latencies_ns: array[int] = attrs.field(converter=_column, factory=tuple)
    """Duration of each closed section that gave an arrival (the recorded latencies)."""
    latency_begins_ns: array[int] = attrs.field(converter=_column, factory=tuple)
    """When each of ``latencies_ns`` began (trace clock), in the same order."""
    failed: int = 0
    """Executions that failed (nnemu's ``nnemu::failed`` mark, ``_attempts``): not in
    ``latencies_ns``, as a run's report counts only completed ones."""
    refused_ns: array[int] = attrs.field(converter=_column, factory=tuple)
    """(begin, end) of each attempt nnemu's marks show did not complete (``_attempts``):
    the driver executions begun inside one count for no app (``execution_clients`` 0)."""
    retried: int = 0
    """Attempts joined to an earlier one of their execution (``_attempts``)."""
    waited: int = 0
    """Executions whose arrival a wait mark moved back (``_attempts``)."""
    never_ended: int = 0
    """Sections that gave an arrival but did not finish in the trace: still open at its end,
    or closed by the end of the capture (``TracePlan.cut_ns``)."""
    compile_inside_ns: array[int] = attrs.field(converter=_column, factory=tuple)
    """Time spent compiling inside each of ``latencies_ns`` (a ``prepareModel`` call, a
    ``[NN_LA_PC]`` or ``Compilation_finish`` section nested in the ``[NN_LA_PE]`` section, as
    Android's benchmark app compiles before each run); empty when none was."""
    burst_executions: int = 0
    """Executions a driver's burst thread ran for it (``[NN_LD_PE]BurstExecutorWithCache::
    execute``; the thread serves the client whose burst requests it took most)."""
    burst_deliveries_ns: array[int] = attrs.field(converter=_column, factory=tuple)
    """For each of its burst requests its burst thread took: from the request's begin (the
    ``ExecutionBurstController::compute`` section on the app's thread) to the execution's
    begin on the burst thread (the packet's way: at once to a polling server, a wake-up
    to a sleeping one)."""
    burst_idle_ns: array[int] = attrs.field(converter=_column, factory=tuple)
    """For each of ``burst_deliveries_ns``: from the burst thread's previous execution end to
    the request's begin (-1: its first)."""


@attrs.frozen(kw_only=True)
class TraceDriver:
    """What one driver service process did."""

    pid: int
    """Process id in the trace."""
    name: str
    """The device's name in the replay scenario."""
    process_name: str | None
    """Process name from the trace, if any."""
    hal_version: HalVersion
    """Highest HAL version its method names show."""
    hal_evidence: str
    """The method name that decided the version (empty: none had a version, 1.0)."""
    execution_ns: array[int] = attrs.field(converter=_column)
    """Observed driver time of each execution it served."""
    execution_clients: array[int] = attrs.field(converter=_column, factory=tuple)
    """The pid of the client process whose call each of ``execution_ns`` answered (0: no
    client call seen); empty when not known at all."""
    service_ns: array[int] = attrs.field(converter=_column, factory=tuple)
    """How long the device worked on each of ``execution_ns``: the driver time less the
    wait behind the execution that ended before it (the device serves one at a time), or
    the whole driver time of an execution that ran beside others (``compute_units``)."""
    execution_begins_ns: array[int] = attrs.field(converter=_column, factory=tuple)
    """When each of ``execution_ns`` began (its ``execute*::server`` begin, trace clock);
    empty when not known."""
    compute_units: int = 1
    """The most executions the device ran at once (``units_evidence``): 1 when the trace
    shows none beside another."""
    units_evidence: int = 0
    """How many executions began beside a running one and ran from their begin."""
    units_fit: tuple[float, ...] = ()
    """When ``compute_units`` came from fitting the device times (``_fitted_units``): their
    spread around each app's median (ln) with 1, 2, ... units, as far as tried; else ()."""
    burst_executions: int = 0
    """Executions it ran in bursts (``[NN_LD_PE]BurstExecutorWithCache::execute`` sections on
    its burst threads), counted in ``compute_units``; not in ``execution_ns``."""
    burst_execution_ns: array[int] = attrs.field(converter=_column, factory=tuple)
    """Observed driver time of each burst execution (its ``BurstExecutorWithCache::execute``
    section), in the order of ``burst_ns``."""
    burst_ns: array[int] = attrs.field(converter=_column, factory=tuple)
    """Device time of each burst execution (its whole time when it ran beside another
    execution or on an idle device, else its time after the one that ended before it)."""
    burst_clients: array[int] = attrs.field(converter=_column, factory=tuple)
    """The client pid each of ``burst_ns`` was run for (0: not known)."""
    prepare_ns: tuple[int, ...]
    """Observed driver time of each preparation (server begin -> notify)."""
    unfinished: int = 0
    """Execute server calls begun that did not finish in the trace (no notify, no end, or
    closed by the end of the capture: ``TracePlan.cut_ns``); not in ``execution_ns``."""

    @property
    def median_execution_ns(self) -> int | None:
        """Median observed execution time, if it served any."""
        return int(statistics.median(self.execution_ns)) if self.execution_ns else None

    def service_of(self, client_pid: int) -> array[int]:
        """The device times (``service_ns``, then ``burst_ns``) of the executions it served
        for ``client_pid``."""
        return array(
            "q",
            itertools.chain(
                (
                    ns
                    for ns, pid in zip(self.service_ns, self.execution_clients, strict=True)
                    if pid == client_pid
                ),
                (
                    ns
                    for ns, pid in zip(self.burst_ns, self.burst_clients, strict=True)
                    if pid == client_pid
                ),
            ),
        )

    @property
    def median_prepare_ns(self) -> int | None:
        """Median observed preparation time, if it prepared any."""
        return int(statistics.median(self.prepare_ns)) if self.prepare_ns else None


@attrs.frozen(kw_only=True)
class TracePlan:
    """Everything a replay needs from a trace."""

    source: str
    """The trace file as given."""
    format: str
    """``systrace``, ``ftrace`` or ``json``."""
    t0_ns: int
    """The first arrival of any app (trace clock); replay time 0."""
    apps: tuple[TraceApp, ...]
    """Client processes that issued executions, by first arrival."""
    drivers: tuple[TraceDriver, ...]
    """Driver processes, by pid."""
    ipc_latency_ns: array[int] = attrs.field(converter=_column)
    """Observed delays from a ``::client`` begin to its ``::server`` begin."""
    notes: tuple[str, ...] = ()
    """Things left out (processes with compilations but no execution, say)."""
    cut_ns: int | None = None
    """The trace's last timestamp when the end of the capture closed executions there (nnemu
    closes every open section when a run stops): those count as never ended
    (``TraceApp.never_ended``), not as finished; None when it closed none."""
    warnings: tuple[str, ...] = ()
    """``FILE:LINE: warning: ...`` lines of what is wrong with the file (a cut systrace HTML
    file; ``FILE: byte OFFSET: warning: ...``, a Perfetto trace's bad packet), as ``nnemu
    parse`` prints them."""


# ---------------------------------------------------------------------- reading
#
# One streaming pass: each NNAPI section is folded into per-process summaries when it
# begins and when it ends (arrays of timestamps, counts, running maxima), so memory grows
# with the executions an app issued, not with the rows of the trace.  The two sweeps that
# need time order (executions in flight; which client call a server call answers) are fed
# as the rows come, the events of one timestamp applied in the order a sort would give.

_MAX_CACHED_NAMES: Final = 20_000
_NONE: Final = array("q")

# What a mark name means for the plan (``_Role.kind``).
_IGNORED: Final = 0
_LA_EXEC: Final = 1
_LA_OVERALL: Final = 2
_LA_COMPILE: Final = 3
_LR_EXEC: Final = 4
_LR_FINISH: Final = 5
_LR_PRIORITY: Final = 6
_LR_TIMEOUT: Final = 7
_CLIENT: Final = 8
_SERVER: Final = 9
_NOTIFY_EXEC: Final = 10
_NOTIFY_PREP: Final = 11
_BURST_EXEC: Final = 12
_BURST_REQUEST: Final = 13
_RETRY: Final = 14
_WAITED: Final = 15
_FAILED: Final = 16
_BURST_EXECUTOR: Final = "BurstExecutorWithCache::"
"""The function of the ``[NN_LD_PE]`` section in which AOSP's sample driver runs one
execution of a burst on the burst's server thread (no HIDL call per execution)."""
_BURST_CONTROLLER: Final = "ExecutionBurstController::compute"
"""The function of the ``[NN_LI_PE]`` section in which the runtime sends one request packet
over a burst's fast message queue and waits for its result (on the app's thread)."""
_RUNTIME_COUNTS: Final = {
    "ANeuralNetworksCompilation_finish": _LR_FINISH,
    "ANeuralNetworksCompilation_setPriority": _LR_PRIORITY,
    "ANeuralNetworksCompilation_setTimeout": _LR_TIMEOUT,
    "ANeuralNetworksExecution_setTimeout": _LR_TIMEOUT,
}


@attrs.frozen
class _Role:
    """What one mark name contributes to the plan (cached per distinct name)."""

    kind: int
    """``_IGNORED``, ``_LA_EXEC``, ... ``_BURST_REQUEST``."""
    text: str = ""
    """``Iface::method`` of a HIDL call; the function of ``[NN_LA_PO]``."""
    mode: ExecutionMode | None = None
    """The mode a runtime execution call means."""
    execute: bool = False
    """An ``IPreparedModel::execute*`` call."""
    async_server: bool = False
    """The server side of an asynchronous execute (it ends at the notify)."""
    prepare: bool = False
    """An ``IDevice::prepareModel*`` call."""
    version: HalVersion = HalVersion.V1_0
    """The HAL version a server method shows."""
    burst: bool = False
    """``ANeuralNetworksExecution_burstCompute`` (a request over a burst, as
    ``_BURST_REQUEST``)."""


_NOT_USED: Final = _Role(_IGNORED)


def _role(name: str) -> _Role:
    """What the section ``name`` is for the plan: NNTRACE marks (as the parser classifies
    them) and the HIDL marks of the NNAPI interfaces; anything else is ignored."""
    if "[NN" in name:
        pass
    elif name.startswith("nnemu::"):
        return _nnemu_role(name)
    elif name.startswith("HIDL::"):
        parts = name.split("::")
        if len(parts) < 4 or parts[1] not in _NN_INTERFACES:
            return _NOT_USED
    else:
        return _NOT_USED
    mark = classify(name)
    if mark.hidl:
        iface, method, side = _hidl_parts(name)
        key = f"{iface}::{method}"
        execute = iface == "IPreparedModel" and method.startswith("execute")
        prepare = iface == "IDevice" and method.startswith("prepareModel")
        if side == "server" and mark.driver_server:
            return _Role(
                _SERVER,
                key,
                execute=execute,
                async_server=mark.async_execute_server,
                prepare=prepare,
                version=_version_of(method),
            )
        if side == "client" and iface == "IExecutionCallback":
            return _Role(_NOTIFY_EXEC)
        if side == "client" and iface == "IPreparedModelCallback":
            return _Role(_NOTIFY_PREP)
        if side == "client" and iface in ("IDevice", "IPreparedModel"):
            return _Role(_CLIENT, key, execute=execute, prepare=prepare)
        return _NOT_USED
    if mark.layer is None or mark.switch:
        return _NOT_USED
    if mark.layer is Layer.APPLICATION:
        if mark.phase is Phase.EXECUTION:
            return _Role(_LA_EXEC)
        if mark.phase is Phase.OVERALL:
            return _Role(_LA_OVERALL, mark.function)
        if mark.phase is Phase.COMPILATION:
            return _Role(_LA_COMPILE)
    elif mark.layer is Layer.DRIVER:
        if mark.phase is Phase.EXECUTION and mark.function.startswith(_BURST_EXECUTOR):
            return _Role(_BURST_EXEC)
    elif mark.layer is Layer.IPC:
        if mark.phase is Phase.EXECUTION and mark.function == _BURST_CONTROLLER:
            return _Role(_BURST_REQUEST)
    elif mark.layer is Layer.RUNTIME:
        if mark.function in _EXECUTION_API:
            mode = _EXECUTION_API[mark.function]
            return _Role(_LR_EXEC, mode=mode, burst=mode is ExecutionMode.BURST)
        return _Role(_RUNTIME_COUNTS.get(mark.function, _IGNORED))
    return _NOT_USED


def _nnemu_role(name: str) -> _Role:
    """nnemu's execution marks (``_attempts``)."""
    if name.startswith(RETRY_MARK):
        return _Role(_RETRY)
    if name.startswith(FAILED_MARK):
        return _Role(_FAILED)
    if name.startswith(WAITED_MARK):
        wait = waited_ns(name)
        if wait is not None:
            return _Role(_WAITED, str(wait))
    return _NOT_USED


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


class _Calls:
    """Pairs the server calls of one ``Iface::method`` with its client calls.

    A server call begins while its client call is open; among the open, unpaired client
    calls it takes the one that began first (binder delivers transactions of equal latency
    in order).  The pair is kept until its client call ends: a client call that ends with no
    server call of its own while a server call that began inside it went to a client call
    still open takes that server call, and the other waits again (two threads' transactions
    overtook each other: IPC latency jitter).  Fed in time order; at one timestamp client
    begins come first (by pid, tid), then server begins, then client ends.
    """

    __slots__ = ("_begins", "_ends", "_now", "_servers", "held", "waiting")

    def __init__(self) -> None:
        self._now: int | None = None
        self._begins: list[tuple[int, int, int]] = []  # (pid, tid, serial)
        # (driver pid, tid, execute, slot in the driver's execute clients or -1)
        self._servers: list[tuple[int, int, bool, int]] = []
        self._ends: list[int] = []  # serials
        self.waiting: dict[int, tuple[int, int]] = {}  # serial -> (begin, pid), in begin order
        # serial -> (begin, pid, its server call's begin, driver pid, execute, slot): paired,
        # the client call still open
        self.held: dict[int, tuple[int, int, int, int, bool, int]] = {}

    def _at(self, ts: int, collector: _Collector) -> None:
        if ts != self._now:
            self.flush(collector)
            self._now = ts

    def client_begin(self, ts: int, pid: int, tid: int, serial: int, c: _Collector) -> None:
        self._at(ts, c)
        self._begins.append((pid, tid, serial))

    def server_begin(
        self, ts: int, pid: int, tid: int, execute: bool, slot: int, c: _Collector
    ) -> None:
        self._at(ts, c)
        self._servers.append((pid, tid, execute, slot))

    def client_end(self, ts: int, serial: int, c: _Collector) -> None:
        self._at(ts, c)
        self._ends.append(serial)

    def flush(self, collector: _Collector) -> None:
        """Apply the events of the current timestamp; pairs whose client call ended go to
        ``collector``."""
        ts = self._now
        if ts is None:
            return  # nothing fed yet
        waiting = self.waiting
        if self._begins:
            self._begins.sort()
            for pid, _, serial in self._begins:
                waiting[serial] = (ts, pid)
            self._begins.clear()
        if self._servers:
            self._servers.sort()
            for driver_pid, _, execute, slot in self._servers:
                if waiting:
                    first = next(iter(waiting))
                    begin, pid = waiting.pop(first)
                    self.held[first] = (begin, pid, ts, driver_pid, execute, slot)
            self._servers.clear()
        for serial in self._ends:
            self._end(serial, collector)
        self._ends.clear()

    def _end(self, serial: int, collector: _Collector) -> None:
        """Client call ``serial`` ended: its pair goes to ``collector``; with none, it takes the
        first server call that began inside it from a client call still open, if any."""
        held = self.held
        pair = held.pop(serial, None)
        if pair is None:
            mine = self.waiting.pop(serial, None)
            if mine is None:
                return
            begin, pid = mine
            inside = [(p[2], other) for other, p in held.items() if p[2] >= begin]
            if not inside:
                return  # (its server call is not in the trace)
            other = min(inside)[1]
            other_begin, other_pid, server_ts, driver_pid, execute, slot = held.pop(other)
            waiting = self.waiting
            waiting[other] = (other_begin, other_pid)  # it waits again, in begin order:
            self.waiting = dict(sorted(waiting.items(), key=lambda item: (item[1][0], item[0])))
            pair = (begin, pid, server_ts, driver_pid, execute, slot)
        begin, pid, server_ts, driver_pid, execute, slot = pair
        collector.paired(driver_pid, pid, server_ts - begin, execute, slot)

    def close(self, collector: _Collector) -> None:
        """The end of the trace: apply what is pending, and pair the client calls still
        open with the server calls they hold."""
        self.flush(collector)
        for serial in list(self.held):
            self._end(serial, collector)


def _marks(app: _AppTally) -> AttemptMarks:
    """``app``'s execution marks (made at its first)."""
    if app.attempts is None:
        app.attempts = AttemptMarks()
    return app.attempts


class _AppTally:
    """What one process did as a client (kept for every process; drivers dropped at the end)."""

    __slots__ = (
        "attempts",
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
        "po_name",
        "prepares",
        "priority_calls",
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


# Indexes into _AppTally.flight and the matching arrays.
MAX_EVENT_WARNINGS: Final = 20
"""JSON events skipped that get a warning line each (as ``nnemu query`` prints 20)."""

_LA: Final = 0
_LR: Final = 1
_HAL: Final = 2


def _without_last(
    flat: array[int], count: int, aligned: array[int] | None = None
) -> tuple[array[int], array[int] | None]:
    """``flat`` (begin, tid, duration rows) without its last ``count`` rows, and ``aligned``
    (one value per row) without theirs."""
    rows = len(flat) // 3 - count
    return flat[: 3 * rows], None if aligned is None else aligned[:rows]


# The closed sections of an execution (``_Collector._uncut``): an app's [NN_LA_PE], runtime
# and HAL client sections (``_AppTally.la_closed``, ...), a driver's synchronous execute
# server sections and burst executions (``_DriverTally.sync_closed``, ``burst_closed``).
_FOLD_LA: Final = 0
_FOLD_LR: Final = 1
_FOLD_HAL: Final = 2
_FOLD_SYNC: Final = 3
_FOLD_BURST: Final = 4


def _last_ending_at(flat: array[int], ts: int) -> int:
    """How many of the last rows of ``flat`` (begin, tid, duration) end at ``ts``."""
    count = 0
    i = len(flat) - 3
    while i >= 0 and flat[i] + flat[i + 2] == ts:
        count += 1
        i -= 3
    return count


class _Collector:
    """Folds the NNAPI sections of a trace into per-process summaries as they come."""

    def __init__(self) -> None:
        self.process_names: dict[int, str] = {}
        self.thread_names: dict[int, str] = {}
        self.thread_pid: dict[int, int] = {}
        self.apps: dict[int, _AppTally] = {}
        self.drivers: dict[int, _DriverTally] = {}
        self.notify_exec: dict[int, array[int]] = {}
        self.notify_prep: dict[int, array[int]] = {}
        self.served: dict[tuple[int, int], int] = {}
        self.bursts: dict[int, tuple[int, array[int], array[int]]] = {}
        """client pid -> (burst executions run for it, deliveries, idles: the rows of
        ``_DriverTally.burst_seen`` of its burst threads that took its requests), set by
        ``finish``."""
        # app tid -> [pid, begin of the innermost, depth, taken] of its open burst request
        self._requests: dict[int, list[int]] = {}
        self._calls: dict[str, _Calls] = {}
        # tid -> stack of (begin, pid, role, client call serial / execute server's clients slot)
        self._stacks: dict[int, list[tuple[int, int, _Role, int]]] = {}
        self._roles: dict[str, _Role] = {}
        self._serial = 0
        # (tid, stack depth) of an open [NN_LA_PE] -> compile time nested in it so far
        self._inside: dict[tuple[int, int], int] = {}
        self.warnings: list[str] = []
        """What is wrong with the file itself (``TracePlan.warnings``)."""
        self.event_problems: list[tuple[int, str]] = []
        """(file line or 0, message) of the first JSON events skipped (see ``_event_problem``)."""
        self.event_problem_count = 0
        """JSON events skipped for a wrong type (not an object, no ph, pid, tid or ts)."""
        self.out_of_order = 0
        """Rows (JSON: B/E events) earlier than the row before them on their thread."""
        self.first_out_of_order = 0
        """The file line of the first of them (0: not a line of the file)."""
        self.time_sorted = False
        """The rows were read again in time order because of ``out_of_order``."""
        self._last_ts: dict[int, int] = {}
        """tid -> the latest timestamp of its rows so far, in file order."""
        self.json_last: int | None = None
        """The latest time of the JSON events (an ``X`` event's end included)."""
        self._watch_ts = -1
        """The time of the latest end row that closed an execution's section."""
        self._watch_tid = 0
        """The thread of the latest end row at ``_watch_ts``."""
        self._natural: tuple[int, dict[tuple[int, int], int]] = (-1, {})
        """(time, how many of the sections closed at that time, by ``_FOLD_*`` and app or
        driver pid, an end row out of (pid, tid) order followed there): they ended on their
        own, not closed with a run (``_uncut``)."""
        self.cut_at: int | None = None
        """The trace's last timestamp, when the end of the capture closed executions there
        (``_uncut``)."""

    def _event_problem(self, line_number: int, message: str) -> None:
        """A JSON event was skipped: kept for a warning (the first ``MAX_EVENT_WARNINGS``),
        counted."""
        self.event_problem_count += 1
        if len(self.event_problems) < MAX_EVENT_WARNINGS:
            self.event_problems.append((line_number, message))

    def _check_order(self, tid: int, ts: int, line_number: int) -> None:
        """Count a row of ``tid`` at ``ts`` earlier than its row before (in file order)."""
        last = self._last_ts.get(tid)
        if last is not None and ts < last:
            self.out_of_order += 1
            if self.out_of_order == 1:
                self.first_out_of_order = line_number
        else:
            self._last_ts[tid] = ts

    def _app(self, pid: int) -> _AppTally:
        app = self.apps.get(pid)
        if app is None:
            app = self.apps[pid] = _AppTally()
        return app

    def _calls_of(self, key: str) -> _Calls:
        calls = self._calls.get(key)
        if calls is None:
            calls = self._calls[key] = _Calls()
        return calls

    def paired(
        self, driver_pid: int, client_pid: int, ipc_ns: int, execute: bool, slot: int
    ) -> None:
        """A server call of ``driver_pid`` answered a client call of ``client_pid`` (an
        execute call: the ``slot`` of its driver's ``clients``)."""
        driver = self.drivers[driver_pid]
        driver.ipc.append(ipc_ns)
        if execute:
            driver.clients[slot] = client_pid
            pair = (client_pid, driver_pid)
            self.served[pair] = self.served.get(pair, 0) + 1

    def begin(self, ts: int, pid: int, tid: int, name: str) -> None:
        self.thread_pid.setdefault(tid, pid)
        role = self._roles.get(name)
        if role is None:
            if len(self._roles) >= _MAX_CACHED_NAMES:
                self._roles.clear()
            role = self._roles[name] = _role(name)
        serial = 0
        kind = role.kind
        if kind == _IGNORED:
            pass
        elif kind == _SERVER:
            driver = self.drivers.get(pid)
            if driver is None:
                driver = self.drivers[pid] = _DriverTally()
            if _VERSIONS.index(role.version) > _VERSIONS.index(driver.version):
                driver.version, driver.evidence = role.version, role.text
            slot = -1
            if role.execute:
                slot = serial = len(driver.clients)
                driver.clients.append(0)
            self._calls_of(role.text).server_begin(ts, pid, tid, role.execute, slot, self)
            if role.async_server:
                driver.async_begins.append(ts)
                driver.async_slots.append(slot)
            elif role.prepare:
                driver.prep_begins.append(ts)
        elif kind == _NOTIFY_EXEC:
            self.notify_exec.setdefault(pid, array("q")).append(ts)
        elif kind == _NOTIFY_PREP:
            self.notify_prep.setdefault(pid, array("q")).append(ts)
        elif kind == _BURST_EXEC:
            self._burst_begin(ts, pid, tid)
        else:
            app = self._app(pid)
            if kind == _LA_EXEC:
                app.la_begins.append(ts)
                app.flight[_LA].begin(ts, tid)
                if app.attempts is not None:
                    app.attempts.attempt(ts, tid)
            elif kind == _LR_EXEC:
                app.lr_begins.append(ts)
                app.flight[_LR].begin(ts, tid)
                if role.mode is not None:
                    app.modes[role.mode] = app.modes.get(role.mode, 0) + 1
                if role.burst:
                    self._request_begin(ts, pid, tid)
            elif kind == _BURST_REQUEST:
                self._request_begin(ts, pid, tid)
            elif kind == _CLIENT:
                self._serial = serial = self._serial + 1
                self._calls_of(role.text).client_begin(ts, pid, tid, serial, self)
                if role.execute:
                    app.hal_begins.append(ts)
                    app.flight[_HAL].begin(ts, tid)
                elif role.prepare:
                    app.prepares += 1
            elif kind == _LA_OVERALL:
                if app.po_name is None:
                    app.po_name = role.text
            elif kind == _LA_COMPILE:
                app.la_compiles += 1
            elif kind == _LR_FINISH:
                app.finishes += 1
            elif kind == _LR_PRIORITY:
                app.priority_calls += 1
            elif kind == _LR_TIMEOUT:
                app.timeout_calls += 1
            elif kind == _WAITED:
                _marks(app).wait(tid, int(role.text))
            elif kind == _FAILED:
                _marks(app).fail(tid, ts)
        self._stacks.setdefault(tid, []).append((ts, pid, role, serial))

    def end(self, ts: int, tid: int, line_number: int = 0) -> None:
        stack = self._stacks.get(tid)
        if not stack:
            return  # an end whose begin was before the trace started
        if ts < stack[-1][0]:
            # Rows out of time order (counted by the reader) in a trace not read again in
            # time order: this E ends nothing (in time order it comes before the section's
            # B); the section stays open, never a negative latency.
            return
        begin, pid, role, serial = stack.pop()
        if ts == self._watch_ts:
            self._watch_row(ts, tid, pid)
        kind = role.kind
        if kind == _IGNORED:
            return  # most sections: nothing to fold
        folded = True  # (an execution's section: its end is watched, below)
        if kind == _LA_EXEC:
            app = self.apps[pid]
            app.la_closed.extend((begin, tid, ts - begin))
            app.flight[_LA].end(ts, tid)
            inside = self._inside.pop((tid, len(stack)), 0) if self._inside else 0
            if inside and app.la_inside is None:
                app.la_inside = array("q", bytes(8 * (len(app.la_closed) // 3 - 1)))
            if app.la_inside is not None:
                app.la_inside.append(inside)
        elif kind in (_LA_COMPILE, _LR_FINISH) or (kind == _CLIENT and role.prepare):
            self._compiled_inside(stack, tid, ts - begin)
            folded = False
        elif kind == _LR_EXEC:
            app = self.apps[pid]
            app.lr_closed.extend((begin, tid, ts - begin))
            app.flight[_LR].end(ts, tid)
            if role.burst:
                self._request_end(tid)
        elif kind == _BURST_REQUEST:
            self._request_end(tid)
            folded = False
        elif kind == _RETRY:
            _marks(self.apps[pid]).retry(begin, tid, ts)
            folded = False
        elif kind == _CLIENT:
            self._calls[role.text].client_end(ts, serial, self)
            folded = role.execute
            if folded:
                app = self.apps[pid]
                app.hal_closed.extend((begin, tid, ts - begin))
                app.flight[_HAL].end(ts, tid)
        elif kind == _SERVER and role.execute and not role.async_server:
            driver = self.drivers[pid]
            driver.sync_closed.extend((begin, tid, ts - begin))
            driver.sync_slots.append(serial)
        elif kind == _BURST_EXEC:
            burst_driver = self.drivers.get(pid)
            if burst_driver is not None:
                burst_driver.burst_closed.extend((begin, tid, ts - begin))
                burst_driver.burst_last_end[tid] = ts
        else:
            folded = False
        if folded and ts != self._watch_ts:
            # An execution's section closed at a new time: watch the end rows after it
            # there, in case they are the ones that close a run (``_uncut``).
            self._watch_ts = ts
            self._watch_tid = tid

    def _watch_row(self, ts: int, tid: int, pid: int) -> None:
        """An end row of ``tid`` at ``_watch_ts``: one out of (pid, tid) order after the
        previous one there shows that the executions' sections closed there so far are not
        closed by the rows that close a run (``_uncut``): they ended on their own
        (``_natural``)."""
        before = self._watch_tid
        if (pid, tid) < (self.thread_pid.get(before, before), before):
            self._natural = (ts, self._ending_at(ts))
        self._watch_tid = tid

    def _closed(self, what: int, pid: int) -> array[int]:
        """The closed sections ``what`` (``_FOLD_*``) of app or driver ``pid``."""
        if what == _FOLD_SYNC:
            return self.drivers[pid].sync_closed
        if what == _FOLD_BURST:
            return self.drivers[pid].burst_closed
        app = self.apps[pid]
        return (app.la_closed, app.lr_closed, app.hal_closed)[what]

    def _ending_at(self, ts: int) -> dict[tuple[int, int], int]:
        """(``_FOLD_*``, app or driver pid) -> how many of its last closed sections end at
        ``ts``."""
        keys = [(what, pid) for pid in self.apps for what in (_FOLD_LA, _FOLD_LR, _FOLD_HAL)]
        keys += [(what, pid) for pid in self.drivers for what in (_FOLD_SYNC, _FOLD_BURST)]
        return {key: _last_ending_at(self._closed(*key), ts) for key in keys}

    def _request_begin(self, ts: int, pid: int, tid: int) -> None:
        """A request over a burst began on app thread ``tid`` (``burstCompute``, and the
        controller's section nested in it: one request)."""
        request = self._requests.get(tid)
        if request is None:
            self._requests[tid] = [pid, ts, 1, 0]
        else:
            request[1] = ts
            request[2] += 1

    def _request_end(self, tid: int) -> None:
        request = self._requests.get(tid)
        if request is not None:
            request[2] -= 1
            if request[2] <= 0:
                del self._requests[tid]

    def _burst_begin(self, ts: int, pid: int, tid: int) -> None:
        """A burst execution began on driver ``pid``'s burst thread ``tid``: it takes an open
        request no execution took yet, that of the client the thread served most so far
        if one is open, else the latest; counted as that client's (``burst_claims``)."""
        driver = self.drivers.get(pid)
        if driver is None or not self._requests:
            return
        claims = driver.burst_claims.setdefault(tid, {})
        leader = max(claims, key=lambda p: (claims[p], -p)) if claims else None
        taken: list[int] | None = None
        for request in self._requests.values():
            if request[3] or request[0] == pid:
                continue
            if request[0] == leader:
                taken = request
                break
            if taken is None or request[1] > taken[1]:
                taken = request
        if taken is None:
            return
        taken[3] = 1
        client = taken[0]
        claims[client] = claims.get(client, 0) + 1
        last = driver.burst_last_end.get(tid)
        idle = -1 if last is None else max(0, taken[1] - last)
        driver.burst_seen.extend((tid, client, ts - taken[1], idle))

    def _compiled_inside(
        self, stack: list[tuple[int, int, _Role, int]], tid: int, duration: int
    ) -> None:
        """A compilation of ``duration`` ended on ``tid``: add it to the ``[NN_LA_PE]`` it is
        nested in, unless it is itself inside an outer compilation (counted there)."""
        for depth in range(len(stack) - 1, -1, -1):
            role = stack[depth][2]
            kind = role.kind
            if kind in (_LA_COMPILE, _LR_FINISH) or (kind == _CLIENT and role.prepare):
                return
            if kind == _LA_EXEC:
                key = (tid, depth)
                self._inside[key] = self._inside.get(key, 0) + duration
                return

    def finish(self) -> None:
        """Apply what the sweeps still hold; the sections still open stay as they are, and
        so do those the end of the capture closed (``_uncut``)."""
        for calls in self._calls.values():
            calls.close(self)
        for app in self.apps.values():
            for flight in app.flight:
                flight.flush()
        self._uncut()
        self._stacks.clear()
        self._calls.clear()
        self._requests.clear()
        self._own_bursts()

    def _uncut(self) -> None:
        """Sections the end of the capture closed are not finished.  When nnemu stops a run
        (its ``duration_ms``, or interrupted) its tracer closes every section still open at
        that instant: end rows at the trace's last timestamp, after every other row, thread
        by thread in (pid, tid) order (``Tracer.close``), leaving none open.  A device's
        capture stopped mid-execution has no end row for them at all.  So when the trace
        ends with no section open, the end rows at its last timestamp that every later end
        row follows in (pid, tid) order are taken as that closing (``_watch_ts``,
        ``_natural``): the executions, driver calls and burst
        executions they closed are taken out of the closed ones (``TraceApp.never_ended``);
        their begins stay (they were issued and began).  An execution that ended at that
        instant on its own keeps its end (a thread the stop closed follows it out of order),
        unless its thread sorts before every thread the stop closed."""
        last = max(self._last_ts.values(), default=None)
        if self.json_last is not None and (last is None or self.json_last > last):
            last = self.json_last
        if last is None or self._watch_ts != last or any(self._stacks.values()):
            return  # (sections left open: a capture that stopped; or none closed at the end)
        natural = self._natural[1] if self._natural[0] == last else {}
        cut = 0
        for (what, owner), count in self._ending_at(last).items():
            count -= natural.get((what, owner), 0)
            if count <= 0:
                continue
            cut += count
            if what == _FOLD_SYNC:
                driver = self.drivers[owner]
                driver.sync_closed, slots = _without_last(
                    driver.sync_closed, count, driver.sync_slots
                )
                if slots is not None:
                    driver.sync_slots = slots
            elif what == _FOLD_BURST:
                driver = self.drivers[owner]
                driver.burst_closed, _ = _without_last(driver.burst_closed, count)
            else:
                app = self.apps[owner]
                if what == _FOLD_LA:
                    app.la_closed, app.la_inside = _without_last(
                        app.la_closed, count, app.la_inside
                    )
                elif what == _FOLD_LR:
                    app.lr_closed, _ = _without_last(app.lr_closed, count)
                else:
                    app.hal_closed, _ = _without_last(app.hal_closed, count)
        if cut:
            self.cut_at = last

    def _own_bursts(self) -> None:
        """Each burst thread serves one client (one burst context): the one whose requests
        its executions took most.  Its executions count as that client's (``served``,
        ``bursts``)."""
        for driver_pid, driver in self.drivers.items():
            for tid, claims in driver.burst_claims.items():
                if claims:
                    driver.burst_owner[tid] = max(claims, key=lambda p: (claims[p], -p))
            owner = driver.burst_owner
            if not owner:
                continue
            closed = driver.burst_closed
            for i in range(0, len(closed), 3):
                client = owner.get(closed[i + 1])
                if client is None:
                    continue
                pair = (client, driver_pid)
                self.served[pair] = self.served.get(pair, 0) + 1
                count, deliveries, idles = self.bursts.get(client, (0, array("q"), array("q")))
                self.bursts[client] = (count + 1, deliveries, idles)
            seen = driver.burst_seen
            for i in range(0, len(seen), 4):
                client = seen[i + 1]
                if owner.get(seen[i]) != client:
                    continue  # (a request of another client: not this thread's delivery)
                _, deliveries, idles = self.bursts.setdefault(client, (0, array("q"), array("q")))
                deliveries.append(seen[i + 2])
                idles.append(seen[i + 3])

    # -- ftrace text / systrace HTML

    def _dump_row(self, row: DumpProcess | DumpThread) -> None:
        if isinstance(row, DumpProcess):
            self.process_names[row.pid] = row.name
        else:
            self.thread_pid.setdefault(row.tid, row.pid)
            self.thread_names.setdefault(row.tid, row.name)

    def read_ftrace(self, lines: Iterable[str], *, in_time_order: bool = False) -> FtraceLines:
        """Read the rows of systrace HTML or ftrace text (``in_time_order``: sorted by time,
        ``time_ordered``, as Perfetto matches them)."""
        source = FtraceLines(lines, on_dump=self._dump_row)
        self._read_rows(time_ordered(source) if in_time_order else source)
        return source

    def _read_rows(
        self,
        rows: Iterable[tuple[int, str]],
        begin: Callable[[int, int, int, str], None] | None = None,
        end: Callable[[int, int, int], None] | None = None,
    ) -> None:
        """Read ``rows`` (line number, row): each B row to ``begin`` (ts, pid, tid, name),
        each E row to ``end`` (ts, tid, line number); by default this collector's."""
        match = ROW_RE.match
        thread_names = self.thread_names
        begin = begin or self.begin
        end = end or self.end
        check_order = self._check_order
        for line_number, line in rows:
            if "tracing_mark_write" not in line:
                continue
            m = match(line)
            if m is None:
                continue
            task, tid_text, tgid_column, seconds, fraction, kind, rest = m.groups()
            ts = timestamp_ns(seconds, fraction)
            tid = pid_of(tid_text)
            if ts is None or tid is None:
                continue  # out of range: not a row a kernel writes
            if tid not in thread_names:
                thread_names[tid] = task.strip()
            check_order(tid, ts, line_number)
            if kind == "B":
                # B|tgid|name; B|tgid or B|tgid| is a slice with no name (Perfetto's trace
                # processor names it "[empty slice name]"). Any other B row still opens a
                # section, with no role: its E closes it, not the section it is in (parse
                # warns of it; query skips it as Perfetto does, with a warning).
                # The tgid as Perfetto reads it (+200, " 200"), the kind whatever follows B.
                parts = rest.split("|", 2)
                tgid = atrace_tgid(parts[1]) if len(parts) > 1 else None
                pid = None if tgid is None else pid_of(str(tgid))
                name = parts[2].rstrip("\n") if tgid is not None and len(parts) == 3 else ""
                if tgid_column is not None and tgid_column.isdigit():
                    pid = pid_of(tgid_column)
                begin(ts, tid if pid is None else pid, tid, name)
            else:
                end(ts, tid, line_number)

    # -- Chrome JSON

    def read_json(self, document: object, source: str, text: str | None = None) -> None:
        """Read a JSON trace parsed as one document (``{"traceEvents": [...]}`` or a list)
        from ``text`` (which places its events' warnings); its ``systemTraceEvents`` text
        (ftrace), if any, merged with the events by time, each row on the file line the
        text is on."""
        events = document.get("traceEvents") if isinstance(document, dict) else document
        embedded = system_text(text, document)
        rows: list[tuple[int, str]] = []
        if embedded is not None:
            ftrace = FtraceLines(embedded.text.splitlines(keepends=True), on_dump=self._dump_row)
            rows = [(embedded.line, line) for _, line in ftrace]
            if events is None:
                events = []
        if not isinstance(events, list):
            raise TraceFormatError(source, 1, "", NOT_CHROME_TRACE)
        lines = event_lines(text, document, len(events)) if text is not None else None
        self.read_json_events(
            ((0 if lines is None else lines[index], event) for index, event in enumerate(events)),
            rows,
            rows_first=embedded is None or embedded.first,
        )

    def read_json_events(
        self,
        events: Iterable[tuple[int, object]],
        rows: Sequence[tuple[int, str]] = (),
        *,
        rows_first: bool = True,
    ) -> None:
        """Read trace events in file order (a document's list, or ``json_line_events``
        streaming a file of one event per line), each with the file line it starts on
        (0: unknown), which places the warning for an event skipped (``event_problems``).
        ``rows``: the ftrace rows of the document's ``systemTraceEvents`` (in file order
        before the events with ``rows_first``, else after them), merged with the events by
        time as Perfetto sorts both."""
        ordered: list[tuple[int, int, int, int, str, int]] = []
        if rows_first:
            self._order_rows(rows, ordered, -len(rows))
        count = 0
        for index, (line_number, event) in enumerate(events):
            count = index + 1
            if not isinstance(event, dict):
                self._event_problem(line_number, NOT_AN_EVENT)
                continue
            ph = event.get("ph")
            if ph not in ("B", "E", "X", "M"):
                if "ph" not in event:
                    self._event_problem(line_number, NO_PHASE)
                continue
            raw_pid = event.get("pid")
            raw_tid = event.get("tid", raw_pid)
            pid, tid = _json_id(raw_pid), _json_id(raw_tid)
            if pid is None or tid is None:
                self._event_problem(line_number, pid_tid_problem(ph, raw_pid, raw_tid))
                continue
            if ph == "M":
                name = (event.get("args") or {}).get("name")
                if isinstance(name, str):
                    if event.get("name") == "process_name":
                        self.process_names[pid] = name
                    elif event.get("name") == "thread_name":
                        self.thread_names[tid] = name
                continue
            raw_ts = event.get("ts")
            ts_ns = json_time_ns(raw_ts)
            if ts_ns is None:
                problem = (
                    f"{ph!s} event's ts {raw_ts!r} is not finite or out of range; skipped"
                    if is_json_number(raw_ts)
                    else not_a_number_ts(raw_ts)
                )
                self._event_problem(line_number, problem)
                continue
            if ts_ns < 0:  # (parse and query refuse it, and Perfetto drops it)
                self._event_problem(line_number, negative_ts(raw_ts))
                continue
            if ph == "X":
                raw_dur = event.get("dur")
                dur_ns = json_time_ns(raw_dur)
                if dur_ns is None or dur_ns < 0:
                    if raw_dur is None:
                        problem = NO_DUR
                    elif dur_ns is not None:
                        problem = negative_dur(raw_dur)
                    elif is_json_number(raw_dur):
                        problem = (
                            f"X event's dur {raw_dur!r} is not finite or out of range; skipped"
                        )
                    else:
                        problem = not_a_number_dur(raw_dur)
                    self._event_problem(line_number, problem)
                    continue
                ordered.append((ts_ns, index, 0, tid, str(event.get("name", "")), -1))
                ordered.append((ts_ns + dur_ns, index, 1, tid, "", -1))
                self.thread_pid.setdefault(tid, pid)
            elif ph == "B":
                self.thread_pid.setdefault(tid, pid)
                ordered.append((ts_ns, index, 0, tid, str(event.get("name", "")), -1))
            else:
                ordered.append((ts_ns, index, 1, tid, "", -1))
            # Said as parse and query say it (they read such a trace again in time order,
            # as this always reads JSON).
            self._check_order(tid, ts_ns, line_number)
        if not rows_first:
            self._order_rows(rows, ordered, count)
        if self.out_of_order:
            self.time_sorted = True
        # JSON events may come in any order; B/E of one thread are in file order.
        ordered.sort(key=lambda e: (e[0], e[1], e[2]))
        if ordered and (self.json_last is None or ordered[-1][0] > self.json_last):
            self.json_last = ordered[-1][0]
        for ts_ns, _, kind, tid, name, pid in ordered:
            if kind == 0:
                self.begin(ts_ns, self.thread_pid[tid] if pid < 0 else pid, tid, name)
            else:
                self.end(ts_ns, tid)

    def _order_rows(
        self,
        rows: Sequence[tuple[int, str]],
        ordered: list[tuple[int, int, int, int, str, int]],
        first_place: int,
    ) -> None:
        """Add ``rows`` (ftrace) to ``ordered`` as ``read_json_events`` sorts its events:
        (ts, place, 0 for B or 1 for E, tid, name, pid), places counting from
        ``first_place`` in file order; read as ``_read_rows`` reads them."""

        def begin(ts: int, pid: int, tid: int, name: str) -> None:
            ordered.append((ts, first_place + len(ordered) - start, 0, tid, name, pid))

        def end(ts: int, tid: int, line_number: int) -> None:
            del line_number
            ordered.append((ts, first_place + len(ordered) - start, 1, tid, "", -1))

        start = len(ordered)
        self._read_rows(rows, begin, end)


def _json_id(value: object) -> int | None:
    """A JSON pid or tid as an int (a number, or a string of digits, as parse reads it), or
    None: not one, or beyond Linux's ``pid_t``."""
    if isinstance(value, str) and is_json_number(value):
        value = int(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) <= MAX_ID:
        return value
    return None


def _warn_of_events(collector: _Collector, path: str) -> None:
    """The warnings for the JSON events skipped (as parse and query say them), the first
    ``MAX_EVENT_WARNINGS``, then how many more."""
    for line_number, message in collector.event_problems:
        where = f"{path}:{line_number}" if line_number else path
        collector.warnings.append(f"{where}: warning: {message}")
    hidden = collector.event_problem_count - len(collector.event_problems)
    if hidden:
        more = "1 more event" if hidden == 1 else f"{hidden} more events"
        collector.warnings.append(f"{path}: warning: {more} skipped (not shown)")


def _read(path: str, progress: TextIO | None) -> tuple[_Collector, str]:
    collector = _Collector()
    kind = file_format(path)
    refuse_unreadable(path, kind)
    if kind is TraceFormat.PERFETTO:
        from nnemu.trace import PerfettoLines

        def problem(offset: int, message: str) -> None:
            # A bad packet is wrong with the file: a warning, placed as parse places it.
            collector.warnings.append(f"{path}: byte {offset}: warning: {message}")

        pftrace = PerfettoLines(path, on_dump=collector._dump_row, on_problem=problem)
        collector.read_ftrace(pftrace)
        collector.finish()
        if collector.out_of_order:  # its rows' numbers are not the file's: the whole file
            warning = out_of_order_warning(collector.out_of_order, sorted_again=False)
            collector.warnings.append(f"{path}: warning: {warning}")
        return collector, "perfetto"
    with open(path, encoding="utf-8", errors="replace") as handle:
        if kind is TraceFormat.JSON:
            # One event per line (as nnemu and Chrome write it) is streamed; anything
            # else is parsed as one document (in memory).
            try:
                with Progress(
                    path, handle, progress, label=f"reading {os.path.basename(path)}"
                ) as bar:
                    collector.read_json_events(json_line_events(bar.lines(handle), strict=True))
                collector.finish()
                _warn_of_events(collector, path)
                _warn_of_out_of_order(collector, path)
                return collector, "json"
            except NotLineJson:
                collector = _Collector()
                handle.seek(0)
            text = handle.read()
            try:
                document = json.loads(text)
            except (ValueError, RecursionError) as err:  # also an int of > 4300 digits
                line, message = json_problem(err)
                raise TraceFormatError(path, line, "", message) from err
            collector.read_json(document, path, text)
            del text
            _warn_of_events(collector, path)
            fmt = "json"
        else:
            label = f"reading {os.path.basename(path)}"
            with Progress(path, handle, progress, label=label) as bar:
                lines = collector.read_ftrace(bar.lines(handle))
            if collector.out_of_order and os.path.getsize(path) <= MAX_SORTED_BYTES:
                # Read again in time order, as Perfetto matches the rows.
                early = (collector.out_of_order, collector.first_out_of_order)
                collector = _Collector()
                handle.seek(0)
                lines = collector.read_ftrace(handle, in_time_order=True)
                collector.out_of_order, collector.first_out_of_order = early
                collector.time_sorted = True
            if not lines.found_ftrace:
                raise TraceFormatError(
                    path,
                    lines.last_line_number,
                    "",
                    "no ftrace data found (expected systrace HTML or ftrace text)",
                )
            fmt = "systrace" if lines.is_html else "ftrace"
            if lines.truncated:
                collector.warnings.append(
                    f"{path}:{lines.last_line_number}: warning: {TRUNCATED_HTML}"
                )
    _warn_of_out_of_order(collector, path)
    collector.finish()
    return collector, fmt


def _warn_of_out_of_order(collector: _Collector, path: str) -> None:
    """The one warning of the end marks before their begins, at the first (before a cut
    HTML file's warning, at its last line)."""
    if collector.out_of_order:
        line = collector.first_out_of_order
        where = f"{path}:{line}" if line else path
        warning = out_of_order_warning(collector.out_of_order, sorted_again=collector.time_sorted)
        collector.warnings.insert(0, f"{where}: warning: {warning}")


# ---------------------------------------------------------------------- analysis


def _hidl_parts(name: str) -> tuple[str, str, str]:
    """(interface, method, side) of ``HIDL::<Iface>::<method>::<side>``."""
    parts = name.split("::")
    return parts[1], parts[2], parts[3]


def _version_of(method: str) -> HalVersion:
    """The HAL version a server method shows: its suffix's, else the version that
    introduced it (1.0 for the rest)."""
    return HalVersion.of_method(method) or _METHOD_VERSION.get(method, HalVersion.V1_0)


def _process_name(reader: _Collector, pid: int) -> str | None:
    name = reader.process_names.get(pid)
    if name:
        return name
    main = reader.thread_names.get(pid)
    if main and main != "<...>":
        return main
    return None


def _unique(name: str, pid: int, taken: set[str], reserved: str = "") -> str:
    """``name``, or ``name-PID`` when another process took it or it is ``reserved``."""
    if not name or name in taken or name == reserved:
        name = f"{name}-{pid}" if name else str(pid)
    taken.add(name)
    return name


def _ascending(values: array[int]) -> array[int]:
    """``values`` sorted (itself when already in order, as a time-ordered trace gives them)."""
    if all(a <= b for a, b in itertools.pairwise(values)):
        return values
    return array("q", sorted(values))


def _answered(
    begins: array[int], notifies: array[int], tags: array[int] | None = None
) -> tuple[array[int], array[int], array[int]]:
    """(begins, times to the notify, tags) of the calls a notify answered: in begin order,
    each call takes the first notify at or after its begin that no earlier call took.
    ``tags`` (one per begin, e.g. its client pid) follow their calls; zeros without."""
    times = _ascending(notifies)
    if tags is None:
        tags = array("q", bytes(8 * len(begins)))
    if not all(a <= b for a, b in itertools.pairwise(begins)):
        order = sorted(range(len(begins)), key=begins.__getitem__)
        begins = array("q", (begins[i] for i in order))
        tags = array("q", (tags[i] for i in order))
    kept, durations, kept_tags = array("q"), array("q"), array("q")
    j = 0
    for begin, tag in zip(begins, tags, strict=True):
        while j < len(times) and times[j] < begin:
            j += 1
        if j == len(times):
            break
        kept.append(begin)
        durations.append(times[j] - begin)
        kept_tags.append(tag)
        j += 1
    return kept, durations, kept_tags


def _order(flat: array[int]) -> list[int] | None:
    """The order that sorts a flat (begin, tid, duration) array by begin and thread (the
    order a sort of sections by begin, pid and tid gives); None when already sorted."""
    begins, tids = flat[::3], flat[1::3]
    keys = zip(begins, tids, strict=True)
    if all(a <= b for a, b in itertools.pairwise(keys)):
        return None
    return sorted(range(len(begins)), key=lambda i: (begins[i], tids[i]))


def _service(begins: array[int], durations: array[int]) -> array[int]:
    """How long the device worked on each execution (begin order), one at a time: from its
    begin, or from the end of the execution that finished before it if that is later, to
    its own end (a driver call that waited behind another app's execution is timed from
    when the device was free)."""
    ends = array("q", (b + d for b, d in zip(begins, durations, strict=True)))
    service = array("q", bytes(8 * len(ends)))
    previous = None
    keys = zip(ends, begins, strict=True)
    if all(a <= b for a, b in itertools.pairwise(keys)):
        by_end: Iterable[int] = range(len(ends))  # as a serial device gives them
    else:
        by_end = sorted(range(len(ends)), key=lambda i: (ends[i], begins[i]))
    for i in by_end:
        start = begins[i] if previous is None else max(begins[i], previous)
        service[i] = ends[i] - start
        previous = ends[i]
    return service


PARALLEL_BAND: Final = 0.25
"""Least half-width (ln) of the band of device times around an app's typical one in which
an execution's time counts as that app's compute (``_units``); at least 3 x the spread of
the app's times on an idle device."""


def _typical(durations: Sequence[int]) -> tuple[float, float]:
    """(median, band) of an app's device times on an idle device: the band is the half-width
    (ln) inside which a time is its compute, jitter included: 3 x 1.4826 x the median absolute
    deviation of ln time, at least ``PARALLEL_BAND``."""
    logs = [math.log(d) for d in durations if d > 0]
    if not logs:
        return 0.0, PARALLEL_BAND  # (no time to compare with)
    centre = statistics.median(logs)
    spread = 1.4826 * statistics.median(abs(x - centre) for x in logs)
    return math.exp(centre), max(PARALLEL_BAND, 3 * spread)


def _units(
    begins: Sequence[int], durations: Sequence[int], clients: Sequence[int], serial: array[int]
) -> tuple[int, list[bool] | None]:
    """(compute units, which ran beside another or None: none did) of one device's
    executions (begin order), from their driver times and ``serial`` (their times after the
    execution that ended before each, ``_service``).

    An execution that began while the device had none open ran from its begin: its driver
    time is its app's device time on an idle device (``_typical`` of those, per client; of
    the device's when its client has none).  One that began while another was open either
    waited for a unit and then ran (its ``serial`` time), or ran beside it from its begin, on
    another unit: counted so only when its whole driver time is inside its app's band around
    the typical time and its ``serial`` time is below the band (as two executions begun
    together on two units end together).  A call refused at once (a short driver time), one
    that waited, or one aborted after a wait (a driver time past the band) is not counted as
    running beside another.  The units are the most executions running at once (1 when none
    ran beside another).
    """
    count = len(begins)
    idle = [False] * count
    latest_end = None
    on_idle: dict[int, list[int]] = {}
    for i in range(count):
        begin, duration = begins[i], durations[i]
        if latest_end is None or latest_end <= begin:
            idle[i] = True
            on_idle.setdefault(clients[i], []).append(duration)
        end = begin + duration
        if latest_end is None or end > latest_end:
            latest_end = end
    if not on_idle or all(idle):
        return 1, None
    device_typical = _typical([d for ds in on_idle.values() for d in ds])
    typical = {client: _typical(ds) for client, ds in on_idle.items()}
    beside = [False] * count
    found = False
    for i in range(count):
        if idle[i]:
            continue
        centre, band = typical.get(clients[i], device_typical)
        whole, after = durations[i], serial[i]
        if centre <= 0 or whole <= 0 or abs(math.log(whole / centre)) > band:
            continue
        if after > 0 and math.log(after / centre) >= -band:
            continue
        beside[i] = found = True
    if not found:
        return 1, None
    # (time, +1 begin / -1 end) of the executions running: at one time, ends first.
    running = sorted(
        (time, step)
        for i in range(count)
        if idle[i] or beside[i]
        for time, step in ((begins[i], 1), (begins[i] + durations[i], -1))
    )
    return _weighed_units(running, count, beside)


def _weighed_units(
    running: Sequence[tuple[int, int]], count: int, beside: list[bool]
) -> tuple[int, list[bool] | None]:
    """The units the evidence carries weight for: the most executions at once that at least
    ``units_evidence(count)`` executions began to make (one overlap among thousands of
    executions is noise: a late end, a clock step, not a second unit), and ``beside``; 1
    and None when no second unit has that weight."""
    reached: collections.Counter[int] = collections.Counter()
    busy = 0
    for _, step in running:
        busy += step
        if step > 0:
            reached[busy] += 1
    needed = units_evidence(count)
    units = max((level for level, n in reached.items() if n >= needed), default=1)
    if units <= 1:
        return 1, None
    return units, beside


def units_evidence(count: int) -> int:
    """How many of a device's ``count`` executions must begin beside running ones, at one
    level, for that level to count as compute units: one in ``_NOISE`` (at least one)."""
    return -(-count // _NOISE)


def _spread(service: Sequence[int], clients: Sequence[int]) -> float:
    """How far device times stray from their app's own: the median, over executions, of
    |ln time - the median ln time of its client's|."""
    logs: dict[int, list[float]] = {}
    for ns, client in zip(service, clients, strict=True):
        if ns > 0:
            logs.setdefault(client, []).append(math.log(ns))
    away: list[float] = []
    for values in logs.values():
        centre = statistics.median(values)
        away.extend(abs(x - centre) for x in values)
    return statistics.median(away) if away else 0.0


FIT_GAIN: Final = 0.9
"""A unit more is taken (``_fitted_units``) only when it brings the spread of the device
times below this fraction of what one unit less gives."""


def _fitted_units(
    begins: Sequence[int], durations: Sequence[int], clients: Sequence[int], serial: array[int]
) -> tuple[int, tuple[float, ...]]:
    """The compute units under which a device's executions (begin order) take each app's
    own time: with too few, an execution is timed from an end that freed no unit for it
    (too short); with too many, from its begin, its wait included (too long).  Counting up
    from 1, the first whose device times (``_service_on_units``) spread around each app's
    median less than the next count's (``FIT_GAIN``); at most the most executions open at
    once.  Under load, where an execution rarely begins on an idle unit, this sees the
    units ``_units`` cannot.  Returns (units, the spread with 1, 2, ... units, as far as
    tried)."""
    steps = sorted(
        (time, step)
        for b, d in zip(begins, durations, strict=True)
        for time, step in ((b, 1), (b + d, -1))
    )
    most = busy = 0
    for _, step in steps:
        busy += step
        most = max(most, busy)
    units, spread = 1, _spread(serial, clients)
    spreads = [spread]
    while units < most:
        more = _spread(_service_on_units(begins, durations, units + 1, serial), clients)
        spreads.append(more)
        if more >= FIT_GAIN * spread:
            break
        units, spread = units + 1, more
    return units, tuple(spreads)


def _service_on_units(
    begins: Sequence[int], durations: Sequence[int], units: int, serial: Sequence[int]
) -> array[int]:
    """How long a device of ``units`` compute units worked on each execution (begin order):
    a unit free at its begin (fewer than ``units`` running, none waiting) runs it from its
    begin, its whole driver time; else it waits, first come first served (the order of
    ``fifo`` and of ``per_app_priority`` across apps), for the next unit an execution ends
    on, and is timed from that end.  An execution that ended while it waited (refused or
    aborted) keeps its ``serial`` time (``_service``)."""
    service = array("q", serial)
    ends = [b + d for b, d in zip(begins, durations, strict=True)]
    running: list[int] = []  # ends of the executions on a unit (a heap)
    waiting: collections.deque[int] = collections.deque()

    def next_waiting(now: int) -> None:
        """A unit came free at ``now``: the oldest execution still waiting takes it."""
        while waiting:
            j = waiting.popleft()
            if ends[j] > now:
                service[j] = ends[j] - now
                heapq.heappush(running, ends[j])
                return

    for i, begin in enumerate(begins):
        while running and running[0] <= begin:  # (at one time, ends first)
            next_waiting(heapq.heappop(running))
        while waiting and ends[waiting[0]] <= begin:
            waiting.popleft()  # (it ended waiting)
        if len(running) < units and not waiting:
            service[i] = durations[i]
            heapq.heappush(running, ends[i])
        else:
            waiting.append(i)
    while running and waiting:
        next_waiting(heapq.heappop(running))
    return service


def _device_units(
    tally: _DriverTally, begins: array[int], executions: array[int], clients: array[int]
) -> tuple[int, array[int], int, array[int], tuple[float, ...]]:
    """(compute units, device times, executions that ran beside another, burst device times,
    the spreads that fitted the units or ()) of a driver: its HIDL executions (begin order) with its burst executions
    (``_BURST_EXECUTOR`` sections, each burst thread a client of its own).  On one unit the
    device time of an execution is its time after the one that ended before it (``_service``;
    of a HIDL execution, among the HIDL ones; of a burst execution, among all); on several,
    its time on the unit it took (``_service_on_units``)."""
    serial = _service(begins, executions)
    bursts = tally.burst_closed
    # (begin, duration, client, HIDL index or -1 - burst index), in begin order (the HIDL
    # executions are; the sort is stable)
    timed = sorted(
        [
            *(
                (b, d, c, i)
                for i, (b, d, c) in enumerate(zip(begins, executions, clients, strict=True))
            ),
            *(
                (bursts[i], bursts[i + 2], -bursts[i + 1], -1 - i // 3)
                for i in range(0, len(bursts), 3)
            ),
        ],
        key=lambda row: row[0],
    )
    all_durations = array("q", (row[1] for row in timed))
    # (without bursts, the rows are the HIDL executions and their times ``serial``)
    all_serial = (
        _service(array("q", (row[0] for row in timed)), all_durations) if bursts else serial
    )
    all_begins = [row[0] for row in timed]
    all_clients = [row[2] for row in timed]
    units, beside = _units(all_begins, all_durations, all_clients, all_serial)
    burst_ns = array("q", bytes(8 * (len(bursts) // 3)))
    fit: tuple[float, ...] = ()
    if beside is not None:
        fitted, spreads = _fitted_units(all_begins, all_durations, all_clients, all_serial)
        if fitted not in (1, units):  # (1: the times cannot tell, alike or no unit helps)
            units, fit = fitted, spreads
    if beside is None or units == 1:
        for k, row in enumerate(timed):
            if row[3] < 0:
                burst_ns[-1 - row[3]] = (
                    row[1] if beside is not None and beside[k] else all_serial[k]
                )
        if beside is None:
            return 1, serial, 0, burst_ns, fit
        device_ns = array("q", serial)
        hidl = (was for row, was in zip(timed, beside, strict=True) if row[3] >= 0)
        for i, was in enumerate(hidl):  # (the HIDL rows are in their own order)
            if was:
                device_ns[i] = executions[i]
        return units, device_ns, sum(beside), burst_ns, fit
    on_units = _service_on_units(all_begins, all_durations, units, all_serial)
    device_ns = array("q", serial)
    for k, row in enumerate(timed):
        if row[3] < 0:
            burst_ns[-1 - row[3]] = on_units[k]
        else:
            device_ns[row[3]] = on_units[k]
    return units, device_ns, sum(beside), burst_ns, fit


def extract_plan(path: str, *, progress: TextIO | None = None) -> TracePlan:
    """Read ``path`` in one pass and extract the apps, their arrivals and the drivers.

    Args:
        path: systrace HTML, ftrace text or Chrome JSON.
        progress: Where to draw a progress bar (a terminal, for big text traces).

    Raises:
        TraceFormatError: the file holds no trace, or no app issued an execution.
        OSError: the file cannot be read.
    """
    reader, fmt = _read(path, progress)
    driver_pids = set(reader.drivers)
    ipc_latency = array("q")
    taken: set[str] = set()
    drivers = []
    for pid in sorted(driver_pids):
        drivers.append(_driver(reader, pid, taken))
        ipc_latency.extend(reader.drivers[pid].ipc)
    notes: list[str] = []
    tallies = {pid: app for pid, app in reader.apps.items() if pid not in driver_pids}
    app_pids = {
        pid for pid, app in tallies.items() if app.la_begins or app.lr_begins or app.hal_begins
    }
    for pid in sorted(tallies):
        app = tallies[pid]
        if pid not in app_pids and (app.prepares or app.finishes or app.la_compiles):
            notes.append(f"process {pid} compiled a model but issued no execution: left out")
    apps = [_app(reader, tallies[pid], pid) for pid in app_pids]
    if not apps:
        raise TraceFormatError(
            path,
            0,
            "",
            "no NNAPI execution found (no [NN_LA_PE], ANeuralNetworksExecution_* "
            "or IPreparedModel::execute* marks)",
        )
    refused = {app.pid: app.refused_ns for app in apps if app.refused_ns}
    if refused:
        drivers = [
            attrs.evolve(
                d,
                execution_clients=completed_only(
                    d.execution_clients, d.execution_begins_ns, d.execution_ns, refused
                ),
            )
            if d.execution_begins_ns
            else d
            for d in drivers
        ]
    apps.sort(key=lambda a: (a.arrivals_ns[0], a.pid))
    taken_apps: set[str] = set()
    apps = [attrs.evolve(a, name=_unique(a.name, a.pid, taken_apps)) for a in apps]
    return TracePlan(
        source=path,
        format=fmt,
        t0_ns=apps[0].arrivals_ns[0],
        apps=tuple(apps),
        drivers=tuple(drivers),
        ipc_latency_ns=ipc_latency,
        notes=tuple(notes),
        cut_ns=reader.cut_at,
        warnings=tuple(reader.warnings),
    )


def _driver(reader: _Collector, pid: int, taken: set[str]) -> TraceDriver:
    """A driver process: its HAL version, execution and preparation times."""
    tally = reader.drivers[pid]
    clients = tally.clients
    async_clients = array("q", (clients[slot] for slot in tally.async_slots))
    begins, executions, served = _answered(
        tally.async_begins, reader.notify_exec.get(pid, _NONE), async_clients
    )
    sync = tally.sync_closed
    if sync:
        # Synchronous (ended by their own end) and asynchronous calls: all in begin order.
        order = _order(sync) or range(len(tally.sync_slots))
        sync_begins = sync[::3]
        sync_durations = sync[2::3]
        if not executions:
            begins = array("q", (sync_begins[i] for i in order))
            executions = array("q", (sync_durations[i] for i in order))
            served = array("q", (clients[tally.sync_slots[i]] for i in order))
        else:
            timed = [
                *zip(begins, executions, served, strict=True),
                *((sync_begins[i], sync_durations[i], clients[tally.sync_slots[i]]) for i in order),
            ]
            timed.sort(key=lambda row: row[0])
            begins = array("q", (row[0] for row in timed))
            executions = array("q", (row[1] for row in timed))
            served = array("q", (row[2] for row in timed))
    units, device_ns, beside, burst_ns, fit = _device_units(tally, begins, executions, served)
    owner = tally.burst_owner
    burst_clients = array(
        "q", (owner.get(tid, 0) for tid in itertools.islice(tally.burst_closed, 1, None, 3))
    )
    _, preparations, _ = _answered(tally.prep_begins, reader.notify_prep.get(pid, _NONE))
    process_name = _process_name(reader, pid)
    name = ""
    if process_name:
        service = _SERVICE_RE.search(process_name)
        name = safe_name(service.group(1) if service and service.group(1) else process_name)
    if not name or name.startswith("HwBinder"):
        name = f"driver-{pid}"
    return TraceDriver(
        pid=pid,
        # The runtime's own CPU device has that name in every scenario: a driver service
        # called so (``...-service-nnapi-reference``) gets its pid added.
        name=_unique(name, pid, taken, reserved=CPU_DEVICE_NAME),
        process_name=process_name,
        hal_version=tally.version,
        hal_evidence=tally.evidence,
        execution_ns=executions,
        execution_clients=served,
        service_ns=device_ns,
        execution_begins_ns=begins,
        compute_units=units,
        units_evidence=beside,
        units_fit=fit,
        burst_executions=len(tally.burst_closed) // 3,
        burst_execution_ns=tally.burst_closed[2::3],
        burst_ns=burst_ns,
        burst_clients=burst_clients,
        prepare_ns=tuple(preparations),
        unfinished=len(tally.clients) - len(executions),
    )


def _app(reader: _Collector, tally: _AppTally, pid: int) -> TraceApp:
    """A client process: its arrivals (from the highest layer that marks them), mode and
    drivers (named before names are made unique)."""
    if tally.la_begins:
        begins, closed, which, source = tally.la_begins, tally.la_closed, _LA, ARRIVALS_LA
    elif tally.lr_begins:
        begins, closed, which, source = tally.lr_begins, tally.lr_closed, _LR, ARRIVALS_LR
    else:
        begins, closed, which, source = tally.hal_begins, tally.hal_closed, _HAL, ARRIVALS_HAL
    mode = None
    if tally.modes:
        mode = max(tally.modes, key=lambda m: (tally.modes[m], m.value))
    used = sorted(
        ((count, d) for (a, d), count in reader.served.items() if a == pid),
        key=lambda x: (-x[0], x[1]),
    )
    process_name = _process_name(reader, pid)
    base = safe_name(process_name) if process_name else f"app-{pid}"
    bursts, deliveries, idles = reader.bursts.get(pid, (0, _NONE, _NONE))
    failed, refused, retried, waited = 0, _NONE, 0, 0
    if which == _LA and tally.attempts is not None:
        joined = join_attempts(begins, closed, tally.la_inside, tally.attempts)
        begins, closed, tally.la_inside = joined.arrivals_ns, joined.closed, joined.inside
        failed, refused = joined.failed, joined.refused
        retried, waited = joined.retried, joined.waited
    order = _order(closed)
    latencies, closed_begins = closed[2::3], closed[::3]
    if order is not None:
        latencies = array("q", (latencies[i] for i in order))
        closed_begins = array("q", (closed_begins[i] for i in order))
    inside = _NONE
    if which == _LA and tally.la_inside is not None:
        inside = tally.la_inside
        if order is not None:
            inside = array("q", (inside[i] for i in order))
    return TraceApp(
        pid=pid,
        name=base,
        process_name=process_name,
        model_name=tally.po_name,
        arrivals_ns=sorted(begins),
        arrival_source=source,
        execution_mode=mode,
        max_in_flight=max(1, tally.flight[which].best),
        compilations=tally.finishes or tally.la_compiles or tally.prepares,
        driver_pids=tuple(d for _, d in used),
        driver_executions=tuple(c for c, _ in used),
        priority_calls=tally.priority_calls,
        timeout_calls=tally.timeout_calls,
        latencies_ns=latencies,
        latency_begins_ns=closed_begins,
        never_ended=len(begins) - len(latencies) - failed,
        failed=failed,
        refused_ns=refused,
        retried=retried,
        waited=waited,
        compile_inside_ns=inside,
        burst_executions=bursts,
        burst_deliveries_ns=deliveries,
        burst_idle_ns=idles,
    )
