"""The demo topics: which scenario each runs, and the steps its narration walks through.

A step is a window of the run's timeline, chosen by an *anchor*: a trace slice on one
process (an app, or the demo's VTS-style probe).  The narration prints the marks of the
window on the processes the step is about, with the values the run returned.
"""

from __future__ import annotations

import attrs

SHOW_DEFAULT = (
    r"^(HIDL::|\[NN_LA_P[CE]\]|\[NN_LR_P[CE]\]ANeuralNetworks(Compilation_finish|Execution_"
    r"(compute|startCompute|startComputeWithDependencies)|Event_wait)|\[NN_LR_PE\]cpuFallback|"
    r"\[NN_LR_PE\]StepExecutor|\[NN_LI_P[CE]\]|\[SW\]\[NN_LI_PE\]|\[NN_LD_P[CE]\]|"
    r"\[SW\]\[NN_LD_PE\]|Vts)"
)
"""Marks a step prints by default: the app's call, the runtime's entry points, the IPC
spans, the HIDL client/server marks and the driver's sections (not per-operation CPU marks)."""

SHOW_EXECUTIONS = r"^(\[NN_LA_PE\]|HIDL::IPreparedModel::|\[NN_LD_PE\]|\[SW\]\[NN_LD_PE\])"
"""Marks of the priorities demo: executions only."""


@attrs.frozen(kw_only=True)
class StepSpec:
    """One narrated step."""

    title: str
    """Heading."""
    text: str
    """What the HAL says, and why this is what happens."""
    process: str
    """App (or probe) process whose slice anchors the step."""
    anchor: str
    """Regex matched against slice names on ``process``."""
    occurrence: int = 0
    """Which matching slice (0 = first, -1 = last)."""
    span_all: bool = False
    """Window = from the first to the last matching slice."""
    at_ms: float | None = None
    """Pick the matching slice that contains this virtual time."""
    extend_ms: float = 0.0
    """Also show this much virtual time after the anchor slice ends."""
    processes: tuple[str, ...] = ()
    """Processes (app names, device names, ``vts``) shown; empty = every process."""
    show: str = SHOW_DEFAULT
    """Regex of the marks printed."""
    max_lines: int = 40
    """Lines shown before the rest is summarised."""


@attrs.frozen(kw_only=True)
class Topic:
    """A demo topic."""

    name: str
    """Command-line name."""
    title: str
    """Heading."""
    teaches: str
    """One line: what it teaches."""
    scenario: str
    """Scenario file name in the package's ``nnemu/demo/scenarios/`` (package data)."""
    intro: str
    """What the run contains."""
    steps: tuple[StepSpec, ...]
    """The narrated steps."""
    probe: bool = False
    """Whether the demo adds its VTS-style direct calls (prepare only)."""


PREPARE = Topic(
    name="prepare",
    title="prepareModel: launch status vs callback status",
    teaches="the prepareModel launch/notify contract: valid, invalid, and a partial driver",
    scenario="prepare.yaml",
    intro=(
        "App 'camera' compiles a 3-operation model (CONV_2D, RELU, FULLY_CONNECTED) for all "
        "devices: a full HAL 1.3 'npu' and a partial HAL 1.3 'conv-dsp' that supports only "
        "CONV_2D. Afterwards a VTS-style probe calls IDevice directly, as VtsHalNeuralnetworks "
        "does, with inputs the runtime never sends."
    ),
    steps=(
        StepSpec(
            title="Partitioning: what does each driver support?",
            text=(
                "getSupportedOperations answers one flag per operation and must say false "
                "whenever the driver is unsure. The partial driver claims only the convolution; "
                "the runtime gives it that piece and the rest to the faster full driver."
            ),
            process="camera",
            anchor=r"^\[NN_LI_PC\]getSupportedOperations",
            span_all=True,
        ),
        StepSpec(
            title="The partial driver prepares the piece it supports",
            text=(
                "prepareModel_1_3 validates its arguments synchronously, launches the "
                "preparation on a worker thread and returns NONE at once (the launch status). "
                "The result arrives later, exactly once, through IPreparedModelCallback::"
                "notify_1_3 - a oneway call served on the app's binder thread."
            ),
            process="camera",
            anchor=r"^\[NN_LI_PC\]prepareModel$",
            occurrence=0,
        ),
        StepSpec(
            title="A valid model on a HAL 1.3 driver: launch NONE, later notify NONE + model",
            text=(
                "The runtime waits on the callback, not on the launch: the [NN_LI_PC] span covers "
                "the HIDL call *and* the wait. notify_1_3 carries NONE and the IPreparedModel."
            ),
            process="camera",
            anchor=r"^\[NN_LI_PC\]prepareModel$",
            occurrence=1,
        ),
        StepSpec(
            title="An invalid model: INVALID_ARGUMENT at launch and in the callback",
            text=(
                "HAL 1.0+ rule: invalid arguments are found synchronously, so the driver "
                "notifies the callback once with INVALID_ARGUMENT and a null model, and returns "
                "the same status from the launch (VTS ValidationTest checks both). The runtime "
                "never sends such a model: ANeuralNetworksModel_finish already rejected it."
            ),
            process="vts",
            anchor=r"^VtsValidation::prepareModel_1_3\(invalid",
        ),
        StepSpec(
            title="The whole model to the partial driver: launch NONE, notify INVALID_ARGUMENT",
            text=(
                "The sample driver's partial-driver rule (SampleDriverPartial's "
                "prepareModel_1_3; through the older entry points it prepares the whole "
                "model): a model it does not fully support is not an invalid argument of the "
                "call, so the launch says NONE. No preparation is started: the driver notifies "
                "INVALID_ARGUMENT and a null model at once, on the binder thread serving the "
                "call, before the launch returns. Launch status and callback status differ - "
                "only the callback tells the outcome."
            ),
            process="vts",
            anchor=r"^VtsValidation::prepareModel_1_3\(whole",
        ),
    ),
    probe=True,
)

