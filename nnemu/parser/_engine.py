"""The streaming state machine that turns ``tracing_mark_write`` rows into totals.

Each thread has a stack of open sections.  A section's contribution is
computed when it closes, from what its frame carries: its start, its flags
(decided when it opened, from its parent) and the time its children asked it
to deduct.  Nothing else is kept per line, so memory is bounded by the open
sections, the per-thread accumulators and the per-name classification cache.

The rules follow AOSP ``parser/tree.py`` and ``parser/tracker.py`` (additional
detail, ``[SUB]``, one-time initialisation, runtime calls under the wrong
application phase) except where those deviate from the tracing contract; each
deviation is listed in ``docs/parser.md``.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Iterable
from typing import Final

from nnemu.parser._marks import Mark, classify
from nnemu.parser._model import (
    DetailItem,
    Diagnostic,
    RunStats,
    StatKey,
    ThreadDetail,
)
from nnemu.tracer import EXECUTION_FAMILY, EXECUTION_SUBPHASES, SUBPHASES, Layer, Phase

ROW_RE: Final = re.compile(
    r"\s*.+?-(\d+)\s+(?:\(\s*(-----|\d+)\)\s+)?\[\d+\](?:\s+\S+)?\s+(\d+)\.(\d+):"
    r" tracing_mark_write: ([BE])(.*)"
)
"""``TASK-TID ( TGID) [CPU] FLAGS SEC.FRAC: tracing_mark_write: B...|E...``;
the ``( TGID)`` column is optional (old systrace)."""

_FRACTION_SCALE: Final = tuple(10 ** (9 - n) if n <= 9 else 0 for n in range(16))
_MAX_DIAGNOSTICS: Final = 1000
_MAX_CACHED_NAMES: Final = 20_000

_SUBPHASES: Final = SUBPHASES
_NO_SUBPHASES: Final[frozenset[Phase]] = frozenset()
_EXECUTION_FAMILY: Final = EXECUTION_FAMILY
_LAYER_ORDER: Final[dict[Layer, frozenset[Layer]]] = {
    Layer.APPLICATION: frozenset({Layer.RUNTIME}),
    Layer.RUNTIME: frozenset({Layer.IPC, Layer.CPU}),
    Layer.IPC: frozenset({Layer.DRIVER}),
}
_NO_LAYERS: Final[frozenset[Layer]] = frozenset()
# LD and LC are one "device" layer inside a thread (AOSP swaps LD<->LC per
# process); the accumulated device time is named LD or LC when a run ends,
# once the process is known to be a driver or not.
_DEVICE: Final = Layer.DRIVER


def _ns(seconds: str, fraction: str) -> int:
    return int(seconds) * 1_000_000_000 + int(fraction) * _FRACTION_SCALE[len(fraction)]


class _Process:
    __slots__ = ("driver", "pending_async", "tgid")

    def __init__(self, tgid: str) -> None:
        self.tgid = tgid
        self.driver = False
        # Open asynchronous executions: (begin ns, app phase, thread, line number).
        self.pending_async: collections.deque[tuple[int, Phase, _Thread, int]] = collections.deque()


class _Frame:
    """An open counted section (opaque sections are ``None`` on the stack)."""

    __slots__ = (
        "acc_sub",
        "app_entry",
        "app_phase",
        "copy",
        "copy_detail",
        "copy_pe_layers",
        "counted",
        "covered",
        "detail",
        "layer",
        "line",
        "line_number",
        "mark",
        "parent",
        "payload",
        "pe_layers",
        "phase",
        "start",
        "subtract",
    )

    acc_sub: int
    app_entry: bool
    app_phase: Phase
    copy: bool
    copy_detail: bool
    copy_pe_layers: frozenset[Layer]
    counted: bool
    covered: bool
    detail: bool
    layer: Layer
    line: str
    line_number: int
    mark: Mark
    parent: _Frame | None
    payload: str
    pe_layers: frozenset[Layer]
    phase: Phase
    start: int
    subtract: bool


class _Thread:
    __slots__ = (
        "acc",
        "creates",
        "items",
        "la_pe",
        "proc",
        "sc_queue",
        "stack",
        "tid",
        "top",
        "tracked",
    )

    def __init__(self, tid: str, proc: _Process, keep_detail: bool) -> None:
        self.tid = tid
        self.proc = proc
        self.tracked = False
        self.stack: list[_Frame | None] = []
        self.top: _Frame | None = None
        self.acc: dict[StatKey, int] = {}
        self.creates: dict[Phase, int] = {}
        self.la_pe: dict[Phase, int] = {}
        self.sc_queue: collections.deque[tuple[Phase, int]] = collections.deque()
        self.items: list[DetailItem] | None = [] if keep_detail else None


class Engine:
    """Feed it trace lines; it emits one ``RunStats`` per ``[NN_LA_PO]`` run."""

    def __init__(self, *, keep_detail: bool = False) -> None:
        self.keep_detail = keep_detail
        self.runs: list[RunStats] = []
        self.diagnostics: list[Diagnostic] = []
        self.suppressed = 0
        self.saw_rows = False
        self.saw_nnapi = False
        self._threads: dict[str, _Thread] = {}
        self._procs: dict[str, _Process] = {}
        self._cache: dict[str, Mark] = {}
        self._app_stack: list[tuple[_Frame, Phase]] = []
        self._seen_po = False
        self._starting_mark = ""
        self._run_has_marks = False
        self._line_number = 0
        self._line = ""

    # -- diagnostics -------------------------------------------------------

    def warn(self, message: str, line_number: int | None = None, line: str | None = None) -> None:
        """Record a warning (at the current line unless told otherwise)."""
        self._report("warning", message, line_number, line)

    def error(self, message: str, line_number: int | None = None, line: str | None = None) -> None:
        """Record an error (at the current line unless told otherwise)."""
        self._report("error", message, line_number, line)

    def _report(
        self, severity: str, message: str, line_number: int | None, line: str | None
    ) -> None:
        if len(self.diagnostics) >= _MAX_DIAGNOSTICS:
            self.suppressed += 1
            return
        self.diagnostics.append(
            Diagnostic(
                line_number=self._line_number if line_number is None else line_number,
                severity="error" if severity == "error" else "warning",
                message=message,
                line=(self._line if line is None else line).rstrip("\r\n"),
            )
        )

    # -- input -------------------------------------------------------------

    def feed(self, numbered_lines: Iterable[tuple[int, str]]) -> None:
        """Process ftrace lines (with their 1-based line numbers)."""
        match = ROW_RE.match
        for line_number, line in numbered_lines:
            if "tracing_mark_write" not in line:
                continue
            m = match(line)
            if m is None:
                if "tracing_mark_write: B" in line or "tracing_mark_write: E" in line:
                    self._line_number, self._line = line_number, line
                    self.warn("malformed trace row: expected TASK-TID [CPU] FLAGS TIMESTAMP: ...")
                continue
            self.saw_rows = True
            tid, tgid, seconds, fraction, kind, rest = m.groups()
            self._line_number, self._line = line_number, line
            ts = int(seconds + fraction) * 1000 if len(fraction) == 6 else _ns(seconds, fraction)
            if kind == "B":
                self._begin(tid, tgid, ts, rest)
            else:
                self._end(tid, tgid, ts, rest)

    def _thread(self, tid: str, tgid: str | None) -> _Thread:
        thread = self._threads.get(tid)
        if thread is None or (tgid is not None and thread.proc.tgid != tgid):
            key = tgid if tgid is not None else tid
            proc = self._procs.get(key)
            if proc is None:
                proc = self._procs[key] = _Process(key)
            if thread is None:
                thread = self._threads[tid] = _Thread(tid, proc, self.keep_detail)
            else:
                thread.proc = proc
        return thread

    def _begin(self, tid: str, tgid_column: str | None, ts: int, rest: str) -> None:
        parts = rest.split("|", 2)
        if len(parts) < 3 or parts[0] or not parts[1].isdigit():
            thread = self._thread(tid, tgid_column if tgid_column != "-----" else None)
            if thread.tracked:
                self.warn("malformed begin mark: expected B|<tgid>|<name>")
            thread.stack.append(None)
            return
        tgid = tgid_column if tgid_column is not None and tgid_column != "-----" else parts[1]
        thread = self._thread(tid, tgid)
        name = parts[2]
        mark = self._cache.get(name)
        if mark is None:
            if len(self._cache) >= _MAX_CACHED_NAMES:
                self._cache.clear()
            mark = self._cache[name] = classify(name)
        if mark.tracks_thread:
            thread.tracked = True
            self._run_has_marks = True
            self.saw_nnapi = True
        if mark.driver_server:
            thread.proc.driver = True
        if mark.problem is not None:
            self.warn(mark.problem)
        stack = thread.stack
        if mark.switch:
            if stack:
                self._pop(thread, ts)
            elif thread.tracked:
                self.warn("[SW] mark with no open section to switch from")
            stack.append(None)
        layer = mark.layer
        if layer is None:
            if mark.execution_notify_client:
                self._notify(thread.proc, ts)
            stack.append(None)
            return
        phase = mark.phase
        if layer is Layer.APPLICATION and phase is Phase.OVERALL:
            if self._seen_po:
                self._finish_run(f"a new run starts at line {self._line_number}")
            self._seen_po = True
            self._starting_mark = "B" + rest
        self._open(thread, mark, layer, phase, ts, rest)

    def _open(
        self, thread: _Thread, mark: Mark, layer: Layer, phase: Phase | None, ts: int, rest: str
    ) -> None:
        parent = thread.top
        if phase is Phase.UNSPECIFIED:
            phase = parent.phase if parent is not None else None
        if phase is None:
            if not mark.hidl:
                self.warn("utility section (phase PU) outside any phase: not counted")
            thread.stack.append(None)
            return
        if layer is Layer.CPU:
            layer = _DEVICE
        proc = thread.proc
        app_phase = self._app_stack[-1][1] if self._app_stack else Phase.OVERALL
        parent_phase = parent.phase if parent is not None else None
        parent_subphases = (
            _SUBPHASES.get(parent_phase, _NO_SUBPHASES) if parent_phase else _NO_SUBPHASES
        )

        frame = _Frame()
        frame.acc_sub = 0
        frame.app_entry = False
        frame.copy = False
        frame.copy_detail = False
        frame.copy_pe_layers = _NO_LAYERS
        frame.subtract = False
        frame.start = ts
        frame.mark = mark
        frame.layer = layer
        frame.phase = phase
        frame.app_phase = app_phase
        frame.parent = parent
        frame.line_number = self._line_number
        frame.line = self._line
        frame.payload = "B" + rest

        # Sections in the wrong place are deducted from their parent and their
        # time is given to the right place (contract: [SUB], one-time
        # initialisation; AOSP: runtime/IPC calls under another LA phase).
        copy_target: _Frame | None = None
        if mark.subtract:
            frame.subtract = True
            ancestor = parent
            while ancestor is not None and (ancestor.layer is not layer or ancestor.detail):
                ancestor = ancestor.parent
            # An enclosing section of the same layer already counts this time.
            frame.copy = ancestor is None
        elif phase is Phase.INITIALIZATION and parent_phase is not Phase.INITIALIZATION:
            frame.subtract = True
            frame.copy = True
        elif (
            parent is not None
            and parent.layer is Layer.APPLICATION
            and (layer is Layer.RUNTIME or layer is Layer.IPC)
            and parent_phase is not phase
            and parent_phase is not Phase.OVERALL
            and phase not in _EXECUTION_FAMILY
        ):
            frame.subtract = True
            frame.copy = True
            copy_target = parent.parent
            if copy_target is not None:
                copy_target = copy_target.parent
        if frame.copy and copy_target is not None:
            frame.copy_detail = (
                layer is copy_target.layer
                and phase not in _SUBPHASES.get(copy_target.phase, _NO_SUBPHASES)
                and not (
                    phase is Phase.INITIALIZATION and copy_target.phase is not Phase.INITIALIZATION
                )
            )
            frame.copy_pe_layers = copy_target.pe_layers
        frame.detail = (
            parent is not None
            and layer is parent.layer
            and phase not in parent_subphases
            and not (phase is Phase.INITIALIZATION and parent_phase is not Phase.INITIALIZATION)
            and not frame.subtract
        )
        frame.counted = not frame.detail and not frame.subtract

        if parent is not None:
            frame.covered = parent.covered
            pe_layers = parent.pe_layers
            if (
                thread.tracked
                and not frame.subtract
                and not (phase is parent_phase and layer is parent.layer)
            ):
                self._check_nesting(thread, layer, phase, parent, parent_phase, parent_subphases)
        else:
            frame.covered = (
                layer is _DEVICE and not mark.hidl and proc.driver and bool(proc.pending_async)
            )
            pe_layers = _NO_LAYERS
        if phase is Phase.EXECUTION and layer not in pe_layers:
            pe_layers = pe_layers | {layer}
        frame.pe_layers = pe_layers

        thread.stack.append(frame)
        thread.top = frame
        if layer is Layer.APPLICATION:
            if phase is Phase.WARMUP or phase is Phase.BENCHMARK:
                self._app_stack.append((frame, phase))
                frame.app_entry = True
            elif phase is Phase.EXECUTION:
                thread.la_pe[app_phase] = thread.la_pe.get(app_phase, 0) + 1
        if mark.async_execute_server and proc.driver:
            proc.pending_async.append((ts, app_phase, thread, self._line_number))

    def _check_nesting(
        self,
        thread: _Thread,
        layer: Layer,
        phase: Phase,
        parent: _Frame,
        parent_phase: Phase | None,
        parent_subphases: frozenset[Phase],
    ) -> None:
        phase_ok = (
            parent_phase is None
            or phase is parent_phase
            or phase is Phase.INITIALIZATION
            or phase in parent_subphases
            or (phase in EXECUTION_SUBPHASES and Phase.EXECUTION in parent_subphases)
        )
        if not phase_ok:
            self.warn(f"phase {phase.value} nested in phase {parent_phase} is not allowed")
        driver = thread.proc.driver
        shown = Layer.CPU if layer is _DEVICE and not driver else layer
        parent_shown = Layer.CPU if parent.layer is _DEVICE and not driver else parent.layer
        layer_ok = (
            layer is Layer.UTILITY
            or layer is parent.layer
            or shown in _LAYER_ORDER.get(parent_shown, _NO_LAYERS)
        )
        if not layer_ok:
            self.warn(f"layer {shown.value} nested in layer {parent_shown.value} is not allowed")

    def _notify(self, proc: _Process, ts: int) -> None:
        if not proc.pending_async:
            return
        start, app_phase, thread, _ = proc.pending_async.popleft()
        self._add(thread, app_phase, _DEVICE, Phase.EXECUTION, ts - start, "async execute")

    def _end(self, tid: str, tgid_column: str | None, ts: int, rest: str) -> None:
        thread = self._threads.get(tid)
        if thread is None or not thread.stack:
            if thread is not None and thread.tracked:
                self.warn("end mark (E) with no open section on this thread")
            return
        self._pop(thread, ts)

    def _add(
        self, thread: _Thread, app_phase: Phase, layer: Layer, phase: Phase, value: int, what: str
    ) -> None:
        key = (app_phase, layer, phase)
        thread.acc[key] = thread.acc.get(key, 0) + value
        if thread.items is not None:
            thread.items.append(
                DetailItem(
                    mark=what,
                    elapsed_ms=value / 1_000_000,
                    tag=f"{app_phase.value}_{layer.value}_{phase.value}",
                )
            )

    def _pop(self, thread: _Thread, end: int) -> None:
        frame = thread.stack.pop()
        if frame is None:
            return
        thread.top = parent = frame.parent
        if frame.app_entry:
            for index in range(len(self._app_stack) - 1, -1, -1):
                if self._app_stack[index][0] is frame:
                    del self._app_stack[index]
                    break
        duration = end - frame.start
        if parent is not None:
            if frame.subtract:
                parent.acc_sub += duration
            elif frame.detail:
                parent.acc_sub += frame.acc_sub
        mark = frame.mark
        layer, phase, app_phase = frame.layer, frame.phase, frame.app_phase
        if mark.execution_create:
            thread.creates[app_phase] = thread.creates.get(app_phase, 0) + 1
        if frame.counted:
            # An asynchronous execute's server call only launches the work; the
            # driver's time is counted up to the callback notification instead.
            if not mark.async_execute_server:
                value = duration - frame.acc_sub
                if not (frame.covered and phase is Phase.EXECUTION):
                    self._add(thread, app_phase, layer, phase, value, frame.payload)
                if (
                    phase in EXECUTION_SUBPHASES
                    and not frame.covered
                    and (parent is None or layer not in parent.pe_layers)
                ):
                    self._add(thread, app_phase, layer, Phase.EXECUTION, value, frame.payload)
            if phase is Phase.EXECUTION:
                if mark.start_compute:
                    thread.sc_queue.append((app_phase, end))
                elif mark.event_wait and thread.sc_queue:
                    started_phase, started_end = thread.sc_queue.popleft()
                    gap = frame.start - started_end
                    if gap > 0:
                        self._add(
                            thread, started_phase, layer, phase, gap, "startCompute..Event_wait"
                        )
        if frame.copy and not frame.copy_detail:
            copied = frame.payload + " (moved)"
            if not (frame.covered and phase is Phase.EXECUTION):
                self._add(thread, app_phase, layer, phase, duration, copied)
            if (
                phase in EXECUTION_SUBPHASES
                and not frame.covered
                and layer not in frame.copy_pe_layers
            ):
                self._add(thread, app_phase, layer, Phase.EXECUTION, duration, copied)

    # -- runs --------------------------------------------------------------

    def _finish_run(self, why: str) -> None:
        for thread in self._threads.values():
            stack = thread.stack
            for index, frame in enumerate(stack):
                if frame is None:
                    continue
                if thread.tracked:
                    self.warn(
                        f"section still open when {why}; its time is not counted",
                        frame.line_number,
                        frame.line,
                    )
                stack[index] = None
            thread.top = None
            thread.sc_queue.clear()
        for proc in self._procs.values():
            for _, _, _, line_number in proc.pending_async:
                self.warn(
                    f"asynchronous execution never notified its callback before {why};"
                    " its driver time is not counted",
                    line_number,
                    "",
                )
            proc.pending_async.clear()
        self._app_stack.clear()
        if self._run_has_marks or self._starting_mark:
            self.runs.append(self._collect())
        self._run_has_marks = False
        self._starting_mark = ""

    def _collect(self) -> RunStats:
        totals: dict[StatKey, int] = {}
        creates: dict[Phase, int] = {}
        la_pe: dict[Phase, int] = {}
        detail: list[ThreadDetail] = []
        for thread in self._threads.values():
            if thread.tracked:
                device = Layer.DRIVER if thread.proc.driver else Layer.CPU
                for (app_phase, layer, phase), value in thread.acc.items():
                    key = (app_phase, device if layer is _DEVICE else layer, phase)
                    totals[key] = totals.get(key, 0) + value
                for app_phase, count in thread.creates.items():
                    creates[app_phase] = creates.get(app_phase, 0) + count
                for app_phase, count in thread.la_pe.items():
                    la_pe[app_phase] = la_pe.get(app_phase, 0) + count
                if thread.items:
                    detail.append(
                        ThreadDetail(
                            tid=thread.tid,
                            tgid=thread.proc.tgid,
                            is_driver=thread.proc.driver,
                            items=tuple(thread.items),
                        )
                    )
            thread.acc = {}
            thread.creates = {}
            thread.la_pe = {}
            if thread.items is not None:
                thread.items = []
        counts = {
            app: creates.get(app, 0) or la_pe.get(app, 0)
            for app in (Phase.OVERALL, Phase.WARMUP, Phase.BENCHMARK)
        }
        return RunStats.from_totals(
            starting_mark=self._starting_mark,
            totals_ns=totals,
            execution_counts=counts,
            detail=tuple(detail),
        )

    def finish(self) -> None:
        """End of input: close the last run."""
        self._line = ""
        self._finish_run("the trace ends")
        if self.suppressed:
            self.warn(f"{self.suppressed} more diagnostics not shown", 0, "")
