"""``--set KEY=VALUE``: changes to a scenario, validated like the YAML.

``nnemu run --set``, ``nnemu replay --set`` (what-ifs on a replayed trace) and the varied
keys of ``nnemu sweep`` all go through ``apply_overrides``.

A key is a dotted scenario path where list entries are named: ``apps.<app>.priority``,
``devices.<dev>.performance.quant8.exec_time``, ``models.<model>.dtype``, or a top-level
key (``seed``, ``ipc.latency_us``).  The value is read as a YAML scalar or flow
collection (``high``, ``0.05``, ``[npu]``).  The edited document is loaded again with
``load_scenario_text``, so every rule of the scenario format applies; its problems are
reported against the ``--set`` key that caused them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs
import yaml

from nnemu.errors import NnemuError, ScenarioError
from nnemu.hal import HalVersion
from nnemu.scenario import (
    AppSpec,
    DeviceSpec,
    Scenario,
    dump_scenario,
    load_scenario_text,
)
from nnemu.scenario._yaml import compose_text, unreadable_scalars
from nnemu.scheduling import POLICIES, policy_for, preemption_for

_NAMED_LISTS: Final = {"apps": "an app", "devices": "a device", "models": "a model"}
_INDEXED: Final = re.compile(r"\b(apps|devices|models)\[(\d+)\]")


class OverrideError(NnemuError):
    """One or more ``--set`` assignments cannot be applied; one line per problem."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


def _parse_value(raw: str) -> Any:
    """The value of ``KEY=VALUE`` as ``yaml.safe_load`` reads it (alias bombs refused).

    Raises:
        ValueError: it is not YAML, or a scalar of it does not construct (``!!bool maybe``).
    """
    if not raw.strip():
        return None
    msg = f"expected a YAML value, got {raw!r}"
    try:
        node = compose_text(raw, "--set")
        if node is None:  # only a comment
            return None
        bad = unreadable_scalars(node)
        if bad:
            msg += f" ({bad[0][1]})"
            raise ValueError(msg)
        return yaml.constructor.SafeConstructor().construct_document(node)
    except (ScenarioError, yaml.YAMLError) as err:
        raise ValueError(msg) from err


def apply_overrides(scenario: Scenario, assignments: Sequence[str]) -> Scenario:
    """``scenario`` with each ``KEY=VALUE`` of ``assignments`` applied, validated.

    Raises:
        OverrideError: every problem of every assignment, as ``--set <key>: <message>``: those
            of the assignments' form (no ``=``, an unknown app, ...) first, then what the
            scenario's rules refuse in the others.
    """
    if not assignments:
        return scenario
    data: dict[str, Any] = yaml.safe_load(dump_scenario(scenario))
    problems: list[str] = []
    # Assignments written into ``data``: validated together even when others were refused,
    # so that every problem of every assignment is reported at once.
    applied = 0
    for text in assignments:
        key, sep, raw = text.partition("=")
        key = key.strip()
        if not sep or not key:
            problems.append(f"--set {text}: expected KEY=VALUE")
            continue
        try:
            value = _parse_value(raw)
        except ValueError as err:
            problems.append(f"--set {key}: {err}")
            continue
        parts = key.split(".")
        target: dict[str, Any] = data
        rest = parts
        if numbered := _INDEXED.fullmatch(parts[0]):
            entries = data.get(numbered.group(1)) or []
            name = entries[0]["name"] if entries else "name"
            tail = ".".join(parts[1:]) or "<key>"
            problems.append(
                f"--set {key}: list entries are named, not numbered: "
                f"{numbered.group(1)}.<{numbered.group(1)[:-1]}>.{tail}, e.g. "
                f"{numbered.group(1)}.{name}.{tail}"
            )
            continue
        if parts[0] in _NAMED_LISTS:
            kind = _NAMED_LISTS[parts[0]]
            entries = data.get(parts[0]) or []
            if len(parts) < 3 or not all(parts[1:]):
                problems.append(
                    f"--set {key}: expected {parts[0]}.<{parts[0][:-1]}>.<key>, e.g. "
                    f"{parts[0]}.{entries[0]['name'] if entries else 'name'}.<key>"
                )
                continue
            found = [entry for entry in entries if entry.get("name") == parts[1]]
            if not found:
                names = ", ".join(str(entry.get("name")) for entry in entries) or "none"
                problems.append(
                    f"--set {'.'.join(parts[:2])}: expected the name of {kind} "
                    f"({names}), got {parts[1]!r}"
                )
                continue
            target, rest = found[0], parts[2:]
        if not all(rest):
            problems.append(f"--set {key}: empty key in the path")
            continue
        node: Any = target
        for index, part in enumerate(rest[:-1]):
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            elif not isinstance(child, dict):
                where = ".".join(parts[: len(parts) - len(rest) + index + 1])
                problems.append(f"--set {key}: {where} is not a mapping")
                break
            node = child
        else:
            node[rest[-1]] = value
            applied += 1
    if not applied:
        # Every assignment was refused above: the scenario itself is unchanged and valid.
        raise OverrideError(problems)
    try:
        changed = load_scenario_text(yaml.safe_dump(data, sort_keys=False), "--set")
    except ScenarioError as err:

        def named(match: re.Match[str]) -> str:
            entries = data.get(match.group(1)) or []
            index = int(match.group(2))
            name = entries[index].get("name") if index < len(entries) else None
            return f"{match.group(1)}.{name}" if name is not None else match.group(0)

        raise OverrideError(
            problems
            + [
                f"--set {_INDEXED.sub(named, problem.key_path) or '(scenario)'}: {problem.message}"
                for problem in err.problems
            ]
        ) from err
    if problems:
        raise OverrideError(problems)
    return attrs.evolve(changed, source=scenario.source)


