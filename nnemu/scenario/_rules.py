"""The loader's rules per section: what a scenario needs beyond each value's type and range
(names, references, which workload and fault keys go together, that each model builds).
"""

from __future__ import annotations

import itertools
import os
import typing
from typing import Final

from yaml.nodes import SequenceNode

from nnemu.errors import EmulatorBug
from nnemu.hal import (
    HalVersion,
    OperationType,
    build_chain,
    build_preset,
)
from nnemu.scenario._arrivals import ArrivalsError, read_arrivals
from nnemu.scenario._limits import (
    MAX_OPERATIONS,
    MAX_SCENARIO_THREADS,
    MAX_TIME_MS,
)
from nnemu.scenario._limits import number_text as _number_text
from nnemu.scenario._model import (
    CPU_DEVICE_NAME,
    DTYPES,
    FAULT_FIELDS,
    HARDWARE_BUFFERS_RULE,
    LAYERS_WITH_FILTER,
    PIPELINE_RULE,
    PRESETS,
    SYNC_FENCES_RULE,
    WORKLOAD_FIELDS,
    WORKLOAD_REQUIRED,
    AppSpec,
    DeviceSpec,
    ExecutionMode,
    FaultKind,
    FaultSpec,
    IpcSpec,
    LayerSpec,
    ModelSpec,
    Scenario,
    WorkloadKind,
    WorkloadSpec,
    scenario_threads,
)
from nnemu.scenario._schema import (
    _join,
    _Mapped,
)
from nnemu.scenario._walk import _Walker
from nnemu.scenario._yaml import (
    _clip,
    _quote_list,
)
from nnemu.tracer import NAME_RULE, name_problem

FIRST_UID: Final = 10000
"""An app without ``uid`` gets FIRST_UID + its index in ``apps``."""


