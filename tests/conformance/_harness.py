"""Drive the emulated driver service and runtime the way VTS 1.x and CTS drive a real stack.

``DriverWorld`` is one driver service plus a client process (the VTS test binary),
``RuntimeWorld`` is driver services plus an app process with its ``Runtime`` (CTS).
Both run in virtual time on the simulation kernel; they extend the worlds of
``tests/worlds.py`` (shared with ``tests/unit/driver`` and ``tests/unit/runtime``).

The ``*_METHOD`` tables name the HIDL entry point of each HAL version (the server side
comes from ``tests.worlds.prepare_call`` / ``execute_call``), so each conformance case can
be generated for exactly the versions whose entry points it exercises.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from nnemu.driver import PreparedModel
from nnemu.hal import (
    DataLocation,
    ErrorStatus,
    HalVersion,
    MeasureTiming,
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
    Operation,
    OperationType,
    Request,
    Subgraph,
    build_preset,
)
from nnemu.runtime import build_request
from nnemu.scenario import DeviceSpec
from tests import worlds
from tests.worlds import execute_call, prepare_call

US = 1_000
MS = 1_000_000
SETTLE_NS = 50 * MS
"""Virtual time after a launch within which every notify of a launched task has arrived."""

VERSIONS = [version for version in HalVersion if not version.aidl]  # the HIDL family
V10, V11, V12, V13 = HalVersion.V1_0, HalVersion.V1_1, HalVersion.V1_2, HalVersion.V1_3
MISSED_DEADLINE = (ErrorStatus.MISSED_DEADLINE_TRANSIENT, ErrorStatus.MISSED_DEADLINE_PERSISTENT)
QOS_STATUSES = (
    ErrorStatus.MISSED_DEADLINE_TRANSIENT,
    ErrorStatus.MISSED_DEADLINE_PERSISTENT,
    ErrorStatus.RESOURCE_EXHAUSTED_TRANSIENT,
    ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT,
)

PREPARE_METHOD = {
    V10: "prepareModel",
    V11: "prepareModel_1_1",
    V12: "prepareModel_1_2",
    V13: "prepareModel_1_3",
}
SUPPORTED_OPERATIONS_METHOD = {
    V10: "getSupportedOperations",
    V11: "getSupportedOperations_1_1",
    V12: "getSupportedOperations_1_2",
    V13: "getSupportedOperations_1_3",
}
ASYNC_EXECUTE_METHOD = {V10: "execute", V11: "execute", V12: "execute_1_2", V13: "execute_1_3"}
"""The async execute a VTS 1.x suite uses (IPreparedModel has no 1.1 revision)."""
SYNC_EXECUTE_METHOD = {V12: "executeSynchronously", V13: "executeSynchronously_1_3"}


def version_pairs(minimum: HalVersion = V10) -> list[tuple[HalVersion, HalVersion]]:
    """(service version, entry-point version) for every entry point >= ``minimum`` a service has.

    VTS 1.x runs against every service that implements 1.x, so a 1.3 service is checked
    through its 1.0, 1.1, 1.2 and 1.3 entry points.
    """
    return [
        (service, entry)
        for service in VERSIONS
        for entry in VERSIONS
        if entry.at_least(minimum) and service.at_least(entry)
    ]


def pair_id(pair: tuple[HalVersion, HalVersion]) -> str:
    """Test id of a (service, entry point) pair: ``hal1.2-service1.3``."""
    return f"hal{pair[1].value}-service{pair[0].value}"


# --------------------------------------------------------------------------- models

MODELS: dict[str, tuple[str, str, dict[str, float]]] = {
    "add_float32": ("add", "float32", {"size": 16}),
    "add_quant8": ("add", "quant8", {"size": 16}),
    "lstm_float32": ("lstm", "float32", {"steps": 2, "units": 8, "input": 4, "layers": 1}),
    "while_loop_float32": ("while_loop", "float32", {"iterations": 3, "body_size": 4}),
}
"""Small presets standing in for VTS's generated test models."""

MODEL_SINCE = {"while_loop_float32": V13}


def models_for(version: HalVersion) -> list[str]:
    """The test models whose operations exist in HAL ``version``."""
    return [name for name in MODELS if version.at_least(MODEL_SINCE.get(name, V10))]


def model(name: str) -> Model:
    """Build test model ``name``."""
    preset, dtype, params = MODELS[name]
    return build_preset(preset, dtype, params)


def request_for(model: Model) -> Request:
    """The request the runtime would send for ``model`` (one buffer per input and output)."""
    return build_request(model)


# --------------------------------------------------------------------------- worlds


