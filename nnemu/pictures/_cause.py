"""The "Why" reading's account of each app's latency: its parts ranked, its deadline misses,
and the cause of its biggest wait, named from the run's own facts with the ``--set`` that
would test it.

A part is a wait (``CAUSE_PARTS``): compute, the driver's launch and the runtime's own code
are what the work costs, not why it waited. The biggest wait is named only when it is not
small: a third of the mean latency, or a tenth when the app missed deadlines (then any
sizeable wait is what pushed executions over). Its cause comes from the configuration and
counters the page shows (docs/qos.md says what each mechanism does):

- ``binder_wait``: the driver's binder threads, held by the synchronous executions of the
  apps that share the device (one thread each for the whole execution);
- ``device_queue``: the device busy with the other apps that reach it, their priorities,
  and the scheduler's reason when it explains the order;
- ``preempted``: how many times the device preempted the app's executions, for whom;
- ``app_wait``: the app's own threads (and the CPU path, which computes on them);
- ``retry``, ``ipc``: the retries, the transactions of the execution mode.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from nnemu._text import counted
from nnemu.pictures._collect import AppConfig, DeviceConfig, RunPictures, WhyPicture
from nnemu.scenario import CPU_DEVICE_NAME

PRIORITY_RANK = {"LOW": 0, "MEDIUM": 1, "HIGH": 2}

CAUSE_PARTS = ("app_wait", "binder_wait", "device_queue", "preempted", "retry", "ipc", "queue_wait")
"""The parts of a latency split that are waits with a cause to name (``queue_wait``: the one
wait of reports written before the split had the others)."""

SchedulerReason = Callable[[DeviceConfig, str, Sequence[str]], str | None]
"""Why an app's executions wait behind those of lower-priority apps on a device (None: its
scheduler and preemption would not make them)."""


class Facts:
    """What the reading's rules look up, gathered once."""

    def __init__(self, data: RunPictures, why: WhyPicture, report: Mapping[str, Any]) -> None:
        self.data = data
        self.why = why
        self.apps: Mapping[str, Any] = report.get("apps", {})
        self.devices: Mapping[str, Any] = report.get("devices", {})
        self.priority = {app.name: app.priority for app in data.apps}
        self.configs = {device.name: device for device in why.devices}
        self.settings = {app.name: app for app in why.apps}
        order = {app.name: index for index, app in enumerate(data.apps)}
        self.users: dict[str, list[str]] = {}
        """Per driver device, the apps whose executions reached it, in scenario order."""
        self.jobs: dict[str, Counter[str]] = {}
        """Per app, its executions per driver device."""
        self.preempted: dict[str, Counter[str]] = {}
        """Per app, how many times its executions yielded a unit, per driver device."""
        for device in data.devices:
            counts = Counter(job.app for job in device.jobs)
            self.users[device.name] = sorted(counts, key=lambda n: (order.get(n, len(order)), n))
            for name, count in counts.items():
                self.jobs.setdefault(name, Counter())[device.name] = count
            for job in device.jobs:
                if job.preempted:
                    self.preempted.setdefault(job.app, Counter())[device.name] += job.preempted
        self.explained: set[str] = set()
        """Apps whose wait a sentence has already put down to their device's scheduler."""

    def rank(self, app: str) -> int:
        return PRIORITY_RANK.get(self.priority.get(app, ""), -1)

    def p95(self, app: str) -> float | None:
        entry = self.apps.get(app, {})
        value = entry.get("latency_ms", {}).get("p95")
        return float(value) if entry.get("completed") and value is not None else None

    def labelled(self, app: str) -> str:
        priority = self.priority.get(app)
        return f"{app} ({priority})" if priority else app

    def device_of(self, app: str) -> str:
        """The driver device most of ``app``'s executions reached ("" if none did)."""
        jobs = self.jobs.get(app)
        return max(jobs.items(), key=lambda item: item[1])[0] if jobs else ""


