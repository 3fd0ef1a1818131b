"""Rendering statistics in the text and JSON formats of Android's parser.

The tables, the ``-``/``n/a`` replacements, the ``*`` footnote and the JSON
keys are those of AOSP ``parse_systrace.py`` / ``parser/output.py``, so that
tools and people used to its output can read nnemu's.
"""

from __future__ import annotations

import collections
import functools
import io
import json
import math
from collections.abc import Mapping
from typing import IO, Final, TextIO

from nnemu.parser._model import LAYER_TOTAL, TABLE_LAYERS, LayerKey, ParseResult, RunStats, Table
from nnemu.tracer import Layer, Phase

_TEMPLATE_ALL_PHASES: Final = """
===========================================================================================================================================
NNAPI timing summary (self-times, ms wall-clock)                                                      Execution
                                                           ----------------------------------------------------
              Initialization   Preparation   Compilation           I/O       Compute      Results     Ex. total   Termination        Total
              --------------   -----------   -----------   -----------  ------------  -----------   -----------   -----------   ----------
{rows}

Total              {LT_PI:f}*    {LT_PP:f}*    {LT_PC:f}*  {LT_PIO:fl}*  {LT_PEO:fl}*   {LT_PR:f}*    {LT_PE:f}*    {LT_PT:f}*   {LT_PO:f}*
===========================================================================================================================================
* This total ignores missing (n/a) values and thus is not necessarily consistent with the rest of the numbers
"""
_ROW_ALL_PHASES: Final = (
    "{name:<11}        {L_PI:f}     {L_PP:f}     {L_PC:f}   {L_PIO:fl}   {L_PEO:fl}    {L_PR:f}"
    "     {L_PE:f}     {L_PT:f}    {L_PO:f}"
)

_TEMPLATE_EXECUTION_ONLY: Final = """
================================================================================
NNAPI timing summary (self-times, ms wall-clock)                       Execution
              ------------------------------------------------------------------
                      I/O       Compute      Results         Total    Percentage
              -----------  ------------  -----------   -----------   -----------
{rows}

Total         {LT_PIO:fl}*  {LT_PEO:fl}*   {LT_PR:f}*    {LT_PE:f}          100%
================================================================================
* This total ignores missing (n/a) values and thus is not necessarily consistent
  with the rest of the numbers
"""
_ROW_EXECUTION_ONLY: Final = (
    "{name:<11}   {L_PIO:fl}   {L_PEO:fl}    {L_PR:f}     {L_PE:f}  {L_PEp:fl}%"
)

_LAYER_NAMES: Final = {
    Layer.APPLICATION: "Application",
    Layer.RUNTIME: "Runtime",
    Layer.IPC: "IPC",
    Layer.DRIVER: "Driver",
    Layer.CPU: "CPU",
}
_PICKED_PHASES: Final = (
    Phase.INITIALIZATION,
    Phase.PREPARATION,
    Phase.COMPILATION,
    Phase.EXECUTION,
    Phase.TERMINATION,
    Phase.INPUTS_AND_OUTPUTS,
    Phase.RESULTS,
)
_PER_EXECUTION_COLUMNS: Final = ("PIO", "PEO", "PR", "PE")
_BENCHMARK_PHASES: Final = (
    Phase.EXECUTION,
    Phase.INPUTS_AND_OUTPUTS,
    Phase.TRANSFORMATION,
    Phase.COMPUTATION,
    Phase.RESULTS,
)


def _key(layer: LayerKey, column: str) -> str:
    return f"{layer}_{column}"


_ROWS: Final[tuple[LayerKey, ...]] = (*TABLE_LAYERS, LAYER_TOTAL)
_CELLS: Final = tuple(
    (row, phase, _key(row, phase.value)) for row in _ROWS for phase in _PICKED_PHASES
)
"""(row, phase, its ``<layer>_<column>`` key) of every value read from a table, in output order."""
_DERIVED: Final = tuple(
    (row, _key(row, "PE"), _key(row, "PIO"), _key(row, "PR"), _key(row, "PEO"), _key(row, "PO"))
    for row in _ROWS
)
"""Each row's keys of PE, PIO, PR and of the derived PEO and PO."""
_PERCENT: Final = tuple((_key(layer, "PE"), _key(layer, "PEp")) for layer in TABLE_LAYERS)
_PER_EXECUTION_KEYS: Final = tuple(
    _key(row, column) for row in _ROWS for column in _PER_EXECUTION_COLUMNS
)
_TOTAL_PE: Final = _key(LAYER_TOTAL, "PE")


