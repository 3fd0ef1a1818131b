"""Fenced executions over real sync fences: the driver's and the runtime's answers
(docs/hal-semantics.md §1.7), mirrored from AOSP at android11-release.

Sources: ``driver/sample/SampleDriver.cpp`` (``SamplePreparedModel::executeFenced``),
``runtime/ExecutionBuilder.cpp`` (``startComputeFenced``, ``computeFenced``,
``getDuration``), ``runtime/Manager.cpp`` (``DriverPreparedModel::executeFenced``),
``runtime/VersionedInterfaces.cpp`` (``VersionedIPreparedModel::executeFenced``),
``runtime/Event.h`` (``SyncFenceEvent``), ``runtime/NeuralNetworks.cpp``
(``ANeuralNetworksExecution_startComputeWithDependencies``), CTS
``runtime/test/TestValidation.cpp`` and VTS ``1.3/vts/functional/GeneratedTestHarness.cpp``.
A device with ``sync_fences`` stands for a driver that returns a real fence (the sample
driver never does); an event made with ``Event.create_from_sync_fence`` stands for another
producer's fence (``ANeuralNetworksEvent_createFromSyncFenceFd``).
"""

from __future__ import annotations

import pytest
import trio

from nnemu.driver import AidlDevice
from nnemu.hal import (
    UINT64_MAX,
    ErrorStatus,
    FenceState,
    HalVersion,
    MeasureTiming,
    ResultCode,
    build_preset,
)
from nnemu.runtime import Compilation, Event, Execution, Runtime
from nnemu.scenario import CpuSpec, DeviceSpec
from nnemu.sim import SyncFence, signalled_fence
from tests.conformance._harness import MS, V12, V13, request_for
from tests.conformance._harness import model as harness_model

OK = ResultCode.NO_ERROR
BIG = build_preset("mobilenet_v1", "float32", {"input_size": 128, "width": 0.5})
"""A model whose work outlasts the binder reply (add_float32's ends before it arrives)."""


async def _compilation(runtime, name: str | None = "npu", m=BIG) -> Compilation:
    """A finished compilation of ``m``: createForDevices([name]), or all devices."""
    code, builder = await runtime.create_model(m)
    assert code is OK
    if name is None:
        code, compilation = await Compilation.create(builder)
    else:
        by_name = {d.name: d for d in await runtime.get_devices()}
        code, compilation = await Compilation.create_for_devices(builder, [by_name[name]])
    assert code is OK
    assert await compilation.finish() is OK
    return compilation


def _execution(compilation: Compilation, *, in_memory: bool = False) -> Execution:
    code, execution = Execution.create(compilation)
    assert code is OK
    assert execution.set_io() is OK
    execution.outputs_in_memory = in_memory
    return execution


async def _run(world, app) -> None:
    """``world.run(app)``, with an AIDL service behind its AIDL IDevice, as ``nnemu run``
    puts it (``_emulator``)."""
    async with trio.open_nursery() as nursery:
        faces = [AidlDevice(s) if s.version.aidl else s for s in world.services]
        runtime = Runtime(
            kernel=world.kernel,
            tracer=world.tracer,
            binder=world.binder,
            process=world.process,
            endpoint=world.endpoint,
            services=faces,
            cpu=CpuSpec(),
            nursery=nursery,
        )
        for service in world.services:
            service.start(nursery)
        world.kernel.spawn(nursery, lambda: app(runtime), thread=world.process.main_thread)
        await world.kernel.run()
        nursery.cancel_scope.cancel()


def _signal_at(kernel, fence: SyncFence, at_ns: int, ok: bool = True) -> None:
    """Signal ``fence`` (in error unless ``ok``) at virtual time ``at_ns``."""
    kernel.call_at(at_ns, lambda: fence.signal(ok))


# ------------------------------------------------------------------ the driver


