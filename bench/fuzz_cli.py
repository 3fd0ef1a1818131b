"""Fuzz campaign: run the real ``nnemu`` commands on mutated scenarios and traces.

Not a test: it prints a summary table (mutants, runs, tracebacks, hangs, other
exit codes) and, with ``--show``, the first line of each failure.  Every run is
a subprocess with a timeout, as a user would run the command.

    python bench/fuzz_cli.py [--scenarios N] [--traces N] [--seed S] [--timeout T] [--show K]

Scenario mutants: one to three edits of a shipped scenario (a number replaced by
an extreme value, a tagged or odd scalar, a line deleted or duplicated, an
alias/merge bomb appended) through ``nnemu run``.  Trace mutants: one to three
edits of a trace-data row of omr1 (its first rows) or of nnemu's own systrace
and JSON traces (a timestamp with many fraction digits, huge or NaN numbers, a
huge pid, rows dropped, duplicated, swapped or cut, the file gzip-compressed,
10,000 unclosed sections) through ``parse``, ``parse --json``, ``query`` and
``replay -n``.  A run is a *traceback* when stderr holds ``Traceback`` or the
exit code is not 0, 1 or 2 (a command needing more than 2 GB of memory ends in a
MemoryError, so counts here); a *hang* when it outlives the timeout.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
"""The checkout whose ``nnemu`` runs (``--root``; default the one holding this script)."""
OMR1 = Path(
    os.environ.get("NNEMU_OMR1", Path(__file__).resolve().parents[1] / "tests/data/omr1.html")
)
OMR1_ROWS = 3000
"""How many trace-data rows of omr1 a mutant keeps (the whole file is 3.8 MB)."""

NUMBERS = (
    "0",
    "-1",
    "-0.0",
    "1e308",
    "1e300",
    "-1e308",
    "1e30",
    "123456789012345678901234567890",
    "1000000",
    "10000000",
    ".nan",
    ".inf",
    "0x7fffffffffffffff",
    "1e-320",
    "0.0000001",
)
ODD_SCALARS = (
    "!!bool maybe",
    "!!timestamp 2001-13-45",
    "!!timestamp 2001-01-01",
    "!!binary AAAA",
    "!!python/object:os.system ls",
    "!!int 12x",
    "!!float abc",
    '"\\ud800"',
    "~",
    "[]",
    "{}",
    "&a 1",
    "*nowhere",
    "'" + "x" * 5000 + "'",
)
TIME_RE = re.compile(r"\d+\.\d+(?=: tracing_mark_write)|(?<=\"ts\": )[^,}]+|(?<=\"dur\": )[^,}]+")
"""The timestamp of an ftrace row, or the ts/dur of a JSON event."""
NUMBER_RE = re.compile(r"(?<=: )-?[0-9][0-9_.eE+-]*(?=\s*(?:[,}\]]|$))", re.MULTILINE)
"""A number written as a mapping value, in block or flow style."""


def mutate_scenario(text: str, rng: random.Random) -> str:
    lines = text.splitlines()
    for _ in range(rng.randint(1, 3)):
        choice = rng.random()
        joined = "\n".join(lines)
        numeric = list(NUMBER_RE.finditer(joined))
        if choice < 0.45 and numeric:
            m = rng.choice(numeric)
            lines = (joined[: m.start()] + rng.choice(NUMBERS) + joined[m.end() :]).splitlines()
        elif choice < 0.65:
            i = rng.randrange(len(lines))
            if ": " in lines[i]:
                head = lines[i].split(": ", 1)[0]
                lines[i] = f"{head}: {rng.choice(ODD_SCALARS)}"
        elif choice < 0.75:
            del lines[rng.randrange(len(lines))]
        elif choice < 0.85:
            i = rng.randrange(len(lines))
            lines.insert(i, lines[i])
        elif choice < 0.9:
            i = rng.randrange(len(lines))
            lines[i] = lines[i][: rng.randrange(len(lines[i]) + 1)]
        elif choice < 0.95:
            for key in ("threads", "worker_threads", "binder_threads", "compute_units"):
                for i, line in enumerate(lines):
                    if line.strip().startswith(f"{key}:"):
                        lines[i] = line.split(":")[0] + ": 10000000"
        else:
            return bomb(rng)
    return "\n".join(lines) + "\n"


def bomb(rng: random.Random) -> str:
    """A merge-key or alias bomb (PyYAML composes it small; walking it is exponential)."""
    levels = rng.randint(6, 10)
    out = ["x0: &x0 {a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7, h: 8, i: 9, j: 10, k: 11, l: 12}"]
    for n in range(1, levels):
        refs = ", ".join(f"k{j}: *x{n - 1}" for j in range(12))
        out.append(f"x{n}: &x{n} {{<<: *x{n - 1}, {refs}}}")
    out.append(f"name: [*x{levels - 1}]")
    return "\n".join(out) + "\n"


def mutate_trace(text: str, rng: random.Random, json_trace: bool) -> str | bytes:
    if rng.random() < 0.04:
        return gzip.compress(text.encode())
    if not json_trace and rng.random() < 0.03:
        rows = "".join(
            f"  app-9-9 (    9) [000] ...1 {1 + i * 1e-6:.6f}: tracing_mark_write: "
            f"B|9|[NN_LA_PE]run{i}\n"
            for i in range(10_000)
        )
        return text.replace("# tracer: nop\n", "# tracer: nop\n" + rows, 1)
    lines = text.splitlines(keepends=True)
    marks = [i for i, line in enumerate(lines) if ("tracing_mark_write" in line or '"ph"' in line)]
    if not marks:
        return text
    for _ in range(rng.randint(1, 3)):
        i = rng.choice(marks)
        line = lines[i]
        choice = rng.random()
        if choice < 0.6:
            numbers = list(re.finditer(r"\d+(?:\.\d+)?", line))
            times = list(TIME_RE.finditer(line))
            if times and choice < 0.4:
                numbers = times  # the timestamp (or JSON ts/dur) itself
            if numbers:
                m = rng.choice(numbers)
                new = rng.choice(
                    (
                        m.group() + "123456789",
                        "1" * rng.randint(20, 400),
                        "0.1234567890123",
                        "0.12345678901234567",
                        "1.5000000000",
                        "nan",
                        "inf",
                        "1e308",
                        "-" + m.group(),
                        "99999999999999999999.999999",
                    )
                )
                line = line[: m.start()] + new + line[m.end() :]
        elif choice < 0.65:
            line = ""
        elif choice < 0.7:
            line = line + line
        elif choice < 0.8:
            j = rng.choice(marks)
            lines[j], line = line, lines[j]
        elif choice < 0.9:
            line = line[: rng.randrange(len(line) + 1)]
            if not line.endswith("\n"):
                line += "\n"
        else:
            line = line.replace("|", rng.choice(("||", "|\x00", "|\udcff", "")), 1)
        lines[i] = line
    if json_trace and rng.random() < 0.1:
        depth = rng.choice((1000, 100_000))
        return "[" * depth + "]" * depth
    return "".join(lines).encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def omr1_head() -> str:
    text = OMR1.read_text(encoding="utf-8", errors="replace")
    start = text.index("# tracer:")
    end = text.index("</script>", start)
    body = text[start:end].splitlines(keepends=True)[:OMR1_ROWS]
    return text[:start] + "".join(body) + text[end:]


MEMORY_LIMIT = 2 * 1024**3
"""Address space of each command (a run that needs more ends in MemoryError: a failure)."""


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run(cmd: list[str], timeout: float) -> tuple[str, str]:
    """(outcome, first line of what went wrong)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONDONTWRITEBYTECODE="1")
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "nnemu.cli", *cmd],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            env=env,
            stdin=subprocess.DEVNULL,
            check=False,
            preexec_fn=_limit_memory,
            cwd=ROOT,  # ``python -m`` puts the working directory first on sys.path
        )
    except subprocess.TimeoutExpired:
        return "hang", " ".join(cmd)
    if "Traceback" in proc.stderr or proc.returncode not in (0, 1, 2):
        tail = [line for line in proc.stderr.splitlines() if line.strip()]
        return "traceback", f"exit {proc.returncode}: {tail[-1] if tail else ''}"[:200]
    return f"exit {proc.returncode}", ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenarios", type=int, default=200, help="scenario mutants")
    ap.add_argument("--traces", type=int, default=60, help="trace mutants (4 commands each)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per command")
    ap.add_argument("--show", type=int, default=20, help="failures to list")
    ap.add_argument("--keep", type=Path, help="copy each failing mutant into this directory")
    ap.add_argument(
        "--root", type=Path, help="run the nnemu of this checkout (e.g. main, for a baseline)"
    )
    args = ap.parse_args()
    if args.root:
        global ROOT
        ROOT = args.root.resolve()
    rng = random.Random(args.seed)
    tally: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    failures: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory(prefix="nnemu-fuzz-") as tmp:
        work = Path(tmp)
        sources = sorted((ROOT / "scenarios").glob("*.yaml"))

        def record(kind: str, cmd: list[str], path: Path) -> None:
            outcome, detail = run(cmd, args.timeout)
            tally[kind][outcome] += 1
            if outcome in ("hang", "traceback"):
                failures.append((kind, outcome, detail))
                if args.keep:
                    args.keep.mkdir(parents=True, exist_ok=True)
                    target = args.keep / f"{kind.replace(' ', '_')}-{len(failures)}{path.suffix}"
                    target.write_bytes(path.read_bytes())

        for n in range(args.scenarios):
            source = rng.choice(sources)
            path = work / f"s{n}.yaml"
            path.write_text(
                mutate_scenario(source.read_text(), rng), encoding="utf-8", errors="surrogatepass"
            )
            record("run", ["run", str(path)], path)
        seeds: list[tuple[str, str]] = []
        for name, suffix in (
            ("quickstart", ".html"),
            ("two_apps_one_npu", ".html"),
            ("quickstart", ".json"),
        ):
            out = work / f"seed-{name}{suffix}"
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "nnemu.cli",
                    "run",
                    str(ROOT / "scenarios" / f"{name}.yaml"),
                    "--trace",
                    str(out),
                ],
                capture_output=True,
                check=True,
                env=dict(os.environ, PYTHONPATH=str(ROOT), PYTHONDONTWRITEBYTECODE="1"),
                cwd=ROOT,
            )
            seeds.append((out.read_text(encoding="utf-8"), suffix))
        if OMR1.exists():
            seeds.append((omr1_head(), ".html"))
        for n in range(args.traces):
            text, suffix = rng.choice(seeds)
            mutant = mutate_trace(text, rng, suffix == ".json")
            path = work / f"t{n}{suffix}"
            if isinstance(mutant, bytes):
                path.write_bytes(mutant)
            else:
                path.write_text(mutant, encoding="utf-8", errors="replace")
            for kind, cmd in (
                ("parse", ["parse", str(path)]),
                ("parse --json", ["parse", "--json", str(path)]),
                ("query", ["query", str(path), "SELECT count(*), max(dur), min(ts) FROM slice"]),
                ("replay -n", ["replay", "-n", str(path)]),
            ):
                record(kind, cmd, path)
    outcomes = sorted({o for c in tally.values() for o in c})
    print(f"{'command':<14}{'runs':>6}" + "".join(f"{o:>11}" for o in outcomes))
    for kind, counts in tally.items():
        print(
            f"{kind:<14}{sum(counts.values()):>6}" + "".join(f"{counts[o]:>11}" for o in outcomes)
        )
    total = collections.Counter[str]()
    for counts in tally.values():
        total.update(counts)
    print(
        f"\nscenario mutants {args.scenarios}, trace mutants {args.traces}: "
        f"{total['traceback']} tracebacks, {total['hang']} hangs in {sum(total.values())} runs"
    )
    for kind, outcome, detail in failures[: args.show]:
        print(f"  {kind}: {outcome}: {detail}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
