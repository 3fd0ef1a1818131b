"""Fixtures of the VTS/CTS conformance suite: a driver world (VTS) and a runtime world (CTS).

The worlds themselves live in ``_harness.py`` (importable by the test modules, which
need the version tables at collection time); these fixtures build them.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from nnemu.hal import HalVersion
from nnemu.scenario import DeviceSpec
from tests.conformance._harness import DriverWorld, RuntimeWorld


@pytest.fixture(name="driver_world")
def _driver_world() -> Callable[..., DriverWorld]:
    """Factory of a driver service of a given HAL version plus a VTS client process."""

    def make(version: HalVersion = HalVersion.V1_3, **spec_fields: object) -> DriverWorld:
        return DriverWorld(version, **spec_fields)

    return make


@pytest.fixture(name="runtime_world")
def _runtime_world() -> Callable[..., RuntimeWorld]:
    """Factory of driver services plus a CTS app process with its runtime."""

    def make(*specs: DeviceSpec) -> RuntimeWorld:
        return RuntimeWorld(*specs)

    return make
