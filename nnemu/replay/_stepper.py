"""Manual control of a run: a gdb-like prompt between kernel events and HAL calls.

The whole emulation runs in one trio task at a time and virtual time only moves
when the kernel takes its next timer, so the stepper simply blocks on its input
inside the kernel's ``observer`` hook (or the binder's ``on_call`` hook): while
the prompt waits, nothing in the emulated world moves.

Commands (Enter repeats the last one; end of input means ``c``):

=========  ==========================================================
``n``      run to the next HAL call (the next HIDL transaction)
``ni``     run to the next kernel event (a timer or timed callback)
``c``      continue to the end
``c MS``   continue for MS virtual milliseconds
``s T``    run until virtual time T seconds
``l``      where am I: virtual time and the open calls of each thread
``q``      end the run now (the trace is written)
``h``      help
=========  ==========================================================

Ctrl-C while the run goes on switches to manual control at the next kernel event;
Ctrl-C at the prompt (or a second one before the prompt shows) ends the run
cleanly: the kernel stops at the current virtual time and the trace is closed.
With no input to take control from (standard input at its end: ``< /dev/null``, a
script whose commands ran out), the first Ctrl-C ends the run so.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Final, TextIO

from nnemu._text import ending
from nnemu.errors import EmulatorBug
from nnemu.sim import Kernel, SimThread, current_thread

if TYPE_CHECKING:
    from nnemu._emulator import Emulator

PROMPT: Final = "(nnemu) "

HELP: Final = """\
  n        run to the next HAL call (HIDL transaction)
  ni       run to the next kernel event
  c        continue to the end
  c MS     continue for MS virtual milliseconds
  s T      run until virtual time T seconds
  l        virtual time and the calls each emulated thread is in
  q        end the run now (the trace is written)
  h        this help
  Enter repeats the last command; end of input continues; Ctrl-C at the prompt ends the run.
"""


class _Abort(Exception):
    """Raised by the SIGINT (or SIGTERM) handler while the prompt waits: leave the prompt,
    end the run."""

    def __init__(self, signal_name: str = "SIGINT") -> None:
        super().__init__(signal_name)
        self.signal_name = signal_name


class SectionStacks:
    """A trace sink keeping each emulated thread's open sections (for ``l``)."""

    def __init__(self) -> None:
        self.stacks: dict[SimThread, list[str]] = {}
        self.process_names: dict[int, str] = {}

    def process(self, pid: int, name: str) -> None:
        """Remember the process name."""
        self.process_names[pid] = name

    def begin(self, ts_ns: int, thread: SimThread, name: str) -> None:
        """Push a section."""
        self.stacks.setdefault(thread, []).append(name)

    def end(self, ts_ns: int, thread: SimThread) -> None:
        """Pop the innermost section."""
        stack = self.stacks.get(thread)
        if stack:
            stack.pop()
            if not stack:
                # A thread outside every section is forgotten: one async thread per
                # execution would otherwise keep an entry each for the whole run.
                del self.stacks[thread]

    def close(self) -> None:
        """Nothing to release."""

    def open_calls(self) -> list[tuple[SimThread, tuple[str, ...]]]:
        """Threads that are inside at least one section, by (pid, tid)."""
        return [
            (thread, tuple(stack))
            for thread, stack in sorted(self.stacks.items(), key=lambda i: (i[0].pid, i[0].tid))
            if stack
        ]


def _seconds(ns: int) -> str:
    return f"{ns / 1e9:.6f} s"


