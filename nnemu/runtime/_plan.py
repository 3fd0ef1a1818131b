"""Partitioning: which device runs which operation, and the steps of an execution plan.

Mirrors the R runtime's ``ExecutionPlan`` / ``partitionTheWork`` (docs/hal-semantics.md §5):
per operation, the supporting device with the best figure for the preference
(execTime, or powerUsage for LOW_POWER); ties go to the CPU; all operations on one
device make a single step, otherwise consecutive operations on one device form a step.
"""

from __future__ import annotations

import attrs

from nnemu.hal import (
    Capabilities,
    DataLocation,
    ExecutionPreference,
    Model,
    Operand,
    OperandLifeTime,
    Operation,
    OperationType,
    PerformanceInfo,
    Subgraph,
    operation_work,
)
from nnemu.runtime._devices import RuntimeDevice


@attrs.frozen
class Step:
    """Operations of the model that run on one device, as a model of their own."""

    device: RuntimeDevice
    """Where the step runs."""
    operations: tuple[int, ...]
    """Indexes of the main subgraph's operations in this step."""
    model: Model
    """The step's sub-model (the whole model for a single-step plan)."""


def operation_performance(
    capabilities: Capabilities, model: Model, op: Operation
) -> PerformanceInfo:
    """The performance figures a device's ``capabilities`` give operation ``op`` of ``model``'s
    main subgraph: ``IF``'s and ``WHILE``'s own, else those of its first input's type."""
    if op.type is OperationType.IF:
        return capabilities.if_performance
    if op.type is OperationType.WHILE:
        return capabilities.while_performance
    return capabilities.performance(
        operation_work(model, model.main, op).first_input_type,
        relaxed=model.relax_computation_float32_to_float16,
    )


def choose_devices(
    model: Model,
    devices: list[RuntimeDevice],
    supported: dict[str, tuple[bool, ...]],
    preference: ExecutionPreference,
) -> list[RuntimeDevice | None]:
    """For each main-subgraph operation, the device that should run it (None: nobody can)."""
    chosen: list[RuntimeDevice | None] = []
    for index, op in enumerate(model.main.operations):
        best: RuntimeDevice | None = None
        best_figure = 0.0
        for device in devices:
            if not supported[device.name][index]:
                continue
            info = operation_performance(device.capabilities, model, op)
            figure = device.performance(preference, info)
            if best is None or figure < best_figure or (figure == best_figure and device.is_cpu):
                best, best_figure = device, figure
        chosen.append(best)
    return chosen


def submodel(model: Model, op_indexes: tuple[int, ...], name: str) -> Model:
    """The model made of ``op_indexes`` of the main subgraph, with boundary operands as I/O."""
    main = model.main
    inside = set(op_indexes)
    written_inside: set[int] = set()
    for i in op_indexes:
        written_inside.update(main.operations[i].outputs)
    read_outside: set[int] = set(main.output_indexes)
    for i, op in enumerate(main.operations):
        if i not in inside:
            read_outside.update(op.inputs)
    used: list[int] = []
    seen: set[int] = set()
    for i in op_indexes:
        op = main.operations[i]
        for index in (*op.inputs, *op.outputs):
            if index not in seen:
                seen.add(index)
                used.append(index)
    remap = {old: new for new, old in enumerate(used)}
    consumers = dict.fromkeys(used, 0)
    for i in op_indexes:
        for index in main.operations[i].inputs:
            consumers[index] += 1
    operands: list[Operand] = []
    inputs: list[int] = []
    outputs: list[int] = []
    for old in used:
        operand = main.operands[old]
        lifetime = operand.lifetime
        location = operand.location
        if lifetime in (
            OperandLifeTime.CONSTANT_COPY,
            OperandLifeTime.CONSTANT_REFERENCE,
            OperandLifeTime.NO_VALUE,
            OperandLifeTime.SUBGRAPH,
        ):
            pass
        elif old not in written_inside:
            lifetime, location = OperandLifeTime.SUBGRAPH_INPUT, DataLocation()
            inputs.append(remap[old])
        elif old in read_outside:
            lifetime, location = OperandLifeTime.SUBGRAPH_OUTPUT, DataLocation()
            outputs.append(remap[old])
        else:
            lifetime, location = OperandLifeTime.TEMPORARY_VARIABLE, DataLocation()
        operands.append(
            attrs.evolve(
                operand, lifetime=lifetime, location=location, number_of_consumers=consumers[old]
            )
        )
    operations = [
        Operation(
            type=main.operations[i].type,
            inputs=[remap[x] for x in main.operations[i].inputs],
            outputs=[remap[x] for x in main.operations[i].outputs],
        )
        for i in op_indexes
    ]
    return attrs.evolve(
        model,
        main=Subgraph(
            operands=tuple(operands),
            operations=tuple(operations),
            input_indexes=inputs,
            output_indexes=outputs,
        ),
        name=name,
    )


def make_steps(model: Model, chosen: list[RuntimeDevice]) -> list[Step]:
    """Group operations into per-device steps in execution order."""
    if len({device.name for device in chosen}) <= 1:
        device = chosen[0]
        return [Step(device, tuple(range(len(chosen))), model)]
    groups: list[tuple[RuntimeDevice, list[int]]] = []
    for index, device in enumerate(chosen):
        if groups and groups[-1][0] is device:
            groups[-1][1].append(index)
        else:
            groups.append((device, [index]))
    return [
        Step(device, tuple(ops), submodel(model, tuple(ops), f"{model.name}#{n}"))
        for n, (device, ops) in enumerate(groups)
    ]
