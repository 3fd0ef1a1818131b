"""Frozen result types of the systrace parser and the run-level aggregation.

The aggregation follows AOSP ``parser/aggregate.py`` (zero -> n/a rules, the
``LT`` row as a maximum, totals per phase) except where that deviates from the
tracing contract; see ``docs/parser.md``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping
from typing import Final, Literal

import attrs

from nnemu.tracer import EXECUTION_SUBPHASES, Layer, Phase

LAYER_TOTAL: Final = "LT"
"""Key of the across-layers total (the "Total" row); not an NNTRACE layer."""

LayerKey = Layer | Literal["LT"]
"""A row of the statistics: an NNTRACE layer or the ``LT`` total."""

TABLE_LAYERS: Final = (Layer.APPLICATION, Layer.RUNTIME, Layer.IPC, Layer.DRIVER, Layer.CPU)
"""Layers that get a row in the statistics, in table order."""

MAIN_PHASES: Final = (
    Phase.INITIALIZATION,
    Phase.PREPARATION,
    Phase.COMPILATION,
    Phase.EXECUTION,
    Phase.TERMINATION,
)
"""Phases that make up a layer's overall time."""

PE_SUBPHASES: Final = (
    Phase.INPUTS_AND_OUTPUTS,
    Phase.TRANSFORMATION,
    Phase.COMPUTATION,
    Phase.RESULTS,
)
"""Sub-phases of execution, in AOSP order."""

STAT_PHASES: Final = (*MAIN_PHASES, Phase.OVERALL, *PE_SUBPHASES)
"""Every phase a statistics table has a column for."""
_PHASES_THEN_TOTAL: Final = (*(p for p in STAT_PHASES if p is not Phase.OVERALL), Phase.OVERALL)
_NEGLIGIBLE_MS: Final = 1e-7
"""Float noise of a self time subtracted in ms (far below the 1 ns of a row)."""

APP_PHASES: Final = (Phase.OVERALL, Phase.WARMUP, Phase.BENCHMARK)
"""Application phases that split the statistics."""

# Which layers a layer calls directly (tracing contract, "Local call to other
# layer" and "Synchronous IPC call"): self time subtracts these.
_CALLEES: Final[Mapping[Layer, tuple[Layer, ...]]] = {
    Layer.APPLICATION: (Layer.RUNTIME,),
    Layer.RUNTIME: (Layer.IPC, Layer.CPU),
    Layer.IPC: (Layer.DRIVER,),
    Layer.DRIVER: (),
    Layer.CPU: (),
}

StatKey = tuple[Phase, Layer, Phase]
"""(application phase, layer, phase) of an accumulated total."""

NEGATIVE_BY_CONTRACT: Final = "the contract's own rules allow it (Android's parser prints the same)"
"""How the warning of a negative cell below the Application ends: not a broken rule
(``nnemu verify`` does not count it as one)."""

NegativeCell = tuple[Phase, Layer, str, bool, float]
"""A negative cell: (its table: ``Phase.OVERALL`` for the run's, ``Phase.WARMUP`` or
``Phase.BENCHMARK`` for theirs; its row's layer; its column: a phase's code or
``COMPUTE``; whether it is a self time, else a total time; its value in ms)."""

COMPUTE: Final = "PEO"
"""The Compute column of ``nnemu parse``'s tables: a layer's PE less its PIO and PR."""


def _compute_ms(table: Table, layer: Layer) -> float:
    """A layer's Compute cell of ``table`` (``nan`` for no data), as the table prints it."""
    if Phase.EXECUTION not in table:
        return math.nan
    return (
        table[Phase.EXECUTION][layer]
        - table[Phase.INPUTS_AND_OUTPUTS][layer]
        - table[Phase.RESULTS][layer]
    )


def callees(layer: Layer) -> tuple[Layer, ...]:
    """The layers whose totals ``layer``'s self time subtracts (tracing contract)."""
    return _CALLEES[layer]


Table = Mapping[Phase, Mapping[LayerKey, float]]
"""phase -> layer (or ``LT``) -> milliseconds; ``nan`` means no data."""


