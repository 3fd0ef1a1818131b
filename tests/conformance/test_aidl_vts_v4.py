"""The AIDL HAL's IBurst and v4 calls against the emulated AIDL driver, mirrored from the AIDL
VTS (hardware/interfaces/neuralnetworks/aidl/vts/functional/, Android 14) and the AIDL sample
driver.

Each test names the AOSP file and test (or function) it mirrors.  The VTS gates the v4 cases
on ``getInterfaceVersion() >= kMinAidlLevelForFL8`` (4); the v1 cases run on every version.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
import trio

from nnemu.driver import AidlBurst, AidlDevice, AidlExecution, AidlFencedResult, AidlPreparedModel
from nnemu.hal import (
    AidlTiming,
    ErrorStatus,
    ExecutionConfig,
    ExecutionResult,
    ExtensionNameAndPrefix,
    HalVersion,
    PrepareModelConfig,
    ServiceSpecificError,
    TokenValuePair,
    UnknownTransaction,
)
from nnemu.hal.mutations import MODEL_MUTATIONS, REQUEST_MUTATIONS
from tests.conformance._harness import DriverWorld, model, request_for

V4 = HalVersion.AIDL_V4
AIDL_VERSIONS = [v for v in HalVersion if v.aidl]
NO_DEADLINE = -1
NO_TIMING = AidlTiming(-1, -1)
INVALID = ServiceSpecificError(ErrorStatus.INVALID_ARGUMENT)
GENERAL_FAILURE = ServiceSpecificError(ErrorStatus.GENERAL_FAILURE)
CONFIG = ExecutionConfig()  # {measure false, kOmittedTimeoutDuration, {}, {}}
TWICE = (TokenValuePair(0x7AAA000B, b"\x01"), TokenValuePair(0x7AAA000B, b"\x02"))
"""The same hint token twice (``ExecutionConfig.aidl``: "must not contain the same token twice")."""


class Client:
    """The VTS client of one AIDL driver of ``version``: calls over the binder."""

    def __init__(self, version: HalVersion = V4) -> None:
        self.world = DriverWorld(version)
        self.version = version
        self.device = AidlDevice(self.world.service)

    async def call(self, iface: str, method: str, serve: Callable[[], Awaitable[object]]) -> object:
        world = self.world
        return await world.binder.call(
            world.service.endpoint, self.version.interface(iface), method, serve
        )

    async def prepared(self) -> AidlPreparedModel:
        recorder, ref = self.world.callback()
        device = self.device
        launch = await self.call(
            "IDevice",
            "prepareModel",
            lambda: device.prepareModel(model("add_float32"), 1, 1, -1, (), (), b"\0" * 32, ref),
        )
        await self.world.settle()
        assert launch is None
        [(status, prepared)] = recorder.notifies
        assert status is ErrorStatus.NONE
        assert isinstance(prepared, AidlPreparedModel)
        return prepared

    async def burst(self, prepared: AidlPreparedModel) -> AidlBurst:
        burst = await self.call(
            "IPreparedModel", "configureExecutionBurst", prepared.configureExecutionBurst
        )
        assert isinstance(burst, AidlBurst)
        return burst


def _run(
    body: Callable[[Client], Awaitable[None]], version: HalVersion = V4
) -> Callable[[], Awaitable[None]]:
    async def test() -> None:
        client = Client(version)
        await client.world.run(lambda: body(client))

    return test


def _slots(pools: int) -> list[int]:
    """GeneratedTestHarness.cpp Executor::BURST: a unique slot per (ashmem) memory pool."""
    return list(range(pools))


def _succeeded(answer: object, prepared: AidlPreparedModel, *, measured: bool = False) -> None:
    assert isinstance(answer, ExecutionResult), answer
    assert answer.output_sufficient_size
    assert len(answer.output_shapes) == len(prepared.model.main.output_indexes)
    if measured:
        assert 0 < answer.timing.time_on_device_ns <= answer.timing.time_in_driver_ns
    else:
        assert answer.timing == NO_TIMING


# ------------------------------------------------------------------ IBurst (v1+)
@pytest.mark.parametrize("version", AIDL_VERSIONS, ids=lambda v: v.value)
@pytest.mark.parametrize("measure", [False, True], ids=["no-timing", "timing"])
async def test_GeneratedTestHarness_burst_executes(autojump_clock, version, measure):
    """GeneratedTestHarness.cpp EvaluatePreparedModel, Executor::BURST: configureExecutionBurst
    is OK with an IBurst; executeSynchronously with one slot per pool succeeds (one shape per
    output, timing only when measured); releaseMemoryResource of each slot is OK."""

    async def body(client: Client) -> None:
        prepared = await client.prepared()
        burst = await client.burst(prepared)
        request = request_for(prepared.model)
        slots = _slots(len(request.pool_sizes))
        for _ in range(2):
            answer = await client.call(
                "IBurst",
                "executeSynchronously",
                lambda: burst.executeSynchronously(request, slots, measure, NO_DEADLINE, -1),
            )
            _succeeded(answer, prepared, measured=measure)
        for slot in slots:
            assert (
                await client.call(
                    "IBurst", "releaseMemoryResource", lambda s=slot: burst.releaseMemoryResource(s)
                )
                is None
            )
        assert burst.released == slots

    await _run(body, version)()


async def test_validateBurst_invalid_tokens(autojump_clock):
    """ValidateRequest.cpp validateBurst: a memory identifier token of -2 in any position, one
    token fewer or one more than request.pools, and releaseMemoryResource(-2) each fail with
    the service-specific error INVALID_ARGUMENT."""

    async def body(client: Client) -> None:
        prepared = await client.prepared()
        burst = await client.burst(prepared)
        request = request_for(prepared.model)
        pools = len(request.pool_sizes)
        cases = []
        for index in range(pools):
            slots = _slots(pools)
            slots[index] = -2
            cases.append(slots)
        cases += [[-1] * (pools - 1), [-1] * (pools + 1)]
        for slots in cases:
            answer = await client.call(
                "IBurst",
                "executeSynchronously",
                lambda s=slots: burst.executeSynchronously(request, s, False, NO_DEADLINE, -1),
            )
            assert answer == INVALID, slots
        assert await burst.releaseMemoryResource(-2) == INVALID
        assert burst.released == []

    await _run(body)()


async def test_SampleBurst_one_execution_at_a_time(autojump_clock):
    """SampleDriverAidl.cpp SampleBurst::executeSynchronously: "Burst object supports at most
    one execution at a time" -- a second execution while one is in flight is
    GENERAL_FAILURE; the first completes."""
    client = Client()
    world, kernel = client.world, client.world.kernel
    answers: list[object] = []
    prepared_models: list[AidlPreparedModel] = []
    async with trio.open_nursery() as nursery:
        world.service.start(nursery)

        async def main() -> None:
            prepared = await client.prepared()
            prepared_models.append(prepared)
            burst = await client.burst(prepared)
            request = request_for(prepared.model)
            slots = [-1] * len(request.pool_sizes)

            async def one() -> None:
                answers.append(
                    await burst.executeSynchronously(request, slots, False, NO_DEADLINE, -1)
                )

            kernel.spawn(nursery, one, thread=world.client_proc.new_thread("second"))
            await one()

        kernel.spawn(nursery, main, thread=world.client_proc.main_thread)
        await kernel.run()
        nursery.cancel_scope.cancel()
    assert len(answers) == 2
    assert answers.count(GENERAL_FAILURE) == 1
    _succeeded(next(a for a in answers if a != GENERAL_FAILURE), prepared_models[0])


@pytest.mark.parametrize("mutation", sorted(REQUEST_MUTATIONS))
async def test_ValidateRequest_burst_and_v4_calls_refuse_invalid_requests(autojump_clock, mutation):
    """ValidateRequest.cpp validate(): a mutated request (removeInput / removeOutput) fails
    with INVALID_ARGUMENT on the burst (all tokens -1), and on a v4 driver on
    validateReusableExecution (createReusableExecution refuses it), executeSynchronouslyWithConfig,
    executeFencedWithConfig and the burst's executeSynchronouslyWithConfig, all with empty hints."""

    async def body(client: Client) -> None:
        prepared = await client.prepared()
        burst = await client.burst(prepared)
        for label, request in REQUEST_MUTATIONS[mutation](request_for(prepared.model)):
            slots = [-1] * len(request.pool_sizes)
            answers = [
                await burst.executeSynchronously(request, slots, False, NO_DEADLINE, -1),
                await prepared.createReusableExecution(request, CONFIG),
                await prepared.executeSynchronouslyWithConfig(request, CONFIG, NO_DEADLINE),
                await prepared.executeFencedWithConfig(request, (), CONFIG, NO_DEADLINE, -1),
                await burst.executeSynchronouslyWithConfig(request, slots, CONFIG, NO_DEADLINE),
            ]
            assert answers == [INVALID] * 5, label

    await _run(body)()


