"""Ground truth: per run, the time each layer spent in each phase, as the tracing contract defines it.

A ``GroundTruth`` is attached to a ``Tracer`` with ``Tracer.add_observer``.  It
receives every section the emulated stack opens with its *structured* meaning
(kind: plain / ``[SW]`` / ``[SUB]`` / HIDL client or server; the ``Layer`` and
``Phase`` enums the code passed; thread and process) and never reads an
NNTRACE tag back.  HIDL marks are the one exception: the binder writes them as
``HIDL::<iface>::<method>::<side>``, and the contract maps them by interface,
method and side, which is what this module splits out.

The computation is deliberately not the parser's.  The parser closes sections
and deducts children's durations from their parents (``nnemu.parser._engine``);
this recorder sweeps time instead: between two events of a thread, the stack of
open sections is fixed, and each elapsed nanosecond is credited to every cell
(layer x phase) the contract says is accruing at that instant:

* a counted section accrues unless the innermost section under it that is not
  additional detail deducts itself (``[SUB]``, one-time initialisation ``PI``
  under a non-``PI`` phase, a runtime/IPC call under an application phase of
  another kind): "Add (t3-t0) - (t2-t1)";
* additional detail (same layer as its parent, not a sub-phase) accrues nothing;
* a deducted section accrues its whole time in its own layer and phase, unless an
  enclosing section of the same layer already accrues it (``[SUB]``);
* an execution sub-phase (PIO PTR PCO PR) also accrues the layer's ``PE``
  unless a ``PE`` section of the same layer encloses it;
* layers below the caller are *not* excluded: each layer's total includes the
  layers it calls (self time is derived from totals);
* special cases: asynchronous runtime execution (end of ``startCompute`` to
  begin of ``Event_wait``) and asynchronous driver execution (begin of an
  ``IPreparedModel::execute*`` server call to the begin of the driver's next
  ``IExecutionCallback::notify*`` client call).

Runs are split as the parser splits them: a ``[NN_LA_PO]`` begin starts a new
run.  A section (or asynchronous execution) still open when a run starts is
time the trace cannot attribute (the parser drops it): its cells are recorded
as not reconstructable in both runs, with the reason.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from typing import Final

import attrs

from nnemu.sim import SimThread
from nnemu.tracer._tracer import SectionInfo, SectionKind
from nnemu.tracer._vocab import EXECUTION_FAMILY, EXECUTION_SUBPHASES, SUBPHASES, Layer, Phase

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
_MAIN_PHASES: Final = CELL_PHASES[:5]

_SUBPHASES: Final = SUBPHASES
_EXECUTION_FAMILY: Final = EXECUTION_FAMILY
_DRIVER_INTERFACES: Final = frozenset({"IDevice", "IPreparedModel", "IBuffer", "IBurstContext"})
_ASYNC_EXECUTE: Final = frozenset({"execute", "execute_1_2", "execute_1_3"})
_START_COMPUTE: Final = frozenset(
    {
        "ANeuralNetworksExecution_startCompute",
        "ANeuralNetworksExecution_startComputeWithDependencies",
    }
)
_EVENT_WAIT: Final = "ANeuralNetworksEvent_wait"
_EXECUTION_CREATE: Final = "ANeuralNetworksExecution_create"
# LD and LC are one "device" layer; a process's device time is named LD in a
# driver process and LC elsewhere (the contract's LC<->LD swap).
_DEVICE: Final = Layer.DRIVER


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


class _Section:
    """An open section as the contract sees it."""

    __slots__ = (
        "accrues",
        "async_server",
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
        self.parent: _Section | None = None
        self.label = ""
        self.placeholder = False
        self.detail = False
        self.deducts = False
        self.accrues = False
        self.copy = False
        self.copy_pe = False
        self.subphase_pe = False
        self.covered = False
        self.pe_layers: frozenset[Layer] = frozenset()
        self.async_server = False
        self.start_compute = False
        self.event_wait = False
        self.execution_create = False
        self.straddles = False


class _Thread:
    __slots__ = ("cells", "last_ts", "pending_gaps", "pid", "stack", "thread")

    def __init__(self, thread: SimThread) -> None:
        self.thread = thread
        self.pid = thread.pid
        self.stack: list[_Section] = []
        self.last_ts = 0
        self.cells: tuple[Cell, ...] = ()
        # Asynchronous runtime executions: end of startCompute, waiting for Event_wait.
        self.pending_gaps: deque[int] = deque()


class _Process:
    __slots__ = ("driver", "name", "pending_async", "pid")

    def __init__(self, pid: int, name: str) -> None:
        self.pid = pid
        self.name = name
        self.driver = False
        # Asynchronous driver executions: begin of the execute server call.
        self.pending_async: deque[int] = deque()


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
    """The ground truth of one run (one ``[NN_LA_PO]`` section, as the parser splits runs)."""

    index: int
    """0-based position among the runs the parser reports."""
    starting_app: str | None
    """Name of the app whose ``[NN_LA_PO]`` section started the run (None before any)."""
    processes: tuple[ProcessTruth, ...]
    """Per process, sorted by pid (app processes and driver processes)."""
    executions: int
    """``ANeuralNetworksExecution_create`` sections that ended in the run."""
    unreconstructable: Mapping[Cell, tuple[str, ...]]
    """Cells the trace cannot reconstruct, with the reasons."""

    def cell_ns(self, layer: Layer, phase: Phase) -> int:
        """Total of ``layer`` in ``phase`` over every process; ``PO`` of a layer other than
        the application is the sum of its main phases (as the parser's Total column)."""
        if phase is Phase.OVERALL and layer is not Layer.APPLICATION:
            direct = self._sum(layer, phase)
            if direct:
                return direct
            return sum(self._sum(layer, main) for main in _MAIN_PHASES)
        return self._sum(layer, phase)

    def _sum(self, layer: Layer, phase: Phase) -> int:
        return sum(p.totals_ns.get((layer, phase), 0) for p in self.processes)


class _Run:
    def __init__(self, index: int, starting_app: str | None) -> None:
        self.index = index
        self.starting_app = starting_app
        self.totals: dict[int, dict[Cell, int]] = {}
        self.executions = 0
        self.has_marks = False
        self.unreconstructable: dict[Cell, list[str]] = {}

    def flag(self, cells: Iterable[Cell], reason: str) -> None:
        for cell in cells:
            reasons = self.unreconstructable.setdefault(cell, [])
            if reason not in reasons:
                reasons.append(reason)


class GroundTruth:
    """A tracer observer that accounts, by construction, each layer's time per phase and run.

    Attach with ``tracer.add_observer(truth)``; after the tracer is closed,
    ``runs`` holds one ``RunTruth`` per run.
    """

    def __init__(self) -> None:
        self._threads: dict[SimThread, _Thread] = {}
        self._processes: dict[int, _Process] = {}
        self._runs: list[_Run] = [_Run(0, None)]
        self._seen_po = False
        self._closed = False
        self._dead_unpaired = 0
        self.runs: tuple[RunTruth, ...] = ()

    @property
    def executions_lost_to_dead_drivers(self) -> int:
        """Asynchronous executions whose driver died before notifying them."""
        return self._dead_unpaired

    # -- observer interface --------------------------------------------------

    def process(self, pid: int, name: str) -> None:
        """Remember the process's name."""
        proc = self._processes.get(pid)
        if proc is None:
            self._processes[pid] = _Process(pid, name)
        else:
            proc.name = name

    def _proc(self, pid: int) -> _Process:
        proc = self._processes.get(pid)
        if proc is None:
            proc = self._processes[pid] = _Process(pid, str(pid))
        return proc

    def _thread(self, thread: SimThread, ts: int) -> _Thread:
        state = self._threads.get(thread)
        if state is None:
            state = self._threads[thread] = _Thread(thread)
            state.last_ts = ts
        return state

    def _advance(self, state: _Thread, ts: int) -> None:
        """Credit [last_ts, ts) to the cells accruing on the thread."""
        elapsed = ts - state.last_ts
        if elapsed > 0 and state.cells:
            totals = self._runs[-1].totals.setdefault(state.pid, {})
            for cell in state.cells:
                totals[cell] = totals.get(cell, 0) + elapsed
        state.last_ts = ts

    def begin(self, ts_ns: int, thread: SimThread, info: SectionInfo) -> None:
        """A section starts."""
        kind, layer, phase, detail = info
        if kind is SectionKind.PLAIN and layer is Layer.APPLICATION and phase is Phase.OVERALL:
            self._new_run(ts_ns, detail)
        state = self._thread(thread, ts_ns)
        self._advance(state, ts_ns)
        proc = self._proc(state.pid)
        run = self._runs[-1]
        stack = state.stack
        parent = self._live_top(stack)
        section = _Section()
        section.label = f"{detail} ({thread.name} {thread.tid})"
        notify_client = False
        if kind is SectionKind.RAW:
            hidl = detail.split("::")
            layer, phase = None, None
            if len(hidl) == 4 and hidl[0] == "HIDL":
                _, iface, method, side = hidl
                callback = "notify" in method or iface == "IBurstCallback"
                if side == "client" and not callback:
                    layer, phase = Layer.IPC, _hidl_phase(iface, method)
                elif side == "server" and not callback:
                    layer, phase = _DEVICE, _hidl_phase(iface, method)
                    if iface in _DRIVER_INTERFACES:
                        proc.driver = True
                        run.has_marks = True
                        section.async_server = (
                            iface == "IPreparedModel" and method in _ASYNC_EXECUTE
                        )
                notify_client = (
                    side == "client"
                    and iface == "IExecutionCallback"
                    and method.startswith("notify")
                )
        else:
            run.has_marks = True
            if kind is SectionKind.SWITCH and stack:
                top = stack[-1]
                # [SW] ends the innermost section: it stays on the stack as a
                # placeholder that the scope's last end closes.
                if not top.placeholder:
                    parent = top.parent
                top.placeholder = True
        if notify_client and proc.pending_async:
            self._add_virtual(
                proc.pid, (_DEVICE, Phase.EXECUTION), ts_ns - proc.pending_async.popleft()
            )
        if layer is Layer.CPU:
            layer = _DEVICE
        if phase is Phase.UNSPECIFIED:
            phase = parent.phase if parent is not None else None
        if layer is not None and phase is not None:
            self._classify(section, kind, layer, phase, parent, proc)
            section.start_compute = layer is Layer.RUNTIME and detail in _START_COMPUTE
            section.event_wait = layer is Layer.RUNTIME and detail == _EVENT_WAIT
            section.execution_create = layer is Layer.RUNTIME and detail == _EXECUTION_CREATE
            if section.async_server and proc.driver:
                proc.pending_async.append(ts_ns)
            if parent is not None and self._view_differs(section, kind, parent, proc):
                # The parser dropped the parent at the run boundary and sees this
                # section at the top level, where it means something else.
                run.flag(
                    self._cells_of(section),
                    f"{section.label} opened under a section the run boundary cut",
                )
            if section.event_wait and section.accrues and state.pending_gaps:
                self._add_virtual(
                    state.pid,
                    (Layer.RUNTIME, Phase.EXECUTION),
                    ts_ns - state.pending_gaps.popleft(),
                )
        else:
            section.placeholder = kind is SectionKind.SWITCH
            section.layer = None
            section.parent = parent
        stack.append(section)
        state.cells = self._accruing(stack)

    def end(self, ts_ns: int, thread: SimThread) -> None:
        """The innermost section of the thread ends."""
        state = self._thread(thread, ts_ns)
        self._advance(state, ts_ns)
        if not state.stack:
            return
        section = state.stack.pop()
        if section.layer is Layer.RUNTIME and not section.placeholder and section.accrues:
            if section.start_compute:
                state.pending_gaps.append(ts_ns)
            if section.execution_create:
                self._runs[-1].executions += 1
        state.cells = self._accruing(state.stack)

    def process_died(self, pid: int) -> None:
        """A process died: its in-flight asynchronous executions will never notify.

        The contract pairs each ``execute*::server`` with the driver's
        ``IExecutionCallback::notify*::client``; a dead driver sends no notify, so its
        unpaired executions' driver time cannot be reconstructed (the client gets
        DEAD_OBJECT from its death recipient instead).
        """
        proc = self._processes.get(pid)
        if proc is None or not proc.pending_async:
            return
        reason = (
            f"driver process {proc.name} died with {len(proc.pending_async)} asynchronous "
            "execution(s) in flight: a dead driver never notifies, so the contract cannot pair them"
        )
        self._runs[-1].flag([(_DEVICE, Phase.EXECUTION), (Layer.CPU, Phase.EXECUTION)], reason)
        self._dead_unpaired += len(proc.pending_async)
        proc.pending_async.clear()

    def close(self) -> None:
        """No more events: freeze the runs."""
        if self._closed:
            return
        self._closed = True
        runs = [r for r in self._runs if r.starting_app is not None or r.has_marks]
        self.runs = tuple(self._freeze(index, run) for index, run in enumerate(runs))

    # -- rules ---------------------------------------------------------------

    @staticmethod
    def _live_top(stack: list[_Section]) -> _Section | None:
        for section in reversed(stack):
            if section.placeholder:
                continue
            if section.layer is None:
                continue
            return section
        return None

    def _classify(
        self,
        section: _Section,
        kind: SectionKind,
        layer: Layer,
        phase: Phase,
        parent: _Section | None,
        proc: _Process,
    ) -> None:
        section.layer, section.phase, section.parent = layer, phase, parent
        parent_phase = parent.phase if parent is not None else None
        parent_subphases = (
            _SUBPHASES.get(parent_phase, frozenset()) if parent_phase else frozenset()
        )
        copy_pe_layers: frozenset[Layer] = frozenset()
        if kind is SectionKind.SUBTRACT:
            section.deducts = True
            ancestor = parent
            while ancestor is not None and (ancestor.layer is not layer or ancestor.detail):
                ancestor = ancestor.parent
            section.copy = ancestor is None
        elif phase is Phase.INITIALIZATION and parent_phase is not Phase.INITIALIZATION:
            section.deducts = section.copy = True
        elif (
            parent is not None
            and parent.layer is Layer.APPLICATION
            and layer in (Layer.RUNTIME, Layer.IPC)
            and parent_phase is not phase
            and parent_phase is not Phase.OVERALL
            and phase not in _EXECUTION_FAMILY
        ):
            section.deducts = section.copy = True
            target = parent.parent.parent if parent.parent is not None else None
            if target is not None:
                if (
                    layer is target.layer
                    and phase not in _SUBPHASES.get(target.phase or phase, frozenset())
                    and not (
                        phase is Phase.INITIALIZATION and target.phase is not Phase.INITIALIZATION
                    )
                ):
                    section.copy = False
                copy_pe_layers = target.pe_layers
        section.detail = (
            parent is not None
            and layer is parent.layer
            and phase not in parent_subphases
            and not (phase is Phase.INITIALIZATION and parent_phase is not Phase.INITIALIZATION)
            and not section.deducts
        )
        section.accrues = not section.detail and not section.deducts and not section.async_server
        if parent is not None:
            section.covered = parent.covered
            pe_layers = parent.pe_layers
        else:
            section.covered = (
                layer is _DEVICE
                and kind is not SectionKind.RAW
                and proc.driver
                and bool(proc.pending_async)
            )
            pe_layers = frozenset()
        section.subphase_pe = (
            phase in EXECUTION_SUBPHASES and not section.covered and layer not in pe_layers
        )
        section.copy_pe = (
            phase in EXECUTION_SUBPHASES and not section.covered and layer not in copy_pe_layers
        )
        if phase is Phase.EXECUTION:
            pe_layers = pe_layers | {layer}
        section.pe_layers = pe_layers

    def _view_differs(
        self, section: _Section, kind: SectionKind, parent: _Section, proc: _Process
    ) -> bool:
        """Whether the section would mean something else at the top level."""
        if not parent.straddles:
            return False
        assert section.layer is not None
        assert section.phase is not None
        alone = _Section()
        alone.async_server = section.async_server
        self._classify(alone, kind, section.layer, section.phase, None, proc)
        return (alone.accrues, alone.copy, alone.subphase_pe, alone.covered) != (
            section.accrues,
            section.copy,
            section.subphase_pe,
            section.covered,
        )

    @staticmethod
    def _own_cells(section: _Section, full: bool) -> list[Cell]:
        assert section.layer is not None
        assert section.phase is not None
        cells: list[Cell] = []
        if not (section.covered and section.phase is Phase.EXECUTION):
            cells.append((section.layer, section.phase))
        if section.copy_pe if full else section.subphase_pe:
            cells.append((section.layer, Phase.EXECUTION))
        return cells

    def _cells_of(self, section: _Section) -> list[Cell]:
        if section.layer is None or section.phase is None:
            return []
        cells = [(section.layer, section.phase)]
        if section.phase in EXECUTION_SUBPHASES:
            cells.append((section.layer, Phase.EXECUTION))
        return cells

    def _accruing(self, stack: list[_Section]) -> tuple[Cell, ...]:
        """Cells that accrue time at an instant when ``stack`` is open."""
        live = [s for s in stack if not s.placeholder and s.layer is not None]
        cells: list[Cell] = []
        for index, section in enumerate(live):
            if section.copy:
                cells.extend(self._own_cells(section, full=True))
                continue
            if not section.accrues:
                continue
            blocked = False
            for child in live[index + 1 :]:
                if child.deducts:
                    blocked = True
                    break
                if not child.detail:
                    break
            if not blocked:
                cells.extend(self._own_cells(section, full=False))
        return tuple(cells)

    def _add_virtual(self, pid: int, cell: Cell, elapsed: int) -> None:
        if elapsed > 0:
            totals = self._runs[-1].totals.setdefault(pid, {})
            totals[cell] = totals.get(cell, 0) + elapsed

    # -- runs ------------------------------------------------------------------

    def _new_run(self, ts: int, app: str) -> None:
        if not self._seen_po:
            self._seen_po = True
            if not self._runs[-1].has_marks:
                self._runs[-1] = _Run(0, app)
                return
        old = self._runs[-1]
        new = _Run(old.index + 1, app)
        for state in self._threads.values():
            self._advance(state, ts)
            for section in state.stack:
                if section.placeholder or section.layer is None:
                    continue
                section.straddles = True
                reason = f"{section.label} is open across the start of run {new.index}"
                old.flag(self._cells_of(section), reason)
                new.flag(self._cells_of(section), reason)
            if state.pending_gaps:
                reason = f"an asynchronous execution on {state.thread.name} {state.thread.tid} spans the start of run {new.index}"
                cells = [(Layer.RUNTIME, Phase.EXECUTION)]
                old.flag(cells, reason)
                new.flag(cells, reason)
                state.pending_gaps.clear()
        for proc in self._processes.values():
            if proc.pending_async:
                reason = f"an asynchronous driver execution in {proc.name} spans the start of run {new.index}"
                cells = [(_DEVICE, Phase.EXECUTION), (Layer.CPU, Phase.EXECUTION)]
                old.flag(cells, reason)
                new.flag(cells, reason)
                proc.pending_async.clear()
        self._runs.append(new)

    def _freeze(self, index: int, run: _Run) -> RunTruth:
        processes = []
        for pid in sorted(run.totals):
            proc = self._proc(pid)
            totals: dict[Cell, int] = {}
            for (layer, phase), value in run.totals[pid].items():
                if layer is _DEVICE and not proc.driver:
                    layer = Layer.CPU
                key = (layer, phase)
                totals[key] = totals.get(key, 0) + value
            processes.append(
                ProcessTruth(
                    pid=pid,
                    name=proc.name,
                    kind="driver" if proc.driver else "app",
                    totals_ns=totals,
                )
            )
        unreconstructable: dict[Cell, tuple[str, ...]] = {}
        for (layer, phase), reasons in run.unreconstructable.items():
            phases = [phase]
            if phase in EXECUTION_SUBPHASES:
                phases.append(Phase.EXECUTION)
            if phase in _MAIN_PHASES or phase in EXECUTION_SUBPHASES:
                # A layer's overall time other than the application's is the sum
                # of its main phases.
                phases.append(Phase.OVERALL)
            layers = [layer, Layer.CPU] if layer is _DEVICE else [layer]
            named = [
                (named_layer, named_phase)
                for named_layer in layers
                for named_phase in phases
                if not (named_phase is Phase.OVERALL and named_layer is Layer.APPLICATION)
                or phase is Phase.OVERALL
            ]
            for cell in named:
                unreconstructable[cell] = tuple(
                    dict.fromkeys(unreconstructable.get(cell, ()) + tuple(reasons))
                )
        return RunTruth(
            index=index,
            starting_app=run.starting_app,
            processes=tuple(processes),
            executions=run.executions,
            unreconstructable=unreconstructable,
        )
