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

Rows are read by ``nnemu.trace``'s text reader (``row_batches`` with ``texts``: each row's
payload, tid and TGID column as written, its exact time and its line, read by the reader's
cached fast path or ``ROW_RE``), and JSON and Perfetto traces' events made alike
(``Engine._as_rows``): ``Engine._consume`` is the one loop over them all.

This module is the parser's hot loop and is longer than the others on purpose:
``_consume`` inlines the common open and close of a section (see the "inlined"
comments) so that a usual row costs no Python call, and the per-kind flags it
reads (``_Kind``), the frames (``_Frame``) and the runs (``_Run``) stay beside it,
where a change to one is seen with the loop that depends on its layout.
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Callable, Iterable, Iterator
from typing import Final, cast

import attrs

from nnemu.parser._model import (
    COMPUTE,
    MOVED,
    NEGATIVE_BY_CONTRACT,
    DetailItem,
    Diagnostic,
    NegativeCell,
    RunStats,
    StatKey,
    ThreadDetail,
    callees,
    ns_to_ms,
)
from nnemu.trace import BEGIN as EVENT_BEGIN
from nnemu.trace import END as EVENT_END
from nnemu.trace import HEAD as EVENT_HEAD
from nnemu.trace import LINES as EVENT_LINES
from nnemu.trace import (
    OPAQUE,
    Event,
    Mark,
    RowHead,
    atrace_tgid,
    classify,
    numbered_blocks,
    out_of_order_warning,
    row_batches,
    task_name,
)
from nnemu.trace import PROBLEM as EVENT_PROBLEM
from nnemu.trace import PROCESS as EVENT_PROCESS
from nnemu.trace import THREAD as EVENT_THREAD
from nnemu.tracer import EXECUTION_FAMILY, EXECUTION_SUBPHASES, SUBPHASES, Layer, Phase

BLOCK_ROWS: Final = 256
"""Lines per list of the text reader's events parse reads: so few that the events alive at
once (a list being made, the one being read) stay under the 700 allocations that start
Python's young garbage collection, which would otherwise walk them again and again
(4,096 a list cost a wheel's parse ~3 % more instructions)."""

_MAX_DIAGNOSTICS: Final = 1000
_MAX_CACHED_NAMES: Final = 20_000
_MAX_WAITING: Final = 10_000
"""HIDL client calls remembered per call name while they wait for a server."""

_SUBPHASES: Final = SUBPHASES
_MAIN_PHASES: Final = frozenset(
    {
        Phase.INITIALIZATION,
        Phase.PREPARATION,
        Phase.COMPILATION,
        Phase.EXECUTION,
        Phase.TERMINATION,
    }
)
_NO_SUBPHASES: Final[frozenset[Phase]] = frozenset()
_EXECUTION_FAMILY: Final = EXECUTION_FAMILY
_LAYER_ORDER: Final[dict[Layer, frozenset[Layer]]] = {
    Layer.APPLICATION: frozenset({Layer.RUNTIME}),
    Layer.RUNTIME: frozenset({Layer.IPC, Layer.CPU}),
    Layer.IPC: frozenset({Layer.DRIVER}),
}
_NO_LAYERS: Final[frozenset[Layer]] = frozenset()
_DEVICE_CALLEE: Final[dict[Layer, frozenset[Layer]]] = {
    Layer.RUNTIME: frozenset({Layer.DRIVER}),
    Layer.IPC: frozenset({Layer.DRIVER}),
}
"""Callers of the device layer (LC and LD are one layer, ``LD``, inside a thread)."""
# LD and LC are one "device" layer inside a thread (AOSP swaps LD<->LC per
# process); the accumulated device time is named LD or LC when a run ends,
# once the process is known to be a driver or not.
_DEVICE: Final = Layer.DRIVER
_FENCED_MOVED: Final[StatKey] = (MOVED, Layer.IPC, Phase.EXECUTION)
"""Where a worker's fenced execution time is kept for the IPC self time (``MOVED``)."""


_E_ENTRY: Final[tuple[str, str, str, Mark, str, bool]] = ("E", "", "", OPAQUE, "", False)
"""``Engine._tail`` of every ``E`` row."""

_READ_PHASES: Final = frozenset({"B", "E", "M"})
"""The JSON phases parse reads: a ``PROBLEM`` of another (its ``extra``) is not said."""


def _printable(text: str, limit: int = 200) -> str:
    """``text`` for a one-line message: control and line-breaking characters escaped, cut."""
    if not text.isprintable():
        text = "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)
    return text if len(text) <= limit else text[:limit] + "..."


class _Process:
    __slots__ = ("driver", "launches", "name", "run", "tgid", "windows")

    windows: int
    """Open asynchronous runtime executions (startCompute..Event_wait) of the process."""

    def __init__(self, tgid: str) -> None:
        self.tgid = tgid
        self.name = ""
        self.driver = False
        # The current run of a client process (None until its first [NN_LA_PO]).
        self.run: _Run | None = None
        # Work launched by prepareModel/execute* server calls, until its notify.
        self.launches: list[_Launch] = []
        self.windows = 0


class _Acc:
    """What one thread contributed to one run."""

    __slots__ = ("acc", "app_stack", "creates", "fenced", "items", "la_pe", "run", "thread")

    def __init__(self, run: _Run, thread: _Thread, keep_detail: bool) -> None:
        self.run = run
        self.app_stack = run.app_stack
        self.thread = thread
        self.fenced = False
        """A driver worker's fenced work: its device execution time is outside any IPC call."""
        self.acc: dict[StatKey, int] = {}
        self.creates: dict[Phase, int] = {}
        self.la_pe: dict[Phase, int] = {}
        self.items: list[DetailItem] | None = [] if keep_detail else None


class _Run:
    """A run of one client process: from its ``[NN_LA_PO]`` to the next one."""

    __slots__ = (
        "accs",
        "app_stack",
        "busy",
        "busy_since",
        "finished",
        "line",
        "line_number",
        "po_frame",
        "proc",
        "runtime_settled",
        "runtime_sum",
        "runtime_union",
        "seq",
        "starting_mark",
    )

    busy: int
    """Runtime intervals of the run under way now (see ``_busy_open``)."""
    busy_since: int
    """When ``busy`` last left 0."""
    runtime_union: int
    """Wall-clock time during which at least one runtime interval was under way (closed stretches)."""
    runtime_sum: int
    """Sum of the closed runtime intervals' lengths (open ones enter with minus their start)."""
    runtime_settled: int
    """``runtime_sum`` when ``busy`` last fell to 0 (the intervals of finished stretches)."""

    def __init__(self, proc: _Process | None, seq: int) -> None:
        self.proc = proc
        self.seq = seq
        self.starting_mark = ""
        self.line_number = 0
        self.line = ""
        self.accs: dict[_Thread, _Acc] = {}
        self.app_stack: list[tuple[_Frame, Phase]] = []
        self.po_frame: _Frame | None = None
        self.finished = False
        self.busy = 0
        self.busy_since = 0
        self.runtime_union = 0
        self.runtime_sum = 0
        self.runtime_settled = 0


def _busy_open(run: _Run, ts: int) -> None:
    """A counted runtime interval of ``run`` starts at ``ts``.

    The runtime's counted time (its top-level sections less what they deduct,
    and the asynchronous startCompute..Event_wait gaps) is a set of intervals
    on the client's threads; the run keeps how many are under way, so the
    wall-clock time covered by at least one (their union) costs O(1) a row.
    """
    run.runtime_sum -= ts
    if run.busy == 0:
        run.busy_since = ts
    run.busy += 1


def _busy_close(run: _Run, ts: int) -> None:
    """A counted runtime interval of ``run`` ends at ``ts``."""
    if run.busy <= 0:
        return
    run.runtime_sum += ts
    run.busy -= 1
    if run.busy == 0:
        run.runtime_union += max(0, ts - run.busy_since)
        run.runtime_settled = run.runtime_sum


class _Gap:
    """An asynchronous execution's startCompute end, waiting for its Event_wait."""

    __slots__ = ("app_phase", "end", "holder", "open", "owner")

    def __init__(self, app_phase: Phase, end: int, holder: _Acc, owner: _Frame | None) -> None:
        self.app_phase = app_phase
        self.end = end
        self.holder = holder
        self.open = True
        """Its runtime interval is under way (until the Event_wait begins)."""
        self.owner = owner
        """The ``[NN_LA_PE]`` whose end ends it: its thread's, else the latest of its process."""