class _Checker(_Walker):
    """The schema walk with the rules of each section."""

    def __init__(self, source: str) -> None:
        super().__init__(source)
        self._hooks = {
            Scenario: self._check_scenario,
            DeviceSpec: self._check_device,
            FaultSpec: self._check_fault,
            ModelSpec: self._check_model,
            LayerSpec: self._check_layer,
            AppSpec: self._check_app,
            WorkloadSpec: self._check_workload,
        }

    # -- cross-field checks ---------------------------------------------------------

    def _name(self, m: _Mapped, what: str) -> None:
        """App and device names go into report paths and every trace format: the one rule."""
        name = m.values.get("name")
        if isinstance(name, str) and name_problem(name) is not None:
            node, path = m.at("name")
            self.problem(node, path, f"expected {what} {NAME_RULE}, got {_clip(name)!r}")

    def _check_scenario(self, m: _Mapped) -> None:
        if m.valid("name") and not m.values["name"]:
            self.expected(*m.at("name"), "a non-empty name")
        devices, apps = m.values.get("devices", ()), m.values.get("apps", ())
        ipc = m.values.get("ipc", IpcSpec())
        if isinstance(devices, tuple) and isinstance(apps, tuple) and isinstance(ipc, IpcSpec):
            threads = scenario_threads(devices, apps, ipc)
            if threads > MAX_SCENARIO_THREADS:
                node, path = m.at("devices" if m.given("devices") else "apps")
                self.problem(
                    node,
                    path,
                    f"expected at most {MAX_SCENARIO_THREADS} threads in all (each device's "
                    "worker_threads and binder threads, each app's threads and binder threads, "
                    f"every one emulated), got {threads}",
                )

    def _check_device(self, m: _Mapped) -> None:
        self._name(m, "a device name")
        if m.values.get("name") == CPU_DEVICE_NAME:
            node, path = m.at("name")
            self.problem(
                node,
                path,
                f"expected a device name other than {CPU_DEVICE_NAME!r} "
                f"(the runtime's CPU device), got {CPU_DEVICE_NAME!r}",
            )
        version = m.values.get("hal_version")
        if (
            m.values.get("sync_fences") is True
            and isinstance(version, HalVersion)
            and not version.at_least(HalVersion.V1_3)
        ):
            self.expected(*m.at("sync_fences"), SYNC_FENCES_RULE)
        if (
            m.values.get("hardware_buffers") is True
            and isinstance(version, HalVersion)
            and not version.at_least(HalVersion.V1_2)
        ):
            self.expected(*m.at("hardware_buffers"), HARDWARE_BUFFERS_RULE)
        files = m.values.get("cache_files")
        if isinstance(files, tuple) and len(files) != 2:
            node, path = m.at("cache_files")
            self.problem(
                node,
                path,
                f"expected two counts [model files, data files], got {len(files)}",
            )

    def _check_fault(self, m: _Mapped) -> None:
        kind = m.values.get("kind")
        if not isinstance(kind, FaultKind):
            return
        required, allowed = FAULT_FIELDS[kind]
        for attr in required:
            if not m.has(attr):
                self.problem(
                    m.node,
                    m.path,
                    f"missing required key {attr!r} (needed by a {kind.value} fault)",
                )
        for attr in ("at_ms", "until_ms", "probability", "factor"):
            if m.has(attr) and attr not in allowed:
                users = ", ".join(k.value for k, (_, ok) in FAULT_FIELDS.items() if attr in ok)
                self.expected_only(m, attr, f"with kind {users}", f"kind {kind.value}")
        at, until = m.values.get("at_ms"), m.values.get("until_ms")
        if isinstance(at, float) and isinstance(until, float) and until <= at:
            node, path = m.at("until_ms")
            self.problem(node, path, f"expected a time after at_ms ({at:g}), got {until:g}")

    def expected_only(self, m: _Mapped, attr: str, condition: str, found: str) -> None:
        node, path = m.at(attr)
        self.problem(node, path, f"expected only {condition}, got {found}")

    def _check_model(self, m: _Mapped) -> None:
        has_preset = m.has("preset")
        has_layers = m.has("layers")
        if has_preset == has_layers:
            found = "both" if has_preset else "neither"
            self.problem(
                m.node, m.path, f"expected exactly one of 'preset' or 'layers', got {found}"
            )
        preset = m.values.get("preset")
        if isinstance(preset, str) and preset not in PRESETS:
            self.expected(*m.at("preset"), f"one of {_quote_list(PRESETS)}")
        if m.values.get("layers") == ():
            self.expected(*m.at("layers"), "a non-empty list of layers")
        if m.has("params") and not has_preset:
            self.expected_only(
                m, "params", "with 'preset'", "'layers'" if has_layers else "no preset"
            )
        dtype = m.values.get("dtype")
        if isinstance(dtype, str) and dtype not in DTYPES:
            self.expected(*m.at("dtype"), f"one of {_quote_list(DTYPES)}")
        if m.valid("name") and not m.values["name"]:
            self.expected(*m.at("name"), "a non-empty name")
        layers = m.values.get("layers")
        if isinstance(layers, tuple) and len(layers) > MAX_OPERATIONS:
            self.expected(*m.at("layers"), f"at most {MAX_OPERATIONS} layers")
        elif not self.problems_in(m):
            self._build_model(m)

    def problems_in(self, m: _Mapped) -> bool:
        """Whether a problem was recorded inside the mapping of ``m``."""
        return any(
            p.key_path == m.path or p.key_path.startswith(m.path + ".") for p in self.problems
        )

    def _build_model(self, m: _Mapped) -> None:
        """Build the model a valid spec describes, so what the HAL refuses is a problem here."""
        preset, dtype = m.values.get("preset"), m.values.get("dtype", "float32")
        params = dict(typing.cast(tuple[tuple[str, float], ...], m.values.get("params", ())))
        if preset == "lstm" and params.get("steps", 8) * params.get("layers", 2) > MAX_OPERATIONS:
            # The only preset whose size grows with its parameters: steps x layers cells.
            node, path = m.at("params")
            self.problem(
                node, path, f"expected steps x layers <= {MAX_OPERATIONS} (LSTM cells), got more"
            )
            return
        try:
            if isinstance(preset, str):
                build_preset(preset, str(dtype), params)
            else:
                layers = typing.cast(tuple[LayerSpec, ...], m.values.get("layers", ()))
                build_chain([(x.type, x.output, x.filter) for x in layers], str(dtype))
        except ValueError as err:
            node, path = m.at("params" if isinstance(preset, str) else "layers")
            self.problem(node, path, f"the model cannot be built: {_clip(str(err))}")
        except (ArithmeticError, LookupError, TypeError) as err:
            # The HAL's builders assume shapes of the rank each layer type takes.
            node, path = m.at("params" if isinstance(preset, str) else "layers")
            self.problem(
                node,
                path,
                f"the model cannot be built from these shapes ({type(err).__name__}: "
                f"{_clip(str(err))}); see docs/scenario-format.md, layer",
            )

    def _check_layer(self, m: _Mapped) -> None:
        kind = m.values.get("type")
        if not isinstance(kind, OperationType):
            return
        if kind in LAYERS_WITH_FILTER and not m.has("filter"):
            self.problem(m.node, m.path, f"missing required key 'filter' (needed by {kind.name})")
        if kind not in LAYERS_WITH_FILTER and m.has("filter"):
            names = ", ".join(sorted(t.name for t in LAYERS_WITH_FILTER))
            self.expected_only(m, "filter", f"with type {names}", f"type {kind.name}")

    def _check_app(self, m: _Mapped) -> None:
        self._name(m, "an app name")
        if not m.given("uid"):
            if m.index is None:
                raise EmulatorBug("an app was checked outside the apps list")
            m.values["uid"] = FIRST_UID + m.index
        model = m.values.get("model")
        if isinstance(model, str) and model not in self.model_names:
            known = _quote_list(self.model_names)
            if known:
                self.expected(*m.at("model"), f"the name of a model ({known})")
            else:
                self.expected(*m.at("model"), "the name of a model (none are defined)")
        devices_node = m.nodes.get("devices")
        devices = m.values.get("devices")
        if isinstance(devices, tuple) and isinstance(devices_node, SequenceNode):
            if not devices:
                self.expected(
                    devices_node, _join(m.path, "devices"), "a non-empty list of device names"
                )
            seen: set[str] = set()
            known_devices = [*sorted(self.device_names - {CPU_DEVICE_NAME}), CPU_DEVICE_NAME]
            for i, (name, node) in enumerate(zip(devices, devices_node.value, strict=True)):
                path = f"{m.path}.devices[{i}]"
                if name not in known_devices:
                    self.expected(
                        node, path, f"the name of a device ({_quote_list(known_devices)})"
                    )
                elif name in seen:
                    self.problem(
                        node, path, f"expected each device once, got {_clip(name)!r} again"
                    )
                seen.add(name)
        for attr in ("compile_timeout_ms", "execution_timeout_ms"):
            if not m.has(attr) or (m.given("devices") and not m.valid("devices")):
                continue
            count = len(devices) if isinstance(devices, tuple) else None
            if count != 1:
                found = "no 'devices' (all devices)" if count is None else f"{count} devices"
                self.expected_only(
                    m,
                    attr,
                    "when 'devices' lists exactly one device "
                    "(setTimeout needs a single-device compilation)",
                    found,
                )
        pipeline = m.values.get("pipeline")
        if isinstance(pipeline, int) and pipeline > 1:
            mode = m.values.get("execution_mode", ExecutionMode.SYNC)
            if mode is not ExecutionMode.FENCED or m.values.get("reusable") is True:
                self.expected(*m.at("pipeline"), PIPELINE_RULE)
        if not m.given("workload") and not self.has_duration:
            self.problem(
                m.node,
                m.path,
                "expected 'workload.executions' or a scenario 'duration_ms', "
                "got neither (the app would never finish)",
            )

    def _check_workload(self, m: _Mapped) -> None:
        if m.given("kind") and not m.valid("kind"):
            return
        kind = m.values.get("kind", WorkloadKind.CLOSED_LOOP)
        if not isinstance(kind, WorkloadKind):
            return
        for attr in WORKLOAD_REQUIRED[kind]:
            if not m.has(attr):
                self.problem(
                    m.node,
                    m.path,
                    f"missing required key {attr!r} (needed by a {kind.value} workload)",
                )
        for attr, owner in WORKLOAD_FIELDS.items():
            if m.has(attr) and owner is not kind:
                self.expected_only(m, attr, f"with kind {owner.value}", f"kind {kind.value}")
        if kind is WorkloadKind.TRACE:
            self._trace_arrivals(m)
            arrivals = m.values.get("arrivals_ms")
            if isinstance(arrivals, tuple) and any(
                later < earlier for earlier, later in itertools.pairwise(arrivals)
            ):
                self.problem(
                    m.node,
                    m.path + ".arrivals_ms",
                    "expected non-decreasing arrival times, got a time earlier than the one before",
                )
            return  # a trace workload ends after its last arrival
        if not m.has("executions") and not self.has_duration:
            self.problem(
                m.node,
                m.path,
                "expected 'executions' or a scenario 'duration_ms', "
                "got neither (the app would never finish)",
            )
        executions = m.values.get("executions")
        if isinstance(executions, int) and not self.has_duration:
            end = _last_arrival_ms(kind, executions, m.values)
            if end is not None and end > MAX_TIME_MS:
                node, path = m.at("executions")
                self.problem(
                    node,
                    path,
                    f"expected arrivals within {_number_text(MAX_TIME_MS)} ms (one hour of "
                    f"virtual time; or a scenario 'duration_ms'), got {executions} executions "
                    f"arriving until {end:.0f} ms",
                )

    def _trace_arrivals(self, m: _Mapped) -> None:
        """A trace workload's arrivals: ``arrivals_ms`` or ``arrivals_file`` (read here, its
        path resolved against the scenario's directory)."""
        given = [attr for attr in ("arrivals_ms", "arrivals_file") if m.has(attr)]
        if len(given) != 1:
            found = "both" if given else "neither"
            self.problem(
                m.node,
                m.path,
                f"expected 'arrivals_ms' or 'arrivals_file' (needed by a trace workload), got {found}",
            )
            return
        name = m.values.get("arrivals_file")
        if not isinstance(name, str):
            return
        node, path = m.at("arrivals_file")
        if not name:
            self.expected(node, path, "the path of a CSV or Parquet file")
            return
        resolved = os.path.normpath(os.path.join(os.path.dirname(self.source), name))
        try:
            arrivals = read_arrivals(resolved)
        except ArrivalsError as err:
            self.problem(node, path, f"cannot use the arrivals of {_clip(resolved)} (below)")
            self.problems.extend(err.problems)
            return
        m.values["arrivals_file"] = resolved
        m.values["arrivals_ms"] = tuple(arrivals)


def _last_arrival_ms(
    kind: WorkloadKind, executions: int, values: dict[str, object]
) -> float | None:
    """When the last of ``executions`` arrivals comes (the mean for Poisson, the least for a
    closed loop), from the workload's valid values; None when they do not say."""
    start = values.get("start_ms", 0.0)
    if not isinstance(start, float | int):
        return None
    if kind is WorkloadKind.PERIODIC:
        gap, count = values.get("period_ms"), executions - 1
    elif kind is WorkloadKind.BURST:
        size = values.get("burst_size")
        if not isinstance(size, int):
            return None
        gap, count = values.get("burst_interval_ms"), -(-executions // size) - 1
    elif kind is WorkloadKind.POISSON:
        rate = values.get("rate_hz")
        gap, count = (1000 / rate if isinstance(rate, float) else None), executions
    else:
        gap, count = values.get("think_ms", 0.0), executions - 1
    if not isinstance(gap, float | int):
        return None
    return start + gap * count
