"""Turning an extracted ``TracePlan`` into a ``Scenario`` that replays it.

What is derived from the trace and what is assumed is recorded as ``Note``s, a text line
and the scenario keys it gives a value of (``BuiltReplay.derived`` / ``.assumed``), so the
command can print it and say which of it a ``--set`` replaced; docs/replay.md lists the
same rules.
"""

from __future__ import annotations

import heapq
import itertools
import statistics
from array import array
from collections.abc import Sequence
from typing import Any, Final

import attrs

from nnemu._text import counted
from nnemu.driver import BURST_POLL_NS
from nnemu.hal import ExecutionPreference
from nnemu.replay._attempts import marks_line
from nnemu.replay._built import BuiltReplay, Note, _ms, _Notes
from nnemu.replay._columns import median
from nnemu.replay._devices import _app_model, _device, _fit_models
from nnemu.replay._plan import TraceApp, TraceDriver, TracePlan
from nnemu.scenario import (
    MAX_EXECUTIONS,
    MAX_TIME_MS,
    AppSpec,
    DeviceSpec,
    ExecutionMode,
    FaultKind,
    FaultSpec,
    IpcSpec,
    ModelSpec,
    Scenario,
    WorkloadKind,
    WorkloadSpec,
)

FIRST_UID: Final = 10_000


MAX_UNFINISHED_THREADS: Final = 64
"""Most app threads a replay gives an app whose in-flight count includes executions that
never end in the trace."""


def _loop_period_ns(plan: TracePlan) -> int:
    """Shift between loops: the trace's span plus its median gap between arrivals."""
    # (Each app's arrivals are sorted: merged, and the gaps 8-byte ints, bench/README.md.)
    arrivals = heapq.merge(*(app.arrivals_ns for app in plan.apps))
    gaps = array("q", (b - a for a, b in itertools.pairwise(arrivals) if b > a))
    span = max(a.arrivals_ns[-1] for a in plan.apps) - min(a.arrivals_ns[0] for a in plan.apps)
    if gaps:
        return span + int(median(gaps))
    durations = [d.median_execution_ns for d in plan.drivers if d.median_execution_ns]
    return span + (int(max(durations)) if durations else 1_000_000)