class _Launch:
    """Work a driver's prepareModel/execute*/executeFenced server call launched for a client."""

    __slots__ = (
        "app_phase",
        "burst",
        "claimed",
        "execute",
        "fenced",
        "holder",
        "line_number",
        "start",
    )

    def __init__(
        self,
        holder: _Acc,
        start: int,
        app_phase: Phase,
        line_number: int,
        *,
        execute: bool,
        burst: bool,
        fenced: bool = False,
    ) -> None:
        self.holder = holder
        self.start = start
        self.app_phase = app_phase
        self.execute = execute
        self.burst = burst
        """A burst server thread (its ``[NN_LI_*]`` sections) serves one client for good."""
        self.fenced = fenced
        """An ``executeFenced`` whose work a worker thread does in one top-level section (no
        notify ends it)."""
        self.line_number = line_number
        self.claimed: _Thread | None = None


class _Kind:
    """What an open counted section is, decided from its mark and its parent's kind.

    Everything here follows from the mark and the chain of enclosing counted
    sections alone, so it is computed once per distinct (parent kind, name)
    and shared by every section opened in that place (``children``).
    """

    __slots__ = (
        "app_entry",
        "children",
        "counted",
        "detail",
        "event_wait",
        "execution_create",
        "fenced_inline",
        "fenced_server",
        "hidl_client",
        "is_pe",
        "la_pe",
        "layer",
        "may_cover",
        "may_warn",
        "moved",
        "moved_from_caller",
        "moved_pe",
        "nondetail_layers",
        "own_add",
        "own_pe",
        "parent",
        "pe_layers",
        "phase",
        "plain_close",
        "po",
        "prepare_server",
        "queue_async",
        "rt_busy",
        "rt_close_plain",
        "rt_cover_stops",
        "rt_open_plain",
        "rt_pause",
        "rt_top",
        "rt_wait_open",
        "special_open",
        "start_compute",
        "subtract",
        "warn_driver",
        "warn_other",
    )

    app_entry: bool
    """``[NN_LA_PWU]``/``[NN_LA_PBM]``: sets the application phase until it closes."""
    children: dict[str, _Kind]
    """Kinds of the sections opened directly inside this one, by mark name."""
    counted: bool
    """The section's own time is counted (not additional detail, not deducted)."""
    detail: bool
    """Additional detail of the same layer as the parent."""
    event_wait: bool
    """Counted ``ANeuralNetworksEvent_wait`` execution section."""
    execution_create: bool
    """``ANeuralNetworksExecution_create``."""
    fenced_inline: bool
    """A device execution sub-phase inside an ``executeFenced`` server call: the driver works
    inside the call, so no worker thread takes the call's launch."""
    fenced_server: bool
    """Server side of ``executeFenced`` (launches work that a worker thread may take)."""
    hidl_client: bool
    """Client side of a HIDL call (waits for the server side it pairs with)."""
    po: bool
    """``[NN_LA_PO]``: the section that makes a run."""
    prepare_server: bool
    """Server side of ``IDevice::prepareModel*`` (launches work for a client)."""
    is_pe: bool
    """The phase is ``PE`` (not counted again under an asynchronous execution)."""
    la_pe: bool
    """``[NN_LA_PE]``: counts an application execution."""
    layer: Layer
    """Layer (``LC`` folded into the device layer ``LD``)."""
    may_cover: bool
    """A top-level device or runtime section whose execution time may be counted already."""
    may_warn: bool
    """Its nesting is reported in an NNAPI thread (``warn_driver``/``warn_other``)."""
    moved: bool
    """Deducted from the parent and its time given to the right place."""
    moved_from_caller: bool
    """Deducted from a parent of the layer that calls its layer (kept for the Total column)."""
    moved_pe: bool
    """The moved time also counts as ``PE`` of its layer."""
    nondetail_layers: frozenset[Layer]
    """Layers of the non-detail sections of the chain, this one included."""
    own_add: bool
    """Counted and not an asynchronous execute's server call."""
    own_pe: bool
    """An execution sub-phase whose time also counts as ``PE`` of its layer."""
    parent: _Kind | None
    """Kind of the enclosing counted section."""
    plain_close: bool
    """Closing it only adds its own time (the common case, inlined in ``feed``)."""
    pe_layers: frozenset[Layer]
    """Layers of the ``PE`` sections of the chain, this one included."""
    phase: Phase
    """Phase (``PU`` resolved against the parent)."""
    queue_async: bool
    """Server side of an asynchronous ``execute*`` call."""
    rt_busy: bool
    """An ``rt_top`` section that adds to the runtime's Total (unless another thread's
    window covers its execution time)."""
    rt_pause: bool
    """Deducted from an enclosing runtime section without being counted as runtime time:
    the runtime's counted time pauses while it is open."""
    rt_close_plain: bool
    """An ``rt_top`` section whose close has nothing else special about it but perhaps
    counting an execution (inlined)."""
    rt_cover_stops: bool
    """Another thread's window covering it stops it adding to the runtime's Total."""
    rt_open_plain: bool
    """An ``rt_top`` section whose open has nothing else special about it (inlined)."""
    rt_wait_open: bool
    """An ``rt_top`` Event_wait with nothing else special about its open (its gap ends)."""
    rt_top: bool
    """A runtime section with no runtime section around it (an interval of the runtime's
    counted time when ``rt_busy``)."""
    special_open: bool
    """Opening it has work beyond pushing a frame (``app_entry``, ``la_pe``, ``po``, calls
    that launch work or wait for a server, runtime intervals)."""
    start_compute: bool
    """Counted ``ANeuralNetworksExecution_startCompute*`` execution section."""
    subtract: bool
    """Deducted from the parent (``[SUB]``, moved sections)."""
    warn_driver: tuple[str, ...]
    """Nesting diagnostics when the thread's process is a driver."""
    warn_other: tuple[str, ...]
    """Nesting diagnostics otherwise."""


class _Frame:
    """An open counted section (opaque sections are ``None`` on the stack)."""

    __slots__ = (
        "acc_sub",
        "app_phase",
        "busy",
        "covered",
        "holder",
        "kind",
        "line",
        "line_number",
        "parent",
        "payload",
        "start",
    )

    acc_sub: int
    app_phase: Phase
    busy: bool
    """An ``rt_top`` section whose interval counts, or an ``rt_pause`` section that paused one
    (set only on those)."""
    covered: Layer | None
    """The layer whose execution time another section already counts (else None)."""
    holder: _Acc
    """Where the section's time goes: its thread's share of the run it serves."""
    kind: _Kind
    line: str
    line_number: int
    parent: _Frame | None
    payload: str
    start: int


def _make_kind(mark: Mark, parent: _Kind | None) -> _Kind | None:
    """The rules of the contract and of Android's tree rewriting, from the parent alone."""
    layer = mark.layer
    assert layer is not None
    phase = mark.phase
    if phase is Phase.UNSPECIFIED:
        phase = parent.phase if parent is not None else None
    if phase is None:
        return None
    if layer is Layer.CPU:
        layer = _DEVICE
    parent_phase = parent.phase if parent is not None else None
    parent_subphases = (
        _SUBPHASES.get(parent_phase, _NO_SUBPHASES) if parent_phase else _NO_SUBPHASES
    )
    subtract, moved, moved_pe = _placement(mark, parent, layer, phase)
    detail = (
        parent is not None
        and layer is parent.layer
        and phase not in parent_subphases
        and not (phase is Phase.INITIALIZATION and parent_phase is not Phase.INITIALIZATION)
        and not subtract
    )
    counted = not detail and not subtract
    pe_layers = parent.pe_layers if parent is not None else _NO_LAYERS
    if phase is Phase.EXECUTION and layer not in pe_layers:
        pe_layers = pe_layers | {layer}
    nondetail_layers = parent.nondetail_layers if parent is not None else _NO_LAYERS
    if not detail and layer not in nondetail_layers:
        nondetail_layers = nondetail_layers | {layer}
    warn_driver: tuple[str, ...] = ()
    warn_other: tuple[str, ...] = ()
    if (
        parent is not None
        and not subtract
        and not (phase is parent_phase and layer is parent.layer)
    ):
        warn_driver = _nesting_problems(layer, phase, parent.layer, parent_phase, True)
        warn_other = _nesting_problems(layer, phase, parent.layer, parent_phase, False)

    kind = _Kind()
    kind.parent = parent
    kind.children = {}
    kind.layer = layer
    kind.phase = phase
    kind.detail = detail
    kind.subtract = subtract
    kind.counted = counted
    kind.moved = moved
    kind.moved_pe = moved_pe
    kind.pe_layers = pe_layers
    kind.nondetail_layers = nondetail_layers
    kind.warn_driver = warn_driver
    kind.warn_other = warn_other
    kind.may_warn = bool(warn_driver or warn_other)
    _set_roles(kind, mark)
    _set_shortcuts(kind)
    return kind


