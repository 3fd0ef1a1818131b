"""The NNAPI runtime (libneuralnetworks) of one app process: discovery, models, the NDK call.

``Runtime`` is ``ANeuralNetworks_*`` for one process and ``ModelBuilder`` is
``ANeuralNetworksModel``; compilations and executions live in their own modules.
Methods return ``ResultCode`` values exactly where the C functions return
``ANEURALNETWORKS_*`` codes, and calls that can wait are ``async``.  Behaviour
follows the Android 11 runtime (docs/hal-semantics.md §3 and §5): discovery,
partitioning, CPU fallback, status ↔ code mapping, sync/async/fenced modes.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence

import structlog
import trio

from nnemu.cost import ComputePlan, compute_plan
from nnemu.hal import (
    DataLocation,
    DeviceType,
    HalVersion,
    IAidlDevice,
    Model,
    Request,
    RequestArgument,
    ResultCode,
    validate_model,
)
from nnemu.ipc import Binder, Endpoint
from nnemu.runtime._aidl import AidlIDevice
from nnemu.runtime._canonical import CanonicalDevice
from nnemu.runtime._devices import (
    CPU_CAPABILITIES,
    CPU_DEVICE_NAME,
    AidlDriverDevice,
    CpuStats,
    DriverDevice,
    RuntimeDevice,
)
from nnemu.runtime._versioned import VersionedIDevice
from nnemu.scenario import CpuSpec
from nnemu.sim import FileSystem, Kernel, SimProcess, us
from nnemu.tracer import Layer, Mark, Phase, Section, Tracer, mark

logger = structlog.get_logger(layer="runtime")

API_CALL_NS = 2_000
"""CPU time of a trivial NDK call (argument checks, bookkeeping)."""
PER_OP_NS = 1_000
"""Runtime CPU time per operation for model finish, partitioning and request building."""

_NDK_MARKS: dict[str, Mark] = {}
"""The NDK calls' ``[NN_LR_<phase>]name`` marks by name, built on first use."""


