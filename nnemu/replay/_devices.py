"""The devices and models of a replay: each recorded driver's compute times, fitted to the
execution times the trace shows (``_device``, ``derive_exec_ratio``), and the model each app
runs on them (``_app_model``, ``_fit_models``)."""

from __future__ import annotations

import bisect
import math
from array import array
from collections.abc import Sequence
from typing import Final

import attrs

from nnemu._emulator import build_model
from nnemu._text import counted
from nnemu.driver import VALIDATE_NS_PER_OP, capabilities_from, compute_plan
from nnemu.hal import OperationType
from nnemu.replay._built import _ms, _Notes, choose_model
from nnemu.replay._columns import median
from nnemu.replay._plan import TraceApp, TraceDriver, TracePlan
from nnemu.scenario import (
    CpuSpec,
    DeviceCostSpec,
    DeviceSpec,
    LayerSpec,
    ModelSpec,
    PerformanceSpec,
    PerfSpec,
)

_MIN_RATIO: Final = 1e-6


def _compute_ns(model_spec: ModelSpec, performance: PerformanceSpec, cpu: CpuSpec) -> int:
    model = build_model(model_spec)
    return compute_plan(model, capabilities_from(performance), cpu).total_ns


def _with_ratio(performance: PerformanceSpec, dtype: str, ratio: float) -> PerformanceSpec:
    entry = PerfSpec(exec_time=ratio)
    if dtype == "quant8":
        return attrs.evolve(performance, quant8=entry)
    return attrs.evolve(performance, float32=entry)


def derive_exec_ratio(
    model_spec: ModelSpec, target_ns: int, cost: DeviceCostSpec, cpu: CpuSpec
) -> tuple[float, int]:
    """The execTime ratio that makes ``model_spec`` compute in ``target_ns`` minus the launch.

    Returns (ratio, compute ns the ratio gives).  Operations are rounded to whole µs
    (at least 1 µs each), so the ratio is refined on the real plan a few times.
    """
    goal = max(1_000, target_ns - round(cost.launch_us * 1000))
    base = PerformanceSpec()
    ratio = 1.0
    at_one = _compute_ns(model_spec, _with_ratio(base, model_spec.dtype, 1.0), cpu)
    ratio = max(_MIN_RATIO, goal / max(1, at_one))
    for _ in range(4):
        got = _compute_ns(model_spec, _with_ratio(base, model_spec.dtype, ratio), cpu)
        if got == goal or got <= 0:
            break
        ratio = max(_MIN_RATIO, ratio * goal / got)
    ratio = float(f"{ratio:.6g}")
    return ratio, _compute_ns(model_spec, _with_ratio(base, model_spec.dtype, ratio), cpu)


SMALL_LAYERS: Final = (LayerSpec(type=OperationType.SOFTMAX, output=(1, 2)),)
"""The model a replay assumes for an app whose model is not recognised and computes
faster than a mobilenet can: one operation, one input (a hotword model's last layer)."""


SMALL_NAME: Final = "one SOFTMAX layer"


def _is_small(spec: ModelSpec) -> bool:
    """Whether ``spec`` is the ``SMALL_LAYERS`` stand-in."""
    return spec.layers == SMALL_LAYERS


def _label(spec: ModelSpec) -> str:
    """The model's preset, or ``SMALL_NAME``."""
    return SMALL_NAME if _is_small(spec) else str(spec.preset)


def _fastest_ns(spec: ModelSpec) -> int:
    """The least compute ``spec`` can take on a device (each operation at least 1 µs)."""
    return _compute_ns(spec, _with_ratio(PerformanceSpec(), spec.dtype, _MIN_RATIO), CpuSpec())


