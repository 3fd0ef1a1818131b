"""Rendering statistics in the text and JSON formats of Android's parser.

The tables, the ``-``/``n/a`` replacements, the ``*`` footnote and the JSON
keys are those of AOSP ``parse_systrace.py`` / ``parser/output.py``, so that
tools and people used to its output can read nnemu's.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Final

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


def template_inputs(
    run: RunStats, *, per_execution: bool = False, total_times: bool = False
) -> dict[str, float]:
    """Return the 59 ``<layer>_<column>`` values the tables are filled from."""
    chosen: Mapping[Phase, Mapping[LayerKey, float]] = run.times if total_times else run.self_times
    if run.has_warmup_and_benchmark and per_execution:
        benchmark: Table = (run.app_phase_times if total_times else run.app_phase_self_times)[
            Phase.BENCHMARK
        ]
        chosen = {**chosen, **{phase: benchmark[phase] for phase in _BENCHMARK_PHASES}}
    values: dict[str, float] = {}
    for layer in TABLE_LAYERS:
        for phase in _PICKED_PHASES:
            values[_key(layer, phase.value)] = chosen[phase][layer]
    for phase in _PICKED_PHASES:
        values[_key(LAYER_TOTAL, phase.value)] = chosen[phase][LAYER_TOTAL]
    layers: tuple[LayerKey, ...] = (*TABLE_LAYERS, LAYER_TOTAL)
    for row in layers:
        values[_key(row, "PEO")] = (
            values[_key(row, "PE")] - values[_key(row, "PIO")] - values[_key(row, "PR")]
        )
        values[_key(row, "PO")] = chosen[Phase.OVERALL][row]
    total_pe = values[_key(LAYER_TOTAL, "PE")]
    for layer in TABLE_LAYERS:
        values[_key(layer, "PEp")] = (
            values[_key(layer, "PE")] * 100.0 / total_pe if total_pe > 0.0 else math.nan
        )
    if per_execution:
        app = Phase.BENCHMARK if run.has_warmup_and_benchmark else Phase.OVERALL
        divide_by = run.execution_counts[app]
        for row in layers:
            for column in _PER_EXECUTION_COLUMNS:
                key = _key(row, column)
                values[key] = values[key] / divide_by if divide_by else math.nan
    return values


def _has_cpu(run: RunStats, total_times: bool) -> bool:
    chosen = run.times if total_times else run.self_times
    return any(chosen[phase][Layer.CPU] > 0.0 for phase in _PICKED_PHASES)


def _fill(template: str, values: Mapping[str, float]) -> str:
    template = template.replace(":fl}", ":>11.2f}").replace(":f}", ":>9.2f}")
    return template.format(**values)


def _table(run: RunStats, *, per_execution: bool, total_times: bool) -> str:
    values = template_inputs(run, per_execution=per_execution, total_times=total_times)
    template, row = (
        (_TEMPLATE_EXECUTION_ONLY, _ROW_EXECUTION_ONLY)
        if per_execution
        else (_TEMPLATE_ALL_PHASES, _ROW_ALL_PHASES)
    )
    has_cpu = _has_cpu(run, total_times)
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
    if run.has_warmup_and_benchmark and per_execution:
        template = template.replace("Execution", "Benchmark")
    output = _fill(template.replace("{rows}", "\n".join(rows)), values)
    output = output.replace(" 0.00%", "     -").replace(" 0.00", "    -").replace(" nan", " n/a")
    return output


def _detail(run: RunStats) -> str:
    lines = []
    for thread in run.detail:
        lines.append(f"{thread.tid} ({thread.tgid}) {'Driver' if thread.is_driver else 'App'}")
        for item in thread.items:
            lines.append(f"   {item.tag} {item.elapsed_ms:.6f} {item.mark}")
    return "".join(line + "\n" for line in lines)


def _several_clients(result: ParseResult) -> bool:
    """Whether the runs are of more than one client process (tables then get titles)."""
    return len({run.pid for run in result.runs}) > 1


def _ordinals(result: ParseResult) -> dict[int, tuple[int, int]]:
    """Each run's (1-based position, count) among the runs of its process."""
    counts: dict[str, int] = {}
    for run in result.runs:
        counts[run.pid] = counts.get(run.pid, 0) + 1
    seen: dict[str, int] = {}
    ordinals = {}
    for run in result.runs:
        seen[run.pid] = seen.get(run.pid, 0) + 1
        ordinals[id(run)] = (seen[run.pid], counts[run.pid])
    return ordinals


def _title(run: RunStats, ordinal: tuple[int, int]) -> str:
    name = f"{run.process_name} " if run.process_name else ""
    who = f"process {name}(pid {run.pid})" if run.pid else "sections outside any run"
    title = f"=== {who}, run {ordinal[0]} of {ordinal[1]}"
    if run.incomplete:
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
    chunks = []
    titled = _several_clients(result)
    ordinals = _ordinals(result)
    for run in result.runs:
        if titled or run.incomplete:
            chunks.append(_title(run, ordinals[id(run)]) + "\n")
        chunks.append(run.starting_mark + "\n")
        table = _table(run, per_execution=per_execution, total_times=total_times)
        chunks.append("".join(line + "\n" for line in table.splitlines()))
        if print_detail:
            chunks.append(_detail(run))
    return "".join(chunks)


def _jsonable(value: object) -> object:
    if isinstance(value, float):
        return None if math.isnan(value) else value
    if isinstance(value, Mapping):
        return {str(key): _jsonable(item) for key, item in value.items()}
    return value


def run_json(
    run: RunStats, *, per_execution: bool = False, total_times: bool = False, titled: bool = False
) -> object:
    """Return one run as the JSON object Android's parser prints (NaN -> None).

    With ``titled`` (a trace of several client processes) or for an incomplete
    run, the object also names its ``process`` (``pid``, ``name``); an
    incomplete run has ``"incomplete": true``.
    """
    times: dict[str, object] = {phase.value: row for phase, row in run.times.items()}
    self_times: dict[str, object] = {phase.value: row for phase, row in run.self_times.items()}
    for app, table in run.app_phase_times.items():
        times[app.value] = table
    for app, table in run.app_phase_self_times.items():
        self_times[app.value] = table
    extra: dict[str, object] = {}
    if titled or run.incomplete:
        extra["process"] = {"pid": run.pid, "name": run.process_name}
    if run.incomplete:
        extra["incomplete"] = True
    return _jsonable(
        {
            **extra,
            "execution_counts": run.execution_counts,
            "self_times": self_times,
            "starting_mark": run.starting_mark,
            "template_inputs": template_inputs(
                run, per_execution=per_execution, total_times=total_times
            ),
            "times": times,
            "version": 1,
        }
    )


def format_json(
    result: ParseResult, *, per_execution: bool = False, total_times: bool = False
) -> str:
    """Render every run as a JSON list laid out like Android's parser's output."""
    parts = ["[\n"]
    for index, run in enumerate(result.runs):
        if index:
            parts.append(",\n")
        obj = run_json(
            run,
            per_execution=per_execution,
            total_times=total_times,
            titled=_several_clients(result),
        )
        parts.append(json.dumps(obj, indent=2, sort_keys=True) + "\n")
    parts.append("]\n")
    return "".join(parts)
