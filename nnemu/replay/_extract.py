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

import bisect
import json
import re
import statistics
from collections.abc import Callable, Iterable
from typing import Final

import attrs

from nnemu.errors import TraceFormatError
from nnemu.hal import HalVersion
from nnemu.scenario import ExecutionMode
from nnemu.trace import (
    MAX_ID,
    ROW_RE,
    DumpProcess,
    DumpThread,
    FtraceLines,
    Mark,
    TraceFormat,
    classify,
    file_format,
    json_time_ns,
    pid_of,
    refuse_unreadable,
    timestamp_ns,
)
from nnemu.tracer import NNAPI_HIDL_INTERFACES, Layer, Phase

_NN_INTERFACES: Final = NNAPI_HIDL_INTERFACES
_EXECUTION_API: Final = {
    "ANeuralNetworksExecution_compute": ExecutionMode.SYNC,
    "ANeuralNetworksExecution_startCompute": ExecutionMode.ASYNC,
    "ANeuralNetworksExecution_startComputeWithDependencies": ExecutionMode.FENCED,
}
_VERSION_SUFFIX: Final = re.compile(r"_1_([0-3])$")
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
_UNSAFE_NAME: Final = re.compile(r"[\s.]+")

ARRIVALS_LA: Final = "[NN_LA_PE] begins"
ARRIVALS_LR: Final = "ANeuralNetworksExecution_compute/startCompute* begins"
ARRIVALS_HAL: Final = "HIDL IPreparedModel::execute* ::client begins"


@attrs.frozen(kw_only=True)
class Section:
    """One begin/end pair of an NNAPI-related mark."""

    pid: int
    """Process (tgid)."""
    tid: int
    """Thread."""
    name: str
    """The mark as written."""
    begin_ns: int
    """Begin timestamp (trace clock, ns)."""
    end_ns: int | None
    """End timestamp; None when the trace ends with the section open."""


@attrs.frozen(kw_only=True)
class TraceApp:
    """What one client process did."""

    pid: int
    """Process id in the trace."""
    name: str
    """The app's name in the replay scenario (unique, no dots or whitespace)."""
    process_name: str | None
    """Process name from the trace (process dump, JSON metadata, main thread), if any."""
    model_name: str | None
    """Detail of its first ``[NN_LA_PO]`` mark (a model name on devices, the app on nnemu)."""
    arrivals_ns: tuple[int, ...]
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
    latencies_ns: tuple[int, ...] = ()
    """Duration of each closed section that gave an arrival (the recorded latencies)."""


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
    execution_ns: tuple[int, ...]
    """Observed driver time of each execution it served."""
    prepare_ns: tuple[int, ...]
    """Observed driver time of each preparation (server begin -> notify)."""

    @property
    def median_execution_ns(self) -> int | None:
        """Median observed execution time, if it served any."""
        return int(statistics.median(self.execution_ns)) if self.execution_ns else None

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
    ipc_latency_ns: tuple[int, ...]
    """Observed delays from a ``::client`` begin to its ``::server`` begin."""
    notes: tuple[str, ...] = ()
    """Things left out (processes with compilations but no execution, say)."""


# ---------------------------------------------------------------------- reading