EXECUTION_MODES = Topic(
    name="execution-modes",
    title="Synchronous, asynchronous and fenced execution",
    teaches="executeSynchronously vs execute + IExecutionCallback vs executeFenced on HAL 1.0/1.2/1.3",
    scenario="execution-modes.yaml",
    intro=(
        "The same ADD model, one execution each, by three apps 20 ms apart: 'sync12' "
        "(compute) on a HAL 1.2 GPU, 'async10' (startCompute + Event_wait) on a HAL 1.0 DSP, "
        "'fenced13' (startComputeWithDependencies, timing measured) on a HAL 1.3 NPU."
    ),
    steps=(
        StepSpec(
            title="Synchronous: compute -> executeSynchronously (HAL 1.2)",
            text=(
                "With debug.nn.syncexec-hal=1 the R runtime sends 1.2+ drivers "
                "executeSynchronously*: the app thread blocks in one binder transaction while a "
                "driver binder thread runs the model and returns status, shapes and timing."
            ),
            process="sync12",
            anchor=r"^\[NN_LR_PE\]ANeuralNetworksExecution_compute",
        ),
        StepSpec(
            title="Asynchronous: startCompute + Event_wait -> execute + IExecutionCallback (HAL 1.0)",
            text=(
                "startCompute runs the plan on a new runtime thread (nn-async-N) and returns an "
                "Event. A HAL 1.0 driver has only execute(request, callback): it validates, "
                "launches the work on a worker thread, returns NONE, and later notifies "
                "IExecutionCallback (oneway) exactly once; Event_wait returns the mapped code."
            ),
            process="async10",
            anchor=r"^\[NN_LA_PE\]execute",
        ),
        StepSpec(
            title="Fenced: startComputeWithDependencies -> executeFenced (HAL 1.3)",
            text=(
                "executeFenced returns a sync fence handle and an IFencedExecutionCallback; the "
                "sample driver runs the model inside the call, so the handle is empty (nothing "
                "left to wait for) and an error would come back from the call itself. "
                "getExecutionInfo gives timingLaunched/timingFenced (measured here)."
            ),
            process="fenced13",
            anchor=r"^\[NN_LR_PE\]ANeuralNetworksExecution_startComputeWithDependencies",
        ),
    ),
)

PRIORITIES = Topic(
    name="priorities",
    title="Priorities and preemption",
    teaches="a high-priority camera vs a low-priority indexer, without and with checkpoint preemption",
    scenario="priorities.yaml",
    intro=(
        "One app (uid 10300) runs a low-priority indexer (MobileNet v2, ~4.8 ms) in a loop and "
        "two high-priority camera frames (MobileNet v1, ~2 ms), twice over: on 'npu-none' "
        "(priority-ordered queue, no preemption) and on 'npu-ckpt' (preempts at operation "
        "boundaries)."
    ),
    steps=(
        StepSpec(
            title="No preemption: the camera frame waits for the whole indexer execution",
            text=(
                "Priority is relative among one uid's models; the HAL lets a driver order its "
                "queue by it, but a driver that cannot preempt must let the running execution "
                "finish. The camera's executeSynchronously_1_3 reaches the driver at once and "
                "then waits for the compute unit."
            ),
            process="camera-a",
            anchor=r"^\[NN_LA_PE\]execute",
            processes=("camera-a", "indexer-a", "npu-none"),
            show=SHOW_EXECUTIONS,
        ),
        StepSpec(
            title="Checkpoint preemption: the indexer yields at the next operation boundary",
            text=(
                "A QoS strategy the AOSP page suggests: pause low-priority work at a checkpoint "
                "and keep its context. The camera waits at most one indexer operation; the "
                "indexer resumes afterwards with its progress kept (its execution gets longer)."
            ),
            process="camera-b",
            anchor=r"^\[NN_LA_PE\]execute",
            processes=("camera-b", "indexer-b", "npu-ckpt"),
            show=SHOW_EXECUTIONS,
            extend_ms=2.5,
        ),
    ),
)