class Stepper:
    """Stops a run where the user asked and reads commands from ``stdin``.

    Args:
        stdin: where commands come from (a terminal, or any text stream).
        out: where the prompt and the stop lines go.
        manual: prompt before the run starts (``-m``, ``nnemu run --step``).
        stop_at_s: run to this virtual time (seconds), then prompt (``-s``).
    """

    def __init__(
        self,
        stdin: TextIO,
        out: TextIO,
        *,
        manual: bool = False,
        stop_at_s: float | None = None,
    ) -> None:
        self.stdin = stdin
        self.out = out
        self.sink = SectionStacks()
        """The current run's open-section tracker (``new_sink`` makes one per run)."""
        self.manual = manual
        self._kernel: Kernel | None = None
        self._last = ""
        self._until_ns = round(stop_at_s * 1e9) if stop_at_s is not None else None
        # Time of the kernel event the prompt stands before (the run resumes with it);
        # None at a HAL-call prompt, which stands at the current time.
        self._pending_ns: int | None = None
        self._next_event = False
        self._next_hal = False
        self._interrupt_pending = False
        self._prompting = False
        self._eof = False
        self.aborted = False
        """The run was ended early (Ctrl-C at the prompt, a second Ctrl-C, or ``q``)."""
        self.quit = False
        """It was ended by ``q`` (not by a Ctrl-C)."""
        self._signal_name = "SIGINT"  # what ended an aborted run that was not ``q``
        self.stops = 0
        """How many times the prompt was shown."""

    @property
    def interruption(self) -> str | None:
        """How an aborted run ended, as its report's ``"interrupted"`` says it: ``"q"`` (at the
        prompt) or ``"SIGINT"`` (a Ctrl-C); None when the run was not ended early."""
        if not self.aborted:
            return None
        return "q" if self.quit else self._signal_name

    def ending(self) -> str:
        """What ended an aborted run, for the command's last line: ``interrupted by SIGINT``
        (a Ctrl-C), or ``ended at the prompt (q)``."""
        return ending("q" if self.quit else self._signal_name)

    # ------------------------------------------------------------ wiring
    def new_sink(self) -> SectionStacks:
        """A fresh trace sink for the next run; pass it in the run's sinks so ``l`` works."""
        self.sink = SectionStacks()
        return self.sink

    def attach(self, emulator: Emulator) -> None:
        """Hook into ``emulator`` (its kernel and binder); prompt now if starting manual."""
        self._kernel = emulator.kernel
        emulator.kernel.observer = self._on_event
        emulator.binder.on_call = self._on_hal_call
        if self.aborted:
            emulator.kernel.stop()
            return
        if self.manual:
            self.manual = False
            self._prompt(f"[{_seconds(emulator.kernel.clock_ns)}] start of the run (h for help)")

    def on_sigint(self, signum: int, frame: FrameType | None) -> None:
        """The SIGINT handler: first Ctrl-C -> manual control; at the prompt or again -> end."""
        if self._prompting:
            raise _Abort
        if self._interrupt_pending or self.aborted or self._eof:
            # (At the end of input no prompt can take control: end the run, as a second
            # Ctrl-C does, rather than prompt, read nothing and go on.)
            self.aborted = True
            return
        self._interrupt_pending = True

    @contextmanager
    def handling_sigint(self) -> Iterator[None]:
        """Install ``on_sigint`` for the duration of the block (main thread only).

        trio leaves a custom SIGINT handler alone, so Ctrl-C reaches the stepper.
        """
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = signal.signal(signal.SIGINT, self.on_sigint)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)

    # ------------------------------------------------------------- hooks
    def _now(self) -> int:
        assert self._kernel is not None
        return self._kernel.task_now_ns()

    def _on_event(self, t_ns: int, what: str) -> None:
        kernel = self._kernel
        assert kernel is not None
        if not self.aborted:
            upcoming = f"next kernel event at {_seconds(t_ns)}: {what}"
            where = f"[{_seconds(kernel.task_now_ns())}] "
            self._pending_ns = t_ns
            if self._interrupt_pending:
                self._prompt(where + "interrupted by SIGINT; " + upcoming)
            elif self._next_event:
                self._prompt(where + upcoming)
            elif self._until_ns is not None and t_ns >= self._until_ns:
                self._prompt(where + f"stop at {_seconds(self._until_ns)}: the " + upcoming)
            self._pending_ns = None
        if self.aborted:
            kernel.stop()

    def _on_hal_call(self, name: str) -> None:
        kernel = self._kernel
        assert kernel is not None
        if not self.aborted and (self._next_hal or self._interrupt_pending):
            try:
                thread = current_thread()
                who = f" from {thread.name} (pid {thread.pid}, tid {thread.tid})"
            except EmulatorBug:
                who = ""
            why = "interrupted by SIGINT; " if self._interrupt_pending else ""
            self._prompt(f"[{_seconds(kernel.task_now_ns())}] {why}HAL call {name}{who}")
        if self.aborted:
            kernel.stop()

    # ------------------------------------------------------------ prompt
    def _write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    def _prompt(self, where: str) -> None:
        interrupted = self._interrupt_pending
        self._next_event = self._next_hal = self._interrupt_pending = False
        self._until_ns = None
        self.stops += 1
        self._write(where + "\n")
        while True:
            if self._eof:
                return  # end of input: continue
            try:
                # A signal from the moment the prompt shows leaves it (not one between the
                # prompt and the read, which would wait for a line nobody types).
                self._prompting = True
                with self._sigterm_leaves_the_prompt():
                    self._write(PROMPT)
                    line = self.stdin.readline()
            except _Abort as abort:
                self._write(f"\ninterrupted by {abort.signal_name}: ending the run\n")
                self._signal_name = abort.signal_name
                self.aborted = True
                return
            finally:
                self._prompting = False
            if not line:
                self._eof = True
                if interrupted:  # a Ctrl-C with no one to take control: it ends the run
                    self._write("end of input: ending the run\n")
                    self.aborted = True
                    return
                self._write("c (end of input)\n")
                return
            if not self._is_tty():
                self._write(line if line.endswith("\n") else line + "\n")  # echo scripted input
            command = line.strip() or self._last
            if not command:
                continue
            self._last = command
            if self._command(command):
                return

    @contextmanager
    def _sigterm_leaves_the_prompt(self) -> Iterator[None]:
        """While the prompt waits for input, SIGTERM ends the run at once (the run's own handler
        told first, so the run ends as one a SIGTERM stopped): a job runner's SIGTERM is not
        left waiting for a line nobody types. Main thread, and a handler in place, only."""
        previous = (
            signal.getsignal(signal.SIGTERM)
            if threading.current_thread() is threading.main_thread()
            else None
        )
        if not callable(previous):
            yield
            return

        def on_sigterm(signum: int, frame: FrameType | None) -> None:
            previous(signum, frame)
            raise _Abort("SIGTERM")

        signal.signal(signal.SIGTERM, on_sigterm)
        try:
            yield
        finally:
            signal.signal(signal.SIGTERM, previous)

    def _is_tty(self) -> bool:
        isatty = getattr(self.stdin, "isatty", None)
        return bool(isatty()) if isatty is not None else False

    def _command(self, command: str) -> bool:
        """Carry out ``command``; True when the run resumes."""
        words = command.split()
        verb, args = words[0], words[1:]
        if verb == "n" and not args:
            self._next_hal = True
            return True
        if verb == "ni" and not args:
            self._next_event = True
            return True
        if verb == "c" and not args:
            return True
        if verb in ("c", "s") and len(args) == 1:
            try:
                value = float(args[0])
            except ValueError:
                value = -1.0
            if not value >= 0 or value == float("inf"):
                unit = "milliseconds" if verb == "c" else "seconds"
                self._write(f"{verb}: expected a number of {unit} >= 0, got {args[0]!r}\n")
                return False
            # The run resumes with the pending kernel event (if the prompt stands before
            # one): nothing happens before it, so ``c MS`` counts from there and a stop
            # is never announced at a time the clock has already passed.
            start = max(self._now(), self._pending_ns or 0)
            target = start + round(value * 1e6) if verb == "c" else round(value * 1e9)
            if target <= self._now():
                self._write(f"already at {_seconds(self._now())}\n")
                return False
            if target <= start:
                self._write(
                    f"nothing happens before {_seconds(start)} (the next kernel event); "
                    "s to a later time, or ni\n"
                )
                return False
            self._until_ns = target
            return True
        if verb == "l" and not args:
            self._where()
            return False
        if verb == "q" and not args:
            self.aborted = self.quit = True
            self._write("ending the run\n")
            return True
        if verb in ("h", "help", "?"):
            self._write(HELP)
            return False
        self._write(f"unknown command {command!r}; h for help\n")
        return False

    def _where(self) -> None:
        lines = [f"virtual time {_seconds(self._now())}"]
        calls = self.sink.open_calls()
        for thread, stack in calls:
            lines.append(
                f"  {thread.name} (pid {thread.pid}, tid {thread.tid}): {' > '.join(stack)}"
            )
        if not calls:
            lines.append("  no emulated thread is in a call")
        self._write("\n".join(lines) + "\n")