@attrs.frozen(kw_only=True)
class Diagnostic:
    """A problem found in a trace, tied to the line where it shows."""

    line_number: int
    """1-based line number in the input (0 when not tied to a line)."""
    severity: Literal["warning", "error"]
    """``error`` when the input could not be used at all, else ``warning``."""
    message: str
    """What was expected and what was found."""
    line: str
    """The offending line, without its line break (may be empty)."""


@attrs.frozen(kw_only=True)
class DetailItem:
    """One contribution of a section to a statistic (``--print-detail``)."""

    mark: str
    """The ``B|tgid|name`` payload of the section."""
    elapsed_ms: float
    """Time the section added to the statistic."""
    tag: str
    """``<appphase>_<layer>_<phase>`` the time went to."""


@attrs.frozen(kw_only=True)
class ThreadDetail:
    """Per-thread contributions of a run, kept only with ``keep_detail``."""

    tid: str
    """Thread id."""
    tgid: str
    """Process id of the thread."""
    is_driver: bool
    """Whether the thread's process is an NNAPI driver."""
    items: tuple[DetailItem, ...]
    """Contributions in the order the sections closed."""


def ns_to_ms(value_ns: int) -> float:
    """``value_ns`` in ms (Python's correctly rounded division, also for the compiled engine)."""
    return value_ns / 1_000_000


def _missing_to_nan(value_ms: float, layer: Layer, phase: Phase) -> float:
    """Zero means "no data" for the application layer and driver sub-phases."""
    if value_ms == 0.0 and (
        layer is Layer.APPLICATION or (layer is Layer.DRIVER and phase in EXECUTION_SUBPHASES)
    ):
        return math.nan
    return value_ms


def _effective(totals: Mapping[LayerKey, float], layer: Layer) -> float:
    """A layer's total, or (when it has none) the sum of those it calls."""
    value = totals[layer]
    if math.isnan(value):
        value = 0.0
    if value != 0.0:
        return value
    return sum([_effective(totals, callee) for callee in _CALLEES[layer]])


def _self_times(totals: Mapping[LayerKey, float]) -> dict[LayerKey, float]:
    """Self time = total minus the totals of the layers it calls (contract)."""
    result: dict[LayerKey, float] = {}
    isnan = math.isnan
    for layer, callees in _CALLEES.items():
        value = totals[layer]
        if isnan(value) or value == 0.0:
            result[layer] = value
        else:
            result[layer] = value - sum([_effective(totals, callee) for callee in callees])
    result[LAYER_TOTAL] = totals[LAYER_TOTAL]
    return result


def _with_total(row: dict[LayerKey, float]) -> dict[LayerKey, float]:
    isnan = math.isnan
    row[LAYER_TOTAL] = max(
        [0.0 if isnan(value) else value for value in map(row.__getitem__, TABLE_LAYERS)]
    )
    return row


def _no_data_row(phase: Phase) -> dict[LayerKey, float]:
    return _with_total(
        {layer: _missing_to_nan(ns_to_ms(0), layer, phase) for layer in TABLE_LAYERS}
    )


_NO_DATA_TIMES: Final[Mapping[Phase, Mapping[LayerKey, float]]] = {
    phase: _no_data_row(phase) for phase in STAT_PHASES
}
"""A table row of a phase no section counted towards (copied, never shared)."""
_NO_DATA_SELF_TIMES: Final[Mapping[Phase, Mapping[LayerKey, float]]] = {
    phase: _self_times(_no_data_row(phase)) for phase in STAT_PHASES
}
"""Self times of such a row."""


