"""Per-app statistics with memory that does not grow with the number of executions."""

from __future__ import annotations

import collections
from typing import Final

import attrs

from nnemu.hal import ResultCode
from nnemu.ipc import ExecutionSplit
from nnemu.report import SPLIT_PARTS

_EXACT_BELOW_US = 1024
_MANTISSA_BITS = 10


def _bucket(value_us: int) -> int:
    """Log-linear bucket: exact below 1024 µs, then 10 significant bits (a bucket spans
    less than 1/512, 0.2%, of its values)."""
    if value_us < _EXACT_BELOW_US:
        return value_us
    shift = value_us.bit_length() - _MANTISSA_BITS
    return ((shift + 1) << _MANTISSA_BITS) | (value_us >> shift)


_NO_ERROR: Final = ResultCode.NO_ERROR
"""``ResultCode.NO_ERROR`` as a module constant: ``record`` compares with it once an execution,
and on Python 3.11 an enum member's lookup on its class costs ~60 ns (bench/README.md)."""


class LatencyHistogram:
    """Latencies in µs, bucketed so that memory does not grow with their number.

    A quantile is the smallest latency recorded in the bucket that holds the exact
    (nearest-rank) quantile: a latency that happened, exact below 1024 µs and whenever that
    bucket holds one value (a run without jitter), otherwise less than 0.2% below exact.
    """

    def __init__(self) -> None:
        self._counts: collections.Counter[int] = collections.Counter()
        self._lowest: dict[int, int] = {}
        self.count = 0
        self.total_ns = 0
        """The exact sum of the latencies given to ``add_ns`` (the mean's numerator)."""
        self.max_us = 0

    def add(self, value_us: int) -> None:
        """Record one latency."""
        counts = self._counts
        if value_us < _EXACT_BELOW_US:
            bucket = value_us
        else:
            bucket = _bucket(value_us)
            lowest = self._lowest.get(bucket)
            if lowest is None or value_us < lowest:
                self._lowest[bucket] = value_us
        counts[bucket] = counts.get(bucket, 0) + 1
        self.count += 1
        if value_us > self.max_us:
            self.max_us = value_us

    def add_ns(self, value_ns: int) -> None:
        """Record one latency given in ns: rounded to the nearest µs in the buckets (rounding
        keeps the order, so each quantile is the exact one rounded), exact in ``total_ns``."""
        self.add((value_ns + 500) // 1000)
        self.total_ns += value_ns

    def mean_ms(self) -> float:
        """The mean of the latencies given to ``add_ns`` in ms, rounded to µs; 0 when empty."""
        return round(self.total_ns / self.count / 1e6, 3) if self.count else 0.0

    def quantile_us(self, q: float) -> int:
        """The smallest latency recorded in the bucket of the ``q`` quantile (nearest rank: the
        smallest latency with at least ``q`` of the samples at or below it); 0 when empty."""
        if self.count == 0:
            return 0
        rank = max(1, -(-int(q * self.count * 1_000_000) // 1_000_000))
        seen = 0
        for bucket in sorted(self._counts):
            seen += self._counts[bucket]
            if seen >= rank:
                return self._lowest.get(bucket, bucket)
        return self.max_us


@attrs.frozen
class ExecutionRecord:
    """One execution as the app saw it (kept only when a run asks for records).

    Times are virtual ns; the device fields describe the final attempt (None when it
    never reached a device).  The ``*_ns`` parts of the split add up to
    ``finished_ns - arrival_ns`` exactly (docs/report-schema.md defines them).
    """

    arrival_ns: int
    """When the frame arrived (was submitted)."""
    finished_ns: int
    """When the app got the final result."""
    code: ResultCode
    """Final result code (after retries)."""
    attempts: int
    """Attempts made (1 + retries)."""
    timeout_ns: int | None
    """The execution timeout the app set, if any."""
    seq: int = 0
    """The execution's number in its app, in the order the app started them (from 1)."""
    started_ns: int = 0
    """When an app thread took the frame and began its first attempt."""
    device: str = ""
    """The device(s) the final attempt ran on, joined by ``+`` ("" if none)."""
    device_arrival_ns: int | None = None
    """When the final attempt reached its first device (queue or CPU executor)."""
    device_start_ns: int | None = None
    """When the final attempt first started running on a device."""
    device_end_ns: int | None = None
    """When the final attempt last left a device."""
    mode: str = ""
    """The app's execution mode (sync, async, fenced, burst)."""
    priority: str = ""
    """The app's execution priority (low, medium, high)."""
    deadline_ns: int | None = None
    """The final attempt's absolute deadline, if it had one."""
    preemptions: int = 0
    """How many times the final attempt yielded a compute unit."""
    app_wait_ns: int = 0
    """From arrival until one of the app's threads took the frame."""
    binder_wait_ns: int = 0
    """Waiting for a free binder thread of the called process (the driver's, the client's)."""
    device_queue_ns: int = 0
    """Waiting in the driver to start: for a worker thread, then for a compute unit."""
    preempted_ns: int = 0
    """Off the unit after each preemption, and the work a ``restart`` threw away."""
    ipc_ns: int = 0
    """Transport latencies on the execution's path."""
    driver_launch_ns: int = 0
    """The driver's launch overhead on a compute unit."""
    compute_ns: int = 0
    """Operations on a compute unit or the runtime's CPU executor."""
    retry_ns: int = 0
    """Earlier attempts and the back-off before the final one."""
    runtime_ns: int = 0
    """The rest: the app's, runtime's and driver's own code on the path."""


@attrs.define
class AppStats:
    """What happened to one app's executions."""

    submitted: int = 0
    completed: int = 0
    failed: int = 0
    dropped: int = 0
    retries: int = 0
    deadline_misses: int = 0
    """Executions that had a deadline and did not meet it: refused or aborted by the
    driver (final result MISSED_DEADLINE_*), dropped late frames, and completions whose
    result came after the deadline."""
    completed_late: int = 0
    """Completed executions whose result reached the app after their deadline: a driver
    that does not enforce it (``deadline_policy: ignore``, pre-1.3), or under ``abort`` a
    result that finished on the device in time but crossed the deadline on its way back."""
    errors: collections.Counter[str] = attrs.field(factory=collections.Counter)
    latency: LatencyHistogram = attrs.field(factory=LatencyHistogram)
    compile_result: ResultCode = ResultCode.NO_ERROR
    compile_ns: list[int] = attrs.field(factory=list)
    """Duration of each compilation (create model .. finish), in order."""
    compilations_from_cache: int = 0
    """Compilations whose driver steps were all or partly prepared from the cache."""
    energy: float = 0.0
    """Device time (ns) of every attempt that ended, times the device's powerUsage ratio
    for the model (the reference CPU's is 1)."""
    split_ns: list[int] = attrs.field(factory=lambda: [0] * len(SPLIT_PARTS))
    """Sums over completed executions of each part of the latency split (``SPLIT_PARTS``
    order), in ns."""

    def record_compilation(self, duration_ns: int, *, from_cache: bool) -> None:
        """Record one compilation attempt."""
        self.compile_ns.append(duration_ns)
        if from_cache:
            self.compilations_from_cache += 1

    def record(
        self,
        code: ResultCode,
        latency_ns: int,
        late: bool = False,
        split: ExecutionSplit | None = None,
        waited_ns: int = 0,
        retry_ns: int = 0,
    ) -> None:
        """Record the final result of one execution (after retries).

        Args:
            late: a successful result that came after the execution's deadline.
            split: the final attempt's split; with ``waited_ns`` (from arrival until an
                app thread took the frame) and ``retry_ns`` (earlier attempts and their
                back-off), a completed execution's parts are added to ``split_ns``.
        """
        if code is _NO_ERROR:
            self.completed += 1
            self.latency.add_ns(latency_ns)
            if split is not None:
                sums = self.split_ns
                binder_ns, queue_ns = split.binder_ns, split.device_queue_ns
                preempted_ns, ipc_ns = split.preempted_ns, split.ipc_ns
                launch_ns, compute_ns = split.launch_ns, split.compute_ns
                sums[0] += waited_ns
                sums[1] += binder_ns
                sums[2] += queue_ns
                sums[3] += preempted_ns
                sums[4] += ipc_ns
                sums[5] += launch_ns
                sums[6] += compute_ns
                sums[7] += retry_ns
                sums[8] += latency_ns - (
                    waited_ns
                    + binder_ns
                    + queue_ns
                    + preempted_ns
                    + ipc_ns
                    + launch_ns
                    + compute_ns
                    + retry_ns
                )
            if late:
                self.completed_late += 1
                self.deadline_misses += 1
        else:
            self.failed += 1
            self.errors[code.name] += 1
            if code.is_deadline_miss:
                self.deadline_misses += 1