def exact_ms(value_ms: float) -> float:
    """``value_ms``, a whole number of ns in ms reached by float sums and differences, as
    that number of ns divided by 10**6 once (``0.21999999999999886`` -> ``0.22``).

    Every time in the tables is a sum or difference of integer ns totals, so it is a
    multiple of 1 ns; the float arithmetic that makes the text table (as Android's parser
    does) is off by far less than 0.5 ns, and ``round`` (correctly rounded) returns the
    float nearest the exact decimal, which is ``ns / 1_000_000``.  NaN stays NaN, and a
    difference of equal totals whose float noise is below 0 is 0 ns, not ``-0.0``.
    """
    return round(value_ms, 6) + 0.0


def _exact_table(table: Mapping[Phase, Mapping[LayerKey, float]]) -> dict[str, object]:
    return {
        phase.value: {layer: exact_ms(value) for layer, value in row.items()}
        for phase, row in table.items()
    }


def template_inputs(
    run: RunStats, *, per_execution: bool = False, total_times: bool = False, exact: bool = False
) -> dict[str, float]:
    """Return the 59 ``<layer>_<column>`` values the tables are filled from.

    With ``exact``, times are whole ns (``exact_ms``) before the percentages and the
    per-execution means are taken from them (``nnemu parse --json``); without, they are
    the float arithmetic of Android's parser, which its text table prints.
    """
    chosen: Mapping[Phase, Mapping[LayerKey, float]] = run.times if total_times else run.self_times
    if run.has_warmup_and_benchmark and per_execution:
        benchmark: Table = (run.app_phase_times if total_times else run.app_phase_self_times)[
            Phase.BENCHMARK
        ]
        chosen = {**chosen, **{phase: benchmark[phase] for phase in _BENCHMARK_PHASES}}
    values: dict[str, float] = {key: chosen[phase][row] for row, phase, key in _CELLS}
    overall = chosen[Phase.OVERALL]
    for row, pe, pio, pr, peo, po in _DERIVED:
        values[peo] = values[pe] - values[pio] - values[pr]
        values[po] = overall[row]
    if exact:
        values = {key: exact_ms(value) for key, value in values.items()}
    total_pe = values[_TOTAL_PE]
    for pe, pep in _PERCENT:
        values[pep] = values[pe] * 100.0 / total_pe if total_pe > 0.0 else math.nan
    if per_execution:
        app = Phase.BENCHMARK if run.has_warmup_and_benchmark else Phase.OVERALL
        divide_by = run.execution_counts[app]
        for key in _PER_EXECUTION_KEYS:
            values[key] = values[key] / divide_by if divide_by else math.nan
    return values


def _has_cpu(run: RunStats, total_times: bool) -> bool:
    chosen = run.times if total_times else run.self_times
    return any(chosen[phase][Layer.CPU] > 0.0 for phase in _PICKED_PHASES)


@functools.cache
def _template(*, per_execution: bool, total_times: bool, has_cpu: bool, benchmark: bool) -> str:
    """The format string of a table of this kind, built once per kind."""
    template, row = (
        (_TEMPLATE_EXECUTION_ONLY, _ROW_EXECUTION_ONLY)
        if per_execution
        else (_TEMPLATE_ALL_PHASES, _ROW_ALL_PHASES)
    )
    rows = []
    for layer in TABLE_LAYERS:
        if layer is Layer.CPU and not has_cpu:
            continue
        line = row.replace("L_", f"{layer.value}_")
        if layer is Layer.APPLICATION and not per_execution:
            line += "*"
        rows.append(line.replace("{name:<11}", f"{_LAYER_NAMES[layer]:<11}"))
    if total_times:
        template = template.replace("self-times", "total time")
    if benchmark:
        template = template.replace("Execution", "Benchmark")
    template = template.replace("{rows}", "\n".join(rows))
    return template.replace(":fl}", ":>11.2f}").replace(":f}", ":>9.2f}")


def _table(run: RunStats, *, per_execution: bool, total_times: bool) -> str:
    values = template_inputs(run, per_execution=per_execution, total_times=total_times)
    template = _template(
        per_execution=per_execution,
        total_times=total_times,
        has_cpu=_has_cpu(run, total_times),
        benchmark=run.has_warmup_and_benchmark and per_execution,
    )
    output = template.format_map(values)
    output = output.replace(" 0.00%", "     -").replace(" 0.00", "    -").replace(" nan", " n/a")
    return output


