"""``nnemu demo``: every topic runs, narrates its key facts, writes a parseable trace."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from nnemu import run
from nnemu.cli import main
from nnemu.demo import (
    SCENARIO_DIR,
    TOPICS,
    load_topic_scenario,
    run_demo_command,
    scenario_path,
)
from nnemu.parser import parse_file
from nnemu.scenario import load_scenario

KEY_FACTS = {
    "prepare": [
        "launch returned INVALID_ARGUMENT; callback notified 1x: INVALID_ARGUMENT, null model",
        "launch returned NONE; callback notified 1x: INVALID_ARGUMENT, null model",
        "(NONE, prepared model)",
        "supported per operation: yes no no",
    ],
    "execution-modes": [
        "executeSynchronously::client  -> returned NONE",
        "HIDL::IExecutionCallback::notify::client  (NONE)",
        "ANeuralNetworksEvent_wait",
        "executeFenced::client  -> returned NONE, empty sync fence (done in the call), callback status NONE",
    ],
    "priorities": ["preempted 1x", "npu-ckpt (HAL 1.3): 14 executions, preemptions 2"],
    "deadlines": [
        "returned MISSED_DEADLINE_PERSISTENT",
        "returned MISSED_DEADLINE_TRANSIENT",
        "aborted at a checkpoint 1",
        "leaves the device: MISSED_DEADLINE_TRANSIENT, preempted 1x",
    ],
    "driver-death": [
        "returned DEAD_OBJECT",
        "release 1 waiting callback(s) with DEAD_OBJECT",
        "cpuFallbackPartial",
        "failed: OP_FAILED x2",
        "app resilient: 4/4 completed",
    ],
    "memory-domains": [
        "HIDL::IDevice::allocate::client  -> returned NONE, IBuffer, token 1",
        "returned NONE, IBuffer, token 3",
        "HIDL::IBuffer::copyFrom::client  -> returned NONE",
        "[NN_LR_PIO]ANeuralNetworksExecution_setInputFromMemory",
        "HIDL::IBuffer::copyTo::client  -> returned NONE",
        "app shared: 2/2 completed, max latency 0.188 ms",
        "app ondevice: 2/2 completed, max latency 0.462 ms",
    ],
}


def _demo(
    topic: str | None, out_dir: Path, *, stdin: str = "", pause: bool = False
) -> tuple[int, str]:
    stdout = io.StringIO()
    code = run_demo_command(
        topic, out_dir=out_dir, pause=pause, stdin=io.StringIO(stdin), stdout=stdout
    )
    return code, stdout.getvalue()


def test_every_topic_has_key_facts() -> None:
    """The table of key facts covers exactly the topics there are."""
    assert set(KEY_FACTS) == set(TOPICS)


@pytest.mark.parametrize("topic", sorted(TOPICS))
def test_topic_narrates_its_key_facts_and_writes_a_parseable_trace(
    topic: str, tmp_path: Path
) -> None:
    """A topic exits 0, mentions its key facts, and its trace parses without errors."""
    code, text = _demo(topic, tmp_path)
    assert code == 0
    for fact in KEY_FACTS[topic]:
        assert fact in text, fact
    assert f"Step {len(TOPICS[topic].steps)}/{len(TOPICS[topic].steps)}" in text
    trace = tmp_path / f"nnemu-demo-{topic}.html"
    assert f"Trace written to {trace}" in text
    result = parse_file(trace)
    assert [d for d in result.diagnostics if d.severity == "error"] == []
    assert f"nnemu run {scenario_path(TOPICS[topic])}" in text
    assert "all held" in text


@pytest.mark.parametrize("topic", sorted(TOPICS))
def test_pointed_to_scenario_exists_and_passes(topic: str) -> None:
    """The scenario a topic points at is package data, loads and every expectation of it holds."""
    resource = SCENARIO_DIR / TOPICS[topic].scenario
    assert resource.is_file()
    scenario = load_topic_scenario(TOPICS[topic])
    assert scenario.name
    path = scenario_path(TOPICS[topic])
    assert path is not None
    assert load_scenario(path) == scenario
    report = run(scenario)
    assert report.expectations
    assert report.passed


@pytest.mark.parametrize("topic", sorted(TOPICS))
def test_every_heading_is_printed_whole(topic: str, tmp_path: Path) -> None:
    """Each step's title is printed whole at the default 80 columns, never cut short with an
    ellipsis by the rule it heads."""
    _, text = _demo(topic, tmp_path)
    steps = TOPICS[topic].steps
    for index, step in enumerate(steps, 1):
        assert f"Step {index}/{len(steps)}: {step.title}" in text
    assert f"nnemu demo {topic}: {TOPICS[topic].title}" in text


@pytest.mark.parametrize("topic", sorted(TOPICS))
def test_no_mark_is_narrated_by_two_steps(topic: str, tmp_path: Path) -> None:
    """A step shows its own window of the run: no mark line (time, thread, mark) is printed
    again by a later step, so a reader never meets one frame as two."""
    _, text = _demo(topic, tmp_path)
    seen: set[str] = set()
    for step_text in text.split("\nStep ")[1:]:
        marks = {line for line in step_text.splitlines() if line.startswith("t=") and " B " in line}
        assert not marks & seen, sorted(marks & seen)
        seen |= marks


def test_output_is_deterministic(tmp_path: Path) -> None:
    """Two runs of a topic print the same text and write the same trace."""
    first_dir, second_dir = tmp_path / "a", tmp_path / "b"
    first_dir.mkdir()
    second_dir.mkdir()
    _, first = _demo("driver-death", first_dir)
    _, second = _demo("driver-death", second_dir)
    assert first.replace(str(first_dir), "X") == second.replace(str(second_dir), "X")
    name = "nnemu-demo-driver-death.html"
    assert (first_dir / name).read_text() == (second_dir / name).read_text()


def test_unknown_topic_exits_2_with_the_list(tmp_path: Path) -> None:
    """An unknown topic is bad input: exit 2, and the topics are listed."""
    code, text = _demo("nope", tmp_path)
    assert code == 2
    assert "unknown demo topic 'nope'" in text
    for name in TOPICS:
        assert name in text


def test_no_topic_lists_the_topics(tmp_path: Path) -> None:
    """Without a topic the command lists the topics and succeeds."""
    code, text = _demo(None, tmp_path)
    assert code == 0
    assert all(name in text for name in TOPICS)
    assert not list(tmp_path.iterdir())


def test_pause_waits_for_enter_between_steps(tmp_path: Path) -> None:
    """With pause on, each step is preceded by a prompt read from stdin."""
    steps = len(TOPICS["execution-modes"].steps)
    code, text = _demo("execution-modes", tmp_path, stdin="\n" * steps, pause=True)
    assert code == 0
    assert text.count("[Enter] next step") == steps


def test_cli_demo_subcommand(tmp_path: Path) -> None:
    """`nnemu demo TOPIC --out DIR` runs the topic; `--list` and unknown topics behave."""
    out, err = io.StringIO(), io.StringIO()
    assert main(["demo", "prepare", "--out", str(tmp_path)], out=out, err=err) == 0
    assert (tmp_path / "nnemu-demo-prepare.html").is_file()
    out = io.StringIO()
    assert main(["demo", "--list"], out=out, err=err) == 0
    assert "deadlines" in out.getvalue()
    err = io.StringIO()
    assert main(["demo", "bogus"], out=out, err=err) == 2
    assert "driver-death" in err.getvalue()


def test_out_directory_is_created(tmp_path: Path) -> None:
    """--out names a directory that need not exist yet: it is created, as --plots and
    sweep --out do, and the trace is written there."""
    out, err = io.StringIO(), io.StringIO()
    target = tmp_path / "traces" / "demo"
    code = main(["demo", "deadlines", "--out", str(target)], out=out, err=err)
    assert (code, err.getvalue()) == (0, "")
    assert (target / "nnemu-demo-deadlines.html").is_file()


def test_unknown_topic_is_reported_on_stderr(tmp_path: Path) -> None:
    """An unknown topic is a usage error: its line and the topics go to stderr, not stdout."""
    out, err = io.StringIO(), io.StringIO()
    code = main(["demo", "nope", "--out", str(tmp_path)], out=out, err=err)
    assert code == 2
    assert out.getvalue() == ""
    assert err.getvalue().startswith("unknown demo topic 'nope'\n")
    assert all(name in err.getvalue() for name in TOPICS)
    # One line a topic, however long (the list is not wrapped mid-sentence).
    lines = err.getvalue().splitlines()[2:]
    assert [line.split()[0] for line in lines] == list(TOPICS)


def test_demo_logs_only_with_verbose(tmp_path: Path) -> None:
    """The driver deaths' warnings are narrated: none is printed above the title without -v."""
    out, err = io.StringIO(), io.StringIO()
    assert main(["demo", "driver-death", "--out", str(tmp_path)], out=out, err=err) == 0
    assert err.getvalue() == ""
    assert out.getvalue().lstrip("─ ").startswith("nnemu demo driver-death")
    out, err = io.StringIO(), io.StringIO()
    assert main(["-v", "demo", "driver-death", "--out", str(tmp_path)], out=out, err=err) == 0
    assert "driver_died" in err.getvalue()
