"""validate_model / validate_request against the VTS 1.3 ValidationTest mutations.

Each ``mutate*``/``remove*``/``add*`` test mirrors the VTS function of the same name
(hardware/interfaces/neuralnetworks/1.3/vts/functional/ValidateModel.cpp and
ValidateRequest.cpp): it applies every mutation VTS would apply to a preset model and
expects the validator to give a reason for each one. The mutations themselves are the
generators of ``nnemu.hal.mutations`` (shared with the VTS conformance suite).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import attrs
import pytest
from hypothesis import HealthCheck
from hypothesis import strategies as st

from nnemu.hal import (
    DataLocation,
    HalVersion,
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
    Operation,
    OperationType,
    Request,
    RequestArgument,
    Subgraph,
    build_preset,
    mutations,
    supported_by,
    validate_model,
    validate_request,
)
from nnemu.hal.mutations import with_operand, with_operation
from tests.tiers import tiered

V13 = HalVersion.V1_3
LT = OperandLifeTime

# Small but complete presets: every operation kind of the real ones, fewer operands.
_CASES = {
    "add_float32": ("add", "float32", {"size": 16}),
    "mobilenet_v2_quant8": ("mobilenet_v2", "quant8", {"input_size": 32, "width": 0.35}),
    "mobilenet_v1_float32": ("mobilenet_v1", "float32", {"input_size": 32, "width": 0.25}),
    "lstm_quant8": ("lstm", "quant8", {"steps": 2, "units": 8, "input": 4, "layers": 1}),
    "while_loop_float32": ("while_loop", "float32", {"iterations": 3, "body_size": 4}),
}


_SLOW_CASES = {"mobilenet_v2_quant8"}
"""Mutated in the slow tier only: its ~400 operands make every mutation test several seconds
long, and the conformance suite mutates the full presets in the default run."""


@pytest.fixture(
    name="model",
    params=[
        pytest.param(name, marks=pytest.mark.slow) if name in _SLOW_CASES else name
        for name in sorted(_CASES)
    ],
)
def _model(request: pytest.FixtureRequest) -> Model:
    """A small valid preset model."""
    name, dtype, params = _CASES[request.param]
    model = build_preset(name, dtype, params)
    assert validate_model(model, V13) is None
    return model


def _expect_all_invalid(
    model: Model, mutants: Iterator[tuple[str, Model]], *, at_least_one: bool = True
) -> None:
    """Every mutant of ``model`` gets a reason (and, by default, there is at least one)."""
    checked = 0
    for label, mutant in mutants:
        assert validate_model(mutant, V13) is not None, label
        checked += 1
    assert checked > 0 or not at_least_one, f"no mutant of {model.name}"


# --- VTS model mutations ---------------------------------------------------------------


def test_presets_are_valid(model: Model) -> None:
    """Every small preset used below validates for HAL 1.3 (the baseline of the mutations)."""
    assert validate_model(model, V13) is None


def test_mutateOperandTypeTest(model: Model) -> None:
    """Out-of-range operand type values are rejected for every operand."""
    _expect_all_invalid(model, mutations.mutate_operand_type(model))


def test_mutateOperandTypeTest_version_gated_types() -> None:
    """QUANT8_ASYMM_SIGNED/SUBGRAPH need 1.3 and FLOAT16 types need 1.2."""
    model = build_preset("add", "float32", {"size": 4})
    f16 = model
    for i in (0, 1, 2):
        f16 = with_operand(f16, i, type=OperandType.TENSOR_FLOAT16)
    assert validate_model(f16, HalVersion.V1_2) is None
    assert validate_model(f16, HalVersion.V1_1) is not None
    signed = build_preset("add", "quant8", {"size": 4})
    for i in (0, 1, 2):
        signed = with_operand(signed, i, type=OperandType.TENSOR_QUANT8_ASYMM_SIGNED, zero_point=0)
    assert validate_model(signed, V13) is None
    assert validate_model(signed, HalVersion.V1_2) is not None


def test_mutateOperandRankTest(model: Model) -> None:
    """Scalar operands given rank 1 are rejected."""
    _expect_all_invalid(model, mutations.mutate_operand_rank(model))


def test_mutateOperandScaleTest(model: Model) -> None:
    """Scales illegal for the operand type are rejected."""
    _expect_all_invalid(model, mutations.mutate_operand_scale(model))


def test_mutateOperandZeroPointTest(model: Model) -> None:
    """Zero points outside the type's range are rejected."""
    _expect_all_invalid(model, mutations.mutate_operand_zero_point(model))