@attrs.define
class _Reader:
    """Collects the NNAPI sections and the process and thread names of a trace."""

    sections: list[Section] = attrs.Factory(list)
    process_names: dict[int, str] = attrs.Factory(dict)
    thread_names: dict[int, str] = attrs.Factory(dict)
    thread_pid: dict[int, int] = attrs.Factory(dict)
    # tid -> stack of (name, begin_ns, pid, keep)
    _stacks: dict[int, list[tuple[str, int, int, bool]]] = attrs.Factory(dict)
    _keep: dict[str, bool] = attrs.Factory(dict)

    def _interesting(self, name: str) -> bool:
        keep = self._keep.get(name)
        if keep is None:
            if "[NN" in name:
                keep = True
            elif name.startswith("HIDL::"):
                parts = name.split("::")
                keep = len(parts) >= 4 and parts[1] in _NN_INTERFACES
            else:
                keep = False
            if len(self._keep) < 20_000:
                self._keep[name] = keep
        return keep

    def begin(self, ts: int, pid: int, tid: int, name: str) -> None:
        self.thread_pid.setdefault(tid, pid)
        self._stacks.setdefault(tid, []).append((name, ts, pid, self._interesting(name)))

    def end(self, ts: int, tid: int) -> None:
        stack = self._stacks.get(tid)
        if not stack:
            return  # an end whose begin was before the trace started
        name, begin, pid, keep = stack.pop()
        if keep:
            self.sections.append(Section(pid=pid, tid=tid, name=name, begin_ns=begin, end_ns=ts))

    def finish(self) -> None:
        for tid, stack in self._stacks.items():
            for name, begin, pid, keep in stack:
                if keep:
                    self.sections.append(
                        Section(pid=pid, tid=tid, name=name, begin_ns=begin, end_ns=None)
                    )
        self._stacks.clear()
        self.sections.sort(key=lambda s: (s.begin_ns, s.pid, s.tid))

    # -- ftrace text / systrace HTML

    def _dump_row(self, row: DumpProcess | DumpThread) -> None:
        if isinstance(row, DumpProcess):
            self.process_names[row.pid] = row.name
        else:
            self.thread_pid.setdefault(row.tid, row.pid)
            self.thread_names.setdefault(row.tid, row.name)

    def read_ftrace(self, lines: Iterable[str]) -> FtraceLines:
        source = FtraceLines(lines, on_dump=self._dump_row)
        match = ROW_RE.match
        for _, line in source:
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
            self.thread_names.setdefault(tid, task.strip())
            if kind == "B":
                parts = rest.split("|", 2)
                if len(parts) < 3:
                    continue  # not B|tgid|name
                pid = pid_of(parts[1])
                if pid is None:
                    continue
                if tgid_column is not None and tgid_column.isdigit():
                    pid = pid_of(tgid_column)
                if pid is None:
                    continue
                self.begin(ts, pid, tid, parts[2].rstrip("\n"))
            else:
                self.end(ts, tid)
        return source

    # -- Chrome JSON

    def read_json(self, document: object, source: str) -> None:
        events = document.get("traceEvents") if isinstance(document, dict) else document
        if not isinstance(events, list):
            raise TraceFormatError(source, 1, "", "expected a JSON trace with a traceEvents list")
        ordered: list[tuple[int, int, int, int, str]] = []
        for index, event in enumerate(events):
            if not isinstance(event, dict):
                continue
            ph, pid, tid = event.get("ph"), event.get("pid"), event.get("tid")
            if not isinstance(pid, int) or not isinstance(tid, int):
                continue
            if isinstance(pid, bool) or isinstance(tid, bool) or max(abs(pid), abs(tid)) > MAX_ID:
                continue
            if ph == "M":
                name = (event.get("args") or {}).get("name")
                if isinstance(name, str):
                    if event.get("name") == "process_name":
                        self.process_names[pid] = name
                    elif event.get("name") == "thread_name":
                        self.thread_names[tid] = name
                continue
            ts_ns = json_time_ns(event.get("ts"))
            if ph not in ("B", "E", "X") or ts_ns is None:
                continue
            if ph == "X":
                dur_ns = json_time_ns(event.get("dur"))
                if dur_ns is None:
                    continue
                ordered.append((ts_ns, index, 0, tid, str(event.get("name", ""))))
                ordered.append((ts_ns + dur_ns, index, 1, tid, ""))
                self.thread_pid.setdefault(tid, pid)
            elif ph == "B":
                self.thread_pid.setdefault(tid, pid)
                ordered.append((ts_ns, index, 0, tid, str(event.get("name", ""))))
            else:
                ordered.append((ts_ns, index, 1, tid, ""))
        # JSON events may come in any order; B/E of one thread are in file order.
        ordered.sort(key=lambda e: (e[0], e[1], e[2]))
        for ts_ns, _, kind, tid, name in ordered:
            if kind == 0:
                self.begin(ts_ns, self.thread_pid[tid], tid, name)
            else:
                self.end(ts_ns, tid)