# What a change cannot move: ``ineffective_sets`` names the ``--set`` keys whose new value
# cannot change any number under the scenario's configuration (docs/qos.md: which scheduler
# compares which priorities, which HAL versions carry deadlines), so a user does not read an
# unchanged table as "no effect".


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
        same_uid = (
            other.priority
            for other in scenario.apps
            if other is not app and other.uid == app.uid and device in _devices_of(scenario, other)
        )
        if policy_for(device.scheduler).priority_matters(app.priority, same_uid):
            return None
    reasons = []
    for policy in POLICIES.values():
        names = [d.name for d in devices if d.scheduler is policy.kind]
        reason = policy.priority_ignored(names, app.uid) if names else None
        if reason is not None:
            reasons.append(reason)
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
    if field == "preemption" and preemption_for(device.preemption).preempts:
        policy = policy_for(device.scheduler)
        ignored = policy.preemption_ignored(device.name, [(app.uid, app.priority) for app in users])
        if ignored is not None:
            return f"cannot change the result: {ignored}"
        priorities = {app.priority for app in users}
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
            f"no app on {device.name} has a deadline; "
            f"add one with apps.{name}.execution_timeout_ms=<ms>"
        )
    return None


def _drop_note(scenario: Scenario, app: AppSpec) -> str | None:
    if app.execution_timeout_ms is not None:
        return None
    devices = ",".join(d.name for d in _devices_of(scenario, app)[:1]) or "nnapi-reference"
    return (
        "cannot change the result: a frame is dropped only when it is older than its "
        f"execution timeout, and {app.name} has none; add "
        f"apps.{app.name}.execution_timeout_ms=<ms> (with apps.{app.name}.devices=[{devices}])"
    )


def _unchanged(before: Scenario, text: str) -> bool:
    """Whether the one assignment ``text`` leaves ``before`` as it is."""
    try:
        return apply_overrides(before, [text]) == before
    except OverrideError:  # valid only together with another --set
        return False


