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

import itertools
import os
import re
from array import array
from typing import Final, TextIO

import attrs

from nnemu.errors import TraceFormatError
from nnemu.replay._attempts import completed_only, join_attempts, parse_qos
from nnemu.replay._collect import _HAL, _LA, _LR, _Collector
from nnemu.replay._columns import sorted_column, sorted_order
from nnemu.replay._loop import closed_loop
from nnemu.replay._plan import (
    ARRIVALS_HAL,
    ARRIVALS_LA,
    ARRIVALS_LR,
    TraceApp,
    TraceDriver,
    TracePlan,
)
from nnemu.replay._tally import _AppTally, _DriverTally
from nnemu.replay._units import _device_units
from nnemu.scenario import CPU_DEVICE_NAME
from nnemu.trace import (
    MAX_SORTED_BYTES,
    TRUNCATED_HTML,
    TraceEvents,
    TraceFormat,
    out_of_order_warning,
)
from nnemu.tracer import safe_name

_SERVICE_RE: Final = re.compile(r"neuralnetworks(?:@\d\.\d)?-service-?(.*)$")
"""A driver service's process name: ``android.hardware.neuralnetworks@1.3-service-gpu``
(HIDL) or ``android.hardware.neuralnetworks-service-npu`` (AIDL); the device is its tail."""


_NONE: Final = array("q")


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
    trace = TraceEvents(path, progress=progress, strict_lines=True, slices_only=True)
    if trace.kind is TraceFormat.PERFETTO:

        def problem(offset: int, message: str) -> None:
            # A bad packet is wrong with the file: a warning, placed as parse places it.
            collector.warnings.append(f"{path}: byte {offset}: warning: {message}")

        collector.read_rows(trace.batches(), problem)
        collector.finish()
        if collector.out_of_order:  # its rows' numbers are not the file's: the whole file
            warning = out_of_order_warning(collector.out_of_order, sorted_again=False)
            collector.warnings.append(f"{path}: warning: {warning}")
        return collector, "perfetto"
    if trace.kind is TraceFormat.JSON:
        events = trace.events()
        if collector.read_json_events(events):
            collector.finish()
            _warn_of_events(collector, path)
            _warn_of_out_of_order(collector, path)
            return collector, "json"
        collector = _Collector()  # not one event per line: the document's events
        collector.read_json_events(events)
        _warn_of_events(collector, path)
        _warn_of_out_of_order(collector, path)
        collector.finish()
        return collector, "json"
    collector.read_rows(trace.batches(), _no_problem)
    if collector.out_of_order and os.path.getsize(path) <= MAX_SORTED_BYTES:
        # Read again in time order, as Perfetto matches the rows.
        early = (collector.out_of_order, collector.first_out_of_order)
        collector = _Collector()
        collector.read_rows(trace.batches(in_time_order=True), _no_problem)
        collector.out_of_order, collector.first_out_of_order = early
        collector.time_sorted = True
    lines = trace.lines
    assert lines is not None
    if not lines.found_ftrace:
        raise TraceFormatError(
            path,
            lines.last_line_number,
            "",
            "no ftrace data found (expected systrace HTML or ftrace text)",
        )
    if lines.truncated:
        collector.warnings.append(f"{path}:{lines.last_line_number}: warning: {TRUNCATED_HTML}")
    _warn_of_out_of_order(collector, path)
    collector.finish()
    return collector, "systrace" if lines.is_html else "ftrace"


def _no_problem(place: int, message: str) -> None:
    """(A text trace's rows give no ``PROBLEM`` event.)"""
    del place, message


def _warn_of_out_of_order(collector: _Collector, path: str) -> None:
    """The one warning of the end marks before their begins, at the first (before a cut
    HTML file's warning, at its last line)."""
    if collector.out_of_order:
        line = collector.first_out_of_order
        where = f"{path}:{line}" if line else path
        warning = out_of_order_warning(collector.out_of_order, sorted_again=collector.time_sorted)
        collector.warnings.insert(0, f"{where}: warning: {warning}")


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
    """``values`` sorted (itself when already in order, as a time-ordered trace gives them;
    else sorted a chunk at a time: ``sorted_column``)."""
    if all(a <= b for a, b in itertools.pairwise(values)):
        return values
    return sorted_column(values)


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
        order = sorted_order(begins)
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