@attrs.frozen(kw_only=True)
class RunStats:
    """Statistics of one run (one ``[NN_LA_PO]`` section and what it contains)."""

    starting_mark: str
    """Payload of the ``[NN_LA_PO]`` row that started the run (``""`` if none)."""
    execution_counts: Mapping[Phase, int]
    """Executions per application phase (keys PO, PWU, PBM)."""
    totals_by_key_ns: Mapping[StatKey, int]
    """Exact accumulated totals in ns, per (app phase, layer, phase)."""
    detail: tuple[ThreadDetail, ...] = ()
    """Per-thread contributions, only when parsed with ``keep_detail``."""
    pid: str = ""
    """Process id (TGID) of the client whose ``[NN_LA_PO]`` started the run (``""`` if none)."""
    process_name: str = ""
    """Name of that process, as the trace gives it (``""`` when it does not)."""
    incomplete: bool = False
    """The trace ends before the run's ``[NN_LA_PO]`` section does (a partial run)."""
    warnings: tuple[str, ...] = ()
    """What is wrong with the run's figures (a cell the contract never makes negative
    is), as ``nnemu parse`` reports it on stderr and in the run's JSON."""
    runtime_overlap_ns: int = 0
    """Wall-clock time the runtime's counted intervals (its top-level sections less what
    they deduct, and the startCompute..Event_wait gaps) overlap one another on the
    client's threads: counted more than once in the runtime's Total, once in the
    Application's Total self time.  0 for an app that runs one thing at a time."""

    # The tables are derived from the totals alone, so they are built on first
    # access (most runs of a long trace are never printed one by one).
    @functools.cached_property
    def _tables(self) -> tuple[Table, Table, Mapping[Phase, Table], Mapping[Phase, Table]]:
        return _aggregate(self.totals_by_key_ns, self.execution_counts, self.runtime_overlap_ns)

    @property
    def times(self) -> Table:
        """Total time per phase and layer, in ms (``nan`` = no data)."""
        return self._tables[0]

    @property
    def self_times(self) -> Table:
        """Self time per phase and layer, in ms (``nan`` = no data)."""
        return self._tables[1]

    @property
    def app_phase_times(self) -> Mapping[Phase, Table]:
        """PWU/PBM -> execution phase and sub-phases -> layer -> total ms; empty
        unless the run has warmup or benchmark executions."""
        return self._tables[2]

    @property
    def app_phase_self_times(self) -> Mapping[Phase, Table]:
        """Like ``app_phase_times`` with self times."""
        return self._tables[3]

    @property
    def has_warmup_and_benchmark(self) -> bool:
        """Whether separate warmup/benchmark tables exist."""
        return bool(
            self.execution_counts.get(Phase.WARMUP) or self.execution_counts.get(Phase.BENCHMARK)
        )

    def totals_ns(self, layer: Layer, phase: Phase) -> int | None:
        """Return the exact total time (ns) of ``layer`` in ``phase``, or None for n/a.

        The overall phase of a layer other than the application is the sum of
        its main phases, as in the table's Total column.
        """
        if layer is Layer.APPLICATION or phase is not Phase.OVERALL:
            total = sum(self.totals_by_key_ns.get((app, layer, phase), 0) for app in APP_PHASES)
        else:
            total = sum(
                self.totals_by_key_ns.get((app, layer, Phase.OVERALL), 0) for app in APP_PHASES
            )
            if total == 0:
                total = sum(
                    self.totals_by_key_ns.get((app, layer, main), 0)
                    for app in APP_PHASES
                    for main in MAIN_PHASES
                )
        if total == 0 and math.isnan(_missing_to_nan(0.0, layer, phase)):
            return None
        return total

    @classmethod
    def from_totals(
        cls,
        *,
        starting_mark: str,
        totals_ns: Mapping[StatKey, int],
        execution_counts: Mapping[Phase, int],
        detail: tuple[ThreadDetail, ...] = (),
        pid: str = "",
        process_name: str = "",
        incomplete: bool = False,
        runtime_overlap_ns: int = 0,
    ) -> RunStats:
        """Keep accumulated totals; the tables Android's parser prints follow on demand."""
        return cls(
            starting_mark=starting_mark,
            execution_counts={app: execution_counts.get(app, 0) for app in APP_PHASES},
            totals_by_key_ns=dict(totals_ns),
            detail=detail,
            pid=pid,
            process_name=process_name,
            incomplete=incomplete,
            runtime_overlap_ns=runtime_overlap_ns,
        )

    def negative_cells(self) -> list[NegativeCell]:
        """Every negative number the run's tables print, in table order: the run's table
        (``Phase.OVERALL``) then the warmup and benchmark ones, row by row, each row's
        phases, its Compute column (``COMPUTE``: PE less PIO and PR) and its Total; the
        tables of total times can only have a negative Compute cell.  (Percentages and
        per-execution means have the sign of their cell.)

        The application calls every other layer, so on a trace whose rows nest as NNAPI
        writes them none of its cells is (concurrent runtime work is counted once in the
        Total, D14); only rows edited or reordered give one.  A lower layer's cell may be
        negative by the contract's own rules, as Android's parser prints it: a layer's
        self time is its total less the totals of the layers it calls, so work of a
        callee outside the caller's sections (a ``[SUB]`` section: diff case c08; the
        driver's work after a fenced or asynchronous IPC call returned: omr1's IPC
        Total, ``scenarios/fenced_pipeline.yaml``) makes it negative.  Each is reported
        (``nnemu parse``'s warnings), none changed.
        """
        found: list[NegativeCell] = []
        self_tables = {Phase.OVERALL: self.self_times, **self.app_phase_self_times}
        total_tables = {Phase.OVERALL: self.times, **self.app_phase_times}
        for app, table in self_tables.items():
            for layer in TABLE_LAYERS:
                for phase in _PHASES_THEN_TOTAL:
                    row = table.get(phase)
                    if row is None:
                        continue
                    if phase is Phase.OVERALL:
                        compute = _compute_ms(table, layer)
                        if compute < -_NEGLIGIBLE_MS:
                            found.append((app, layer, COMPUTE, True, compute))
                    if (
                        app is Phase.OVERALL
                        and phase is Phase.OVERALL
                        and layer is Layer.APPLICATION
                    ):
                        # Exactly, as the cell is computed (D13).
                        application = self.application_total_self_ns()
                        if application is not None and application < 0:
                            found.append((app, layer, phase.value, True, ns_to_ms(application)))
                        continue
                    value = row[layer]
                    if value < -_NEGLIGIBLE_MS:
                        found.append((app, layer, phase.value, True, value))
        for app, table in total_tables.items():
            for layer in TABLE_LAYERS:
                compute = _compute_ms(table, layer)
                if compute < -_NEGLIGIBLE_MS:
                    found.append((app, layer, COMPUTE, False, compute))
        return found

    def application_total_self_ns(self) -> int | None:
        """The Application's self time in the Total column, exactly (None for n/a).

        Its ``[NN_LA_PO]`` span minus the wall-clock time during which some
        counted runtime work of the run was under way: the runtime's Total less
        what of it overlaps (``runtime_overlap_ns``), so work on several threads
        at once is subtracted once.  Without runtime marks, the layers the
        runtime calls are subtracted (as in every self time).
        """
        return _application_total_self_ns(self.totals_by_key_ns, self.runtime_overlap_ns)


