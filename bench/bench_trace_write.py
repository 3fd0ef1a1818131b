"""What writing each trace format costs a whole ``nnemu run``: .pftrace and .json against .html.

Runs ``nnemu run SCENARIO --set duration_ms=D [--trace x.EXT]`` as a subprocess for each
variant (no trace, ``.html``, ``.pftrace``, ``.json``) and duration, the variants alternating
within each round (the machine is shared: a slow spell hits every variant of a round), and
reports CPU seconds (the child's user + system, ``getrusage(RUSAGE_CHILDREN)``):

* per duration, the median over the rounds of each variant, and of the per-round ratios
  ``.pftrace / .html`` and ``.json / .html`` (issue 26: ≤ 1.3 at 120 s), with their range;
* the write cost of each format: its run less the untraced run of the same round (issue 26:
  within 1.3x of the systrace write at 600 s), with its range;
* the file sizes.

With ``--tree PATH`` (repeatable) each round also runs the same variants from other source
trees (``PYTHONPATH=PATH``, each with its own compiled build), alternating with this one,
so "before" and "after" come from the same rounds.  Each process reads bytecode from a
private ``PYTHONPYCACHEPREFIX`` written by an untimed first run (as ``bench_parser.py``).

Usage: python bench/bench_trace_write.py [--durations 120 600] [--rounds 3] [--tree PATH ...]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCENARIO = REPO / "scenarios" / "two_apps_one_npu.yaml"
VARIANTS = ("none", ".html", ".pftrace", ".json")


def _cpu_of(tree: Path, duration_s: int, variant: str, out: Path, env: dict[str, str]) -> float:
    """CPU seconds of one ``nnemu run`` from ``tree`` (its trace to ``out``)."""
    command = [sys.executable, "-m", "nnemu", "run", str(SCENARIO)]
    command += ["--set", f"duration_ms={duration_s * 1000}"]
    if variant != "none":
        command += ["--trace", str(out.with_suffix(variant))]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        command,
        env={**env, "PYTHONPATH": str(tree)},
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--durations", type=int, nargs="+", default=[120, 600])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tree", type=Path, action="append", default=[])
    args = parser.parse_args()
    trees = [REPO, *args.tree]
    with tempfile.TemporaryDirectory(prefix="nnemu-bench-write-") as tmp:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE",)}
        env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        for tree in trees:  # untimed: writes the bytecode
            for variant in VARIANTS:
                _cpu_of(tree, 1, variant, Path(tmp) / "warm", env)
        cpu: dict[tuple[int, int, str], list[float]] = {}
        sizes: dict[tuple[int, str], int] = {}
        for round_ in range(args.rounds):
            for duration in args.durations:
                for variant in VARIANTS:
                    for index, tree in enumerate(trees):
                        out = Path(tmp) / f"t{index}"
                        seconds = _cpu_of(tree, duration, variant, out, env)
                        cpu.setdefault((index, duration, variant), []).append(seconds)
                        if variant != "none" and index == 0:
                            path = out.with_suffix(variant)
                            sizes[duration, variant] = path.stat().st_size
                            path.unlink()
            print(f"round {round_ + 1} of {args.rounds} done", file=sys.stderr)
        print(f"load average at the end: {os.getloadavg()[0]:.1f}")
        print("\nCPU s of `nnemu run` (median over the rounds, their range in brackets)\n")
        print("| tree | duration | no trace | .html | .pftrace | .json |"
              " .pftrace / .html | .json / .html |")  # fmt: skip
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for index, tree in enumerate(trees):
            for duration in args.durations:
                runs = {v: cpu[index, duration, v] for v in VARIANTS}
                ratios = [
                    [p / h for p, h in zip(runs[v], runs[".html"], strict=True)]
                    for v in (".pftrace", ".json")
                ]
                cells = [_span(runs[v]) for v in VARIANTS] + [_span(r) for r in ratios]
                print(f"| {tree} | {duration} s | " + " | ".join(cells) + " |")
        print("\nWrite cost, CPU s (the run less the untraced run of the same round)\n")
        print("| tree | duration | .html | .pftrace | .json | .pftrace / .html | .json / .html |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for index, tree in enumerate(trees):
            for duration in args.durations:
                none = cpu[index, duration, "none"]
                cost = {
                    v: [t - n for t, n in zip(cpu[index, duration, v], none, strict=True)]
                    for v in VARIANTS[1:]
                }
                ratios = [
                    [c / h for c, h in zip(cost[v], cost[".html"], strict=True)]
                    for v in (".pftrace", ".json")
                ]
                cells = [_span(cost[v]) for v in VARIANTS[1:]] + [_span(r) for r in ratios]
                print(f"| {tree} | {duration} s | " + " | ".join(cells) + " |")
        print("\nFile sizes (this tree), MB\n")
        for (duration, variant), size in sorted(sizes.items()):
            print(f"- {duration} s {variant}: {size / 1e6:.1f}")


if __name__ == "__main__":
    main()
