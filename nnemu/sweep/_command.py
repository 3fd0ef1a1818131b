"""``nnemu sweep``: check the experiment, run what is not done yet, write the table and summary."""

from __future__ import annotations

import os
from typing import Any, Final, TextIO

from nnemu._files import write_text
from nnemu._outputs import Role, clash_problems
from nnemu._progress import CountProgress
from nnemu.errors import ExitCode, Terminated
from nnemu.sweep._engines import (
    MISSING_DASK,
    EngineError,
    dask_available,
    dask_chunk_size,
    local_chunk_size,
    run_dask,
    run_local,
    time_one,
)
from nnemu.sweep._experiment import load_experiment
from nnemu.sweep._results import (
    CSV,
    EXPERIMENT,
    PARQUET,
    RESULTS,
    SUMMARY,
    SweepDir,
    SweepDirError,
    summary,
    table,
    variants_left,
    write_table,
)
from nnemu.sweep._worker import Chunk, Job, make_chunks, nnemu_version, quiet_logs

CRASH_HOOK: Final = "NNEMU_SWEEP_TEST_CRASH"
"""Test hook: comma-separated variant keys whose worker process dies (``os._exit``) on them."""

_WRITES: Final = (EXPERIMENT, RESULTS, PARQUET, CSV, SUMMARY)
"""The files a sweep writes in its directory (and with --plot, one PNG per metric)."""


def default_out(experiment_path: str) -> str:
    """The sweep directory when no --out is given: ``<experiment name>.sweep`` here."""
    stem = os.path.splitext(os.path.basename(experiment_path))[0] or "experiment"
    return f"{stem}.sweep"


def run_sweep_command(
    experiment_path: str,
    *,
    out_dir: str | None,
    engine: str,
    workers: int | None,
    address: str | None,
    resume: bool,
    plot: bool,
    retry_failed: bool = False,
    stdout: TextIO,
    stderr: TextIO,
) -> int:
    """Run ``nnemu sweep``; the exit code (0 done, 1 every run crashed, 2 bad input,
    130 interrupted).

    ``resume`` keeps the results already in the directory, but runs again the variants that
    crashed (a worker died); ``retry_failed`` (which implies ``resume``) also those that failed.
    """
    resume = resume or retry_failed
    if engine == "dask" and not dask_available():
        stderr.write(MISSING_DASK + "\n")
        return ExitCode.BAD_INPUT
    if address is not None and engine != "dask":
        stderr.write("--address: only with --engine dask\n")
        return ExitCode.BAD_INPUT
    if workers is not None and workers < 1:
        stderr.write(f"--workers: expected a number of processes >= 1, got {workers}\n")
        return ExitCode.BAD_INPUT
    if plot:
        from nnemu.pictures import plots_available
        from nnemu.sweep._plot import MISSING_MATPLOTLIB

        if not plots_available():
            stderr.write(MISSING_MATPLOTLIB + "\n")
            return ExitCode.BAD_INPUT
    quiet_logs()  # the checks and Dask's timing run emulate here too
    experiment = load_experiment(experiment_path, progress=stderr)
    directory = out_dir or default_out(experiment_path)
    clashes = clash_problems(
        [
            Role(experiment_path, "experiment"),
            Role(experiment.scenario_path, "scenario"),
            Role(directory, "results", "--out", writes=_WRITES + (("*.png",) if plot else ())),
        ]
    )
    if clashes:
        stderr.write("".join(f"{problem}\n" for problem in clashes))
        return ExitCode.BAD_INPUT
    version = nnemu_version()
    sweep = SweepDir(directory, experiment, version)
    try:
        sweep.open(resume=resume)
    except (SweepDirError, OSError) as err:
        stderr.write(f"{err}\n")
        return ExitCode.BAD_INPUT
    try:
        left = variants_left(experiment, sweep.done(retry_failed=retry_failed))
        total = experiment.point_count() * experiment.replications
        if sweep.rows:
            stderr.write(_resuming(sweep, total - len(left), total, retry_failed))
        if left:
            stderr.write("".join(f"{warning}\n" for warning in experiment.ineffective_keys(stderr)))
        crash = frozenset(key for key in os.environ.get(CRASH_HOOK, "").split(",") if key)
        jobs: list[Job] = list(left)
        bar = CountProgress(stderr, label="sweep", total=total, already=total - len(left))
        bar.advance(0)

        def on_rows(rows: list[dict[str, Any]]) -> None:
            sweep.append(rows)
            bar.advance(len(rows), sum(row["status"] != "ok" for row in rows))

        count = workers or os.cpu_count() or 1
        try:
            if jobs:
                _run(
                    experiment.scenario_text,
                    experiment.scenario_path,
                    version,
                    jobs,
                    crash,
                    engine,
                    count,
                    address,
                    on_rows,
                )
        except (KeyboardInterrupt, Terminated) as stop:
            bar.clear()
            done = len(sweep.done() & {variant.key for variant in experiment.variants()})
            name = "SIGTERM" if isinstance(stop, Terminated) else "SIGINT"
            stderr.write(
                f"\ninterrupted by {name}: {done} of {total} variants are in "
                f"{os.path.join(directory, RESULTS)}; finish with: nnemu sweep "
                f"{experiment_path} --out {directory} --resume\n"
            )
            return ExitCode.TERMINATED if isinstance(stop, Terminated) else ExitCode.INTERRUPTED
        except (EngineError, SweepDirError) as err:  # SweepDirError: results.jsonl unwritable
            bar.clear()
            stderr.write(f"{err}\n")
            return ExitCode.BAD_INPUT
        bar.clear()
    finally:
        sweep.close()
    return _finish(sweep, directory, plot, stdout, stderr)


