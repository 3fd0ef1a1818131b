"""What the pictures show, taken out of a finished emulator as frozen values.

``collect`` reads the per-execution records a run keeps when it is asked to
(``run(..., keep_executions=True, inspect=...)``: ``app.records``,
``device.history``) and turns them into plain numbers, so the writers never touch
the emulator and another command (replay, a notebook) can build the same pictures
from the same values.

Each device job records the stretches it ran on a compute unit
(``Job.segments``: start, end, unit), so preempted jobs are drawn exactly.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from nnemu._emulator import Emulator
    from nnemu.driver import Job


@attrs.frozen(kw_only=True)
class JobPicture:
    """One execution on a device, as drawn on its timeline."""

    app: str
    """Name of the app that issued it (``uid:<n>`` if no app has its uid)."""
    priority: str
    """Priority of the prepared model (``LOW``, ``MEDIUM``, ``HIGH``)."""
    arrived_ns: int
    """When it reached the device."""
    started_ns: int | None
    """When it first got a unit (None: still waiting when the run ended)."""
    finished_ns: int
    """When it left the device (the end of the run if it had not)."""
    segments: tuple[tuple[int, int, int], ...]
    """(start_ns, end_ns, lane) of each stretch it held a unit, in time order."""
    preempted: int
    """How many times it yielded its unit."""
    status: str
    """How it ended: ``NONE``, ``MISSED_DEADLINE_TRANSIENT``, ...; ``IN_FLIGHT`` if it had not."""
    deadline_ns: int | None
    """Its absolute deadline, if any."""

    @property
    def deadline_missed(self) -> bool:
        """Aborted for its deadline, or finished after it."""
        if self.status.startswith("MISSED_DEADLINE"):
            return True
        return self.deadline_ns is not None and self.finished_ns > self.deadline_ns


@attrs.frozen(kw_only=True)
class DevicePicture:
    """One device's jobs."""

    name: str
    """Device name."""
    units: int
    """Compute units (timeline lanes)."""
    preemption: str
    """Preemption kind of the device (``none``, ``checkpoint``, ``restart``)."""
    jobs: tuple[JobPicture, ...]
    """Every job that reached the device, in arrival order."""


@attrs.frozen(kw_only=True)
class ResultPicture:
    """One final result of an app's execution that was not ``NO_ERROR``."""

    arrival_ns: int
    """When the execution was submitted."""
    finished_ns: int
    """When the app got the result."""
    code: str
    """Result code name (``MISSED_DEADLINE_PERSISTENT``, ...)."""


@attrs.frozen(kw_only=True)
class ExecutionPicture:
    """One execution as its app saw it, from arrival to the final result."""

    arrival_ns: int
    """When the frame arrived (was submitted)."""
    started_ns: int | None
    """When its final attempt first started running on a device (or the runtime's CPU path);
    None if it never did (refused, rejected, or failed before any compute)."""
    finished_ns: int
    """When the app got the final result."""
    code: str
    """Final result code (``NO_ERROR``, ``MISSED_DEADLINE_TRANSIENT``, ...)."""
    late: bool
    """A ``NO_ERROR`` result that came after its deadline."""

    @property
    def deadline_missed(self) -> bool:
        """Refused or aborted for its deadline, or completed after it (the report's count)."""
        return self.late or self.code.startswith("MISSED_DEADLINE")


@attrs.frozen(kw_only=True)
class FaultPicture:
    """One injected fault of the scenario that has a time window."""

    device: str
    """Device it is injected into."""
    kind: str
    """``crash``, ``busy``, ``offline`` or ``slowdown`` (``transient_failure``: the whole run)."""
    start_ns: int
    """When it starts."""
    end_ns: int | None
    """When it ends (None: never; a crash lasts to the end of the run)."""
    factor: float
    """Slow-down factor (``slowdown``), else 1."""


@attrs.frozen(kw_only=True)
class AppPicture:
    """One app's executions."""

    name: str
    """App name."""
    uid: int
    """Linux uid."""
    priority: str
    """Compilation priority (``LOW``, ``MEDIUM``, ``HIGH``)."""
    latencies_ns: tuple[int, ...]
    """Arrival to completion of each completed execution, in completion order."""
    codes: tuple[tuple[str, int], ...]
    """(result code, count) of the final results, most frequent first."""
    failures: tuple[ResultPicture, ...]
    """Every final result other than ``NO_ERROR``, in completion order."""
    executions: tuple[ExecutionPicture, ...] = ()
    """Every execution that got a final result, in arrival order (dropped frames have none)."""
    timeout_ns: int | None = None
    """The execution timeout the app sets (its deadline after arrival), if any."""


@attrs.frozen(kw_only=True)
class RunPictures:
    """Everything the HTML page and the PNG figures draw."""

    scenario: str
    """Scenario name."""
    seed: int
    """Seed of the run."""
    end_ns: int
    """Virtual time at the end of the run."""
    apps: tuple[AppPicture, ...]
    """Apps in scenario order."""
    devices: tuple[DevicePicture, ...]
    """Driver devices in scenario order."""
    cpu: DevicePicture | None = None
    """The runtime's CPU path (``nnapi-reference``): each CPU execution a job, one lane per
    execution running at once (they run on the calling app threads)."""
    faults: tuple[FaultPicture, ...] = ()
    """The scenario's fault windows, by start time."""


