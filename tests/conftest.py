"""Shared pytest configuration: the --update-goldens flag for diff tests."""

from __future__ import annotations

import pytest


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