def _detail(run: RunStats) -> str:
    lines = []
    for thread in run.detail:
        lines.append(f"{thread.tid} ({thread.tgid}) {'Driver' if thread.is_driver else 'App'}")
        for item in thread.items:
            lines.append(f"   {item.tag} {item.elapsed_ms:.6f} {item.mark}")
    return "".join(line + "\n" for line in lines)


def _title(pid: str, process_name: str, incomplete: bool, ordinal: tuple[int, int]) -> str:
    name = f"{process_name} " if process_name else ""
    who = f"process {name}(pid {pid})" if pid else "sections outside any run"
    title = f"=== {who}, run {ordinal[0]} of {ordinal[1]}"
    if incomplete:
        title += " -- INCOMPLETE: the trace ends before this run does; its figures are partial"
    return title


def format_text(
    result: ParseResult,
    *,
    per_execution: bool = False,
    total_times: bool = False,
    print_detail: bool = False,
) -> str:
    """Render every run as Android's parser prints it (starting mark, then the table)."""
    with Printout(
        as_json=False,
        per_execution=per_execution,
        total_times=total_times,
        print_detail=print_detail,
    ) as printout:
        return printout.render(result)


def _jsonable(value: object) -> object:
    if isinstance(value, float):
        return None if math.isnan(value) else value
    if isinstance(value, Mapping):
        return {str(key): _jsonable(item) for key, item in value.items()}
    return value


def run_json(
    run: RunStats, *, per_execution: bool = False, total_times: bool = False, titled: bool = False
) -> object:
    """Return one run as the JSON object Android's parser prints (NaN -> None), its times
    whole ns in ms (``exact_ms``: ``0.22``, not the ``0.21999999999999886`` of float
    differences; the text table shows the same numbers to 2 places).

    With ``titled`` (a trace of several client processes) or for an incomplete
    run, the object also names its ``process`` (``pid``, ``name``); an
    incomplete run has ``"incomplete": true``, and a run whose figures are wrong
    (``RunStats.warnings``: a negative cell) the ``"warnings"`` stderr gives too.
    """
    times = _exact_table(run.times)
    self_times = _exact_table(run.self_times)
    for app, table in run.app_phase_times.items():
        times[app.value] = _exact_table(table)
    for app, table in run.app_phase_self_times.items():
        self_times[app.value] = _exact_table(table)
    extra: dict[str, object] = {}
    if titled or run.incomplete:
        extra["process"] = {"pid": run.pid, "name": run.process_name}
    if run.incomplete:
        extra["incomplete"] = True
    if run.warnings:
        extra["warnings"] = list(run.warnings)
    return _jsonable(
        {
            **extra,
            "execution_counts": run.execution_counts,
            "self_times": self_times,
            "starting_mark": run.starting_mark,
            "template_inputs": template_inputs(
                run, per_execution=per_execution, total_times=total_times, exact=True
            ),
            "times": times,
            "version": 1,
        }
    )


def format_json(
    result: ParseResult, *, per_execution: bool = False, total_times: bool = False
) -> str:
    """Render every run as a JSON list laid out like Android's parser's output."""
    with Printout(as_json=True, per_execution=per_execution, total_times=total_times) as printout:
        return printout.render(result)


_SPOOL_IN_MEMORY: Final = 8 << 20
"""Bytes of rendered runs ``Printout`` keeps in memory before it moves them to a temporary file
(``tempfile`` is imported only then: with ``shutil`` and ``random`` it costs ~3 ms of start-up)."""

_PROCESS_BEFORE: Final = b',\n  "self_times": '
"""Where a run's JSON object gets its ``process`` entry (keys are sorted: it comes just before)."""


class _Entry:
    """What ``Printout`` keeps of a rendered run: its place in the spool and its title's facts."""

    __slots__ = ("incomplete", "length", "offset", "pid", "process_name", "seq", "split")

    def __init__(self, seq: int, run: RunStats, offset: int, length: int, split: int) -> None:
        self.seq = seq
        self.pid = run.pid
        self.process_name = run.process_name
        self.incomplete = run.incomplete
        self.offset = offset
        self.length = length
        # JSON: where the "process" entry goes if the trace has several clients (-1: none).
        self.split = split