async def test_SampleDriver_executeFenced_waits_for_its_fences(autojump_clock, driver_world):
    """SampleDriver.cpp SamplePreparedModel::executeFenced: the call waits (syncWait -1) for
    a pending input fence before working, and timingAfterFence runs from its signal."""
    world = driver_world(V13)
    results: list[tuple[object, ...]] = []
    m = harness_model("add_float32")

    async def client():
        prepared = await world.prepared_model(V13, m)
        fence = SyncFence(world.kernel)
        signal_ns = world.kernel.clock_ns + 5 * MS
        _signal_at(world.kernel, fence, signal_ns)
        results.append(
            await world.execute_fenced(
                prepared, request_for(m), wait_for=(fence,), measure=MeasureTiming.YES
            )
        )
        results.append((world.kernel.clock_ns - signal_ns,))

    await world.run(client)
    [(status, callback), (after_signal_ns,)] = results
    assert status is ErrorStatus.NONE
    info_status, launched, fenced = callback.get_execution_info()
    assert info_status is ErrorStatus.NONE
    assert after_signal_ns > 0  # the call returned after the fence signalled
    assert launched.time_in_driver_us - fenced.time_in_driver_us >= 4_900  # 5 ms less the IPC
    assert fenced.time_in_driver_us <= after_signal_ns // 1000


async def test_SampleDriver_executeFenced_fence_in_error(autojump_clock, driver_world):
    """SampleDriver.cpp SamplePreparedModel::executeFenced: an input fence that signals in
    error ("syncWait failed") is GENERAL_FAILURE, with no fence and no callback."""
    world = driver_world(V13)
    results: list[tuple[object, ...]] = []
    m = harness_model("add_float32")

    async def client():
        prepared = await world.prepared_model(V13, m)
        fence = SyncFence(world.kernel)
        _signal_at(world.kernel, fence, world.kernel.clock_ns + MS, ok=False)
        results.append(await world.execute_fenced(prepared, request_for(m), wait_for=(fence,)))

    await world.run(client)
    assert results == [(ErrorStatus.GENERAL_FAILURE, None)]


@pytest.mark.parametrize("measure", [MeasureTiming.NO, MeasureTiming.YES], ids=lambda m: m.name)
async def test_GeneratedTestHarness_fenced_run_waiting_for_the_returned_fence(
    autojump_clock, driver_world, measure
):
    """VTS GeneratedTestHarness.cpp EvaluatePreparedModel, Executor::FENCED: when executeFenced
    returns a sync fence, a second run waiting for it returns NONE, the fence signals, and the
    callback's getExecutionInfo is NONE with UINT64_MAX timing unless measured, else
    timeOnDevice <= timeInDriver."""
    world = driver_world(V13, sync_fences=True)
    results: list[object] = []
    m = BIG

    async def client():
        prepared = await world.prepared_model(V13, m)
        request = request_for(m)
        status, first = await world.execute_fenced(prepared, request, measure=measure)
        results.append((status, first.sync_fence.poll()))
        status, second = await world.execute_fenced(
            prepared, request, wait_for=(first.sync_fence,), measure=measure
        )
        results.append((status, second.get_execution_info()[0]))  # before the fence
        results.append(await second.sync_fence.wait())  # waitForSyncFence
        results.append(second.get_execution_info())

    await world.run(client)
    [first, second, state, (info_status, launched, fenced)] = results
    assert first == (ErrorStatus.NONE, FenceState.ACTIVE)  # returned before the work ended
    assert second == (ErrorStatus.NONE, ErrorStatus.GENERAL_FAILURE)
    assert state is FenceState.SIGNALED
    assert info_status is ErrorStatus.NONE
    if measure is MeasureTiming.NO:
        assert (launched.time_on_device_us, launched.time_in_driver_us) == (UINT64_MAX,) * 2
    else:
        assert launched.time_on_device_us <= launched.time_in_driver_us
        # The second run waited for the first: its time from the fence is shorter.
        assert fenced.time_in_driver_us < launched.time_in_driver_us