def _read(path: str) -> tuple[_Reader, str]:
    reader = _Reader()
    kind = file_format(path)
    refuse_unreadable(path, kind)
    with open(path, encoding="utf-8", errors="replace") as handle:
        if kind is TraceFormat.JSON:
            try:
                document = json.load(handle)
            except json.JSONDecodeError as err:
                raise TraceFormatError(path, err.lineno, "", f"invalid JSON: {err.msg}") from err
            except ValueError as err:  # e.g. an integer of more than 4300 digits
                raise TraceFormatError(path, 1, "", f"invalid JSON: {err}") from err
            except RecursionError as err:
                raise TraceFormatError(path, 1, "", "invalid JSON: nested too deeply") from err
            reader.read_json(document, path)
            fmt = "json"
        else:
            lines = reader.read_ftrace(handle)
            if not lines.found_ftrace:
                raise TraceFormatError(
                    path,
                    lines.last_line_number,
                    "",
                    "no ftrace data found (expected systrace HTML or ftrace text)",
                )
            fmt = "systrace" if lines.is_html else "ftrace"
    reader.finish()
    return reader, fmt


# ---------------------------------------------------------------------- analysis


def _hidl_parts(name: str) -> tuple[str, str, str]:
    """(interface, method, side) of ``HIDL::<Iface>::<method>::<side>``."""
    parts = name.split("::")
    return parts[1], parts[2], parts[3]


def _version_of(method: str) -> HalVersion:
    match = _VERSION_SUFFIX.search(method)
    if match:
        return _VERSIONS[int(match.group(1))]
    return _METHOD_VERSION.get(method, HalVersion.V1_0)


def safe_name(text: str) -> str:
    """``text`` usable as a scenario app/device name (no dots or whitespace)."""
    return _UNSAFE_NAME.sub("_", text.strip()).strip("_")


def _process_name(reader: _Reader, pid: int) -> str | None:
    name = reader.process_names.get(pid)
    if name:
        return name
    main = reader.thread_names.get(pid)
    if main and main != "<...>":
        return main
    return None


def _unique(name: str, pid: int, taken: set[str]) -> str:
    if not name or name in taken or name == "nnapi-reference":
        name = f"{name}-{pid}" if name else str(pid)
    taken.add(name)
    return name


def _max_in_flight(sections: list[Section]) -> int:
    """Most threads with an execution section open at once.

    A thread runs one execution at a time, so sections nested on one thread (a
    malformed or cut trace: begins without their ends) count once; a section the
    trace leaves open counts until the end.
    """
    points: list[tuple[int, int, int]] = []
    for s in sections:
        points.append((s.begin_ns, 1, s.tid))
        if s.end_ns is not None:
            points.append((s.end_ns, -1, s.tid))
    points.sort(key=lambda p: (p[0], p[1]))  # an end before a begin at the same time
    open_on: dict[int, int] = {}
    busy = best = 0
    for _, delta, tid in points:
        before = open_on.get(tid, 0)
        open_on[tid] = before + delta
        if before == 0 and delta > 0:
            busy += 1
        elif before == 1 and delta < 0:
            busy -= 1
        best = max(best, busy)
    return max(1, best)


def _match_calls(clients: list[Section], servers: list[Section]) -> dict[int, Section]:
    """Pair each server section with its client call: id(server) -> client section.

    A sweep in time order: a server call begins while its client call is open; among the
    open, unpaired client calls of the method it takes the one that began first (binder
    delivers transactions of equal latency in order).
    """
    events: list[tuple[int, int, int]] = []  # (time, order, index); order 0 begin, 1 server, 2 end
    for index, c in enumerate(clients):
        events.append((c.begin_ns, 0, index))
        if c.end_ns is not None:
            events.append((c.end_ns, 2, index))
    for index, sv in enumerate(servers):
        events.append((sv.begin_ns, 1, index))
    events.sort()
    waiting: dict[int, None] = {}  # open unpaired client indices, in begin order
    pairs: dict[int, Section] = {}
    for _, order, index in events:
        if order == 0:
            waiting[index] = None
        elif order == 2:
            waiting.pop(index, None)
        elif waiting:
            first = next(iter(waiting))
            del waiting[first]
            pairs[id(servers[index])] = clients[first]
    return pairs


