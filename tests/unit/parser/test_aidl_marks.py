"""AIDL NDK marks (``AIDL::ndk::<Iface>::<method>::<side>``): nnemu's extension of Android's parser."""

from __future__ import annotations

import pytest

from nnemu.trace._marks import classify
from nnemu.tracer import Layer, Phase


@pytest.mark.parametrize(
    ("method", "phase"),
    [
        ("IDevice::prepareModel", Phase.COMPILATION),
        ("IDevice::getSupportedOperations", Phase.COMPILATION),
        ("IDevice::getCapabilities", Phase.INITIALIZATION),
        ("IPreparedModel::executeSynchronously", Phase.EXECUTION),
        ("IPreparedModel::executeFenced", Phase.EXECUTION),
    ],
)
def test_aidl_mark_reads_as_the_hidl_mark_of_its_method(method: str, phase: Phase):
    """An AIDL server call is driver work and its client call IPC, in the phase the HIDL
    mark of the same interface and method gets."""
    server = classify(f"AIDL::ndk::{method}::server")
    client = classify(f"AIDL::ndk::{method}::client")
    hidl = classify(f"HIDL::{method}::server")
    assert (server.layer, server.phase) == (Layer.DRIVER, phase) == (hidl.layer, hidl.phase)
    assert (client.layer, client.phase) == (Layer.IPC, phase)
    assert server.driver_server
    assert server.hidl_server
    assert client.hidl_client
    assert server.prepare_server is ("prepareModel" in method)
    assert server.function == f"AIDL::ndk::{method}::server"


def test_aidl_call_pairs_only_with_aidl_calls():
    """The pairing key keeps the family: an AIDL client never waits for a HIDL server."""
    aidl = classify("AIDL::ndk::IDevice::getType::server").call
    hidl = classify("HIDL::IDevice::getType::server").call
    assert aidl == "AIDL::ndk::IDevice::getType"
    assert hidl == "HIDL::IDevice::getType"


def test_aidl_callback_notify_ends_a_preparation_and_is_not_counted():
    """IPreparedModelCallback::notify's client side ends the launched preparation, uncounted."""
    mark = classify("AIDL::ndk::IPreparedModelCallback::notify::client")
    assert mark.layer is None
    assert mark.prepare_notify_client