def _app_model(app: TraceApp, plan: TracePlan, notes: _Notes) -> ModelSpec:
    """The app's model: the preset its [NN_LA_PO] name suggests; for an app whose name
    says nothing and whose device time is less than a mobilenet can take (a hotword model),
    ``SMALL_LAYERS``."""
    choice = choose_model(app.model_name)
    spec = ModelSpec(name=f"{app.name}-model", preset=choice.preset, dtype=choice.dtype)
    keys = (f"apps.{app.name}.model", f"models.{spec.name}.preset", f"models.{spec.name}.dtype")
    small_keys = (f"apps.{app.name}.model", f"models.{spec.name}.layers", keys[2])
    if choice.recognised:
        notes.derive(
            f"apps.{app.name}: model {choice.preset} {choice.dtype} "
            f"(from the [NN_LA_PO] name {app.model_name!r})",
            *keys,
        )
        return spec
    why = f"{app.model_name!r} not recognised" if app.model_name else "no [NN_LA_PO] mark"
    drivers = {d.pid: d for d in plan.drivers}
    if app.driver_pids and app.driver_pids[0] in drivers:
        driver = drivers[app.driver_pids[0]]
        mine, what = _app_device_ns(driver, app)
        launch_us = DeviceCostSpec().launch_us
        fastest = _fastest_ns(spec) + round(launch_us * 1000)
        if mine and median(mine) < fastest:
            small = attrs.evolve(spec, preset=None, layers=SMALL_LAYERS)
            notes.assume(
                f"apps.{app.name}: model {SMALL_NAME} {choice.dtype} ({why}; one operation, "
                f"as the median device time of {len(mine)} {what} on {driver.name}, "
                f"{_ms(median(mine)):.3f} ms, is less than {choice.preset} "
                f"{choice.dtype} can take: at the fastest {_ms(fastest - launch_us * 1000):.3f} "
                f"ms + launch {launch_us:g} us)",
                *small_keys,
            )
            return small
    notes.assume(f"apps.{app.name}: model {choice.preset} {choice.dtype} ({why})", *keys)
    return spec


def _per_execution_ns(driver: TraceDriver, app: TraceApp) -> tuple[Sequence[int], int] | None:
    """(device time of each execution, calls) of an app that called ``driver`` more often
    than it executed (a model split into partitions, one call each): the sum of the device
    times of the calls inside each of its recorded sections (calls after the last one, in a
    cut trace, left out).  None when it did not, when its sections overlap (several threads:
    a call's section is not known) or when a call lies outside them (an asynchronous
    ``startCompute`` section, which returns before its calls)."""
    if app.max_in_flight > 1 or not app.latencies_ns:
        return None
    clients = driver.execution_clients
    if clients.count(app.pid) <= len(app.arrivals_ns):
        return None  # (counted before the pairs are made: a tuple each, bench/README.md)
    mine = [
        (begin, ns)
        for begin, ns, pid in zip(
            driver.execution_begins_ns, driver.service_ns, clients, strict=True
        )
        if pid == app.pid
    ]
    begins = app.latency_begins_ns
    last_end = begins[-1] + app.latencies_ns[-1]
    sums: dict[int, int] = {}
    calls = 0
    for begin, ns in mine:
        index = bisect.bisect_right(begins, begin) - 1
        if index >= 0 and begin <= begins[index] + app.latencies_ns[index]:
            sums[index] = sums.get(index, 0) + ns
            calls += 1
        elif begin < last_end:
            return None  # a call outside its sections (startCompute's returns at once)
    if not sums:
        return None
    return [sums[index] for index in sorted(sums)], calls


def _app_device_ns(driver: TraceDriver, app: TraceApp) -> tuple[Sequence[int], str]:
    """``app``'s device time per execution on ``driver`` and what it is: per execution
    the sum of its calls when it split its model into partitions (``_per_execution_ns``), else
    the time of each call."""
    split = _per_execution_ns(driver, app)
    if split is None:
        served = driver.service_of(app.pid)
        bursts = driver.burst_clients.count(app.pid)
        if not bursts:
            return served, f"{app.name}'s executions"
        if bursts == len(served):
            return served, f"{app.name}'s burst executions"
        return served, f"{app.name}'s executions ({bursts} of them burst executions)"
    times, calls = split
    each = f"{calls // len(times)} calls" if calls % len(times) == 0 else "calls"
    return times, (
        f"{app.name}'s executions, each the sum of its {each} to it (partitions of the "
        f"model; {calls} calls)"
    )


