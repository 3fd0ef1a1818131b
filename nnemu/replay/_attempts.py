"""An execution's attempts, arrival and outcome, from nnemu's marks on the app's threads.

nnemu's app layer writes three sections with no NNTRACE tag (Android's parser ignores
them; docs/trace-contract.md, "nnemu's execution marks"):

* ``nnemu::retry CODE``, open while the thread backs off before retrying an execution
  the driver refused with ``CODE``.  Each attempt is an ``[NN_LA_PE]`` section of its own;
  the one that ended last on the thread before the mark began and the one that began
  first on it after the mark ended are attempts of one execution;
* ``nnemu::waited N ns``, empty, just before an execution's first ``[NN_LA_PE]`` begin: its
  frame arrived N ns before a thread took it;
* ``nnemu::failed CODE``, empty, at the end of a failed execution's last attempt.

So an execution arrived at its first attempt's begin less its wait and lasted to its last
attempt's end, as the run's report counts it (arrival to result, waits, retries and
backoffs included), and only a completed one has a recorded latency, as in the report.

Two more say what no NNTRACE mark carries: ``nnemu::qos priority=NAME ...`` (the app's
priority and timeouts, ``parse_qos``) at the begin of its ``[NN_LA_PO]`` section, and
``nnemu::died`` on a driver process's main thread when the process died.
"""

from __future__ import annotations

import bisect
from array import array
from collections import Counter
from collections.abc import Sequence

import attrs

from nnemu.app import FAILED_MARK, QOS_MARK, RETRY_MARK, WAITED_MARK
from nnemu.driver import DIED_MARK
from nnemu.hal import Priority

__all__ = [
    "DIED_MARK",
    "FAILED_MARK",
    "QOS_MARK",
    "RETRY_MARK",
    "WAITED_MARK",
    "AppQos",
    "AttemptMarks",
    "Joined",
    "join_attempts",
    "parse_qos",
]


@attrs.frozen(kw_only=True)
class AppQos:
    """An app's QoS settings, from its ``nnemu::qos`` mark."""

    priority: Priority
    """What its compilation's ``setPriority`` was given."""
    execution_timeout_ns: int | None = None
    """Each execution's ``setTimeout``, ns (None: none)."""
    compile_timeout_ns: int | None = None
    """Its compilation's ``setTimeout``, ns (None: none)."""
    drop_late_frames: bool = False
    """Whether it drops a frame older than its execution timeout."""


def _ns(value: str) -> int | None:
    return int(value) if value.isdigit() and len(value) <= 18 and int(value) > 0 else None


def parse_qos(text: str) -> AppQos | None:
    """The settings a ``nnemu::qos`` mark names after its prefix (``priority=HIGH
    execution_timeout_ns=15000000``), or None when it names no priority (a word it does
    not know is skipped: a later nnemu may add some)."""
    fields = dict(word.partition("=")[::2] for word in text.split())
    priority = Priority.__members__.get(fields.get("priority", ""))
    if priority is None:
        return None
    return AppQos(
        priority=priority,
        execution_timeout_ns=_ns(fields.get("execution_timeout_ns", "")),
        compile_timeout_ns=_ns(fields.get("compile_timeout_ns", "")),
        drop_late_frames="drop_late_frames" in fields,
    )


def waited_ns(name: str) -> int | None:
    """The wait a ``nnemu::waited N ns`` mark names, or None when it names no count."""
    text = name[len(WAITED_MARK) :].removesuffix(" ns")
    if not text.isdigit() or len(text) > 18:
        return None
    return int(text)


class AttemptMarks:
    """One app's marks, fed in time order per thread (``_Collector``)."""

    __slots__ = ("_retrying", "_waiting", "failed", "retried", "retry_marks", "waits")

    def __init__(self) -> None:
        self.retry_marks = array("q")
        """(begin, tid, end) of each closed retry mark."""
        self.retried: list[int] = []
        """Begins of the ``[NN_LA_PE]`` sections that followed a retry mark on their thread."""
        self.waits: dict[tuple[int, int], int] = {}
        """(tid, begin) of an execution's first ``[NN_LA_PE]`` -> its frame's wait, ns."""
        self.failed: set[tuple[int, int]] = set()
        """(tid, time) of each failure mark: the end of a failed execution's last attempt."""
        self._retrying: set[int] = set()
        self._waiting: dict[int, int] = {}

    def retry(self, begin: int, tid: int, end: int) -> None:
        """A retry mark closed."""
        self.retry_marks.extend((begin, tid, end))
        self._retrying.add(tid)

    def wait(self, tid: int, ns: int) -> None:
        """A wait mark: the thread's next ``[NN_LA_PE]`` arrived ``ns`` before it began."""
        self._waiting[tid] = ns

    def fail(self, tid: int, ts: int) -> None:
        """A failure mark."""
        self.failed.add((tid, ts))

    def attempt(self, ts: int, tid: int) -> None:
        """An ``[NN_LA_PE]`` section began."""
        if tid in self._retrying:
            self._retrying.discard(tid)
            self.retried.append(ts)
        else:
            wait = self._waiting.pop(tid, None)
            if wait is not None:
                self.waits[tid, ts] = wait


