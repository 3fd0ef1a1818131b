"""Shared pytest configuration: the --update-goldens flag for diff tests, hypothesis's
profile for CI (derandomized, so a CI run's examples are the same every time), and the
xdist groups' names in node ids under pytest 9."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

# With CI set (.ci/run sets it), every property test draws the same examples in every run: a
# red CI is a change's doing, not a new random draw's.  Outside CI each run draws afresh and
# keeps what fails in .hypothesis/ to try first next time.  (Recent hypothesis loads the same
# settings by itself with CI set; the profile makes it hold for every version pyproject.toml
# allows.  print_blob: a failure prints the blob that reproduces it.)
settings.register_profile(
    "nnemu-ci",
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
if os.environ.get("CI"):
    settings.load_profile("nnemu-ci")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-goldens",
        action="store_true",
        default=False,
        help="rewrite the expected files of golden diff tests instead of comparing",
    )


@pytest.fixture(name="update_goldens")
def _update_goldens(request: pytest.FixtureRequest) -> bool:
    """Whether golden diff tests should rewrite their expected output."""
    return bool(request.config.getoption("--update-goldens"))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Name each test's ``xdist_group`` in its node id (``...@group``) under ``--dist loadgroup``.

    pytest-xdist's worker does so by setting ``item._nodeid``, which pytest 9 no longer reads
    (a node's id is ``item._id``): without this, tests sharing a costly session or module
    fixture (the sweep tests' ``small_sweep``, the install tests' wheel) ran on every worker.
    """
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        groups = {
            str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
            for mark in item.iter_markers("xdist_group")
        }
        if groups and "@" not in item.nodeid and hasattr(item, "_id"):
            from _pytest.nodeid import NodeId

            item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(sorted(groups))}")