def test_mutateOperandLifeTimeTest(model: Model) -> None:
    """Lifetimes that change whether an operand needs a writer are rejected."""
    _expect_all_invalid(model, mutations.mutate_operand_lifetime(model))


def test_mutateOperandInputOutputTest(model: Model) -> None:
    """Lifetimes that disagree with the subgraph's input/output index lists are rejected."""
    _expect_all_invalid(model, mutations.mutate_operand_input_output(model))


def test_mutateOperandNumberOfConsumersTest(model: Model) -> None:
    """numberOfConsumers different from the real count of reads is rejected."""
    _expect_all_invalid(model, mutations.mutate_operand_number_of_consumers(model))


def test_mutateOperandAddWriterTest(model: Model) -> None:
    """A second operation writing an already-written operand is rejected."""
    _expect_all_invalid(model, mutations.mutate_operand_add_writer(model))


def test_mutateOperationOperandTypeTest(model: Model) -> None:
    """Changing an operation's operand to another valid type breaks the operation's signature."""
    _expect_all_invalid(model, mutations.mutate_operation_operand_type(model))


def test_mutateOperationTypeTest(model: Model) -> None:
    """Operation type values outside the enum are rejected."""
    _expect_all_invalid(model, mutations.mutate_operation_type(model))


def test_mutateOperationTypeTest_other_valid_type() -> None:
    """Swapping ADD for CONV_2D fails the CONV_2D signature."""
    model = build_preset("add", "float32", {"size": 4})
    assert validate_model(with_operation(model, 0, type=OperationType.CONV_2D), V13) is not None


def test_mutateOperationInputOperandIndexTest(model: Model) -> None:
    """Operation input indexes past the operand list are rejected."""
    _expect_all_invalid(model, mutations.mutate_operation_input_operand_index(model))


def test_mutateOperationOutputOperandIndexTest(model: Model) -> None:
    """Operation output indexes past the operand list are rejected."""
    _expect_all_invalid(model, mutations.mutate_operation_output_operand_index(model))


def test_mutateOperationRemoveWriteTest(model: Model) -> None:
    """An operation writing a fresh operand instead of one that is read leaves it unwritten."""
    # Single-operation models have no operand that is both written and read.
    _expect_all_invalid(
        model,
        mutations.mutate_operation_remove_write(model),
        at_least_one=len(model.main.operations) > 1,
    )


def test_removeOperandTest(model: Model) -> None:
    """Removing an operand that operations read is rejected."""
    _expect_all_invalid(model, mutations.remove_operand(model))


def test_removeOperationTest(model: Model) -> None:
    """Removing an operation leaves its outputs unwritten."""
    _expect_all_invalid(model, mutations.remove_operation(model))


def test_removeOperationInputTest(model: Model) -> None:
    """Dropping any input of an operation breaks its signature."""
    _expect_all_invalid(model, mutations.remove_operation_input(model))


def test_removeOperationOutputTest(model: Model) -> None:
    """Dropping any output of an operation is rejected."""
    _expect_all_invalid(model, mutations.remove_operation_output(model))


def test_addOperationInputTest(model: Model) -> None:
    """An extra INT32 model input appended to an operation's inputs is rejected."""
    _expect_all_invalid(model, mutations.add_operation_input(model))


def test_addOperationOutputTest(model: Model) -> None:
    """An extra model output appended to an operation's outputs is rejected."""
    _expect_all_invalid(model, mutations.add_operation_output(model))


def test_mutateExecutionOrderTest(model: Model) -> None:
    """Moving an operation before its producer or after its consumer is rejected."""
    if len(model.main.operations) > 1:
        _expect_all_invalid(model, mutations.mutate_execution_order(model))


# --- BasicTests and other model rules ------------------------------------------------------


def _tensor(**changes: object) -> Operand:
    return Operand(type=OperandType.TENSOR_FLOAT32, dimensions=(1, 4), **changes)  # type: ignore[arg-type]


def _act(consumers: int = 2) -> Operand:
    return Operand(
        type=OperandType.INT32,
        number_of_consumers=consumers,
        lifetime=LT.CONSTANT_COPY,
        location=DataLocation(length=4),
    )


def test_cyclic_graph_is_rejected() -> None:
    """BasicTests: two ADDs reading each other's outputs form a cycle and are rejected."""
    operands = [
        _tensor(lifetime=LT.SUBGRAPH_INPUT, number_of_consumers=2),
        _tensor(number_of_consumers=1),
        _tensor(number_of_consumers=1, lifetime=LT.SUBGRAPH_OUTPUT),
        _act(),
    ]
    main = Subgraph(
        operands=operands,
        operations=[
            Operation(type=OperationType.ADD, inputs=[0, 2, 3], outputs=[1]),
            Operation(type=OperationType.ADD, inputs=[0, 1, 3], outputs=[2]),
        ],
        input_indexes=[0],
        output_indexes=[2],
    )
    reason = validate_model(Model(main=main, operand_values_size=4), V13)
    assert reason is not None
    assert "before it is written" in reason