def _take_first_at_or_after(times: list[int], t: int) -> int | None:
    """Remove and return the first of the sorted ``times`` that is >= ``t``."""
    index = bisect.bisect_left(times, t)
    if index == len(times):
        return None
    return times.pop(index)


@attrs.define
class _Tally:
    """A trace's NNAPI sections sorted by what the plan needs, per process (pid)."""

    driver_pids: set[int]
    """Processes that serve a driver interface."""
    la_exec: dict[int, list[Section]] = attrs.Factory(dict)
    """``[NN_LA_PE]`` sections."""
    lr_exec: dict[int, list[tuple[Section, ExecutionMode]]] = attrs.Factory(dict)
    """Runtime execution calls with the mode their function means."""
    hal_exec: dict[int, list[Section]] = attrs.Factory(dict)
    """``IPreparedModel::execute*`` client sections."""
    po_name: dict[int, str] = attrs.Factory(dict)
    """The function named by the first ``[NN_LA_PO]`` section (the model's name)."""
    finishes: dict[int, int] = attrs.Factory(dict)
    """``ANeuralNetworksCompilation_finish`` calls."""
    la_compiles: dict[int, int] = attrs.Factory(dict)
    """``[NN_LA_PC]`` sections."""
    prepares: dict[int, int] = attrs.Factory(dict)
    """``IDevice::prepareModel*`` client calls."""
    priority_calls: dict[int, int] = attrs.Factory(dict)
    """``ANeuralNetworksCompilation_setPriority`` calls."""
    timeout_calls: dict[int, int] = attrs.Factory(dict)
    """``ANeuralNetworks{Compilation,Execution}_setTimeout`` calls."""
    clients: dict[str, list[Section]] = attrs.Factory(dict)
    """``Iface::method`` -> the apps' client sections of it."""
    servers: dict[int, list[Section]] = attrs.Factory(dict)
    """Driver pid -> its server sections of a driver interface."""
    notify_exec: dict[int, list[int]] = attrs.Factory(dict)
    """Driver pid -> begins of its ``IExecutionCallback`` notify calls."""
    notify_prep: dict[int, list[int]] = attrs.Factory(dict)
    """Driver pid -> begins of its ``IPreparedModelCallback`` notify calls."""

    def add(self, s: Section, mark: Mark) -> None:
        """Sort one section in."""
        if mark.hidl:
            self._add_hidl(s, mark)
        elif s.pid in self.driver_pids or mark.layer is None or mark.switch:
            return
        elif mark.layer is Layer.APPLICATION:
            if mark.phase is Phase.EXECUTION:
                self.la_exec.setdefault(s.pid, []).append(s)
            elif mark.phase is Phase.OVERALL:
                self.po_name.setdefault(s.pid, mark.function)
            elif mark.phase is Phase.COMPILATION:
                _count(self.la_compiles, s.pid)
        elif mark.layer is Layer.RUNTIME:
            function = mark.function
            if function in _EXECUTION_API:
                self.lr_exec.setdefault(s.pid, []).append((s, _EXECUTION_API[function]))
            elif function == "ANeuralNetworksCompilation_finish":
                _count(self.finishes, s.pid)
            elif function == "ANeuralNetworksCompilation_setPriority":
                _count(self.priority_calls, s.pid)
            elif function in (
                "ANeuralNetworksCompilation_setTimeout",
                "ANeuralNetworksExecution_setTimeout",
            ):
                _count(self.timeout_calls, s.pid)

    def _add_hidl(self, s: Section, mark: Mark) -> None:
        iface, method, side = _hidl_parts(s.name)
        if s.pid in self.driver_pids:
            if side == "server" and mark.driver_server:
                self.servers.setdefault(s.pid, []).append(s)
            elif side == "client" and iface == "IExecutionCallback":
                self.notify_exec.setdefault(s.pid, []).append(s.begin_ns)
            elif side == "client" and iface == "IPreparedModelCallback":
                self.notify_prep.setdefault(s.pid, []).append(s.begin_ns)
        elif side == "client" and iface in ("IDevice", "IPreparedModel"):
            self.clients.setdefault(f"{iface}::{method}", []).append(s)
            if iface == "IPreparedModel" and method.startswith("execute"):
                self.hal_exec.setdefault(s.pid, []).append(s)
            elif iface == "IDevice" and method.startswith("prepareModel"):
                _count(self.prepares, s.pid)


