"""What a demo run records: every trace mark, plus the values that marks do not carry.

A trace shows *that* ``HIDL::IDevice::prepareModel_1_3::client`` ended, not *what* it
returned; a teaching demo needs both.  ``MarkRecorder`` is an ordinary ``TraceSink``;
``CallLog`` wraps, on the instances of one run only, the transport's ``call`` (launch
statuses and sync results), each driver's ``_notify`` (callback statuses) and each driver
endpoint's ``kill`` (the death recipients it fires).  The wrappers only observe: they call
through unchanged and take no virtual time.
"""

from __future__ import annotations

from typing import Any

import attrs

from nnemu.driver import DriverService
from nnemu.hal import ErrorStatus, Timing
from nnemu.ipc import Binder, DeadObject
from nnemu.sim import Kernel, SimThread, current_thread


@attrs.frozen
class Mark:
    """One trace event as a sink saw it."""

    ts_ns: int
    """Virtual time."""
    seq: int
    """Arrival order (ties in time keep it)."""
    thread: SimThread
    """Emulated thread."""
    name: str | None
    """Section name for a begin, None for an end."""
    opened: str
    """For an end: the name of the section it closes; for a begin: ``name``."""


@attrs.frozen
class Slice:
    """A begin/end pair on one thread."""

    start_ns: int
    """Begin time."""
    end_ns: int
    """End time."""
    thread: SimThread
    """Emulated thread."""
    name: str
    """Section name."""


class MarkRecorder:
    """A ``TraceSink`` that keeps every event (demo runs are small) and pairs them into slices."""

    def __init__(self) -> None:
        self.marks: list[Mark] = []
        self.slices: list[Slice] = []
        self.processes: dict[int, str] = {}
        self._open: dict[SimThread, list[tuple[int, str]]] = {}

    def process(self, pid: int, name: str) -> None:
        """Remember the process name."""
        self.processes[pid] = name

    def begin(self, ts_ns: int, thread: SimThread, name: str) -> None:
        """Record a begin."""
        self.marks.append(Mark(ts_ns, len(self.marks), thread, name, name))
        self._open.setdefault(thread, []).append((ts_ns, name))

    def end(self, ts_ns: int, thread: SimThread) -> None:
        """Record an end and the slice it closes."""
        stack = self._open.get(thread)
        if not stack:
            return
        start, name = stack.pop()
        self.marks.append(Mark(ts_ns, len(self.marks), thread, None, name))
        self.slices.append(Slice(start, ts_ns, thread, name))

    def close(self) -> None:
        """Nothing to flush."""


@attrs.frozen
class Note:
    """A value the demo observed at a point of the timeline."""

    ts_ns: int
    """Virtual time."""
    thread: SimThread | None
    """The thread it belongs to (None for process-wide events)."""
    pid: int
    """The process it belongs to."""
    key: str
    """The trace mark it annotates (``HIDL::...::client``), or a kind for free-standing notes."""
    text: str
    """What to print."""


def describe(value: object) -> str:
    """A HIDL result as the HAL spells it: a status, then what matters of the rest."""
    if isinstance(value, DeadObject):
        return "DEAD_OBJECT (transport error: the process is dead)"
    if isinstance(value, ErrorStatus):
        return value.name
    if isinstance(value, tuple) and value and isinstance(value[0], ErrorStatus):
        status = value[0].name
        rest = value[1:]
        if len(rest) == 1 and rest[0] is not None and hasattr(rest[0], "get_execution_info"):
            fence = getattr(rest[0], "sync_fence", None)
            if fence is not None:
                return (
                    f"{status}, a sync fence the driver signals when the work ends "
                    f"({fence.poll().name} now), and its callback"
                )
            fenced_status, launched, _ = rest[0].get_execution_info()
            return (
                f"{status}, empty sync fence (done in the call), callback status "
                f"{fenced_status.name}{_timing(launched)}"
            )
        if len(rest) == 1 and rest[0] is None:
            return f"{status}, empty fence handle, null callback"
        if len(rest) == 1 and isinstance(rest[0], tuple) and rest[0]:
            flags = " ".join("yes" if flag else "no" for flag in rest[0])
            return f"{status}, supported per operation: {flags}"
        if len(rest) == 2 and isinstance(rest[1], int) and not isinstance(rest[1], bool):
            if rest[0] is None:  # allocate's failure: a null IBuffer and token 0
                return f"{status}, null IBuffer, token {rest[1]}"
            return f"{status}, IBuffer, token {rest[1]}"
        if len(rest) == 2 and isinstance(rest[1], Timing):
            shapes = "output shapes" if rest[0] else "no output shapes"
            return f"{status}, {shapes}{_timing(rest[1])}"
        return status
    return ""


