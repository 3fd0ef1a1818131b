"""IBurstContext: a burst's server side, a driver thread serving one client's FMQ."""

from __future__ import annotations

from nnemu.driver._hidl import VALIDATE_NS_PER_OP, ServedModel, measured_timing
from nnemu.hal import NO_TIMING, ErrorStatus, MeasureTiming, OutputShape, Request, Timing
from nnemu.ipc import FMQ_TRANSFER_NS
from nnemu.sim import SimThread, as_thread
from nnemu.tracer import Layer, Phase, mark

__all__ = ["BURST_POLL_NS", "FMQ_TRANSFER_NS", "BurstContext"]

BURST_POLL_NS = 50_000
"""How long the sample driver's burst server spins on the request queue before it sleeps."""

# The burst server's marks, built once.
_PACKET_MARK = mark(Layer.IPC, Phase.EXECUTION, "ExecutionBurstServer getting packet")
_SERVE_MARK = mark(
    Layer.IPC,
    Phase.EXECUTION,
    "ExecutionBurstServer getting memory, executing, and returning results",
)
_EXECUTOR_MARK = mark(Layer.DRIVER, Phase.EXECUTION, "BurstExecutorWithCache::execute")


class BurstContext:
    """IBurstContext: a burst's server side — a driver thread serving one client's FMQ.

    Requests and results travel over fast message queues in shared memory, not binder:
    a packet reaches a server that is still spinning (within 50 µs of its last packet,
    never for LOW_POWER bursts) in a few µs; otherwise the server sleeps on a futex and
    waking it costs a context switch (modelled as one IPC latency).
    """

    def __init__(self, prepared: ServedModel, thread: SimThread, polls: bool) -> None:
        self.prepared = prepared
        self.thread = thread
        self.polls = polls
        self.last_packet_ns: int | None = None

    def delivery_ns(self, now_ns: int, wake_ns: int) -> int:
        """Time for a request packet to reach the server thread."""
        last = self.last_packet_ns
        if self.polls and last is not None and now_ns - last <= BURST_POLL_NS:
            return FMQ_TRANSFER_NS
        return wake_ns

    async def serve(
        self, request: Request, measure: MeasureTiming
    ) -> tuple[ErrorStatus, tuple[OutputShape, ...], Timing]:
        """The server thread handles one request packet (no deadline, no loop timeout).

        Runs as ``self.thread``; the caller has already paid the packet's delivery.
        Statuses cross the interface of the driver's own HAL version.
        """
        with as_thread(self.thread):
            return await self._serve(request, measure)

    async def _serve(
        self, request: Request, measure: MeasureTiming
    ) -> tuple[ErrorStatus, tuple[OutputShape, ...], Timing]:
        prepared = self.prepared
        service = prepared.service
        tracer, kernel, version = service.tracer, service.kernel, service.version
        with tracer.section(_PACKET_MARK):
            kernel.work(FMQ_TRANSFER_NS)
        try:
            with tracer.section(_SERVE_MARK):
                entered = kernel.task_now_ns()
                with tracer.section(_EXECUTOR_MARK):
                    kernel.work(VALIDATE_NS_PER_OP)
                    error = prepared.check_request(request, None)
                    if error is None and request.pool_names:
                        error, _ = prepared.device_memories(request)
                    if error is not None:
                        return error.downgraded(version), (), NO_TIMING
                    status, on_device = await prepared.compute(None, None)
                shapes = prepared.output_shapes() if status is ErrorStatus.NONE else ()
                timing = measured_timing(measure, status, on_device, entered, kernel.task_now_ns())
                return status.downgraded(version), shapes, timing
        finally:
            self.last_packet_ns = kernel.task_now_ns()
