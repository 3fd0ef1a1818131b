"""A property test of the drivers' deadline rule, with hypothesis.

Shows: how to state a HAL rule as a property over many generated scenarios, and how to
see what each execution did on the device (``run(..., keep_executions=True,
inspect=...)`` keeps every job in ``service.device.history``). The rule (docs/qos.md,
"Deadlines"): with ``deadline_policy: abort`` the driver refuses or aborts work that
cannot make its deadline, so

1. an execution that left the device with ``NONE`` finished there by its deadline, and
2. ``MISSED_DEADLINE_PERSISTENT`` means "not even an idle device could make it", which
   depends only on the model, the device and the timeout - so an app (one model, one
   timeout) gets it for every execution or for none.

Scenarios come from a small template (one HAL 1.3 NPU, a few apps pinned to it with an
execution timeout, as ``Execution_setTimeout`` requires) whose knobs hypothesis draws:
scheduler, preemption, compute units, jitter, timeouts, priorities, workloads. Runs are
in virtual time, so each takes milliseconds; ``derandomize=True`` makes the examples, and
this script's output, the same on every run.

Run it as a script (``python examples/deadline_property.py``) or with pytest
(``pytest examples/deadline_property.py``).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from nnemu import Emulator, run
from nnemu.driver import Job
from nnemu.hal import ErrorStatus, Priority
from nnemu.report import Report
from nnemu.scenario import (
    AppSpec,
    DeadlinePolicy,
    DeviceCostSpec,
    DeviceSpec,
    ModelSpec,
    PerformanceSpec,
    PerfSpec,
    PreemptionKind,
    Scenario,
    SchedulerKind,
    WorkloadKind,
    WorkloadSpec,
)

EXAMPLES = 40

# A small MobileNet: about 0.1-0.5 ms on the NPU, so timeouts of a fraction of a ms to a
# few ms give every outcome (refused, aborted, finished in time).
MODEL = ModelSpec(
    name="net",
    preset="mobilenet_v1",
    dtype="quant8",
    params=(("input_size", 64), ("width", 0.5)),
)

workloads = st.one_of(
    st.builds(
        lambda n, period: WorkloadSpec(kind=WorkloadKind.PERIODIC, executions=n, period_ms=period),
        st.integers(1, 8),
        st.sampled_from([0.1, 0.5, 2.0]),
    ),
    st.builds(
        lambda n, size: WorkloadSpec(
            kind=WorkloadKind.BURST, executions=n, burst_size=size, burst_interval_ms=3.0
        ),
        st.integers(1, 8),
        st.integers(2, 4),
    ),
)


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    """One NPU with an aborting deadline policy and 1-3 apps pinned to it with timeouts."""
    npu = DeviceSpec(
        name="npu",
        performance=PerformanceSpec(quant8=PerfSpec(exec_time=draw(st.sampled_from([0.1, 0.5])))),
        compute_units=draw(st.integers(1, 2)),
        cost=DeviceCostSpec(launch_us=20, jitter=draw(st.sampled_from([0.0, 0.3]))),
        scheduler=draw(st.sampled_from(list(SchedulerKind))),
        preemption=draw(st.sampled_from(list(PreemptionKind))),
        deadline_policy=DeadlinePolicy.ABORT,
    )
    apps = tuple(
        AppSpec(
            name=f"app{i}",
            uid=10000 + draw(st.integers(0, 1)),  # sometimes one uid, sometimes two
            model="net",
            devices=("npu",),
            priority=draw(st.sampled_from(list(Priority))),
            execution_timeout_ms=draw(st.sampled_from([0.05, 0.3, 1.0, 3.0])),
            threads=draw(st.integers(1, 3)),
            workload=draw(workloads),
        )
        for i in range(draw(st.integers(1, 3)))
    )
    return Scenario(
        name="deadline_property",
        seed=draw(st.integers(0, 1000)),
        devices=(npu,),
        models=(MODEL,),
        apps=apps,
    )


def run_keeping_jobs(scenario: Scenario) -> tuple[Report, list[Job]]:
    """Run ``scenario``; its report and every execution that reached the NPU."""
    jobs: list[Job] = []

    def keep(emulator: Emulator) -> None:
        for service in emulator.services:
            jobs.extend(service.device.history or [])

    return run(scenario, keep_executions=True, inspect=keep), jobs


examples_run = 0


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None)
@given(scenarios())
def test_the_driver_keeps_deadlines(scenario: Scenario) -> None:
    """Executions that succeed meet their deadline; PERSISTENT misses are all or nothing."""
    global examples_run
    examples_run += 1
    report, jobs = run_keeping_jobs(scenario)
    for job in jobs:
        assert job.deadline_ns is not None  # every app sets a timeout
        if job.status is ErrorStatus.NONE:
            assert job.finished_ns is not None
            assert job.finished_ns <= job.deadline_ns, job
    for name, app in report.data["apps"].items():
        persistent = app["errors"].get("MISSED_DEADLINE_PERSISTENT", 0)
        assert persistent in (0, app["submitted"]), (name, app)


if __name__ == "__main__":
    test_the_driver_keeps_deadlines()
    print(f"property held for {examples_run} examples")
