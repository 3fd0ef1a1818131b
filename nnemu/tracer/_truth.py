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

Runs are per client process, as the parser splits them: a ``[NN_LA_PO]``
begin starts a new run of that process.  Each section is credited to the run
of the client it serves: a client's own threads serve its current run; a
driver's binder thread serves the client whose synchronous HIDL call of the
same interface::method has waited longest (the observer sees events in the
trace's order, not in the calling task, so it pairs calls as the contract's
reader must); a driver's worker and burst server threads serve the client whose
launched work (prepareModel/execute*/configureExecutionBurst/executeFenced*) they
took on, oldest first, until its notification (executeFenced work, which has none, for
one top-level section and its [SW] sections).  A section (or asynchronous execution)
of a client still open when that client's next run starts is time the trace
cannot attribute (the parser drops it): its cells are recorded as not
reconstructable in both runs, with the reason.
"""

from __future__ import annotations

from collections import deque

from nnemu.sim import SimThread
from nnemu.tracer._events import SectionInfo, SectionKind
from nnemu.tracer._truth_records import (
    DEVICE,
    EVENT_WAIT,
    EXECUTION_CREATE,
    MAIN_PHASES,
    NOT_HIDL,
    START_COMPUTE,
    Cell,
    HidlMark,
    Launch,
    OpenSection,
    ProcessState,
    ProcessTruth,
    RunState,
    RunTruth,
    ThreadState,
    read_hidl,
)
from nnemu.tracer._vocab import EXECUTION_FAMILY, EXECUTION_SUBPHASES, SUBPHASES, Layer, Phase


class GroundTruth:
    """A tracer observer that accounts, by construction, each layer's time per phase and run.

    Attach with ``tracer.add_observer(truth)``; after the tracer is closed,
    ``runs`` holds one ``RunTruth`` per run.
    """

    def __init__(self) -> None:
        self._threads: dict[SimThread, ThreadState] = {}
        self._processes: dict[int, ProcessState] = {}
        # Sections before any [NN_LA_PO] (the first client to start a run adopts
        # them, as the parser does); afterwards the latest run started takes
        # what no client's call explains.
        self._orphan: RunState | None = RunState(0, None, None)
        self._latest: RunState = self._orphan
        self._runs: list[RunState] = [self._orphan]
        self._seq = 0
        # Synchronous HIDL client calls waiting for their server side, per call
        # name: [run, served or ended].
        self._waiting: dict[str, deque[list[object]]] = {}
        self._closed = False
        self._dead_unpaired = 0
        self._now = 0
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
            self._processes[pid] = ProcessState(pid, name)
        else:
            proc.name = name

    def _proc(self, pid: int) -> ProcessState:
        proc = self._processes.get(pid)
        if proc is None:
            proc = self._processes[pid] = ProcessState(pid, str(pid))
        return proc

    def _thread(self, thread: SimThread, ts: int) -> ThreadState:
        state = self._threads.get(thread)
        if state is None:
            state = self._threads[thread] = ThreadState(thread, self._latest)
            state.last_ts = ts
        return state

    def _advance(self, state: ThreadState, ts: int) -> None:
        """Credit [last_ts, ts) to the cells accruing on the thread, in the run it serves."""
        elapsed = ts - state.last_ts
        if elapsed > 0 and state.cells:
            totals = state.run.totals.setdefault(state.pid, {})
            for cell in state.cells:
                totals[cell] = totals.get(cell, 0) + elapsed
        state.last_ts = ts

    def _attribute(
        self,
        state: ThreadState,
        proc: ProcessState,
        kind: SectionKind,
        layer: Layer | None,
        detail: str,
    ) -> RunState:
        """The run a thread's sections serve, decided when its stack has no live section.

        A client's own threads serve its current run.  A driver's binder thread
        serves the client whose synchronous call of the same interface::method
        waits longest (calls are served in the order they are made).  A driver's worker
        or burst server thread serves the client whose launched work it took
        (prepareModel/execute*/configureExecutionBurst/executeFenced*, oldest first).
        """
        if proc.run is not None:
            return proc.run
        if kind is SectionKind.RAW and detail.endswith("::server"):
            state.binder = True
            waiting = self._waiting.get(detail[: -len("::server")])
            while waiting:
                call = waiting.popleft()
                served = call[0]
                assert isinstance(served, RunState)
                if not call[1] and not served.finished:
                    call[1] = True
                    return served
        elif proc.driver and not state.binder:
            claim = state.claim
            if claim is not None and claim.fenced and kind is not SectionKind.SWITCH:
                # Its fenced work ended with its top-level section (a [SW] goes on with it).
                if claim in proc.launches:
                    proc.launches.remove(claim)
                state.claim = claim = None
            if claim is None or claim not in proc.launches:
                state.claim = claim = None
                burst = layer is Layer.IPC
                for launch in proc.launches:
                    if not launch.claimed and launch.burst is burst:
                        launch.claimed = True
                        state.claim = claim = launch
                        break
            if claim is not None:
                return claim.run
        return self._latest

    def begin(self, ts_ns: int, thread: SimThread, info: SectionInfo) -> None:
        """A section starts."""
        kind, layer, phase, detail = info
        state = self._thread(thread, ts_ns)
        proc = self._proc(state.pid)
        if kind is SectionKind.PLAIN and layer is Layer.APPLICATION and phase is Phase.OVERALL:
            self._new_run(ts_ns, proc, detail)
        self._advance(state, ts_ns)
        stack = state.stack
        parent = self._live_top(stack)
        section = OpenSection()
        section.label = f"{detail} ({thread.name} {thread.tid})"
        hidl = NOT_HIDL
        if kind is SectionKind.RAW:
            hidl = read_hidl(detail, section, proc)
            layer, phase = hidl.layer, hidl.phase
        elif kind is SectionKind.SWITCH and stack:
            top = stack[-1]
            # [SW] ends the innermost section: it stays on the stack as a
            # placeholder that the scope's last end closes.
            if not top.placeholder:
                parent = top.parent
            top.placeholder = True
        if parent is None:
            state.run = self._attribute(state, proc, kind, layer, detail)
        run = state.run
        if kind is not SectionKind.RAW or proc.driver:
            run.has_marks = True
        if hidl.notify_client or hidl.prepare_notify:
            self._notify(state, proc, ts_ns, execute=hidl.notify_client)
        if layer is Layer.CPU:
            layer = DEVICE
        if phase is Phase.UNSPECIFIED:
            phase = parent.phase if parent is not None else None
        if layer is not None and phase is not None:
            self._classify(section, kind, layer, phase, parent, proc, state)
            self._note_opening(section, kind, parent, proc, state, detail, ts_ns, hidl)
        else:
            section.placeholder = kind is SectionKind.SWITCH
            section.layer = None
            section.parent = parent
        stack.append(section)
        state.cells = self._accruing(stack)
        self._track(state, ts_ns)

    def _note_opening(
        self,
        section: OpenSection,
        kind: SectionKind,
        parent: OpenSection | None,
        proc: ProcessState,
        state: ThreadState,
        detail: str,
        ts_ns: int,
        hidl: HidlMark,
    ) -> None:
        """A classified section opens: note the launches, HIDL calls, asynchronous-execution
        windows and run-boundary cuts it starts."""
        run = state.run
        layer = section.layer
        section.start_compute = layer is Layer.RUNTIME and detail in START_COMPUTE
        section.event_wait = layer is Layer.RUNTIME and detail == EVENT_WAIT
        section.execution_create = layer is Layer.RUNTIME and detail == EXECUTION_CREATE
        if hidl.launches_work and proc.driver:
            launch = Launch(
                run,
                ts_ns,
                execute=section.async_server,
                burst=hidl.burst,
                fenced=hidl.fenced,
                section=section,
            )
            proc.launches.append(launch)
            state.launch = launch
        elif layer is DEVICE and section.phase in EXECUTION_SUBPHASES:
            self._withdraw_fenced(section, proc, state)
        if kind is SectionKind.RAW and layer is Layer.IPC:
            call: list[object] = [run, False]
            self._waiting.setdefault(detail[: -len("::client")], deque()).append(call)
            section.call = call
        if section.start_compute and section.accrues:
            proc.windows[state] = proc.windows.get(state, 0) + 1
        if parent is not None and self._view_differs(section, kind, parent, proc, state):
            # The parser dropped the parent at the run boundary and sees this
            # section at the top level, where it means something else.
            run.flag(
                self._cells_of(section),
                f"{section.label} opened under a section the run boundary cut",
            )
        if section.event_wait and section.accrues and state.pending_gaps:
            self._add_virtual(
                run,
                state.pid,
                (Layer.RUNTIME, Phase.EXECUTION),
                ts_ns - state.pending_gaps.popleft()[0],
            )
        if (
            kind is SectionKind.PLAIN
            and layer is Layer.APPLICATION
            and section.phase is Phase.EXECUTION
        ):
            proc.la_pe.append(section)

    @staticmethod
    def _withdraw_fenced(section: OpenSection, proc: ProcessState, state: ThreadState) -> None:
        """A device execution sub-phase inside an executeFenced server call: the driver works
        inside the call, so no worker takes the call's launch."""
        launch = state.launch
        if launch is None or not launch.fenced or launch.claimed or launch not in proc.launches:
            return
        parent = section.parent
        while parent is not None and parent is not launch.section:
            parent = parent.parent
        if parent is not None:
            proc.launches.remove(launch)

    def _notify(self, state: ThreadState, proc: ProcessState, ts_ns: int, *, execute: bool) -> None:
        """A driver notifies a callback: the launched work it ends is done."""
        done = None
        for candidate in (state.claim, state.launch):
            if (
                candidate is not None
                and candidate.execute is execute
                and not candidate.fenced
                and candidate in proc.launches
            ):
                done = candidate
                break
        if done is None:
            done = next(
                (item for item in proc.launches if item.execute is execute and not item.fenced),
                None,
            )
            if done is None:
                return
        proc.launches.remove(done)
        if state.claim is done:
            state.claim = None
        if done.execute:
            self._add_virtual(done.run, proc.pid, (DEVICE, Phase.EXECUTION), ts_ns - done.start)

    def end(self, ts_ns: int, thread: SimThread) -> None:
        """The innermost section of the thread ends."""
        state = self._thread(thread, ts_ns)
        self._advance(state, ts_ns)
        if not state.stack:
            return
        section = state.stack.pop()
        if section.call is not None:
            section.call[1] = True  # a call never served must not pair with a later server
        if section.layer is Layer.RUNTIME and not section.placeholder and section.accrues:
            if section.start_compute:
                state.pending_gaps.append((ts_ns, self._window_owner(state)))
            if section.event_wait:
                windows = self._proc(state.pid).windows
                if windows.get(state):
                    windows[state] -= 1
            if section.execution_create:
                state.run.executions += 1
        state.cells = self._accruing(state.stack)
        self._track(state, ts_ns)
        proc = self._proc(state.pid)
        if section in proc.la_pe:
            proc.la_pe.remove(section)
            self._end_windows(section, state.pid, ts_ns)

    def _window_owner(self, state: ThreadState) -> OpenSection | None:
        """The ``[NN_LA_PE]`` whose end ends a startCompute's window if no Event_wait does:
        the thread's own, else its process's latest (a pipeline's stage thread)."""
        for section in reversed(state.stack):
            if section.layer is Layer.APPLICATION and section.phase is Phase.EXECUTION:
                return section
        la_pe = self._proc(state.pid).la_pe
        return la_pe[-1] if la_pe else None

    def _end_windows(self, la_pe: OpenSection, pid: int, ts_ns: int) -> None:
        """An app's execution ends: the windows it owns that no Event_wait ended (a
        startCompute* that failed returns no event) end with it (parser D-NOWAIT)."""
        windows = self._proc(pid).windows
        for state in self._threads.values():
            if state.pid != pid or not any(owner is la_pe for _, owner in state.pending_gaps):
                continue
            self._advance(state, ts_ns)
            for gap in [gap for gap in state.pending_gaps if gap[1] is la_pe]:
                state.pending_gaps.remove(gap)
                if windows.get(state):
                    windows[state] -= 1
                self._add_virtual(state.run, pid, (Layer.RUNTIME, Phase.EXECUTION), ts_ns - gap[0])
            self._track(state, ts_ns)

    def process_died(self, pid: int) -> None:
        """A process died: its in-flight asynchronous executions will never notify.

        The contract pairs each ``execute*::server`` with the driver's
        ``IExecutionCallback::notify*::client``; a dead driver sends no notify, so its
        unpaired executions' driver time cannot be reconstructed (the client gets
        DEAD_OBJECT from its death recipient instead).
        """
        proc = self._processes.get(pid)
        if proc is None:
            return
        pending = [launch for launch in proc.launches if launch.execute]
        proc.launches.clear()
        if not pending:
            return
        reason = (
            f"driver process {proc.name} died with {len(pending)} asynchronous "
            "execution(s) in flight: a dead driver never notifies, so the contract cannot pair them"
        )
        for launch in pending:
            launch.run.flag([(DEVICE, Phase.EXECUTION), (Layer.CPU, Phase.EXECUTION)], reason)
        self._dead_unpaired += len(pending)

    def _track(self, state: ThreadState, ts: int) -> None:
        """Note whether the thread accrues runtime time now, and for which run.

        It does while one of its open sections accrues a main phase of the
        runtime (the runtime's Total column) or an asynchronous execution
        waits between its startCompute and its Event_wait.
        """
        self._now = max(self._now, ts)
        busy = bool(state.pending_gaps) or any(
            layer is Layer.RUNTIME and phase in MAIN_PHASES for layer, phase in state.cells
        )
        run = state.run if busy else None
        if run is not state.busy_run:
            if state.busy_run is not None:
                state.busy_run.busy_change(ts, -1)
            if run is not None:
                run.busy_change(ts, +1)
            state.busy_run = run

    def close(self) -> None:
        """No more events: freeze the runs (in the order they start)."""
        if self._closed:
            return
        self._closed = True
        for state in self._threads.values():
            if state.busy_run is not None:
                state.busy_run.busy_change(self._now, -1)
                state.busy_run = None
        runs = [r for r in self._runs if r.starting_app is not None or r.has_marks]
        runs.sort(key=lambda run: run.seq)
        self.runs = tuple(self._freeze(index, run) for index, run in enumerate(runs))

    # -- rules ---------------------------------------------------------------

    @staticmethod
    def _live_top(stack: list[OpenSection]) -> OpenSection | None:
        for section in reversed(stack):
            if section.placeholder:
                continue
            if section.layer is None:
                continue
            return section
        return None

    def _classify(
        self,
        section: OpenSection,
        kind: SectionKind,
        layer: Layer,
        phase: Phase,
        parent: OpenSection | None,
        proc: ProcessState,
        state: ThreadState,
    ) -> None:
        section.layer, section.phase, section.parent = layer, phase, parent
        parent_phase = parent.phase if parent is not None else None
        parent_subphases = SUBPHASES.get(parent_phase, frozenset()) if parent_phase else frozenset()
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
            and phase not in EXECUTION_FAMILY
        ):
            section.deducts = section.copy = True
            target = parent.parent.parent if parent.parent is not None else None
            if target is not None:
                if (
                    layer is target.layer
                    and phase not in SUBPHASES.get(target.phase or phase, frozenset())
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
            section.covered = self._covered(kind, layer, proc, state)
            pe_layers = frozenset()
        covered = section.covered is layer
        section.subphase_pe = (
            phase in EXECUTION_SUBPHASES and not covered and layer not in pe_layers
        )
        section.copy_pe = (
            phase in EXECUTION_SUBPHASES and not covered and layer not in copy_pe_layers
        )
        if phase is Phase.EXECUTION:
            pe_layers = pe_layers | {layer}
        section.pe_layers = pe_layers

    @staticmethod
    def _covered(
        kind: SectionKind, layer: Layer, proc: ProcessState, state: ThreadState
    ) -> Layer | None:
        """The layer whose execution time is counted elsewhere, for a top-level section.

        A driver's device section while an asynchronous execution of the same
        client is pending on it (counted from the execute call to the notify); a
        burst server's IPC section (inside the client's burst controller call);
        a runtime section on another thread of an app with a startCompute..
        Event_wait window open (the window counts that wall-clock time).
        """
        if layer is DEVICE:
            if kind is not SectionKind.RAW and proc.driver:
                for launch in proc.launches:
                    if launch.execute and launch.run is state.run:
                        return DEVICE
        elif layer is Layer.IPC:
            if kind is not SectionKind.RAW and state.claim is not None and state.claim.burst:
                return Layer.IPC
        elif layer is Layer.RUNTIME:
            for other, count in proc.windows.items():
                if count and other is not state:
                    return Layer.RUNTIME
        return None

    def _view_differs(
        self,
        section: OpenSection,
        kind: SectionKind,
        parent: OpenSection,
        proc: ProcessState,
        state: ThreadState,
    ) -> bool:
        """Whether the section would mean something else at the top level."""
        if not parent.straddles:
            return False
        assert section.layer is not None
        assert section.phase is not None
        alone = OpenSection()
        alone.async_server = section.async_server
        self._classify(alone, kind, section.layer, section.phase, None, proc, state)
        return (alone.accrues, alone.copy, alone.subphase_pe, alone.covered) != (
            section.accrues,
            section.copy,
            section.subphase_pe,
            section.covered,
        )

    @staticmethod
    def _own_cells(section: OpenSection, full: bool) -> list[Cell]:
        assert section.layer is not None
        assert section.phase is not None
        cells: list[Cell] = []
        if not (section.covered is section.layer and section.phase is Phase.EXECUTION):
            cells.append((section.layer, section.phase))
        if section.copy_pe if full else section.subphase_pe:
            cells.append((section.layer, Phase.EXECUTION))
        return cells

    def _cells_of(self, section: OpenSection) -> list[Cell]:
        if section.layer is None or section.phase is None:
            return []
        cells = [(section.layer, section.phase)]
        if section.phase in EXECUTION_SUBPHASES:
            cells.append((section.layer, Phase.EXECUTION))
        return cells

    def _accruing(self, stack: list[OpenSection]) -> tuple[Cell, ...]:
        """Cells that accrue time at an instant when ``stack`` is open."""
        live = [s for s in stack if not s.placeholder and s.layer is not None]
        cells: list[Cell] = []
        for index, section in enumerate(live):
            if not section.copy and not section.accrues:
                continue
            blocked = False
            for child in live[index + 1 :]:
                if child.deducts:
                    blocked = True
                    break
                if not child.detail:
                    break
            if not blocked:
                # A moved section accrues in its own place, less what its own
                # children deduct (one-time initialisation inside it).
                cells.extend(self._own_cells(section, full=section.copy))
        return tuple(cells)

    @staticmethod
    def _add_virtual(run: RunState, pid: int, cell: Cell, elapsed: int) -> None:
        if elapsed > 0:
            totals = run.totals.setdefault(pid, {})
            totals[cell] = totals.get(cell, 0) + elapsed

    # -- runs ------------------------------------------------------------------

    def _new_run(self, ts: int, proc: ProcessState, app: str) -> None:
        """``proc``'s ``[NN_LA_PO]`` begins: its current run ends, a new one starts."""
        old = proc.run
        if old is None and self._orphan is not None:
            # Sections before the trace's first [NN_LA_PO] belong to the first run.
            run = self._orphan
            self._orphan = None
            run.starting_app, run.pid = app, proc.pid
            proc.run = self._latest = run
            return
        self._seq += 1
        new = RunState(self._seq, app, proc.pid)
        self._runs.append(new)
        proc.run = self._latest = new
        if old is None:
            return
        old.finished = True
        where = f"the start of {proc.name}'s next run"
        for state in self._threads.values():
            if state.run is not old:
                continue
            self._advance(state, ts)
            for section in state.stack:
                if section.placeholder or section.layer is None:
                    continue
                section.straddles = True
                reason = f"{section.label} is open across {where}"
                old.flag(self._cells_of(section), reason)
                new.flag(self._cells_of(section), reason)
            if state.pending_gaps:
                reason = (
                    f"an asynchronous execution on {state.thread.name} {state.thread.tid}"
                    f" spans {where}"
                )
                cells = [(Layer.RUNTIME, Phase.EXECUTION)]
                old.flag(cells, reason)
                new.flag(cells, reason)
                state.pending_gaps.clear()
            state.run = new
            self._track(state, ts)
        proc.windows.clear()
        for driver in self._processes.values():
            kept = []
            for launch in driver.launches:
                if launch.run is not old:
                    kept.append(launch)
                elif launch.execute:
                    reason = f"an asynchronous driver execution in {driver.name} spans {where}"
                    cells = [(DEVICE, Phase.EXECUTION), (Layer.CPU, Phase.EXECUTION)]
                    old.flag(cells, reason)
                    new.flag(cells, reason)
            driver.launches = kept

    def _freeze(self, index: int, run: RunState) -> RunTruth:
        processes = []
        for pid in sorted(run.totals):
            proc = self._proc(pid)
            totals: dict[Cell, int] = {}
            for (layer, phase), value in run.totals[pid].items():
                if layer is DEVICE and not proc.driver:
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
            if phase in MAIN_PHASES or phase in EXECUTION_SUBPHASES:
                # A layer's overall time other than the application's is the sum
                # of its main phases.
                phases.append(Phase.OVERALL)
            layers = [layer, Layer.CPU] if layer is DEVICE else [layer]
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
            pid=run.pid,
            processes=tuple(processes),
            executions=run.executions,
            unreconstructable=unreconstructable,
            runtime_wall_ns=run.runtime_wall,
        )