def test_constant_location_rules() -> None:
    """CONSTANT_COPY must lie in operandValues, CONSTANT_REFERENCE in an existing pool."""
    model = build_preset("add", "float32", {"size": 4})
    scalar = next(i for i, o in enumerate(model.main.operands) if o.lifetime == LT.CONSTANT_COPY)
    assert validate_model(attrs.evolve(model, operand_values_size=2), V13) is not None
    ref = with_operand(model, scalar, lifetime=LT.CONSTANT_REFERENCE)
    assert validate_model(ref, V13) is not None
    assert validate_model(attrs.evolve(ref, pool_sizes=[4]), V13) is None
    assert validate_model(attrs.evolve(ref, pool_sizes=[3]), V13) is not None
    temp_with_location = with_operand(model, 3, location=DataLocation(offset=4))
    assert validate_model(temp_with_location, V13) is not None


def test_referenced_subgraph_cycle_is_rejected() -> None:
    """A body subgraph that references its own WHILE loop forms a cycle and is rejected."""
    model = build_preset("while_loop", "float32", {"iterations": 2, "body_size": 4})
    cond, body = model.referenced
    loop_ref = Operand(type=OperandType.SUBGRAPH, lifetime=LT.SUBGRAPH)
    body = attrs.evolve(
        body, operands=[*body.operands, attrs.evolve(loop_ref, location=DataLocation(offset=1))]
    )
    cyclic = attrs.evolve(model, referenced=[cond, body])
    reason = validate_model(cyclic, V13)
    assert reason is not None
    assert "cycle" in reason


def test_while_loop_needs_hal_1_3() -> None:
    """A model with referenced subgraphs is rejected before HAL 1.3."""
    model = build_preset("while_loop")
    assert validate_model(model, V13) is None
    assert validate_model(model, HalVersion.V1_2) is not None


# --- requests -------------------------------------------------------------------------


def _request(model: Model) -> Request:
    """A valid request: inputs packed into pool 0, outputs into pool 1."""

    def pack(indexes: tuple[int, ...], pool: int) -> tuple[list[RequestArgument], int]:
        arguments, offset = [], 0
        for index in indexes:
            size = model.main.operands[index].byte_size
            location = DataLocation(pool_index=pool, offset=offset, length=size)
            arguments.append(RequestArgument(location=location))
            offset += size
        return arguments, offset

    inputs, in_size = pack(model.main.input_indexes, 0)
    outputs, out_size = pack(model.main.output_indexes, 1)
    return Request(inputs=inputs, outputs=outputs, pool_sizes=[in_size, out_size])


def test_request_for_preset_is_valid(model: Model) -> None:
    """A request with one argument per model input/output in its own range validates."""
    assert validate_request(_request(model), model) is None


def test_removeInputTest(model: Model) -> None:
    """Dropping any request input is rejected."""
    request = _request(model)
    for _, mutant in mutations.remove_request_input(request):
        assert validate_request(mutant, model) is not None


def test_removeOutputTest(model: Model) -> None:
    """Dropping any request output is rejected."""
    request = _request(model)
    for _, mutant in mutations.remove_request_output(request):
        assert validate_request(mutant, model) is not None


def test_request_locations_and_overlap() -> None:
    """Out-of-pool locations and outputs overlapping inputs or each other are rejected."""
    model = build_preset("add", "float32", {"size": 4})
    request = _request(model)
    x, y = request.inputs
    (out,) = request.outputs

    def with_output(location: DataLocation) -> Request:
        return attrs.evolve(request, outputs=[RequestArgument(location=location)])

    assert validate_request(with_output(DataLocation(pool_index=2, length=16)), model)
    assert validate_request(with_output(DataLocation(pool_index=1, offset=8, length=16)), model)
    overlapping = with_output(DataLocation(pool_index=0, offset=8, length=16))
    assert "overlaps" in (validate_request(overlapping, model) or "")
    beside = attrs.evolve(request, pool_sizes=[48, 16])
    beside = attrs.evolve(
        beside, outputs=[RequestArgument(location=DataLocation(pool_index=0, offset=32, length=16))]
    )
    assert validate_request(beside, model) is None
    assert x.location.pool_index == y.location.pool_index == 0
    assert out.location.pool_index == 1