def _order(flat: array[int]) -> array[int] | None:
    """The order that sorts a flat (begin, tid, duration) array by begin and thread (the
    order a sort of sections by begin, pid and tid gives); None when already sorted."""
    rows = memoryview(flat)  # (views, not copies: bench/README.md)
    begins, tids = rows[::3], rows[1::3]
    keys = zip(begins, tids, strict=True)
    if all(a <= b for a, b in itertools.pairwise(keys)):
        return None
    return sorted_order(begins, tids)


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
        # Its columns go as the plan takes them over (bench/README.md: the read's columns
        # beside the plan's copies were most of replay's peak).
        tally = reader.drivers.pop(pid)
        ipc_latency.extend(tally.ipc)
        tally.ipc = _NONE
        drivers.append(_driver(reader, tally, pid, taken))
    notes: list[str] = []
    tallies = {pid: app for pid, app in reader.apps.items() if pid not in driver_pids}
    app_pids = {
        pid for pid, app in tallies.items() if app.la_begins or app.lr_begins or app.hal_begins
    }
    for pid in sorted(tallies):
        app = tallies[pid]
        if pid not in app_pids and (app.prepares or app.finishes or app.la_compiles):
            notes.append(f"process {pid} compiled a model but issued no execution: left out")
    reader.apps.clear()  # (``tallies`` holds the apps' columns: each goes as its app is made)
    apps = []
    for pid in app_pids:
        apps.append(_app(reader, tallies.pop(pid), pid))
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


def _executions(
    reader: _Collector, tally: _DriverTally, pid: int
) -> tuple[array[int], array[int], array[int]]:
    """(begins, driver times, client pids) of a driver's HIDL executions, in begin order;
    the tally's execute calls and the driver's notifies taken from them (gone when these
    return: bench/README.md)."""
    clients, tally.clients = tally.clients, _NONE
    async_clients = array("q", (clients[slot] for slot in tally.async_slots))
    begins, executions, served = _answered(
        tally.async_begins, reader.notify_exec.pop(pid, _NONE), async_clients
    )
    tally.async_begins = tally.async_slots = _NONE
    sync, tally.sync_closed = tally.sync_closed, _NONE
    sync_slots, tally.sync_slots = tally.sync_slots, _NONE
    if not sync:
        return begins, executions, served
    # Synchronous (ended by their own end) and asynchronous calls: all in begin order.
    order = _order(sync) or range(len(sync_slots))
    rows = memoryview(sync)  # (views, not copies: bench/README.md)
    sync_begins, sync_durations = rows[::3], rows[2::3]
    if not executions:
        return (
            array("q", (sync_begins[i] for i in order)),
            array("q", (sync_durations[i] for i in order)),
            array("q", (clients[sync_slots[i]] for i in order)),
        )
    timed = [
        *zip(begins, executions, served, strict=True),
        *((sync_begins[i], sync_durations[i], clients[sync_slots[i]]) for i in order),
    ]
    timed.sort(key=lambda row: row[0])
    return (
        array("q", (row[0] for row in timed)),
        array("q", (row[1] for row in timed)),
        array("q", (row[2] for row in timed)),
    )


def _driver(reader: _Collector, tally: _DriverTally, pid: int, taken: set[str]) -> TraceDriver:
    """A driver process: its HAL version, execution and preparation times."""
    calls = len(tally.clients)
    # (Its sorts' orders and copies gone before the unit passes: bench/README.md.)
    begins, executions, served = _executions(reader, tally, pid)
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
        unfinished=calls - len(executions),
        died_ns=reader.died.get(pid),
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
        del joined
    inside = tally.la_inside if which == _LA and tally.la_inside is not None else _NONE
    # The replay compiles once, not inside each execution: a loop would issue them early.
    loop = None if any(inside) else closed_loop(closed)
    # Each of the read's columns goes as the plan's copy is made (bench/README.md).
    tally.la_begins = tally.lr_begins = tally.hal_begins = _NONE
    issued = len(begins)
    arrivals = _ascending(begins)
    del begins
    tally.la_closed = tally.lr_closed = tally.hal_closed = _NONE
    order = _order(closed)
    if order is None:
        latencies, closed_begins = closed[2::3], closed[::3]
    else:
        rows = memoryview(closed)  # (views, not copies: bench/README.md)
        latencies = array("q", (rows[3 * i + 2] for i in order))
        closed_begins = array("q", (rows[3 * i] for i in order))
        del rows
    del closed
    if order is not None and inside:
        inside = array("q", (inside[i] for i in order))
    return TraceApp(
        pid=pid,
        name=base,
        process_name=process_name,
        model_name=tally.po_name,
        arrivals_ns=arrivals,
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
        never_ended=issued - len(latencies) - failed,
        failed=failed,
        refused_ns=refused,
        retried=retried,
        waited=waited,
        compile_inside_ns=inside,
        burst_executions=bursts,
        burst_deliveries_ns=deliveries,
        burst_idle_ns=idles,
        qos=None if tally.qos is None else parse_qos(tally.qos),
        start_ns=tally.po_begin,
        fallbacks=tally.fallbacks,
        reusable_calls=tally.reusable_calls,
        loop=loop,
    )