# ------------------------------------------------------------------ v4
@pytest.mark.parametrize("measure", [False, True], ids=["no-timing", "timing"])
async def test_GeneratedTestHarness_useConfig(autojump_clock, measure):
    """GeneratedTestHarness.cpp EvaluatePreparedModel with useConfig (AIDL v4): SYNC's
    executeSynchronouslyWithConfig and BURST's executeSynchronouslyWithConfig (config
    {measure, loop timeout, {}, {}}) succeed; FENCED's executeFencedWithConfig is OK and its
    callback's getExecutionInfo says NONE."""

    async def body(client: Client) -> None:
        prepared = await client.prepared()
        request = request_for(prepared.model)
        config = ExecutionConfig(measure_timing=measure)
        answer = await client.call(
            "IPreparedModel",
            "executeSynchronouslyWithConfig",
            lambda: prepared.executeSynchronouslyWithConfig(request, config, NO_DEADLINE),
        )
        _succeeded(answer, prepared, measured=measure)
        burst = await client.burst(prepared)
        slots = _slots(len(request.pool_sizes))
        answer = await client.call(
            "IBurst",
            "executeSynchronouslyWithConfig",
            lambda: burst.executeSynchronouslyWithConfig(request, slots, config, NO_DEADLINE),
        )
        _succeeded(answer, prepared, measured=measure)
        fenced = await client.call(
            "IPreparedModel",
            "executeFencedWithConfig",
            lambda: prepared.executeFencedWithConfig(request, (), config, NO_DEADLINE, -1),
        )
        assert isinstance(fenced, AidlFencedResult)
        launched, after_fence, status = fenced.getExecutionInfo()
        assert status is ErrorStatus.NONE
        assert (launched == NO_TIMING) is not measure
        assert (after_fence == NO_TIMING) is not measure

    await _run(body)()


