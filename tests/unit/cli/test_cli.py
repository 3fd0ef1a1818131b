"""The command line: exit codes and messages for good and bad input."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from nnemu.cli import main
from tests.commands import run_cli

REPO = Path(__file__).resolve().parents[3]


def test_quickstart_exits_zero_and_writes_report(tmp_path: Path) -> None:
    """The README's main job succeeds and writes a report with the documented keys."""
    report = tmp_path / "r.json"
    code, out, _ = run_cli("run", str(REPO / "scenarios/quickstart.yaml"), "--report", str(report))
    assert code == 0
    assert "camera" in out
    data = json.loads(report.read_text())
    assert set(data) == {
        "scenario",
        "seed",
        "virtual_ms",
        "wall_s",
        "apps",
        "devices",
        "expectations",
    }
    assert data["apps"]["camera"]["completed"] == 30


def test_bad_yaml_exits_two_with_position(tmp_path: Path) -> None:
    """A malformed scenario gets file:line:col messages and exit code 2, not a traceback."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nseed: seven\napps: []\n")
    code, _, err = run_cli("run", str(bad))
    assert code == 2
    assert f"{bad}:2:7: seed: expected an integer" in err
    assert "Traceback" not in err


def test_missing_file_exits_two() -> None:
    """A scenario file that does not exist is bad input."""
    code, _, err = run_cli("run", "no/such/scenario.yaml")
    assert code == 2
    assert "no/such/scenario.yaml" in err


def test_failed_expectation_exits_one(tmp_path: Path) -> None:
    """An expectation that does not hold makes the run exit 1 and names it."""
    text = (REPO / "scenarios/quickstart.yaml").read_text()
    scenario = tmp_path / "q.yaml"
    scenario.write_text(
        text.replace('"apps.camera.completed == 30"', '"apps.camera.completed == 31"')
    )
    code, _, err = run_cli("run", str(scenario))
    assert code == 1
    assert "apps.camera.completed == 31" in err


def test_latency_expectation_of_an_app_that_completed_nothing_fails(tmp_path: Path) -> None:
    """A latency bound on an app with no completed execution fails and says why, not ok on 0."""
    report = tmp_path / "r.json"
    code, out, err = run_cli(
        "run",
        str(REPO / "scenarios/qos_model_too_large.yaml"),
        "--set",
        'expect=["apps.pinned.latency_ms.p99 < 8", "apps.flexible.latency_ms.p99 < 100"]',
        "--report",
        str(report),
    )
    assert json.loads(report.read_text())["expectations"] == [
        {
            "text": "apps.pinned.latency_ms.p99 < 8",
            "passed": False,
            "why": "pinned completed no execution",
        },
        {"text": "apps.flexible.latency_ms.p99 < 100", "passed": True},
    ]
    assert code == 1
    assert "  FAIL apps.pinned.latency_ms.p99 < 8  (pinned completed no execution)\n" in out
    assert "  ok   apps.flexible.latency_ms.p99 < 100\n" in out
    assert err.endswith(
        "expectation failed: apps.pinned.latency_ms.p99 < 8 (pinned completed no execution)\n"
    )


def test_trace_round_trips_through_parse(tmp_path: Path) -> None:
    """A trace written by run is read back by parse, with the app's run header."""
    trace = tmp_path / "t.html"
    assert run_cli("run", str(REPO / "scenarios/quickstart.yaml"), "--trace", str(trace))[0] == 0
    code, out, _ = run_cli("parse", str(trace))
    assert code == 0
    assert "[NN_LA_PO]camera" in out
    assert "NNAPI timing summary" in out


def test_unwritable_outputs_are_refused_before_the_run(tmp_path: Path) -> None:
    """Every bad --trace/--report/--html/--plots path is named at once, before anything runs."""
    quickstart = str(REPO / "scenarios/quickstart.yaml")
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, out, err = run_cli(
        "run",
        quickstart,
        "--trace",
        str(tmp_path / "missing" / "t.html"),
        "--report",
        str(tmp_path),
        "--html",
        "",
        "--plots",
        str(blocker / "plots"),
    )
    assert code == 2
    assert out == ""
    assert err.splitlines() == [
        f"{tmp_path / 'missing' / 't.html'}: cannot write the trace: "
        f"no such directory {tmp_path / 'missing'}",
        f"{tmp_path}: cannot write the report: is a directory",
        "--html: expected a path to write the pictures to, got ''",
        f"{blocker / 'plots'}: cannot write the pictures: {blocker} is not a directory",
    ]


_PROC = Path("/proc/self")
_NO_FILES_IN_PROC = pytest.mark.skipif(
    not _PROC.is_dir(), reason="needs /proc, where no one (root included) may create a file"
)


