"""The ground truth's records and the contract's vocabulary it applies.

The values a ``GroundTruth`` returns (``RunTruth``, ``ProcessTruth``), the state it keeps
per open section, thread, process, launched work and run while it sweeps, and what a
HIDL mark means to the contract.  ``nnemu.tracer._truth`` holds the recorder and the
rules it applies; its docstring says why they are not the parser's.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from typing import Final, NamedTuple

import attrs

from nnemu.sim import SimThread
from nnemu.tracer._vocab import Layer, Phase

Cell = tuple[Layer, Phase]
"""(layer, phase) of a statistic."""

CELL_LAYERS: Final = (Layer.APPLICATION, Layer.RUNTIME, Layer.IPC, Layer.DRIVER, Layer.CPU)
"""Layers with a row in the statistics."""
CELL_PHASES: Final = (
    Phase.INITIALIZATION,
    Phase.PREPARATION,
    Phase.COMPILATION,
    Phase.EXECUTION,
    Phase.TERMINATION,
    Phase.OVERALL,
    Phase.INPUTS_AND_OUTPUTS,
    Phase.TRANSFORMATION,
    Phase.COMPUTATION,
    Phase.RESULTS,
)
"""Phases with a column in the statistics."""
MAIN_PHASES: Final = CELL_PHASES[:5]

_DRIVER_INTERFACES: Final = frozenset(
    {"IDevice", "IPreparedModel", "IBuffer", "IBurstContext", "IBurst", "IExecution"}
)
_ASYNC_EXECUTE: Final = frozenset({"execute", "execute_1_2", "execute_1_3"})
_FENCED_EXECUTE: Final = frozenset({"IPreparedModel", "IExecution"})
"""Interfaces whose ``executeFenced*`` may leave its work to a worker thread."""
START_COMPUTE: Final = frozenset(
    {
        "ANeuralNetworksExecution_startCompute",
        "ANeuralNetworksExecution_startComputeWithDependencies",
    }
)
EVENT_WAIT: Final = "ANeuralNetworksEvent_wait"
EXECUTION_CREATE: Final = "ANeuralNetworksExecution_create"
# LD and LC are one "device" layer; a process's device time is named LD in a
# driver process and LC elsewhere (the contract's LC<->LD swap).
DEVICE: Final = Layer.DRIVER


def _hidl_phase(iface: str, method: str) -> Phase:
    """Phase of a HIDL call, by interface and method (the contract leaves this to the parser)."""
    if iface == "IAllocator":
        return Phase.UNSPECIFIED
    if method.startswith("getCapabilities"):
        return Phase.INITIALIZATION
    if "prepareModel" in method or method.startswith("getSupportedOperations"):
        return Phase.COMPILATION
    if iface == "IPreparedModelCallback":
        return Phase.COMPILATION
    if method == "configureExecutionBurst":
        return Phase.INITIALIZATION  # a burst is set up in Burst_create, as the parser says
    if method == "createReusableExecution":
        return Phase.EXECUTION  # (AIDL v4) inside a reusable execution's first computation
    if (
        "execute" in method.lower()
        or iface in ("IExecutionCallback", "IFencedExecutionCallback", "IBuffer")
        or "Burst" in iface
        or "Burst" in method
    ):
        return Phase.EXECUTION
    if iface == "IDevice" and method == "allocate":
        return Phase.COMPILATION
    return Phase.INITIALIZATION


class OpenSection:
    """An open section as the contract sees it."""

    __slots__ = (
        "accrues",
        "async_server",
        "call",
        "copy",
        "copy_pe",
        "covered",
        "deducts",
        "detail",
        "event_wait",
        "execution_create",
        "label",
        "layer",
        "parent",
        "pe_layers",
        "phase",
        "placeholder",
        "start_compute",
        "straddles",
        "subphase_pe",
    )

    def __init__(self) -> None:
        self.layer: Layer | None = None
        self.phase: Phase | None = None
        self.parent: OpenSection | None = None
        self.label = ""
        self.placeholder = False
        self.detail = False
        self.deducts = False
        self.accrues = False
        self.copy = False
        self.copy_pe = False
        self.subphase_pe = False
        self.covered: Layer | None = None
        self.pe_layers: frozenset[Layer] = frozenset()
        self.async_server = False
        self.call: list[object] | None = None
        self.start_compute = False
        self.event_wait = False
        self.execution_create = False
        self.straddles = False


class ThreadState:
    __slots__ = (
        "binder",
        "busy_run",
        "cells",
        "claim",
        "last_ts",
        "launch",
        "pending_gaps",
        "pid",
        "run",
        "stack",
        "thread",
    )

    def __init__(self, thread: SimThread, run: RunState) -> None:
        self.thread = thread
        self.pid = thread.pid
        self.stack: list[OpenSection] = []
        self.last_ts = 0
        self.cells: tuple[Cell, ...] = ()
        # The run the thread's open sections serve (decided when its stack is empty).
        self.run = run
        self.binder = False
        self.claim: Launch | None = None
        self.launch: Launch | None = None
        # Asynchronous runtime executions: end of startCompute, waiting for Event_wait,
        # and the [NN_LA_PE] whose end ends it if none comes (a failed startCompute*).
        self.pending_gaps: deque[tuple[int, OpenSection | None]] = deque()
        # The run whose runtime time the thread is accruing now (None when it is not).
        self.busy_run: RunState | None = None


class Launch:
    """Work a driver's prepareModel/execute*/executeFenced/configureExecutionBurst call
    launched."""

    __slots__ = ("burst", "claimed", "execute", "fenced", "run", "section", "start")

    def __init__(
        self,
        run: RunState,
        start: int,
        *,
        execute: bool,
        burst: bool,
        fenced: bool,
        section: OpenSection,
    ) -> None:
        self.run = run
        self.start = start
        self.execute = execute
        self.burst = burst
        # executeFenced: a worker does it in one top-level section, with no notify.
        self.fenced = fenced
        # The server call that launched it.
        self.section = section
        self.claimed = False


class ProcessState:
    __slots__ = ("driver", "la_pe", "launches", "name", "pid", "run", "windows")

    def __init__(self, pid: int, name: str) -> None:
        self.pid = pid
        self.name = name
        self.driver = False
        # The current run of a client process (None before its first [NN_LA_PO]).
        self.run: RunState | None = None
        # Launched driver work, until its notify (asynchronous executions count).
        self.launches: list[Launch] = []
        # Open startCompute..Event_wait windows per thread.
        self.windows: dict[ThreadState, int] = {}
        # Its open [NN_LA_PE] sections, oldest first.
        self.la_pe: list[OpenSection] = []


@attrs.frozen(kw_only=True)
class ProcessTruth:
    """One process's share of a run."""

    pid: int
    """Process id."""
    name: str
    """Process name."""
    kind: str
    """``app`` or ``driver``."""
    totals_ns: Mapping[Cell, int]
    """Time per (layer, phase) this process's threads accrued, in ns (device layer named)."""