def _timing(timing: Timing) -> str:
    if timing.time_on_device_us == Timing().time_on_device_us:
        return ", timing unknown (UINT64_MAX)"
    return f", timing {timing.time_on_device_us} µs on device / {timing.time_in_driver_us} µs in driver"


class CallLog:
    """Observes one run's HIDL results, callback statuses and process deaths."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.notes: list[Note] = []
        self.notifies: list[tuple[int, str, str]] = []
        """(ts, method, status) of every callback notify a driver sent."""

    def install(self, binder: Binder, services: list[DriverService]) -> None:
        """Note what each binder call returns (``Binder.on_return``); wrap each service's
        ``_notify``; note each endpoint's death (``Endpoint.on_kill``)."""
        kernel, notes = self.kernel, self.notes

        def returned(iface: str, method: str, result: object) -> None:
            text = describe(result)
            if text:
                thread = current_thread()
                key = f"HIDL::{iface}::{method}::client"
                notes.append(
                    Note(kernel.task_now_ns(), thread, thread.pid, key, f"returned {text}")
                )

        binder.on_return = returned
        for service in services:
            self._wrap_service(service)

    def _wrap_service(self, service: DriverService) -> None:
        kernel, notes = self.kernel, self.notes
        original_notify = service._notify

        def notify(callback: Any, iface: str, method: str, *args: Any, **options: Any) -> None:
            status = args[0] if args else None
            if isinstance(status, ErrorStatus) and service.endpoint.alive:
                what = ""
                if iface == "IPreparedModelCallback":
                    what = ", prepared model" if args[1] is not None else ", null model"
                thread = current_thread()
                notes.append(
                    Note(
                        kernel.task_now_ns(),
                        thread,
                        thread.pid,
                        f"HIDL::{iface}::{method}::client",
                        f"({status.name}{what})",
                    )
                )
                self.notifies.append((kernel.task_now_ns(), method, status.name))
            original_notify(callback, iface, method, *args, **options)

        setattr(service, "_notify", notify)  # noqa: B010 - an instance-level observer

        def killed(waiting: int) -> None:
            notes.append(
                Note(
                    kernel.task_now_ns(),
                    None,
                    service.process.pid,
                    "✝",
                    f"driver process {service.process.name} (pid {service.process.pid}) "
                    f"dies; binder death recipients release {waiting} waiting "
                    "callback(s) with DEAD_OBJECT",
                )
            )

        service.endpoint.on_kill = killed

    def add_device_history(self, services: list[DriverService]) -> None:
        """Notes for each execution a device ran: when it got a compute unit, how it ended."""
        for service in services:
            pid = service.process.pid
            for job in service.device.history or []:
                if job.started_ns is None or job.arrived_ns is None:
                    continue
                who = (
                    f"device {service.name}: {job.priority.name}-priority execution (uid {job.uid})"
                )
                waited = (job.started_ns - job.arrived_ns) / 1e6
                self.notes.append(
                    Note(
                        job.started_ns,
                        None,
                        pid,
                        "▶",
                        f"{who} gets a compute unit (waited {waited:.3f} ms)",
                    )
                )
                if job.finished_ns is not None and job.status is not None:
                    preempted = f", preempted {job.preempted}x" if job.preempted else ""
                    self.notes.append(
                        Note(
                            job.finished_ns,
                            None,
                            pid,
                            "■",
                            f"{who} leaves the device: {job.status.name}{preempted}",
                        )
                    )
