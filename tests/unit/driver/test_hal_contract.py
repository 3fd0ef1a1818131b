"""The driver service against the HAL launch/notify contract (docs/hal-semantics.md §1.1, §4)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import attrs
import pytest

from nnemu.driver import PreparedModel
from nnemu.hal import (
    NO_TIMING,
    UINT64_MAX,
    DeviceStatus,
    DeviceType,
    ErrorStatus,
    HalVersion,
    MeasureTiming,
    Model,
    OperationType,
    OutputShape,
    Request,
    Timing,
    build_preset,
)
from nnemu.runtime import build_request
from nnemu.sim import SimThread
from tests import worlds
from tests.worlds import execute_call, prepare_call

US = 1_000
MS = 1_000_000
LATENCY = 50 * US
ONEWAY_STUB = 20 * US
VALIDATE = 2 * US  # one operation
PREPARE = 5_200 * US  # prepare_ms 5 + 0.2 per op, one op
LAUNCH = 20 * US
ADD_OP = 1 * US  # 1000 elements at 0.05 ns, rounded up to the 1 µs floor

Serve = Callable[[], Awaitable[object]]

VERSIONS = [version for version in HalVersion if not version.aidl]  # the HIDL family
PREPARE_METHODS = {
    HalVersion.V1_0: "prepareModel",
    HalVersion.V1_1: "prepareModel_1_1",
    HalVersion.V1_2: "prepareModel_1_2",
    HalVersion.V1_3: "prepareModel_1_3",
}
PREPARE_NOTIFY = {
    HalVersion.V1_0: "notify",
    HalVersion.V1_1: "notify",
    HalVersion.V1_2: "notify_1_2",
    HalVersion.V1_3: "notify_1_3",
}
EXECUTE_METHODS = {
    HalVersion.V1_0: "execute",
    HalVersion.V1_2: "execute_1_2",
    HalVersion.V1_3: "execute_1_3",
}
EXECUTE_NOTIFY = {
    HalVersion.V1_0: "notify",
    HalVersion.V1_2: "notify_1_2",
    HalVersion.V1_3: "notify_1_3",
}


def _prepare_cases() -> list[tuple[HalVersion, HalVersion]]:
    """(service version, prepare entry point version) for every entry point a service has."""
    return [(s, m) for s in VERSIONS for m in VERSIONS if s.at_least(m)]


def _execute_cases() -> list[tuple[HalVersion, HalVersion]]:
    return [(s, m) for s in VERSIONS for m in EXECUTE_METHODS if s.at_least(m)]


def _id(case: tuple[HalVersion, HalVersion]) -> str:
    return f"service{case[0].value}-{case[1].value}"


class RecordingSink:
    """A trace sink that keeps begin marks."""

    def __init__(self) -> None:
        self.begins: list[tuple[int, SimThread, str]] = []

    def process(self, pid: int, name: str) -> None:
        pass

    def begin(self, ts_ns: int, thread: SimThread, name: str) -> None:
        self.begins.append((ts_ns, thread, name))

    def end(self, ts_ns: int, thread: SimThread) -> None:
        pass

    def close(self) -> None:
        pass


class DriverWorld(worlds.DriverWorld):
    """The shared driver world, traced into a ``RecordingSink``, with an ADD model to prepare."""

    def __init__(self, version: HalVersion = HalVersion.V1_3, **spec_fields: object) -> None:
        self.sink = RecordingSink()
        super().__init__(version, sinks=[self.sink], **spec_fields)
        self.model = build_preset("add", "float32", {})

    async def answer(self, method: str, serve: Serve, after_ns: int = 0) -> object:
        """Run one client that waits ``after_ns`` then makes one IDevice ``method`` call; its answer."""
        answers: list[object] = []

        async def client() -> None:
            if after_ns:
                await self.kernel.sleep(after_ns)
            answers.append(await self.call(method, serve))

        await self.run(client)
        [answer] = answers
        return answer

    async def answer_prepared(
        self, method: str, make_serve: Callable[[PreparedModel], Serve]
    ) -> object:
        """Run one client that prepares the model, then makes one IPreparedModel ``method`` call
        served by ``make_serve(prepared)``; its answer."""
        answers: list[object] = []

        async def client() -> None:
            prepared = await _prepare(self)
            answers.append(await self.call(method, make_serve(prepared), "IPreparedModel"))

        await self.run(client)
        [answer] = answers
        return answer

    def notify_marks(self) -> list[str]:
        return [
            name
            for _, _, name in self.sink.begins
            if "Callback::" in name and name.endswith("::server")
        ]


def _invalid_model(model: Model) -> Model:
    """The model with no outputs (invalid under every HAL version)."""
    return attrs.evolve(model, main=attrs.evolve(model.main, output_indexes=()))


def _invalid_request(request: Request) -> Request:
    """The request with its last input dropped (VTS ValidationTest's removeInput)."""
    return attrs.evolve(request, inputs=request.inputs[:-1])


async def _prepare(world: DriverWorld) -> PreparedModel:
    """Prepare the world's model through the service's newest entry point and return it."""
    recorder, ref = world.callback()
    launch = await world.call(
        PREPARE_METHODS[world.service.version],
        prepare_call(world.service, world.service.version, world.model, ref),
    )
    assert launch is ErrorStatus.NONE
    await world.kernel.sleep(20 * MS)
    [(_, (status, prepared))] = recorder.calls
    assert status is ErrorStatus.NONE
    assert isinstance(prepared, PreparedModel)
    return prepared


# ------------------------------------------------------------------ prepare


@pytest.mark.parametrize(
    ("service_version", "version"), _prepare_cases(), ids=map(_id, _prepare_cases())
)
async def test_prepare_valid_launches_none_then_notifies_once(
    autojump_clock, service_version, version
):
    """A valid prepareModel* returns NONE at once and notifies NONE with a model exactly once."""
    world = DriverWorld(service_version)
    recorder, ref = world.callback()
    launches: list[tuple[object, int]] = []

    async def client():
        launch = await world.call(
            PREPARE_METHODS[version], prepare_call(world.service, version, world.model, ref)
        )
        launches.append((launch, world.kernel.task_now_ns()))

    await world.run(client)
    assert launches == [(ErrorStatus.NONE, 2 * LATENCY + VALIDATE)]
    [(when, (status, prepared))] = recorder.calls
    assert status is ErrorStatus.NONE
    assert isinstance(prepared, PreparedModel)
    assert prepared.version is version
    assert when == LATENCY + VALIDATE + PREPARE + LATENCY + ONEWAY_STUB
    assert world.notify_marks() == [
        f"HIDL::IPreparedModelCallback::{PREPARE_NOTIFY[version]}::server"
    ]
    assert world.service.prepared_models == 1


@pytest.mark.parametrize(
    ("service_version", "version"), _prepare_cases(), ids=map(_id, _prepare_cases())
)
async def test_prepare_invalid_model_notifies_and_returns_invalid_argument(
    autojump_clock, service_version, version
):
    """An invalid model makes prepareModel* return INVALID_ARGUMENT and notify it once, null model."""
    world = DriverWorld(service_version)
    recorder, ref = world.callback()
    launch = await world.answer(
        PREPARE_METHODS[version],
        prepare_call(world.service, version, _invalid_model(world.model), ref),
    )
    assert launch is ErrorStatus.INVALID_ARGUMENT
    assert recorder.calls == [
        (LATENCY + VALIDATE + LATENCY + ONEWAY_STUB, (ErrorStatus.INVALID_ARGUMENT, None))
    ]
    assert world.service.prepared_models == 0


PREFERENCE_CASES = [
    (s, m, p) for s, m in _prepare_cases() if m is not HalVersion.V1_0 for p in (-1, 3)
]


@pytest.mark.parametrize(
    ("service_version", "version", "preference"),
    PREFERENCE_CASES,
    ids=[f"{_id((s, m))}-pref{p}" for s, m, p in PREFERENCE_CASES],
)
async def test_prepare_bad_preference_is_invalid_argument(
    autojump_clock, service_version, version, preference
):
    """A preference outside 0..2 makes prepareModel_1_x return and notify INVALID_ARGUMENT once."""
    world = DriverWorld(service_version)
    recorder, ref = world.callback()
    launch = await world.answer(
        PREPARE_METHODS[version],
        prepare_call(world.service, version, world.model, ref, preference=preference),
    )
    assert launch is ErrorStatus.INVALID_ARGUMENT
    assert [args for _, args in recorder.calls] == [(ErrorStatus.INVALID_ARGUMENT, None)]


@pytest.mark.parametrize("priority", [-1, 3])
async def test_prepare_bad_priority_is_invalid_argument(autojump_clock, priority):
    """A priority outside LOW..HIGH makes prepareModel_1_3 return and notify INVALID_ARGUMENT once."""
    world = DriverWorld()
    recorder, ref = world.callback()
    launch = await world.answer(
        "prepareModel_1_3",
        prepare_call(world.service, HalVersion.V1_3, world.model, ref, priority=priority),
    )
    assert launch is ErrorStatus.INVALID_ARGUMENT
    assert [args for _, args in recorder.calls] == [(ErrorStatus.INVALID_ARGUMENT, None)]


@pytest.mark.parametrize(
    ("service_version", "version"), _prepare_cases(), ids=map(_id, _prepare_cases())
)
async def test_prepare_null_callback_is_invalid_argument_without_notify(
    autojump_clock, service_version, version
):
    """prepareModel* with a null callback returns INVALID_ARGUMENT and notifies nobody."""
    world = DriverWorld(service_version)
    launch = await world.answer(
        PREPARE_METHODS[version], prepare_call(world.service, version, world.model, None)
    )
    assert launch is ErrorStatus.INVALID_ARGUMENT
    assert world.notify_marks() == []


async def test_prepare_deadline_passed_notifies_missed_deadline_persistent(autojump_clock):
    """prepareModel_1_3 with a deadline already passed returns NONE and notifies MISSED_DEADLINE_PERSISTENT."""
    world = DriverWorld()
    recorder, ref = world.callback()
    launch = await world.answer(
        "prepareModel_1_3",
        prepare_call(world.service, HalVersion.V1_3, world.model, ref, deadline_ns=MS),
        after_ns=MS,
    )
    assert launch is ErrorStatus.NONE
    assert recorder.calls == [
        (
            MS + LATENCY + VALIDATE + LATENCY + ONEWAY_STUB,
            (ErrorStatus.MISSED_DEADLINE_PERSISTENT, None),
        )
    ]
    assert world.service.prepared_models == 0


async def test_prepare_deadline_in_the_future_succeeds(autojump_clock):
    """prepareModel_1_3 with a generous deadline prepares normally."""
    world = DriverWorld()
    recorder, ref = world.callback()

    async def client():
        assert (
            await world.call(
                "prepareModel_1_3",
                prepare_call(
                    world.service, HalVersion.V1_3, world.model, ref, deadline_ns=100 * MS
                ),
            )
            is ErrorStatus.NONE
        )

    await world.run(client)
    [(_, (status, prepared))] = recorder.calls
    assert status is ErrorStatus.NONE
    assert prepared is not None


@pytest.mark.parametrize("method", ["prepareModelFromCache", "prepareModelFromCache_1_3"])
async def test_prepare_from_cache_is_general_failure(autojump_clock, method):
    """prepareModelFromCache* (caching unsupported) returns and notifies GENERAL_FAILURE once."""
    world = DriverWorld()
    recorder, ref = world.callback()
    launches: list[object] = []
    service = world.service

    async def client():
        async def serve():
            if method == "prepareModelFromCache":
                return await service.prepareModelFromCache((), (), b"\0" * 32, ref)
            return await service.prepareModelFromCache_1_3(None, (), (), b"\0" * 32, ref)

        launches.append(await world.call(method, serve))

    await world.run(client)
    assert launches == [ErrorStatus.GENERAL_FAILURE]
    assert [args for _, args in recorder.calls] == [(ErrorStatus.GENERAL_FAILURE, None)]
    expected = "notify_1_3" if method.endswith("_1_3") else "notify_1_2"
    assert world.notify_marks() == [f"HIDL::IPreparedModelCallback::{expected}::server"]


async def test_partial_driver_rejects_unsupported_model_through_callback(autojump_clock):
    """A partial driver reports False ops, and prepare launches NONE then notifies INVALID_ARGUMENT."""
    world = DriverWorld(supported_operations=(OperationType.CONV_2D,))
    recorder, ref = world.callback()
    answers: list[object] = []
    service = world.service

    async def client():
        answers.append(
            await world.call(
                "getSupportedOperations_1_3",
                lambda: service.getSupportedOperations(world.model, HalVersion.V1_3),
            )
        )
        answers.append(
            await world.call(
                "prepareModel_1_3", prepare_call(service, HalVersion.V1_3, world.model, ref)
            )
        )

    await world.run(client)
    assert answers == [(ErrorStatus.NONE, (False,)), ErrorStatus.NONE]
    assert [args for _, args in recorder.calls] == [(ErrorStatus.INVALID_ARGUMENT, None)]


# ------------------------------------------------------------------ getters


async def test_getters_answer_like_an_available_device(autojump_clock):
    """getCapabilities/getSupportedOperations/getVersionString/getType/getStatus answer as specified."""
    world = DriverWorld(type=DeviceType.GPU, version_string="drv-7")
    service = world.service
    answers: dict[str, object] = {}

    async def client():
        answers["caps"] = await world.call("getCapabilities_1_3", service.getCapabilities)
        answers["ops"] = await world.call(
            "getSupportedOperations_1_3",
            lambda: service.getSupportedOperations(world.model, HalVersion.V1_3),
        )
        answers["bad_ops"] = await world.call(
            "getSupportedOperations_1_3",
            lambda: service.getSupportedOperations(_invalid_model(world.model), HalVersion.V1_3),
        )
        answers["version"] = await world.call("getVersionString", service.getVersionString)
        answers["type"] = await world.call("getType", service.getType)
        answers["status"] = await world.call("getStatus", service.getStatus)
        answers["ext"] = await world.call("getSupportedExtensions", service.getSupportedExtensions)
        answers["cache"] = await world.call(
            "getNumberOfCacheFilesNeeded", service.getNumberOfCacheFilesNeeded
        )

    await world.run(client)
    assert answers["caps"] == (ErrorStatus.NONE, service.capabilities)
    assert answers["ops"] == (ErrorStatus.NONE, (True,))
    assert answers["bad_ops"] == (ErrorStatus.INVALID_ARGUMENT, ())
    assert answers["version"] == (ErrorStatus.NONE, "drv-7")
    assert answers["type"] == (ErrorStatus.NONE, DeviceType.GPU)
    assert answers["status"] is DeviceStatus.AVAILABLE
    assert answers["ext"] == (ErrorStatus.NONE, ())
    assert answers["cache"] == (ErrorStatus.NONE, 0, 0)


def test_capabilities_are_positive_and_have_no_subgraph_entry():
    """The capabilities table has only positive figures and no SUBGRAPH entry (VTS BasicTests)."""
    world = DriverWorld()
    caps = world.service.capabilities
    kinds = [kind for kind, _ in caps.operand_performance]
    assert "SUBGRAPH" not in [kind.name for kind in kinds]
    assert kinds == sorted(kinds)
    for _, info in caps.operand_performance:
        assert info.exec_time > 0
        assert info.power_usage > 0


# ------------------------------------------------------------------ execute


@pytest.mark.parametrize(
    ("service_version", "version"), _execute_cases(), ids=map(_id, _execute_cases())
)
async def test_execute_valid_launches_none_then_notifies_once(
    autojump_clock, service_version, version
):
    """A valid execute* returns NONE at once and notifies NONE with output shapes exactly once."""
    world = DriverWorld(service_version)
    recorder, ref = world.callback()
    result: list[tuple[object, int, int]] = []

    async def client():
        prepared = await _prepare(world)
        request = build_request(world.model)
        start = world.kernel.task_now_ns()
        launch = await world.call(
            EXECUTE_METHODS[version],
            execute_call(prepared, version, request, ref),
            "IPreparedModel",
        )
        result.append((launch, start, world.kernel.task_now_ns() - start))

    await world.run(client)
    [(launch, start, took)] = result
    assert launch is ErrorStatus.NONE
    assert took == 2 * LATENCY + VALIDATE
    [(when, (status, shapes, timing))] = recorder.calls
    assert status is ErrorStatus.NONE
    assert shapes == (OutputShape((1, 1000)),)
    assert timing == NO_TIMING
    assert when - start == LATENCY + VALIDATE + LAUNCH + ADD_OP + LATENCY + ONEWAY_STUB
    marks = [m for m in world.notify_marks() if "IExecutionCallback" in m]
    assert marks == [f"HIDL::IExecutionCallback::{EXECUTE_NOTIFY[version]}::server"]


@pytest.mark.parametrize(
    ("service_version", "version"), _execute_cases(), ids=map(_id, _execute_cases())
)
async def test_execute_invalid_request_notifies_and_returns_invalid_argument(
    autojump_clock, service_version, version
):
    """An invalid request makes execute* return INVALID_ARGUMENT and notify it once, no shapes/timing."""
    world = DriverWorld(service_version)
    recorder, ref = world.callback()
    request = _invalid_request(build_request(world.model))
    launch = await world.answer_prepared(
        EXECUTE_METHODS[version],
        lambda prepared: execute_call(prepared, version, request, ref, measure=MeasureTiming.YES),
    )
    assert launch is ErrorStatus.INVALID_ARGUMENT
    assert [args for _, args in recorder.calls] == [(ErrorStatus.INVALID_ARGUMENT, (), NO_TIMING)]


@pytest.mark.parametrize(
    ("service_version", "version"), _execute_cases(), ids=map(_id, _execute_cases())
)
async def test_execute_null_callback_is_invalid_argument_without_notify(
    autojump_clock, service_version, version
):
    """execute* with a null callback returns INVALID_ARGUMENT and notifies nobody."""
    world = DriverWorld(service_version)
    launch = await world.answer_prepared(
        EXECUTE_METHODS[version],
        lambda prepared: execute_call(prepared, version, build_request(world.model), None),
    )
    assert launch is ErrorStatus.INVALID_ARGUMENT
    assert [m for m in world.notify_marks() if "IExecutionCallback" in m] == []


async def test_execute_deadline_passed_notifies_missed_deadline_persistent(autojump_clock):
    """execute_1_3 with a deadline already passed returns NONE and notifies MISSED_DEADLINE_PERSISTENT."""
    world = DriverWorld()
    recorder, ref = world.callback()
    launch = await world.answer_prepared(
        "execute_1_3",
        lambda prepared: execute_call(
            prepared,
            HalVersion.V1_3,
            build_request(world.model),
            ref,
            deadline_ns=world.kernel.task_now_ns(),
        ),
    )
    assert launch is ErrorStatus.NONE
    assert [args for _, args in recorder.calls] == [
        (ErrorStatus.MISSED_DEADLINE_PERSISTENT, (), NO_TIMING)
    ]


async def _measured_execute_1_3() -> tuple[object, ...]:
    """Prepare the ADD model, execute_1_3 it with measure YES; the one notify's arguments."""
    world = DriverWorld()
    recorder, ref = world.callback()
    await world.answer_prepared(
        "execute_1_3",
        lambda prepared: execute_call(
            prepared, HalVersion.V1_3, build_request(world.model), ref, measure=MeasureTiming.YES
        ),
    )
    [(_, notify)] = recorder.calls
    return notify


async def test_execute_1_3_measure_yes_reports_timing(autojump_clock):
    """execute_1_3 with measure YES notifies time on device and time in driver (entry → notify)."""
    status, _, timing = await _measured_execute_1_3()
    assert status is ErrorStatus.NONE
    on_device = (LAUNCH + ADD_OP) // US
    assert timing == Timing(on_device, (VALIDATE + LAUNCH + ADD_OP) // US)


async def test_execute_1_3_measure_yes_timing_is_known(autojump_clock):
    """execute_1_3 with measure YES reports known timing with time on device <= time in driver."""
    status, _, timing = await _measured_execute_1_3()
    assert status is ErrorStatus.NONE
    assert timing.time_on_device_us == (LAUNCH + ADD_OP) // US
    assert timing.time_on_device_us <= timing.time_in_driver_us < UINT64_MAX


# ------------------------------------------------------------------ executeSynchronously


@pytest.mark.parametrize("method", ["executeSynchronously", "executeSynchronously_1_3"])
async def test_execute_synchronously_invalid_request(autojump_clock, method):
    """executeSynchronously* with an invalid request returns INVALID_ARGUMENT, no shapes, no timing."""
    world = DriverWorld()
    request = _invalid_request(build_request(world.model))

    def make_serve(prepared: PreparedModel) -> Serve:
        if method == "executeSynchronously":
            return lambda: prepared.executeSynchronously(request, MeasureTiming.YES)
        return lambda: prepared.executeSynchronously_1_3(request, MeasureTiming.YES, None, None)

    status, shapes, timing = await world.answer_prepared(method, make_serve)
    assert status is ErrorStatus.INVALID_ARGUMENT
    assert shapes == ()
    assert timing == Timing(UINT64_MAX, UINT64_MAX)


@pytest.mark.parametrize("measure", [MeasureTiming.NO, MeasureTiming.YES])
async def test_execute_synchronously_1_3_valid(autojump_clock, measure):
    """executeSynchronously_1_3 returns NONE with shapes, timing only when measured, in exact time."""
    world = DriverWorld()
    answers: list[tuple[object, int]] = []

    async def client():
        prepared = await _prepare(world)
        request = build_request(world.model)
        start = world.kernel.task_now_ns()
        answer = await world.call(
            "executeSynchronously_1_3",
            lambda: prepared.executeSynchronously_1_3(request, measure, None, None),
            "IPreparedModel",
        )
        answers.append((answer, world.kernel.task_now_ns() - start))

    await world.run(client)
    [((status, shapes, timing), took)] = answers
    assert status is ErrorStatus.NONE
    assert shapes == (OutputShape((1, 1000)),)
    assert took == 2 * LATENCY + VALIDATE + LAUNCH + ADD_OP
    if measure is MeasureTiming.YES:
        assert timing == Timing((LAUNCH + ADD_OP) // US, (VALIDATE + LAUNCH + ADD_OP) // US)
    else:
        assert timing == NO_TIMING


async def test_execute_synchronously_1_3_deadline_passed(autojump_clock):
    """executeSynchronously_1_3 with a deadline already passed returns MISSED_DEADLINE_PERSISTENT."""
    world = DriverWorld()

    def make_serve(prepared: PreparedModel) -> Serve:
        now = world.kernel.task_now_ns()
        request = build_request(world.model)
        return lambda: prepared.executeSynchronously_1_3(request, MeasureTiming.YES, now, None)

    answer = await world.answer_prepared("executeSynchronously_1_3", make_serve)
    assert answer == (ErrorStatus.MISSED_DEADLINE_PERSISTENT, (), NO_TIMING)


# ------------------------------------------------------------------ executeFenced


async def test_execute_fenced_null_wait_fence_is_invalid_argument(autojump_clock):
    """executeFenced with a null wait-for fence returns INVALID_ARGUMENT, no fence, no callback."""
    world = DriverWorld()
    request = build_request(world.model)
    answer = await world.answer_prepared(
        "executeFenced",
        lambda prepared: (
            lambda: prepared.executeFenced(request, [None], MeasureTiming.NO, None, None, None)
        ),
    )
    assert answer == (ErrorStatus.INVALID_ARGUMENT, None)


async def test_execute_fenced_invalid_request_is_invalid_argument(autojump_clock):
    """executeFenced with an invalid request returns INVALID_ARGUMENT and a null callback."""
    world = DriverWorld()
    request = _invalid_request(build_request(world.model))
    answer = await world.answer_prepared(
        "executeFenced",
        lambda prepared: (
            lambda: prepared.executeFenced(request, (), MeasureTiming.NO, None, None, None)
        ),
    )
    assert answer == (ErrorStatus.INVALID_ARGUMENT, None)


async def test_execute_fenced_valid_reports_through_the_fenced_callback(autojump_clock):
    """A valid executeFenced runs inside the call and its callback reports NONE and measured timing."""
    world = DriverWorld()
    answers: list[tuple[object, int]] = []

    async def client():
        prepared = await _prepare(world)
        start = world.kernel.task_now_ns()
        answer = await world.call(
            "executeFenced",
            lambda: prepared.executeFenced(
                build_request(world.model), (), MeasureTiming.YES, None, None, None
            ),
            "IPreparedModel",
        )
        answers.append((answer, world.kernel.task_now_ns() - start))

    await world.run(client)
    [((status, fenced), took)] = answers
    assert status is ErrorStatus.NONE
    assert fenced is not None
    assert took == 2 * LATENCY + VALIDATE + LAUNCH + ADD_OP
    info_status, launched, _ = fenced.get_execution_info()
    assert info_status is ErrorStatus.NONE
    assert launched == Timing((LAUNCH + ADD_OP) // US, (VALIDATE + LAUNCH + ADD_OP) // US)