class Printout:
    """The text or JSON output of a parse, rendered run by run as the runs finish.

    Each run is rendered once, when the parser hands it over (``add``), and only
    its rendering is kept, in a spool that moves to a temporary file beyond
    ``_SPOOL_IN_MEMORY`` bytes; the run's statistics and tables are dropped.  What
    depends on every run (whether the trace has several client processes, so the
    tables get titles; "run k of N") is added when the output is written
    (``write``), in the order the runs started.  ``format_text`` and ``format_json``
    render a ``ParseResult`` through it too, so ``nnemu parse`` (runs handed over
    as they finish) and the library print the same bytes.
    """

    def __init__(
        self,
        *,
        as_json: bool,
        per_execution: bool = False,
        total_times: bool = False,
        print_detail: bool = False,
        include_incomplete: bool = True,
    ) -> None:
        self.as_json = as_json
        self.per_execution = per_execution
        self.total_times = total_times
        self.print_detail = print_detail
        self.include_incomplete = include_incomplete
        # Closed by close() (or the with block), not here: it outlives this call.
        self._spool: IO[bytes] = io.BytesIO()
        self._on_disk = False
        self._size = 0
        self._entries: list[_Entry] = []

    def clear(self) -> None:
        """Forget the runs added so far (the trace is read again: ``nnemu parse`` of rows
        out of time order)."""
        self._entries.clear()

    def __enter__(self) -> Printout:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Drop the spool (and its temporary file, if it has one)."""
        self._spool.close()

    def add(self, seq: int, run: RunStats) -> None:
        """Render ``run``, the ``seq``-th to start (an incomplete one only if asked for)."""
        if run.incomplete and not self.include_incomplete:
            return
        split = -1
        if self.as_json:
            obj = run_json(run, per_execution=self.per_execution, total_times=self.total_times)
            data = json.dumps(obj, indent=2, sort_keys=True).encode(errors="surrogatepass")
            if not run.incomplete:
                split = data.index(_PROCESS_BEFORE)
        else:
            table = _table(run, per_execution=self.per_execution, total_times=self.total_times)
            # (Both table templates end with a line break and hold no other kind.)
            body = [run.starting_mark + "\n", table]
            if self.print_detail:
                body.append(_detail(run))
            data = "".join(body).encode(errors="surrogatepass")
        self._spool.write(data)
        self._entries.append(_Entry(seq, run, self._size, len(data), split))
        self._size += len(data)
        if self._size > _SPOOL_IN_MEMORY and not self._on_disk:
            self._move_to_disk()

    def _move_to_disk(self) -> None:
        """Move the spool from memory to a temporary file (deleted when closed)."""
        import tempfile

        memory = self._spool
        assert isinstance(memory, io.BytesIO)
        spilled = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close())
        spilled.write(memory.getvalue())
        memory.close()
        self._spool = spilled
        self._on_disk = True

    def render(self, result: ParseResult) -> str:
        """The output for the runs of ``result``, as a string."""
        for seq, run in enumerate(result.runs):
            self.add(seq, run)
        out = io.StringIO()
        self.write(out)
        return out.getvalue()

    def write(self, out: TextIO) -> None:
        """Write the runs added so far to ``out``, in the order they started."""
        entries = sorted(self._entries, key=lambda entry: entry.seq)
        titled = len({entry.pid for entry in entries}) > 1
        counts = collections.Counter(entry.pid for entry in entries)
        seen: dict[str, int] = {}
        if self.as_json:
            out.write("[\n")
        for index, entry in enumerate(entries):
            seen[entry.pid] = seen.get(entry.pid, 0) + 1
            self._spool.seek(entry.offset)
            data = self._spool.read(entry.length)
            if self.as_json:
                if index:
                    out.write(",\n")
                if titled and entry.split >= 0:
                    process = {"process": {"name": entry.process_name, "pid": entry.pid}}
                    entry_text = json.dumps(process, indent=2, sort_keys=True)[2:-2]
                    head = data[: entry.split].decode(errors="surrogatepass")
                    out.write(f"{head},\n{entry_text}")
                    data = data[entry.split :]
                out.write(data.decode(errors="surrogatepass") + "\n")
                continue
            if titled or entry.incomplete:
                ordinal = (seen[entry.pid], counts[entry.pid])
                out.write(_title(entry.pid, entry.process_name, entry.incomplete, ordinal) + "\n")
            out.write(data.decode(errors="surrogatepass"))
        if self.as_json:
            out.write("]\n")
