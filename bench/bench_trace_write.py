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

It ends with the issue's two figures: the run ratios at the shortest duration and the
write-cost ratios at the longest, medians over the rounds, for each installation measured.

What runs: by default this checkout's source (``PYTHONPATH``: pure Python, as an editable
install).  ``--python PY`` (repeatable) runs an installed nnemu instead, ``PY -m nnemu``
with no ``PYTHONPATH``, from a directory outside any checkout: a venv holding a built
wheel, whose compiled modules are what users run (bench/README.md, "Measure a built
wheel").  ``--tree PATH`` (repeatable) adds another source tree (``PYTHONPATH=PATH``);
``--no-source`` leaves this checkout's source out.  All of them run alternately within
each round, so "before" and "after" come from the same rounds.  Each process reads
bytecode from a private ``PYTHONPYCACHEPREFIX`` written by an untimed first run (as
``bench_parser.py``).

Usage: python bench/bench_trace_write.py [--durations 120 600] [--rounds 3]
           [--python PY ...] [--tree PATH ...] [--no-source]
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
from typing import NamedTuple

REPO = Path(__file__).resolve().parents[1]
SCENARIO = REPO / "scenarios" / "two_apps_one_npu.yaml"
VARIANTS = ("none", ".html", ".pftrace", ".json")


class Install(NamedTuple):
    """What runs ``nnemu``: an interpreter, and the source tree it imports (None: its own
    installed nnemu)."""

    python: str
    tree: Path | None

    def label(self) -> str:
        return str(self.tree) if self.tree is not None else f"{self.python} (installed)"


def _cpu_of(
    install: Install, duration_s: int, variant: str, out: Path, env: dict[str, str]
) -> float:
    """CPU seconds of one ``nnemu run`` by ``install`` (its trace to ``out``)."""
    command = [install.python, "-m", "nnemu", "run", str(SCENARIO)]
    command += ["--set", f"duration_ms={duration_s * 1000}"]
    if variant != "none":
        command += ["--trace", str(out.with_suffix(variant))]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    if install.tree is not None:
        env = {**env, "PYTHONPATH": str(install.tree)}
    done = subprocess.run(
        command,
        env=env,
        cwd=out.parent,  # (outside the checkout: an installed nnemu is what is imported)
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
    """The per-round ratios ``top / bottom``."""
    return [t / b for t, b in zip(top, bottom, strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--durations", type=int, nargs="+", default=[120, 600])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--python", action="append", default=[])
    parser.add_argument("--tree", type=Path, action="append", default=[])
    parser.add_argument("--no-source", action="store_true")
    args = parser.parse_args()
    installs = [] if args.no_source else [Install(sys.executable, REPO)]
    installs += [Install(sys.executable, tree.resolve()) for tree in args.tree]
    installs += [Install(python, None) for python in args.python]
    if not installs:
        raise SystemExit("nothing to run: --no-source without --python or --tree")
    short, long = min(args.durations), max(args.durations)
    with tempfile.TemporaryDirectory(prefix="nnemu-bench-write-") as tmp:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE",)}
        env.pop("PYTHONPATH", None)
        env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        for install in installs:  # untimed: writes the bytecode
            print(f"{install.label()}: {_version(install, env)}")
            for variant in VARIANTS:
                _cpu_of(install, 1, variant, Path(tmp) / "warm", env)
        cpu: dict[tuple[int, int, str], list[float]] = {}
        sizes: dict[tuple[int, str], int] = {}
        for round_ in range(args.rounds):
            for duration in args.durations:
                for variant in VARIANTS:
                    for index, install in enumerate(installs):
                        out = Path(tmp) / f"t{index}"
                        seconds = _cpu_of(install, duration, variant, out, env)
                        cpu.setdefault((index, duration, variant), []).append(seconds)
                        if variant != "none":
                            path = out.with_suffix(variant)
                            sizes[duration, variant] = path.stat().st_size
                            path.unlink()
            print(f"round {round_ + 1} of {args.rounds} done", file=sys.stderr)
        print(f"load average at the end: {os.getloadavg()[0]:.1f}")
        print("\nCPU s of `nnemu run` (median over the rounds, their range in brackets)\n")
        print("| nnemu | duration | no trace | .html | .pftrace | .json |"
              " .pftrace / .html | .json / .html |")  # fmt: skip
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        run_ratios: dict[tuple[int, int, str], list[float]] = {}
        for index, install in enumerate(installs):
            for duration in args.durations:
                runs = {v: cpu[index, duration, v] for v in VARIANTS}
                for v in (".pftrace", ".json"):
                    run_ratios[index, duration, v] = _ratios(runs[v], runs[".html"])
                cells = [_span(runs[v]) for v in VARIANTS]
                cells += [_span(run_ratios[index, duration, v]) for v in (".pftrace", ".json")]
                print(f"| {install.label()} | {duration} s | " + " | ".join(cells) + " |")
        print("\nWrite cost, CPU s (the run less the untraced run of the same round)\n")
        print("| nnemu | duration | .html | .pftrace | .json | .pftrace / .html | .json / .html |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        cost_ratios: dict[tuple[int, int, str], list[float]] = {}
        for index, install in enumerate(installs):
            for duration in args.durations:
                none = cpu[index, duration, "none"]
                cost = {
                    v: [t - n for t, n in zip(cpu[index, duration, v], none, strict=True)]
                    for v in VARIANTS[1:]
                }
                for v in (".pftrace", ".json"):
                    cost_ratios[index, duration, v] = _ratios(cost[v], cost[".html"])
                cells = [_span(cost[v]) for v in VARIANTS[1:]]
                cells += [_span(cost_ratios[index, duration, v]) for v in (".pftrace", ".json")]
                print(f"| {install.label()} | {duration} s | " + " | ".join(cells) + " |")
        print("\nFile sizes, MB (the same from every nnemu: byte-identical traces)\n")
        for (duration, variant), size in sorted(sizes.items()):
            print(f"- {duration} s {variant}: {size / 1e6:.1f}")
        print("\nIssue 26 (target: each ratio <= 1.3; medians over the rounds)\n")
        for index, install in enumerate(installs):
            med = statistics.median
            print(
                f"- {install.label()}: run ratios at {short} s"
                f" .pftrace/.html {med(run_ratios[index, short, '.pftrace']):.2f},"
                f" .json/.html {med(run_ratios[index, short, '.json']):.2f};"
                f" write-cost ratios at {long} s"
                f" .pftrace/.html {med(cost_ratios[index, long, '.pftrace']):.2f},"
                f" .json/.html {med(cost_ratios[index, long, '.json']):.2f}"
            )


def _version(install: Install, env: dict[str, str]) -> str:
    """``nnemu --version`` of ``install`` (says ``compiled`` or ``source``)."""
    if install.tree is not None:
        env = {**env, "PYTHONPATH": str(install.tree)}
    done = subprocess.run(
        [install.python, "-m", "nnemu", "--version"],
        env=env,
        cwd=env["PYTHONPYCACHEPREFIX"].rsplit("/", 1)[0],
        capture_output=True,
        text=True,
        check=False,
    )
    return (done.stdout or done.stderr).strip()


if __name__ == "__main__":
    main()
