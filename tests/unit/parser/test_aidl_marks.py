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


@pytest.mark.parametrize(
    "method",
    [
        "IBurst::executeSynchronously",
        "IBurst::executeSynchronouslyWithConfig",
        "IBurst::releaseMemoryResource",
        "IExecution::executeSynchronously",
        "IExecution::executeFenced",
        "IPreparedModel::createReusableExecution",
        "IPreparedModel::executeSynchronouslyWithConfig",
        "IPreparedModel::executeFencedWithConfig",
    ],
)
def test_aidl_burst_and_v4_execution_calls_are_driver_execution(method: str):
    """IBurst and IExecution calls (and v4's createReusableExecution, *WithConfig) are an
    AIDL driver's execution work: their server side makes the process a driver and is filed
    under PE, their client side is IPC; none launches work that a notify ends, and a fenced
    one launches work a driver worker may take (D-FENCED)."""
    server = classify(f"AIDL::ndk::{method}::server")
    client = classify(f"AIDL::ndk::{method}::client")
    assert (server.layer, server.phase) == (Layer.DRIVER, Phase.EXECUTION)
    assert (client.layer, client.phase) == (Layer.IPC, Phase.EXECUTION)
    assert server.driver_server
    assert server.hidl_server
    assert not server.prepare_server
    assert not server.async_execute_server
    assert server.fenced_server is ("executeFenced" in method)
    assert not client.fenced_server


def test_aidl_configure_execution_burst_launches_nothing():
    """AIDL's configureExecutionBurst hands back an IBurst binder object, where HIDL's starts a
    burst server thread: the AIDL server call is not a launch; IDevice::prepareModelWithConfig
    is one, as prepareModel."""
    aidl = classify("AIDL::ndk::IPreparedModel::configureExecutionBurst::server")
    hidl = classify("HIDL::IPreparedModel::configureExecutionBurst::server")
    assert hidl.prepare_server
    assert not aidl.prepare_server
    assert aidl.driver_server
    assert classify("AIDL::ndk::IDevice::prepareModelWithConfig::server").prepare_server
