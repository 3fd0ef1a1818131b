"""HalVersion's method names: the suffixes and notify methods HIDL gives each HAL version."""

from __future__ import annotations

import pytest

from nnemu.hal import HalVersion


@pytest.mark.parametrize(
    ("version", "suffix"),
    [
        (HalVersion.V1_0, ""),
        (HalVersion.V1_1, "_1_1"),
        (HalVersion.V1_2, "_1_2"),
        (HalVersion.V1_3, "_1_3"),
    ],
)
def test_suffix_is_the_hidl_method_suffix(version: HalVersion, suffix: str) -> None:
    """A method redefined in 1.x carries ``_1_x``; the 1.0 originals carry nothing."""
    assert version.suffix == suffix
    assert version.method("prepareModel") == "prepareModel" + suffix


def test_method_introduced_after_1_0_keeps_its_bare_name_in_its_own_version() -> None:
    """prepareModelFromCache is 1.2's name and prepareModelFromCache_1_3 is 1.3's."""
    since = HalVersion.V1_2
    assert HalVersion.V1_2.method("prepareModelFromCache", since=since) == "prepareModelFromCache"
    assert (
        HalVersion.V1_3.method("prepareModelFromCache", since=since) == "prepareModelFromCache_1_3"
    )


def test_method_before_its_version_is_refused() -> None:
    """Asking for a 1.2 method on a 1.1 interface is a programming error, not a made-up name."""
    with pytest.raises(ValueError, match=r"executeSynchronously does not exist before HAL 1\.2"):
        HalVersion.V1_1.method("executeSynchronously", since=HalVersion.V1_2)


@pytest.mark.parametrize(
    ("version", "method"),
    [
        (HalVersion.V1_0, "notify"),
        (HalVersion.V1_1, "notify"),
        (HalVersion.V1_2, "notify_1_2"),
        (HalVersion.V1_3, "notify_1_3"),
    ],
)
def test_notify_method_skips_1_1(version: HalVersion, method: str) -> None:
    """The callbacks have no 1.1 revision, so a 1.1 driver calls the 1.0 notify."""
    assert version.notify_method == method


@pytest.mark.parametrize(
    ("name", "version"),
    [
        ("prepareModel_1_3", HalVersion.V1_3),
        ("getSupportedOperations_1_1", HalVersion.V1_1),
        ("executeSynchronously_1_3", HalVersion.V1_3),
        ("notify_1_2", HalVersion.V1_2),
        ("execute", None),
        ("executeSynchronously", None),
        ("execute_1_4", HalVersion.V1_3),
        ("prepareModel_1_30", HalVersion.V1_3),
        ("prepareModel_1_0", None),
        ("prepareModel_1_x", None),
    ],
)
def test_of_method_reads_the_suffix_back(name: str, version: HalVersion | None) -> None:
    """A trace reader gets the version from a method name's suffix (a minor version newer
    than nnemu knows as the newest it knows), and None from a bare name."""
    assert HalVersion.of_method(name) is version


def test_of_method_inverts_method() -> None:
    """Every versioned name ``method`` builds reads back as its version."""
    for version in (HalVersion.V1_1, HalVersion.V1_2, HalVersion.V1_3):
        assert HalVersion.of_method(version.method("getCapabilities")) is version
