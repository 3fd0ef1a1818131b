"""The replay tests' shared recordings: each shipped scenario's JSON trace and its plan,
recorded and read once per worker for the tests that only read them."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from nnemu.replay import extract_plan
from nnemu.scenario import load_scenario
from tests.unit.replay.helpers import REPO, Shipped, record


@pytest.fixture(scope="session", name="shipped_json")
def _shipped_json(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Shipped]:
    """``scenarios/NAME.yaml`` recorded as JSON and its plan, for NAME; each recorded once
    (the tests using it carry ``xdist_group("shipped_json")`` to share one worker)."""
    done: dict[str, Shipped] = {}

    def recording(name: str) -> Shipped:
        if name not in done:
            scenario = load_scenario(REPO / "scenarios" / f"{name}.yaml")
            path = tmp_path_factory.mktemp("shipped") / f"{name}.json"
            record(scenario, path)
            done[name] = (scenario, path, extract_plan(str(path)))
        return done[name]

    return recording
