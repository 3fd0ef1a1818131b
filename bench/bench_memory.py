"""Peak RSS of the commands issue 28 (item 12) found growing from small inputs.

Not a test: it writes the inputs into a temporary directory, runs each command as a fresh
process under ``/usr/bin/time`` and prints its peak RSS and wall time.  ``--root`` runs
another checkout's nnemu (main, for the figures before).

    python bench/bench_memory.py [--root DIR] [--big TRACE] [--only NAME ...]

Cases: ``inline`` (a trace workload of 400,000 inline ``arrivals_ms``: 3.5 MB of YAML, one
execution run), ``file`` (2,000,000 arrivals from a 27 MB CSV, 1,000 executions run),
``threads-100`` / ``threads-400`` (100 or 400 devices of 1,024 worker and binder threads and
compute units, a 10 ms run), ``threads-limit`` (15 such devices and an app of 1,024 threads:
just under the bound), and with ``--big TRACE`` (a 1 GB trace: ``nnemu run
scenarios/two_apps_one_npu.yaml --set duration_ms=3400000 --trace big.txt`` writes one in
about 8 minutes) ``ancestor`` (``query`` of ``ancestor_slice()``), ``count`` (a plain count)
and ``replay`` (``replay -n``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

HEAD = """\
name: bench
devices:
{devices}models:
  - {{name: m, preset: mobilenet_v1, dtype: quant8}}
apps:
  - name: cam
    model: m
{app}"""


def inputs(work: Path) -> dict[str, Path]:
    """Write each case's scenario (and CSV) into ``work``."""
    found = {}
    arrivals = ",".join(f"{i * 1.5:.1f}" for i in range(400_000))
    found["inline"] = work / "inline.yaml"
    found["inline"].write_text(
        HEAD.format(
            devices="  - name: npu\n",
            app=f"    workload: {{kind: trace, executions: 1, arrivals_ms: [{arrivals}]}}\n",
        )
    )
    with open(work / "arrivals.csv", "w") as csv:
        csv.write("arrival_ms\n")
        csv.writelines(f"{i * 1.5:.3f}\n" for i in range(2_000_000))
    found["file"] = work / "file.yaml"
    found["file"].write_text(
        HEAD.format(
            devices="  - name: npu\n",
            app="    workload: {kind: trace, executions: 1000, arrivals_file: arrivals.csv}\n",
        )
    )
    for name, count, app_threads in (
        ("threads-100", 100, 1024),
        ("threads-400", 400, 1024),
        ("threads-limit", 15, 1024),
    ):
        devices = "".join(
            f"  - {{name: d{i}, compute_units: 1024, worker_threads: 1024, binder_threads: 1024}}\n"
            for i in range(count)
        )
        found[name] = work / f"{name}.yaml"
        found[name].write_text(
            "duration_ms: 10\n"
            + HEAD.format(
                devices=devices,
                app=f"    threads: {app_threads}\n    workload: {{kind: periodic, period_ms: 5}}\n",
            )
        )
    return found


def measure(root: Path, argv: list[str], cwd: Path) -> tuple[str, str, int]:
    """(peak RSS MB, wall s, exit code) of ``nnemu ARGV`` run from ``root``."""
    report = cwd / "time.txt"
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(
        [
            "/usr/bin/time",
            "-f",
            "%M %e",
            "-o",
            str(report),
            sys.executable,
            "-m",
            "nnemu.cli",
            *argv,
        ],
        cwd=cwd,
        env=env,
        capture_output=True,
        check=False,
    )
    rss_kb, wall = report.read_text().split()[-2:]
    return f"{int(rss_kb) / 1024:.0f}", wall, done.returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=ROOT, help="the checkout whose nnemu runs")
    ap.add_argument("--big", type=Path, help="a big trace for the query and replay cases")
    ap.add_argument("--only", nargs="*", help="run only these cases")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="nnemu-bench-memory-") as tmp:
        work = Path(tmp)
        cases = {name: ["run", str(path)] for name, path in inputs(work).items()}
        if args.big:
            big = str(args.big.resolve())
            cases["ancestor"] = ["query", big, "SELECT count(*) FROM ancestor_slice(1000)"]
            cases["count"] = ["query", big, "SELECT count(*) FROM slice"]
            cases["replay"] = ["replay", "-n", big]
        print(f"{'case':<15}{'peak RSS MB':>12}{'wall s':>9}{'exit':>6}")
        for name, argv in cases.items():
            if args.only and name not in args.only:
                continue
            rss, wall, code = measure(args.root.resolve(), argv, work)
            print(f"{name:<15}{rss:>12}{wall:>9}{code:>6}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
