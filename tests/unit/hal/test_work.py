"""operation_work and model_memory_bytes: the figures behind the drivers' cost model."""

from __future__ import annotations

import pytest

from nnemu.hal import (
    OperandType,
    OperationType,
    build_chain,
    build_preset,
    model_memory_bytes,
    operation_work,
    subgraph_macs,
)


def _single(kind, out, filt, dtype="float32"):
    model = build_chain([(kind, out, filt)], dtype)
    (op,) = model.main.operations
    return operation_work(model, model.main, op)


def test_conv_work_is_exact() -> None:
    """CONV_2D MACs = output elements x kh x kw x in-channels."""
    work = _single(OperationType.CONV_2D, (1, 56, 56, 128), (128, 3, 3, 64))
    assert work.macs == 56 * 56 * 128 * 3 * 3 * 64 == 231_211_008
    assert work.elements == 56 * 56 * 128
    assert work.first_input_type == OperandType.TENSOR_FLOAT32


def test_depthwise_fc_pool_work() -> None:
    """DEPTHWISE = out x kh x kw; FULLY_CONNECTED = out x input size; pool = out x window."""
    dw = _single(OperationType.DEPTHWISE_CONV_2D, (1, 28, 28, 256), (1, 3, 3, 256), "quant8")
    assert dw.macs == 28 * 28 * 256 * 9
    assert dw.first_input_type == OperandType.TENSOR_QUANT8_ASYMM
    fc = _single(OperationType.FULLY_CONNECTED, (1, 1000), (1000, 1024))
    assert fc.macs == 1000 * 1024
    model = build_chain(
        [
            (OperationType.RELU, (1, 14, 14, 8), None),
            (OperationType.MAX_POOL_2D, (1, 7, 7, 8), None),
            (OperationType.AVERAGE_POOL_2D, (1, 7, 7, 8), None),
        ]
    )
    relu, halving, same = (operation_work(model, model.main, op) for op in model.main.operations)
    assert relu.macs == 0
    assert relu.elements == 14 * 14 * 8
    assert halving.macs == 7 * 7 * 8 * 4  # 2x2 window inferred from the size ratio
    assert same.macs == 7 * 7 * 8 * 9  # stride 1: 3x3 assumed


def test_lstm_work() -> None:
    """LSTM MACs = 4 x units x (input + units) x batch; elements cover all four outputs."""
    work = _single(OperationType.LSTM, (1, 256), (256, 128))
    assert work.macs == 4 * 256 * (128 + 256)
    assert work.elements == 4 * 256 + 3 * 256


@pytest.mark.parametrize(
    ("name", "params", "published_macs"),
    [
        ("mobilenet_v1", {}, 569e6),
        ("mobilenet_v1", {"width": 0.5, "input_size": 160}, 77e6),
        ("mobilenet_v2", {}, 300e6),
    ],
)
def test_mobilenet_macs_match_published_figures(name, params, published_macs) -> None:
    """MobileNet MAC totals are within 2% of the published figures (v1 224: 569M, v2: 300M)."""
    model = build_preset(name, "float32", params)
    assert subgraph_macs(model, model.main) == pytest.approx(published_macs, rel=0.02)


def test_quant8_macs_equal_float_macs() -> None:
    """The dtype does not change the arithmetic count."""
    f = build_preset("mobilenet_v1", "float32")
    q = build_preset("mobilenet_v1", "quant8")
    assert subgraph_macs(f, f.main) == subgraph_macs(q, q.main)


def test_model_memory_bytes() -> None:
    """Memory = constants + peak live temporaries (+ largest referenced-subgraph peak)."""
    add = build_preset("add", params={"size": 8})
    assert model_memory_bytes(add) == add.constant_bytes  # no temporaries
    chain = build_chain(
        [
            (OperationType.RELU, (1, 100), None),
            (OperationType.RELU, (1, 100), None),
            (OperationType.RELU, (1, 100), None),
        ]
    )
    # Two 400-byte temporaries are live at once at most (writer and reader).
    assert model_memory_bytes(chain) == chain.constant_bytes + 800
    loop = build_preset("while_loop", params={"body_size": 16})
    assert model_memory_bytes(loop) > loop.constant_bytes
    mobilenet = build_preset("mobilenet_v1")
    # Peak: block 1's depthwise output (112x112x32) while its pointwise output (x64) is written.
    peak = (112 * 112 * 32 + 112 * 112 * 64) * 4
    assert model_memory_bytes(mobilenet) - mobilenet.constant_bytes == peak
