"""Build a scenario in Python instead of YAML, run it, and check the report.

Shows: the frozen attrs classes of ``nnemu.scenario`` (the same fields as the YAML keys,
docs/scenario-format.md), ``attrs.evolve`` to derive a variant, ``nnemu.run``
(virtual time: the figures are the same on every machine), and reading ``report.data``
(docs/report-schema.md) and ``report.expectations``.

The scenario: a HAL 1.3 NPU that runs a quantized MobileNet, a 30 fps camera app, and a
HAL 1.2 GPU beside it. Then the same scenario with the NPU at twice the execution time.

Run it: ``python examples/build_scenario_in_code.py``.
"""

from __future__ import annotations

import attrs

from nnemu import run
from nnemu.hal import HalVersion, Priority
from nnemu.scenario import (
    AppSpec,
    DeviceCostSpec,
    DeviceSpec,
    ModelSpec,
    PerformanceSpec,
    PerfSpec,
    Scenario,
    WorkloadKind,
    WorkloadSpec,
    parse_expectation,
)

npu = DeviceSpec(
    name="npu",
    hal_version=HalVersion.V1_3,
    performance=PerformanceSpec(
        float32=PerfSpec(exec_time=0.3, power_usage=0.4),
        quant8=PerfSpec(exec_time=0.1, power_usage=0.2),
    ),
    cost=DeviceCostSpec(prepare_ms=20, launch_us=40),
)
gpu = DeviceSpec(
    name="gpu",
    hal_version=HalVersion.V1_2,
    performance=PerformanceSpec(quant8=PerfSpec(exec_time=0.5, power_usage=0.5)),
)
scenario = Scenario(
    name="built_in_code",
    seed=1,
    devices=(npu, gpu),
    models=(ModelSpec(name="mobilenet", preset="mobilenet_v1", dtype="quant8"),),
    apps=(
        AppSpec(
            name="camera",
            uid=10050,
            model="mobilenet",
            priority=Priority.HIGH,
            workload=WorkloadSpec(kind=WorkloadKind.PERIODIC, period_ms=33.3, executions=30),
        ),
    ),
    # Expectations are parsed from the same text as the YAML's expect: lines.
    expect=(
        parse_expectation("apps.camera.completed == 30"),
        parse_expectation("devices.npu.executions == 30"),
    ),
)


def summary(title: str, report_data: dict) -> None:
    """Print a few figures of one report."""
    camera = report_data["apps"]["camera"]
    latency = camera["latency_ms"]
    print(f"{title}:")
    print(f"  camera completed {camera['completed']}/{camera['submitted']}")
    print(f"  latency p50 {latency['p50']:.3f} ms, p99 {latency['p99']:.3f} ms")
    for name, device in report_data["devices"].items():
        print(
            f"  {name:16} {device['executions']:3} executions, busy {device['busy_fraction']:.1%}"
        )


report = run(scenario)
assert report.passed, [e.text for e in report.expectations if not e.passed]
# The runtime picked the NPU (lowest exec_time for quant8): the GPU stayed idle.
assert report.data["devices"]["gpu"]["executions"] == 0
summary("as built", report.data)

# A variant: the same NPU, twice as slow. Frozen values change only through evolve.
slow_npu = attrs.evolve(
    npu, performance=attrs.evolve(npu.performance, quant8=PerfSpec(exec_time=0.2))
)
slower = run(attrs.evolve(scenario, devices=(slow_npu, gpu)))
assert slower.passed
summary("NPU twice as slow", slower.data)

ratio = (
    slower.data["apps"]["camera"]["latency_ms"]["p50"]
    / report.data["apps"]["camera"]["latency_ms"]["p50"]
)
print(f"p50 latency ratio: {ratio:.2f}")
for result in report.expectations:
    print(f"expectation {result.text!r}: {'held' if result.passed else 'failed'}")
