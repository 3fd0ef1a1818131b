"""Ready-made HAL models: MobileNet v1/v2, a stacked LSTM, a WHILE loop, and layer chains.

Every builder returns a model that :func:`nnemu.hal.validate_model` accepts for HAL 1.3
(and for HAL 1.0 when the model uses no newer feature). Operand values are not
modelled, only their sizes: every constant is CONSTANT_COPY with a 4-byte aligned
location inside ``Model.operand_values_size``.

dtype ``"float32"`` uses TENSOR_FLOAT32 tensors; ``"quant8"`` uses TENSOR_QUANT8_ASYMM
activations and weights with TENSOR_INT32 biases (scale = input scale x filter scale).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Final

import attrs

from nnemu.hal._enums import OperandLifeTime, OperandType, OperationType
from nnemu.hal._types import DataLocation, Model, Operand, Operation, Subgraph

__all__ = ["DTYPES", "PRESETS", "build_chain", "build_preset", "loop_iterations"]

# AOSP FusedActivationFunc and PaddingCode values.
_ACT_NONE, _ACT_RELU, _ACT_RELU6 = 0, 1, 3
_PADDING_SAME, _PADDING_VALID = 1, 2

DTYPES: Final = ("float32", "quant8")
"""The dtypes every preset and chain is built in (``models[].dtype`` of a scenario)."""

_SUBGRAPH: Callable[..., Subgraph] = Subgraph
_MODEL: Callable[..., Model] = Model

# Quantization parameters used by the quant8 presets (typical TFLite-converted values).
_Q_INPUT = (1 / 128, 128)
_Q_ACT = (6 / 255, 0)  # RELU6 outputs
_Q_LINEAR = (0.05, 128)  # outputs without activation
_Q_WEIGHTS = (0.02, 128)
_Q_SOFTMAX = (1 / 256, 0)


@attrs.define
class _Builder:
    """Accumulates operands and operations of one subgraph; constants go into a shared blob."""

    dtype: str
    blob: list[int] = attrs.field(factory=lambda: [0])  # shared operand_values size cell
    operands: list[Operand] = attrs.field(factory=list)
    operations: list[Operation] = attrs.field(factory=list)
    inputs: list[int] = attrs.field(factory=list)
    outputs: list[int] = attrs.field(factory=list)
    _scalars: dict[tuple[OperandType, float], int] = attrs.field(factory=dict)

    @property
    def quant(self) -> bool:
        return self.dtype == "quant8"

    @property
    def tensor_type(self) -> OperandType:
        return OperandType.TENSOR_QUANT8_ASYMM if self.quant else OperandType.TENSOR_FLOAT32

    def _add(self, operand: Operand) -> int:
        self.operands.append(operand)
        return len(self.operands) - 1

    def tensor(
        self,
        shape: Sequence[int],
        qparams: tuple[float, int] = _Q_LINEAR,
        kind: OperandType | None = None,
    ) -> int:
        """A temporary tensor of the builder's dtype (or ``kind``)."""
        return self._add(self._operand(shape, kind, qparams))

    def _operand(
        self, shape: Sequence[int], kind: OperandType | None, qparams: tuple[float, int]
    ) -> Operand:
        """An operand of ``shape`` and the builder's dtype (or ``kind``), quantized by ``qparams``."""
        kind = self.tensor_type if kind is None else kind
        scale, zero_point = _qparams(kind, qparams)
        return Operand(type=kind, dimensions=shape, scale=scale, zero_point=zero_point)

    def constant(
        self,
        shape: Sequence[int],
        kind: OperandType | None = None,
        qparams: tuple[float, int] = _Q_WEIGHTS,
    ) -> int:
        """A CONSTANT_COPY operand placed at the next 4-byte aligned offset of the blob."""
        operand = self._operand(shape, kind, qparams)
        offset = -(-self.blob[0] // 4) * 4
        self.blob[0] = offset + operand.byte_size
        return self._add(
            attrs.evolve(
                operand,
                lifetime=OperandLifeTime.CONSTANT_COPY,
                location=DataLocation(offset=offset, length=operand.byte_size),
            )
        )

    def scalar(self, value: float, kind: OperandType = OperandType.INT32) -> int:
        """A shared constant scalar (one operand per distinct value)."""
        key = (kind, value)
        if key not in self._scalars:
            self._scalars[key] = self.constant((), kind)
        return self._scalars[key]

    def bias(self, channels: int, input_scale: float, filter_scale: float) -> int:
        """A bias constant: TENSOR_INT32 with scale input x filter scale when quantized."""
        if not self.quant:
            return self.constant((channels,))
        index = self.constant((channels,), OperandType.TENSOR_INT32)
        self.operands[index] = attrs.evolve(self.operands[index], scale=input_scale * filter_scale)
        return index

    def model_input(
        self,
        shape: Sequence[int],
        kind: OperandType | None = None,
        qparams: tuple[float, int] = _Q_INPUT,
    ) -> int:
        operand = self._operand(shape, kind, qparams)
        index = self._add(attrs.evolve(operand, lifetime=OperandLifeTime.SUBGRAPH_INPUT))
        self.inputs.append(index)
        return index

    def op(self, kind: OperationType, inputs: Sequence[int], outputs: Sequence[int]) -> None:
        self.operations.append(Operation(type=kind, inputs=inputs, outputs=outputs))

    def mark_output(self, index: int) -> None:
        self.operands[index] = attrs.evolve(
            self.operands[index], lifetime=OperandLifeTime.SUBGRAPH_OUTPUT
        )
        self.outputs.append(index)

    def shape(self, index: int) -> tuple[int, ...]:
        return self.operands[index].dimensions

    def scale(self, index: int) -> float:
        return self.operands[index].scale

    def subgraph(self) -> Subgraph:
        """The finished subgraph, with numberOfConsumers counted from the operations."""
        counts = [0] * len(self.operands)
        for operation in self.operations:
            for index in operation.inputs:
                counts[index] += 1
        # _types.py's ``converter=tuple`` fields type as Iterable[_T_co] under mypy's attrs
        # plugin, which no argument satisfies; build through an untyped alias until fixed.
        return _SUBGRAPH(
            operands=tuple(
                attrs.evolve(o, number_of_consumers=n)
                for o, n in zip(self.operands, counts, strict=True)
            ),
            operations=tuple(self.operations),
            input_indexes=tuple(self.inputs),
            output_indexes=tuple(self.outputs),
        )

    def model(self, name: str, referenced: Sequence[Subgraph] = ()) -> Model:
        return _MODEL(
            main=self.subgraph(),
            referenced=tuple(referenced),
            operand_values_size=-(-self.blob[0] // 4) * 4,
            name=name,
        )

    # --- layers -------------------------------------------------------------------

    def conv(
        self,
        x: int,
        out_channels: int,
        kernel: int | tuple[int, int],
        stride: int,
        activation: int,
        out_hw: tuple[int, int] | None = None,
    ) -> int:
        """CONV_2D (implicit SAME padding) with a [out, kh, kw, in] filter."""
        n, h, w, c = self.shape(x)
        kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
        oh, ow = out_hw or (math.ceil(h / stride), math.ceil(w / stride))
        filt = self.constant((out_channels, kh, kw, c))
        bias = self.bias(out_channels, self.scale(x), self.scale(filt))
        out = self.tensor((n, oh, ow, out_channels), _Q_ACT if activation else _Q_LINEAR)
        self.op(
            OperationType.CONV_2D,
            [x, filt, bias, *self._implicit(stride, stride), self.scalar(activation)],
            [out],
        )
        return out

    def depthwise(
        self,
        x: int,
        kernel: int | tuple[int, int],
        stride: int,
        activation: int,
        multiplier: int = 1,
        out_hw: tuple[int, int] | None = None,
    ) -> int:
        """DEPTHWISE_CONV_2D (implicit SAME padding) with a [1, kh, kw, in*multiplier] filter."""
        n, h, w, c = self.shape(x)
        kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
        oh, ow = out_hw or (math.ceil(h / stride), math.ceil(w / stride))
        filt = self.constant((1, kh, kw, c * multiplier))
        bias = self.bias(c * multiplier, self.scale(x), self.scale(filt))
        out = self.tensor((n, oh, ow, c * multiplier), _Q_ACT if activation else _Q_LINEAR)
        self.op(
            OperationType.DEPTHWISE_CONV_2D,
            [
                x,
                filt,
                bias,
                *self._implicit(stride, stride),
                self.scalar(multiplier),
                self.scalar(activation),
            ],
            [out],
        )
        return out

    def _implicit(self, stride_w: int, stride_h: int) -> list[int]:
        return [self.scalar(_PADDING_SAME), self.scalar(stride_w), self.scalar(stride_h)]

    def pool(
        self,
        kind: OperationType,
        x: int,
        window: tuple[int, int],
        stride: tuple[int, int],
        out_hw: tuple[int, int],
    ) -> int:
        """AVERAGE_POOL_2D / MAX_POOL_2D in the implicit-padding form."""
        n, _, _, c = self.shape(x)
        out = self.tensor((n, *out_hw, c), self._same_q(x))
        padding = _PADDING_VALID if out_hw == (1, 1) else _PADDING_SAME
        self.op(
            kind,
            [
                x,
                self.scalar(padding),
                self.scalar(stride[1]),
                self.scalar(stride[0]),
                self.scalar(window[1]),
                self.scalar(window[0]),
                self.scalar(_ACT_NONE),
            ],
            [out],
        )
        return out

    def fully_connected(
        self, x: int, units: int, activation: int = _ACT_NONE, input_size: int | None = None
    ) -> int:
        """FULLY_CONNECTED with [units, input_size] weights; output [batch, units]."""
        shape = self.shape(x)
        size = input_size or shape[-1]
        batch = max(1, math.prod(d or 1 for d in shape) // size)
        weights = self.constant((units, size))
        bias = self.bias(units, self.scale(x), self.scale(weights))
        out = self.tensor((batch, units), _Q_ACT if activation else _Q_LINEAR)
        self.op(OperationType.FULLY_CONNECTED, [x, weights, bias, self.scalar(activation)], [out])
        return out

    def reshape(self, x: int, shape: Sequence[int]) -> int:
        spec = self.constant((len(shape),), OperandType.TENSOR_INT32)
        out = self.tensor(shape, self._same_q(x))
        self.op(OperationType.RESHAPE, [x, spec], [out])
        return out

    def softmax(self, x: int) -> int:
        out = self.tensor(self.shape(x), _Q_SOFTMAX)
        self.op(OperationType.SOFTMAX, [x, self.scalar(1.0, OperandType.FLOAT32)], [out])
        return out

    def binary(self, kind: OperationType, a: int, b: int, activation: int = _ACT_NONE) -> int:
        out = self.tensor(self.shape(a), _Q_LINEAR, self.operands[a].type)
        self.op(kind, [a, b, self.scalar(activation)], [out])
        return out

    def unary(self, kind: OperationType, x: int, shape: Sequence[int] | None = None) -> int:
        out = self.tensor(shape or self.shape(x), self._same_q(x))
        self.op(kind, [x], [out])
        return out

    def _same_q(self, x: int) -> tuple[float, int]:
        operand = self.operands[x]
        return (operand.scale, operand.zero_point) if self.quant else _Q_LINEAR

    def lstm(
        self, x: int, state: tuple[int, int], units: int, weights: Sequence[int] | None = None
    ) -> tuple[int, int, int, list[int]]:
        """One LSTM step (23-input 1.0 form, no peephole/projection).

        Returns (output, output_state_out, cell_state_out, weights) so later steps can
        share the weight constants.
        """
        batch, size = self.shape(x)
        if weights is None:
            input_w = [self.constant((units, size)) for _ in range(4)]
            recurrent_w = [self.constant((units, units)) for _ in range(4)]
            peephole = [self._no_value((units,)) for _ in range(3)]
            gate_bias = [self.constant((units,)) for _ in range(4)]
            projection = [self._no_value((units, units)), self._no_value((units,))]
            weights = [*input_w, *recurrent_w, *peephole, *gate_bias, *projection]
        scratch = self.tensor((batch, 4 * units), kind=OperandType.TENSOR_FLOAT32)
        out_state = self.tensor((batch, units), kind=OperandType.TENSOR_FLOAT32)
        cell_state = self.tensor((batch, units), kind=OperandType.TENSOR_FLOAT32)
        output = self.tensor((batch, units), kind=OperandType.TENSOR_FLOAT32)
        clip = self.scalar(0.0, OperandType.FLOAT32)
        self.op(
            OperationType.LSTM,
            [x, *weights, state[0], state[1], self.scalar(4), clip, clip],  # activation TANH
            [scratch, out_state, cell_state, output],
        )
        return output, out_state, cell_state, list(weights)

    def _no_value(self, shape: Sequence[int]) -> int:
        return self._add(
            Operand(
                type=OperandType.TENSOR_FLOAT32,
                dimensions=shape,
                lifetime=OperandLifeTime.NO_VALUE,
            )
        )


def _qparams(kind: OperandType, qparams: tuple[float, int]) -> tuple[float, int]:
    if kind in (OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED):
        scale, zero_point = qparams
        if kind == OperandType.TENSOR_QUANT8_ASYMM_SIGNED:
            zero_point -= 128
        return scale, zero_point
    return 0.0, 0


def _check_dtype(dtype: str) -> None:
    if dtype not in DTYPES:
        msg = f"dtype: expected one of {', '.join(DTYPES)}, got {dtype!r}"
        raise ValueError(msg)


def _int_param(params: Mapping[str, float], key: str, default: int) -> int:
    value = params.get(key, default)
    if value != int(value) or value <= 0:
        msg = f"params.{key}: expected a positive integer, got {value!r}"
        raise ValueError(msg)
    return int(value)


# --- presets ---------------------------------------------------------------------------


def _add(dtype: str, params: Mapping[str, float]) -> Model:
    size = _int_param(params, "size", 1000)
    b = _Builder(dtype)
    x = b.model_input((1, size))
    y = b.model_input((1, size))
    out = b.binary(OperationType.ADD, x, y)
    b.mark_output(out)
    return b.model(f"add_{dtype}")


def _make_divisible(value: float, divisor: int = 8) -> int:
    """Channel rounding of the MobileNet reference code."""
    rounded = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * value else rounded


def _classifier(b: _Builder, x: int, classes: int) -> int:
    _, h, w, _ = b.shape(x)
    pooled = b.pool(OperationType.AVERAGE_POOL_2D, x, (h, w), (h, w), (1, 1))
    logits = b.conv(pooled, classes, 1, 1, _ACT_NONE)
    flat = b.reshape(logits, (1, classes))
    return b.softmax(flat)


def _mobilenet_v1(dtype: str, params: Mapping[str, float]) -> Model:
    size = _int_param(params, "input_size", 224)
    width = float(params.get("width", 1.0))
    classes = _int_param(params, "classes", 1001)
    b = _Builder(dtype)
    x = b.model_input((1, size, size, 3))
    x = b.conv(x, _make_divisible(32 * width), 3, 2, _ACT_RELU6)
    blocks = [(1, 64), (2, 128), (1, 128), (2, 256), (1, 256), (2, 512)]
    blocks += [(1, 512)] * 5 + [(2, 1024), (1, 1024)]
    for stride, channels in blocks:
        x = b.depthwise(x, 3, stride, _ACT_RELU6)
        x = b.conv(x, _make_divisible(channels * width), 1, 1, _ACT_RELU6)
    b.mark_output(_classifier(b, x, classes))
    return b.model(f"mobilenet_v1_{width:g}_{size}_{dtype}")


def _mobilenet_v2(dtype: str, params: Mapping[str, float]) -> Model:
    size = _int_param(params, "input_size", 224)
    width = float(params.get("width", 1.0))
    classes = _int_param(params, "classes", 1001)
    b = _Builder(dtype)
    x = b.model_input((1, size, size, 3))
    x = b.conv(x, _make_divisible(32 * width), 3, 2, _ACT_RELU6)
    settings = [
        (1, 16, 1, 1),
        (6, 24, 2, 2),
        (6, 32, 3, 2),
        (6, 64, 4, 2),
        (6, 96, 3, 1),
        (6, 160, 3, 2),
        (6, 320, 1, 1),
    ]
    for expansion, channels, repeats, first_stride in settings:
        out_channels = _make_divisible(channels * width)
        for i in range(repeats):
            stride = first_stride if i == 0 else 1
            in_channels = b.shape(x)[3]
            y = x
            if expansion != 1:
                y = b.conv(y, in_channels * expansion, 1, 1, _ACT_RELU6)
            y = b.depthwise(y, 3, stride, _ACT_RELU6)
            y = b.conv(y, out_channels, 1, 1, _ACT_NONE)
            if stride == 1 and in_channels == out_channels:
                y = b.binary(OperationType.ADD, x, y)
            x = y
    x = b.conv(x, _make_divisible(1280 * max(1.0, width)), 1, 1, _ACT_RELU6)
    b.mark_output(_classifier(b, x, classes))
    return b.model(f"mobilenet_v2_{width:g}_{size}_{dtype}")


def _lstm(dtype: str, params: Mapping[str, float]) -> Model:
    """Stacked LSTM unrolled over time: one LSTM op per step and layer, then FULLY_CONNECTED.

    NNAPI's LSTM has no TENSOR_QUANT8_ASYMM form, so the quant8 variant is hybrid: quant8
    step inputs, DEQUANTIZE to float, float LSTM and classifier.
    """
    steps = _int_param(params, "steps", 8)
    units = _int_param(params, "units", 256)
    size = _int_param(params, "input", 128)
    layers = _int_param(params, "layers", 2)
    classes = _int_param(params, "classes", 16)
    b = _Builder(dtype)
    step_inputs = [b.model_input((1, size)) for _ in range(steps)]
    if b.quant:
        dequantized = []
        for x in step_inputs:
            y = b.tensor((1, size), kind=OperandType.TENSOR_FLOAT32)
            b.op(OperationType.DEQUANTIZE, [x], [y])
            dequantized.append(y)
        step_inputs = dequantized
    b.dtype = "float32"  # everything after the inputs is float (see above)
    float_b = b
    sequence = step_inputs
    for _ in range(layers):
        zeros = float_b.constant((1, units))
        state = (zeros, zeros)
        weights: list[int] | None = None
        outputs = []
        for x in sequence:
            output, out_state, cell_state, weights = float_b.lstm(x, state, units, weights)
            state = (out_state, cell_state)
            outputs.append(output)
        sequence = outputs
    logits = float_b.fully_connected(sequence[-1], classes)
    float_b.mark_output(float_b.softmax(logits))
    return float_b.model(f"lstm_{layers}x{units}_{steps}steps_{dtype}")


def _while_loop(dtype: str, params: Mapping[str, float]) -> Model:
    """A WHILE loop running a FULLY_CONNECTED body a fixed number of times.

    The loop carries (counter TENSOR_INT32 [1], state [1, body_size]); the condition is
    LESS(counter, limit) and the body adds 1 to the counter. Operand values are not
    modelled, so the trip count is carried by a shape: the last (input-only) WHILE input
    is a ``trip`` TENSOR_INT32 constant of shape [iterations] (the per-iteration step table
    a converter would emit); :func:`loop_iterations` reads it back.
    """
    iterations = _int_param(params, "iterations", 10)
    body_size = _int_param(params, "body_size", 256)
    blob = [0]
    t_int = OperandType.TENSOR_INT32

    def loop_inputs(sub: _Builder) -> tuple[int, int, int, int]:
        counter = sub.model_input((1,), t_int, (0.0, 0))
        state = sub.model_input((1, body_size), None, _Q_ACT)
        limit = sub.model_input((1,), t_int, (0.0, 0))
        trip = sub.model_input((iterations,), t_int, (0.0, 0))
        return counter, state, limit, trip

    cond = _Builder(dtype, blob)
    counter, _, limit, _ = loop_inputs(cond)
    flag = cond.tensor((1,), kind=OperandType.TENSOR_BOOL8)
    cond.op(OperationType.LESS, [counter, limit], [flag])
    cond.mark_output(flag)

    body = _Builder(dtype, blob)
    counter, state, _, _ = loop_inputs(body)
    one = body.constant((1,), t_int)
    next_counter = body.tensor((1,), kind=t_int)
    body.op(OperationType.ADD, [counter, one, body.scalar(_ACT_NONE)], [next_counter])
    next_state = body.fully_connected(state, body_size, _ACT_RELU)
    body.mark_output(next_counter)
    body.mark_output(next_state)

    main = _Builder(dtype, blob)
    x = main.model_input((1, body_size), None, _Q_ACT)
    cond_ref = main._add(
        Operand(
            type=OperandType.SUBGRAPH,
            lifetime=OperandLifeTime.SUBGRAPH,
            location=DataLocation(offset=0),
        )
    )
    body_ref = main._add(attrs.evolve(main.operands[cond_ref], location=DataLocation(offset=1)))
    start = main.constant((1,), t_int)
    limit_value = main.constant((1,), t_int)
    trip = main.constant((iterations,), t_int)
    final_counter = main.tensor((1,), kind=t_int)
    final_state = main.tensor((1, body_size), _Q_ACT)
    main.op(
        OperationType.WHILE,
        [cond_ref, body_ref, start, x, limit_value, trip],
        [final_counter, final_state],
    )
    main.mark_output(final_state)
    return main.model(
        f"while_loop_{iterations}x{body_size}_{dtype}", [cond.subgraph(), body.subgraph()]
    )


PRESETS: Mapping[str, Callable[[str, Mapping[str, float]], Model]] = {
    "mobilenet_v1": _mobilenet_v1,
    "mobilenet_v2": _mobilenet_v2,
    "lstm": _lstm,
    "while_loop": _while_loop,
    "add": _add,
}
"""Preset builders by name, in the order messages list them (the one list of presets:
``nnemu.scenario.PRESETS`` is its keys)."""


def build_preset(
    name: str, dtype: str = "float32", params: Mapping[str, float] | None = None
) -> Model:
    """Build the preset model ``name``.

    Args:
        name: one of :data:`PRESETS` (mobilenet_v1, mobilenet_v2, lstm, while_loop, add).
        dtype: one of :data:`DTYPES` (``"float32"`` or ``"quant8"``).
        params: preset parameters. add: size (1000). mobilenet_v1/v2: input_size (224),
            width (1.0), classes (1001). lstm: steps (8), units (256), input (128),
            layers (2), classes (16). while_loop: iterations (10), body_size (256).

    Raises:
        ValueError: unknown name or dtype, or a parameter that is not a positive integer.
    """
    if name not in PRESETS:
        msg = f"preset: expected one of {', '.join(PRESETS)}, got {name!r}"
        raise ValueError(msg)
    _check_dtype(dtype)
    # A value's type is part of its key: 3 and 3.0 are equal keys but need not build alike.
    key = tuple(sorted((k, type(v), v) for k, v in (params or {}).items()))
    try:
        hash(key)
    except TypeError:  # a parameter that cannot be a key (unhashable): built afresh
        return PRESETS[name](dtype, params or {})
    return _built_preset(name, dtype, key)


@functools.lru_cache(maxsize=64)
def _built_preset(name: str, dtype: str, params: tuple[tuple[str, type, float], ...]) -> Model:
    """``build_preset``'s model, built once per distinct (name, dtype, params).

    A ``Model`` is a frozen value, so every caller can share one: a scenario's check, each
    run's emulator and replay's device reading each build the model of the same spec
    (MobileNet v1 takes ~2.5 ms to build).
    """
    return PRESETS[name](dtype, {k: v for k, _, v in params})


def loop_iterations(model: Model, operation: Operation | None = None) -> int:
    """How many times the emulator should run a WHILE loop's body.

    The count is the first dimension of the WHILE operation's last input (the ``trip``
    constant the ``while_loop`` preset stores); a WHILE without such an input
    (a TENSOR_INT32 of rank 1) is assumed to run once.

    Args:
        model: the model holding the loop.
        operation: a WHILE operation of ``model``'s main subgraph; default the first one.

    Raises:
        ValueError: no WHILE operation in the main subgraph.
    """
    if operation is None:
        loops = [op for op in model.main.operations if op.type == OperationType.WHILE]
        if not loops:
            msg = f"model {model.name!r} has no WHILE operation"
            raise ValueError(msg)
        operation = loops[0]
    return _trip_count(model.main, operation)


def _trip_count(subgraph: Subgraph, operation: Operation) -> int:
    if len(operation.inputs) < 3:
        return 1
    last = subgraph.operands[operation.inputs[-1]]
    if last.type != OperandType.TENSOR_INT32 or len(last.dimensions) != 1:
        return 1
    return max(1, last.dimensions[0])


# --- chains ----------------------------------------------------------------------------

_UNARY_OPS = frozenset(
    {
        OperationType.RELU,
        OperationType.RELU1,
        OperationType.RELU6,
        OperationType.LOGISTIC,
        OperationType.TANH,
        OperationType.HARD_SWISH,
        OperationType.L2_NORMALIZATION,
    }
)
_BINARY_OPS = frozenset({OperationType.ADD, OperationType.MUL, OperationType.SUB})


def _chain_input_shape(
    kind: OperationType, out: tuple[int, ...], filt: tuple[int, ...] | None
) -> tuple[int, ...]:
    if kind == OperationType.CONV_2D and filt and len(out) == 4:
        return (*out[:3], filt[3])
    if kind == OperationType.FULLY_CONNECTED and filt:
        return (out[0], filt[1])
    if kind in (OperationType.LSTM, OperationType.RNN) and filt:
        return (out[0], filt[1])
    return out


def _window(
    filt: tuple[int, ...] | None, in_hw: tuple[int, ...], out_hw: tuple[int, ...]
) -> tuple[int, int]:
    if filt and len(filt) == 2:
        return filt[0], filt[1]
    if filt and len(filt) == 4:
        return filt[1], filt[2]
    ratio = (max(1, in_hw[0] // out_hw[0]), max(1, in_hw[1] // out_hw[1]))
    return (3, 3) if ratio == (1, 1) else ratio


def _chain_layer(
    b: _Builder, x: int, kind: OperationType, out: tuple[int, ...], filt: tuple[int, ...] | None
) -> int:
    in_shape = b.shape(x)
    if kind in (OperationType.CONV_2D, OperationType.DEPTHWISE_CONV_2D):
        return _conv_layer(b, x, kind, out, filt)
    if kind == OperationType.FULLY_CONNECTED:
        size = filt[1] if filt and len(filt) == 2 else math.prod(in_shape[1:]) or 1
        y = b.fully_connected(x, out[-1], _ACT_NONE, size)
        return y if b.shape(y) == out else b.reshape(y, out)
    if kind in (OperationType.AVERAGE_POOL_2D, OperationType.MAX_POOL_2D):
        if len(in_shape) != 4 or len(out) != 4:
            msg = f"{kind.name}: expected rank-4 input and output shapes"
            raise ValueError(msg)
        window = _window(filt, in_shape[1:3], out[1:3])
        strides = (
            max(1, math.ceil(in_shape[1] / out[1])),
            max(1, math.ceil(in_shape[2] / out[2])),
        )
        return b.pool(kind, x, window, strides, (out[1], out[2]))
    if kind in _UNARY_OPS:
        return b.unary(kind, x)
    if kind in _BINARY_OPS:
        other = b.constant(in_shape, qparams=_Q_LINEAR)
        return b.binary(kind, x, other)
    if kind == OperationType.SOFTMAX:
        return b.softmax(x)
    if kind == OperationType.RESHAPE:
        return b.reshape(x, out)
    if kind == OperationType.CONCATENATION:
        extra = out[-1] - in_shape[-1]
        if extra <= 0 or len(out) != len(in_shape):
            msg = "CONCATENATION: output must extend the input's last axis"
            raise ValueError(msg)
        other = b.constant((*in_shape[:-1], extra), qparams=_Q_LINEAR)
        y = b.tensor(out, b._same_q(x))
        b.op(kind, [x, other, b.scalar(len(out) - 1)], [y])
        return y
    if kind in (OperationType.MEAN, OperationType.PAD, OperationType.TRANSPOSE):
        rank = len(in_shape)
        spec_shape = {OperationType.MEAN: (rank - 2,), OperationType.PAD: (rank, 2)}.get(
            kind, (rank,)
        )
        spec = b.constant(spec_shape, OperandType.TENSOR_INT32)
        keep_dims = [b.scalar(1)] if kind == OperationType.MEAN else []
        y = b.tensor(out, b._same_q(x))
        b.op(kind, [x, spec, *keep_dims], [y])
        return y
    if kind == OperationType.RESIZE_BILINEAR:
        y = b.tensor(out, b._same_q(x))
        b.op(kind, [x, b.scalar(out[2]), b.scalar(out[1])], [y])
        return y
    if kind in (OperationType.LSTM, OperationType.RNN):
        return _recurrent_layer(b, x, kind, out)
    msg = f"{kind.name} cannot be a chain layer"
    raise ValueError(msg)


def _conv_layer(
    b: _Builder, x: int, kind: OperationType, out: tuple[int, ...], filt: tuple[int, ...] | None
) -> int:
    """A CONV_2D or DEPTHWISE_CONV_2D chain layer (a flat input or output becomes 1x1)."""
    in_shape = b.shape(x)
    if len(out) != 4 or len(in_shape) != 4:
        x = b.reshape(x, (1, 1, 1, math.prod(in_shape)))
        in_shape = b.shape(x)
        out = (1, 1, 1, out[-1]) if len(out) != 4 else out
    kh, kw = (filt[1], filt[2]) if filt and len(filt) == 4 else (3, 3)
    stride = max(1, math.ceil(in_shape[1] / out[1]))
    if kind == OperationType.CONV_2D:
        return b.conv(x, out[3], (kh, kw), stride, _ACT_RELU, (out[1], out[2]))
    multiplier = max(1, out[3] // in_shape[3])
    return b.depthwise(x, (kh, kw), stride, _ACT_RELU, multiplier, (out[1], out[2]))


def _recurrent_layer(b: _Builder, x: int, kind: OperationType, out: tuple[int, ...]) -> int:
    """An LSTM or RNN chain layer (float32 only: neither has a quant8 form)."""
    if b.quant:
        msg = f"{kind.name} has no quant8 form; use dtype float32"
        raise ValueError(msg)
    in_shape = b.shape(x)
    if kind == OperationType.LSTM:
        zeros = b.constant((in_shape[0], out[-1]))
        output, *_ = b.lstm(x, (zeros, zeros), out[-1])
        return output
    batch, units = in_shape[0], out[-1]
    weights = [
        b.constant((units, in_shape[-1])),
        b.constant((units, units)),
        b.constant((units,)),
        b.constant((batch, units)),
    ]
    state, y = b.tensor((batch, units)), b.tensor((batch, units))
    b.op(kind, [x, *weights, b.scalar(_ACT_RELU)], [state, y])
    return y


def build_chain(
    layers: Sequence[tuple[OperationType, tuple[int, ...], tuple[int, ...] | None]],
    dtype: str = "float32",
) -> Model:
    """Build a model running ``layers`` one after the other (the scenario ``layers:`` form).

    Each layer is (operation type, output shape, filter shape or None). The model input
    has the shape the first layer needs; each layer reads the previous output. Filter
    shapes follow NNAPI: CONV_2D [out, kh, kw, in], DEPTHWISE_CONV_2D [1, kh, kw, out],
    FULLY_CONNECTED [units, input], pooling (kh, kw) or [1, kh, kw, 1] (default: the
    input/output ratio, or 3x3 at stride 1). Strides are inferred from the spatial sizes
    (SAME padding); convolutions get a fused RELU. Binary ops get a constant second operand.

    Raises:
        ValueError: empty ``layers``, bad dtype, or a layer type/shape the chain cannot build
            (IF, WHILE, OEM_OPERATION, DEQUANTIZE, QUANTIZE, LESS).
    """
    _check_dtype(dtype)
    if not layers:
        msg = "layers: expected at least one layer"
        raise ValueError(msg)
    b = _Builder(dtype)
    first_kind, first_out, first_filter = layers[0]
    x = b.model_input(_chain_input_shape(OperationType(first_kind), tuple(first_out), first_filter))
    for kind, out, filt in layers:
        if not out or any(d <= 0 for d in out):
            msg = f"{OperationType(kind).name}: output shape must be positive, got {out}"
            raise ValueError(msg)
        x = _chain_layer(b, x, OperationType(kind), tuple(out), tuple(filt) if filt else None)
    b.mark_output(x)
    names = "-".join(OperationType(kind).name.lower() for kind, _, _ in layers)
    return b.model(f"chain_{len(layers)}_{dtype}" if len(names) > 60 else f"chain_{names}")