def _count(counts: dict[int, int], pid: int) -> None:
    counts[pid] = counts.get(pid, 0) + 1


def extract_plan(path: str) -> TracePlan:
    """Read ``path`` and extract the apps, their arrivals and the drivers.

    Raises:
        TraceFormatError: the file holds no trace, or no app issued an execution.
        OSError: the file cannot be read.
    """
    reader, fmt = _read(path)
    marks: dict[str, Mark] = {}

    def mark_of(name: str) -> Mark:
        mark = marks.get(name)
        if mark is None:
            mark = marks[name] = classify(name)
        return mark

    driver_pids: set[int] = set()
    for s in reader.sections:
        if mark_of(s.name).driver_server:
            driver_pids.add(s.pid)
    tally = _Tally(driver_pids)
    for s in reader.sections:
        tally.add(s, mark_of(s.name))
    client_of = _client_of(tally)
    ipc_latency: list[int] = []
    served: dict[tuple[int, int], int] = {}  # (app pid, driver pid) -> executions
    taken: set[str] = set()
    drivers = [
        _driver(reader, tally, pid, mark_of, client_of, ipc_latency, served, taken)
        for pid in sorted(driver_pids)
    ]
    notes: list[str] = []
    app_pids = (set(tally.la_exec) | set(tally.lr_exec) | set(tally.hal_exec)) - driver_pids
    for pid in sorted(tally.prepares.keys() | tally.finishes.keys() | tally.la_compiles.keys()):
        if pid not in app_pids and pid not in driver_pids:
            notes.append(f"process {pid} compiled a model but issued no execution: left out")
    apps = [_app(reader, tally, pid, served) for pid in app_pids]
    if not apps:
        raise TraceFormatError(
            path,
            0,
            "",
            "no NNAPI execution found (no [NN_LA_PE], ANeuralNetworksExecution_* "
            "or IPreparedModel::execute* marks)",
        )
    apps.sort(key=lambda a: (a.arrivals_ns[0], a.pid))
    taken_apps: set[str] = set()
    apps = [attrs.evolve(a, name=_unique(a.name, a.pid, taken_apps)) for a in apps]
    return TracePlan(
        source=path,
        format=fmt,
        t0_ns=apps[0].arrivals_ns[0],
        apps=tuple(apps),
        drivers=tuple(drivers),
        ipc_latency_ns=tuple(ipc_latency),
        notes=tuple(notes),
    )


def _client_of(tally: _Tally) -> dict[int, Section]:
    """``id(server section)`` -> the app's client section it served, per ``Iface::method``."""
    servers_by_method: dict[str, list[Section]] = {}
    for calls in tally.servers.values():
        for sv in calls:
            iface, method, _ = _hidl_parts(sv.name)
            servers_by_method.setdefault(f"{iface}::{method}", []).append(sv)
    client_of: dict[int, Section] = {}
    for key, calls in servers_by_method.items():
        calls.sort(key=lambda sv: sv.begin_ns)
        client_of.update(_match_calls(tally.clients.get(key, []), calls))
    return client_of


