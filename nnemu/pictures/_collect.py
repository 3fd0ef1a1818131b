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
    """Driver devices in scenario order (the runtime's CPU path keeps no jobs)."""


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


def collect(emulator: Emulator) -> RunPictures:
    """Take the pictures' data out of a finished emulator (``run``'s ``inspect`` hook, with
    ``keep_executions=True``; or ``open_emulator(..., keep_executions=True)``).

    Raises:
        ValueError: the emulator kept no per-execution records.
    """
    end_ns = emulator.kernel.clock_ns
    uids: dict[int, str] = {}
    apps = []
    for app in emulator.apps:
        if app.records is None:
            msg = (
                "collect() needs per-execution records:"
                " call it from run(..., keep_executions=True, inspect=...)"
            )
            raise ValueError(msg)
        uids.setdefault(app.spec.uid, app.spec.name)
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
        apps.append(
            AppPicture(
                name=app.spec.name,
                uid=app.spec.uid,
                priority=app.spec.priority.name,
                latencies_ns=tuple(latencies),
                codes=tuple(sorted(counts.items(), key=lambda item: (-item[1], item[0]))),
                failures=tuple(failures),
            )
        )
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
    return RunPictures(
        scenario=emulator.scenario.name,
        seed=emulator.scenario.seed,
        end_ns=end_ns,
        apps=tuple(apps),
        devices=tuple(devices),
    )