def _placement(
    mark: Mark, parent: _Kind | None, layer: Layer, phase: Phase
) -> tuple[bool, bool, bool]:
    """Whether a section is in the wrong place: ``subtract``, ``moved`` and ``moved_pe``.

    Sections in the wrong place are deducted from their parent and their time
    is given to the right place (contract: [SUB], one-time initialisation;
    AOSP: runtime/IPC calls under another LA phase).
    """
    parent_phase = parent.phase if parent is not None else None
    subtract = copy = copy_detail = False
    copy_pe_layers = _NO_LAYERS
    copy_target: _Kind | None = None
    if mark.subtract:
        subtract = True
        # An enclosing section of the same layer already counts this time.
        copy = parent is None or layer not in parent.nondetail_layers
    elif phase is Phase.INITIALIZATION and parent_phase is not Phase.INITIALIZATION:
        subtract = copy = True
    elif (
        parent is not None
        and parent.layer is Layer.APPLICATION
        and (layer is Layer.RUNTIME or layer is Layer.IPC)
        and parent_phase is not phase
        and parent_phase is not Phase.OVERALL
        and phase not in _EXECUTION_FAMILY
    ):
        subtract = copy = True
        copy_target = parent.parent
        if copy_target is not None:
            copy_target = copy_target.parent
    if copy and copy_target is not None:
        copy_detail = (
            layer is copy_target.layer
            and phase not in _SUBPHASES.get(copy_target.phase, _NO_SUBPHASES)
            and not (
                phase is Phase.INITIALIZATION and copy_target.phase is not Phase.INITIALIZATION
            )
        )
        copy_pe_layers = copy_target.pe_layers
    moved = copy and not copy_detail
    moved_pe = phase in EXECUTION_SUBPHASES and layer not in copy_pe_layers
    return subtract, moved, moved_pe


def _set_roles(kind: _Kind, mark: Mark) -> None:
    """What opening and closing the section does, from its placement (set already)."""
    parent = kind.parent
    layer = kind.layer
    phase = kind.phase
    counted = kind.counted
    kind.app_entry = layer is Layer.APPLICATION and (
        phase is Phase.WARMUP or phase is Phase.BENCHMARK
    )
    kind.la_pe = layer is Layer.APPLICATION and phase is Phase.EXECUTION
    kind.moved_from_caller = (
        kind.subtract
        and parent is not None
        and parent.layer is not Layer.APPLICATION
        and layer is not parent.layer
        and layer
        in _LAYER_ORDER.get(parent.layer, _NO_LAYERS) | _DEVICE_CALLEE.get(parent.layer, _NO_LAYERS)
    )
    kind.may_cover = (layer is _DEVICE and not mark.hidl) or (
        (layer is Layer.RUNTIME or layer is Layer.IPC) and parent is None
    )
    kind.queue_async = mark.async_execute_server
    kind.prepare_server = mark.prepare_server
    kind.fenced_server = mark.fenced_server
    kind.fenced_inline = layer is _DEVICE and phase in EXECUTION_SUBPHASES and _in_fenced_call(kind)
    kind.hidl_client = mark.hidl_client
    kind.po = layer is Layer.APPLICATION and phase is Phase.OVERALL
    kind.execution_create = mark.execution_create
    kind.is_pe = phase is Phase.EXECUTION
    kind.own_add = counted and not mark.async_execute_server
    kind.own_pe = phase in EXECUTION_SUBPHASES and (parent is None or layer not in parent.pe_layers)
    kind.start_compute = counted and phase is Phase.EXECUTION and mark.start_compute
    kind.event_wait = (
        counted and phase is Phase.EXECUTION and not mark.start_compute and mark.event_wait
    )
    kind.rt_top = layer is Layer.RUNTIME and (
        parent is None or Layer.RUNTIME not in parent.nondetail_layers
    )
    # Its own time adds to one of the runtime's main phases (the Total column).
    kind.rt_busy = (
        kind.rt_top
        and (counted or kind.moved)
        and (phase in _MAIN_PHASES or phase in EXECUTION_SUBPHASES)
    )
    kind.rt_pause = (
        parent is not None
        and parent.layer is Layer.RUNTIME
        and kind.subtract
        and not (layer is Layer.RUNTIME and kind.moved)
    )
    kind.rt_cover_stops = kind.is_pe or phase in EXECUTION_SUBPHASES


def _in_fenced_call(kind: _Kind) -> bool:
    """Whether an enclosing section of ``kind`` is an ``executeFenced`` server call."""
    parent = kind.parent
    while parent is not None:
        if parent.fenced_server:
            return True
        parent = parent.parent
    return False


def _own_la_pe(frame: _Frame) -> _Frame | None:
    """The ``[NN_LA_PE]`` around ``frame`` on its own thread (None when there is none)."""
    parent = frame.parent
    while parent is not None:
        if parent.kind.la_pe:
            return parent
        parent = parent.parent
    return None


def _latest_la_pe(run: _Run, proc: _Process) -> _Frame | None:
    """The ``[NN_LA_PE]`` of ``proc``'s threads in ``run`` that began last and is still open."""
    latest = None
    for thread in run.accs:
        if thread.proc is not proc:
            continue
        for frame in thread.stack:
            if (
                frame is not None
                and frame.kind.la_pe
                and (latest is None or frame.start > latest.start)
            ):
                latest = frame
    return latest


def _set_shortcuts(kind: _Kind) -> None:
    """The flags ``feed`` tests to open or close the common sections inline (roles set already)."""
    # Work beyond the runtime's interval when the section opens or closes.
    opens_work = (
        kind.app_entry
        or kind.la_pe
        or kind.queue_async
        or kind.prepare_server
        or kind.fenced_server
        or kind.fenced_inline
        or kind.po
        or kind.start_compute
        or kind.hidl_client
        or kind.event_wait
    )
    # (Beyond counting an execution, which feed's inlined runtime close does too.)
    closes_work = (
        kind.app_entry
        or kind.moved_from_caller
        or kind.po
        or kind.start_compute
        or kind.event_wait
        or kind.moved
    )
    kind.special_open = opens_work or kind.rt_top or kind.rt_pause
    kind.plain_close = not (
        closes_work or kind.la_pe or kind.execution_create or kind.rt_top or kind.rt_pause
    )
    # Runtime sections with nothing special about them but their interval (and
    # an Execution_create's count): feed opens and closes them inline.
    kind.rt_open_plain = kind.rt_top and not opens_work
    kind.rt_wait_open = kind.rt_top and kind.event_wait
    kind.rt_close_plain = kind.rt_top and not closes_work


def _nesting_problems(
    layer: Layer, phase: Phase, parent_layer: Layer, parent_phase: Phase | None, driver: bool
) -> tuple[str, ...]:
    """Diagnostics for nesting the contract forbids (the section is still counted)."""
    problems: list[str] = []
    parent_subphases = (
        _SUBPHASES.get(parent_phase, _NO_SUBPHASES) if parent_phase else _NO_SUBPHASES
    )
    phase_ok = (
        parent_phase is None
        or phase is parent_phase
        or phase is Phase.INITIALIZATION
        or phase in parent_subphases
        or (phase in EXECUTION_SUBPHASES and Phase.EXECUTION in parent_subphases)
    )
    if not phase_ok:
        problems.append(f"phase {phase.value} nested in phase {parent_phase} is not allowed")
    shown = Layer.CPU if layer is _DEVICE and not driver else layer
    parent_shown = Layer.CPU if parent_layer is _DEVICE and not driver else parent_layer
    layer_ok = (
        layer is Layer.UTILITY
        or layer is parent_layer
        or shown in _LAYER_ORDER.get(parent_shown, _NO_LAYERS)
    )
    if not layer_ok:
        problems.append(f"layer {shown.value} nested in layer {parent_shown.value} is not allowed")
    return tuple(problems)


def _forget_children(roots: dict[str, _Kind]) -> None:
    """Empty the kind cache (kinds of open sections stay valid, without children)."""
    pending = list(roots.values())
    roots.clear()
    while pending:
        kind = pending.pop()
        pending.extend(kind.children.values())
        kind.children.clear()


