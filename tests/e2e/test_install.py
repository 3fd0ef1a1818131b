"""A non-editable install (a wheel) carries the demos' scenarios: ``nnemu demo`` works from it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEMO_SCENARIOS = sorted(p.name for p in (ROOT / "nnemu/demo/scenarios").glob("*.yaml"))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """nnemu built as a wheel by pip (skipped when pip cannot get the build backend offline)."""
    out = tmp_path_factory.mktemp("wheel")
    # Build from a copy: setuptools leaves build/ and *.egg-info beside the sources.
    source = out / "source"
    ignore = shutil.ignore_patterns(".*", "build", "*.egg-info", "__pycache__", "tests", "bench")
    shutil.copytree(ROOT, source, ignore=ignore)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0 and "No matching distribution" in done.stderr:
        pytest.skip("pip cannot get setuptools to build the wheel here")
    assert done.returncode == 0, done.stderr
    (built,) = out.glob("nnemu-*.whl")
    return built


def test_wheel_holds_the_demo_scenarios(wheel: Path) -> None:
    """Every demo scenario is package data in the wheel."""
    names = zipfile.ZipFile(wheel).namelist()
    packaged = sorted(n.rsplit("/", 1)[1] for n in names if n.startswith("nnemu/demo/scenarios/"))
    assert packaged == DEMO_SCENARIOS
    assert len(DEMO_SCENARIOS) == 5


def test_demo_runs_from_an_installed_wheel(wheel: Path, tmp_path: Path) -> None:
    """Installed from the wheel (not -e), ``nnemu demo deadlines`` runs away from the repository."""
    target = tmp_path / "site"
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