def test_request_dimensions_only_fill_unknown_axes() -> None:
    """Request dimensions must keep the rank and may only fill axes the model leaves at 0."""
    model = build_preset("add", "float32", {"size": 4})
    request = _request(model)
    unknown = with_operand(model, 2, dimensions=(1, 0))

    def with_output_dims(dims: tuple[int, ...]) -> Request:
        arg = attrs.evolve(request.outputs[0], dimensions=dims)
        return attrs.evolve(request, outputs=[arg])

    assert validate_request(with_output_dims((1, 4)), unknown) is None
    assert validate_request(with_output_dims((2, 4)), unknown) is not None
    assert validate_request(with_output_dims((1, 4, 1)), unknown) is not None
    assert validate_request(with_output_dims(()), unknown) is None  # outputs may stay unknown


# --- supported_by ---------------------------------------------------------------------


def _if_model() -> Model:
    """IF(cond, then=RELU, else=TANH)(x) with both branches as referenced subgraphs."""

    def branch(kind: OperationType) -> Subgraph:
        return Subgraph(
            operands=[
                _tensor(lifetime=LT.SUBGRAPH_INPUT, number_of_consumers=1),
                _tensor(lifetime=LT.SUBGRAPH_OUTPUT),
            ],
            operations=[Operation(type=kind, inputs=[0], outputs=[1])],
            input_indexes=[0],
            output_indexes=[1],
        )

    main = Subgraph(
        operands=[
            Operand(
                type=OperandType.TENSOR_BOOL8,
                dimensions=(1,),
                lifetime=LT.SUBGRAPH_INPUT,
                number_of_consumers=1,
            ),
            _tensor(lifetime=LT.SUBGRAPH_INPUT, number_of_consumers=2),
            Operand(type=OperandType.SUBGRAPH, lifetime=LT.SUBGRAPH, number_of_consumers=1),
            Operand(
                type=OperandType.SUBGRAPH,
                lifetime=LT.SUBGRAPH,
                number_of_consumers=1,
                location=DataLocation(offset=1),
            ),
            _tensor(number_of_consumers=1),
            _tensor(lifetime=LT.SUBGRAPH_OUTPUT),
            _act(consumers=1),
        ],
        operations=[
            Operation(type=OperationType.IF, inputs=[0, 2, 3, 1], outputs=[4]),
            Operation(type=OperationType.ADD, inputs=[4, 1, 6], outputs=[5]),
        ],
        input_indexes=[0, 1],
        output_indexes=[5],
    )
    return Model(
        main=main,
        referenced=[branch(OperationType.RELU), branch(OperationType.TANH)],
        operand_values_size=4,
    )


def test_if_model_is_valid_and_branch_mismatch_is_not() -> None:
    """The IF model validates; a branch with a different output type is rejected."""
    model = _if_model()
    assert validate_model(model, V13) is None
    then, other = model.referenced
    bad_then = attrs.evolve(
        then,
        operands=[
            then.operands[0],
            attrs.evolve(then.operands[1], type=OperandType.TENSOR_FLOAT16),
        ],
    )
    assert validate_model(attrs.evolve(model, referenced=[bad_then, other]), V13) is not None


def test_supported_by_if_needs_both_branches() -> None:
    """IF is supported only when the ops of both referenced branches are."""
    model = _if_model()
    every = frozenset({OperationType.IF, OperationType.ADD, OperationType.RELU, OperationType.TANH})
    assert supported_by(model, every) == (True, True)
    assert supported_by(model, every - {OperationType.TANH}) == (False, True)
    assert supported_by(model, every - {OperationType.IF}) == (False, True)
    assert supported_by(model, None) == (True, True)


def test_supported_by_while_needs_cond_and_body() -> None:
    """WHILE is supported only when the condition's and the body's ops are."""
    model = build_preset("while_loop", "float32", {"iterations": 2, "body_size": 4})
    every = frozenset(
        {OperationType.WHILE, OperationType.LESS, OperationType.ADD, OperationType.FULLY_CONNECTED}
    )
    assert supported_by(model, every) == (True,)
    assert supported_by(model, every - {OperationType.LESS}) == (False,)
    assert supported_by(model, every - {OperationType.FULLY_CONNECTED}) == (False,)
    assert supported_by(model, frozenset({OperationType.WHILE})) == (False,)


def test_supported_by_oem_only_when_listed() -> None:
    """OEM_OPERATION is unsupported by default and supported when listed explicitly."""
    model = build_preset("add", "float32", {"size": 4})
    oem = with_operation(model, 0, type=OperationType.OEM_OPERATION)
    assert validate_model(oem, V13) is None
    assert supported_by(oem, None) == (False,)
    assert supported_by(oem, frozenset({OperationType.OEM_OPERATION})) == (True,)
    assert supported_by(model, frozenset({OperationType.CONV_2D})) == (False,)


