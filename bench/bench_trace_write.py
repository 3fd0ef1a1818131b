"""What writing each trace format costs a whole ``nnemu run``: .pftrace and .json against .html.

Issue 26's two figures: ``run --trace x.pftrace`` (and ``x.json``) CPU ÷ ``run --trace x.html``
CPU at 120 s (≤ 1.3), and the 600 s run's ``.pftrace`` and ``.json`` writes within 1.3 times its
systrace write.  Three measurements, each selectable with ``--measure`` (CPU seconds: user +
system; every figure a median over the rounds, with its range):

* ``replay``: the writer alone.  The sink calls of one ``--replay-duration`` run of the
  scenario are recorded once (untimed: a recording sink in the run, once as a plain batch
  sink, which is what the systrace writer is, once as a flow sink, which the JSON and
  Perfetto writers are) and fed to each writer (``open_trace_writer``: the file opened as
  ``nnemu run`` opens it, written and closed) in a process of the installation measured,
  the formats alternating, ``--repeats`` times a round (the recording is frozen out of the
  garbage collector's way first, ``gc.freeze``).  Each replayed file is checked against the
  run's own file of the same format (sha256; with ``run`` measured at the replay's duration,
  else the installations' replays against each other), so the recording is what the
  writers get.
  Why a replay: the write is 1-3 CPU s of a 600 s run of ~8, and on a shared machine the
  whole run's spread is as wide as that; the writer's input is the same every time, so
  its cost alone does not carry the run's spread (at load 10, ±20% a sample, the per-round
  ratios within ±0.2 of their median).  It is the writer in a tight loop: in a run its
  batches meet colder caches, so it is a lower bound of the writer's share of a run.
* ``upstream``: what the tracer does before any writer, in-process runs of the scenario
  (``nnemu._emulator.run``, the same process for all three, in turns): untraced; a null batch
  sink (the tracer's bookkeeping, the same for every format); a null flow sink.  A flow sink
  (the JSON and Perfetto writers) makes the stack build flow and counter events that the
  systrace writer never gets (``Tracer.flows``: the binder's arrows, the counters of the
  device, the service's memory and the apps' executions in flight), so ``null flows - null``
  belongs to those formats' cost.  The QoS args (``nnemu.tracer._args``) are the writers'
  own work, so the replay has them.  Each sink runs ``--repeats`` times a round, in turns;
  the tracer's part and the flows' are differences paired by round and repeat (the same
  stretch of the machine's load), their medians.  The write cost of a format is then
  tracer + (flows) + writer, each a median, and the ratios are those of the sums.
* ``run``: the cross-check, whole ``nnemu run SCENARIO --set duration_ms=D [--trace
  x.EXT]`` subprocesses for each variant (no trace, ``.html``, ``.pftrace``, ``.json``) and
  ``--durations``, alternating within each round: the run ratios (the 120 s one is the
  issue's) and the write cost as the run less the untraced run of the same round, whose
  spread is the machine's.

``--instructions``: ``replay`` and ``upstream`` count instructions instead (``valgrind
--tool=callgrind``, ``PYTHONHASHSEED=0``), which do not depend on the machine's load: each
writer, sink and a baseline (the recording read and handed to a null sink; the untraced run)
in a process of its own, the part measured the difference of two processes' counts.  Under
callgrind a run is some 50 times slower: give a short ``--replay-duration`` (20) and one
round.  What instructions miss is memory: the JSON file is the largest, and its bytes cost
time the counts do not show.

What runs: by default this checkout's source (``PYTHONPATH``: pure Python, as an editable
install).  ``--python PY`` (repeatable) runs an installed nnemu instead, ``PY -m nnemu`` (and
this script's children) with no ``PYTHONPATH``, from a directory outside any checkout: a venv
holding a built wheel, whose compiled modules are what users run (bench/README.md, "Measure a
built wheel").  ``--tree PATH`` (repeatable) adds another source tree (``PYTHONPATH=PATH``);
``--no-source`` leaves this checkout's source out.  All of them run alternately within each
round, so "before" and "after" come from the same rounds.  Each process reads bytecode from a
private ``PYTHONPYCACHEPREFIX`` written by an untimed first run (as ``bench_parser.py``).

Usage: python bench/bench_trace_write.py [--measure replay upstream run] [--rounds 3]
           [--durations 120 600] [--replay-duration 600] [--repeats 2] [--instructions]
           [--python PY ...] [--tree PATH ...] [--no-source]
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import pickle
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

REPO = Path(__file__).resolve().parents[1]
SCENARIO = REPO / "scenarios" / "two_apps_one_npu.yaml"
VARIANTS = ("none", ".html", ".pftrace", ".json")
FORMATS = (".html", ".pftrace", ".json")
SINKS = ("off", "null", "null flows")


class Install(NamedTuple):
    """What runs ``nnemu``: an interpreter, and the source tree it imports (None: its own
    installed nnemu)."""

    python: str
    tree: Path | None

    def label(self) -> str:
        return str(self.tree) if self.tree is not None else f"{self.python} (installed)"

    def env(self, env: dict[str, str]) -> dict[str, str]:
        return {**env, "PYTHONPATH": str(self.tree)} if self.tree is not None else env


# ---------------------------------------------------------------- children


class _Recorder:
    """A batch sink that keeps every call the tracer makes: ``("p", pid, name)`` and
    ``("r", events)``."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def process(self, pid: int, name: str) -> None:
        self.calls.append(("p", pid, name))

    def begin(self, ts_ns: int, thread: object, name: str) -> None:
        raise AssertionError("a batch sink gets no begin")

    def end(self, ts_ns: int, thread: object) -> None:
        raise AssertionError("a batch sink gets no end")

    def receive(self, events: Any) -> None:
        self.calls.append(("r", list(events)))

    def close(self) -> None:
        """Nothing."""


