"""Every exception a user of nnemu can see.

Emulated NNAPI failures are *values* (``ErrorStatus``, ``ResultCode``), never
exceptions: a failing driver is a scenario, not a crash.  The classes here are
for problems with nnemu's *input* (a scenario, a trace) and for broken internal
invariants.  ``ExitCode`` is how each of them (and success) reaches the shell:
every command returns one of its members, and docs/cli.md's table lists them.
"""

from __future__ import annotations

import enum
from typing import Any

import attrs


class ExitCode(enum.IntEnum):
    """The exit status of every ``nnemu`` command (docs/cli.md, "Exit codes")."""

    OK = 0
    """Success: every expectation held (``verify``: parser and ground truth agree)."""
    FAILED = 1
    """A check failed: an expectation of ``run``/``replay``, ``verify``'s agreement, a
    ``compare --fail-if``; or every run of a ``sweep`` crashed."""
    BAD_INPUT = 2
    """Bad input (scenario, trace, option) or an output that cannot be written."""
    INTERRUPTED = 130
    """Interrupted by Ctrl-C / SIGINT (128 + 2), as a shell reports it."""
    BROKEN_PIPE = 141
    """Standard output closed early by its reader (128 + SIGPIPE)."""
    TERMINATED = 143
    """Terminated by SIGTERM (128 + 15)."""


def _rebuild(cls: type[NnemuError], args: tuple[Any, ...], state: dict[str, Any]) -> NnemuError:
    """Unpickle an nnemu exception: its class, ``args`` and attributes, without ``__init__``."""
    exc = cls.__new__(cls, *args)
    exc.args = args
    exc.__dict__.update(state)
    return exc


class NnemuError(Exception):
    """Base class of every nnemu exception.

    Every one pickles (a sweep's worker process sends its error back to the parent): the
    default of ``Exception`` calls ``__init__`` again with ``args``, the message, which
    subclasses with other parameters refuse or misread, so ``__reduce__`` restores the
    class, ``args`` and attributes instead, without calling ``__init__``.
    """

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.args, dict(self.__dict__)))


@attrs.frozen(kw_only=True)
class Problem:
    """One thing wrong with an input document, with its position."""

    source: str
    """File name as the user gave it (or ``<string>``)."""
    line: int
    """1-based line number."""
    column: int
    """1-based column number."""
    key_path: str
    """Dotted path of the offending key, e.g. ``apps[0].workload.period_ms``."""
    message: str
    """What was expected and what was found."""

    def __str__(self) -> str:
        where = f"{self.source}:{self.line}:{self.column}"
        if self.key_path:
            return f"{where}: {self.key_path}: {self.message}"
        return f"{where}: {self.message}"


class ScenarioError(NnemuError):
    """A scenario document is malformed; carries every problem found, sorted by position."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = sorted(problems, key=lambda p: (p.source, p.line, p.column, p.key_path))
        super().__init__("\n".join(str(p) for p in self.problems))


class SpecValueError(NnemuError, ValueError):
    """A scenario spec built in code holds a value outside its declared range.

    Raised by the validators of ``nnemu.scenario``'s attrs classes (``DeviceSpec(compute_units=0)``,
    ``attrs.evolve(spec, jitter=-1)``); the YAML loader checks the same ranges first and reports
    them as ``ScenarioError`` problems with their position.
    """

    def __init__(self, owner: str, attr: str, expected: str, got: object) -> None:
        self.owner = owner
        """The spec class, e.g. ``DeviceSpec``."""
        self.attr = attr
        """The field, e.g. ``compute_units``."""
        self.expected = expected
        """The range, e.g. ``an integer in [1, 1024]``."""
        self.got = got
        """The value refused."""
        super().__init__(f"{owner}.{attr}: expected {expected}, got {got!r}")


class TraceFormatError(NnemuError):
    """A trace could not be read at all (nothing usable in it)."""

    def __init__(
        self, source: str, line_number: int, line: str, message: str, *, offset: int | None = None
    ) -> None:
        self.source = source
        self.line_number = line_number
        self.line = line
        self.message = message
        self.offset = offset
        """Byte offset of the problem in a binary trace (a Perfetto protobuf file), if any."""
        super().__init__(f"{self.where}: {message}")

    @property
    def where(self) -> str:
        """``source:line``, ``source: byte OFFSET`` (binary input), or just ``source`` for a
        problem of the whole file (line 0)."""
        if self.offset is not None:
            return f"{self.source}: byte {self.offset}"
        return f"{self.source}:{self.line_number}" if self.line_number else self.source


class ResultsFormatError(NnemuError):
    """A report, replications report or sweep directory (``nnemu compare``'s input) is malformed."""

    def __init__(self, source: str, line: int, message: str) -> None:
        self.source = source
        """The file as the user named it (``DIR/results.jsonl`` for a sweep)."""
        self.line = line
        """1-based line of the problem, 0 for a problem of the whole file."""
        self.message = message
        """What was expected and what was found."""
        where = f"{source}:{line}" if line else source
        super().__init__(f"{where}: {message}")


class EmulatorBug(NnemuError):
    """A broken internal invariant. Please report it with the scenario and seed."""


class Interrupted(NnemuError):
    """A run was ended early by a signal (Ctrl-C, SIGTERM) at a point between two kernel steps.

    The trace was closed cleanly (every open section ended at the stop time);
    ``report`` describes the run up to there and says ``"interrupted"``.
    """

    def __init__(self, signum: int, report: Any = None) -> None:
        import signal

        self.signum = signum
        self.signal_name = signal.Signals(signum).name
        self.report: Any = report
        """The ``nnemu.report.Report`` of the run up to the signal, or None.  (Typed ``Any``:
        this module is imported by every layer and imports none, the report's included.)"""
        super().__init__(f"interrupted by {self.signal_name}")


class Terminated(BaseException):
    """Raised by the CLI's SIGTERM handler (outside a run, which stops cleanly instead); like
    KeyboardInterrupt, not an ``Exception``, so only code that acts on it catches it."""


class OutputError(NnemuError):
    """An output file (trace, report, pictures) could not be written."""

    def __init__(self, path: str, what: str, reason: str) -> None:
        self.path = path
        self.what = what
        self.reason = reason
        super().__init__(f"{path}: cannot write the {what}: {reason}")