def _device_time_ns(driver: TraceDriver, app: TraceApp | None) -> tuple[int, int, str] | None:
    """(median device time, count, what it is) of ``app``'s executions on ``driver``, or of
    all of them when the trace does not say which app sent which (None: none seen)."""
    if app is not None:
        mine, what = _app_device_ns(driver, app)
        if mine:
            return int(median(mine)), len(mine), what
    if driver.service_ns:
        return int(median(driver.service_ns)), len(driver.service_ns), "executions"
    return None


def _device(
    driver: TraceDriver,
    plan: TracePlan,
    model_of_app: dict[int, ModelSpec],
    setters: set[int],
    notes: _Notes,
) -> DeviceSpec:
    """The device of one driver process.  Its speed for each dtype is set so that the model of
    the app that sent it the most executions of that dtype computes in that app's median
    device time (the pids of those apps are added to ``setters``)."""
    cost = DeviceCostSpec()
    performance = PerformanceSpec()
    where = f"devices.{driver.name}"
    evidence = f"from {driver.hal_evidence}" if driver.hal_evidence else "no versioned method"
    notes.derive(f"{where}: HAL {driver.hal_version.value} ({evidence})", f"{where}.hal_version")
    users = [
        (count, app)
        for app in plan.apps
        for pid, count in zip(app.driver_pids, app.driver_executions, strict=True)
        if pid == driver.pid
    ]
    users.sort(key=lambda u: (-u[0], u[1].arrivals_ns[0], u[1].pid))
    top_app = users[0][1] if users else None
    by_dtype: dict[str, TraceApp] = {}
    # A dtype's speed comes from the app with the most executions of it, one that runs a
    # mobilenet before one that runs the one-operation stand-in: that one's device time is
    # mostly the launch, and a speed made from it would stretch a mobilenet beside it
    # beyond any width (aidl_v4_reusable: a camera replayed at 2227 ms for 4.7).
    for _, app in sorted(users, key=lambda u: _is_small(model_of_app[u[1].pid])):
        by_dtype.setdefault(model_of_app[app.pid].dtype, app)
    if not by_dtype and top_app is None and driver.service_ns and plan.apps:
        by_dtype[model_of_app[plan.apps[0].pid].dtype] = plan.apps[0]
    cost = _small_launch(driver, by_dtype, model_of_app, cost, notes)
    timed = False
    for dtype, app in sorted(by_dtype.items()):
        found = _device_time_ns(driver, app)
        if found is None:
            continue
        median_ns, count, what = found
        spec = model_of_app[app.pid]
        ratio, got = derive_exec_ratio(spec, median_ns, cost, CpuSpec())
        if _is_small(spec) and cost.launch_us < DeviceCostSpec().launch_us:
            # The launch took the rest of the device time (``_small_launch``): the model
            # computes at the fastest, which also keeps the other apps' models on the
            # device from being slowed by the small model's floor.
            ratio = _MIN_RATIO
            got = _compute_ns(spec, _with_ratio(performance, dtype, ratio), CpuSpec())
        performance = _with_ratio(performance, dtype, ratio)
        setters.add(app.pid)
        timed = True
        launch_ns = round(cost.launch_us * 1000)
        validation = _is_small(spec) and cost.launch_us < DeviceCostSpec().launch_us
        if got + launch_ns + (VALIDATE_NS_PER_OP if validation else 0) > median_ns + max(
            2_000, median_ns // 50
        ):
            # Faster than the model can compute (each operation takes at least 1 µs), as
            # when most of the times are executions a driver refused at once: no "=".
            how = (
                f"{_ms(median_ns):.3f} ms, less than {_label(spec)} {spec.dtype} can take: "
                f"at the fastest {_ms(got):.3f} ms + launch {cost.launch_us:g} us"
            )
        else:
            how = (
                f"{_ms(median_ns):.3f} ms = {_label(spec)} {spec.dtype} {_ms(got):.3f} ms "
                f"+ launch {cost.launch_us:g} us"
                + (f" + validation {VALIDATE_NS_PER_OP / 1000:g} us" if validation else "")
            )
        notes.derive(
            f"{where}.performance.{dtype}.exec_time: {ratio:g} "
            f"(median device time of {count} {what} {how})",
            f"{where}.performance.{dtype}.exec_time",
        )
    if not timed:
        notes.assume(
            f"{where}.performance: defaults (no execution observed)", f"{where}.performance"
        )
    median_prep = driver.median_prepare_ns
    if top_app is not None and median_prep is not None:
        ops = len(build_model(model_of_app[top_app.pid]).main.operations)
        fixed = max(0.0, _ms(median_prep) - cost.prepare_ms_per_op * ops)
        cost = attrs.evolve(cost, prepare_ms=round(fixed, 3))
        notes.derive(
            f"{where}.cost.prepare_ms: {cost.prepare_ms:g} (median of "
            f"{counted(len(driver.prepare_ns), 'preparation')} {_ms(median_prep):.3f} ms "
            f"- {cost.prepare_ms_per_op:g} ms x {ops} operations)",
            f"{where}.cost.prepare_ms",
        )
    split = [app for _, app in users if len(driver.service_of(app.pid)) > len(app.arrivals_ns)]
    jitter = _jitter(driver, [app for _, app in users if app not in split], pool=not split)
    if jitter is None and split:
        app = split[0]
        notes.assume(
            f"{where}.cost.jitter: none ({app.name} made {len(driver.service_of(app.pid))} "
            f"calls to it for {len(app.arrivals_ns)} executions: a model split into "
            "partitions, whose times differ by partition, not by jitter)",
            f"{where}.cost.jitter",
        )
    if jitter is not None:
        sigma, count = jitter
        cost = attrs.evolve(cost, jitter=sigma)
        notes.derive(
            f"{where}.cost.jitter: {sigma:g} (spread of ln device time around each app's "
            f"median, {count} executions: 1.4826 x median absolute deviation)",
            f"{where}.cost.jitter",
        )
    units = driver.compute_units
    if units > 1 and driver.units_fit:
        fit = driver.units_fit
        others = " and ".join(
            f"{spread:.2g} with {count}" for count, spread in enumerate(fit, 1) if count != units
        )
        notes.derive(
            f"{where}.compute_units: {units} (the device times fit {units} units: timed on the "
            "unit each execution took, first come first served, they stray "
            f"{fit[units - 1]:.2g} from their app's median (median |ln|), against {others}; "
            f"{driver.units_evidence} began beside a running one)",
            f"{where}.compute_units",
        )
    elif units > 1:
        notes.derive(
            f"{where}.compute_units: {units} (at most {units} executions at once on the "
            "driver's threads"
            + (
                f", its {driver.burst_executions} burst executions included"
                if driver.burst_executions
                else ""
            )
            + f"; {driver.units_evidence} began beside a running one and ran from their "
            "begin)",
            f"{where}.compute_units",
        )
    workers: int = attrs.fields(DeviceSpec).worker_threads.default or 1
    if units > workers:
        workers = units
        notes.derive(
            f"{where}.worker_threads: {workers} (one per compute unit, so that asynchronous "
            "executions can keep every unit busy)",
            f"{where}.worker_threads",
        )
    default_launch = cost.launch_us == DeviceCostSpec().launch_us
    defaults = [
        f"{where}.{key}"
        for key in (
            "type",
            *(() if units > 1 else ("compute_units",)),
            *(("cost.launch_us",) if default_launch else ()),
        )
    ]
    notes.assume(
        f"{where}: type accelerator, "
        + ("" if units > 1 else "1 compute unit, ")
        + (f"launch {cost.launch_us:g} us, " if default_launch else "")
        + ("" if jitter is not None or split else "no jitter, ")
        + "per_app_priority scheduler, no preemption (defaults)",
        *defaults,
        *(() if jitter is not None or split else (f"{where}.cost.jitter",)),
        f"{where}.scheduler",
        f"{where}.preemption",
    )
    notes.assume(
        f"{where}.performance.float32/quant8.power_usage: {performance.float32.power_usage:g}, "
        f"{performance.quant8.power_usage:g} (defaults: traces carry no power use, so the "
        "energy printed assumes them)",
        f"{where}.performance.float32.power_usage",
        f"{where}.performance.quant8.power_usage",
    )
    return DeviceSpec(
        name=driver.name,
        hal_version=driver.hal_version,
        compute_units=units,
        worker_threads=workers,
        performance=performance,
        cost=cost,
    )