@attrs.frozen
class Joined:
    """An app's executions once their attempts are joined."""

    arrivals_ns: array[int]
    """When each execution arrived: its first attempt's begin less its wait."""
    closed: array[int]
    """(arrival, tid, arrival -> last attempt's end) of each execution that completed in
    the trace."""
    inside: array[int] | None
    """Compile time inside each row of ``closed`` (its attempts' summed), or None."""
    failed: int
    """Executions whose last attempt ended with a failure mark (not in ``closed``)."""
    refused: array[int]
    """(begin, end) of each attempt that did not complete: one a retry mark followed, or a
    failed execution's last."""
    retried: int
    """Attempts after an execution's first (those a retry mark came before)."""
    waited: int
    """Executions whose frame waited for a thread (a wait mark)."""


def join_attempts(
    begins: Sequence[int], closed: array[int], inside: array[int] | None, marks: AttemptMarks
) -> Joined:
    """Join the attempts of each execution, move its arrival back by its wait and leave out
    the failed ones.

    ``begins``: every ``[NN_LA_PE]`` begin; ``closed``: (begin, tid, duration) of the closed
    ones, with ``inside`` aligned to its rows.  An execution whose retry mark has no closed
    attempt after it (the trace ended in its backoff or its next attempt) did not finish:
    it keeps no row in ``closed``.
    """
    rows = len(closed) // 3
    retry_marks = marks.retry_marks
    by_tid: dict[int, list[tuple[int, int]]] = {}
    for row in range(rows):
        by_tid.setdefault(closed[3 * row + 1], []).append((closed[3 * row], row))
    for entries in by_tid.values():
        entries.sort()
    follows: dict[int, int] = {}  # row -> the row of the attempt after it
    later: set[int] = set()  # rows that are not a first attempt
    unfinished: set[int] = set()  # rows whose execution's next attempt never closed
    for index in range(0, len(retry_marks), 3):
        mark_begin, tid, mark_end = retry_marks[index : index + 3]
        entries = by_tid.get(tid, [])
        before = None
        at = bisect.bisect_right(entries, (mark_begin, rows))
        for _, row in reversed(entries[:at]):
            if closed[3 * row] + closed[3 * row + 2] <= mark_begin:
                before = row
                break
        if before is None:
            continue
        after_at = bisect.bisect_left(entries, (mark_end, -1))
        if after_at < len(entries):
            follows[before] = entries[after_at][1]
            later.add(entries[after_at][1])
        else:
            unfinished.add(before)
    out = array("q")
    summed: array[int] | None = None if inside is None else array("q")
    failed = 0
    refused = array("q")
    for row in range(rows):
        if row in later:
            continue
        last, compile_ns = row, 0 if inside is None else inside[row]
        while last in follows:
            refused.extend((closed[3 * last], closed[3 * last] + closed[3 * last + 2]))
            last = follows[last]
            if inside is not None:
                compile_ns += inside[last]
        if last in unfinished:
            continue
        begin, tid = closed[3 * row], closed[3 * row + 1]
        end = closed[3 * last] + closed[3 * last + 2]
        if (tid, end) in marks.failed:
            failed += 1
            refused.extend((closed[3 * last], end))
            continue
        arrival = begin - marks.waits.get((tid, begin), 0)
        out.extend((arrival, tid, end - arrival))
        if summed is not None:
            summed.append(compile_ns)
    dropped = Counter(marks.retried)
    arrivals: list[int] = []
    waits: dict[int, list[int]] = {}  # begin -> the waits of the executions begun then
    for (_, begin), wait in sorted(marks.waits.items()):
        waits.setdefault(begin, []).append(wait)
    for begin in sorted(begins):
        if dropped[begin]:
            dropped[begin] -= 1
        else:
            waited = waits.get(begin)
            arrivals.append(begin - waited.pop() if waited else begin)
    return Joined(
        array("q", sorted(arrivals)),
        out,
        summed,
        failed,
        refused,
        len(marks.retried),
        len(marks.waits),
    )


def marks_line(retried: int, waited: int, failed: int) -> str | None:
    """What an app's execution marks changed, for the plan (None: it wrote none)."""
    parts = []
    if retried:
        parts.append(f"{retried} later attempts joined to their execution (nnemu::retry)")
    if waited:
        parts.append(f"{waited} arrivals moved back by their wait for a thread (nnemu::waited)")
    if failed:
        parts.append(f"{failed} failed, not in the recorded row (nnemu::failed)")
    return "nnemu's marks: " + "; ".join(parts) if parts else None


def completed_only(
    clients: Sequence[int],
    begins: Sequence[int],
    durations: Sequence[int],
    refused: dict[int, array[int]],
) -> array[int]:
    """``clients`` (a driver's client pid per execution, begun at ``begins``, lasting
    ``durations``) with 0 for each execution that lay inside an attempt of its client that
    did not complete (``refused``: client pid -> (begin, end) of those attempts): a refused
    execution's short driver time is not the device's time for the app's model.  (Inside,
    not only begun inside: an execution that completed can begin while another thread's
    attempt is being refused, but it ends after it.)"""
    spans = {pid: sorted(zip(flat[::2], flat[1::2], strict=True)) for pid, flat in refused.items()}
    longest = {pid: max((end - start for start, end in w), default=0) for pid, w in spans.items()}
    out = array("q", clients)
    for index, (pid, begin, duration) in enumerate(zip(clients, begins, durations, strict=True)):
        windows = spans.get(pid)
        if not windows:
            continue
        # the windows that began by ``begin`` and may still be open then (threads overlap)
        at = bisect.bisect_right(windows, (begin, 1 << 62)) - 1
        while at >= 0 and windows[at][0] >= begin - longest[pid]:
            if begin + duration <= windows[at][1]:
                out[index] = 0
                break
            at -= 1
    return out