async def test_GeneratedTestHarness_fenced_failure_signals_the_fence_in_error(
    autojump_clock, driver_world
):
    """IFencedExecutionCallback.hal / GeneratedTestHarness.cpp: work that fails after a
    returned fence signals that fence in error, and getExecutionInfo gives the failure; a
    run waiting for it fails too (GENERAL_FAILURE) without working."""
    world = driver_world(V13, sync_fences=True)
    results: list[object] = []
    m = BIG

    async def client():
        prepared = await world.prepared_model(V13, m)
        service = world.service
        service.status = service.status.__class__.OFFLINE  # the device fails the work
        status, first = await world.execute_fenced(prepared, request_for(m))
        status2, second = await world.execute_fenced(
            prepared, request_for(m), wait_for=(first.sync_fence,)
        )
        results.append((status, status2))
        results.append((await first.sync_fence.wait(), await second.sync_fence.wait()))
        results.append((first.get_execution_info()[0], second.get_execution_info()[0]))

    await world.run(client)
    assert results == [
        (ErrorStatus.NONE, ErrorStatus.NONE),
        (FenceState.ERROR, FenceState.ERROR),
        (ErrorStatus.DEVICE_UNAVAILABLE, ErrorStatus.GENERAL_FAILURE),
    ]


# ------------------------------------------------------------------ the runtime


async def test_SyncFenceEvent_upstream_failure_fails_the_dependent(autojump_clock, runtime_world):
    """Event.h SyncFenceEvent / ExecutionBuilder.cpp startComputeFenced: a dependency whose sync
    fence signals in error is handed to the driver, which fails the dependent's work: its
    startComputeWithDependencies succeeded, its Event_wait returns OP_FAILED (GENERAL_FAILURE
    from the fenced callback), and getDuration is BAD_STATE."""
    world = runtime_world(DeviceSpec(name="npu", hal_version=V13, sync_fences=True))
    results: list[object] = []

    async def app(runtime):
        compilation = await _compilation(runtime)
        upstream = SyncFence(runtime.kernel)
        _signal_at(runtime.kernel, upstream, runtime.kernel.clock_ns + 2 * MS, ok=False)
        dependency = Event.create_from_sync_fence(runtime, upstream)
        execution = _execution(compilation, in_memory=True)
        assert execution.set_measure_timing(True) is OK
        code, event = await execution.start_compute_with_dependencies([dependency])
        results.append((code, event.sync_fence.poll()))
        results.append(await event.wait())
        results.append(execution.get_duration(0)[0])

    await world.run(app)
    assert results == [(OK, FenceState.ACTIVE), ResultCode.OP_FAILED, ResultCode.BAD_STATE]


@pytest.mark.parametrize("sync_fences", [False, True], ids=["sample", "sync_fences"])
async def test_startComputeFenced_input_fence_in_error_is_OP_FAILED_without_fallback(
    autojump_clock, runtime_world, sync_fences
):
    """ExecutionBuilder.cpp startComputeFenced / Manager.cpp DriverPreparedModel::executeFenced:
    with outputs in pointers the runtime waits for the step's fence before returning; a step
    failed by an input fence in error falls back only after waiting for the input fences
    itself, and one that did not signal is OP_FAILED, returned with no event (Compilation_create,
    so fallback is allowed)."""
    spec = DeviceSpec(name="npu", hal_version=V13, sync_fences=sync_fences)
    world = runtime_world(spec)
    results: list[object] = []

    async def app(runtime):
        compilation = await _compilation(runtime, name=None)
        upstream = signalled_fence(runtime.kernel, ok=False)
        dependency = Event.create_from_sync_fence(runtime, upstream)
        execution = _execution(compilation)
        results.append(await execution.start_compute_with_dependencies([dependency]))
        results.append((execution.fell_back, runtime.cpu_stats.executions))

    await world.run(app)
    assert results == [(ResultCode.OP_FAILED, None), (False, 0)]


async def test_computeFenced_pointer_outputs_wait_for_the_fence(autojump_clock, runtime_world):
    """Manager.cpp DriverPreparedModel::executeFenced: with outputs in pointers
    (setOutput) the call waits (PR) for the driver's fence before returning, so the event
    has signalled; with outputs in memory it returns while the fence is pending."""
    world = runtime_world(DeviceSpec(name="npu", hal_version=V13, sync_fences=True))
    states: list[FenceState] = []

    async def app(runtime):
        compilation = await _compilation(runtime)
        for in_memory in (False, True):
            code, event = await _execution(
                compilation, in_memory=in_memory
            ).start_compute_with_dependencies([])
            assert code is OK
            states.append(event.sync_fence.poll())
            assert await event.wait() is OK

    await world.run(app)
    assert states == [FenceState.SIGNALED, FenceState.ACTIVE]