_OVERALL_KEYS: Final[Mapping[Layer, tuple[StatKey, ...]]] = {
    layer: tuple((app, layer, Phase.OVERALL) for app in APP_PHASES) for layer in TABLE_LAYERS
}
_MAIN_PHASE_KEYS: Final[Mapping[Layer, tuple[StatKey, ...]]] = {
    layer: tuple((app, layer, main) for app in APP_PHASES for main in MAIN_PHASES)
    for layer in TABLE_LAYERS
}
"""The totals' keys a layer's Total reads (built once: every printed run reads them)."""


def _overall_ns(totals_ns: Mapping[StatKey, int], layer: Layer) -> int:
    """A layer's Total in ns: its ``PO`` time, or (below the application) its main phases'."""
    get = totals_ns.get
    total = sum([get(key, 0) for key in _OVERALL_KEYS[layer]])
    if total == 0 and layer is not Layer.APPLICATION:
        total = sum([get(key, 0) for key in _MAIN_PHASE_KEYS[layer]])
    return total


def _effective_ns(totals_ns: Mapping[StatKey, int], layer: Layer) -> int:
    """``_effective`` of the Total column, in exact ns."""
    value = _overall_ns(totals_ns, layer)
    if value != 0:
        return value
    return sum(_effective_ns(totals_ns, callee) for callee in _CALLEES[layer])