class Runtime:
    """The NNAPI runtime inside one app process."""

    def __init__(
        self,
        *,
        kernel: Kernel,
        tracer: Tracer,
        binder: Binder,
        process: SimProcess,
        endpoint: Endpoint,
        services: Sequence[DriverDevice | AidlDriverDevice],
        cpu: CpuSpec,
        nursery: trio.Nursery,
        files: FileSystem | None = None,
    ) -> None:
        self.kernel = kernel
        self.files = files if files is not None else FileSystem()
        self.tracer = tracer
        self.binder = binder
        self.process = process
        self.endpoint = endpoint
        self.cpu = cpu
        self.nursery = nursery
        self._services = list(services)
        self._devices: list[RuntimeDevice] | None = None
        self._versioned: dict[str, CanonicalDevice] = {}
        self._log = logger.bind(process=process.name)
        self.cpu_device = RuntimeDevice(
            name=CPU_DEVICE_NAME,
            type=DeviceType.CPU,
            version_string="1",
            hal_version=HalVersion.V1_3,
            capabilities=CPU_CAPABILITIES,
        )
        self.async_threads = 0
        """Threads started for asynchronous executions (they are named after the count)."""
        self._cpu_plans: dict[int, tuple[Model, ComputePlan]] = {}
        self.cpu_stats = CpuStats()
        """What the runtime's CPU executor did (nnapi-reference in the report)."""
        self.cpu_spans: array[int] = array("q")
        """(start_ns, end_ns) of each CPU execution, flat: the report's ``busy_fraction`` of
        nnapi-reference is the union of every runtime's spans (16 bytes an execution)."""
        self.cpu_history: list[tuple[int, int, str, int | None]] | None = None
        """(start_ns, end_ns, result code name, deadline_ns) of each CPU execution, when the
        run keeps per-execution records (``keep_executions``)."""
        self._requests: dict[int, tuple[Model, Request]] = {}

    def ndk_call(self, phase: Phase, name: str) -> Section:
        """One NDK function: its ``[NN_LR_<phase>]name`` section, charged the API call's CPU time.

        ``with runtime.ndk_call(Phase.EXECUTION, "ANeuralNetworksExecution_compute"):``
        -- the section ends when the block exits, however it exits.
        """
        ndk_mark = _NDK_MARKS.get(name)
        if ndk_mark is None or ndk_mark.info[2] is not phase:
            ndk_mark = _NDK_MARKS[name] = mark(Layer.RUNTIME, phase, name)
        return self.tracer.section(ndk_mark, work_ns=API_CALL_NS)

    # -------------------------------------------------------------- devices
    async def _discover(self) -> list[RuntimeDevice]:
        """Device discovery (once per process): drop every device that fails a query."""
        if self._devices is None:
            with self.tracer.section(
                mark(Layer.RUNTIME, Phase.INITIALIZATION, "DeviceManager::findAvailableDevices")
            ):
                devices: list[RuntimeDevice] = []
                for service in self._services:
                    # The one interface to a HIDL or an AIDL driver (canonical nn::IDevice).
                    versioned: CanonicalDevice = (
                        AidlIDevice(
                            service,
                            kernel=self.kernel,
                            tracer=self.tracer,
                            binder=self.binder,
                            client=self.endpoint,
                            uid=self.process.uid,
                        )
                        if isinstance(service, IAidlDevice)
                        else VersionedIDevice(
                            service,
                            kernel=self.kernel,
                            tracer=self.tracer,
                            binder=self.binder,
                            client=self.endpoint,
                            uid=self.process.uid,
                        )
                    )
                    device = await versioned.discover()
                    if device is not None:
                        devices.append(device)
                        self._versioned[device.name] = versioned
                devices.append(self.cpu_device)
                self._devices = devices
        return self._devices

    async def get_devices(self) -> list[RuntimeDevice]:
        """ANeuralNetworks_getDeviceCount / getDevice: every device, the CPU device last."""
        return list(await self._discover())

    def cpu_plan(self, model: Model) -> ComputePlan:
        """The CPU executor's per-operation costs for ``model`` (computed once per model)."""
        entry = self._cpu_plans.get(id(model))
        if entry is None or entry[0] is not model:
            entry = (model, compute_plan(model, CPU_CAPABILITIES, self.cpu))
            self._cpu_plans[id(model)] = entry
        return entry[1]

    def forget(self, device: RuntimeDevice) -> None:
        """A device's driver died: later compilations no longer see it."""
        if self._devices is not None and device in self._devices:
            self._log.warning("device_lost", device=device.name)
            self._devices.remove(device)

    def request_for(self, model: Model) -> Request:
        """The request an execution of ``model`` sends (built once per model: it never changes)."""
        entry = self._requests.get(id(model))
        if entry is None or entry[0] is not model:
            entry = (model, build_request(model))
            self._requests[id(model)] = entry
        return entry[1]

    def versioned(self, device: RuntimeDevice) -> CanonicalDevice:
        """The canonical interface (a HAL family's adapter) of a discovered driver device."""
        return self._versioned[device.name]

    # -------------------------------------------------------------- models
    async def create_model(self, model: Model) -> tuple[ResultCode, ModelBuilder | None]:
        """ANeuralNetworksModel_create + the add/identify calls + finish, for a built HAL model.

        Returns finish's result code and the finished model.
        """
        kernel = self.kernel
        with self.ndk_call(Phase.PREPARATION, "ANeuralNetworksModel_create"):
            await self._discover()  # one-time initialisation happens at first use
        builder = ModelBuilder(self, model)
        with self.ndk_call(Phase.PREPARATION, "ANeuralNetworksModel_addOperand"):
            kernel.work(us(PER_OP_NS * len(model.main.operands) / 4))  # whole µs, as ftrace
        with self.ndk_call(Phase.PREPARATION, "ANeuralNetworksModel_addOperation"):
            kernel.work(us(PER_OP_NS * len(model.main.operations) / 2))
        with self.ndk_call(Phase.PREPARATION, "ANeuralNetworksModel_identifyInputsAndOutputs"):
            pass
        code = builder.finish()
        return code, builder if code is ResultCode.NO_ERROR else None


class ModelBuilder:
    """ANeuralNetworksModel (after its operands and operations were added)."""

    def __init__(self, runtime: Runtime, model: Model) -> None:
        self.runtime = runtime
        self.model = model
        """The HAL model built."""
        self.finished = False

    def finish(self) -> ResultCode:
        """ANeuralNetworksModel_finish: validate; BAD_DATA if invalid, BAD_STATE if finished."""
        runtime = self.runtime
        with runtime.ndk_call(Phase.PREPARATION, "ANeuralNetworksModel_finish"):
            if self.finished:
                return ResultCode.BAD_STATE
            with runtime.tracer.section(mark(Layer.UTILITY, Phase.UNSPECIFIED, "validateModel")):
                runtime.kernel.work(PER_OP_NS * len(self.model.main.operations))
                reason = validate_model(self.model, HalVersion.V1_3)
            if reason is not None:
                return ResultCode.BAD_DATA
            self.finished = True
            return ResultCode.NO_ERROR


def build_request(model: Model) -> Request:
    """The request an execution of ``model`` sends: one buffer per input and output, in two pools."""
    main = model.main

    def arguments(indexes: tuple[int, ...]) -> tuple[list[RequestArgument], int]:
        args, offset = [], 0
        for index in indexes:
            size = main.operands[index].byte_size
            args.append(
                RequestArgument(location=DataLocation(pool_index=0, offset=offset, length=size))
            )
            offset += size
        return args, offset

    inputs, in_size = arguments(main.input_indexes)
    outputs, out_size = arguments(main.output_indexes)
    outputs = [
        RequestArgument(
            location=DataLocation(pool_index=1, offset=a.location.offset, length=a.location.length)
        )
        for a in outputs
    ]
    return Request(inputs=tuple(inputs), outputs=tuple(outputs), pool_sizes=(in_size, out_size))