def _small_launch(
    driver: TraceDriver,
    by_dtype: dict[str, TraceApp],
    model_of_app: dict[int, ModelSpec],
    cost: DeviceCostSpec,
    notes: _Notes,
) -> DeviceCostSpec:
    """``cost`` with a launch short enough for the quickest app with a ``SMALL_LAYERS`` model
    that sets the device's speed: when its median device time is less than the launch plus
    the model's fastest compute (and the driver's validation of the request), the launch is
    that time less them (the trace gives the sum, not the parts)."""
    launch_ns = round(cost.launch_us * 1000)
    quickest: tuple[int, int, str, int] | None = None
    for app in by_dtype.values():
        spec = model_of_app[app.pid]
        if not _is_small(spec):
            continue
        found = _device_time_ns(driver, app)
        if found is None:
            continue
        floor = _fastest_ns(spec) + VALIDATE_NS_PER_OP
        if found[0] < launch_ns + floor and (quickest is None or found[0] < quickest[0]):
            quickest = (found[0], found[1], found[2], floor)
    if quickest is None:
        return cost
    median_ns, count, what, floor = quickest
    launch_us = round(max(0, median_ns - floor) / 1000, 3)
    where = f"devices.{driver.name}.cost.launch_us"
    notes.derive(
        f"{where}: {launch_us:g} (median device time of {count} {what} "
        f"{_ms(median_ns):.3f} ms, less than the default launch {cost.launch_us:g} us + "
        f"{SMALL_NAME} at the fastest {_ms(floor - VALIDATE_NS_PER_OP):.3f} ms + the "
        f"request's validation {VALIDATE_NS_PER_OP / 1000:g} us: the launch is the rest)",
        where,
    )
    return attrs.evolve(cost, launch_us=launch_us)


