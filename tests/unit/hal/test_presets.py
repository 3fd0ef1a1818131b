"""Preset and chain builders produce valid, realistic models."""

from __future__ import annotations

import pytest

from nnemu.hal import (
    PRESETS,
    HalVersion,
    OperandLifeTime,
    OperandType,
    OperationType,
    build_chain,
    build_preset,
    loop_iterations,
    validate_model,
)

_NEEDS_1_3 = {"while_loop"}


@pytest.mark.parametrize("dtype", ["float32", "quant8"])
@pytest.mark.parametrize("name", sorted(PRESETS))
def test_preset_validates(name: str, dtype: str) -> None:
    """Every preset validates for HAL 1.3, and for HAL 1.0 unless it uses control flow."""
    model = build_preset(name, dtype)
    assert model.name
    assert validate_model(model, HalVersion.V1_3) is None
    if name not in _NEEDS_1_3:
        assert validate_model(model, HalVersion.V1_0) is None


def test_quant8_conv_bias_scale_is_input_times_filter() -> None:
    """Quant8 CONV_2D biases are TENSOR_INT32 with scale = input scale x filter scale."""
    model = build_preset("mobilenet_v1", "quant8")
    operands = model.main.operands
    convs = [op for op in model.main.operations if op.type == OperationType.CONV_2D]
    assert convs
    for op in convs:
        x, w, b = (operands[i] for i in op.inputs[:3])
        assert x.type == w.type == OperandType.TENSOR_QUANT8_ASYMM
        assert b.type == OperandType.TENSOR_INT32
        assert b.scale == pytest.approx(x.scale * w.scale)


def test_mobilenet_v1_structure() -> None:
    """MobileNet v1 has a stem conv, 13 depthwise-separable blocks and a softmax classifier."""
    model = build_preset("mobilenet_v1")
    kinds = [op.type for op in model.main.operations]
    assert kinds.count(OperationType.DEPTHWISE_CONV_2D) == 13
    assert kinds.count(OperationType.CONV_2D) == 1 + 13 + 1
    assert kinds[-3:] == [OperationType.CONV_2D, OperationType.RESHAPE, OperationType.SOFTMAX]
    (output,) = model.main.output_indexes
    assert model.main.operands[output].dimensions == (1, 1001)
    # 4.2M parameters, as published (float32: 4 bytes each).
    assert model.operand_values_size / 4 == pytest.approx(4.23e6, rel=0.01)


def test_mobilenet_v2_has_residual_adds() -> None:
    """MobileNet v2 adds a skip connection to every stride-1 block with equal channels (10)."""
    model = build_preset("mobilenet_v2")
    kinds = [op.type for op in model.main.operations]
    assert kinds.count(OperationType.ADD) == 10
    assert kinds.count(OperationType.DEPTHWISE_CONV_2D) == 17


def test_mobilenet_params() -> None:
    """input_size, width and classes change the shapes."""
    model = build_preset("mobilenet_v1", params={"input_size": 128, "width": 0.5, "classes": 10})
    (first,) = model.main.input_indexes
    assert model.main.operands[first].dimensions == (1, 128, 128, 3)
    assert model.main.operands[model.main.output_indexes[0]].dimensions == (1, 10)
    assert validate_model(model, HalVersion.V1_3) is None


def test_lstm_unrolls_steps_and_layers() -> None:
    """The LSTM preset has one LSTM op per step and layer, then FULLY_CONNECTED and SOFTMAX."""
    model = build_preset("lstm", params={"steps": 3, "layers": 2, "units": 16, "input": 8})
    kinds = [op.type for op in model.main.operations]
    assert kinds.count(OperationType.LSTM) == 6
    assert kinds[-2:] == [OperationType.FULLY_CONNECTED, OperationType.SOFTMAX]
    assert len(model.main.input_indexes) == 3


@pytest.mark.parametrize("iterations", [1, 10, 37])
def test_loop_iterations_round_trips(iterations: int) -> None:
    """loop_iterations reads back the iteration count the while_loop preset was built with."""
    model = build_preset("while_loop", params={"iterations": iterations, "body_size": 8})
    assert loop_iterations(model) == iterations
    (loop,) = model.main.operations
    assert loop.type == OperationType.WHILE
    assert loop_iterations(model, loop) == iterations
    kinds = {model.main.operands[i].lifetime for i in loop.inputs[:2]}
    assert kinds == {OperandLifeTime.SUBGRAPH}


def test_loop_iterations_needs_a_while() -> None:
    """loop_iterations rejects a model without a WHILE operation."""
    with pytest.raises(ValueError, match="no WHILE"):
        loop_iterations(build_preset("add"))


