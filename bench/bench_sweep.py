"""Benchmark of ``nnemu sweep``'s local engine: variants/s on 2 workers against 1 worker,
and against running the same variants one ``nnemu run`` process at a time.

The sweep is scenarios/two_apps_one_npu.yaml (3 s of virtual time, two apps) with the
indexer as a Poisson stream: 3 schedulers x 2 preemption modes x ``--rates`` rates x
``--replications`` replications (default 3 x 2 x 10 x 10 = 600 variants).  Each engine
setting runs ``nnemu sweep`` as its own subprocess into a fresh directory, ``--repeat``
times, the settings alternating, so every setting sees the same machine load; the best
wall time (``perf_counter`` around the process) and the CPU seconds of its process tree
(the pool's workers included, sampled from /proc) are kept.  ``one process per variant`` times
``--processes`` variants (default 24) of the same sweep as ``nnemu run VARIANT.yaml
--seed S`` processes in sequence (each variant's scenario written beforehand, untimed) and reports its variants/s (the shell-loop baseline of
the issue).

Target (issue 9): 2 workers >= 1.6x the throughput of 1 worker.  The machine is shared:
read the CPU column and the spread of the repeats before the ratio.

Usage: python bench/bench_sweep.py [--rates N] [--replications N] [--repeat R] [--processes N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _experiment(directory: Path, rates: int, replications: int) -> Path:
    path = directory / "bench.yaml"
    path.write_text(
        f"""\
scenario: {ROOT / "scenarios" / "two_apps_one_npu.yaml"}
set:
  apps.indexer.workload: {{kind: poisson, rate_hz: 5}}
vary:
  devices.npu.scheduler: [fifo, per_app_priority, global_priority]
  devices.npu.preemption: [none, checkpoint]
  apps.indexer.workload.rate_hz: {{range: [5, 50], steps: {rates}}}
replications: {replications}
metrics: [apps.camera.latency_ms.p99]
""",
        encoding="utf-8",
    )
    return path


def _tree_cpu(root: int) -> dict[int, float]:
    """CPU seconds so far of ``root`` and each of its descendants, from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as file:
                fields = file.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        cpu[int(entry)] = (int(fields[11]) + int(fields[12])) / tick
    found = {root}
    changed = True
    while changed:
        changed = False
        for pid, parent in parents.items():
            if parent in found and pid not in found:
                found.add(pid)
                changed = True
    return {pid: cpu[pid] for pid in found if pid in cpu}


_SHARES: dict[str, list[float]] = {}
"""The CPU seconds of each process of the last run of each command (largest first)."""


def _timed(argv: list[str]) -> tuple[float, float, float]:
    """Wall and CPU seconds of one command, its pool workers included (the CPU of the process
    tree, sampled from /proc every 50 ms: a worker's last few ms may be missed), and the CPU
    seconds of the command's own process (the sweep's parent: checks, results, table)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen: dict[int, float] = {}
    while process.poll() is None:
        seen.update(_tree_cpu(process.pid))
        time.sleep(0.05)
    wall = time.perf_counter() - start
    if process.returncode not in (0, 1):  # 1: an expectation of the scenario failed, as may be
        raise SystemExit(f"{' '.join(argv)}: exit {process.returncode}")
    _SHARES[" ".join(argv)] = sorted(seen.values(), reverse=True)
    return wall, sum(seen.values()), seen.get(process.pid, 0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rates", type=int, default=10)
    parser.add_argument("--replications", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--processes", type=int, default=24)
    args = parser.parse_args()
    variants = 3 * 2 * args.rates * args.replications
    work = Path(tempfile.mkdtemp(prefix="nnemu-bench-sweep-"))
    try:
        experiment = _experiment(work, args.rates, args.replications)
        nnemu = [sys.executable, "-m", "nnemu.cli"]
        best: dict[str, tuple[float, float, float]] = {}
        walls: dict[str, list[float]] = {}
        for repeat in range(args.repeat):
            for workers in ("1", "2"):
                out = work / f"out-{workers}-{repeat}"
                wall, cpu, parent = _timed(
                    [*nnemu, "sweep", str(experiment), "--out", str(out), "--workers", workers]
                )
                walls.setdefault(workers, []).append(wall)
                shares = _SHARES[
                    " ".join(
                        [*nnemu, "sweep", str(experiment), "--out", str(out), "--workers", workers]
                    )
                ]
                print(
                    f"{workers} worker(s), repeat {repeat}: {wall:.2f} s wall; CPU s per process "
                    + ", ".join(f"{share:.2f}" for share in shares if share >= 0.01)
                )
                if workers not in best or wall < best[workers][0]:
                    best[workers] = (wall, cpu, parent)
        from nnemu.overrides import apply_overrides
        from nnemu.scenario import dump_scenario
        from nnemu.sweep import load_experiment

        loaded = load_experiment(experiment)
        sample = loaded.variants()[: args.processes]
        wall_runs = cpu_runs = 0.0
        for variant in sample:
            scenario = work / f"{variant.key}.yaml"  # written untimed: a shell loop's input
            scenario.write_text(dump_scenario(apply_overrides(loaded.scenario, variant.overrides)))
            wall, cpu, _ = _timed([*nnemu, "run", str(scenario), "--seed", str(variant.seed)])
            wall_runs += wall
            cpu_runs += cpu
        print(
            f"{variants} variants; best of {args.repeat} (wall s of each repeat in brackets); "
            f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
        )
        print(f"{'engine':<28}{'wall s':>9}{'CPU s':>9}{'parent':>9}{'variants/s':>12}")
        for workers in ("1", "2"):
            wall, cpu, parent = best[workers]
            spread = ", ".join(f"{w:.2f}" for w in walls[workers])
            print(
                f"{'local, ' + workers + ' worker(s)':<28}{wall:>9.2f}{cpu:>9.2f}{parent:>9.2f}"
                f"{variants / wall:>12.1f}  [{spread}]"
            )
        print(
            f"{'one process per variant':<28}{wall_runs:>9.2f}{cpu_runs:>9.2f}"
            f"{'':>9}{len(sample) / wall_runs:>12.1f}  ({len(sample)} variants)"
        )
        # On two idle cores the parent's work is serial and the workers' splits in two.
        _, cpu1, _ = best["1"]
        _, cpu2, parent2 = best["2"]
        bound = cpu1 / (parent2 + (cpu2 - parent2) / 2)
        print(
            f"CPU-bound 2-worker speed-up on 2 idle cores: {cpu1:.2f} / ({parent2:.2f} + "
            f"{cpu2 - parent2:.2f} / 2) = {bound:.2f}x"
        )
        ratio = best["1"][0] / best["2"][0]
        print(
            f"2 workers / 1 worker: {ratio:.2f}x (target >= 1.6x); "
            f"2 workers / one process per variant: "
            f"{(variants / best['2'][0]) / (len(sample) / wall_runs):.1f}x"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