class _Thread:
    __slots__ = (
        "binder",
        "claim",
        "last_ts",
        "launch",
        "proc",
        "sc_queue",
        "seq",
        "stack",
        "task",
        "tid",
        "top",
        "tracked",
        "windows",
    )

    def __init__(self, tid: str, proc: _Process, seq: int) -> None:
        self.tid = tid
        self.proc = proc
        self.seq = seq
        self.task = ""
        self.tracked = False
        self.binder = False
        self.last_ts = -1
        """The latest timestamp of its rows so far, in file order (-1: none yet)."""
        self.stack: list[_Frame | None] = []
        self.top: _Frame | None = None
        # startCompute ends waiting for their Event_wait.
        self.sc_queue: collections.deque[_Gap] = collections.deque()
        # The launch a worker thread works on, and the launch a server call made.
        self.claim: _Launch | None = None
        self.launch: _Launch | None = None
        # Open startCompute..Event_wait windows of this thread.
        self.windows = 0


def _negative_cell(cell: NegativeCell) -> str:
    """The warning for a negative cell: which cell, and why it is negative."""
    table, layer, column, self_time, value = cell
    if column == Phase.OVERALL.value:
        column = "Total"
    elif column == COMPUTE:
        column = "Compute (PE less PIO and PR)"
    kind = "self time" if self_time else "total time"
    where = "" if table is Phase.OVERALL else f" in the {table.value} table"
    below = "/".join(callee.value for callee in callees(layer))
    if not self_time:
        why = "its I/O and results sections outlast its execution ones (edited or reordered?)"
    elif layer is Layer.APPLICATION or not below:
        why = "its rows do not nest as NNAPI writes them (edited or reordered?)"
    else:
        why = (
            f"the {below} time it subtracts outlasts its own sections (work below it after"
            " the call returned: a fenced or asynchronous execution's driver work, a [SUB]"
            f" section, or rows edited); {NEGATIVE_BY_CONTRACT}"
        )
    return (
        f"{layer.value} {column} {kind}{where} of the run that starts here is negative"
        f" ({value:.3f} ms): {why}"
    )


def _drop_open_frames(stack: list[_Frame | None], top: _Frame) -> list[_Frame]:
    """Replace the open frames on ``stack`` (``top`` and its parents) by ``None``; return them.

    The frames on a thread's stack are exactly ``top``'s chain of parents (opaque
    sections are ``None`` between them, and earlier dropped frames ``None`` below
    them), so the walk stops at the lowest one instead of at the bottom of a stack
    that unclosed sections keep growing.  Returns them bottom first.
    """
    left = 0
    frame: _Frame | None = top
    while frame is not None:
        left += 1
        frame = frame.parent
    dropped: list[_Frame] = []
    index = len(stack) - 1
    while left and index >= 0:
        entry = stack[index]
        if entry is not None:
            dropped.append(entry)
            stack[index] = None
            left -= 1
        index -= 1
    dropped.reverse()
    return dropped


