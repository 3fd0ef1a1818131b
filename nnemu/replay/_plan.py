"""The plan a recorded trace gives the replay: its apps, their arrivals and drivers."""

from __future__ import annotations

import itertools
import statistics
from array import array
from collections.abc import Iterable
from typing import Final

import attrs

from nnemu.hal import HalVersion
from nnemu.replay._attempts import AppQos
from nnemu.replay._columns import median
from nnemu.replay._loop import ClosedLoop
from nnemu.scenario import ExecutionMode

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
    qos: AppQos | None = None
    """Its priority and timeouts, from nnemu's ``nnemu::qos`` mark (None: no mark, as in a
    device's trace)."""
    start_ns: int | None = None
    """When its first ``[NN_LA_PO]`` section began (trace clock), if it has one."""
    fallbacks: int = 0
    """Executions (or partitions) its runtime ran on the CPU instead of a driver
    (``cpuFallbackFull``/``cpuFallbackPartial`` sections)."""
    reusable_calls: int = 0
    """Executions its runtime made reusable (``ANeuralNetworksExecution_setReusable``
    sections: one per app thread when the app computes one execution again and again)."""
    loop: ClosedLoop | None = None
    """The closed loop its executions' timing shows (``_loop``); None: open loop."""


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
    died_ns: int | None = None
    """When the process died (nnemu's ``nnemu::died`` mark; trace clock), or None."""

    @property
    def median_execution_ns(self) -> int | None:
        """Median observed execution time, if it served any."""
        return int(median(self.execution_ns)) if self.execution_ns else None

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