class DriverWorld(worlds.DriverWorld):
    """One driver service and one client process (the VTS binary), binder without jitter."""

    def __init__(self, version: HalVersion = V13, **spec_fields: object) -> None:
        super().__init__(version, device_name="vts", client_name="vts_client", **spec_fields)

    async def settle(self) -> None:
        """Let every launched task finish and its oneway notify arrive."""
        await self.kernel.sleep(SETTLE_NS)

    # -- IDevice ---------------------------------------------------------------
    async def get_supported_operations(
        self, version: HalVersion, model: Model
    ) -> tuple[ErrorStatus, tuple[bool, ...]]:
        """getSupportedOperations of HAL ``version``."""
        service = self.service
        answer = await self.call(
            SUPPORTED_OPERATIONS_METHOD[version],
            lambda: service.getSupportedOperations(model, version),
        )
        return answer  # type: ignore[return-value]

    async def prepare(
        self,
        version: HalVersion,
        model: Model,
        *,
        preference: int = 1,
        priority: int = 1,
        deadline_ns: int | None = None,
        null_callback: bool = False,
    ) -> tuple[object, list[tuple[object, ...]]]:
        """prepareModel of HAL ``version``: (launch status, notifies received after settling)."""
        recorder, ref = self.callback()
        serve = prepare_call(
            self.service,
            version,
            model,
            None if null_callback else ref,
            preference=preference,
            priority=priority,
            deadline_ns=deadline_ns,
        )
        launch = await self.call(PREPARE_METHOD[version], serve)
        await self.settle()
        return launch, recorder.notifies

    async def prepared_model(self, version: HalVersion, model: Model) -> PreparedModel:
        """A model prepared through ``version``'s entry point (must succeed)."""
        launch, calls = await self.prepare(version, model)
        assert launch is ErrorStatus.NONE, launch
        [(status, prepared)] = calls
        assert status is ErrorStatus.NONE, status
        assert isinstance(prepared, PreparedModel)
        return prepared

    # -- IPreparedModel --------------------------------------------------------
    async def execute_async(
        self,
        version: HalVersion,
        prepared: PreparedModel,
        request: Request,
        *,
        measure: MeasureTiming = MeasureTiming.NO,
        deadline_ns: int | None = None,
        loop_timeout_ns: int | None = None,
        null_callback: bool = False,
    ) -> tuple[object, list[tuple[object, ...]]]:
        """execute of HAL ``version``: (launch status, notifies received after settling)."""
        recorder, ref = self.callback()
        serve = execute_call(
            prepared,
            version,
            request,
            None if null_callback else ref,
            measure=measure,
            deadline_ns=deadline_ns,
            loop_timeout_ns=loop_timeout_ns,
        )
        launch = await self.call(ASYNC_EXECUTE_METHOD[version], serve, "IPreparedModel")
        await self.settle()
        return launch, recorder.notifies

    async def execute_sync(
        self,
        version: HalVersion,
        prepared: PreparedModel,
        request: Request,
        *,
        measure: MeasureTiming = MeasureTiming.NO,
        deadline_ns: int | None = None,
        loop_timeout_ns: int | None = None,
    ) -> tuple[object, ...]:
        """executeSynchronously of HAL ``version`` (1.2+): (status, shapes, timing)."""
        if version is V12:
            serve: Callable[[], Awaitable[object]] = lambda: prepared.executeSynchronously(  # noqa: E731
                request, measure
            )
        else:
            serve = lambda: prepared.executeSynchronously_1_3(  # noqa: E731
                request, measure, deadline_ns, loop_timeout_ns
            )
        answer = await self.call(SYNC_EXECUTE_METHOD[version], serve, "IPreparedModel")
        return answer  # type: ignore[return-value]

    async def execute_fenced(
        self,
        prepared: PreparedModel,
        request: Request,
        *,
        wait_for: tuple[object | None, ...] = (),
        measure: MeasureTiming = MeasureTiming.NO,
        deadline_ns: int | None = None,
        loop_timeout_ns: int | None = None,
        duration_ns: int | None = None,
    ) -> tuple[object, ...]:
        """executeFenced (1.3): (status, fenced callback or None)."""
        answer = await self.call(
            "executeFenced",
            lambda: prepared.executeFenced(
                request, wait_for, measure, deadline_ns, loop_timeout_ns, duration_ns
            ),
            "IPreparedModel",
        )
        return answer  # type: ignore[return-value]


class RuntimeWorld(worlds.RuntimeWorld):
    """Driver services and one app process with its Runtime (what CTS runs against)."""

    def __init__(self, *specs: DeviceSpec) -> None:
        super().__init__(*specs, app_name="cts_app")


# --------------------------------------------------------------------------- BasicTests

LT = OperandLifeTime


def cyclic_model() -> Model:
    """BasicTests: two ADDs reading each other's outputs (a cycle in the main graph)."""

    def tensor(**changes: object) -> Operand:
        return Operand(type=OperandType.TENSOR_FLOAT32, dimensions=(1, 4), **changes)  # type: ignore[arg-type]

    operands = [
        tensor(lifetime=LT.SUBGRAPH_INPUT, number_of_consumers=2),
        tensor(number_of_consumers=1),
        tensor(number_of_consumers=1, lifetime=LT.SUBGRAPH_OUTPUT),
        Operand(
            type=OperandType.INT32,
            number_of_consumers=2,
            lifetime=LT.CONSTANT_COPY,
            location=DataLocation(length=4),
        ),
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
    return Model(main=main, operand_values_size=4, name="cyclic")
