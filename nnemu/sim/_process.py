"""Emulated processes: pid/tid allocation and thread naming, deterministic by construction."""

from __future__ import annotations

import attrs

from nnemu.sim._threads import SimThread
from nnemu.tracer._names import thread_name


@attrs.define
class SimProcess:
    """An emulated Linux process (an app, or a driver service)."""

    pid: int
    """Process id (tgid)."""
    name: str
    """Process name (cmdline)."""
    uid: int
    """Android uid."""
    table: ProcessTable = attrs.field(repr=False)
    """The table that allocates thread ids."""
    threads: list[SimThread] = attrs.field(factory=list)
    """Threads alive, main thread first (an ended thread is dropped, so a long run of
    asynchronous executions, one thread each, holds none of them)."""

    @property
    def main_thread(self) -> SimThread:
        """The thread whose tid equals the pid."""
        return self.threads[0]

    def new_thread(self, name: str) -> SimThread:
        """Create a thread called ``name`` with the next free tid."""
        thread = SimThread(self.pid, self.table.next_tid(), name)
        self.threads.append(thread)
        return thread

    def end_thread(self, thread: SimThread) -> None:
        """Forget ``thread``, which has ended (its tid is not reused)."""
        self.threads.remove(thread)


@attrs.define
class ProcessTable:
    """Allocates pids and tids in creation order, as a freshly booted device would."""

    _next_id: int = 700
    processes: list[SimProcess] = attrs.field(factory=list)

    def next_tid(self) -> int:
        """The next unused id."""
        value = self._next_id
        self._next_id += 1
        return value

    def spawn(self, name: str, uid: int, *, pid: int | None = None) -> SimProcess:
        """Create a process with a main thread named after it."""
        if pid is None:
            pid = self.next_tid()
        else:
            self._next_id = max(self._next_id, pid + 1)
        process = SimProcess(pid=pid, name=name, uid=uid, table=self)
        process.threads.append(SimThread(pid, pid, thread_name(name.rsplit("/", 1)[-1])))
        self.processes.append(process)
        return process
