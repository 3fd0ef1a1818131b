"""Replay's one streaming pass: ``_Collector`` folds the NNAPI sections of a trace's canonical
events (``nnemu.trace.TraceEvents``, whatever the format) into per-process summaries as they
come."""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Iterator
from typing import Final

from nnemu.hal import HalVersion
from nnemu.replay._roles import (
    _BURST_EXEC,
    _BURST_REQUEST,
    _CLIENT,
    _DIED,
    _FAILED,
    _IGNORED,
    _LA_COMPILE,
    _LA_EXEC,
    _LA_OVERALL,
    _LR_EXEC,
    _LR_FALLBACK,
    _LR_FINISH,
    _LR_PRIORITY,
    _LR_REUSABLE,
    _LR_TIMEOUT,
    _NOTIFY_EXEC,
    _NOTIFY_PREP,
    _QOS,
    _RETRY,
    _SERVER,
    _WAITED,
    _Role,
    _role,
)
from nnemu.replay._tally import _AppTally, _DriverTally, _marks
from nnemu.trace import (
    BEGIN,
    COMPLETE,
    END,
    PROBLEM,
    PROCESS,
    RESTART,
    THREAD,
    Event,
)

_VERSIONS: Final = tuple(HalVersion)
"""The versions oldest first (HIDL 1.0-1.3, then AIDL v1-v4): a driver's is the newest its
server calls show."""


# ---------------------------------------------------------------------- reading
#
# One streaming pass: each NNAPI section is folded into per-process summaries when it
# begins and when it ends (arrays of timestamps, counts, running maxima), so memory grows
# with the executions an app issued, not with the rows of the trace.  The two sweeps that
# need time order (executions in flight; which client call a server call answers) are fed
# as the rows come, the events of one timestamp applied in the order a sort would give.

_MAX_CACHED_NAMES: Final = 20_000
_READ_PHASES: Final = frozenset({"B", "E", "X", "M"})
"""The JSON phases replay reads: a ``PROBLEM`` of another (its ``extra``: an instant, or a
``NO_SLICE`` row, whose nameless begin replay reads) is not said."""


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


def _lower_closed(flat: array[int], ts: int) -> None:
    """Before a row ending at ``ts`` joins ``flat``, the closed sections of a layer below the
    one that gives the app's arrivals (runtime or HAL calls beside ``[NN_LA_PE]``): only
    its last rows that end at one time are kept, what ``_uncut`` counts (``_ending_at``),
    not a row an execution (bench/README.md)."""
    if flat and flat[-3] + flat[-1] != ts:
        del flat[:]


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
        self.died: dict[int, int] = {}  # driver pid -> the time of its nnemu::died mark
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
        elif kind == _DIED:
            self.died.setdefault(pid, ts)
        else:
            app = self._app(pid)
            if kind == _LA_EXEC:
                app.la_begins.append(ts)
                app.flight[_LA].begin(ts, tid)
                if app.attempts is not None:
                    app.attempts.attempt(ts, tid)
            elif kind == _LR_EXEC:
                if not app.la_begins:  # (else its arrivals are those: ``_lower_closed``)
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
                    if not (app.la_begins or app.lr_begins):
                        app.hal_begins.append(ts)
                    app.flight[_HAL].begin(ts, tid)
                elif role.prepare:
                    app.prepares += 1
            elif kind == _LA_OVERALL:
                if app.po_name is None:
                    app.po_name = role.text
                    app.po_begin = ts
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
            elif kind == _QOS and app.qos is None:
                app.qos = role.text  # (the first: ``nnemu::qos``)
            elif kind == _LR_FALLBACK:
                app.fallbacks += 1
            elif kind == _LR_REUSABLE:
                app.reusable_calls += 1
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
            if app.la_begins:
                _lower_closed(app.lr_closed, ts)
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
                if app.la_begins or app.lr_begins:
                    _lower_closed(app.hal_closed, ts)
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

    # -- reading canonical events (``nnemu.trace.TraceEvents``)

    def read_rows(
        self, batches: Iterable[list[Event]], problem: Callable[[int, str], None]
    ) -> None:
        """Apply the events of a text or Perfetto trace (``TraceEvents.batches``) in the
        order they come (a text trace read again in time order: in that order); each
        ``PROBLEM`` to ``problem`` (place, message)."""
        thread_names = self.thread_names
        begin = self.begin
        end = self.end
        check_order = self._check_order
        for batch in batches:
            for kind, ts, place, pid, tid, name, extra in batch:
                if kind == BEGIN:
                    if tid not in thread_names:
                        thread_names[tid] = str(extra).strip()
                    check_order(tid, ts, place)
                    begin(ts, pid, tid, name)
                elif kind == END:
                    if tid not in thread_names:
                        thread_names[tid] = str(extra).strip()
                    check_order(tid, ts, place)
                    end(ts, tid, place)
                elif kind == PROBLEM:
                    problem(place, name)
                else:
                    self._named(kind, pid, tid, name, extra)

    def _named(self, kind: int, pid: int, tid: int, name: str, extra: object) -> None:
        """A ``PROCESS`` or ``THREAD`` event: a process dump's row, or a JSON name (a
        thread's renames it)."""
        if kind == PROCESS:
            self.process_names[pid] = name
        elif kind == THREAD:
            if extra:
                self.thread_names[tid] = name
            else:
                self.thread_pid.setdefault(tid, pid)
                self.thread_names.setdefault(tid, name)

    def read_json_events(self, events: Iterator[Event]) -> bool:
        """Read the events of a JSON trace in file order (``PROBLEM``: an event skipped, kept
        for a warning, ``event_problems``), then apply them in time order, as Perfetto sorts
        them: by time, then file order (a begin before an end).  A document's
        ``systemTraceEvents`` rows come among them (events whose ``extra`` is their task),
        with their own process.  False when the reading restarts (``RESTART``: the events
        so far are void; the rest of ``events`` is the file read again)."""
        ordered: list[tuple[int, int, int, int, str, int]] = []
        check_order = self._check_order
        thread_pid = self.thread_pid
        thread_names = self.thread_names
        place = 0
        for kind, ts, line_number, pid, tid, name, extra in events:
            place += 1
            if kind in (BEGIN, END):
                if extra is not None:  # a row of the systemTraceEvents text
                    if tid not in thread_names:
                        thread_names[tid] = str(extra).strip()
                    check_order(tid, ts, line_number)
                    if kind == BEGIN:
                        ordered.append((ts, place, 0, tid, name, pid))
                    else:
                        ordered.append((ts, place, 1, tid, "", -1))
                    continue
                if kind == BEGIN:
                    thread_pid.setdefault(tid, pid)
                    ordered.append((ts, place, 0, tid, name, -1))
                else:
                    ordered.append((ts, place, 1, tid, "", -1))
            elif kind == COMPLETE:
                assert isinstance(extra, int)
                ordered.append((ts, place, 0, tid, name, -1))
                ordered.append((ts + extra, place, 1, tid, "", -1))
                thread_pid.setdefault(tid, pid)
            elif kind == PROBLEM:
                if extra is None or extra in _READ_PHASES:
                    self._event_problem(line_number, name)
                continue
            elif kind == RESTART:
                return False
            else:
                self._named(kind, pid, tid, name, extra)
                continue
            # Said as parse and query say it (they read such a trace again in time order,
            # as this always reads JSON).
            check_order(tid, ts, line_number)
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
        return True