@pytest.mark.parametrize("version", [V13, HalVersion.AIDL_V4], ids=lambda v: v.value)
async def test_TestValidation_FencedExecution_chain(autojump_clock, runtime_world, version):
    """CTS TestValidation.cpp ValidationTestExecution.FencedExecution: a second execution
    waits for the first one's event (its sync fence); both succeed, and the second's
    work starts only once the first's fence signalled (HIDL 1.3 and AIDL alike)."""
    world = runtime_world(DeviceSpec(name="npu", hal_version=version, sync_fences=True))
    results: list[object] = []

    async def app(runtime):
        compilation = await _compilation(runtime)
        first = _execution(compilation, in_memory=True)
        code1, event1 = await first.start_compute_with_dependencies([])
        second = _execution(compilation, in_memory=True)
        assert second.set_measure_timing(True) is OK
        code2, event2 = await second.start_compute_with_dependencies([event1])
        results.append((code1, code2, event1.sync_fence.poll(), event2.sync_fence.poll()))
        results.append((await event1.wait(), await event2.wait()))
        results.append(event1.sync_fence.signalled_ns < event2.sync_fence.signalled_ns)
        # The FENCED durations run from the input fence's signal: shorter in the driver.
        _, in_driver = second.get_duration(1)
        _, fenced_in_driver = second.get_duration(3)
        results.append(fenced_in_driver < in_driver)

    await _run(world, app)
    assert results == [
        (OK, OK, FenceState.ACTIVE, FenceState.ACTIVE),
        (OK, OK),
        True,
        True,
    ]


async def test_VersionedIPreparedModel_executeFenced_pre13_waits_in_the_runtime(
    autojump_clock, runtime_world
):
    """VersionedInterfaces.cpp VersionedIPreparedModel::executeFenced: a driver older than 1.3
    has no executeFenced, so the runtime waits for the fences itself (one in error:
    OP_FAILED) and then executes synchronously."""
    world = runtime_world(DeviceSpec(name="npu", hal_version=V12))
    results: list[object] = []

    async def app(runtime):
        compilation = await _compilation(runtime)
        pending = SyncFence(runtime.kernel)
        signal_ns = runtime.kernel.clock_ns + 3 * MS
        _signal_at(runtime.kernel, pending, signal_ns)
        code, event = await _execution(compilation).start_compute_with_dependencies(
            [Event.create_from_sync_fence(runtime, pending)]
        )
        results.append((code, runtime.kernel.clock_ns > signal_ns, event.sync_fence))
        failed = Event.create_from_sync_fence(runtime, signalled_fence(runtime.kernel, ok=False))
        results.append(await _execution(compilation).start_compute_with_dependencies([failed]))

    await world.run(app)
    assert results == [(OK, True, None), (ResultCode.OP_FAILED, None)]


async def test_SyncFence_wait_with_timeout(autojump_clock, runtime_world):
    """common/Utils.cpp syncWait: a timeout that passes first answers ACTIVE after exactly that
    long; a fence that signals first wakes the waiter at its signal; 0 polls."""
    world = runtime_world()
    results: list[object] = []

    async def app(runtime):
        kernel = runtime.kernel
        fence = SyncFence(kernel)
        start = kernel.clock_ns
        results.append((await fence.wait(0), kernel.clock_ns - start))
        results.append((await fence.wait(2 * MS), kernel.clock_ns - start))
        _signal_at(kernel, fence, kernel.clock_ns + 3 * MS, ok=False)
        results.append((await fence.wait(10 * MS), kernel.clock_ns - start))
        results.append((await fence.wait(), fence.poll()))

    await world.run(app)
    assert results == [
        (FenceState.ACTIVE, 0),
        (FenceState.ACTIVE, 2 * MS),
        (FenceState.ERROR, 5 * MS),
        (FenceState.ERROR, FenceState.ERROR),
    ]