def _application_total_self_ns(totals_ns: Mapping[StatKey, int], overlap_ns: int) -> int | None:
    app = _overall_ns(totals_ns, Layer.APPLICATION)
    if app == 0:
        return None
    callees = sum(_effective_ns(totals_ns, callee) for callee in _CALLEES[Layer.APPLICATION])
    return app - callees + overlap_ns


def _aggregate(
    totals_ns: Mapping[StatKey, int],
    execution_counts: Mapping[Phase, int],
    runtime_overlap_ns: int = 0,
) -> tuple[Table, Table, Mapping[Phase, Table], Mapping[Phase, Table]]:
    """Aggregate accumulated totals into the tables Android's parser prints."""
    warmup_or_benchmark = bool(
        execution_counts.get(Phase.WARMUP) or execution_counts.get(Phase.BENCHMARK)
    )
    app_times: dict[Phase, dict[Phase, dict[LayerKey, float]]] = {}
    if warmup_or_benchmark:
        app_times = {
            app: {phase: {} for phase in (Phase.EXECUTION, *PE_SUBPHASES)}
            for app in (Phase.WARMUP, Phase.BENCHMARK)
        }
        times, self_times = _times_with_app_tables(totals_ns, app_times)
    else:
        times, self_times = _times_of_keys(totals_ns)
    _add_back_moved(self_times, totals_ns)
    app_self_ns = _application_total_self_ns(totals_ns, runtime_overlap_ns)
    if app_self_ns is not None and (runtime_overlap_ns or app_self_ns == 0):
        # Runtime work on several threads at once is subtracted once; an app whose
        # time is all runtime time gets 0, not the float sum's -0.00.  Otherwise the
        # float difference stays, as Android computes it (omr1's JSON is byte-identical).
        row = self_times[Phase.OVERALL] = dict(self_times[Phase.OVERALL])
        row[Layer.APPLICATION] = ns_to_ms(app_self_ns)
    for table in app_times.values():
        for row in table.values():
            _with_total(row)
    app_self = {
        app: {phase: _self_times(row) for phase, row in table.items()}
        for app, table in app_times.items()
    }
    return times, self_times, app_times, app_self


def _times_with_app_tables(
    totals_ns: Mapping[StatKey, int], app_times: dict[Phase, dict[Phase, dict[LayerKey, float]]]
) -> tuple[dict[Phase, dict[LayerKey, float]], dict[Phase, dict[LayerKey, float]]]:
    """(total, self) times per phase and layer over every cell, filling the warmup and
    benchmark tables of ``app_times`` on the way."""
    times: dict[Phase, dict[LayerKey, float]] = {phase: {} for phase in STAT_PHASES}
    for layer in TABLE_LAYERS:
        for phase in STAT_PHASES:
            total_ns = 0
            for app in APP_PHASES:
                value_ns = totals_ns.get((app, layer, phase), 0)
                total_ns += value_ns
                if app in app_times and phase in app_times[app]:
                    app_times[app][phase][layer] = _missing_to_nan(ns_to_ms(value_ns), layer, phase)
            times[phase][layer] = _missing_to_nan(ns_to_ms(total_ns), layer, phase)
    _fill_overall(times)
    for row in times.values():
        _with_total(row)
    return times, {phase: _self_times(row) for phase, row in times.items()}


_ZERO_IS_NAN: Final[Mapping[Phase, tuple[tuple[Layer, bool], ...]]] = {
    phase: tuple((layer, math.isnan(_missing_to_nan(0.0, layer, phase))) for layer in TABLE_LAYERS)
    for phase in STAT_PHASES
}
"""Per phase, each table layer and whether a zero there means "no data" (``_missing_to_nan``)."""
_APP_PHASE_SET: Final = frozenset(APP_PHASES)