def _driver(
    reader: _Reader,
    tally: _Tally,
    pid: int,
    mark_of: Callable[[str], Mark],
    client_of: dict[int, Section],
    ipc_latency: list[int],
    served: dict[tuple[int, int], int],
    taken: set[str],
) -> TraceDriver:
    """A driver process: its HAL version, execution and preparation times; appends the IPC
    latency of each call it served to ``ipc_latency`` and counts the executions per app in
    ``served``."""
    version, evidence = HalVersion.V1_0, ""
    executions: list[int] = []
    preparations: list[int] = []
    exec_notifies = sorted(tally.notify_exec.get(pid, []))
    prep_notifies = sorted(tally.notify_prep.get(pid, []))
    for s in tally.servers.get(pid, []):
        iface, method, _ = _hidl_parts(s.name)
        found = _version_of(method)
        if _VERSIONS.index(found) > _VERSIONS.index(version):
            version, evidence = found, f"{iface}::{method}"
        client = client_of.get(id(s))
        if client is not None:
            ipc_latency.append(s.begin_ns - client.begin_ns)
        if iface == "IPreparedModel" and method.startswith("execute"):
            if mark_of(s.name).async_execute_server:
                done = _take_first_at_or_after(exec_notifies, s.begin_ns)
                if done is not None:
                    executions.append(done - s.begin_ns)
            elif s.end_ns is not None:
                executions.append(s.end_ns - s.begin_ns)
            if client is not None:
                pair = (client.pid, pid)
                served[pair] = served.get(pair, 0) + 1
        elif iface == "IDevice" and method.startswith("prepareModel"):
            done = _take_first_at_or_after(prep_notifies, s.begin_ns)
            if done is not None:
                preparations.append(done - s.begin_ns)
    process_name = _process_name(reader, pid)
    name = ""
    if process_name:
        service = _SERVICE_RE.search(process_name)
        name = safe_name(service.group(1) if service and service.group(1) else process_name)
    if not name or name.startswith("HwBinder"):
        name = f"driver-{pid}"
    return TraceDriver(
        pid=pid,
        name=_unique(name, pid, taken),
        process_name=process_name,
        hal_version=version,
        hal_evidence=evidence,
        execution_ns=tuple(executions),
        prepare_ns=tuple(preparations),
    )


def _app(reader: _Reader, tally: _Tally, pid: int, served: dict[tuple[int, int], int]) -> TraceApp:
    """A client process: its arrivals (from the highest layer that marks them), mode and
    drivers (named before names are made unique)."""
    if pid in tally.la_exec:
        chosen, source = tally.la_exec[pid], ARRIVALS_LA
    elif pid in tally.lr_exec:
        chosen, source = [s for s, _ in tally.lr_exec[pid]], ARRIVALS_LR
    else:
        chosen, source = tally.hal_exec[pid], ARRIVALS_HAL
    mode = None
    if pid in tally.lr_exec:
        modes = [m for _, m in tally.lr_exec[pid]]
        mode = max(set(modes), key=lambda m: (modes.count(m), m.value))
    used = sorted(
        ((count, d) for (a, d), count in served.items() if a == pid),
        key=lambda x: (-x[0], x[1]),
    )
    process_name = _process_name(reader, pid)
    base = safe_name(process_name) if process_name else f"app-{pid}"
    return TraceApp(
        pid=pid,
        name=base,
        process_name=process_name,
        model_name=tally.po_name.get(pid),
        arrivals_ns=tuple(sorted(s.begin_ns for s in chosen)),
        arrival_source=source,
        execution_mode=mode,
        max_in_flight=_max_in_flight(chosen),
        compilations=(
            tally.finishes.get(pid) or tally.la_compiles.get(pid) or tally.prepares.get(pid, 0)
        ),
        driver_pids=tuple(d for _, d in used),
        driver_executions=tuple(c for c, _ in used),
        priority_calls=tally.priority_calls.get(pid, 0),
        timeout_calls=tally.timeout_calls.get(pid, 0),
        latencies_ns=tuple(s.end_ns - s.begin_ns for s in chosen if s.end_ns is not None),
    )