@pytest.mark.parametrize(
    ("name", "dtype", "params", "match"),
    [
        ("resnet", "float32", None, "preset"),
        ("add", "int4", None, "dtype"),
        ("lstm", "float32", {"steps": 0}, "steps"),
        ("mobilenet_v1", "float32", {"classes": 2.5}, "classes"),
    ],
)
def test_build_preset_rejects_bad_arguments(name, dtype, params, match) -> None:
    """Unknown presets, dtypes and non-positive-integer parameters raise ValueError."""
    with pytest.raises(ValueError, match=match):
        build_preset(name, dtype, params)


def test_a_preset_is_built_once_per_name_dtype_and_params() -> None:
    """The same (name, dtype, params) gives the one model already built (a frozen value),
    and any other dtype or parameter value builds its own, equal to a fresh build."""
    model = build_preset("mobilenet_v1", "quant8", {"width": 0.5})
    assert build_preset("mobilenet_v1", "quant8", {"width": 0.5}) is model
    assert build_preset("mobilenet_v1", "float32", {"width": 0.5}) is not model
    wider = build_preset("mobilenet_v1", "quant8", {"width": 0.75})
    assert wider == PRESETS["mobilenet_v1"]("quant8", {"width": 0.75}) != model
    assert build_preset("add", "float32", {"size": 8}) is not build_preset(
        "add", "float32", {"size": 8.0}
    )


def test_a_parameter_that_cannot_be_a_key_is_judged_by_the_builder() -> None:
    """An unhashable parameter value reaches the builder (not the model cache's key)."""
    with pytest.raises(TypeError, match=r"int\(\) argument"):
        build_preset("add", "float32", {"size": [8]})


_CHAIN = [
    (OperationType.CONV_2D, (1, 56, 56, 64), (64, 3, 3, 32)),
    (OperationType.DEPTHWISE_CONV_2D, (1, 28, 28, 64), (1, 3, 3, 64)),
    (OperationType.MAX_POOL_2D, (1, 14, 14, 64), None),
    (OperationType.RELU, (1, 14, 14, 64), None),
    (OperationType.ADD, (1, 14, 14, 64), None),
    (OperationType.CONCATENATION, (1, 14, 14, 96), None),
    (OperationType.AVERAGE_POOL_2D, (1, 1, 1, 96), None),
    (OperationType.RESHAPE, (1, 96), None),
    (OperationType.FULLY_CONNECTED, (1, 10), (10, 96)),
    (OperationType.SOFTMAX, (1, 10), None),
]


@pytest.mark.parametrize("dtype", ["float32", "quant8"])
def test_build_chain_validates(dtype: str) -> None:
    """A conv/pool/elementwise/classifier chain validates and keeps the given shapes."""
    model = build_chain(_CHAIN, dtype)
    assert validate_model(model, HalVersion.V1_3) is None
    assert validate_model(model, HalVersion.V1_0) is None
    kinds = [op.type for op in model.main.operations]
    assert kinds == [kind for kind, _, _ in _CHAIN]
    (x,) = model.main.input_indexes
    assert model.main.operands[x].dimensions == (1, 56, 56, 32)
    out = model.main.operands[model.main.output_indexes[0]]
    assert out.dimensions == (1, 10)


def test_build_chain_lstm_and_misc_layers() -> None:
    """LSTM, RNN, MEAN, PAD, TRANSPOSE, RESIZE_BILINEAR and activations build valid chains."""
    recurrent = build_chain(
        [
            (OperationType.LSTM, (1, 32), (32, 16)),
            (OperationType.RNN, (1, 32), None),
            (OperationType.TANH, (1, 32), None),
        ]
    )
    assert validate_model(recurrent, HalVersion.V1_0) is None
    spatial = build_chain(
        [
            (OperationType.RESIZE_BILINEAR, (1, 16, 16, 8), None),
            (OperationType.PAD, (1, 18, 18, 8), None),
            (OperationType.TRANSPOSE, (1, 8, 18, 18), None),
            (OperationType.MEAN, (1, 8, 1, 1), None),
            (OperationType.LOGISTIC, (1, 8, 1, 1), None),
        ],
        "quant8",
    )
    assert validate_model(spatial, HalVersion.V1_1) is None


@pytest.mark.parametrize(
    "layers",
    [
        [],
        [(OperationType.WHILE, (1, 4), None)],
        [(OperationType.CONV_2D, (1, 0, 4, 4), None)],
    ],
)
def test_build_chain_rejects_bad_layers(layers) -> None:
    """Empty chains, control-flow layers and non-positive shapes raise ValueError."""
    with pytest.raises(ValueError, match=r"layer|WHILE|shape"):
        build_chain(layers)
