"""ANeuralNetworksCompilation and ANeuralNetworksBurst: partitioning, preparation, caching.

``Compilation.finish`` partitions the model over the devices, prepares each
driver step through its ``VersionedIDevice`` (from the compilation cache first
when caching is set) and falls back to the CPU as the R runtime does
(docs/hal-semantics.md §3 and §5).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence

from nnemu.hal import (
    CACHE_TOKEN_BYTES,
    UINT64_MAX,
    ErrorStatus,
    ExecutionPreference,
    IBurst,
    Model,
    OperationType,
    Priority,
    ResultCode,
    status_to_code,
)
from nnemu.ipc import DeadObject
from nnemu.runtime._canonical import (
    NO_CACHE,
    CacheHandles,
    CanonicalBurst,
    CanonicalPreparedModel,
)
from nnemu.runtime._devices import RuntimeDevice
from nnemu.runtime._plan import Step, choose_devices, make_steps
from nnemu.runtime._runtime import PER_OP_NS, ModelBuilder
from nnemu.tracer import Phase


class Compilation:
    """ANeuralNetworksCompilation."""

    def __init__(
        self,
        model_builder: ModelBuilder,
        devices: Sequence[RuntimeDevice] | None,
    ) -> None:
        self.runtime = model_builder.runtime
        self.model_builder = model_builder
        """The finished ANeuralNetworksModel this compilation compiles."""
        self.model: Model = model_builder.model
        """The HAL model compiled."""
        self.explicit_devices = list(devices) if devices is not None else None
        self.preference = ExecutionPreference.FAST_SINGLE_ANSWER
        self.priority = Priority.MEDIUM
        self.timeout_ns: int | None = None
        self.cache_dir: str | None = None
        self.cache_token = b""
        self.finished = False
        self.steps: list[Step] = []
        self.prepared: dict[int, CanonicalPreparedModel] = {}
        """The prepared model of each driver step, by step index (CPU steps have none)."""
        self.from_cache = 0
        """Steps prepared from the compilation cache (prepareModelFromCache succeeded)."""

    @classmethod
    async def create(cls, model_builder: ModelBuilder) -> tuple[ResultCode, Compilation | None]:
        """ANeuralNetworksCompilation_create: all devices, with CPU fallback."""
        runtime = model_builder.runtime
        with runtime.ndk_call(Phase.COMPILATION, "ANeuralNetworksCompilation_create"):
            if not model_builder.finished:
                return ResultCode.BAD_STATE, None
            return ResultCode.NO_ERROR, cls(model_builder, None)

    @classmethod
    async def create_for_devices(
        cls, model_builder: ModelBuilder, devices: Sequence[RuntimeDevice]
    ) -> tuple[ResultCode, Compilation | None]:
        """ANeuralNetworksCompilation_createForDevices: only these devices, no CPU fallback."""
        runtime = model_builder.runtime
        with runtime.ndk_call(Phase.COMPILATION, "ANeuralNetworksCompilation_createForDevices"):
            if not devices or len({d.name for d in devices}) != len(devices):
                return ResultCode.BAD_DATA, None
            if not model_builder.finished:
                return ResultCode.BAD_STATE, None
            return ResultCode.NO_ERROR, cls(model_builder, devices)

    @property
    def fallback_allowed(self) -> bool:
        """CPU fallback is allowed only for Compilation_create (all devices)."""
        return self.explicit_devices is None

    @property
    def single_device(self) -> bool:
        """Whether this compilation was created for exactly one device."""
        return self.explicit_devices is not None and len(self.explicit_devices) == 1

    def set_preference(self, preference: int) -> ResultCode:
        """ANeuralNetworksCompilation_setPreference."""
        with self.runtime.ndk_call(Phase.COMPILATION, "ANeuralNetworksCompilation_setPreference"):
            if self.finished:
                return ResultCode.BAD_STATE
            if preference not in tuple(ExecutionPreference):
                return ResultCode.BAD_DATA
            self.preference = ExecutionPreference(preference)
            return ResultCode.NO_ERROR

    def set_priority(self, priority: int) -> ResultCode:
        """ANeuralNetworksCompilation_setPriority: 90/100/110 only (NDK values)."""
        with self.runtime.ndk_call(Phase.COMPILATION, "ANeuralNetworksCompilation_setPriority"):
            if self.finished:
                return ResultCode.BAD_STATE
            hal = Priority.from_ndk(priority)
            if hal is None:
                return ResultCode.BAD_DATA
            self.priority = hal
            return ResultCode.NO_ERROR

    def set_caching(self, cache_dir: str, token: bytes) -> ResultCode:
        """ANeuralNetworksCompilation_setCaching: a cache directory and a 32-byte token."""
        with self.runtime.ndk_call(Phase.COMPILATION, "ANeuralNetworksCompilation_setCaching"):
            if self.finished:
                return ResultCode.BAD_STATE
            if len(token) != CACHE_TOKEN_BYTES:
                return ResultCode.BAD_DATA
            self.cache_dir = cache_dir
            self.cache_token = bytes(token)
            return ResultCode.NO_ERROR

    def set_timeout(self, duration_ns: int) -> ResultCode:
        """ANeuralNetworksCompilation_setTimeout: single-device createForDevices only; 0 = none."""
        with self.runtime.ndk_call(Phase.COMPILATION, "ANeuralNetworksCompilation_setTimeout"):
            if self.finished:
                return ResultCode.BAD_STATE
            if not self.single_device:
                return ResultCode.BAD_DATA
            self.timeout_ns = duration_ns or None
            return ResultCode.NO_ERROR

    async def finish(self) -> ResultCode:
        """ANeuralNetworksCompilation_finish: partition, prepare each step, fall back to CPU."""
        runtime = self.runtime
        with runtime.ndk_call(Phase.COMPILATION, "ANeuralNetworksCompilation_finish"):
            if self.finished:
                return ResultCode.BAD_STATE
            self.finished = True
            deadline = None
            if self.timeout_ns is not None and min(self.timeout_ns, UINT64_MAX) < UINT64_MAX:
                deadline = runtime.kernel.task_now_ns() + self.timeout_ns
            code = await self._plan_and_prepare(deadline)
            if code is ResultCode.NO_ERROR or code is ResultCode.BAD_DATA:
                return code
            if self.fallback_allowed and not self._has_oem():
                runtime._log.info("compilation_fell_back_to_cpu", reason=code.name)
                operations = tuple(range(len(self.model.main.operations)))
                self.steps = [Step(runtime.cpu_device, operations, self.model)]
                self.prepared = {}
                return ResultCode.NO_ERROR
            return code

    def free(self) -> None:
        """ANeuralNetworksCompilation_free: release the prepared models (drivers free their memory)."""
        with self.runtime.ndk_call(Phase.TERMINATION, "ANeuralNetworksCompilation_free"):
            for prepared in self.prepared.values():
                prepared.release()
            self.prepared = {}

    def _has_oem(self) -> bool:
        return any(op.type is OperationType.OEM_OPERATION for op in self.model.main.operations)

    async def _plan_and_prepare(self, deadline_ns: int | None) -> ResultCode:
        """Partition the model over the devices, then prepare every driver step."""
        code = await self._partition()
        if code is not ResultCode.NO_ERROR:
            return code
        compound = len(self.steps) > 1
        for index, step in enumerate(self.steps):
            if not step.device.is_cpu:
                code = await self._prepare_step(index, step, compound, deadline_ns)
                if code is not ResultCode.NO_ERROR:
                    return code
        return ResultCode.NO_ERROR

    async def _partition(self) -> ResultCode:
        """Ask every device what it supports and split the model into steps (``self.steps``)."""
        runtime = self.runtime
        model = self.model
        devices = (
            self.explicit_devices
            if self.explicit_devices is not None
            else await runtime.get_devices()
        )
        supported: dict[str, tuple[bool, ...]] = {}
        for device in devices:
            if device.is_cpu:
                supported[device.name] = tuple(
                    op.type is not OperationType.OEM_OPERATION for op in model.main.operations
                )
            else:
                answer = await runtime.versioned(device).get_supported_operations(model)
                if isinstance(answer, DeadObject):
                    runtime.forget(device)
                    if self.explicit_devices is not None:
                        return ResultCode.DEAD_OBJECT
                    answer = (False,) * len(model.main.operations)
                supported[device.name] = answer
        runtime.kernel.work(PER_OP_NS * len(model.main.operations))
        chosen = choose_devices(model, devices, supported, self.preference)
        if any(device is None for device in chosen):
            return ResultCode.BAD_DATA
        self.steps = make_steps(model, [d for d in chosen if d is not None])
        return ResultCode.NO_ERROR

    async def _prepare_step(
        self, index: int, step: Step, compound: bool, deadline_ns: int | None
    ) -> ResultCode:
        """Prepare one driver step: from the cache first when caching, else (or then) fully."""
        runtime = self.runtime
        versioned = runtime.versioned(step.device)
        cache = self._cache_handles(step, compound)
        status: ErrorStatus | DeadObject = ErrorStatus.GENERAL_FAILURE
        prepared: CanonicalPreparedModel | None = None
        if cache is not None:
            # Try the cache first; on any failure prepare fully with the same handles.
            status, prepared = await versioned.prepare_model_from_cache(deadline_ns, cache)
            if status is ErrorStatus.NONE and prepared is not None:
                self.from_cache += 1
        if prepared is None and not isinstance(status, DeadObject):
            status, prepared = await versioned.prepare_model(
                step.model, self.preference, self.priority, deadline_ns, cache or NO_CACHE
            )
        if isinstance(status, DeadObject):
            runtime.forget(step.device)
            return ResultCode.DEAD_OBJECT
        if status is not ErrorStatus.NONE:
            return status_to_code(status)
        if prepared is None:
            return ResultCode.OP_FAILED
        self.prepared[index] = prepared
        return ResultCode.NO_ERROR

    def _cache_handles(self, step: Step, compound: bool) -> CacheHandles | None:
        """The cache files and token of ``step`` on its device, or None when not caching.

        As the R runtime: the app's token is re-hashed with the device's name and version
        string, the preference and the priority (and the step's operations in a compound
        plan); file names are the directory, 64 letters from the hash ('A' + low nibble,
        'A' + high nibble per byte), then '1' (model) or '2' (data) and the index.
        """
        device = step.device
        if self.cache_dir is None or not any(device.cache_files):
            return None
        digest = hashlib.sha256()
        for part in (
            self.cache_token,
            device.name.encode(),
            device.version_string.encode(),
            bytes([int(self.preference), int(self.priority)]),
        ):
            digest.update(part)
        if compound:
            digest.update(",".join(str(i) for i in step.operations).encode())
        token = digest.digest()
        letters = "".join(chr(65 + (b & 0xF)) + chr(65 + (b >> 4)) for b in token)
        base = os.path.join(self.cache_dir, letters)
        files = self.runtime.files
        n_model, n_data = device.cache_files
        return (
            tuple(files.open(f"{base}1{i}") for i in range(n_model)),
            tuple(files.open(f"{base}2{i}") for i in range(n_data)),
            token,
        )


class Burst:
    """ANeuralNetworksBurst: reusable fast channels to the drivers of one compilation.

    One ``configureExecutionBurst`` per driver step (HAL 1.2+); a step whose driver
    cannot burst runs through the normal path, as the R runtime falls back.
    """

    def __init__(self, compilation: Compilation) -> None:
        self.compilation = compilation
        self.contexts: dict[int, IBurst | CanonicalBurst] = {}
        """The burst of each driver step that could configure one, by step index: a HIDL
        driver's FMQ context, or an AIDL driver's IBurst."""
        self.busy = False
        """An execution is running through this burst."""

    @classmethod
    async def create(cls, compilation: Compilation) -> tuple[ResultCode, Burst | None]:
        """ANeuralNetworksBurst_create: the compilation must be finished."""
        runtime = compilation.runtime
        with runtime.ndk_call(Phase.PREPARATION, "ANeuralNetworksBurst_create"):
            if not compilation.finished:
                return ResultCode.BAD_STATE, None
            burst = cls(compilation)
            preference = int(compilation.preference)
            for index, prepared in compilation.prepared.items():
                context = await prepared.configure_execution_burst(burst, preference)
                if context is not None:
                    burst.contexts[index] = context
            return ResultCode.NO_ERROR, burst

    def free(self) -> None:
        """ANeuralNetworksBurst_free: the driver's burst threads end."""
        with self.compilation.runtime.ndk_call(Phase.TERMINATION, "ANeuralNetworksBurst_free"):
            for context in self.contexts.values():
                if not isinstance(context, IBurst):
                    context.close()
            self.contexts = {}