def ineffective_sets(
    scenario: Scenario, sets: Sequence[str], *, before: Scenario | None = None
) -> list[str]:
    """A warning for each ``--set`` that cannot change the run of ``scenario`` (after the sets).

    With ``before`` (the scenario the sets were applied to), a set that gives a key the value
    ``before`` already has is named as changing nothing.
    """
    apps = {app.name: app for app in scenario.apps}
    devices = {device.name: device for device in scenario.devices}
    warnings: list[str] = []
    for text in sets:
        key, _, value = (part.strip() for part in text.partition("="))
        parts = key.split(".")
        note: str | None = None
        if before is not None and _unchanged(before, text):
            warnings.append(
                f"warning: --set {key} changes nothing: the scenario already has {key} = {value}"
            )
            continue
        if len(parts) == 3 and parts[0] == "apps" and parts[1] in apps:
            app = apps[parts[1]]
            if parts[2] == "priority":
                note = _priority_note(scenario, app)
            elif parts[2] in ("execution_timeout_ms", "compile_timeout_ms"):
                note = _timeout_note(scenario, app)
            elif parts[2] == "drop_late_frames":
                note = _drop_note(scenario, app)
        elif len(parts) == 3 and parts[0] == "devices" and parts[1] in devices:
            note = _device_note(scenario, devices[parts[1]], parts[2])
        if note is None and before is not None:
            others = [other for other in sets if other is not text]
            note = _compute_note(before, others, scenario, parts)
        if note is not None:
            warnings.append(f"warning: --set {key} {note}")
    return warnings


def _compute_note(
    before: Scenario, others: Sequence[str], scenario: Scenario, parts: Sequence[str]
) -> str | None:
    """For a model's ``dtype`` or a device's ``performance``: why the change cannot change
    the result, when every app it concerns computes as without it, on each device it may use
    and on the CPU (``nnapi-reference``): the same time per operation, power, memory and
    validity.  (The replay's one-layer stand-in model runs its operation at the fastest an
    operation takes, 1 µs, in either dtype.)"""
    if parts[0] == "models" and len(parts) == 3 and parts[2] == "dtype":
        apps = [app for app in scenario.apps if app.model == parts[1]]
    elif parts[0] == "devices" and len(parts) >= 3 and parts[2] == "performance":
        apps = [
            app
            for app in scenario.apps
            if any(d.name == parts[1] for d in _devices_of(scenario, app))
        ]
    else:
        return None
    if not apps:
        return None
    try:
        without = apply_overrides(before, others)
    except OverrideError:
        return None
    names = sorted({app.name for app in apps})
    signature, times = _computes(scenario, names)
    if _computes(without, names)[0] != signature:
        return None
    on = sorted({d.name for app in apps for d in _devices_of(scenario, app)})
    fastest = all(ns == _FASTEST_OP_NS for ns in times)
    return (
        f"cannot change the result: {_and(names)} "
        f"{'computes' if len(names) == 1 else 'compute'} as without it on "
        f"{_and([*on, 'the CPU'])} (the same time per operation, power and memory"
        + ("; each operation at the fastest an operation takes, 1 µs" if fastest else "")
        + ")"
    )


