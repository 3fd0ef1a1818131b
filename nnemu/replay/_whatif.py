"""What a replay's what-ifs can and cannot change, and how faithful its baseline is.

``ineffective_sets`` names the ``--set`` keys whose change cannot move any number under
the replayed configuration (docs/qos.md: which scheduler compares which priorities,
which HAL versions carry deadlines), so a user does not read an unchanged table as "no
effect".  ``fidelity_lines`` puts each app's recorded latencies beside the replayed ones.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from nnemu.hal import HalVersion
from nnemu.replay._extract import TracePlan
from nnemu.scenario import AppSpec, DeviceSpec, PreemptionKind, Scenario, SchedulerKind


def _devices_of(scenario: Scenario, app: AppSpec) -> list[DeviceSpec]:
    """The driver devices ``app`` may execute on."""
    if app.devices is None:
        return list(scenario.devices)
    return [device for device in scenario.devices if device.name in app.devices]


def _priority_note(scenario: Scenario, app: AppSpec) -> str | None:
    devices = _devices_of(scenario, app)
    if not devices:
        return (
            "cannot change the result: "
            f"{app.name} runs only on the CPU (nnapi-reference), which ignores priority"
        )
    for device in devices:
        if device.scheduler is SchedulerKind.GLOBAL_PRIORITY:
            return None
        if device.scheduler is SchedulerKind.PER_APP_PRIORITY and any(
            other is not app
            and other.uid == app.uid
            and other.priority is not app.priority
            and device in _devices_of(scenario, other)
            for other in scenario.apps
        ):
            return None
    fifo = [d.name for d in devices if d.scheduler is SchedulerKind.FIFO]
    per_app = [d.name for d in devices if d.scheduler is SchedulerKind.PER_APP_PRIORITY]
    reasons = []
    if per_app:
        reasons.append(
            "priority only orders an app's own executions under per_app_priority "
            f"({', '.join(per_app)}), and no other app of uid {app.uid} there has "
            "another priority"
        )
    if fifo:
        reasons.append(f"{', '.join(fifo)} schedule{'s' if len(fifo) == 1 else ''} fifo")
    hint = devices[0].name
    return (
        "cannot change the result: "
        + "; ".join(reasons)
        + f"; set devices.{hint}.scheduler=global_priority to compare across apps"
    )


def _timeout_note(scenario: Scenario, app: AppSpec) -> str | None:
    devices = _devices_of(scenario, app)
    old = [d for d in devices if d.hal_version is not HalVersion.V1_3]
    if devices and len(old) == len(devices):
        names = ", ".join(f"{d.name} (HAL {d.hal_version.value})" for d in old)
        return (
            f"cannot reach the driver: deadlines reach drivers only through HAL 1.3 entry "
            f"points and {names} never sees it, so nothing is refused or aborted and only "
            "late completions are counted; set "
            f"devices.{old[0].name}.hal_version=1.3 to let the driver enforce it"
        )
    return None


def _device_note(scenario: Scenario, device: DeviceSpec, field: str) -> str | None:
    users = [app for app in scenario.apps if device in _devices_of(scenario, app)]
    if field == "preemption" and device.preemption is not PreemptionKind.NONE:
        if device.scheduler is SchedulerKind.FIFO:
            return f"cannot change the result: {device.name} schedules fifo, which never preempts"
        priorities = {app.priority for app in users}
        if device.scheduler is SchedulerKind.PER_APP_PRIORITY and not any(
            a is not b and a.uid == b.uid and a.priority is not b.priority
            for a in users
            for b in users
        ):
            return (
                "cannot change the result: "
                f"under per_app_priority {device.name} preempts only an app's own "
                "lower-priority work, and no uid has models of two priorities here"
            )
        if len(priorities) < 2:
            return (
                "cannot change the result: "
                f"every app on {device.name} has the same priority: nothing to preempt"
            )
    if field == "deadline_policy" and not any(
        app.execution_timeout_ms is not None or app.compile_timeout_ms is not None for app in users
    ):
        name = users[0].name if users else "<app>"
        return (
            "cannot change the result: "
            f"no app on {device.name} has a deadline (traces do not carry them); "
            f"add one with apps.{name}.execution_timeout_ms=<ms>"
        )
    return None


def ineffective_sets(scenario: Scenario, sets: Sequence[str]) -> list[str]:
    """A warning for each ``--set`` that cannot change the run of ``scenario`` (after the sets)."""
    apps = {app.name: app for app in scenario.apps}
    devices = {device.name: device for device in scenario.devices}
    warnings: list[str] = []
    for text in sets:
        key = text.partition("=")[0].strip()
        parts = key.split(".")
        note: str | None = None
        if len(parts) == 3 and parts[0] == "apps" and parts[1] in apps:
            app = apps[parts[1]]
            if parts[2] == "priority":
                note = _priority_note(scenario, app)
            elif parts[2] in ("execution_timeout_ms", "compile_timeout_ms"):
                note = _timeout_note(scenario, app)
        elif len(parts) == 3 and parts[0] == "devices" and parts[1] in devices:
            note = _device_note(scenario, devices[parts[1]], parts[2])
        if note is not None:
            warnings.append(f"warning: --set {key} {note}")
    return warnings


def _quantile(sorted_ns: Sequence[int], q: float) -> int:
    """Nearest-rank quantile (the rule of the report's histogram)."""
    rank = max(1, math.ceil(q * len(sorted_ns)))
    return sorted_ns[rank - 1]


def fidelity_lines(plan: TracePlan, data: Mapping[str, Any]) -> list[str]:
    """Recorded vs replayed latency of each app, ms, as table lines."""
    lines = [
        "recorded vs replayed latency, ms (recorded: the sections that gave each app's "
        "arrivals; replayed: arrival -> result)",
        f"{'app':16} {'':9} {'n':>5} {'p50':>9} {'p95':>9} {'max':>9}",
    ]
    apps = data.get("apps", {})
    for app in plan.apps:
        recorded = sorted(app.latencies_ns)
        if recorded:
            values = (_quantile(recorded, 0.5), _quantile(recorded, 0.95), recorded[-1])
            cells = " ".join(f"{v / 1e6:9.3f}" for v in values)
        else:
            cells = " ".join(f"{'-':>9}" for _ in range(3))
        lines.append(f"{app.name[:16]:16} {'recorded':9} {len(recorded):5} {cells}")
        replayed = apps.get(app.name)
        if replayed is None:
            continue
        latency = replayed["latency_ms"]
        if replayed["completed"]:
            cells = " ".join(f"{latency[k]:9.3f}" for k in ("p50", "p95", "max"))
        else:
            cells = " ".join(f"{'-':>9}" for _ in range(3))
        lines.append(f"{'':16} {'replayed':9} {replayed['completed']:5} {cells}")
    return lines


__all__ = ["fidelity_lines", "ineffective_sets"]