DEADLINES = Topic(
    name="deadlines",
    title="Deadlines: missed transiently vs persistently",
    teaches="estimate-based rejection (PERSISTENT vs TRANSIENT) and a checkpoint abort",
    scenario="deadlines.yaml",
    intro=(
        "Execution_setTimeout on single-device compilations; the runtime turns it into an "
        "absolute deadline passed to executeSynchronously_1_3, and the driver enforces it. "
        "'impatient' has 1 ms for a ~2 ms model; 'burst' sends 4 frames at once with 5 ms "
        "each to a FIFO device; 'late' (low priority, 3 ms) is preempted by 'urgent'."
    ),
    steps=(
        StepSpec(
            title="Rejected before starting: MISSED_DEADLINE_PERSISTENT",
            text=(
                "The driver may refuse work its estimate says cannot make the deadline. Even an "
                "idle device needs longer than 1 ms, so a retry cannot help: PERSISTENT "
                "(-> ANEURALNETWORKS_MISSED_DEADLINE_PERSISTENT). No compute unit was used."
            ),
            process="impatient",
            anchor=r"^\[NN_LR_PE\]ANeuralNetworksExecution_compute",
        ),
        StepSpec(
            title="Rejected because of the queue: MISSED_DEADLINE_TRANSIENT",
            text=(
                "Four frames arrive together. The first runs at once and the second, queued "
                "behind it, still fits its 5 ms; for the last two the estimate includes the work "
                "queued ahead, which is what makes them late - so the status is TRANSIENT: the "
                "same request on a less busy device would make it."
            ),
            process="burst",
            anchor=r"^\[NN_LA_PE\]execute",
            span_all=True,
            max_lines=48,
        ),
        StepSpec(
            title="Aborted at a checkpoint: MISSED_DEADLINE_TRANSIENT after starting",
            text=(
                "'late' was accepted (it fit its 3 ms), then 'urgent' (high priority) preempted "
                "it at an operation boundary. When it gets the unit back the rest cannot make "
                "the deadline, so the driver aborts it at that checkpoint and reports "
                "MISSED_DEADLINE_TRANSIENT through the normal error path."
            ),
            process="late",
            anchor=r"^\[NN_LA_PE\]execute",
            processes=("late", "urgent", "npu-shared"),
        ),
    ),
)

DRIVER_DEATH = Topic(
    name="driver-death",
    title="A driver dies mid-execution",
    teaches="DEAD_OBJECT, death recipients releasing callbacks, CPU fallback vs OP_FAILED",
    scenario="driver-death.yaml",
    intro=(
        "Both driver processes die at 30 ms. 'resilient' (compiled for all devices) runs on "
        "the HAL 1.0 'dsp' through execute + callback; 'pinned' (createForDevices [npu]) is "
        "inside executeSynchronously_1_3 on the HAL 1.3 'npu'."
    ),
    steps=(
        StepSpec(
            title="The death: a failed transaction and a released callback",
            text=(
                "A dead driver is a transport error, not an ErrorStatus. The synchronous "
                "executeSynchronously_1_3 in flight fails with DEAD_OBJECT. The 1.0 execute had "
                "already returned NONE and the runtime waits on its IExecutionCallback, which a "
                "dead process will never notify: the runtime's binder death recipient releases "
                "it with DEAD_OBJECT (wait has no timeout - without it the app would hang)."
            ),
            # The window is pinned's execution in flight at the death: it ends with the
            # DEAD_OBJECT, so the step stops there and leaves the next frames to steps 2 and 3.
            process="pinned",
            anchor=r"^\[NN_LA_PE\]execute",
            at_ms=30.0,
            max_lines=50,
        ),
        StepSpec(
            title="Pinned compilation: no fallback, the app sees OP_FAILED",
            text=(
                "createForDevices disables CPU fallback. The step's DEAD_OBJECT is mapped "
                "code -> status -> code (DEAD_OBJECT -> GENERAL_FAILURE -> OP_FAILED), and every "
                "later frame fails the same way at once: the process is gone."
            ),
            process="pinned",
            anchor=r"^\[NN_LA_PE\]execute",
            occurrence=-1,
            processes=("pinned", "npu"),
        ),
        StepSpec(
            title="Compiled for all devices: the runtime falls back to its CPU",
            text=(
                "Compilation_create allows fallback: the failed step is rerun on "
                "nnapi-reference (cpuFallbackPartial -> StepExecutor::computeOnCpu) and the "
                "app gets NO_ERROR. Later frames fail over at once (the transaction to the "
                "dead process returns DEAD_OBJECT immediately) and run on the CPU too."
            ),
            process="resilient",
            anchor=r"^\[NN_LA_PE\]execute",
            occurrence=-1,
            processes=("resilient", "dsp"),
        ),
    ),
)