# --- robustness -----------------------------------------------------------------------

_BASES = [
    build_preset("add", "float32", {"size": 4}),
    build_preset("while_loop", "quant8", {"iterations": 2, "body_size": 4}),
    build_preset("mobilenet_v1", "quant8", {"input_size": 32, "width": 0.25}),
    _if_model(),
]
_small_int = st.integers(min_value=-3, max_value=40)
_any_int = st.one_of(_small_int, st.sampled_from([10000, 10001, 2**31, -(2**31)]))
_ints = st.lists(_small_int, max_size=6).map(tuple)


def _mutate_operand(operand: Operand, data: st.DataObject) -> Operand:
    field = data.draw(
        st.sampled_from(
            ["type", "dimensions", "number_of_consumers", "scale", "zero_point", "lifetime", "loc"]
        )
    )
    value: object
    match field:
        case "type" | "lifetime" | "number_of_consumers" | "zero_point":
            value = data.draw(_any_int)
        case "dimensions":
            value = data.draw(_ints)
        case "scale":
            value = data.draw(st.floats(allow_nan=True, allow_infinity=True))
        case _:
            field = "location"
            value = DataLocation(
                pool_index=data.draw(_small_int),
                offset=data.draw(_any_int),
                length=data.draw(_any_int),
            )
    return attrs.evolve(operand, **{field: value})


_MUTATIONS: list[Callable[[Subgraph, st.DataObject], Subgraph]] = []


def _mutation(fn: Callable[[Subgraph, st.DataObject], Subgraph]) -> None:
    _MUTATIONS.append(fn)


@_mutation
def _m_operand(sub: Subgraph, data: st.DataObject) -> Subgraph:
    i = data.draw(st.integers(0, len(sub.operands) - 1))
    operands = list(sub.operands)
    operands[i] = _mutate_operand(operands[i], data)
    return attrs.evolve(sub, operands=operands)


@_mutation
def _m_operation(sub: Subgraph, data: st.DataObject) -> Subgraph:
    if not sub.operations:
        return sub
    i = data.draw(st.integers(0, len(sub.operations) - 1))
    field = data.draw(st.sampled_from(["type", "inputs", "outputs"]))
    value = data.draw(_any_int if field == "type" else _ints)
    operations = list(sub.operations)
    operations[i] = attrs.evolve(operations[i], **{field: value})
    return attrs.evolve(sub, operations=operations)


@_mutation
def _m_io(sub: Subgraph, data: st.DataObject) -> Subgraph:
    field = data.draw(st.sampled_from(["input_indexes", "output_indexes"]))
    return attrs.evolve(sub, **{field: data.draw(_ints)})


@_mutation
def _m_shuffle(sub: Subgraph, data: st.DataObject) -> Subgraph:
    return attrs.evolve(sub, operations=data.draw(st.permutations(sub.operations)))


@tiered(data=st.data(), quick=60, wide=200, suppress_health_check=[HealthCheck.too_slow])
def test_random_mutations_never_crash(data: st.DataObject) -> None:
    """Random field-level mutations of models and requests yield a reason or None, never raise."""
    model = data.draw(st.sampled_from(_BASES))
    for _ in range(data.draw(st.integers(1, 4))):
        target = data.draw(st.integers(-1, len(model.referenced) - 1))
        mutation = data.draw(st.sampled_from(_MUTATIONS))
        if target < 0:
            model = attrs.evolve(model, main=mutation(model.main, data))
        else:
            referenced = list(model.referenced)
            referenced[target] = mutation(referenced[target], data)
            model = attrs.evolve(model, referenced=referenced)
    if data.draw(st.booleans()):
        model = attrs.evolve(
            model,
            operand_values_size=data.draw(_any_int),
            pool_sizes=data.draw(_ints),
            relax_computation_float32_to_float16=data.draw(st.booleans()),
        )
    version = data.draw(st.sampled_from(list(HalVersion)))
    assert isinstance(validate_model(model, version), str | None)
    supported_by(model, None)  # must not raise either
    arguments = st.builds(
        RequestArgument,
        has_no_value=st.booleans(),
        location=st.builds(DataLocation, pool_index=_small_int, offset=_any_int, length=_any_int),
        dimensions=_ints,
    )
    request = Request(
        inputs=data.draw(st.lists(arguments, max_size=4)),
        outputs=data.draw(st.lists(arguments, max_size=4)),
        pool_sizes=data.draw(_ints),
    )
    assert isinstance(validate_request(request, model), str | None)