@_NO_FILES_IN_PROC
@pytest.mark.parametrize(
    ("option", "path", "what"),
    [
        ("--report", "/proc/nnemu-report.json", "report"),
        ("--trace", "/proc/nnemu-trace.html", "trace"),
        ("--html", "/proc/nnemu-page.html", "pictures"),
        ("--plots", "/proc/nnemu-plots/figures", "pictures"),
        ("--executions", "/proc/nnemu-rows.csv", "executions"),
    ],
)
def test_an_output_the_system_refuses_is_named_before_the_run(
    option: str, path: str, what: str
) -> None:
    """An output path whose directory takes no new file, whatever its permission bits say (/proc,
    also for root), is refused with its reason before anything runs."""
    code, out, err = run_cli("run", str(REPO / "scenarios/quickstart.yaml"), option, path)
    assert (code, out) == (2, "")
    assert err == f"{path}: cannot write the {what}: No such file or directory\n"


@_NO_FILES_IN_PROC
def test_replications_refuse_an_unwritable_report_before_running() -> None:
    """``run --replications`` checks its ``--report`` before the first replication."""
    code, out, err = run_cli(
        "run",
        str(REPO / "scenarios/quickstart.yaml"),
        "--replications",
        "3",
        "--report",
        "/proc/nnemu-report.json",
    )
    assert (code, out) == (2, "")
    assert err == "/proc/nnemu-report.json: cannot write the report: No such file or directory\n"