async def test_GeneratedTestHarness_reusable_execution_runs_twice(autojump_clock):
    """GeneratedTestHarness.cpp EvaluatePreparedModel, reusable (AIDL v4): createReusableExecution
    is OK with an IExecution; its executeSynchronously(kNoDeadline) and executeFenced({},
    kNoDeadline, kNoDuration) succeed, and again ("For reusable execution tests, run the
    execution twice")."""

    async def body(client: Client) -> None:
        prepared = await client.prepared()
        request = request_for(prepared.model)
        execution = await client.call(
            "IPreparedModel",
            "createReusableExecution",
            lambda: prepared.createReusableExecution(request, ExecutionConfig(measure_timing=True)),
        )
        assert isinstance(execution, AidlExecution)
        for _ in range(2):
            answer = await client.call(
                "IExecution",
                "executeSynchronously",
                lambda: execution.executeSynchronously(NO_DEADLINE),
            )
            _succeeded(answer, prepared, measured=True)
            fenced = await client.call(
                "IExecution", "executeFenced", lambda: execution.executeFenced((), NO_DEADLINE, -1)
            )
            assert isinstance(fenced, AidlFencedResult)
            assert fenced.getExecutionInfo()[2] is ErrorStatus.NONE

    await _run(body)()


@pytest.mark.parametrize("mutation", ["mutateOperandTypeTest", "removeOperationTest"])
async def test_ValidateModel_prepareModelWithConfig(autojump_clock, mutation):
    """ValidateModel.cpp validatePrepareModelWithConfig (AIDL v4): an invalid model fails the
    launch with INVALID_ARGUMENT and notifies the callback once with INVALID_ARGUMENT and no
    prepared model."""

    async def body(client: Client) -> None:
        for label, mutant in MODEL_MUTATIONS[mutation](model("add_float32")):
            recorder, ref = client.world.callback()
            launch = await client.call(
                "IDevice",
                "prepareModelWithConfig",
                lambda m=mutant, r=ref: client.device.prepareModelWithConfig(
                    m, PrepareModelConfig(), r
                ),
            )
            await client.world.settle()
            assert launch == INVALID, label
            assert recorder.notifies == [(ErrorStatus.INVALID_ARGUMENT, None)], label

    await _run(body)()


async def test_prepareModelWithConfig_prepares(autojump_clock):
    """VtsHalNeuralnetworks.cpp createPreparedModel on an AIDL v4 device (prepareModelWithConfig
    with {preference, priority, kNoDeadline, {}, {}, token, {}, {}}): the launch is OK and
    the callback hands a prepared model; an unknown extension's hint is ignored."""

    async def body(client: Client) -> None:
        for hints in ((), (TokenValuePair(0x7AAA000B, b"\x01"),)):
            recorder, ref = client.world.callback()
            config = PrepareModelConfig(
                compilation_hints=hints,
                extension_name_to_prefix=(
                    ExtensionNameAndPrefix("vendor.test.test_extension", 0x7AAA),
                ),
            )
            launch = await client.call(
                "IDevice",
                "prepareModelWithConfig",
                lambda c=config, r=ref: client.device.prepareModelWithConfig(
                    model("add_float32"), c, r
                ),
            )
            await client.world.settle()
            assert launch is None
            [(status, prepared)] = recorder.notifies
            assert status is ErrorStatus.NONE
            assert isinstance(prepared, AidlPreparedModel)

    await _run(body)()


