"""The AIDL HAL's VTS (hardware/interfaces/neuralnetworks/aidl/vts/functional/) against an
AIDL v4 driver, and the AIDL sample driver's argument checks.

Each test names the AOSP file and test (or function) it mirrors.  The driver is an emulated
service of ``hal_version: aidl-v4`` reached through its AIDL IDevice (``AidlDevice``) over
the binder, as the VTS binary reaches ``android.hardware.neuralnetworks.IDevice/<name>``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from nnemu.driver import AidlDevice, AidlFencedResult, AidlPreparedModel
from nnemu.hal import (
    AidlTiming,
    ErrorStatus,
    ExecutionResult,
    HalVersion,
    Priority,
    ServiceSpecificError,
)
from tests.conformance._harness import MISSED_DEADLINE, MS, DriverWorld, model, request_for

AIDL = HalVersion.AIDL_V4
NO_DEADLINE = -1
NO_TIMING = AidlTiming(-1, -1)
INVALID = ServiceSpecificError(ErrorStatus.INVALID_ARGUMENT)
EMPTY_TOKEN = b"\0" * 32


class AidlClient:
    """The VTS client of one AIDL driver: calls over the binder, callbacks recorded."""

    def __init__(self) -> None:
        self.world = DriverWorld(AIDL)
        self.device = AidlDevice(self.world.service)

    async def call(self, iface: str, method: str, serve: Callable[[], Awaitable[object]]) -> object:
        world = self.world
        return await world.binder.call(world.service.endpoint, AIDL.interface(iface), method, serve)

    async def prepare(
        self, *, deadline_ns: int = NO_DEADLINE, priority: int = int(Priority.MEDIUM)
    ) -> tuple[object, list[tuple[object, ...]]]:
        """prepareModel (FAST_SINGLE_ANSWER, no cache): (launch answer, notifies after settling)."""
        recorder, ref = self.world.callback()
        device = self.device
        launch = await self.call(
            "IDevice",
            "prepareModel",
            lambda: device.prepareModel(
                model("add_float32"), 1, priority, deadline_ns, (), (), EMPTY_TOKEN, ref
            ),
        )
        await self.world.settle()
        return launch, recorder.notifies

    async def prepared(self) -> AidlPreparedModel:
        launch, [(status, prepared)] = await self.prepare()
        assert launch is None
        assert status is ErrorStatus.NONE
        assert isinstance(prepared, AidlPreparedModel)
        return prepared

    def now(self) -> int:
        return self.world.kernel.clock_ns


def _run(body: Callable[[AidlClient], Awaitable[None]]) -> Callable[[], Awaitable[None]]:
    async def test() -> None:
        client = AidlClient()
        await client.world.run(lambda: body(client))

    return test


async def test_DeadlineTest_prepare_without_deadline(autojump_clock):
    """QualityOfServiceTests.cpp DeadlineTest, runPrepareModelTest with no deadline
    (``kNoDeadline`` = -1) and priorities LOW and HIGH: the launch status is OK, the
    callback's status NONE, with a prepared model."""

    async def body(client: AidlClient) -> None:
        for priority in (Priority.LOW, Priority.HIGH):
            launch, [(status, prepared)] = await client.prepare(priority=int(priority))
            assert launch is None  # ScopedAStatus::ok()
            assert status is ErrorStatus.NONE
            assert isinstance(prepared, AidlPreparedModel)

    await _run(body)()


async def test_DeadlineTest_prepare_deadline_now(autojump_clock):
    """QualityOfServiceTests.cpp DeadlineTest, runPrepareModelTest with DeadlineBoundType::NOW:
    the launch is OK; the callback says NONE or MISSED_DEADLINE_*; a model iff NONE."""

    async def body(client: AidlClient) -> None:
        launch, [(status, prepared)] = await client.prepare(deadline_ns=client.now())
        assert launch is None
        assert status in (ErrorStatus.NONE, *MISSED_DEADLINE)
        assert (status is ErrorStatus.NONE) == (prepared is not None)

    await _run(body)()


@pytest.mark.parametrize("bound", ["UNLIMITED", "NOW", "SHORT"])
async def test_DeadlineTest_executeSynchronously(autojump_clock, bound):
    """QualityOfServiceTests.cpp DeadlineTest, runExecutionTest (synchronous, measure false):
    no timing (``kNoTiming``: both -1); UNLIMITED succeeds with outputSufficientSize and one
    shape per output; NOW and SHORT succeed or fail with a MISSED_DEADLINE_* service-specific
    error."""

    async def body(client: AidlClient) -> None:
        prepared = await client.prepared()
        request = request_for(prepared.model)
        deadline = {"UNLIMITED": NO_DEADLINE, "NOW": client.now(), "SHORT": client.now() + 5 * MS}
        answer = await client.call(
            "IPreparedModel",
            "executeSynchronously",
            lambda: prepared.executeSynchronously(request, False, deadline[bound], NO_DEADLINE),
        )
        if isinstance(answer, ServiceSpecificError):
            assert bound != "UNLIMITED"
            assert answer.status in MISSED_DEADLINE
            return
        assert isinstance(answer, ExecutionResult)
        assert answer.timing == NO_TIMING
        assert answer.output_sufficient_size
        assert len(answer.output_shapes) == len(prepared.model.main.output_indexes)

    await _run(body)()