def _and(words: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


_FASTEST_OP_NS: Final = 1_000
"""What an operation takes at the least (``nnemu.driver``: every duration is whole µs)."""


def _computes(scenario: Scenario, names: Sequence[str]) -> tuple[list[object], list[int]]:
    """What the apps called ``names`` compute in ``scenario``, and every operation's time
    there.  Per app, on the CPU and on each device it may use: each operation's time and
    iterations and the power (not the CPU executor's mark names, which only name the work),
    the model's memory and whether the device's HAL takes the model; and for an app with a
    choice of devices, the performance figures the runtime chooses each operation's device
    by (``nnemu.runtime._plan.choose_devices``)."""
    from nnemu._emulator import build_model
    from nnemu.driver import capabilities_from, compute_plan
    from nnemu.hal import model_memory_bytes, validate_model
    from nnemu.runtime._devices import CPU_CAPABILITIES
    from nnemu.runtime._plan import operation_performance

    models = {model.name: model for model in scenario.models}
    signature: list[object] = []
    times: list[int] = []
    for app in scenario.apps:
        if app.name not in names:
            continue
        model = build_model(models[app.model])
        signature.append((app.name, model_memory_bytes(model)))
        plans = [compute_plan(model, CPU_CAPABILITIES, scenario.cpu)]
        devices = _devices_of(scenario, app)
        for device in devices:
            capabilities = capabilities_from(device.performance)
            plans.append(compute_plan(model, capabilities, scenario.cpu))
            signature.append(validate_model(model, device.hal_version))
            if app.devices is None or len(devices) > 1:  # (the runtime chooses among them)
                for op in model.main.operations:
                    info = operation_performance(capabilities, model, op)
                    signature.append((info.exec_time, info.power_usage))
        for plan in plans:
            signature.append((plan.op_ns, plan.iterations, plan.power))
            times.extend(plan.op_ns)
    return signature, times


def unchosen_sets(
    scenario: Scenario, sets: Sequence[str], choices: Mapping[str, int], *, skip: Sequence[str] = ()
) -> list[str]:
    """A warning for each ``--set`` of a device's scheduler or an app's priority that the run
    shows changed nothing.

    ``choices`` is, per device, how often a freed unit had two or more waiting executions to
    choose from (``DeviceStats.choices``).  A device that never had that choice, does not
    preempt and serves no app with an execution deadline (the deadline estimate follows the
    scheduler) gives the same run under every scheduler and every priorities.  ``skip`` lists
    keys already warned about (``ineffective_sets``).
    """
    uses = [RunUse(choices=choices)]
    return [
        warning
        for text in sets
        if (warning := _unchosen(scenario, text.partition("=")[0].strip(), uses, skip))
    ]


@attrs.frozen
class RunUse:
    """What one run showed of the parts of a scenario a ``--set`` may change, for
    ``unexercised_sets`` (``run_use`` reads it off the emulator once the run is over)."""

    choices: Mapping[str, int] = attrs.field(factory=dict)
    """Per device: how often a freed unit had two or more waiting executions to choose from."""
    queue_met: Mapping[str, int] = attrs.field(factory=dict)
    """Per device: the most executions an arriving one found waiting with every unit busy
    (-1: no arrival found every unit busy; ``DeviceStats.longest_queue_met``)."""
    transient: Mapping[str, int] = attrs.field(factory=dict)
    """Per app: attempts (compilations included) that ended in a TRANSIENT error, the only
    results its retry policy is asked about."""


def run_use(emulator: Any) -> RunUse:
    """What the finished run of ``emulator`` (an ``nnemu.Emulator``) showed, as ``RunUse``."""
    from nnemu.hal import ResultCode

    transient_names = [code.name for code in ResultCode if code.is_transient]
    transient: dict[str, int] = {}
    for app in emulator.apps:
        stats = app.stats
        # A retried attempt, a final TRANSIENT result (no retry left), a TRANSIENT compilation.
        transient[app.spec.name] = (
            stats.retries
            + sum(stats.errors[name] for name in transient_names)
            + stats.compile_result.is_transient
        )
    devices = [service.device for service in emulator.services]
    return RunUse(
        choices={device.spec.name: device.stats.choices for device in devices},
        queue_met={device.spec.name: device.stats.longest_queue_met for device in devices},
        transient=transient,
    )


def unexercised_sets(
    scenario: Scenario,
    sets: Sequence[str],
    uses: Sequence[RunUse],
    *,
    before: Scenario,
    skip: Sequence[str] = (),
) -> list[str]:
    """A warning for each ``--set`` that the runs (``uses``, one per run: a run, or each
    replication) show changed nothing, because the run never came to the part it changes.

    A scheduler or a priority: no unit ever had two executions to choose from (``unchosen_sets``).
    An app's ``retry`` (or a key in it): no attempt of the app ended in a TRANSIENT error, so its
    retry policy was never asked.  A device's ``queue_limit``: no arrival met, with every unit
    busy, as many waiting executions as the lower of the scenario's limit (``before``) and the
    new one, so neither turned one away.  The warning is given only when it holds for every run.
    ``skip`` lists keys already warned about (``ineffective_sets``).
    """
    if not uses:
        return []
    warnings: list[str] = []
    for text in sets:
        key = text.partition("=")[0].strip()
        warning = _unchosen(scenario, key, uses, skip) or _unexercised(
            scenario, before, key, uses, skip
        )
        if warning:
            warnings.append(warning)
    return warnings


def _in_the_runs(uses: Sequence[RunUse]) -> str:
    return "in this run" if len(uses) == 1 else f"in any of the {len(uses)} replications"


def _unchosen(
    scenario: Scenario, key: str, uses: Sequence[RunUse], skip: Sequence[str]
) -> str | None:
    """``unchosen_sets``' warning for ``key`` (a scheduler or a priority), or None."""
    apps = {app.name: app for app in scenario.apps}
    devices = {device.name: device for device in scenario.devices}
    parts = key.split(".")
    if key in skip or len(parts) != 3:
        return None
    if parts[0] == "devices" and parts[1] in devices and parts[2] == "scheduler":
        concerned, what = [devices[parts[1]]], "its scheduler never chose"
    elif parts[0] == "apps" and parts[1] in apps and parts[2] == "priority":
        concerned = _devices_of(scenario, apps[parts[1]])
        what = "no scheduler compared priorities"
    else:
        return None
    if not concerned or not all(
        _never_chose(scenario, device, use.choices) for device in concerned for use in uses
    ):
        return None
    names = ", ".join(d.name for d in concerned)
    return (
        f"warning: --set {key} changed nothing {_in_the_runs(uses)}: {names} never had two "
        f"executions waiting for a unit at once, so {what}; with preemption "
        f"(devices.{concerned[0].name}.preemption=checkpoint) a higher-priority arrival "
        "takes a running execution's unit"
    )


def _unexercised(
    scenario: Scenario, before: Scenario, key: str, uses: Sequence[RunUse], skip: Sequence[str]
) -> str | None:
    """The warning for ``key`` (an app's retry, a device's queue limit) when no run used it."""
    parts = key.split(".")
    if key in skip or len(parts) < 3:
        return None
    where = _in_the_runs(uses)
    if parts[0] == "apps" and parts[2] == "retry":
        name = parts[1]
        if any(name not in use.transient or use.transient[name] for use in uses):
            return None
        return (
            f"warning: --set {key} changed nothing {where}: no attempt of {name} ended in a "
            "TRANSIENT error (RESOURCE_EXHAUSTED_TRANSIENT, MISSED_DEADLINE_TRANSIENT), so "
            "its retry policy was never asked"
        )
    if parts[0] == "devices" and parts[2:] == ["queue_limit"] and len(parts) == 3:
        name = parts[1]
        old = next((d.queue_limit for d in before.devices if d.name == name), None)
        new = next((d.queue_limit for d in scenario.devices if d.name == name), None)
        limits = [limit for limit in (old, new) if limit is not None]
        if not limits or any(name not in use.queue_met for use in uses):
            return None
        most = max(use.queue_met[name] for use in uses)
        if most >= min(limits):
            return None
        limits_text = f"the scenario's limit ({_limit(old)}) and this one ({_limit(new)})"
        if most < 0:
            nor = limits_text.replace(" and ", " nor ", 1)
            found = f"no execution arrived to find every unit of {name} busy, so neither {nor}"
        else:
            found = (
                f"executions that arrived with every unit of {name} busy found at most {most} "
                f"waiting, below both {limits_text}, so neither"
            )
        return f"warning: --set {key} changed nothing {where}: {found} turned one away"
    return None


def _limit(value: int | None) -> str:
    return "unbounded" if value is None else str(value)


def _never_chose(scenario: Scenario, device: DeviceSpec, choices: Mapping[str, int]) -> bool:
    """Whether ``device``'s scheduler and the priorities on it decided nothing in the run."""
    users = [app for app in scenario.apps if device in _devices_of(scenario, app)]
    return (
        choices.get(device.name, 1) == 0
        and not preemption_for(device.preemption).preempts
        and all(app.execution_timeout_ms is None for app in users)
    )