class _FlowRecorder(_Recorder):
    """The same as a flow sink (the tracer then builds flows and counters, in the batches)."""

    def flow(self, ts_ns: int, thread: object, flow_id: int, terminating: bool) -> None:
        raise AssertionError("a batch sink gets its flows in receive")

    def counter(self, ts_ns: int, pid: int, name: str, value: int) -> None:
        raise AssertionError("a batch sink gets its counters in receive")


class _NullSink:
    """A batch sink that does nothing with what it gets."""

    def process(self, pid: int, name: str) -> None:
        """Nothing."""

    def begin(self, ts_ns: int, thread: object, name: str) -> None:
        """Nothing (never called: the sink takes batches)."""

    def end(self, ts_ns: int, thread: object) -> None:
        """Nothing (never called: the sink takes batches)."""

    def receive(self, events: Any) -> None:
        """Nothing."""

    def close(self) -> None:
        """Nothing."""


class _NullFlowSink(_NullSink):
    """A flow sink that does nothing with what it gets."""

    def flow(self, ts_ns: int, thread: object, flow_id: int, terminating: bool) -> None:
        """Nothing (never called: the sink takes batches)."""

    def counter(self, ts_ns: int, pid: int, name: str, value: int) -> None:
        """Nothing (never called: the sink takes batches)."""


def _scenario(duration_s: int) -> Any:
    from nnemu.overrides import apply_overrides
    from nnemu.scenario import load_scenario

    return apply_overrides(load_scenario(SCENARIO), [f"duration_ms={duration_s * 1000}"])


def _child_record(duration_s: int, directory: Path) -> dict[str, Any]:
    """Record the sink calls of one run, as a batch sink and as a flow sink."""
    from nnemu._emulator import run

    scenario = _scenario(duration_s)
    counts = {}
    for kind, recorder in (("marks", _Recorder()), ("flows", _FlowRecorder())):
        run(scenario, sinks=[recorder])
        with (directory / f"{kind}.pickle").open("wb") as out:
            pickle.dump(recorder.calls, out, protocol=pickle.HIGHEST_PROTOCOL)
        counts[kind] = sum(len(call[1]) for call in recorder.calls if call[0] == "r")
    return counts


