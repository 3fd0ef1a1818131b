"""How many compute units a recorded driver had, told by its execution times (``_device_units``)."""

from __future__ import annotations

import collections
import heapq
import itertools
import math
from array import array
from collections.abc import Iterable, Sequence
from typing import Final

from nnemu.replay._columns import ascending, median, sorted_order
from nnemu.replay._tally import _DriverTally

_NOISE: Final = 1000
"""One execution in this many begun beside running ones is noise, not a compute unit."""


def _service(begins: array[int], durations: array[int]) -> array[int]:
    """How long the device worked on each execution (begin order), one at a time: from its
    begin, or from the end of the execution that finished before it if that is later, to
    its own end (a driver call that waited behind another app's execution is timed from
    when the device was free)."""
    ends = array("q", (b + d for b, d in zip(begins, durations, strict=True)))
    service = array("q", bytes(8 * len(ends)))
    previous = None
    keys = zip(ends, begins, strict=True)
    if all(a <= b for a, b in itertools.pairwise(keys)):
        by_end: Iterable[int] = range(len(ends))  # as a serial device gives them
    else:
        by_end = sorted_order(ends, begins)
    for i in by_end:
        start = begins[i] if previous is None else max(begins[i], previous)
        service[i] = ends[i] - start
        previous = ends[i]
    return service


PARALLEL_BAND: Final = 0.25
"""Least half-width (ln) of the band of device times around an app's typical one in which
an execution's time counts as that app's compute (``_units``); at least 3 x the spread of
the app's times on an idle device."""


def _typical(durations: Iterable[int]) -> tuple[float, float]:
    """(median, band) of an app's device times on an idle device: the band is the half-width
    (ln) inside which a time is its compute, jitter included: 3 x 1.4826 x the median absolute
    deviation of ln time, at least ``PARALLEL_BAND``."""
    # 8-byte floats, sorted a chunk at a time for the medians (bench/README.md).
    logs = array("d", (math.log(d) for d in durations if d > 0))
    if not logs:
        return 0.0, PARALLEL_BAND  # (no time to compare with)
    centre = median(logs)
    away = array("d", (abs(x - centre) for x in logs))
    del logs
    spread = 1.4826 * median(away)
    return math.exp(centre), max(PARALLEL_BAND, 3 * spread)


def _units(
    begins: Sequence[int], durations: Sequence[int], clients: Sequence[int], serial: array[int]
) -> tuple[int, bytearray | None]:
    """(compute units, which ran beside another (1) or None: none did) of one device's
    executions (begin order), from their driver times and ``serial`` (their times after the
    execution that ended before each, ``_service``).

    An execution that began while the device had none open ran from its begin: its driver
    time is its app's device time on an idle device (``_typical`` of those, per client; of
    the device's when its client has none, and then it counts only for the fit: a unit
    count of 1 is returned with ``beside``).  One that began while another was open either
    waited for a unit and then ran (its ``serial`` time), or ran beside it from its begin, on
    another unit: counted so only when its whole driver time is inside its app's band around
    the typical time and its ``serial`` time is below the band (as two executions begun
    together on two units end together).  A call refused at once (a short driver time), one
    that waited, or one aborted after a wait (a driver time past the band) is not counted as
    running beside another.  The units are the most executions running at once (1 when none
    ran beside another).
    """
    count = len(begins)
    idle = bytearray(count)  # (a byte an execution: bench/README.md)
    latest_end = None
    on_idle: dict[int, array[int]] = {}
    for i in range(count):
        begin, duration = begins[i], durations[i]
        if latest_end is None or latest_end <= begin:
            idle[i] = True
            times = on_idle.get(clients[i])
            if times is None:
                times = on_idle[clients[i]] = array("q")
            times.append(duration)
        end = begin + duration
        if latest_end is None or end > latest_end:
            latest_end = end
    if not on_idle or all(idle):
        return 1, None
    device_typical = _typical(itertools.chain.from_iterable(on_idle.values()))
    typical = {client: _typical(ds) for client, ds in on_idle.items()}
    del on_idle
    beside = bytearray(count)
    guessed = bytearray(count)
    """Judged by the device's typical time: its app never began on an idle device."""
    found = False
    for i in range(count):
        if idle[i]:
            continue
        if clients[i] and clients[i] not in typical:
            guessed[i] = True
        centre, band = typical.get(clients[i], device_typical)
        whole, after = durations[i], serial[i]
        if centre <= 0 or whole <= 0 or abs(math.log(whole / centre)) > band:
            continue
        if after > 0 and math.log(after / centre) >= -band:
            continue
        beside[i] = found = True
    if not found:
        return 1, None
    # (time, +1 begin / -1 end) of the executions running: at one time, ends first.
    # An execution judged by another app's time counts for the fit, not for the count
    # (qos_binder_bound's four indexer threads, begun at once behind the camera's first
    # execution, read as a second unit by the camera's time).
    counted = bytearray(idle[i] or (beside[i] and not guessed[i]) for i in range(count))
    reached = _levels(
        array("q", itertools.compress(begins, counted)),
        array("q", (b + d for b, d, c in zip(begins, durations, counted, strict=True) if c)),
    )
    units, weighed = _weighed_units(reached, count, beside)
    if weighed is None and any(b and g for b, g in zip(beside, guessed, strict=True)):
        return 1, beside  # (``_device_units`` fits the units)
    return units, weighed