MIN_JITTER_EXECUTIONS: Final = 20
"""Fewest device times from which a replay derives a device's jitter."""


def _jitter(
    driver: TraceDriver, users: Sequence[TraceApp], *, pool: bool = True
) -> tuple[float, int] | None:
    """(sigma, executions) of the device's log-normal jitter: the robust spread (1.4826 x the
    median absolute deviation) of ln device time around each app's own median, pooled; None
    with fewer than ``MIN_JITTER_EXECUTIONS`` times.  Without ``pool`` (an app of the device
    made several calls per execution, partitions of a model) only ``users``' own times count,
    never all the device's times in one group."""
    groups = [driver.service_of(app.pid) for app in users] or ([driver.service_ns] if pool else [])
    if pool and sum(len(g) for g in groups) < MIN_JITTER_EXECUTIONS:
        groups = [driver.service_ns]
    # 8-byte floats, sorted a chunk at a time for the medians (bench/README.md).
    deviations = array("d")
    for group in groups:
        logs = array("d", (math.log(ns) for ns in group if ns > 0))
        if len(logs) < 2:
            continue
        centre = median(logs)
        deviations.extend(abs(x - centre) for x in logs)
    if len(deviations) < MIN_JITTER_EXECUTIONS:
        return None
    sigma = round(1.4826 * median(deviations), 3)
    return (sigma, len(deviations)) if sigma > 0 else None


