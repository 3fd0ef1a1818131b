"""A non-editable install (a wheel) carries the demos' scenarios and, built, the compiled modules."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from nnemu import _build, _native

ROOT = Path(__file__).resolve().parents[2]
DEMO_SCENARIOS = sorted(p.name for p in (ROOT / "nnemu/demo/scenarios").glob("*.yaml"))


def _ignored(folder: str, names: list[str]) -> set[str]:
    """What the copy of the repository leaves out: dot files but the stamp file, builds, tests."""
    skip = {"build", "__pycache__", "tests", "bench"}
    return {
        name
        for name in names
        if name in skip
        or name.endswith(".egg-info")
        or (name.startswith(".") and name != _native.STAMP_FILE)
    }


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the repository with its compiled modules, if built (setuptools writes beside it)."""
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


def test_wheel_whose_compile_failed_is_for_any_platform(
    source: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A wheel built where no target compiles (no working C compiler) holds no extension module, so it is tagged py3-none-any and pure, as with NNEMU_BUILD_PURE=1."""
    bare = tmp_path_factory.mktemp("bare") / "source"
    shutil.copytree(
        source,
        bare,
        ignore=lambda folder, names: {
            n for n in names if n.endswith((".so", ".pyd")) or n == _native.STAMP_FILE
        },
    )
    built = _pip_wheel(bare, tmp_path_factory.mktemp("failed-wheel"), CC="/bin/false")
    archive = zipfile.ZipFile(built)
    assert not [n for n in archive.namelist() if n.endswith((".so", ".pyd"))]
    assert built.name.endswith("-py3-none-any.whl"), built.name
    (wheel_file,) = [n for n in archive.namelist() if n.endswith(".dist-info/WHEEL")]
    assert "Root-Is-Purelib: true" in archive.read(wheel_file).decode()


def test_compiled_wheel_runs_its_compiled_modules_from_where_it_is_installed(
    source: Path, tmp_path: Path
) -> None:
    """Where the checkout's compiled modules are up to date, the wheel carries them (platform tag) and they load from the install."""
    if not all(_build.up_to_date(group) for group in _native.TARGETS):
        pytest.skip(
            "the compiled modules are not built (pip install -e . or python -m nnemu._build)"
        )
    built = _pip_wheel(source, tmp_path / "wheel")
    assert not built.name.endswith("-none-any.whl")
    names = set(zipfile.ZipFile(built).namelist())
    stamps = _native.read_stamps()
    assert {
        f"nnemu/{file}" for group in _native.TARGETS for file in stamps[group.name].files
    } <= names
    target = tmp_path / "site"
    _install(built, target)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    environ = {k: v for k, v in os.environ.items() if not k.startswith("NNEMU_")}
    done = subprocess.run(
        [sys.executable, "-m", "nnemu._build", "--check"],
        cwd=elsewhere,
        env={**environ, "PYTHONPATH": str(target)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == len(_native.TARGETS)
    for group, line in zip(_native.TARGETS, lines, strict=True):
        assert line.startswith(f"{group.name}: compiled ({target}/nnemu/"), line


def test_wheel_holds_the_demo_scenarios(wheel: Path) -> None:
    """Every demo scenario is package data in the wheel."""
    names = zipfile.ZipFile(wheel).namelist()
    packaged = sorted(n.rsplit("/", 1)[1] for n in names if n.startswith("nnemu/demo/scenarios/"))
    assert packaged == DEMO_SCENARIOS
    assert len(DEMO_SCENARIOS) == 5


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