def _child_replay(directory: Path, order: list[str], repeats: int, check: bool) -> dict[str, Any]:
    """CPU seconds of each writer given the recorded calls (``order`` alternating; ``none``:
    a null sink), and (``check``) the sha256 of what it wrote."""
    from nnemu.tracer import open_trace_writer

    recorded = {}
    for kind in ("marks", "flows"):
        with (directory / f"{kind}.pickle").open("rb") as source:
            recorded[kind] = pickle.load(source)
    gc.collect()
    gc.freeze()  # (the recording is the writers' input, not their garbage)
    cpu: dict[str, list[float]] = {ext: [] for ext in order}
    sha = {}
    for _ in range(repeats):
        for ext in order:
            calls = recorded["marks" if ext == ".html" else "flows"]
            path = directory / f"replay-{os.getpid()}{ext}"
            start = time.process_time()
            writer: Any = open_trace_writer(path) if ext != "none" else _NullSink()
            process, receive = writer.process, writer.receive
            for call in calls:
                if call[0] == "r":
                    receive(call[1])
                else:
                    process(call[1], call[2])
            writer.close()
            cpu[ext].append(time.process_time() - start)
            if ext != "none":
                if check:
                    sha[ext] = hashlib.sha256(path.read_bytes()).hexdigest()
                path.unlink()
    return {"cpu": cpu, "sha": sha}


def _child_upstream(duration_s: int, order: list[str], repeats: int) -> dict[str, list[float]]:
    """CPU seconds of in-process runs: untraced, with a null batch sink, a null flow sink
    (``order``, ``repeats`` times)."""
    from nnemu._emulator import run

    scenario = _scenario(duration_s)
    run(_scenario(1), sinks=[_NullFlowSink()])  # (untimed: the first run's imports)
    cpu: dict[str, list[float]] = {variant: [] for variant in order}
    for _ in range(repeats):
        for variant in order:
            sinks = {"off": [], "null": [_NullSink()], "null flows": [_NullFlowSink()]}[variant]
            gc.collect()
            start = time.process_time()
            run(scenario, sinks=sinks)
            cpu[variant].append(time.process_time() - start)
    return cpu


def _child(argv: list[str]) -> None:
    what, rest = argv[0], argv[1:]
    if what == "record":
        result: Any = _child_record(int(rest[0]), Path(rest[1]))
    elif what == "replay":
        result = _child_replay(Path(rest[0]), rest[1].split(","), int(rest[2]), rest[3] == "sha")
    else:
        result = _child_upstream(int(rest[0]), rest[1].split(","), int(rest[2]))
    print(json.dumps(result))


# ---------------------------------------------------------------- the parent