def _resuming(sweep: SweepDir, kept: int, total: int, retry_failed: bool) -> str:
    """The line that says what a resumed sweep keeps and runs again."""
    keys = {variant.key for variant in sweep.experiment.variants()}
    statuses = [status for key, status in sweep.statuses().items() if key in keys]
    again = [f"{statuses.count('crashed')} crashed"] if "crashed" in statuses else []
    failed = statuses.count("failed")
    if failed and retry_failed:
        again.append(f"{failed} failed")
    line = f"resuming: {kept} of {total} variants already done"
    if again:
        line += f"; running again {' and '.join(again)}"
    if failed and not retry_failed:
        line += f" ({failed} failed kept: --retry-failed runs them again)"
    return line + "\n"


def _run(
    scenario_text: str,
    scenario_path: str,
    version: str,
    jobs: list[Job],
    crash: frozenset[str],
    engine: str,
    workers: int,
    address: str | None,
    on_rows: Any,
) -> None:
    def chunks(size: int, of: list[Job]) -> list[Chunk]:
        return make_chunks(scenario_text, scenario_path, version, of, size, crash)

    if engine == "local":
        run_local(chunks(local_chunk_size(len(jobs), workers), jobs), workers, on_rows)
        return
    rest = jobs
    seconds = 0.05
    if jobs[0].key not in crash:
        # One variant run here sizes Dask's tasks; its row is a result like any other.
        first, seconds = time_one(chunks(1, jobs[:1])[0])
        on_rows([first])
        rest = jobs[1:]
    if rest:
        run_dask(
            lambda count: chunks(dask_chunk_size(len(rest), count, seconds), rest),
            workers,
            address,
            on_rows,
        )


def _finish(sweep: SweepDir, directory: str, plot: bool, stdout: TextIO, stderr: TextIO) -> int:
    """Write the table, summary.txt and the plots; print the summary."""
    experiment = sweep.experiment
    rows = sweep.latest()
    path, parquet = write_table(sweep, table(experiment, rows))
    if not parquet:
        stderr.write(
            "pyarrow is not installed: the table is written as CSV "
            "(pip install 'nnemu[sweep]' for results.parquet)\n"
        )
    text = summary(experiment, rows)
    write_text(sweep.file(SUMMARY), text, "summary")
    stdout.write(text)
    stdout.write(f"\nresults in {path}; summary in {sweep.file(SUMMARY)}\n")
    if plot:
        from nnemu.sweep._plot import write_plots

        written = write_plots(experiment, rows, directory)
        if written:
            stdout.write(f"plots: {', '.join(written)}\n")
        else:
            stderr.write("--plot: no varied key has numbers only; nothing to plot against\n")
    if rows and all(row["status"] == "crashed" for row in rows):
        stderr.write(
            f"every run crashed (its worker process died): see the error column of {path}\n"
        )
        return ExitCode.FAILED
    return ExitCode.OK
