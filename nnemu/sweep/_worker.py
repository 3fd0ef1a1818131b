"""What runs in a sweep's worker process (a local pool's or a Dask worker's): a chunk of variants.

A worker never raises for a variant: an nnemu error (or any other exception) becomes a
``failed`` row, so one bad variant cannot break the pool.  The base scenario is parsed
once per worker process and the scenario of a point once per chunk run (replications of
one point share it), since applying overrides costs more than a short run.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

_BASES: dict[str, Any] = {}
"""Base scenarios parsed in this process, by the SHA-256 of their text."""
_POINTS: dict[tuple[str, tuple[str, ...]], Any] = {}
"""Scenarios with a point's overrides applied, by (base hash, overrides); a few kept."""
_POINTS_KEPT: Final = 64


@functools.cache
def nnemu_version() -> str:
    """The installed nnemu's version (what results.jsonl and experiment.yaml record; looked
    up once per process)."""
    from importlib import metadata

    try:
        return metadata.version("nnemu")
    except metadata.PackageNotFoundError:  # a source tree that was never installed
        return "unknown"


@attrs.frozen(kw_only=True)
class Job:
    """One variant to run, as shipped to a worker (``Variant`` is one, with its position)."""

    key: str
    """16 lowercase hex characters: a stable hash of (scenario text, overrides, seed)."""
    point: Mapping[str, Any]
    """The varied keys and this variant's values."""
    replication: int
    """0-based replication number."""
    seed: int
    """The run's seed: the experiment's seed + ``replication``."""
    overrides: tuple[str, ...]
    """``KEY=VALUE`` assignments (``set`` then ``vary``) for ``apply_overrides``."""


@attrs.frozen(kw_only=True)
class Chunk:
    """Variants of one sweep run together by one task."""

    scenario_text: str
    """The base scenario's YAML."""
    scenario_path: str
    """Its path (the scenario's ``source`` in messages)."""
    version: str
    """nnemu's version, recorded in each row."""
    jobs: tuple[Job, ...]
    """The variants."""
    crash: frozenset[str] = frozenset()
    """Test hook: variant keys whose worker process dies (``os._exit``) when it reaches them."""


def _base(chunk: Chunk) -> Any:
    from nnemu.scenario import load_scenario_text

    digest = hashlib.sha256(chunk.scenario_text.encode()).hexdigest()
    scenario = _BASES.get(digest)
    if scenario is None:
        scenario = _BASES[digest] = load_scenario_text(chunk.scenario_text, chunk.scenario_path)
    return digest, scenario


def _point_scenario(digest: str, base: Any, overrides: tuple[str, ...]) -> Any:
    from nnemu.overrides import apply_overrides

    cached = _POINTS.get((digest, overrides))
    if cached is None:
        if len(_POINTS) >= _POINTS_KEPT:
            _POINTS.pop(next(iter(_POINTS)))
        cached = _POINTS[(digest, overrides)] = apply_overrides(base, overrides)
    return cached


def row(
    job: Job, version: str, status: str, report: Any = None, error: str | None = None
) -> dict[str, Any]:
    """One line of results.jsonl (docs/experiments.md, "The sweep directory")."""
    return {
        "error": error,
        "nnemu": version,
        "point": dict(job.point),
        "replication": job.replication,
        "report": report,
        "seed": job.seed,
        "status": status,
        "variant": job.key,
    }


def run_job(chunk: Chunk, job: Job) -> dict[str, Any]:
    """Run one variant; its row (``ok``, or ``failed`` with the error's message)."""
    from nnemu._emulator import run
    from nnemu.errors import NnemuError

    if job.key in chunk.crash:
        os._exit(70)
    try:
        digest, base = _base(chunk)
        scenario = _point_scenario(digest, base, job.overrides)
        report = run(scenario, seed=job.seed)
    except NnemuError as err:
        return row(job, chunk.version, "failed", error=str(err))
    except Exception as err:  # a bug must not stop the sweep: record it with the variant
        return row(job, chunk.version, "failed", error=f"{type(err).__name__}: {err}")
    return row(job, chunk.version, "ok", report=dict(report.data))


def quiet_logs() -> None:
    """Keep the runs' diagnostics (a driver death's warnings, ...) off the terminal: a sweep
    records what happened in its rows.  Only where nobody configured structlog (a worker
    process; the sweep's own process unless ``-v``, ``-q`` or ``--log-format`` was given)."""
    import structlog

    if not structlog.is_configured():
        structlog.configure(
            wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL),
            logger_factory=structlog.PrintLoggerFactory(sys.stderr),
            cache_logger_on_first_use=False,
        )


def run_chunk(chunk: Chunk) -> list[dict[str, Any]]:
    """Run every variant of ``chunk`` in order; their rows (all ``failed`` on a worker whose
    nnemu is not the sweep's: a Dask worker of another installation)."""
    quiet_logs()
    version = nnemu_version()
    if version != chunk.version:
        error = (
            f"this worker runs nnemu {version}, the sweep nnemu {chunk.version}: "
            "install the same version on every worker"
        )
        return [row(job, chunk.version, "failed", error=error) for job in chunk.jobs]
    return [run_job(chunk, job) for job in chunk.jobs]


def make_chunks(
    scenario_text: str,
    scenario_path: str,
    version: str,
    jobs: Sequence[Job],
    size: int,
    crash: frozenset[str] = frozenset(),
) -> list[Chunk]:
    """``jobs`` (in the experiment's order, so a point's replications are neighbours and
    share its scenario in the worker's cache) cut into chunks of at most ``size``."""
    return [
        Chunk(
            scenario_text=scenario_text,
            scenario_path=scenario_path,
            version=version,
            jobs=tuple(jobs[start : start + size]),
            crash=crash,
        )
        for start in range(0, len(jobs), max(1, size))
    ]
