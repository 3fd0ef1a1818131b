"""A non-editable install (a wheel) carries the demos' scenarios; NNEMU_BUILD_PURE=1 makes it pure.

The compiled wheel takes minutes to build: .ci/run builds it and runs the tests against it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("install")]
"""Wheels built by pip, each in a build environment of its own; on one worker, which builds the
wheel once."""

ROOT = Path(__file__).resolve().parents[2]
DEMO_SCENARIOS = sorted(p.name for p in (ROOT / "nnemu/demo/scenarios").glob("*.yaml"))


def _ignored(folder: str, names: list[str]) -> set[str]:
    """What the copy of the repository leaves out: dot files, builds, tests."""
    skip = {"build", "__pycache__", "tests", "bench"}
    return {
        name
        for name in names
        if name in skip or name.endswith((".egg-info", ".so", ".pyd")) or name.startswith(".")
    }


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the repository (setuptools writes beside it)."""
    copy = tmp_path_factory.mktemp("repo") / "source"
    shutil.copytree(ROOT, copy, ignore=_ignored)
    return copy


def _pip_wheel(source: Path, out: Path, **env: str) -> Path:
    """nnemu built as a wheel by pip (skipped when pip cannot get the build backend offline)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("NNEMU_")}
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**environ, **env},
    )
    if done.returncode != 0 and "No matching distribution" in done.stderr:
        pytest.skip("pip cannot get setuptools to build the wheel here")
    assert done.returncode == 0, done.stderr
    (built,) = out.glob("nnemu-*.whl")
    return built


@pytest.fixture(scope="module")
def wheel(source: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A pure-Python wheel (``NNEMU_BUILD_PURE=1``: quick, whatever the checkout holds)."""
    return _pip_wheel(source, tmp_path_factory.mktemp("wheel"), NNEMU_BUILD_PURE="1")


def _install(wheel: Path, target: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        timeout=300,
        capture_output=True,
    )


def test_pure_wheel_is_for_any_platform(wheel: Path) -> None:
    """Built with NNEMU_BUILD_PURE=1, the wheel holds no extension module and is tagged py3-none-any."""
    assert wheel.name.endswith("-py3-none-any.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert not [n for n in names if n.endswith((".so", ".pyd"))]


def test_wheel_holds_the_demo_scenarios(wheel: Path) -> None:
    """Every demo scenario is package data in the wheel."""
    names = zipfile.ZipFile(wheel).namelist()
    packaged = sorted(n.rsplit("/", 1)[1] for n in names if n.startswith("nnemu/demo/scenarios/"))
    assert packaged == DEMO_SCENARIOS
    assert len(DEMO_SCENARIOS) == 6  # the six topics with a scenario of their own


def test_demo_runs_from_an_installed_wheel(wheel: Path, tmp_path: Path) -> None:
    """Installed from the wheel (not -e), ``nnemu demo deadlines`` runs away from the repository."""
    target = tmp_path / "site"
    _install(wheel, target)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(target)}
    code = "import nnemu, sys; from nnemu.cli import main; print(nnemu.__file__); sys.exit(main())"
    done = subprocess.run(
        [sys.executable, "-c", code, "demo", "deadlines"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(str(target))
    assert f"nnemu run {target}/nnemu/demo/scenarios/deadlines.yaml" in done.stdout
    assert "all held" in done.stdout
    assert (elsewhere / "nnemu-demo-deadlines.html").is_file()
