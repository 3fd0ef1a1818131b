"""Scenario and experiment files are read with a size limit (``nnemu._files``): a huge file or
``/dev/zero`` is refused with a placed message and exit 2, not read until memory runs out."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nnemu._files import MAX_DOCUMENT_BYTES
from tests.commands import run_cli

ROOT = Path(__file__).resolve().parents[3]
QUICKSTART = ROOT / "scenarios" / "quickstart.yaml"
TOO_LARGE = "larger than 4 MiB, the most nnemu reads of such a file"

needs_dev_zero = pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")


@needs_dev_zero
@pytest.mark.parametrize("command", ["run", "verify", "sweep"])
def test_dev_zero_as_the_input_is_refused(command: str) -> None:
    """``nnemu run /dev/zero`` reads 4 MiB and stops (it read until MemoryError)."""
    code, _, err = run_cli(command, "/dev/zero")
    assert code == 2
    assert err == f"/dev/zero:1:1: {TOO_LARGE}\n"


def test_a_scenario_past_the_limit_is_refused(tmp_path: Path) -> None:
    """A valid scenario padded with comments past 4 MiB is refused before it is parsed."""
    big = tmp_path / "big.yaml"
    padding = "#" * 1023 + "\n"
    big.write_text(
        QUICKSTART.read_text() + padding * (MAX_DOCUMENT_BYTES // len(padding) + 1),
        encoding="utf-8",
    )
    code, _, err = run_cli("run", str(big))
    assert code == 2
    assert err == f"{big}:1:1: {TOO_LARGE}\n"


@needs_dev_zero
def test_an_experiments_scenario_that_is_dev_zero_is_refused(tmp_path: Path) -> None:
    """An experiment's ``scenario: /dev/zero`` is a placed problem of the experiment."""
    experiment = tmp_path / "exp.yaml"
    experiment.write_text("scenario: /dev/zero\nmetrics: [virtual_ms]\n", encoding="utf-8")
    code, _, err = run_cli("sweep", str(experiment), "--out", str(tmp_path / "out"))
    assert code == 2
    assert f"{experiment}:1:11: scenario: cannot read the scenario /dev/zero: {TOO_LARGE}" in err


@needs_dev_zero
def test_compare_reads_a_device_with_a_bound() -> None:
    """``nnemu compare /dev/zero B`` stops after 64 MiB with a message."""
    code, _, err = run_cli("compare", "/dev/zero", "/dev/zero")
    assert code == 2
    assert "/dev/zero" in err
    assert "larger than 64 MiB" in err