def _levels(begins: array[int], ends: array[int]) -> collections.Counter[int]:
    """How many executions began to make each number running at once, of executions given
    by their ``begins`` (ascending) and ``ends``: at one time, the ends count first.  (The
    ends sorted alone, a chunk at a time, not a (time, step) tuple each: bench/README.md.)"""
    reached: collections.Counter[int] = collections.Counter()
    by_end = ascending(ends)
    end = next(by_end, None)
    busy = 0
    for begin in begins:
        while end is not None and end <= begin:
            end = next(by_end, None)
            busy -= 1
        busy += 1
        reached[busy] += 1
    return reached


def _weighed_units(
    reached: collections.Counter[int], count: int, beside: bytearray
) -> tuple[int, bytearray | None]:
    """The units the evidence carries weight for: the most executions at once that at least
    ``units_evidence(count)`` executions began to make (``reached``, ``_levels``: one
    overlap among thousands of executions is noise: a late end, a clock step, not a second
    unit), and ``beside``; 1 and None when no second unit has that weight."""
    needed = units_evidence(count)
    units = max((level for level, n in reached.items() if n >= needed), default=1)
    if units <= 1:
        return 1, None
    return units, beside


def units_evidence(count: int) -> int:
    """How many of a device's ``count`` executions must begin beside running ones, at one
    level, for that level to count as compute units: one in ``_NOISE`` (at least one)."""
    return -(-count // _NOISE)


def _spread(service: Sequence[int], clients: Sequence[int]) -> float:
    """How far device times stray from their app's own: the median, over executions, of
    |ln time - the median ln time of its client's|."""
    # 8-byte floats, not a float object each, sorted a chunk at a time for the medians.
    logs: dict[int, array[float]] = {}
    for ns, client in zip(service, clients, strict=True):
        if ns > 0:
            values = logs.get(client)
            if values is None:
                values = logs[client] = array("d")
            values.append(math.log(ns))
    away = array("d")
    for values in logs.values():
        centre = median(values)
        away.extend(abs(x - centre) for x in values)
    return median(away) if away else 0.0


FIT_GAIN: Final = 0.9
"""A unit more is taken (``_fitted_units``) only when it brings the spread of the device
times below this fraction of what one unit less gives."""


def _fitted_units(
    begins: Sequence[int], durations: Sequence[int], clients: Sequence[int], serial: array[int]
) -> tuple[int, tuple[float, ...]]:
    """The compute units under which a device's executions (begin order) take each app's
    own time: with too few, an execution is timed from an end that freed no unit for it
    (too short); with too many, from its begin, its wait included (too long).  Counting up
    from 1, the first whose device times (``_service_on_units``) spread around each app's
    median less than the next count's (``FIT_GAIN``); at most the most executions open at
    once.  Under load, where an execution rarely begins on an idle unit, this sees the
    units ``_units`` cannot.  Returns (units, the spread with 1, 2, ... units, as far as
    tried)."""
    ends = array("q", (b + d for b, d in zip(begins, durations, strict=True)))
    most = max(_levels(array("q", begins), ends), default=0)
    units, spread = 1, _spread(serial, clients)
    spreads = [spread]
    while units < most:
        more = _spread(_service_on_units(begins, durations, units + 1, serial), clients)
        spreads.append(more)
        if more >= FIT_GAIN * spread:
            break
        units, spread = units + 1, more
    return units, tuple(spreads)


def _service_on_units(
    begins: Sequence[int], durations: Sequence[int], units: int, serial: Sequence[int]
) -> array[int]:
    """How long a device of ``units`` compute units worked on each execution (begin order):
    a unit free at its begin (fewer than ``units`` running, none waiting) runs it from its
    begin, its whole driver time; else it waits, first come first served (the order of
    ``fifo`` and of ``per_app_priority`` across apps), for the next unit an execution ends
    on, and is timed from that end.  An execution that ended while it waited (refused or
    aborted) keeps its ``serial`` time (``_service``)."""
    service = array("q", serial)
    ends = array("q", (b + d for b, d in zip(begins, durations, strict=True)))
    running: list[int] = []  # ends of the executions on a unit (a heap)
    waiting: collections.deque[int] = collections.deque()

    def next_waiting(now: int) -> None:
        """A unit came free at ``now``: the oldest execution still waiting takes it."""
        while waiting:
            j = waiting.popleft()
            if ends[j] > now:
                service[j] = ends[j] - now
                heapq.heappush(running, ends[j])
                return

    for i, begin in enumerate(begins):
        while running and running[0] <= begin:  # (at one time, ends first)
            next_waiting(heapq.heappop(running))
        while waiting and ends[waiting[0]] <= begin:
            waiting.popleft()  # (it ended waiting)
        if len(running) < units and not waiting:
            service[i] = durations[i]
            heapq.heappush(running, ends[i])
        else:
            waiting.append(i)
    while running and waiting:
        next_waiting(heapq.heappop(running))
    return service


def _hidl_units(
    begins: array[int], executions: array[int], clients: array[int], serial: array[int]
) -> tuple[int, array[int], int, array[int], tuple[float, ...]]:
    """``_device_units`` of a driver without burst executions: its rows are its HIDL
    executions (begin order), read from their columns (a tuple a row would take ~200 bytes
    an execution: bench/README.md)."""
    units, beside = _units(begins, executions, clients, serial)
    fit: tuple[float, ...] = ()
    if beside is not None:
        fitted, spreads = _fitted_units(begins, executions, clients, serial)
        if fitted not in (1, units):  # (1: the times cannot tell, alike or no unit helps)
            units, fit = fitted, spreads
    if beside is None or (units == 1 and not fit):
        return 1, serial, 0, array("q"), fit
    if units == 1:
        device_ns = array("q", serial)
        for i, was in enumerate(beside):
            if was:
                device_ns[i] = executions[i]
        return units, device_ns, sum(beside), array("q"), fit
    on_units = _service_on_units(begins, executions, units, serial)
    return units, on_units, sum(beside), array("q"), fit


def _device_units(
    tally: _DriverTally, begins: array[int], executions: array[int], clients: array[int]
) -> tuple[int, array[int], int, array[int], tuple[float, ...]]:
    """(compute units, device times, executions that ran beside another, burst device times,
    the spreads that fitted the units or ()) of a driver: its HIDL executions (begin order) with its burst executions
    (``_BURST_EXECUTOR`` sections, each burst thread a client of its own).  On one unit the
    device time of an execution is its time after the one that ended before it (``_service``;
    of a HIDL execution, among the HIDL ones; of a burst execution, among all); on several,
    its time on the unit it took (``_service_on_units``)."""
    serial = _service(begins, executions)
    bursts = tally.burst_closed
    if not bursts:
        return _hidl_units(begins, executions, clients, serial)
    # (begin, duration, client, HIDL index or -1 - burst index), in begin order (the HIDL
    # executions are; the sort is stable)
    timed = sorted(
        [
            *(
                (b, d, c, i)
                for i, (b, d, c) in enumerate(zip(begins, executions, clients, strict=True))
            ),
            *(
                (bursts[i], bursts[i + 2], -bursts[i + 1], -1 - i // 3)
                for i in range(0, len(bursts), 3)
            ),
        ],
        key=lambda row: row[0],
    )
    all_durations = array("q", (row[1] for row in timed))
    all_serial = _service(array("q", (row[0] for row in timed)), all_durations)
    all_begins = [row[0] for row in timed]
    all_clients = [row[2] for row in timed]
    units, beside = _units(all_begins, all_durations, all_clients, all_serial)
    burst_ns = array("q", bytes(8 * (len(bursts) // 3)))
    fit: tuple[float, ...] = ()
    if beside is not None:
        fitted, spreads = _fitted_units(all_begins, all_durations, all_clients, all_serial)
        if fitted not in (1, units):  # (1: the times cannot tell, alike or no unit helps)
            units, fit = fitted, spreads
    if beside is not None and units == 1 and not fit:
        beside = None  # (only executions judged by another app's time; the fit found 1)
    if beside is None or units == 1:
        for k, row in enumerate(timed):
            if row[3] < 0:
                burst_ns[-1 - row[3]] = (
                    row[1] if beside is not None and beside[k] else all_serial[k]
                )
        if beside is None:
            return 1, serial, 0, burst_ns, fit
        device_ns = array("q", serial)
        hidl = (was for row, was in zip(timed, beside, strict=True) if row[3] >= 0)
        for i, was in enumerate(hidl):  # (the HIDL rows are in their own order)
            if was:
                device_ns[i] = executions[i]
        return units, device_ns, sum(beside), burst_ns, fit
    on_units = _service_on_units(all_begins, all_durations, units, all_serial)
    device_ns = array("q", serial)
    for k, row in enumerate(timed):
        if row[3] < 0:
            burst_ns[-1 - row[3]] = on_units[k]
        else:
            device_ns[row[3]] = on_units[k]
    return units, device_ns, sum(beside), burst_ns, fit