async def test_hints_with_a_token_twice_are_invalid_others_ignored(autojump_clock):
    """ExecutionConfig.aidl / PrepareModelConfig.aidl: the hints "must not contain the same
    token twice" (INVALID_ARGUMENT from executeSynchronouslyWithConfig,
    executeFencedWithConfig, createReusableExecution, the burst's WithConfig and
    prepareModelWithConfig, which also notifies); a hint of an extension the driver does
    not support is ignored ("The driver must ignore the corresponding ... hint")."""

    async def body(client: Client) -> None:
        prepared = await client.prepared()
        request = request_for(prepared.model)
        burst = await client.burst(prepared)
        slots = [-1] * len(request.pool_sizes)
        twice = ExecutionConfig(execution_hints=TWICE)
        assert await prepared.executeSynchronouslyWithConfig(request, twice, NO_DEADLINE) == INVALID
        assert (
            await prepared.executeFencedWithConfig(request, (), twice, NO_DEADLINE, -1) == INVALID
        )
        assert await prepared.createReusableExecution(request, twice) == INVALID
        assert (
            await burst.executeSynchronouslyWithConfig(request, slots, twice, NO_DEADLINE)
            == INVALID
        )
        recorder, ref = client.world.callback()
        launch = await client.device.prepareModelWithConfig(
            model("add_float32"), PrepareModelConfig(compilation_hints=TWICE), ref
        )
        await client.world.settle()
        assert launch == INVALID
        assert recorder.notifies == [(ErrorStatus.INVALID_ARGUMENT, None)]
        once = ExecutionConfig(execution_hints=TWICE[:1])
        _succeeded(
            await prepared.executeSynchronouslyWithConfig(request, once, NO_DEADLINE), prepared
        )

    await _run(body)()


async def test_config_loop_timeout_below_minus_one_is_invalid(autojump_clock):
    """ExecutionConfig.aidl loopTimeoutDurationNs ("Other negative values are invalid"), as
    the ``common/aidl`` adapter's makeOptionalDuration: -2 is INVALID_ARGUMENT."""

    async def body(client: Client) -> None:
        prepared = await client.prepared()
        request = request_for(prepared.model)
        config = ExecutionConfig(loop_timeout_duration_ns=-2)
        assert (
            await prepared.executeSynchronouslyWithConfig(request, config, NO_DEADLINE) == INVALID
        )
        assert await prepared.createReusableExecution(request, config) == INVALID

    await _run(body)()


@pytest.mark.parametrize(
    "version", [v for v in AIDL_VERSIONS if v is not V4], ids=lambda v: v.value
)
async def test_v4_methods_unknown_before_v4(autojump_clock, version):
    """GeneratedTestHarness.cpp EvaluatePreparedModel / ValidateRequest.cpp: the v4 cases run
    only when getInterfaceVersion() >= kMinAidlLevelForFL8; a service of an older version
    has no such method, and the binder answers STATUS_UNKNOWN_TRANSACTION."""

    async def body(client: Client) -> None:
        prepared = await client.prepared()
        request = request_for(prepared.model)
        burst = await client.burst(prepared)
        slots = [-1] * len(request.pool_sizes)
        recorder, ref = client.world.callback()
        answers = [
            await prepared.executeSynchronouslyWithConfig(request, CONFIG, NO_DEADLINE),
            await prepared.executeFencedWithConfig(request, (), CONFIG, NO_DEADLINE, -1),
            await prepared.createReusableExecution(request, CONFIG),
            await burst.executeSynchronouslyWithConfig(request, slots, CONFIG, NO_DEADLINE),
            await client.device.prepareModelWithConfig(
                model("add_float32"), PrepareModelConfig(), ref
            ),
        ]
        assert answers == [UnknownTransaction()] * 5
        assert recorder.notifies == []

    await _run(body, version)()


def test_feature_levels_of_the_aidl_versions():
    """hardware/interfaces/neuralnetworks/aidl/utils/include/nnapi/hal/aidl/Utils.h
    aidlVersionToCanonicalVersion (AIDL 1..4 are feature levels 5..8) and the static_asserts
    of packages/modules/NeuralNetworks runtime/NeuralNetworks.cpp
    (ANEURALNETWORKS_FEATURE_LEVEL_5 == 31, _6 == 1000006, _7 == 1000007, _8 == 1000008)."""
    levels = [version.feature_level for version in AIDL_VERSIONS]
    assert levels == [31, 1000006, 1000007, 1000008]
    assert all(v.at_least(HalVersion.V1_3) for v in AIDL_VERSIONS)