def _times_of_keys(
    totals_ns: Mapping[StatKey, int],
) -> tuple[dict[Phase, dict[LayerKey, float]], dict[Phase, dict[LayerKey, float]]]:
    """(total, self) times as ``_times_with_app_tables`` without warmup/benchmark tables,
    from the keys there are; a phase without any key gets the (copied) tables of no data.

    Every run of ``nnemu parse`` goes through here once, so the cells are filled from
    precomputed rules (``_ZERO_IS_NAN``) rather than per-cell calls; the values are
    those of ``_missing_to_nan(ns_to_ms(...))``, operation for operation.
    """
    by_phase: dict[Phase, dict[Layer, int]] = {}
    app_phases = _APP_PHASE_SET
    for (app, layer, phase), value_ns in totals_ns.items():
        if app in app_phases:
            ns_row = by_phase.get(phase)
            if ns_row is None:
                by_phase[phase] = {layer: value_ns}
            else:
                ns_row[layer] = ns_row.get(layer, 0) + value_ns
    nan = math.nan
    times: dict[Phase, dict[LayerKey, float]] = {}
    with_data: set[Phase] = set()
    for phase, rules in _ZERO_IS_NAN.items():
        ns_row = by_phase.get(phase)
        if ns_row is None:
            if phase is not Phase.OVERALL:
                times[phase] = dict(_NO_DATA_TIMES[phase])
                continue
            ns_row = {}
        row: dict[LayerKey, float] = {}
        for layer, zero_is_nan in rules:
            total_ms = ns_row.get(layer, 0) / 1_000_000
            row[layer] = nan if zero_is_nan and total_ms == 0.0 else total_ms
        times[phase] = row
        with_data.add(phase)
    _fill_overall(times)
    self_times: dict[Phase, dict[LayerKey, float]] = {}
    for phase, row in times.items():
        if phase in with_data:
            self_times[phase] = _self_times(_with_total(row))
        else:
            self_times[phase] = dict(_NO_DATA_SELF_TIMES[phase])
    return times, self_times


def _fill_overall(times: dict[Phase, dict[LayerKey, float]]) -> None:
    """A layer with no overall time gets the sum of its main phases."""
    overall = times[Phase.OVERALL]
    rows = [times[phase] for phase in MAIN_PHASES]
    isnan = math.isnan
    for layer in TABLE_LAYERS:
        if overall[layer] == 0.0:
            overall[layer] = sum(
                [0.0 if isnan(value) else value for value in [row[layer] for row in rows]]
            )


MOVED: Final = Phase.UNSPECIFIED
"""Application-phase slot of the totals that hold callee time moved out of a caller:
``(MOVED, caller layer, phase)`` is callee time the contract moved out of the caller's
sections into ``phase`` (one-time initialisation: ``getCapabilities`` inside
``Compilation_create``)."""


def _add_back_moved(
    self_times: dict[Phase, dict[LayerKey, float]], totals_ns: Mapping[StatKey, int]
) -> None:
    """Do not deduct from a caller the callee time that was moved out of its sections.

    That time was deducted from the caller's section already (its phase lost
    it), so the phase it moved to and the Total column must not subtract it
    from the caller again; a layer's Total self time stays the sum of its row.
    """
    moved: dict[tuple[Layer, Phase], int] = {}
    for (app, layer, phase), value in totals_ns.items():
        if app is MOVED:
            moved[layer, phase] = moved.get((layer, phase), 0) + value
    if not moved:
        return
    for (layer, phase), value_ns in moved.items():
        for target in (phase, Phase.OVERALL):
            row = self_times[target]
            if math.isnan(row[layer]) or row[layer] == 0.0:
                continue
            row = self_times[target] = dict(row)
            row[layer] += ns_to_ms(value_ns)


def _tuple_of_runs(runs: Iterable[RunStats]) -> tuple[RunStats, ...]:
    return tuple(runs)


def _tuple_of_diagnostics(diagnostics: Iterable[Diagnostic]) -> tuple[Diagnostic, ...]:
    return tuple(diagnostics)


@attrs.frozen(kw_only=True)
class ParseResult:
    """Everything the parser found in one trace."""

    runs: tuple[RunStats, ...] = attrs.field(converter=_tuple_of_runs)
    """Statistics per run, in trace order."""
    diagnostics: tuple[Diagnostic, ...] = attrs.field(converter=_tuple_of_diagnostics)
    """Problems found, in line order."""