@attrs.frozen(kw_only=True)
class RunTruth:
    """The ground truth of one run of one client process (from its ``[NN_LA_PO]`` to its next)."""

    index: int
    """0-based position among the runs the parser reports (runs in the order they start)."""
    starting_app: str | None
    """Name of the app whose ``[NN_LA_PO]`` section started the run (None before any)."""
    pid: int | None
    """Process id of the client whose run it is (None for sections before any run)."""
    processes: tuple[ProcessTruth, ...]
    """Per process, sorted by pid (app processes and driver processes)."""
    executions: int
    """``ANeuralNetworksExecution_create`` sections that ended in the run."""
    unreconstructable: Mapping[Cell, tuple[str, ...]]
    """Cells the trace cannot reconstruct, with the reasons."""
    runtime_wall_ns: int = 0
    """Wall-clock time during which at least one thread accrued a main phase of the
    runtime for this run (or waited in a startCompute..Event_wait gap): runtime work
    on several threads at once counts once."""

    def application_total_self_ns(self) -> int | None:
        """The Application's Total self time: its ``PO`` span minus the wall-clock time
        the runtime worked for it (without runtime time, minus the layers it calls);
        None when the run has no application time."""
        app = self.cell_ns(Layer.APPLICATION, Phase.OVERALL)
        if app == 0:
            return None
        below = self.runtime_wall_ns
        if below == 0:
            below = self._called(Layer.RUNTIME)
        return app - below

    def _called(self, layer: Layer) -> int:
        """Time of the layers ``layer`` calls, going through a layer without time."""
        callees = {
            Layer.RUNTIME: (Layer.IPC, Layer.CPU),
            Layer.IPC: (Layer.DRIVER,),
        }.get(layer, ())
        total = 0
        for callee in callees:
            value = self.cell_ns(callee, Phase.OVERALL)
            total += value if value else self._called(callee)
        return total

    def cell_ns(self, layer: Layer, phase: Phase) -> int:
        """Total of ``layer`` in ``phase`` over every process; ``PO`` of a layer other than
        the application is the sum of its main phases (as the parser's Total column)."""
        if phase is Phase.OVERALL and layer is not Layer.APPLICATION:
            direct = self._sum(layer, phase)
            if direct:
                return direct
            return sum(self._sum(layer, main) for main in MAIN_PHASES)
        return self._sum(layer, phase)

    def _sum(self, layer: Layer, phase: Phase) -> int:
        return sum(p.totals_ns.get((layer, phase), 0) for p in self.processes)


