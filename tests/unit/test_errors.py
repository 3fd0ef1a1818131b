"""Every nnemu exception survives pickling (a sweep's worker sends its error to the parent)."""

from __future__ import annotations

import importlib
import pickle
import pkgutil
import signal
from collections.abc import Callable, Iterator

import pytest

import nnemu
from nnemu.errors import (
    EmulatorBug,
    Interrupted,
    NnemuError,
    OutputError,
    Problem,
    ResultsFormatError,
    ScenarioError,
    SpecValueError,
    TraceFormatError,
)
from nnemu.overrides import OverrideError
from nnemu.report import ExpectationResult, Report
from nnemu.sweep._engines import EngineError
from nnemu.sweep._results import SweepDirError

_PROBLEMS = [
    Problem(source="b.yaml", line=9, column=3, key_path="apps[1].priority", message="bad"),
    Problem(source="a.yaml", line=2, column=7, key_path="", message="expected a mapping"),
]
_REPORT = Report(
    data={"scenario": "s", "seed": 3, "interrupted": "SIGINT", "apps": {"a": {"completed": 2}}},
    expectations=(ExpectationResult("apps.a.completed >= 1", True, 2.0),),
)

EXAMPLES: dict[type[NnemuError], Callable[[], NnemuError]] = {
    ScenarioError: lambda: ScenarioError(list(_PROBLEMS)),
    SpecValueError: lambda: SpecValueError("DeviceSpec", "compute_units", "an integer >= 1", 0),
    TraceFormatError: lambda: TraceFormatError("t.pftrace", 0, "", "truncated packet", offset=17),
    EmulatorBug: lambda: EmulatorBug("a section ended twice"),
    Interrupted: lambda: Interrupted(signal.SIGINT, _REPORT),
    OutputError: lambda: OutputError("out/r.json", "report", "permission denied"),
    ResultsFormatError: lambda: ResultsFormatError("sweep/results.jsonl", 4, "expected JSON"),
    OverrideError: lambda: OverrideError(["--set a.b: unknown key", "--set seed: expected int"]),
    EngineError: lambda: EngineError("--address tcp://h:1: cannot reach a Dask scheduler"),
    SweepDirError: lambda: SweepDirError("out: already holds results of a sweep"),
}
"""One instance of each exception class, built as the code that raises it builds it."""


def _subclasses(cls: type[NnemuError]) -> Iterator[type[NnemuError]]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _every_error_class() -> list[type[NnemuError]]:
    """Every subclass of NnemuError in the package, after importing all of its modules."""
    for module in pkgutil.walk_packages(nnemu.__path__, "nnemu."):
        importlib.import_module(module.name)
    return sorted(set(_subclasses(NnemuError)), key=lambda cls: cls.__qualname__)


def test_every_error_class_has_an_example() -> None:
    """A new NnemuError subclass anywhere in the package must be added to EXAMPLES (and pickle)."""
    missing = [cls.__qualname__ for cls in _every_error_class() if cls not in EXAMPLES]
    assert not missing, f"add an example to EXAMPLES for {missing}"


@pytest.mark.parametrize(
    "cls", sorted(EXAMPLES, key=lambda cls: cls.__qualname__), ids=lambda cls: cls.__qualname__
)
def test_error_survives_pickling(cls: type[NnemuError]) -> None:
    """Unpickled, the exception has the same class, message, args and attributes."""
    original = EXAMPLES[cls]()
    assert type(original) is cls
    copy = pickle.loads(pickle.dumps(original))
    assert type(copy) is cls
    assert str(copy) == str(original)
    assert copy.args == original.args
    assert vars(copy) == vars(original)


def test_unpickled_errors_keep_their_behaviour() -> None:
    """Derived properties and the carried report work on the copy as on the original."""
    trace_error = pickle.loads(pickle.dumps(EXAMPLES[TraceFormatError]()))
    assert trace_error.where == "t.pftrace: byte 17"
    interrupted = pickle.loads(pickle.dumps(EXAMPLES[Interrupted]()))
    assert interrupted.signal_name == "SIGINT"
    assert interrupted.report is not None
    assert interrupted.report.passed
    scenario_error = pickle.loads(pickle.dumps(EXAMPLES[ScenarioError]()))
    assert [p.source for p in scenario_error.problems] == ["a.yaml", "b.yaml"]