def test_the_output_check_leaves_no_file_behind(tmp_path: Path) -> None:
    """Checking the outputs writes nothing that stays: a scenario refused after the check leaves
    the output directory as it was, and an existing report is not changed by it."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nseed: seven\napps: []\n")
    kept = tmp_path / "old.json"
    kept.write_text("an earlier report\n")
    outputs = tmp_path / "out"
    outputs.mkdir()
    code, _, err = run_cli(
        "run",
        str(bad),
        "--report",
        str(kept),
        "--trace",
        str(outputs / "t.html"),
        "--html",
        str(outputs / "p.html"),
        "--plots",
        str(outputs / "plots" / "png"),
        "--executions",
        str(outputs / "e.csv"),
    )
    assert code == 2
    assert "seed: expected an integer" in err
    assert sorted(path.name for path in tmp_path.iterdir()) == ["bad.yaml", "old.json", "out"]
    assert list(outputs.iterdir()) == []
    assert kept.read_text() == "an earlier report\n"


def test_empty_trace_path_is_refused() -> None:
    """``--trace ''`` is an error (exit 2), not a run that silently writes nothing."""
    code, out, err = run_cli("run", str(REPO / "scenarios/quickstart.yaml"), "--trace", "")
    assert code == 2
    assert out == ""
    assert err == "--trace: expected a path to write the trace to, got ''\n"


def test_every_command_checks_its_output_paths_first(tmp_path: Path) -> None:
    """replay, verify, query and demo refuse an empty or unwritable output path before any work."""
    trace = tmp_path / "t.html"
    assert run_cli("run", str(REPO / "scenarios/quickstart.yaml"), "--trace", str(trace))[0] == 0
    missing = tmp_path / "no-such-dir"
    cases = [
        (("replay", str(trace), "-n", "--trace", ""), "--trace: expected a path"),
        (("replay", str(trace), "-n", "--report", str(missing / "r.json")), "no such directory"),
        (("replay", str(trace), "-n", "--save-scenario", str(tmp_path)), "is a directory"),
        (("verify", str(REPO / "scenarios/quickstart.yaml"), "--trace", ""), "--trace: expected"),
        (("query", str(trace), "SELECT 1", "--db", str(missing / "q.db")), "no such directory"),
        (("demo", "deadlines", "--out", str(trace / "sub")), "is not a directory"),
    ]
    for argv, message in cases:
        code, out, err = run_cli(*argv)
        assert (code, out) == (2, ""), argv
        assert message in err, (argv, err)


def test_run_says_where_it_wrote_each_file(tmp_path: Path) -> None:
    """``run`` names the report and the trace it wrote."""
    report, trace = tmp_path / "r.json", tmp_path / "t.json"
    code, out, _ = run_cli(
        "run",
        str(REPO / "scenarios/quickstart.yaml"),
        "--report",
        str(report),
        "--trace",
        str(trace),
    )
    assert code == 0
    assert f"report written to {report}\n" in out
    assert f"trace written to {trace}\n" in out
    assert report.exists()
    assert trace.exists()


def test_full_disk_for_the_trace_is_a_message() -> None:
    """A trace on a full disk (/dev/full) ends with one line naming the file, exit 2."""
    code, _, err = run_cli("run", str(REPO / "scenarios/quickstart.yaml"), "--trace", "/dev/full")
    assert code == 2
    assert err == "/dev/full: cannot write the trace: No space left on device\n"


def test_full_disk_for_stdout_is_a_message() -> None:
    """Standard output on /dev/full gives a message and exit 2, not an OSError traceback."""
    import subprocess
    import sys

    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "nnemu.cli", "run", str(REPO / "scenarios/quickstart.yaml")],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 2
    assert done.stderr == "standard output: cannot write: No space left on device\n"


@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"]])
def test_help_on_a_full_device_is_a_message(argv: list[str]) -> None:
    """``nnemu --help > /dev/full`` fails as any other output does (argparse dropped the
    error: exit 0 with no help written)."""
    import subprocess
    import sys

    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "nnemu.cli", *argv],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 2
    assert done.stderr == "standard output: cannot write: No space left on device\n"


def test_version_and_global_options(capsys) -> None:
    """``--version`` prints the version; --log-format, -v and -q go before or after the command."""
    import pytest

    from nnemu.cli import _parser

    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.startswith("nnemu ")
    for argv in (
        ["--log-format", "json", "-v", "parse", "t"],
        ["parse", "t", "--log-format", "json", "-v"],
    ):
        args = _parser().parse_args(argv)
        assert (args.log_format, args.verbosity) == ("json", 1)
    assert _parser().parse_args(["-q", "query", "t"]).verbosity == -1
    assert _parser().parse_args(["demo"]).verbosity == 0


def test_verbosity_sets_the_log_level() -> None:
    """-v lets debug events through, the default stops at info, -q shows only warnings."""
    import logging

    import structlog

    from nnemu.cli import configure_logging

    seen = {}
    for level in (logging.DEBUG, logging.INFO, logging.WARNING):
        stream = io.StringIO()
        configure_logging("json", stream, level)
        log = structlog.get_logger()
        log.debug("a_debug_event")
        log.info("an_info_event")
        log.warning("a_warning_event")
        seen[level] = [json.loads(line)["event"] for line in stream.getvalue().splitlines()]
    structlog.reset_defaults()
    assert seen == {
        logging.DEBUG: ["a_debug_event", "an_info_event", "a_warning_event"],
        logging.INFO: ["an_info_event", "a_warning_event"],
        logging.WARNING: ["a_warning_event"],
    }


def test_summary_shows_dashes_in_flight_and_whole_names() -> None:
    """No completion prints "-" percentiles; in-flight work is a column; long app names are whole."""
    from nnemu._summary import summary as _summary

    def app(submitted: int, completed: int, in_flight: int) -> dict[str, object]:
        return {
            "submitted": submitted,
            "completed": completed,
            "failed": 0,
            "dropped": 0,
            "in_flight": in_flight,
            "errors": {},
            "compile_result": "NO_ERROR",
            "latency_ms": {"p50": 0.0 if not completed else 1.5, "p95": 2.0, "p99": 2.5},
        }

    data = {
        "scenario": "s",
        "seed": 1,
        "virtual_ms": 10.0,
        "apps": {"a-very-long-application-name": app(3, 2, 1), "idle": app(1, 0, 1)},
        "devices": {"npu": {"executions": 2, "busy_fraction": 0.5, "preemptions": 0}},
        "expectations": [],
    }
    out = io.StringIO()
    _summary(data, out)
    lines = out.getvalue().splitlines()
    header = lines[2].split()
    assert header[:7] == ["app", "submitted", "completed", "failed", "dropped", "in", "flight"]
    assert lines[3].split() == [
        "a-very-long-application-name",
        "3",
        "2",
        "0",
        "0",
        "1",
        "1.500",
        "2.000*",  # over 2 executions: the slowest one
        "2.500*",
        "-",
    ]
    assert lines[4].split() == ["idle", "1", "0", "0", "0", "1", "-", "-", "-", "-"]
    assert lines[2].index("submitted") == lines[3].index("3") - len("submitted") + 1


def test_html_report_shows_dashes_for_an_app_with_no_completion(tmp_path: Path) -> None:
    """The HTML summary row of an app that never completed has "-" latencies, not 0.000."""
    import re

    page = tmp_path / "r.html"
    code, out, _ = run_cli(
        "run", str(REPO / "scenarios/qos_model_too_large.yaml"), "--html", str(page)
    )
    assert code == 0
    assert f"pictures written to {page}" in out
    html = page.read_text(encoding="utf-8")
    row = re.search(r"<tr><td class=\"name\">[^<]*<span[^>]*></span>pinned</td>.*?</tr>", html)
    assert row is not None
    cells = re.findall(r"<td>([^<]*)</td>", row.group(0))
    assert cells[-4:] == ["-", "-", "-", "-"]
    flexible = re.search(r"<span[^>]*></span>flexible</td>.*?</tr>", html)
    assert flexible is not None
    assert "-" not in re.findall(r"<td>([^<]*)</td>", flexible.group(0))[-4:]


def test_exception_groups_from_a_command_are_unwrapped(monkeypatch) -> None:
    """Ctrl-C or nnemu's own error inside a command's trio run gets its exit code, not a group traceback."""
    from nnemu import cli
    from nnemu.errors import TraceFormatError

    def interrupted(args: object, out: object, err: object) -> int:
        raise BaseExceptionGroup("trio", [KeyboardInterrupt()])

    def bad_trace(args: object, out: object, err: object) -> int:
        raise ExceptionGroup("trio", [TraceFormatError("t.html", 3, "x", "what is wrong")])

    monkeypatch.setitem(cli._COMMANDS, "demo", interrupted)
    assert run_cli("demo", "prepare") == (130, "", "interrupted by SIGINT\n")
    monkeypatch.setitem(cli._COMMANDS, "demo", bad_trace)
    assert run_cli("demo", "prepare") == (2, "", "t.html:3: error: what is wrong\n")


def test_summary_shows_where_each_apps_mean_latency_went() -> None:
    """The summary has one line per app with a completion: its mean latency and the split."""
    code, out, _ = run_cli("run", str(REPO / "scenarios" / "qos_driver_crash.yaml"), "-q")
    assert code == 0
    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("mean ms"))
    assert lines[head].split() == [
        "mean", "ms", "latency", "app_wait", "binder_wait", "device_queue", "preempted", "ipc",
        "driver_launch", "compute", "retry", "runtime",
    ]  # fmt: skip
    for line in lines[head + 1 : head + 3]:
        name, mean, *parts = line.split()
        assert name in ("resilient", "pinned")
        assert sum(map(float, parts)) == pytest.approx(float(mean), abs=0.004)
    assert lines[head + 3] == ""
    device_head = lines[head + 4].split()
    assert device_head[-1] == "energy"


def test_summary_columns_keep_a_separator_however_wide_the_numbers() -> None:
    """An overloaded periodic app's figures outgrow their columns: each stays a word of its own
    (they printed ``109501273703.607520131.425541092.911`` for in flight, p50, p95, p99)."""
    from nnemu._summary import summary as _summary
    from nnemu.report import SPLIT_PARTS

    data = {
        "scenario": "s",
        "seed": 1,
        "virtual_ms": 10.0,
        "apps": {
            "flood": {
                "submitted": 109501274703,
                "completed": 1000,
                "failed": 0,
                "dropped": 0,
                "in_flight": 109501273703,
                "errors": {},
                "compile_result": "NO_ERROR",
                "latency_ms": {
                    "p50": 1520131.425,
                    "p95": 541092.911,
                    "p99": 607520131.425,
                    "mean": 123456789.5,
                },
                "latency_split_ms": dict.fromkeys(SPLIT_PARTS, 123456789.0),
            }
        },
        "devices": {
            "npu": {
                "hal": "aidl-v4",
                "executions": 12345678901,
                "busy_fraction": 1.0,
                "preemptions": 1234567890123,
                "energy": 12345678901.0,
            }
        },
        "expectations": [],
    }
    out = io.StringIO()
    _summary(data, out)
    lines = out.getvalue().splitlines()
    assert lines[3].split() == [
        "flood",
        "109501274703",
        "1000",
        "0",
        "0",
        "109501273703",
        "1520131.425",
        "541092.911",
        "607520131.425",
        "-",
    ]
    assert lines[6].split() == ["flood", "123456789.500", *["123456789.000"] * len(SPLIT_PARTS)]
    assert lines[9].split() == [
        "npu",
        "aidl-v4",
        "12345678901",
        "100.0%",
        "1234567890123",
        "12345678901.0",
    ]


def test_summary_heads_each_part_by_its_report_key(tmp_path: Path) -> None:
    """Issue 25 item 6, one name per quantity: the ``mean ms`` block heads each part of the
    latency by its ``latency_split_ms`` key, every key once (it said ``queue``, then
    ``app``, ``binder``, ``preempt``, ``launch`` for ``app_wait``, ``binder_wait``,
    ``preempted``, ``driver_launch``), each figure under its head."""
    report = tmp_path / "r.json"
    code, out, err = run_cli(
        "run", str(REPO / "scenarios/two_apps_one_npu.yaml"), "--report", str(report)
    )
    assert code == 0, err
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("mean ms"))
    head = lines[at].split()
    keys = list(json.loads(report.read_text())["apps"]["camera"]["latency_split_ms"])
    assert sorted(head[3:]) == sorted(keys)
    assert len(head) == 3 + len(keys)
    camera = lines[at + 1]
    end = lines[at].index("device_queue") + len("device_queue")
    assert camera[:end].split()[-1] == camera.split()[4]  # the 4th part, right-aligned under it