def join(names: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    if len(names) <= 2:
        return " and ".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def mean_latency(entry: Mapping[str, Any], parts_sum: float) -> float:
    """An app's mean latency as its report entry gives it (``latency_ms.mean``), which the
    summary and the apps table print; the sum of its split's parts (each rounded to µs on its
    own, so it can be 1 or 2 µs off) only when the report has no mean."""
    latency = entry.get("latency_ms")
    mean = latency.get("mean") if isinstance(latency, Mapping) else None
    return float(mean) if isinstance(mean, int | float) and mean > 0 else parts_sum


def small(value: float, total: float, missed: bool) -> bool:
    """Whether a wait of ``value`` ms is too small a part of a ``total`` ms mean latency to
    name a cause for: under a third of it, or under a tenth for an app that missed deadlines."""
    return value < total / (10 if missed else 3)


def split_sentence(
    facts: Facts,
    app: str,
    split: Mapping[str, Any],
    labels: Callable[[str], str],
    reason: SchedulerReason,
) -> str | None:
    """The sentence on ``app``'s latency split: its biggest wait with its share, the parts
    largest first, its deadline misses, the wait's cause and the ``--set`` that tests it;
    None when no wait is big enough to explain."""
    entry = facts.apps.get(app, {})
    values = {part: max(0.0, float(value)) for part, value in split.items()}
    total = mean_latency(entry, sum(values.values()))
    waits = [(part, values[part]) for part in CAUSE_PARTS if values.get(part, 0.0) > 0.0]
    if total <= 0.0 or not waits:
        return None
    part, value = max(waits, key=lambda item: item[1])
    misses = int(entry.get("deadline_misses", 0) or 0)
    if small(value, total, misses > 0):
        return None
    digits = 3 if total < 1.0 else 2  # sub-millisecond latencies keep their third digit
    label = labels(part)
    ranked = sorted(
        ((name, ms) for name, ms in values.items() if ms >= 0.005), key=lambda item: -item[1]
    )
    parts = ", ".join(f"{labels(name)} {ms:.{digits}f}" for name, ms in ranked[:4])
    sentence = (
        f"{label[:1].upper()}{label[1:]} is {value / total:.0%} of {app}'s mean latency"
        f" ({value:.{digits}f} of {total:.{digits}f} ms; largest parts: {parts})"
    )
    if misses:
        settings = facts.settings.get(app)
        deadline = (
            f" {settings.timeout_ms:g} ms"
            if settings is not None and settings.timeout_ms is not None
            else ""
        )
        sentence += (
            f", and {misses} of its {entry.get('submitted', 0)} executions missed their"
            f"{deadline} deadline"
        )
    cause, test = _cause(facts, app, part, reason)
    if cause:
        sentence += f": {cause}"
    sentence += "."
    if test:
        sentence += f" To test it: --set {test}."
    return sentence


def _cause(facts: Facts, app: str, part: str, reason: SchedulerReason) -> tuple[str, str]:
    """The cause of ``app``'s wait ``part`` from the run's facts, and the ``--set`` (key=value,
    several joined by `` --set ``) that would test it ("" for either when the facts do not give
    one)."""
    settings = facts.settings.get(app)
    device_name = facts.device_of(app)
    device = facts.configs.get(device_name)
    if part == "app_wait" and settings is not None:
        threads = settings.threads
        cause = f"its arrivals wait for one of its {counted(threads, 'thread')}"
        if settings.cpu_executions:
            plural = "s" if threads != 1 else ""
            cause += (
                f"; {settings.cpu_executions} of its executions ran on the CPU path"
                f" ({CPU_DEVICE_NAME}), which computes on the app's own executor thread{plural},"
                " so arrivals wait in the app meanwhile"
            )
        return cause, f"apps.{app}.threads={threads * 2}"
    if device is None:
        return "", ""
    if part == "binder_wait":
        return _binder_cause(facts, app, device)
    if part in ("device_queue", "queue_wait"):
        return _queue_cause(facts, app, device, reason)
    if part == "preempted":
        count = facts.preempted.get(app, Counter()).get(device_name, 0)
        higher = [n for n in facts.users.get(device_name, []) if facts.rank(n) > facts.rank(app)]
        cause = f"{device_name} preempted its executions {counted(count, 'time')}" + (
            f" for {join([facts.labelled(n) for n in higher])}" if higher else ""
        )
        if device.preemption == "restart":
            cause += " (preemption restart: each starts over, its work so far thrown away)"
            return cause, f"devices.{device_name}.preemption=checkpoint"
        return cause, f"devices.{device_name}.compute_units={device.compute_units + 1}"
    if part == "ipc" and settings is not None and settings.execution_mode != "burst":
        return (
            f"every {settings.execution_mode} execution crosses the binder to {device_name}"
            " and back",
            f"apps.{app}.execution_mode=burst",
        )
    return "", ""


def _binder_cause(facts: Facts, app: str, device: DeviceConfig) -> tuple[str, str]:
    """All binder threads of ``device``'s driver held: by whose synchronous executions (the
    other apps', or ``app``'s own when it calls alone); the pool that would hold them all."""
    name, pool = device.name, device.binder_threads
    holders: list[AppConfig] = [
        settings
        for user in facts.users.get(name, [])
        if (settings := facts.settings.get(user)) is not None and settings.execution_mode == "sync"
    ]
    callers = sum(settings.threads for settings in holders)
    cause = f"every one of the {counted(pool, 'binder thread')} of {name}'s driver was taken"
    holding = [s for s in holders if s.name != app] or holders
    if holding:
        who = join([f"{s.name}'s {counted(s.threads, 'thread')}" for s in holding])
        cause += (
            f": a synchronous execution holds one from its call until it ends, and {who}"
            f" call {name} synchronously"
        )
    return cause, f"devices.{name}.binder_threads={max(callers, pool * 2)}"


def _queue_cause(
    facts: Facts, app: str, device: DeviceConfig, reason: SchedulerReason
) -> tuple[str, str]:
    """``device`` busy with the other apps that reach it, and why they go first."""
    name = device.name
    others = [n for n in facts.users.get(name, []) if n != app]
    busy = facts.devices.get(name, {}).get("busy_fraction")
    cause = f"{name} was busy" + (f" {busy:.0%} of the run" if busy is not None else "")
    busy_with = [facts.labelled(n) for n in others]
    settings = facts.settings.get(app)
    if settings is not None and settings.threads > 1:
        busy_with.append(f"{app}'s own other executions ({settings.threads} threads)")
    if busy_with:
        cause += f" with {join(busy_with)}"
    lower = [n for n in others if facts.rank(n) < facts.rank(app)]
    why = reason(device, app, lower) if app not in facts.explained else None
    if why is not None:
        facts.explained.add(app)
        cause += f"; {why}"
    # Overtaking lower-priority work needs both: a scheduler that orders across apps, and a
    # driver that preempts what runs (a frame that arrives while one runs waits for it all).
    tests = []
    if lower and device.scheduler != "global_priority":
        tests.append(f"devices.{name}.scheduler=global_priority")
    if lower and device.preemption == "none":
        tests.append(f"devices.{name}.preemption=checkpoint")
    return cause, " --set ".join(
        tests
    ) or f"devices.{name}.compute_units={device.compute_units + 1}"


__all__ = ["CAUSE_PARTS", "Facts", "join", "mean_latency", "small", "split_sentence"]