def _device_picture(
    name: str,
    units: int,
    preemption: str,
    history: Iterable[Job],
    apps: dict[int, str],
    end_ns: int,
) -> DevicePicture:
    pictures = []
    for job in history:
        stretches = list(job.segments)
        if job.unit >= 0:  # still on its unit when the run stopped
            stretches.append((job._segment_start, end_ns, job.unit))
        status = "IN_FLIGHT" if job.status is None else job.status.name
        pictures.append(
            JobPicture(
                app=apps.get(job.uid, f"uid:{job.uid}"),
                priority=job.priority.name,
                arrived_ns=job.arrived_ns or 0,
                started_ns=job.started_ns,
                finished_ns=job.finished_ns if job.finished_ns is not None else end_ns,
                segments=tuple(stretches),
                preempted=job.preempted,
                status=status,
                deadline_ns=job.deadline_ns,
            )
        )
    return DevicePicture(name=name, units=units, preemption=preemption, jobs=tuple(pictures))


def _cpu_picture(
    runs: list[tuple[str, tuple[int, int, str, int | None]]], end_ns: int
) -> DevicePicture:
    """The runtime's CPU path as a device: a lane per CPU execution running at once."""
    lanes_free_at: list[int] = []
    jobs = []
    for app, (start, end, code, deadline) in sorted(runs, key=lambda run: (run[1][0], run[0])):
        lane = next((i for i, free in enumerate(lanes_free_at) if free <= start), None)
        if lane is None:
            lane = len(lanes_free_at)
            lanes_free_at.append(0)
        lanes_free_at[lane] = end
        jobs.append(
            JobPicture(
                app=app,
                priority="-",
                arrived_ns=start,
                started_ns=start,
                finished_ns=end if code != "IN_FLIGHT" else end_ns,
                segments=((start, end, lane),),
                preempted=0,
                status=code,
                deadline_ns=deadline,
            )
        )
    return DevicePicture(
        name="nnapi-reference",
        units=max(1, len(lanes_free_at)),
        preemption="none",
        jobs=tuple(jobs),
    )


def _faults(emulator: Emulator, end_ns: int) -> tuple[FaultPicture, ...]:
    faults = []
    for device in emulator.scenario.devices:
        for fault in device.faults:
            start = 0 if fault.at_ms is None else round(fault.at_ms * 1e6)
            if start > end_ns:
                continue  # after the run ended: it never happened
            faults.append(
                FaultPicture(
                    device=device.name,
                    kind=fault.kind.value,
                    start_ns=start,
                    end_ns=None if fault.until_ms is None else round(fault.until_ms * 1e6),
                    factor=fault.factor,
                )
            )
    return tuple(sorted(faults, key=lambda f: (f.start_ns, f.device, f.kind)))


def collect(emulator: Emulator) -> RunPictures:
    """Take the pictures' data out of a finished emulator (``run``'s ``inspect`` hook, with
    ``keep_executions=True``; or ``open_emulator(..., keep_executions=True)``).

    Raises:
        ValueError: the emulator kept no per-execution records.
    """
    end_ns = emulator.kernel.clock_ns
    uids: dict[int, str] = {}
    for app in emulator.apps:
        uids.setdefault(app.spec.uid, app.spec.name)
    devices = []
    for service in emulator.services:
        device = service.device
        devices.append(
            _device_picture(
                service.name,
                device.units,
                device.preemption.value,
                device.history or (),
                uids,
                end_ns,
            )
        )
    apps = []
    cpu_runs: list[tuple[str, tuple[int, int, str, int | None]]] = []
    for app in emulator.apps:
        if app.records is None:
            msg = (
                "collect() needs per-execution records:"
                " call it from run(..., keep_executions=True, inspect=...)"
            )
            raise ValueError(msg)
        name = app.spec.name
        runs = app.runtime.cpu_history or []
        cpu_runs += [(name, run) for run in runs]
        counts: dict[str, int] = {}
        latencies = []
        failures = []
        for record in app.records:
            code = record.code.name
            counts[code] = counts.get(code, 0) + 1
            if code == "NO_ERROR":
                latencies.append(record.finished_ns - record.arrival_ns)
            else:
                failures.append(
                    ResultPicture(
                        arrival_ns=record.arrival_ns, finished_ns=record.finished_ns, code=code
                    )
                )
        records = sorted(app.records, key=lambda r: (r.arrival_ns, r.finished_ns))
        timeouts = {r.timeout_ns for r in records if r.timeout_ns is not None}
        apps.append(
            AppPicture(
                name=name,
                uid=app.spec.uid,
                priority=app.spec.priority.name,
                latencies_ns=tuple(latencies),
                codes=tuple(sorted(counts.items(), key=lambda item: (-item[1], item[0]))),
                failures=tuple(failures),
                executions=tuple(
                    ExecutionPicture(
                        arrival_ns=r.arrival_ns,
                        started_ns=r.device_start_ns,
                        finished_ns=r.finished_ns,
                        code=r.code.name,
                        late=r.code.name == "NO_ERROR"
                        and r.deadline_ns is not None
                        and r.finished_ns > r.deadline_ns,
                    )
                    for r in records
                ),
                timeout_ns=min(timeouts) if timeouts else None,
            )
        )
    return RunPictures(
        scenario=emulator.scenario.name,
        seed=emulator.scenario.seed,
        end_ns=end_ns,
        apps=tuple(apps),
        devices=tuple(devices),
        cpu=_cpu_picture(cpu_runs, end_ns),
        faults=_faults(emulator, end_ns),
    )