_WIDTHS: Final = (0.05, 4.0)
"""The range of a mobilenet ``width`` a replay fits to an app's device time."""


_FIT_TOLERANCE: Final = 0.01
"""A model is refitted when the device's speed misses the app's time by more than this."""


def _with_width(spec: ModelSpec, width: float) -> ModelSpec:
    params = dict(spec.params)
    params["width"] = width
    return attrs.evolve(spec, params=tuple(sorted(params.items())))


_EQUAL_NS: Final = 2_000
"""A fitted model's time plus the launch is printed as equal to the median it was fitted to
when within this (the notes print µs)."""


def _fit_width(spec: ModelSpec, target_ns: int, device: DeviceSpec) -> tuple[float, int]:
    """The mobilenet ``width`` whose compute on ``device`` plus the launch is closest to
    ``target_ns`` (bisection: compute grows with the width); (width, compute ns)."""
    goal = target_ns - round(device.cost.launch_us * 1000)
    low, high = _WIDTHS
    best = (1.0, _compute_ns(spec, device.performance, CpuSpec()))
    for _ in range(24):
        middle = (low * high) ** 0.5
        width = float(f"{middle:.4g}")
        got = _compute_ns(_with_width(spec, width), device.performance, CpuSpec())
        if abs(got - goal) < abs(best[1] - goal):
            best = (width, got)
        if got < goal:
            low = middle
        elif got > goal:
            high = middle
        else:
            break
    return best


def _fit_models(
    plan: TracePlan,
    devices: Sequence[DeviceSpec],
    model_of_app: dict[int, ModelSpec],
    setters: set[int],
    notes: _Notes,
) -> None:
    """Give each app that did not set its device's speed a model that takes its own median
    device time there: a device's time per execution belongs to the (device, model) pair,
    and the trace does not say which model an app ran, only how long the device took."""
    device_of = {d.pid: dev for d, dev in zip(plan.drivers, devices, strict=True)}
    driver_of = {d.pid: d for d in plan.drivers}
    for app in plan.apps:
        if app.pid in setters or not app.driver_pids or app.driver_pids[0] not in device_of:
            continue
        driver, device = driver_of[app.driver_pids[0]], device_of[app.driver_pids[0]]
        mine, what = _app_device_ns(driver, app)
        if not mine:
            continue
        spec = model_of_app[app.pid]
        target = int(median(mine))
        now = _compute_ns(spec, device.performance, CpuSpec()) + round(device.cost.launch_us * 1000)
        if _is_small(spec):
            now += VALIDATE_NS_PER_OP  # (counted in the launch ``_small_launch`` derived)
        if abs(now - target) <= _FIT_TOLERANCE * target:
            continue
        where = f"models.{spec.name}"
        if spec.preset not in ("mobilenet_v1", "mobilenet_v2"):
            notes.assume(
                f"{where}: {_label(spec)} as is, {_ms(now):.3f} ms on {device.name} against "
                f"{app.name}'s median device time {_ms(target):.3f} ms (only a mobilenet's "
                "width is fitted)",
                where,
            )
            continue
        width, got = _fit_width(spec, target, device)
        model_of_app[app.pid] = _with_width(spec, width)
        # The compute moves in steps with the width (whole channels, whole us per
        # operation): an equation only when the nearest step is the median.
        miss = got + round(device.cost.launch_us * 1000) - target
        near = abs(miss) > _EQUAL_NS
        notes.derive(
            f"{where}.params.width: {width:g} (median device time of {len(mine)} "
            f"{what} on {device.name} {_ms(target):.3f} ms {'~' if near else '='} "
            f"{spec.preset} {spec.dtype} width {width:g} {_ms(got):.3f} ms + launch "
            f"{device.cost.launch_us:g} us"
            + (f", {miss / target:+.1%}: the nearest a width gives" if near else "")
            + ")",
            f"{where}.params.width",
        )