async def test_executeSynchronously_measured_timing_in_nanoseconds(autojump_clock):
    """GeneratedTestHarness.cpp EvaluatePreparedModel with MeasureTiming: each known field of
    Timing is in nanoseconds and timeOnDeviceNs <= timeInDriverNs."""

    async def body(client: AidlClient) -> None:
        prepared = await client.prepared()
        request = request_for(prepared.model)
        answer = await client.call(
            "IPreparedModel",
            "executeSynchronously",
            lambda: prepared.executeSynchronously(request, True, NO_DEADLINE, NO_DEADLINE),
        )
        assert isinstance(answer, ExecutionResult)
        timing = answer.timing
        assert 0 < timing.time_on_device_ns <= timing.time_in_driver_ns
        assert timing.time_on_device_ns % 1000 == 0  # the emulated driver times in whole µs

    await _run(body)()


async def test_executeFenced_returns_a_callback_with_the_execution_info(autojump_clock):
    """GeneratedTestHarness.cpp EvaluatePreparedModel, Executor::FENCED: the call is OK and its
    callback's getExecutionInfo says NONE, with no timing when not measured."""

    async def body(client: AidlClient) -> None:
        prepared = await client.prepared()
        request = request_for(prepared.model)
        answer = await client.call(
            "IPreparedModel",
            "executeFenced",
            lambda: prepared.executeFenced(request, (), False, NO_DEADLINE, NO_DEADLINE, -1),
        )
        assert isinstance(answer, AidlFencedResult)
        assert answer.getExecutionInfo() == (NO_TIMING, NO_TIMING, ErrorStatus.NONE)

    await _run(body)()


@pytest.mark.parametrize("argument", ["deadline", "loop_timeout", "duration"])
async def test_negative_durations_other_than_minus_one_are_invalid(autojump_clock, argument):
    """The AIDL sample driver (packages/modules/NeuralNetworks/driver/sample_aidl/
    SampleDriverAidl.cpp, SamplePreparedModel::executeSynchronously / executeFenced): a
    deadline, loop timeout or fenced duration below -1 fails the call with INVALID_ARGUMENT
    as its service-specific error; -1 means none (the default)."""

    async def body(client: AidlClient) -> None:
        prepared = await client.prepared()
        request = request_for(prepared.model)
        values = {"deadline": NO_DEADLINE, "loop_timeout": NO_DEADLINE, "duration": NO_DEADLINE}
        values[argument] = -2
        answer = await client.call(
            "IPreparedModel",
            "executeFenced",
            lambda: prepared.executeFenced(
                request, (), False, values["deadline"], values["loop_timeout"], values["duration"]
            ),
        )
        assert answer == INVALID
        if argument != "duration":
            answer = await client.call(
                "IPreparedModel",
                "executeSynchronously",
                lambda: prepared.executeSynchronously(
                    request, False, values["deadline"], values["loop_timeout"]
                ),
            )
            assert answer == INVALID

    await _run(body)()


async def test_prepareModel_invalid_deadline_notifies_and_fails_the_call(autojump_clock):
    """The ``common/aidl`` adapter's Device::prepareModel (packages/modules/NeuralNetworks/
    common/aidl/adapter): an argument it cannot convert (a deadline below -1) notifies the
    callback with INVALID_ARGUMENT and no model, and fails the call with the same status."""

    async def body(client: AidlClient) -> None:
        launch, notifies = await client.prepare(deadline_ns=-5)
        assert launch == INVALID
        assert notifies == [(ErrorStatus.INVALID_ARGUMENT, None)]

    await _run(body)()


async def test_getInterfaceVersion_and_queries(autojump_clock):
    """VtsHalNeuralnetworks.cpp NeuralNetworksAidlTest (GetCapabilitiesTest and friends): the
    queries succeed; getInterfaceVersion is the AIDL version the service implements."""

    async def body(client: AidlClient) -> None:
        device = client.device
        assert await client.call("IDevice", "getInterfaceVersion", device.getInterfaceVersion) == 4
        caches = await client.call(
            "IDevice", "getNumberOfCacheFilesNeeded", device.getNumberOfCacheFilesNeeded
        )
        assert isinstance(caches, tuple)
        assert all(0 <= count <= 32 for count in caches)

    await _run(body)()