SHOW_MEMORY = (
    r"^(HIDL::|\[NN_LA_P[CE]\]|\[NN_LR_P[CEIO]+\]ANeuralNetworks(Memory|Execution_(compute|"
    r"set\w*FromMemory))|\[NN_LI_P[CE]\]|\[NN_LD_P[CE]\]|\[SW\]\[NN_LD_PE\])"
)
"""Marks of the memory-domains demo: the Memory API's calls beside the default ones."""

MEMORY_DOMAINS = Topic(
    name="memory-domains",
    title="Memory domains: device memory vs shared memory",
    teaches="MemoryDesc + createFromDesc -> IDevice::allocate, IBuffer copies, executions by token",
    scenario="memory-domains.yaml",
    intro=(
        "The same ADD model (32 KiB in, 16 KiB out) on one HAL 1.3 NPU whose driver takes "
        "1 us per KiB to move an execution's shared-memory arguments: 'shared' sets them from "
        "its own buffers, 'ondevice' (20 ms later) keeps them in device memory."
    ),
    steps=(
        StepSpec(
            title="Memory_createFromDesc -> IDevice::allocate: an IBuffer and a token",
            text=(
                "A MemoryDesc names roles (an input or output of a finished compilation). With "
                "every role on one HAL 1.3 device the runtime asks its driver to allocate: the "
                "answer is an IBuffer living in the driver process and a token (from 1) that "
                "requests name it by. The memory starts uninitialized."
            ),
            process="ondevice",
            anchor=r"^\[NN_LA_PC\]allocateMemories",
            processes=("ondevice", "npu"),
            show=SHOW_MEMORY,
        ),
        StepSpec(
            title="An execution on shared memory: the driver moves 48 KiB",
            text=(
                "setInput/setOutput: the request's pools are shared memory, and the driver "
                "spends 48 us moving the arguments before the device runs (its execution "
                "section, counted with the launch)."
            ),
            process="shared",
            anchor=r"^\[NN_LA_PE\]execute",
            processes=("shared", "npu"),
            show=SHOW_MEMORY,
        ),
        StepSpec(
            title="The first execution on device memory: inputs copied in, then by token",
            text=(
                "The app's first frame copies its inputs into their memories (Memory_copy from "
                "ashmem -> the driver's IBuffer::copyFrom, its memcpy at 4 GB/s), which "
                "initializes them; reading one uninitialized would have been OP_FAILED before "
                "the execution started. setInputFromMemory/setOutputFromMemory: the request "
                "names the memories by token (offset and length 0) and the driver moves "
                "nothing; the output written initializes its memory. The app then reads its "
                "result: Memory_copy into ashmem is the driver's copyTo."
            ),
            process="ondevice",
            anchor=r"^\[NN_LA_PE\]execute",
            processes=("ondevice", "npu"),
            show=SHOW_MEMORY,
        ),
        StepSpec(
            title="A later execution on device memory: by token, then IBuffer::copyTo",
            text=(
                "Nothing to copy in any more: the inputs stay on the device. Each frame still "
                "copies its output out, one binder round trip, which here costs more than the "
                "48 us the driver saved; device memory pays off when more data stays on the "
                "device (scenarios/device_memory_vs_ashmem.yaml: 592 KiB an execution)."
            ),
            process="ondevice",
            anchor=r"^\[NN_LA_PE\]execute",
            occurrence=-1,
            processes=("ondevice", "npu"),
            show=SHOW_MEMORY,
        ),
    ),
)

TOPICS: dict[str, Topic] = {
    topic.name: topic
    for topic in (
        PREPARE,
        EXECUTION_MODES,
        PRIORITIES,
        DEADLINES,
        DRIVER_DEATH,
        MEMORY_DOMAINS,
    )
}
"""Every topic, in teaching order."""