def _call_child(install: Install, env: dict[str, str], cwd: Path, *argv: str) -> Any:
    """Run this script's child ``argv`` by ``install``: its printed JSON."""
    done = subprocess.run(
        [install.python, str(Path(__file__).resolve()), "--child", *argv],
        env=install.env(env),
        cwd=cwd,  # (outside the checkout: an installed nnemu is what is imported)
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(
            f"child {argv} of {install.label()}: exit {done.returncode}\n{done.stderr}"
        )
    return json.loads(done.stdout.splitlines()[-1])


def _count_child(install: Install, env: dict[str, str], cwd: Path, *argv: str) -> float:
    """Run this script's child ``argv`` by ``install`` under callgrind: the instructions
    the whole process executed, in billions (the garbage collector's timing aside, the same
    every time: ``PYTHONHASHSEED=0``)."""
    out = cwd / f"callgrind-{os.getpid()}.out"
    command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
    command += [install.python, str(Path(__file__).resolve()), "--child", *argv]
    done = subprocess.run(
        command,
        env={**install.env(env), "PYTHONHASHSEED": "0"},
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(
            f"child {argv} of {install.label()} (callgrind): exit {done.returncode}\n"
            f"{done.stderr[-3000:]}"
        )
    totals = [line for line in out.read_text().splitlines() if line.startswith("totals:")]
    out.unlink()
    return int(totals[-1].split()[1]) / 1e9


def _cpu_of(
    install: Install, duration_s: int, variant: str, out: Path, env: dict[str, str]
) -> float:
    """CPU seconds of one ``nnemu run`` by ``install`` (its trace to ``out``)."""
    command = [install.python, "-m", "nnemu", "run", str(SCENARIO)]
    command += ["--set", f"duration_ms={duration_s * 1000}"]
    if variant != "none":
        command += ["--trace", str(out.with_suffix(variant))]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        command,
        env=install.env(env),
        cwd=out.parent,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    if done.returncode not in (0, 1):  # (1: a scenario expectation failed; the run is whole)
        raise SystemExit(f"{' '.join(command)}: exit {done.returncode}\n{done.stderr}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _span(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def _ratios(top: list[float], bottom: list[float]) -> list[float]:
    """The pairwise ratios ``top / bottom`` (same round)."""
    return [t / b for t, b in zip(top, bottom, strict=True)]


def _rotated(items: tuple[str, ...], by: int) -> list[str]:
    by %= len(items)
    return list(items[by:] + items[:by])


def _version(install: Install, env: dict[str, str], cwd: Path) -> str:
    """``nnemu --version`` of ``install`` (says ``compiled`` or ``source``)."""
    done = subprocess.run(
        [install.python, "-m", "nnemu", "--version"],
        env=install.env(env),
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    return (done.stdout or done.stderr).strip()


class _Results:
    """Every figure measured, by (install index, ...)."""

    def __init__(self) -> None:
        self.writer: dict[tuple[int, str], list[float]] = {}
        """Writer CPU s by (install, format): one per round and repeat."""
        self.upstream: dict[tuple[int, str], list[float]] = {}
        """In-process run CPU s by (install, sink): one per round."""
        self.run: dict[tuple[int, int, str], list[float]] = {}
        """``nnemu run`` CPU s by (install, duration, variant): one per round."""
        self.replay_sha: dict[str, set[str]] = {}
        self.run_sha: dict[tuple[int, str], set[str]] = {}
        self.sizes: dict[tuple[int, str], int] = {}


def _measure_round(
    args: argparse.Namespace,
    installs: list[Install],
    round_: int,
    tmp: Path,
    env: dict[str, str],
    results: _Results,
) -> None:
    order = _rotated(tuple(range(len(installs))), round_)
    for index in order:
        install = installs[index]
        if args.instructions:
            _count_round(args, install, index, round_, tmp, env, results)
            continue
        if "replay" in args.measure:
            formats = ",".join(_rotated(FORMATS, round_))
            got = _call_child(
                install, env, tmp, "replay", str(tmp / "rec"), formats, str(args.repeats), "sha"
            )
            for ext in FORMATS:
                results.writer.setdefault((index, ext), []).extend(got["cpu"][ext])
                results.replay_sha.setdefault(ext, set()).add(got["sha"][ext])
        if "upstream" in args.measure:
            sinks = ",".join(_rotated(SINKS, round_))
            got = _call_child(
                install, env, tmp, "upstream", str(args.replay_duration), sinks, str(args.repeats)
            )
            for sink in SINKS:
                results.upstream.setdefault((index, sink), []).extend(got[sink])
    if "run" not in args.measure:
        return
    for duration in args.durations:
        for variant in _rotated(VARIANTS, round_):
            for index in order:
                out = tmp / f"t{index}"
                seconds = _cpu_of(installs[index], duration, variant, out, env)
                results.run.setdefault((index, duration, variant), []).append(seconds)
                if variant != "none":
                    path = out.with_suffix(variant)
                    results.sizes[duration, variant] = path.stat().st_size
                    if duration == args.replay_duration:
                        sha = hashlib.sha256(path.read_bytes()).hexdigest()
                        results.run_sha.setdefault((duration, variant), set()).add(sha)
                    path.unlink()


def _count_round(
    args: argparse.Namespace,
    install: Install,
    index: int,
    round_: int,
    tmp: Path,
    env: dict[str, str],
    results: _Results,
) -> None:
    """One round of ``--instructions``: each writer, sink and baseline a process of its own
    under callgrind (a difference of two processes is the part measured)."""
    if "replay" in args.measure:
        counted = {
            ext: _count_child(install, env, tmp, "replay", str(tmp / "rec"), ext, "1", "nosha")
            for ext in ("none", *_rotated(FORMATS, round_))
        }
        for ext in FORMATS:
            results.writer.setdefault((index, ext), []).append(counted[ext] - counted["none"])
    if "upstream" in args.measure:
        for sink in _rotated(SINKS, round_):
            counted_sink = _count_child(
                install, env, tmp, "upstream", str(args.replay_duration), sink, "1"
            )
            results.upstream.setdefault((index, sink), []).append(counted_sink)


def _report(args: argparse.Namespace, installs: list[Install], r: _Results) -> None:
    med = statistics.median
    unit = "G instructions (callgrind)" if args.instructions else "CPU s"
    summary: dict[int, list[str]] = {index: [] for index in range(len(installs))}
    if r.writer:
        print(
            f"\nThe writer alone, {unit}: the recorded sink calls of a {args.replay_duration} s"
            f" run ({args.rounds} rounds x {args.repeats})\n"
        )
        print("| nnemu | .html | .pftrace | .json | .pftrace / .html | .json / .html |")
        print("|---|---:|---:|---:|---:|---:|")
        for index, install in enumerate(installs):
            cells = [_span(r.writer[index, ext]) for ext in FORMATS]
            for ext in FORMATS[1:]:
                cells.append(_span(_ratios(r.writer[index, ext], r.writer[index, ".html"])))
            print(f"| {install.label()} | " + " | ".join(cells) + " |")
            summary[index].append(
                "writer alone .pftrace/.html "
                f"{med(_ratios(r.writer[index, '.pftrace'], r.writer[index, '.html'])):.2f},"
                f" .json/.html {med(_ratios(r.writer[index, '.json'], r.writer[index, '.html'])):.2f}"
            )
        same = r.replay_sha and {
            ext: len(r.replay_sha[ext]) == 1
            and r.run_sha.get((args.replay_duration, ext), r.replay_sha[ext]) == r.replay_sha[ext]
            for ext in FORMATS
        }
        checked = "the run's own files" if r.run_sha else "each other (no run at that duration)"
        if same:
            print(f"\nReplayed files identical to {checked}: {same}")
    if r.upstream:
        print(f"\nThe tracer's part, {unit}: in-process {args.replay_duration} s runs\n")
        print("| nnemu | untraced | null sink | null flow sink | tracer | flows and counters |")
        print("|---|---:|---:|---:|---:|---:|")
        for index, install in enumerate(installs):
            off, null, flows = (r.upstream[index, sink] for sink in SINKS)
            tracer = [n - o for n, o in zip(null, off, strict=True)]
            extra = [f - n for f, n in zip(flows, null, strict=True)]
            cells = [_span(v) for v in (off, null, flows, tracer, extra)]
            print(f"| {install.label()} | " + " | ".join(cells) + " |")
    if r.writer and r.upstream:
        print(
            f"\nThe write at {args.replay_duration} s, {unit}: tracer + flows and counters"
            " (not .html) + writer, medians (the upstream parts of the differences paired"
            " by round)\n"
        )
        print("| nnemu | .html | .pftrace | .json | .pftrace / .html | .json / .html |")
        print("|---|---:|---:|---:|---:|---:|")
        for index, install in enumerate(installs):
            off, null, flows = (r.upstream[index, sink] for sink in SINKS)
            tracer = med([n - o for n, o in zip(null, off, strict=True)])
            traced = med([f - o for f, o in zip(flows, off, strict=True)])
            cost = {
                ext: med(r.writer[index, ext]) + (tracer if ext == ".html" else traced)
                for ext in FORMATS
            }
            ratios = [cost[ext] / cost[".html"] for ext in FORMATS[1:]]
            cells = [f"{cost[ext]:.2f}" for ext in FORMATS] + [f"{x:.2f}" for x in ratios]
            print(f"| {install.label()} | " + " | ".join(cells) + " |")
            summary[index].append(
                f"whole write .pftrace/.html {ratios[0]:.2f}, .json/.html {ratios[1]:.2f}"
            )
    if r.run:
        _report_runs(args, installs, r, summary)
    print("\nIssue 26 (target: each ratio <= 1.3; medians over the rounds)\n")
    for index, install in enumerate(installs):
        print(f"- {install.label()}: " + "; ".join(summary[index]))


def _report_runs(
    args: argparse.Namespace, installs: list[Install], r: _Results, summary: dict[int, list[str]]
) -> None:
    med = statistics.median
    short, long = min(args.durations), max(args.durations)
    print("\nCPU s of `nnemu run` (median over the rounds, their range in brackets)\n")
    print("| nnemu | duration | no trace | .html | .pftrace | .json |"
          " .pftrace / .html | .json / .html |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    run_ratios: dict[tuple[int, int, str], list[float]] = {}
    for index, install in enumerate(installs):
        for duration in args.durations:
            runs = {v: r.run[index, duration, v] for v in VARIANTS}
            for v in FORMATS[1:]:
                run_ratios[index, duration, v] = _ratios(runs[v], runs[".html"])
            cells = [_span(runs[v]) for v in VARIANTS]
            cells += [_span(run_ratios[index, duration, v]) for v in FORMATS[1:]]
            print(f"| {install.label()} | {duration} s | " + " | ".join(cells) + " |")
    print("\nWrite cost by whole runs, CPU s (the run less the untraced run of the same round)\n")
    print("| nnemu | duration | .html | .pftrace | .json | .pftrace / .html | .json / .html |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    cost_ratios: dict[tuple[int, int, str], list[float]] = {}
    for index, install in enumerate(installs):
        for duration in args.durations:
            none = r.run[index, duration, "none"]
            cost = {
                v: [t - n for t, n in zip(r.run[index, duration, v], none, strict=True)]
                for v in FORMATS
            }
            for v in FORMATS[1:]:
                cost_ratios[index, duration, v] = _ratios(cost[v], cost[".html"])
            cells = [_span(cost[v]) for v in FORMATS]
            cells += [_span(cost_ratios[index, duration, v]) for v in FORMATS[1:]]
            print(f"| {install.label()} | {duration} s | " + " | ".join(cells) + " |")
        summary[index].append(
            f"run ratios at {short} s .pftrace/.html"
            f" {med(run_ratios[index, short, '.pftrace']):.2f},"
            f" .json/.html {med(run_ratios[index, short, '.json']):.2f};"
            f" by whole runs at {long} s .pftrace/.html"
            f" {med(cost_ratios[index, long, '.pftrace']):.2f},"
            f" .json/.html {med(cost_ratios[index, long, '.json']):.2f}"
        )
    print("\nFile sizes, MB (the same from every nnemu: byte-identical traces)\n")
    for (duration, variant), size in sorted(r.sizes.items()):
        print(f"- {duration} s {variant}: {size / 1e6:.1f}")


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        _child(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--measure", nargs="+", choices=("replay", "upstream", "run"),
                        default=["replay", "upstream", "run"])  # fmt: skip
    parser.add_argument("--durations", type=int, nargs="+", default=[120, 600])
    parser.add_argument("--replay-duration", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--python", action="append", default=[])
    parser.add_argument("--tree", type=Path, action="append", default=[])
    parser.add_argument("--no-source", action="store_true")
    parser.add_argument("--instructions", action="store_true")
    args = parser.parse_args()
    installs = [] if args.no_source else [Install(sys.executable, REPO)]
    installs += [Install(sys.executable, tree.resolve()) for tree in args.tree]
    installs += [Install(python, None) for python in args.python]
    if not installs:
        raise SystemExit("nothing to run: --no-source without --python or --tree")
    results = _Results()
    with tempfile.TemporaryDirectory(prefix="nnemu-bench-write-") as name:
        tmp = Path(name)
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE",)}
        env.pop("PYTHONPATH", None)
        env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
        for install in installs:  # untimed: writes the bytecode
            print(f"{install.label()}: {_version(install, env, tmp)}")
            for variant in VARIANTS:
                _cpu_of(install, 1, variant, tmp / "warm", env)
        if "replay" in args.measure:
            (tmp / "rec").mkdir()
            counts = _call_child(installs[0], env, tmp, "record", str(args.replay_duration),
                                 str(tmp / "rec"))  # fmt: skip
            print(
                f"recorded a {args.replay_duration} s run: {counts['marks']:,} events"
                f" (as the systrace writer gets them), {counts['flows']:,} with flows and counters"
            )
        for round_ in range(args.rounds):
            _measure_round(args, installs, round_, tmp, env, results)
            load = os.getloadavg()[0]
            print(f"round {round_ + 1} of {args.rounds} done (load {load:.1f})", file=sys.stderr)
        print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    _report(args, installs, results)


if __name__ == "__main__":
    main()