def loop_problem(plan: TracePlan, *, fast: bool, loops: int) -> str | None:
    """Why replaying ``plan`` ``loops`` times would pass a scenario's limits, naming ``-l``
    (or the trace's span) and the limit; None when it stays inside them.

    Checked before the build so the user reads about what they wrote, not about the
    ``arrivals_ms`` or ``executions`` the build would have made of it.
    """
    counts = [len(app.arrivals_ns) for app in plan.apps if fast or app.loop is not None]
    if counts:  # closed loops: -l N runs N times the executions
        count = max(counts)
        most = MAX_EXECUTIONS // count
        if loops > most:
            return (
                f"-l {loops}: an app would run {loops * count} executions, "
                f"past a scenario's limit of {MAX_EXECUTIONS} per app; use -l {most} at most"
            )
    if fast:
        return None
    span_ns = max(app.arrivals_ns[-1] - app.arrivals_ns[0] for app in plan.apps)
    if _ms(span_ns) > MAX_TIME_MS:
        return (
            f"{plan.source}: the trace's arrivals span {_ms(span_ns):.3f} ms, past a scenario's limit of "
            f"{MAX_TIME_MS:.0f} ms (one hour); replay it with -n"
        )
    period_ns = _loop_period_ns(plan)
    most = int((MAX_TIME_MS * 1e6 - span_ns) // period_ns) + 1
    while most > 1 and _ms((most - 1) * period_ns + span_ns) > MAX_TIME_MS:
        most -= 1
    if loops <= most:
        return None
    return (
        f"-l {loops}: the last arrival would come at {_ms((loops - 1) * period_ns + span_ns):.3f}"
        f" ms, past a scenario's limit of {MAX_TIME_MS:.0f} ms (one hour); use -l {most} at most"
    )


def build_replay(
    plan: TracePlan, *, fast: bool = False, loops: int = 1, name: str | None = None
) -> BuiltReplay:
    """The scenario that replays ``plan``.

    Args:
        plan: what the trace holds.
        fast: ignore the timestamps: every app runs its executions back to back
            (a closed loop with the same count, from time 0).
        loops: repeat the recorded arrivals this many times, each loop shifted by the
            trace's span plus its median gap.
        name: scenario name (default: ``replay``).
    """
    notes = _Notes()
    period_ns = _loop_period_ns(plan)
    models = [_app_model(app, plan, notes) for app in plan.apps]
    model_of_app = {app.pid: model for app, model in zip(plan.apps, models, strict=True)}
    setters: set[int] = set()
    devices = [_device(driver, plan, model_of_app, setters, notes) for driver in plan.drivers]
    _fit_models(plan, devices, model_of_app, setters, notes)
    devices = [
        _death(driver, device, plan, notes)
        for driver, device in zip(plan.drivers, devices, strict=True)
    ]
    models = [model_of_app[app.pid] for app in plan.apps]
    ipc = _ipc(plan, notes)
    driver_by_pid = {d.pid: d for d in plan.drivers}
    wake_ns = int(median(plan.ipc_latency_ns)) if plan.ipc_latency_ns else None
    apps = [
        _app(
            app,
            uid=FIRST_UID + index,
            model=model_of_app[app.pid],
            workload=_workload(app, plan, fast=fast, loops=loops, period_ns=period_ns),
            driver_by_pid=driver_by_pid,
            wake_ns=wake_ns,
            notes=notes,
        )
        for index, app in enumerate(plan.apps)
    ]
    unmarked = _timing_only(plan)
    if unmarked:
        notes.warnings.append(unmarked)
    workloads = [f"apps.{app.name}.workload" for app in plan.apps]
    if fast:
        notes.assume(
            "-n: timestamps ignored; each app runs its executions back to back", *workloads
        )
    if loops > 1:
        notes.derive(f"-l {loops}: arrivals repeated every {_ms(period_ns):.3f} ms", *workloads)

    scenario = Scenario(
        name=name or "replay",
        devices=tuple(devices),
        ipc=ipc,
        models=tuple(models),
        apps=tuple(apps),
        source=plan.source,
    )
    return BuiltReplay(
        scenario=scenario,
        derived=tuple(notes.derived),
        assumed=tuple(notes.assumed),
        loop_period_ms=_ms(period_ns),
        warnings=tuple(notes.warnings),
    )


def _timing_only(plan: TracePlan) -> str | None:
    """The warning for apps with no ``nnemu::qos`` mark (a device's trace, or an nnemu one
    from before the mark): what their replay assumes, the timing-only rule
    (docs/replay.md, "A trace without nnemu's marks"); None when every app has one."""
    bare = [app for app in plan.apps if app.qos is None]
    if not bare:
        return None
    setters = [
        f"{app.name} called setTimeout {app.timeout_calls}x" for app in bare if app.timeout_calls
    ]
    every = len(bare) == len(plan.apps)
    return (
        f"no nnemu marks for {'any app' if every else ', '.join(a.name for a in bare)} in "
        "the trace (a device's trace): no deadlines in the trace, replayed without "
        "deadlines"
        + (f" ({'; '.join(setters)}; its value is not traced)" if setters else "")
        + " at priority medium; each [NN_LA_PE] section (else runtime or HAL execute call) "
        "taken as one execution, from its begin to its end whatever its result; and no "
        "driver dies"
    )


def _death(driver: TraceDriver, device: DeviceSpec, plan: TracePlan, notes: _Notes) -> DeviceSpec:
    """``device`` with a ``crash`` fault when nnemu's ``nnemu::died`` mark says its driver
    process died: as long after the first app's start (its ``[NN_LA_PO]`` begin, else its
    first arrival) as in the trace, the time the replay's first app starts from."""
    if driver.died_ns is None:
        return device
    first = plan.apps[0]
    origin_ns = first.start_ns if first.start_ns is not None else plan.t0_ns
    at_ms = round(max(0.0, _ms(driver.died_ns - origin_ns)), 3)
    notes.derive(
        f"devices.{driver.name}.faults: crash at {at_ms:.3f} ms (its process died "
        f"{_ms(driver.died_ns - plan.t0_ns):+.3f} ms from the first execution: nnemu::died; "
        f"the replay's time 0 is {first.name}'s start ([NN_LA_PO]), "
        f"{_ms(plan.t0_ns - origin_ns):.3f} ms before the first execution)",
        f"devices.{driver.name}.faults",
    )
    crash = FaultSpec(kind=FaultKind.CRASH, at_ms=at_ms)
    return attrs.evolve(device, faults=(*device.faults, crash))


def _ipc(plan: TracePlan, notes: _Notes) -> IpcSpec:
    """The IPC latency: the median delay from a HIDL call's client side to its server side."""
    ipc = IpcSpec()
    if plan.ipc_latency_ns:
        latency = _ms(median(plan.ipc_latency_ns)) * 1000
        ipc = IpcSpec(latency_us=round(latency, 3))
        notes.derive(
            f"ipc.latency_us: {ipc.latency_us:g} (median of {len(plan.ipc_latency_ns)} "
            "::client begin -> ::server begin delays)",
            "ipc.latency_us",
        )
    else:
        notes.assume(
            f"ipc.latency_us: {ipc.latency_us:g} (default; no HIDL pair seen)", "ipc.latency_us"
        )
    return ipc


def _workload(
    app: TraceApp, plan: TracePlan, *, fast: bool, loops: int, period_ns: int
) -> WorkloadSpec:
    """The app's recorded arrivals (repeated ``loops`` times), or a closed loop of as many
    executions: with ``fast`` (from time 0), or when its trace shows one (``_loop``: from its
    first arrival, with the think time it shows)."""
    first = app.arrivals_ns[0]
    think_ms = 0.0 if app.loop is None else _ms(app.loop.think_ns)
    if fast or app.loop is not None:
        return WorkloadSpec(
            kind=WorkloadKind.CLOSED_LOOP,
            executions=len(app.arrivals_ns) * loops,
            start_ms=0.0 if fast else _ms(first - plan.t0_ns),
            think_ms=think_ms,
        )
    arrivals = [_ms(loop * period_ns + t - first) for loop in range(loops) for t in app.arrivals_ns]
    return WorkloadSpec(
        kind=WorkloadKind.TRACE,
        start_ms=_ms(first - plan.t0_ns),
        arrivals_ms=tuple(arrivals),
    )


def _app(
    app: TraceApp,
    *,
    uid: int,
    model: ModelSpec,
    workload: WorkloadSpec,
    driver_by_pid: dict[int, TraceDriver],
    wake_ns: int | None,
    notes: _Notes,
) -> AppSpec:
    """The app's spec: what the trace tells of its mode, threads and devices; the rest assumed
    (``wake_ns``: the median IPC latency, what waking a sleeping thread costs)."""
    where = f"apps.{app.name}"
    notes.derive(
        f"{where}: {len(app.arrivals_ns)} executions ({app.arrival_source})", f"{where}.workload"
    )
    if app.loop is not None:
        notes.derive(
            f"{where}.workload: closed_loop, think_ms {_ms(app.loop.think_ns):g}, "
            f"{counted(app.loop.threads, 'thread')} ({app.loop.evidence()})",
            f"{where}.workload",
            f"{where}.threads",
        )
    bursts = ""
    if app.burst_executions:
        on = [
            driver_by_pid[pid].name
            for pid in app.driver_pids
            if pid in driver_by_pid and driver_by_pid[pid].burst_executions
        ]
        bursts = (
            f"{' and '.join(on) or 'a driver'}'s burst thread ran {app.burst_executions} of "
            "its requests: BurstExecutorWithCache::execute"
        )
    if app.execution_mode is not None:
        mode = app.execution_mode
        notes.derive(
            f"{where}.execution_mode: {mode.value} (runtime execution API"
            + (f"; {bursts}" if bursts else "")
            + ")",
            f"{where}.execution_mode",
        )
    elif bursts:
        mode = ExecutionMode.BURST
        notes.derive(
            f"{where}.execution_mode: burst ({bursts}; no runtime marks)",
            f"{where}.execution_mode",
        )
    else:
        mode = ExecutionMode.SYNC
        notes.assume(
            f"{where}.execution_mode: sync (no runtime marks in the trace)",
            f"{where}.execution_mode",
        )
    preference = _burst_preference(app, wake_ns, notes)
    threads = app.max_in_flight if app.loop is None else app.loop.threads
    if app.never_ended and threads > MAX_UNFINISHED_THREADS:
        # Each execution still open at the end would hold an app thread for the whole
        # replay; past the bound they share threads.
        threads = MAX_UNFINISHED_THREADS
        notes.warnings.append(
            f"{where}.threads: {threads}, not {app.max_in_flight}: {app.never_ended} of its "
            f"executions never end in the trace (cut or broken), and each would hold a thread; "
            f"executions beyond {threads} in flight wait for a free thread"
        )
    if threads > 1 and app.loop is None:
        notes.derive(f"{where}.threads: {threads} (most executions in flight)", f"{where}.threads")
    devices_used: tuple[str, ...] | None = None
    known = [driver_by_pid[p].name for p in app.driver_pids if p in driver_by_pid]
    died = [
        driver_by_pid[p]
        for p in app.driver_pids
        if p in driver_by_pid and driver_by_pid[p].died_ns is not None
    ]
    if len(known) == 1 and died and app.fallbacks:
        # Its compilation allowed the CPU: pinned, it would fail where it fell back.
        notes.derive(
            f"{where}.devices: all (every execution it sent a driver went to {known[0]}, "
            f"which died, and {app.fallbacks} cpuFallbackFull/Partial sections show its "
            "runtime ran work on the CPU: its compilation allowed it)",
            f"{where}.devices",
        )
    elif len(known) == 1:
        devices_used = (known[0],)
        notes.derive(
            f"{where}.devices: [{known[0]}] (every execution went to it)", f"{where}.devices"
        )
    elif known:
        notes.derive(
            f"{where}: executions went to {', '.join(known)} (all devices kept)",
            f"{where}.devices",
        )
    if app.reusable_calls:
        notes.derive(
            f"{where}.reusable: true ({counted(app.reusable_calls, 'setReusable call')}: "
            "ANeuralNetworksExecution_setReusable)",
            f"{where}.reusable",
        )
    qos = _qos(app, where, devices_used, notes)
    notes.assumed.extend(_unrecorded_settings(app, where, qos))
    return AppSpec(
        name=app.name,
        uid=uid,
        model=model.name,
        devices=devices_used,
        execution_mode=mode,
        preference=preference,
        threads=threads,
        workload=workload,
        reusable=app.reusable_calls > 0,
        **qos,
    )


def _qos(
    app: TraceApp, where: str, devices: tuple[str, ...] | None, notes: _Notes
) -> dict[str, Any]:
    """The app's priority and timeouts from its ``nnemu::qos`` mark (empty: no mark).  A
    timeout needs the one device it reaches (``createForDevices``), as when it was set."""
    qos = app.qos
    if qos is None:
        return {}
    settings: dict[str, Any] = {"priority": qos.priority}
    shown = [f"{where}.priority: {qos.priority.name.lower()}"]
    keys = [f"{where}.priority", f"{where}.execution_timeout_ms"]
    timeouts = {
        "execution_timeout_ms": qos.execution_timeout_ns,
        "compile_timeout_ms": qos.compile_timeout_ns,
    }
    for key, ns in timeouts.items():
        if ns is None:
            continue
        if devices is None or len(devices) != 1:
            notes.warnings.append(
                f"{where}.{key}: {_ms(ns):g} (nnemu::qos) not replayed: it needs the app "
                "pinned to one device, and its executions went to no single one"
            )
            continue
        settings[key] = _ms(ns)
        shown.append(f"{key} {_ms(ns):g}")
        if f"{where}.{key}" not in keys:
            keys.append(f"{where}.{key}")
    if qos.drop_late_frames and "execution_timeout_ms" in settings:
        settings["drop_late_frames"] = True
        shown.append("drop_late_frames")
        keys.append(f"{where}.drop_late_frames")
    if len(shown) == 1:
        shown.append("no deadline")
    notes.derive(f"{', '.join(shown)} (nnemu::qos)", *keys)
    return settings


MIN_BURST_EVIDENCE: Final = 3
"""Fewest burst requests soon after the previous execution from which a replay derives
whether the burst server polled."""


def _burst_preference(app: TraceApp, wake_ns: int | None, notes: _Notes) -> ExecutionPreference:
    """``low_power`` when the app's burst server did not poll: its requests issued within
    ``BURST_POLL_NS`` of the thread's previous execution (when a polling server still spins)
    took a median of at least half a wake-up (``wake_ns``) to reach it, not a fast message
    queue's few µs (AOSP's burst server polls unless the compilation prefers low power);
    else the default."""
    default = ExecutionPreference.FAST_SINGLE_ANSWER
    if wake_ns is None or not app.burst_deliveries_ns:
        return default
    soon = [
        ns
        for ns, idle in zip(app.burst_deliveries_ns, app.burst_idle_ns, strict=True)
        if 0 <= idle <= BURST_POLL_NS
    ]
    if len(soon) < MIN_BURST_EVIDENCE:
        return default
    median = statistics.median(soon)
    if 2 * median < wake_ns:
        return default
    notes.derive(
        f"apps.{app.name}.preference: low_power (its burst server did not poll: "
        f"{len(soon)} requests issued within {BURST_POLL_NS // 1000} us of its previous "
        f"execution took a median {_ms(median):.3f} ms to reach it, a wake-up (ipc "
        f"{_ms(wake_ns) * 1000:g} us), not a fast message queue's few us)",
        f"apps.{app.name}.preference",
    )
    return ExecutionPreference.LOW_POWER


def _unrecorded_settings(app: TraceApp, where: str, qos: dict[str, Any]) -> list[Note]:
    """What a replay assumes for the settings the trace does not carry (priority and
    deadline without an ``nnemu::qos`` mark, one compilation)."""
    priority, deadline = f"{where}.priority", f"{where}.execution_timeout_ms"
    lines = []
    if qos:
        pass  # derived from its nnemu::qos mark (``_qos``)
    elif app.priority_calls:
        lines.append(
            Note(
                f"{where}.priority: medium (setPriority was called {app.priority_calls}x; "
                "the trace does not carry its value: no nnemu::qos mark)",
                (priority,),
            )
        )
    else:
        lines.append(Note(f"{where}.priority: medium (no priority in the trace)", (priority,)))
    if qos:
        pass
    elif app.timeout_calls:
        lines.append(
            Note(
                f"{where}: no deadline (setTimeout was called {app.timeout_calls}x; "
                "the trace does not carry its value: no nnemu::qos mark)",
                (deadline,),
            )
        )
    else:
        lines.append(Note(f"{where}: no deadline (none in the trace)", (deadline,)))
    if app.compilations > 1:
        lines.append(
            Note(
                f"{where}: compiles once ({app.compilations} compilations recorded; "
                "arrivals count from the end of the one compilation)",
                (f"{where}.compilations",),
            )
        )
    return lines


def describe_plan(plan: TracePlan) -> list[str]:
    """The extracted plan, one line per item (what the command prints first)."""
    lines = [
        f"replay of {plan.source} ({plan.format}): {counted(len(plan.apps), 'app')}, "
        f"{counted(len(plan.drivers), 'driver')}; time 0 = first execution at "
        f"{plan.t0_ns / 1e9:.6f} s"
    ]
    drivers = {d.pid: d for d in plan.drivers}
    for app in plan.apps:
        arrivals = app.arrivals_ns
        gaps = [_ms(b - a) for a, b in itertools.pairwise(arrivals[:10])]
        process = f" ({app.process_name})" if app.process_name else ""
        lines.append(f"  app {app.name}: pid {app.pid}{process}")
        lines.append(
            f"    {len(arrivals)} executions from {app.arrival_source}, first at "
            f"+{_ms(arrivals[0] - plan.t0_ns):.3f} ms"
            + (f"; {app.never_ended} did not finish in the trace" if app.never_ended else "")
        )
        marked = marks_line(app.retried, app.waited, app.failed)
        if marked:
            lines.append(f"    {marked}")
        if gaps:
            shown = ", ".join(f"{g:.3f}" for g in gaps[:8]) + (", ..." if len(gaps) > 8 else "")
            lines.append(f"    gaps ms: {shown}")
        if app.loop is not None:
            lines.append(
                f"    closed loop on {counted(app.loop.threads, 'thread')}: each execution "
                f"arrives {app.loop.think_ns / 1e6:.3f} ms after its thread's last one ended "
                f"({app.loop.in_loop} of {app.loop.gaps})"
            )
        lines.append(
            f"    model {app.model_name or '?'}; mode "
            f"{app.execution_mode.value if app.execution_mode else 'unknown'}; "
            f"{counted(app.compilations, 'compilation')}; at most {app.max_in_flight} in flight"
        )
        used = ", ".join(
            f"{drivers[p].name if p in drivers else p} x{n}"
            for p, n in zip(app.driver_pids, app.driver_executions, strict=True)
        )
        lines.append(f"    executions on: {used or 'no driver seen (CPU)'}")
        qos = app.qos
        if qos is not None:
            timeouts = [
                f"{what} timeout {_ms(ns):g} ms"
                for what, ns in (
                    ("execution", qos.execution_timeout_ns),
                    ("compilation", qos.compile_timeout_ns),
                )
                if ns is not None
            ]
            lines.append(
                f"    priority {qos.priority.name.lower()}; "
                + ("; ".join(timeouts) if timeouts else "no deadline")
                + ("; drops late frames" if qos.drop_late_frames else "")
                + " (nnemu::qos)"
            )
        else:
            lines.append(
                "    priority, deadline: not in the trace"
                + (
                    f" (setPriority x{app.priority_calls}, setTimeout x{app.timeout_calls})"
                    if app.priority_calls or app.timeout_calls
                    else ""
                )
            )
    for driver in plan.drivers:
        process = f" ({driver.process_name})" if driver.process_name else ""
        lines.append(f"  driver {driver.name}: pid {driver.pid}{process}")
        median_exec = driver.median_execution_ns
        median_prep = driver.median_prepare_ns
        lines.append(
            f"    HAL {driver.hal_version.value}; {counted(len(driver.execution_ns), 'execution')}"
            + (f", median {_ms(median_exec):.3f} ms" if median_exec is not None else "")
            + (f" ({driver.unfinished} more did not finish)" if driver.unfinished else "")
            + (
                f"; {counted(driver.burst_executions, 'burst execution')}, median "
                f"{_ms(median(driver.burst_execution_ns)):.3f} ms"
                if driver.burst_execution_ns
                else ""
            )
            + f"; {counted(len(driver.prepare_ns), 'preparation')}"
            + (f", median {_ms(median_prep):.3f} ms" if median_prep is not None else "")
        )
    lines.extend(f"  note: {note}" for note in plan.notes)
    if plan.cut_ns is not None:
        cut = ", ".join(f"{app.name} {app.never_ended}" for app in plan.apps if app.never_ended)
        lines.append(
            f"  note: the trace ends with every open section closed at its last timestamp "
            f"(+{_ms(plan.cut_ns - plan.t0_ns):.3f} ms), as nnemu ends a run stopped by its "
            f"duration or interrupted: the executions ending there did not finish ({cut})"
        )
    return lines


def describe_build(built: BuiltReplay, overrides: Sequence[str] = ()) -> list[str]:
    """What was derived, what was assumed and what ``--set`` changed: under a line whose
    value a ``--set`` changed, which one (the replay ran with it, not with the line)."""
    lines = []
    for title, notes in (
        ("derived from the trace:", built.derived),
        ("assumed (not in the trace):", built.assumed),
    ):
        lines.append(title)
        for note in notes:
            lines.append(f"  {note.text}")
            found, whole = note.replaced_by(overrides)
            if found:
                how = "replaced" if whole else "partly replaced"
                lines.append(f"    {how} with {', '.join(f'--set {text}' for text in found)}")
    if overrides:
        lines.append("changed with --set:")
        lines.extend(f"  {text}" for text in overrides)
    return lines
