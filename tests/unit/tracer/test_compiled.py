"""The mypyc-compiled tracer and writers: one family picked in one place, and the same bytes."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path
from unittest import mock

import pytest

from nnemu import _native
from nnemu.tracer import _family, _tracer, _writers

REPO = Path(__file__).resolve().parents[3]
_TARGET = _native.target("tracer")
_COMPILED_NAMES = dict(_TARGET.modules)


def _fake(source: str, crc: int) -> types.ModuleType:
    module = types.ModuleType(_COMPILED_NAMES[source])
    module.SOURCE_CRC = crc  # type: ignore[attr-defined]
    return module


def _fakes(tracer_crc: int, writers_crc: int | None) -> dict[str, types.ModuleType | None]:
    modules: dict[str, types.ModuleType | None] = {
        _COMPILED_NAMES["nnemu.tracer._tracer"]: _fake("nnemu.tracer._tracer", tracer_crc),
        # None in sys.modules makes the import fail: that module is not built.
        _COMPILED_NAMES["nnemu.tracer._writers"]: None,
    }
    if writers_crc is not None:
        modules[_COMPILED_NAMES["nnemu.tracer._writers"]] = _fake(
            "nnemu.tracer._writers", writers_crc
        )
    return modules


def test_compiled_family_is_picked_when_built_from_these_sources(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Both compiled modules recording the sources' CRC-32 are the tracer and writers used."""
    monkeypatch.delenv(_native.PURE_ENV, raising=False)
    monkeypatch.setattr(_family.sim, "COMPILED", True)
    crc = _native.source_crc(_TARGET)
    fakes = _fakes(crc, crc)
    with mock.patch.dict(sys.modules, fakes):
        picked = _family._pick()
    assert picked == (
        fakes[_COMPILED_NAMES["nnemu.tracer._tracer"]],
        fakes[_COMPILED_NAMES["nnemu.tracer._writers"]],
    )


@pytest.mark.parametrize(
    ("env", "writers_offset"),
    [("", 1), ("", None), ("tracer", 0), ("parser,tracer", 0), ("1", 0)],
    ids=["stale-writers", "writers-not-built", "pure-tracer", "pure-list", "pure-all"],
)
def test_pure_family_is_picked_unless_both_compiled_modules_are_usable(
    monkeypatch: pytest.MonkeyPatch, env: str, writers_offset: int | None
) -> None:
    """A stale or missing compiled module, or ``NNEMU_PURE`` naming the target, gives both pure."""
    monkeypatch.setenv(_native.PURE_ENV, env)
    crc = _native.source_crc(_TARGET)
    fakes = _fakes(crc, None if writers_offset is None else crc ^ writers_offset)
    with mock.patch.dict(sys.modules, fakes):
        assert _family._pick() == (_tracer, _writers)


def test_compiled_tracer_is_not_picked_beside_the_pure_kernel(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A compiled tracer reads the compiled kernel natively: with the pure kernel, both families are pure."""
    monkeypatch.delenv(_native.PURE_ENV, raising=False)
    monkeypatch.setattr(_family.sim, "COMPILED", False)
    crc = _native.source_crc(_TARGET)
    with mock.patch.dict(sys.modules, _fakes(crc, crc)):
        assert _family._pick() == (_tracer, _writers)


def test_target_sources_include_what_the_compiled_tracer_types_against() -> None:
    """Edits to the shared event types, the vocabulary or the kernel make the compiled tracer stale."""
    sources = {path.relative_to(_native.PACKAGE_DIR).as_posix() for path in _TARGET.sources}
    assert {
        "tracer/_tracer.py",
        "tracer/_writers.py",
        "tracer/_events.py",
        "tracer/_vocab.py",
        "sim/_kernel.py",
    } <= sources


_RUN = """\
import sys
from nnemu.cli import main
from nnemu.tracer import _family
code = main(["run", sys.argv[1], "-q", "--trace", sys.argv[2]])
print(_family.COMPILED)
sys.exit(code)
"""


@pytest.mark.skipif(
    _native.compiled("nnemu.tracer._tracer") is None,
    reason="the compiled tracer is not built (python -m nnemu._build tracer), or NNEMU_PURE",
)
@pytest.mark.parametrize("suffix", [".html", ".txt", ".json", ".pftrace"])
def test_compiled_tracer_writes_the_pure_tracers_bytes(tmp_path: Path, suffix: str) -> None:
    """Where the compiled tracer is built, a run's trace is byte-identical to the pure tracer's."""
    scenario = REPO / "scenarios" / "two_apps_one_npu.yaml"
    traces = {}
    for pure in (False, True):
        env = {k: v for k, v in os.environ.items() if k != _native.PURE_ENV}
        if pure:
            env[_native.PURE_ENV] = "tracer"
        path = tmp_path / f"{'pure' if pure else 'compiled'}{suffix}"
        done = subprocess.run(
            [sys.executable, "-c", _RUN, str(scenario), str(path)],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.split()[-1] == str(not pure)  # (after the run's summary)
        traces[pure] = path.read_bytes()
    assert traces[False] == traces[True]
    assert len(traces[False]) > 10_000