class RunState:
    def __init__(self, seq: int, starting_app: str | None, pid: int | None) -> None:
        self.seq = seq
        self.starting_app = starting_app
        self.pid = pid
        self.totals: dict[int, dict[Cell, int]] = {}
        self.executions = 0
        self.has_marks = False
        self.finished = False
        self.unreconstructable: dict[Cell, list[str]] = {}
        # Threads accruing runtime time for the run now, since when, and the
        # wall-clock time at least one did (closed stretches).
        self.busy_threads = 0
        self.busy_since = 0
        self.runtime_wall = 0

    def busy_change(self, ts: int, delta: int) -> None:
        if delta > 0:
            if self.busy_threads == 0:
                self.busy_since = ts
            self.busy_threads += 1
        elif self.busy_threads > 0:
            self.busy_threads -= 1
            if self.busy_threads == 0:
                self.runtime_wall += ts - self.busy_since

    def flag(self, cells: Iterable[Cell], reason: str) -> None:
        for cell in cells:
            reasons = self.unreconstructable.setdefault(cell, [])
            if reason not in reasons:
                reasons.append(reason)


class HidlMark(NamedTuple):
    """What a ``HIDL::<iface>::<method>::<side>`` mark means to the accounting."""

    layer: Layer | None
    """IPC for a client call, the device layer for a server call, None for a callback."""
    phase: Phase | None
    """The call's phase (None for a callback)."""
    notify_client: bool = False
    """The driver's ``IExecutionCallback::notify*`` call (ends an asynchronous execution)."""
    prepare_notify: bool = False
    """The driver's ``IPreparedModelCallback::notify*`` call (ends a preparation)."""
    launches_work: bool = False
    """A driver server call that hands work to another driver thread."""
    burst: bool = False
    """``configureExecutionBurst`` (the work launched is a burst server)."""
    fenced: bool = False
    """``executeFenced`` (the work launched, if the driver does not do it inside the call, is
    one top-level section of a worker thread)."""


NOT_HIDL: Final = HidlMark(None, None)


def read_hidl(detail: str, section: OpenSection, proc: ProcessState) -> HidlMark:
    """What the raw mark ``detail`` (HIDL's, or an AIDL NDK one) means; a server call of a driver interface marks ``proc``
    as a driver and ``section`` as an asynchronous server when it is one."""
    hidl = detail.split("::")
    aidl = len(hidl) == 5 and hidl[0] == "AIDL" and hidl[1] == "ndk"
    if aidl:
        del hidl[1]  # an AIDL NDK mark counts as the HIDL mark of its interface and method
    elif len(hidl) != 4 or hidl[0] != "HIDL":
        return NOT_HIDL
    _, iface, method, side = hidl
    layer, phase = None, None
    launches_work = burst = fenced = False
    callback = "notify" in method or iface == "IBurstCallback"
    if side == "client" and not callback:
        layer, phase = Layer.IPC, _hidl_phase(iface, method)
    elif side == "server" and not callback:
        layer, phase = DEVICE, _hidl_phase(iface, method)
        if iface in _DRIVER_INTERFACES:
            proc.driver = True
            section.async_server = iface == "IPreparedModel" and method in _ASYNC_EXECUTE
            # (AIDL's configureExecutionBurst hands back an IBurst: no server thread)
            burst = method == "configureExecutionBurst" and not aidl
            fenced = method.startswith("executeFenced") and iface in _FENCED_EXECUTE
            launches_work = (
                section.async_server
                or burst
                or fenced
                or (iface == "IDevice" and "prepareModel" in method)
            )
    notifies = side == "client" and method.startswith("notify")
    return HidlMark(
        layer,
        phase,
        notify_client=notifies and iface == "IExecutionCallback",
        prepare_notify=notifies and iface == "IPreparedModelCallback",
        launches_work=launches_work,
        burst=burst,
        fenced=fenced,
    )