class Engine:
    """Feed it trace lines; it emits one ``RunStats`` per ``[NN_LA_PO]`` run."""

    def __init__(
        self, *, keep_detail: bool = False, on_run: Callable[[int, RunStats], None] | None = None
    ) -> None:
        self.keep_detail = keep_detail
        # Where a finished run goes (with its start order); None keeps it in ``runs``.
        self._on_run = on_run
        self.runs: list[RunStats] = []
        self.diagnostics: list[Diagnostic] = []
        self.suppressed = 0
        self.saw_rows = False
        self.saw_nnapi = False
        self._threads: dict[str, _Thread] = {}
        self._procs: dict[str, _Process] = {}
        # Caches: row text after "tracing_mark_write: " -> (B or E, tgid, name, mark,
        # payload); kinds of sections per place (see _Kind).
        self._tails: dict[str, tuple[str, str, str, Mark, str, bool]] = {}
        self._roots: dict[str, _Kind] = {}
        self._kinds = 0
        self._seq = 0
        # The run of sections no client run claims (before any [NN_LA_PO]; the
        # first client to start a run adopts it), then the latest run started.
        self._orphan: _Run | None = _Run(None, 0)
        self._latest: _Run = self._orphan
        self._open_runs: list[_Run] = []
        self._finished: list[tuple[int, RunStats]] = []
        self.incomplete: list[RunStats] = []
        """Runs the trace cuts off (their ``[NN_LA_PO]`` never ends), left out of ``runs``."""
        self.all_runs: list[RunStats] = []
        """Every run, the incomplete ones included, in the order the runs start."""
        # HIDL client calls (frame, thread) waiting for their server side, per call name.
        self._waiting: dict[str, collections.deque[tuple[_Frame, _Thread]]] = {}
        # Task names of processes' main threads (TID == TGID), by TGID.
        self._names: dict[str, str] = {}
        self._line_number = 0
        self._line = ""
        self.out_of_order = 0
        """Rows earlier than the row before them on their thread."""
        self._first_out_of_order: tuple[int, str] = (0, "")
        self._time_sorted = False

    def set_process_names(self, names: dict[str, str]) -> None:
        """Names of processes by pid (a trace's process metadata), before ``feed``."""
        for pid, name in names.items():
            self._names[pid] = name
            proc = self._procs.get(pid)
            if proc is not None:
                proc.name = name

    # -- diagnostics -------------------------------------------------------

    def warn(self, message: str, line_number: int | None = None, line: str | None = None) -> None:
        """Record a warning (at the current line unless told otherwise)."""
        self._report("warning", message, line_number, line)

    def error(self, message: str, line_number: int | None = None, line: str | None = None) -> None:
        """Record an error (at the current line unless told otherwise)."""
        self._report("error", message, line_number, line)

    def say(self, message: str, line_number: int, line: str) -> None:
        """Record a warning about what the output holds or leaves out (a negative cell, a run
        left out, how many diagnostics were not shown), even past ``_MAX_DIAGNOSTICS``: a
        flood of row problems must not hide them, and they are as many as the runs."""
        self.diagnostics.append(
            Diagnostic(line_number=line_number, severity="warning", message=message, line=line)
        )

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

    def read_in_time_order(self, out_of_order: int, line_number: int, line: str) -> None:
        """This engine is fed the rows of a trace in time order (``time_ordered``) because
        reading it in file order found ``out_of_order`` rows earlier than the row before them
        on their thread, the first at ``line_number``: ``finish`` says so (once)."""
        self.out_of_order = out_of_order
        self._first_out_of_order = (line_number, line)
        self._time_sorted = True

    @property
    def first_out_of_order(self) -> tuple[int, str]:
        """(line number, line) of the first row earlier than the row before it on its thread."""
        return self._first_out_of_order

    def _out_of_order(self, line_number: int, line: str) -> None:
        """A row earlier than the row before it on its thread (one warning per file, at the
        first: ``finish``)."""
        self.out_of_order += 1
        if self.out_of_order == 1:
            self._first_out_of_order = (line_number, line)

    # -- input -------------------------------------------------------------

    def feed(self, numbered_lines: Iterable[tuple[int, str]]) -> None:
        """Process ftrace lines (with their 1-based line numbers): ``feed_events`` of the
        text reader's events of them (``row_batches`` with ``texts``)."""
        self.feed_events(row_batches(numbered_blocks(numbered_lines, BLOCK_ROWS), texts=True))

    def feed_events(self, batches: Iterable[list[Event]]) -> None:
        """Process a trace's canonical events (``nnemu.trace.TraceEvents.batches``, or
        ``row_batches`` with ``texts``), each placed where its reader places it (a line, a
        Perfetto packet's byte offset).

        Systrace and ftrace text (``row_batches`` with ``texts``, each list of events
        starting with its ``LINES``) is read as written: a row's payload and head, its line
        for the diagnostics.  Other events are made alike (``_as_rows``): a ``BEGIN`` is
        read as the row ``B|pid|name`` of its thread, an ``END`` as ``E``; ``PROCESS`` names a process
        (as ``set_process_names``), ``PROBLEM`` is a warning at its place; a thread's name
        in a row's ``TASK`` column (``extra``) names its process when the thread is the
        process's main one, as a row's head does; a JSON event's (``extra`` None) is the
        name its thread's last ``THREAD`` rename gave it (``task_name``; ``<...>`` before
        one).  A ``PROBLEM`` is said unless its ``extra`` names what parse does not read (a
        JSON ``X`` or instant, a ``NO_SLICE`` row: parse reads that row's nameless begin).
        """
        batches = iter(batches)
        first = next(batches, None)
        if first is None:
            return
        batches = itertools.chain((first,), batches)
        text = bool(first) and first[0][0] == EVENT_LINES
        self._consume(batches if text else self._as_rows(batches))

    def _as_rows(self, batches: Iterable[list[Event]]) -> Iterator[list[Event]]:
        """Canonical events (a JSON or Perfetto trace's) as ``_consume`` reads them, the
        events of a text trace read with ``texts``: a ``BEGIN`` as the row ``B|pid|name``
        of its thread, an ``END`` as ``E``, a ``HEAD`` before the row of a process's main
        thread (``pid`` its tid, or none) while no name is kept by its tid; a ``PROBLEM``
        parse does not say and a ``THREAD`` (a JSON rename, kept here) are left out."""
        names = self._names
        ids: dict[int, str] = {}
        begins: dict[tuple[int, int], RowHead] = {}
        ends: dict[int, RowHead] = {}
        tasks: dict[int, str] = {}
        for batch in batches:
            out: list[Event] = []
            for event in batch:
                kind, ts, place, pid, tid, name, extra = event
                if kind in (EVENT_BEGIN, EVENT_END):
                    if extra is None:
                        extra = tasks.get(tid, "<...>")
                    tid_text = ids.get(tid)
                    if tid_text is None:
                        if len(ids) >= _MAX_CACHED_NAMES:
                            ids.clear()
                        tid_text = ids[tid] = str(tid)
                    if (pid == tid or pid < 0) and type(extra) is str and tid_text not in names:
                        # A row's head: a process's main thread names it.
                        out.append(
                            (EVENT_HEAD, 0, place, 0, 0, extra, RowHead(extra, tid_text, None))
                        )
                    if kind == EVENT_END:
                        head = ends.get(tid)
                        if head is None:
                            if len(ends) >= _MAX_CACHED_NAMES:
                                ends.clear()
                            head = ends[tid] = RowHead("", tid_text, None)
                        out.append((kind, ts, place, 0, 0, "E", head))
                        continue
                    head = begins.get((pid, tid))
                    if head is None:
                        if len(begins) >= _MAX_CACHED_NAMES:
                            begins.clear()
                        tgid = ids.get(pid)
                        if tgid is None:
                            if len(ids) >= _MAX_CACHED_NAMES:
                                ids.clear()
                            tgid = ids[pid] = str(pid)
                        head = begins[pid, tid] = RowHead("", tid_text, tgid)
                    out.append((kind, ts, place, 0, 0, f"B|{head.tgid}|{name}", head))
                elif kind == EVENT_PROCESS:
                    out.append(event)  # in its place: names kept by tid come before it
                elif kind == EVENT_PROBLEM:
                    if extra is None or extra in _READ_PHASES:
                        out.append((kind, 0, place, 0, 0, name, None))
                elif kind == EVENT_THREAD and extra is True:
                    tasks[tid] = task_name(name)
            yield out

    def _other_event(
        self, kind: int, place: int, pid: int, name: str, extra: object, line: str
    ) -> None:
        """Apply an event of ``_consume``'s other than a row: a ``HEAD`` (a process's main
        thread names it; without a TGID column every task name is kept by its TID: pids
        and tids share one number space, so the thread whose TID is a process's pid is
        that process's main thread), a ``PROBLEM`` (a warning) or a ``PROCESS``."""
        if kind == EVENT_HEAD:
            head = cast("RowHead", extra)
            tgid = head.tgid
            names = self._names
            if (tgid is None or tgid == head.tid) and len(names) < _MAX_CACHED_NAMES:
                names.setdefault(head.tid, name)
        elif kind == EVENT_PROBLEM:
            self.warn(name, place, line)
        elif kind == EVENT_PROCESS:
            self.set_process_names({str(pid): name})

    def _consume(self, batches: Iterable[list[Event]]) -> None:
        """Apply the events of a text trace read with ``texts`` (or made alike by
        ``_as_rows``) in order: the state machine of every row.  A row's line is its list's
        ``LINES``' (none for a JSON or Perfetto trace); its problems are warned of, and a row
        head read for the first time names its process (``HEAD``), in their place."""
        threads = self._threads
        tails = self._tails
        lines: list[str] = []
        first = 0
        overall = Phase.OVERALL
        execution = Phase.EXECUTION
        runtime = Layer.RUNTIME
        roots = self._roots
        new_frame = _Frame
        saw_rows = False
        # A counted mark was seen since saw_nnapi was last updated.
        run_has_marks = False
        for kind, ts, line_number, pid, _, payload, extra in itertools.chain.from_iterable(batches):
            if kind > EVENT_END:
                if kind == EVENT_LINES:
                    first = line_number
                    lines = cast("list[str]", extra)
                else:
                    line = lines[line_number - first] if lines else ""
                    self._other_event(kind, line_number, pid, payload, extra, line)
                continue
            saw_rows = True
            head: RowHead = extra  # type: ignore[assignment]  # a row's (no cast: a call, pure)
            tid = head.tid
            entry = tails.get(payload) or self._tail(payload)
            if entry[0] == "E":
                # (The row's line is looked up only where it is said.)
                thread = threads.get(tid)
                if thread is not None:
                    if ts < thread.last_ts:
                        line = lines[line_number - first] if lines else ""
                        self._out_of_order(line_number, line)
                    else:
                        thread.last_ts = ts
                if thread is None or not thread.stack:
                    if thread is not None and thread.tracked:
                        line = lines[line_number - first] if lines else ""
                        self.warn(
                            "end mark (E) with no open section on this thread", line_number, line
                        )
                    continue
                frame = thread.stack.pop()
                if frame is None:
                    continue
                if ts < frame.start:
                    # Rows out of time order (counted above) in a trace not read again in
                    # time order: this E ends nothing (in time order it comes before the
                    # section's B); the section stays open, never a negative time.
                    thread.stack.append(frame)
                    continue
                closing = frame.kind
                if not closing.plain_close:
                    if not closing.rt_close_plain:
                        self._close(thread, frame, ts)
                        continue
                    if frame.busy:
                        # _busy_close, inlined.
                        run = frame.holder.run
                        if run.busy > 0:
                            run.runtime_sum += ts
                            run.busy -= 1
                            if not run.busy:
                                if ts > run.busy_since:
                                    run.runtime_union += ts - run.busy_since
                                run.runtime_settled = run.runtime_sum
                    if closing.execution_create:
                        creates = frame.holder.creates
                        app_phase = frame.app_phase
                        creates[app_phase] = creates.get(app_phase, 0) + 1
                # _close, for a section that only adds its own time.
                thread.top = parent = frame.parent
                duration = ts - frame.start
                if parent is not None:
                    if closing.subtract:
                        parent.acc_sub += duration
                    elif closing.detail:
                        parent.acc_sub += frame.acc_sub
                if closing.own_add:
                    value = duration - frame.acc_sub
                    acc = frame.holder.acc
                    if frame.covered is not closing.layer:
                        key = (frame.app_phase, closing.layer, closing.phase)
                        acc[key] = acc.get(key, 0) + value
                        if closing.own_pe:
                            key = (frame.app_phase, closing.layer, execution)
                            acc[key] = acc.get(key, 0) + value
                    elif not closing.is_pe:
                        key = (frame.app_phase, closing.layer, closing.phase)
                        acc[key] = acc.get(key, 0) + value
                continue

            # -- B|tgid|name
            line = lines[line_number - first] if lines else ""
            tgid = head.tgid
            _, payload_tgid, name, mark, payload, plain = entry
            if plain:
                # A counted NNTRACE mark with nothing special about it.
                if tgid is None:
                    tgid = payload_tgid
                elif payload_tgid != tgid:
                    self._other_pid(payload_tgid, tgid, line_number, line)
                thread = threads.get(tid)
                if thread is None or thread.proc.tgid != tgid:
                    thread = self._thread(tid, tgid)
                if ts < thread.last_ts:
                    self._out_of_order(line_number, line)
                else:
                    thread.last_ts = ts
                thread.tracked = True
                run_has_marks = True
                proc = thread.proc
                stack = thread.stack
            else:
                if not payload_tgid:
                    thread = self._thread(tid, tgid)
                    if ts < thread.last_ts:
                        self._out_of_order(line_number, line)
                    else:
                        thread.last_ts = ts
                    if thread.tracked:
                        self.warn(
                            "malformed begin mark: expected B|<tgid>|<name>", line_number, line
                        )
                    thread.stack.append(None)
                    continue
                if tgid is None:
                    tgid = payload_tgid
                elif payload_tgid != tgid and mark.tracks_thread:
                    self._other_pid(payload_tgid, tgid, line_number, line)
                thread = threads.get(tid)
                if thread is None or thread.proc.tgid != tgid:
                    thread = self._thread(tid, tgid)
                if ts < thread.last_ts:
                    self._out_of_order(line_number, line)
                else:
                    thread.last_ts = ts
                if mark.tracks_thread:
                    thread.tracked = True
                    run_has_marks = True
                proc = thread.proc
                if mark.driver_server:
                    proc.driver = True
                if mark.problem is not None:
                    self.warn(mark.problem, line_number, line)
                stack = thread.stack
                if mark.switch:
                    if stack:
                        self._line_number, self._line = line_number, line
                        self._pop(thread, ts)
                    elif thread.tracked:
                        self.warn(
                            "[SW] mark with no open section to switch from", line_number, line
                        )
                    stack.append(None)
                layer = mark.layer
                if layer is None:
                    if mark.execution_notify_client or mark.prepare_notify_client:
                        self._notify(thread, mark.execution_notify_client, ts)
                    stack.append(None)
                    continue
                if layer is Layer.APPLICATION and mark.phase is Phase.OVERALL:
                    if run_has_marks:
                        self.saw_nnapi = True
                        run_has_marks = False
                    self._start_run(proc, payload, line_number, line)

            # Open a counted section under the thread's innermost one.
            parent = thread.top
            if parent is None:
                kind_of = roots.get(name) or self._new_kind(mark, None, name)
            else:
                kind_of = parent.kind.children.get(name) or self._new_kind(mark, parent.kind, name)
            if kind_of is None:
                if not mark.hidl:
                    self.warn(
                        "utility section (phase PU) outside any phase: not counted",
                        line_number,
                        line,
                    )
                stack.append(None)
                continue
            frame = new_frame()
            frame.kind = kind_of
            frame.start = ts
            frame.parent = parent
            frame.acc_sub = 0
            frame.line_number = line_number
            frame.line = line
            frame.payload = payload
            if parent is not None:
                frame.holder = holder = parent.holder
                frame.covered = parent.covered
                if kind_of.may_warn and thread.tracked:
                    for message in kind_of.warn_driver if proc.driver else kind_of.warn_other:
                        self.warn(message, line_number, line)
            else:
                frame.holder = holder = self._attribute(thread, mark)
                frame.covered = (
                    self._covered(thread, kind_of, holder) if kind_of.may_cover else None
                )
            app_stack = holder.app_stack
            frame.app_phase = app_phase = app_stack[-1][1] if app_stack else overall
            stack.append(frame)
            thread.top = frame
            if kind_of.special_open:
                if kind_of.rt_open_plain:
                    if kind_of.rt_busy and (
                        frame.covered is not runtime or not kind_of.rt_cover_stops
                    ):
                        frame.busy = True
                        # _busy_open, inlined.
                        run = holder.run
                        run.runtime_sum -= ts
                        if not run.busy:
                            run.busy_since = ts
                        run.busy += 1
                    else:
                        frame.busy = False
                elif kind_of.rt_wait_open:
                    self._rt_open(thread, frame, kind_of, holder)
                elif kind_of.la_pe:
                    la_pe = holder.la_pe
                    la_pe[app_phase] = la_pe.get(app_phase, 0) + 1
                    if kind_of.rt_pause:
                        self._special_open(thread, frame, mark, app_phase)
                elif kind_of.hidl_client:
                    waiting = self._waiting.get(mark.call)
                    if waiting is None:
                        waiting = self._new_waiting(mark.call)
                    waiting.append((frame, thread))
                    if kind_of.rt_pause:
                        self._special_open(thread, frame, mark, app_phase)
                else:
                    self._special_open(thread, frame, mark, app_phase)
        if saw_rows:
            self.saw_rows = True
        if run_has_marks:
            self.saw_nnapi = True

    def _tail(self, tail: str) -> tuple[str, str, str, Mark, str, bool]:
        """``(kind, tgid, name, mark, payload)`` of a row's text after
        ``tracing_mark_write: ``, cached per distinct text.

        ``kind`` is ``B`` or ``E`` (empty when neither); ``tgid`` is empty
        unless the row is a well-formed ``B|tgid|name``; ``plain`` says that
        the mark is a counted NNTRACE mark that needs no special handling
        when it begins (no problem, ``[SW]``, driver or run start).
        """
        tails = self._tails
        if len(tails) >= _MAX_CACHED_NAMES:
            tails.clear()
        kind = tail[:1]
        rest = tail[1:].partition("\n")[0]
        entry: tuple[str, str, str, Mark, str, bool]
        if kind == "E":
            entry = _E_ENTRY
        elif kind != "B":
            entry = ("", "", "", OPAQUE, "", False)
        else:
            parts = rest.split("|", 2)
            if len(parts) == 2:  # B|tgid: a section with no name, as B|tgid| (and Perfetto)
                parts.append("")
            # The tgid as Perfetto's trace processor reads it (+200 and " 200" are 200), the
            # kind whatever follows its B (Bx|200|name begins a section there too).
            plain_tgid = len(parts) == 3 and parts[1].isascii() and parts[1].isdigit()
            tgid_number = None if plain_tgid or len(parts) < 3 else atrace_tgid(parts[1])
            if not plain_tgid and tgid_number is None:
                entry = (kind, "", "", OPAQUE, "B" + rest, False)
            else:
                if tgid_number is not None:
                    parts[1] = str(tgid_number)
                mark = classify(parts[2])
                plain = (
                    mark.layer is not None
                    and mark.tracks_thread
                    and not mark.driver_server
                    and mark.problem is None
                    and not mark.switch
                    and not (mark.layer is Layer.APPLICATION and mark.phase is Phase.OVERALL)
                )
                entry = (kind, parts[1], parts[2], mark, "B" + rest, plain)
        tails[tail] = entry
        return entry

    def _new_kind(self, mark: Mark, parent: _Kind | None, name: str) -> _Kind | None:
        """Decide what a section with ``mark`` opened under ``parent`` is.

        Returns None for a ``PU`` section outside any phase (not counted).
        """
        kind = _make_kind(mark, parent)
        if kind is None:
            return None
        if self.keep_detail:
            kind.plain_close = False  # feed's inlined close keeps no detail items
            kind.rt_close_plain = False
        if self._kinds >= _MAX_CACHED_NAMES:
            _forget_children(self._roots)
            self._kinds = 0
        self._kinds += 1
        (parent.children if parent is not None else self._roots)[name] = kind
        return kind

    def _other_pid(self, payload_tgid: str, tgid: str, line_number: int, line: str) -> None:
        """A ``B|pid|`` whose pid is not its row's TGID column (atrace writes getpid()):
        the row is counted for the TGID's process."""
        self.warn(
            f"the mark's pid {payload_tgid} is not its row's TGID {tgid}:"
            f" counted for process {tgid}",
            line_number,
            line,
        )

    def _thread(self, tid: str, tgid: str | None) -> _Thread:
        thread = self._threads.get(tid)
        if thread is None or (tgid is not None and thread.proc.tgid != tgid):
            key = tgid if tgid is not None else tid
            proc = self._procs.get(key)
            if proc is None:
                proc = self._procs[key] = _Process(key)
                proc.name = self._names.get(key, "")
            if thread is None:
                thread = self._threads[tid] = _Thread(tid, proc, len(self._threads))
            else:
                if thread.tracked:
                    self.warn(
                        f"thread {tid} of process {thread.proc.tgid} has a row of process"
                        f" {key}: its sections are counted for process {key} from here"
                        " (a pid edited, or the tid reused)"
                    )
                thread.proc = proc
        return thread

    # -- attribution -------------------------------------------------------

    def _holder(self, run: _Run, thread: _Thread) -> _Acc:
        holder = run.accs.get(thread)
        if holder is None:
            holder = run.accs[thread] = _Acc(run, thread, self.keep_detail)
        return holder

    def _attribute(self, thread: _Thread, mark: Mark) -> _Acc:
        """The run a section opened at the top of ``thread``'s stack serves.

        A client process's sections belong to its current run.  On a driver
        thread, a HIDL server call serves the oldest client call of the same
        interface::method still waiting for it; other sections of a binder
        thread and of a worker thread belong to the client whose launched work
        (a prepareModel/execute* server call) the thread took on, until its
        notification, or (an executeFenced call's) for one top-level section and the
        ``[SW]`` sections that go on with it.  Anything else goes to the latest run started.
        """
        proc = thread.proc
        run = proc.run
        if run is not None:
            return self._holder(run, thread)
        if mark.hidl_server:
            thread.binder = True
            waiting = self._waiting.get(mark.call)
            while waiting:
                # The oldest call still open (one that ended unserved, or that a
                # run boundary dropped, is skipped).
                call, caller = waiting.popleft()
                if call in caller.stack:
                    return self._holder(call.holder.run, thread)
        elif not thread.binder and proc.driver:
            claim = thread.claim
            if claim is not None and claim.fenced and not mark.switch:
                # Its fenced work ended with the top-level section before this one (a [SW]
                # section goes on with it); there is no notify to end it.
                if claim in proc.launches:
                    proc.launches.remove(claim)
                claim = None
            if claim is None or claim not in proc.launches:
                thread.claim = claim = None
                # A burst server thread writes IPC marks; workers write device marks.
                burst = mark.layer is Layer.IPC
                for launch in proc.launches:
                    if launch.claimed is None and launch.burst is burst:
                        launch.claimed = thread
                        thread.claim = claim = launch
                        break
            if claim is not None:
                holder = self._holder(claim.holder.run, thread)
                if claim.fenced:
                    holder.fenced = True
                return holder
        return self._holder(self._latest, thread)

    @staticmethod
    def _covered(thread: _Thread, kind: _Kind, holder: _Acc) -> Layer | None:
        """The layer whose execution time is already counted for a top-level section.

        A device section on a driver thread while an asynchronous execution of
        the same client is pending on that driver (its time runs from the
        execute call to the notification), and a runtime section on another
        thread of an app inside one of its startCompute..Event_wait windows.
        """
        proc = thread.proc
        layer = kind.layer
        if layer is _DEVICE:
            if proc.driver:
                run = holder.run
                for launch in proc.launches:
                    if launch.execute and launch.holder.run is run:
                        return _DEVICE
        elif layer is Layer.IPC:
            # A burst server's IPC sections run inside the client's
            # ExecutionBurstController call, which counts that wall-clock time.
            claim = thread.claim
            if claim is not None and claim.burst:
                return Layer.IPC
        elif layer is Layer.RUNTIME and proc.windows > thread.windows:
            # A window of another thread is open.
            return Layer.RUNTIME
        return None

    def _new_waiting(self, call: str) -> collections.deque[tuple[_Frame, _Thread]]:
        waiting: collections.deque[tuple[_Frame, _Thread]] = collections.deque(maxlen=_MAX_WAITING)
        self._waiting[call] = waiting
        return waiting

    def _special_open(self, thread: _Thread, frame: _Frame, mark: Mark, app_phase: Phase) -> None:
        kind = frame.kind
        holder = frame.holder
        if kind.app_entry:
            holder.run.app_stack.append((frame, kind.phase))
        elif kind.po:
            run = holder.run
            if run.po_frame is None and run.proc is thread.proc:
                run.po_frame = frame
        elif kind.start_compute:
            thread.windows += 1
            thread.proc.windows += 1
        if kind.rt_top:
            self._rt_open(thread, frame, kind, holder)
        elif kind.rt_pause:
            frame.busy = self._pauses(frame)
            if frame.busy:
                _busy_close(holder.run, frame.start)
        if (kind.queue_async or kind.prepare_server or kind.fenced_server) and thread.proc.driver:
            launch = _Launch(
                holder,
                frame.start,
                app_phase,
                frame.line_number,
                execute=kind.queue_async,
                burst="configureExecutionBurst" in mark.call,
                fenced=kind.fenced_server,
            )
            thread.proc.launches.append(launch)
            thread.launch = launch
        elif kind.fenced_inline:
            # The driver executes inside executeFenced: no worker takes that launch.
            made = thread.launch
            launches = thread.proc.launches
            if made is not None and made.fenced and made.claimed is None and made in launches:
                launches.remove(made)

    @staticmethod
    def _rt_open(thread: _Thread, frame: _Frame, kind: _Kind, holder: _Acc) -> None:
        """Open the interval of an ``rt_top`` section; an Event_wait ends its execution's gap."""
        busy = kind.rt_busy and not (frame.covered is Layer.RUNTIME and kind.rt_cover_stops)
        frame.busy = busy
        waited = None
        if kind.event_wait:
            # The asynchronous execution's gap ends where its Event_wait begins.
            for gap in thread.sc_queue:
                if gap.open:
                    gap.open = False
                    waited = gap.holder.run
                    break
        if waited is not holder.run or not busy:
            # (Else the gap's interval goes on as the Event_wait's.)
            if busy:
                _busy_open(holder.run, frame.start)
            if waited is not None:
                _busy_close(waited, frame.start)

    @staticmethod
    def _pauses(frame: _Frame) -> bool:
        """Whether an ``rt_pause`` section stops the runtime interval around it."""
        parent = frame.parent
        while parent is not None:
            kind = parent.kind
            if kind.rt_top or kind.rt_pause:
                return parent.busy if kind.rt_top else False
            parent = parent.parent
        return False

    def _notify(self, thread: _Thread, execute: bool, ts: int) -> None:
        """A driver notifies a callback: the launched work it ends is done."""
        launches = thread.proc.launches
        if not launches:
            return
        done = None
        for candidate in (thread.claim, thread.launch):
            if (
                candidate is not None
                and candidate.execute is execute
                and not candidate.fenced
                and candidate in launches
            ):
                done = candidate
                break
        if done is None:
            done = next(
                (item for item in launches if item.execute is execute and not item.fenced), None
            )
            if done is None:
                return
        launches.remove(done)
        if thread.claim is done:
            thread.claim = None
        if done.execute:
            self._add(
                done.holder,
                done.app_phase,
                _DEVICE,
                Phase.EXECUTION,
                ts - done.start,
                "async execute",
            )

    def _add(
        self, holder: _Acc, app_phase: Phase, layer: Layer, phase: Phase, value: int, what: str
    ) -> None:
        key = (app_phase, layer, phase)
        holder.acc[key] = holder.acc.get(key, 0) + value
        if holder.items is not None:
            holder.items.append(
                DetailItem(
                    mark=what,
                    # (_model's Python division: mypyc's int / int goes through
                    # doubles first and is not correctly rounded beyond 2**53 ns.)
                    elapsed_ms=ns_to_ms(value),
                    tag=f"{app_phase.value}_{layer.value}_{phase.value}",
                )
            )

    def _pop(self, thread: _Thread, end: int) -> None:
        frame = thread.stack.pop()
        if frame is not None:
            self._close(thread, frame, end)

    def _close(self, thread: _Thread, frame: _Frame, end: int) -> None:
        """Count a section that ends at ``end`` (already popped)."""
        kind = frame.kind
        holder = frame.holder
        thread.top = parent = frame.parent
        if kind.app_entry:
            app_stack = holder.run.app_stack
            for index in range(len(app_stack) - 1, -1, -1):
                if app_stack[index][0] is frame:
                    del app_stack[index]
                    break
        elif kind.po and holder.run.po_frame is frame:
            holder.run.po_frame = None
        elif kind.la_pe:
            self._end_helper_windows(holder.run, frame, end)
        duration = end - frame.start
        app_phase = frame.app_phase
        if parent is not None:
            if kind.subtract:
                parent.acc_sub += duration
                if kind.moved_from_caller:
                    key = (MOVED, parent.kind.layer, kind.phase)
                    holder.acc[key] = holder.acc.get(key, 0) + duration
            elif kind.detail:
                parent.acc_sub += frame.acc_sub
        if kind.execution_create:
            holder.creates[app_phase] = holder.creates.get(app_phase, 0) + 1
        covered = frame.covered is kind.layer
        if kind.own_add:
            # An asynchronous execute's server call only launches the work; the
            # driver's time is counted up to the callback notification instead.
            value = duration - frame.acc_sub
            if holder.items is None:
                acc = holder.acc
                if not (covered and kind.is_pe):
                    key = (app_phase, kind.layer, kind.phase)
                    acc[key] = acc.get(key, 0) + value
                if kind.own_pe and not covered:
                    key = (app_phase, kind.layer, Phase.EXECUTION)
                    acc[key] = acc.get(key, 0) + value
            else:
                if not (covered and kind.is_pe):
                    self._add(holder, app_phase, kind.layer, kind.phase, value, frame.payload)
                if kind.own_pe and not covered:
                    self._add(holder, app_phase, kind.layer, Phase.EXECUTION, value, frame.payload)
        if kind.start_compute or kind.rt_top or kind.rt_pause or kind.event_wait:
            self._close_interval(thread, frame, end)
        if kind.moved:
            # The moved section keeps what its own children deduct (a one-time
            # initialisation inside it is counted once, in PI).
            copied = frame.payload + " (moved)"
            value = duration - frame.acc_sub
            if not (covered and kind.is_pe):
                self._add(holder, app_phase, kind.layer, kind.phase, value, copied)
            if kind.moved_pe and not covered:
                self._add(holder, app_phase, kind.layer, Phase.EXECUTION, value, copied)

    def _close_interval(self, thread: _Thread, frame: _Frame, end: int) -> None:
        """End what a closing section does to the runtime's intervals and execution gaps.

        For ``start_compute``, ``rt_top``, ``rt_pause`` and ``event_wait`` sections.
        """
        kind = frame.kind
        holder = frame.holder
        if kind.start_compute:
            # A counted startCompute's interval goes on as its gap's.
            if not (kind.rt_top and frame.busy):
                _busy_open(holder.run, end)
        elif kind.rt_top:
            if frame.busy:
                _busy_close(holder.run, end)
        elif kind.rt_pause and frame.busy:
            _busy_open(holder.run, end)
        if kind.start_compute:
            owner = _own_la_pe(frame) or _latest_la_pe(holder.run, thread.proc)
            thread.sc_queue.append(_Gap(frame.app_phase, end, holder, owner))
        elif kind.event_wait:
            if thread.windows:
                thread.windows -= 1
                thread.proc.windows -= 1
            if thread.sc_queue:
                started = thread.sc_queue.popleft()
                if started.open:
                    started.open = False
                    _busy_close(started.holder.run, max(frame.start, started.end))
                gap = frame.start - started.end
                if gap > 0:
                    self._add(
                        started.holder,
                        started.app_phase,
                        kind.layer,
                        kind.phase,
                        gap,
                        "startCompute..Event_wait",
                    )

    def _end_helper_windows(self, run: _Run, la_pe: _Frame, end: int) -> None:
        """An ``[NN_LA_PE]`` ends: the app's execution is over, so a window it owns (a
        startCompute* with no ``Event_wait`` yet) ends here (D-NOWAIT).

        A startCompute* that fails returns no event, so no ``Event_wait`` follows it.
        """
        for thread in run.accs:
            queue = thread.sc_queue
            if not queue or not any(gap.owner is la_pe for gap in queue):
                continue
            for gap in [gap for gap in queue if gap.owner is la_pe]:
                queue.remove(gap)
                if thread.windows:
                    thread.windows -= 1
                    thread.proc.windows -= 1
                if gap.open:
                    gap.open = False
                    _busy_close(gap.holder.run, max(end, gap.end))
                if end > gap.end:
                    self._add(
                        gap.holder,
                        gap.app_phase,
                        Layer.RUNTIME,
                        Phase.EXECUTION,
                        end - gap.end,
                        "startCompute..end of [NN_LA_PE]",
                    )

    # -- runs --------------------------------------------------------------

    def _start_run(self, proc: _Process, payload: str, line_number: int, line: str) -> None:
        """A ``[NN_LA_PO]`` of ``proc`` begins: its current run ends, a new one starts."""
        old = proc.run
        if old is None and self._orphan is not None:
            # Rows before a trace's first [NN_LA_PO] belong to the first run.
            run = self._orphan
            self._orphan = None
            run.proc = proc
        else:
            if old is not None:
                self._finish_run(old, f"a new run starts at line {line_number}")
            self._seq += 1
            run = _Run(proc, self._seq)
        run.starting_mark = payload
        run.line_number = line_number
        run.line = line.rstrip("\r\n")
        proc.run = run
        self._latest = run
        self._open_runs.append(run)

    def _finish_run(self, run: _Run, why: str, *, incomplete: bool = False) -> RunStats:
        """Drop what of ``run`` is still open (reported) and hand its statistics on.

        They go to ``on_run`` at once if the engine has one, else to ``runs`` at the end.
        """
        run.finished = True
        for thread in self._threads.values():
            top = thread.top
            if top is not None and top.holder.run is run:
                for frame in _drop_open_frames(thread.stack, top):
                    if thread.tracked:
                        self.warn(
                            f"section still open when {why}; its time is not counted",
                            frame.line_number,
                            frame.line,
                        )
                thread.top = None
            if thread.sc_queue:
                thread.sc_queue = collections.deque(
                    item for item in thread.sc_queue if item.holder.run is not run
                )
        for proc in self._procs.values():
            if proc.run is run:
                proc.windows = 0
                for thread in self._threads.values():
                    if thread.proc is proc:
                        thread.windows = 0
            if not proc.launches:
                continue
            kept = []
            for launch in proc.launches:
                if launch.holder.run is not run:
                    kept.append(launch)
                elif launch.execute:
                    self.warn(
                        f"asynchronous execution never notified its callback before {why};"
                        " its driver time is not counted",
                        launch.line_number,
                        "",
                    )
            proc.launches = kept
        run.app_stack.clear()
        if run in self._open_runs:
            self._open_runs.remove(run)
        stats = self._collect(run)
        if incomplete:
            stats = attrs.evolve(stats, incomplete=True)
        negative = stats.negative_cells()
        if negative:
            warnings = [_negative_cell(cell) for cell in negative]
            for warning in warnings:
                self.say(warning, run.line_number, run.line)
            # The run's JSON names the figures that are wrong; a cell the contract's own
            # rules make negative is Android's figure (omr1's JSON stays Android's).
            wrong = tuple(w for w in warnings if not w.endswith(NEGATIVE_BY_CONTRACT))
            if wrong:
                stats = attrs.evolve(stats, warnings=wrong)
        if run.proc is not None or self.saw_nnapi:
            if self._on_run is not None:
                self._on_run(run.seq, stats)
            else:
                self._finished.append((run.seq, stats))
        return stats

    def _collect(self, run: _Run) -> RunStats:
        totals: dict[StatKey, int] = {}
        creates: dict[Phase, int] = {}
        la_pe: dict[Phase, int] = {}
        detail: list[ThreadDetail] = []
        for thread, holder in sorted(run.accs.items(), key=lambda item: item[0].seq):
            if thread.tracked:
                device = Layer.DRIVER if thread.proc.driver else Layer.CPU
                for (app_phase, layer, phase), value in holder.acc.items():
                    key = (app_phase, device if layer is _DEVICE else layer, phase)
                    totals[key] = totals.get(key, 0) + value
                    if holder.fenced and layer is _DEVICE and phase is Phase.EXECUTION:
                        # Fenced work after its executeFenced call returned: the IPC
                        # layer's self time does not lose it (D-FENCED).
                        totals[_FENCED_MOVED] = totals.get(_FENCED_MOVED, 0) + value
                for app_phase, count in holder.creates.items():
                    creates[app_phase] = creates.get(app_phase, 0) + count
                for app_phase, count in holder.la_pe.items():
                    la_pe[app_phase] = la_pe.get(app_phase, 0) + count
                if holder.items:
                    detail.append(
                        ThreadDetail(
                            tid=thread.tid,
                            tgid=thread.proc.tgid,
                            is_driver=thread.proc.driver,
                            items=tuple(holder.items),
                        )
                    )
        run.accs = {}
        counts = {
            app: creates.get(app, 0) or la_pe.get(app, 0)
            for app in (Phase.OVERALL, Phase.WARMUP, Phase.BENCHMARK)
        }
        proc = run.proc
        return RunStats.from_totals(
            # Runtime work still under way when the run ends is dropped (reported):
            # the overlap of that last stretch is not known, so none is assumed.
            runtime_overlap_ns=max(0, run.runtime_settled - run.runtime_union),
            starting_mark=run.starting_mark,
            totals_ns=totals,
            execution_counts=counts,
            detail=tuple(detail),
            pid=proc.tgid if proc is not None else "",
            process_name=(proc.name or self._names.get(proc.tgid, "")) if proc is not None else "",
        )

    def finish(self) -> None:
        """End of input: close every run; a run whose ``[NN_LA_PO]`` is still open is incomplete."""
        self._line = ""
        open_runs = sorted(self._open_runs, key=lambda run: run.seq)
        if self._orphan is not None:
            open_runs.insert(0, self._orphan)
        for run in open_runs:
            cut = run.po_frame is not None
            stats = self._finish_run(run, "the trace ends", incomplete=cut)
            if cut:
                self.incomplete.append(stats)
                name = f" ({_printable(stats.process_name)})" if stats.process_name else ""
                self.say(
                    f"the run of process {stats.pid}{name} that starts here"
                    f" ({_printable(run.starting_mark)}) is cut off by the end of the trace:"
                    " left out (--include-incomplete prints it)",
                    run.line_number,
                    run.line,
                )
        if self.out_of_order:
            line_number, line = self._first_out_of_order
            self.say(
                out_of_order_warning(self.out_of_order, sorted_again=self._time_sorted),
                line_number,
                line,
            )
        self._finished.sort(key=lambda item: item[0])
        self.all_runs = [stats for _, stats in self._finished]
        self.runs = [stats for stats in self.all_runs if not stats.incomplete]
        if self.suppressed:
            self.say(f"{self.suppressed} more diagnostics not shown", 0, "")
