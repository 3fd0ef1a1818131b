"""Fuzz campaign: run the real ``nnemu`` commands on mutated scenarios, experiments, traces
(per format), SQL statements and names.

Not a test: it prints a summary table per family (runs, outcomes, the largest peak RSS)
and, with ``--show``, the first line of each failure.  Every run is the console script
(``nnemu.cli.console_main``: its signal handlers and exit codes) in a child forked from a
process that imported nnemu's command modules once (a fork server: a fresh ``python -m
nnemu.cli`` costs a second of imports a run), with an address-space limit and a timeout;
``--jobs 2`` runs two shards at once.

    python bench/fuzz_cli.py [--runs N] [--seed S] [--timeout T] [--jobs J] [--show K]

Families (``--runs`` split among them in fixed shares): **scenario** (``run`` of a mutated
shipped scenario, sometimes naming one of its inputs as an output), **experiment**
(``sweep`` of a generated experiment: odd ``vary`` values, duplicates, ranges, the seed),
**trace.txt/.html/.json/.pftrace** (``parse``, ``parse --json``, ``query``, ``replay -n``
of a mutated trace of that format), **sql** (``query`` with a generated statement), and
**names** (``run --trace`` in each format of a scenario with odd app and device names,
then ``parse`` of what it wrote).  Outcomes: a *traceback* (stderr holds ``Traceback`` or
the exit code is not 0, 1 or 2, or the child died of a signal); at the timeout the
child gets SIGINT as Ctrl-C sends it, and a ``query`` that exits 130 within 2 s ran a
statement endless by request (*interrupted*, not a failure: a recursive CTE with ``LIMIT
-1``), another command that does is *slow*, and one that does not exit is a *hang*
(killed); a *blow-up* (a peak RSS over 300 MB from inputs under 1 MB), a *lost file* (an
input's bytes changed), a *negative* (``parse`` or ``parse --json`` printed a negative
number that no warning on stderr names: its layer and column, as ``LI PE self time``), and
for ``names`` an *unread* trace (the run succeeded, its trace did not parse).

Scenario mutants: one to three edits of a shipped scenario (a number replaced by
an extreme value, a tagged or odd scalar, a line deleted or duplicated, an
alias/merge bomb appended) through ``nnemu run``.  Trace mutants: one to three
edits of a trace-data row of omr1 (its first rows) or of nnemu's own systrace
and JSON traces (a timestamp with many fraction digits, huge or NaN numbers, a
huge pid, rows dropped, duplicated, swapped or cut, the file gzip-compressed,
10,000 unclosed sections) through ``parse``, ``parse --json``, ``query`` and
``replay -n``.  A command needing more than 2 GB of memory ends in a MemoryError, so
counts as a traceback.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import hashlib
import importlib
import json
import os
import random
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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
BLOWUP_KB = 300 * 1024
"""Peak RSS past which a run from inputs under 1 MB is a blow-up (issue 28's goal)."""
SMALL_INPUT = 1024 * 1024
FINE = ("interrupted",)
"""Outcomes that are not failures: an endless statement asked for, interrupted by SIGINT."""
INTERRUPT_GRACE_S = 2.0
"""How soon a command must exit 130 after the timeout's SIGINT to count as *interrupted*."""
NEGATIVE_RE = re.compile(r"(?<![\w.:-])-\d+(?:\.\d+)?(?![\w])")
"""A negative number in a parse table."""


def run(argv: list[str], inputs: list[Path], timeout: float, work: Path) -> tuple[str, str, int]:
    """(outcome, detail, peak RSS kB) of ``nnemu ARGV`` in a child forked from this process.

    At the timeout the child gets SIGINT, as Ctrl-C sends it: a ``query`` that then exits 130
    within ``INTERRUPT_GRACE_S`` ran a statement endless by request (*interrupted*: an endless
    recursive CTE), another command is *slow* (a failure); one that does not exit is a *hang*
    (killed).
    """
    before = {path: _digest(path) for path in inputs}
    out_path, err_path = work / "stdout", work / "stderr"
    pid = os.fork()
    if pid == 0:  # the child: the console script as a user runs it, then nothing of ours
        code = 70
        try:
            resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
            os.chdir(work)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            with open(out_path, "w") as out, open(err_path, "w") as err:
                os.dup2(out.fileno(), 1)  # what writes to the descriptors (C, os.write)
                os.dup2(err.fileno(), 2)
                sys.stdout, sys.stderr = out, err  # whatever they were (pytest's capture)
                sys.argv = ["nnemu", *argv]
                try:
                    from nnemu.cli import console_main

                    console_main()  # its signal handlers, exit codes and messages
                except SystemExit as stop:
                    code = stop.code if isinstance(stop.code, int) else 1
                except BaseException:
                    import traceback

                    traceback.print_exc()
                    code = 70
                sys.stderr.flush()
                sys.stdout.flush()
        finally:
            os._exit(code if isinstance(code, int) else 70)
    deadline = time.monotonic() + timeout
    interrupted_at: float | None = None
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        now = time.monotonic()
        if interrupted_at is None and now > deadline:
            os.kill(pid, signal.SIGINT)
            interrupted_at = now
        elif interrupted_at is not None and now > interrupted_at + INTERRUPT_GRACE_S:
            os.kill(pid, signal.SIGKILL)
            _, status, usage = os.wait4(pid, 0)
            return "hang", " ".join(argv)[:200], usage.ru_maxrss
        time.sleep(0.02)
    if interrupted_at is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 130:
        # A statement may be endless by request; any other command is only slow.
        outcome = "interrupted" if argv[0] == "query" else "slow"
        return outcome, " ".join(argv)[:200], usage.ru_maxrss
    rss = usage.ru_maxrss
    stderr = err_path.read_text(errors="replace")
    if os.WIFSIGNALED(status):
        return "traceback", f"signal {os.WTERMSIG(status)}: {' '.join(argv)[:150]}", rss
    code = os.WEXITSTATUS(status)
    if "Traceback" in stderr or code not in (0, 1, 2):
        tail = [line for line in stderr.splitlines() if line.strip()]
        return "traceback", f"exit {code}: {tail[-1] if tail else ''}"[:200], rss
    changed = [str(path) for path, digest in before.items() if _digest(path) != digest]
    if changed:
        return "lost file", f"{' '.join(argv)[:150]} changed {changed[0]}", rss
    size = sum(path.stat().st_size for path in inputs if path.is_file())
    if rss > BLOWUP_KB and size < SMALL_INPUT:
        return "blow-up", f"{rss // 1024} MB from {size} bytes: {' '.join(argv)[:150]}", rss
    if argv[0] == "parse" and code == 0:
        silent = silent_negative(
            "--json" in argv, out_path.read_text(errors="replace"), stderr.splitlines()
        )
        if silent:
            return "negative", f"{silent} in {' '.join(argv)[:150]}", rss
    return f"exit {code}", "", rss


ROW_LAYERS = {"Application": "LA", "Runtime": "LR", "IPC": "LI", "Driver": "LD", "CPU": "LC"}
"""The rows of ``parse``'s table and their layers' codes."""
APP_TABLES = ("PWU", "PBM")
"""The keys of the warmup and benchmark tables inside a run's JSON ``self_times``."""


def silent_negative(as_json: bool, stdout: str, warnings: list[str]) -> str | None:
    """A negative number ``parse`` printed that no warning names (its layer and column, as
    ``LI PE self time``), or None.  Text output: a negative number in a layer's row and no
    warning of a negative cell of that layer."""
    said = [line for line in warnings if "is negative (" in line]
    if not as_json:
        for row in stdout.splitlines():
            name = row.split(" ", 1)[0]
            if name not in ROW_LAYERS:
                continue
            for found in NEGATIVE_RE.finditer(row):
                # -0.00: Android's float arithmetic on a cell that is 0 ns (noise), not < 0.
                if float(found.group()) < 0 and not any(
                    f" {ROW_LAYERS[name]} " in line for line in said
                ):
                    return f"{found.group()} in the {name} row"
        return None
    try:
        runs = json.loads(stdout)
    except ValueError:
        return None
    for run in runs if isinstance(runs, list) else []:
        for cell, value in _json_cells(run):
            if value < 0 and not any(f" {cell} " in line for line in said):
                return f"{value} ({cell})"
    return None


def _json_cells(run: dict[str, object]) -> list[tuple[str, float]]:
    """Each number of a run's JSON object with the cell a warning names it by."""
    cells: list[tuple[str, float]] = []

    def table(data: object, kind: str, where: str) -> None:
        for phase, row in data.items() if isinstance(data, dict) else ():
            if phase in APP_TABLES:
                table(row, kind, f" in the {phase} table")
                continue
            column = "Total" if phase == "PO" else phase
            for layer, value in row.items() if isinstance(row, dict) else ():
                if isinstance(value, int | float):
                    cells.append((f"{layer} {column} {kind}{where}", value))

    table(run.get("self_times"), "self time", "")
    table(run.get("times"), "total time", "")
    inputs = run.get("template_inputs")
    for key, value in inputs.items() if isinstance(inputs, dict) else ():
        layer, _, column = key.partition("_")
        column = {"PEO": "Compute (PE less PIO and PR)", "PEp": "PE", "PO": "Total"}.get(
            column, column
        )
        if isinstance(value, int | float):
            cells.append((f"{layer} {column} self time", value))
    return cells


def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


# -- the families ---------------------------------------------------------------------

ODD_NAMES = (
    "cam\u00e9ra",
    "\u30ab\u30e1\u30e9",
    "a" * 200,
    "</script>",
    "x</script><b>",
    "has space",
    "tab\tname",
    "nul\x00",
    "zero\u200bwidth",
    "emoji\U0001f600",
    "a.b",
    "a/b",
    "<",
    "quote'd",
    'dq"x',
    "-dash",
    "123",
    "nnapi-reference",
    "\u202eright",
    "ok_name",
    "UPPER",
    "x" * 16,
)
SQL_TABLES = ("slice", "thread", "process", "track", "thread_track", "counter", "flow", "args")
SQL_PARTS = (
    "SELECT count(*) FROM {t}",
    "SELECT * FROM {t} LIMIT {n}",
    "SELECT max(dur), min(ts), sum(dur) FROM slice",
    "SELECT name, count(*) FROM slice GROUP BY name ORDER BY 2 DESC LIMIT {n}",
    "SELECT * FROM ancestor_slice({n})",
    "SELECT * FROM descendant_slice({n})",
    "SELECT * FROM following_flow({n})",
    "SELECT * FROM preceding_flow({n})",
    "SELECT * FROM directly_connected_flow({n})",
    "SELECT * FROM ancestor_slice(NULL)",
    "SELECT s.id, a.id FROM slice s JOIN ancestor_slice(s.id) a LIMIT {n}",
    "SELECT extract_arg(arg_set_id, 'x') FROM slice LIMIT {n}",
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT {n}) SELECT sum(x) FROM c",
    "SELECT randomblob({n})",
    "SELECT zeroblob({n})",
    "SELECT char({n})",
    "SELECT cast(x'{hex}' AS TEXT)",
    "SELECT {n} / 0, -{n}, {n} * {n}",
    "SELECT * FROM {t} WHERE {col} = '{junk}'",
    "SELECT",
    "DROP TABLE slice",
    "CREATE TABLE t AS SELECT * FROM slice",
    "ATTACH DATABASE 'x.db' AS x",
    "PRAGMA table_info({t})",
    "SELECT * FROM nowhere",
    "{junk}",
    "SELECT 1; SELECT 2",
    "SELECT '{junk}'",
)
SQL_NUMBERS = ("0", "1", "-1", "3", "100", "9223372036854775807", "99999999999999999999", "1e308")
SQL_JUNK = ("", "'", '"', "\x00", "\u00e9", "\ud800", "%s", "--", "/*", ";", "\\")


def sql_statement(rng: random.Random) -> str:
    """A statement from SQL_PARTS with its holes filled by odd values."""
    text = rng.choice(SQL_PARTS)
    return (
        text.replace("{t}", rng.choice(SQL_TABLES))
        .replace("{n}", rng.choice(SQL_NUMBERS))
        .replace("{col}", rng.choice(("id", "name", "ts", "dur", "nope")))
        .replace("{junk}", rng.choice(SQL_JUNK))
        .replace("{hex}", rng.choice(("ff", "c3", "80", "00", "e282")))
    )


VARY_KEYS = (
    (
        "seed",
        (
            "[1, 2]",
            "[1, 1]",
            "[-1, 5]",
            "{range: [1, 3], steps: 3}",
            "[1.5]",
            "[99999999999999999999999]",
        ),
    ),
    (
        "devices.npu.compute_units",
        ("[1, 2]", "[0]", "[1, 1]", "{range: [1, 1024], steps: 2}", "[1e308]"),
    ),
    ("apps.camera.priority", ("[low, high]", "[LOW, low]", "[nope]", "[!!bool maybe]")),
    (
        "apps.camera.workload.period_ms",
        ("[10, 20]", "{range: [0.001, 100], steps: 3}", "[-1]", "[.nan]"),
    ),
    ("devices.npu.scheduler", ("[fifo, global_priority]", "[]", "[fifo, fifo]")),
    ("ipc.latency_us", ("[0, 1000]", "{range: [0, 1e300], steps: 2}", "{range: [5, 1], steps: 0}")),
    ("apps.nope.priority", ("[low]",)),
    ("duration_ms", ("[50, 100]", "[0]", "[3600001]")),
)


def experiment(rng: random.Random, scenario: Path) -> str:
    """A small experiment over ``scenario``: one or two varied keys, odd values at times."""
    keys = rng.sample(VARY_KEYS, rng.randint(1, 2))
    vary = "".join(f"  {key}: {rng.choice(values)}\n" for key, values in keys)
    replications = rng.choice(("1", "2", "0", "-1", "1000000000", "x"))
    seed = rng.choice(("", "seed: 3\n", "seed: -5\n", "seed: 1e400\n", "seed: !!int 1x\n"))
    metrics = rng.choice(
        (
            "[apps.camera.latency_ms.p99]",
            "[apps.camera.completed, devices.npu.busy_fraction]",
            "[apps.nope.x]",
            "[]",
            "apps.camera.latency_ms.p99",
        )
    )
    return (
        f"scenario: {scenario}\nset:\n  duration_ms: 100\nvary:\n{vary}"
        f"replications: {replications}\n{seed}metrics: {metrics}\n"
    )


def named_scenario(rng: random.Random) -> str:
    """The quickstart scenario with an odd app or device name (or both)."""
    app, device = rng.choice(ODD_NAMES), rng.choice(ODD_NAMES)
    if rng.random() < 0.3:
        app = "camera"
    elif rng.random() < 0.3:
        device = "npu"
    quoted = [json.dumps(name, ensure_ascii=rng.random() < 0.5) for name in (app, device)]
    return (
        f"name: names\nduration_ms: 100\ndevices:\n  - name: {quoted[1]}\n"
        "models:\n  - {name: m, preset: mobilenet_v1, dtype: quant8}\n"
        f"apps:\n  - name: {quoted[0]}\n    model: m\n    workload: {{kind: periodic, period_ms: 10}}\n"
    )


def mutate_pftrace(data: bytes, rng: random.Random) -> bytes:
    """A Perfetto trace with bytes flipped, cut, repeated or a varint made huge."""
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        choice = rng.random()
        i = rng.randrange(len(buf))
        if choice < 0.4:
            buf[i] = rng.randrange(256)
        elif choice < 0.55:
            del buf[i:]
        elif choice < 0.7:
            j = min(len(buf), i + rng.randint(1, 200))
            buf[i:i] = buf[i:j]
        elif choice < 0.85:
            buf[i:i] = b"\xff" * rng.randint(1, 12)
        else:
            buf[i : i + 1] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
    return bytes(buf)


SHARES = (
    ("scenario", 0.22),
    ("experiment", 0.05),
    ("trace.txt", 0.14),
    ("trace.html", 0.14),
    ("trace.json", 0.14),
    ("trace.pftrace", 0.11),
    ("sql", 0.14),
    ("names", 0.06),
)
"""Each family's share of ``--runs``."""
TRACE_COMMANDS = ("parse", "parse --json", "query", "replay -n")


def seed_traces(work: Path) -> dict[str, list[bytes]]:
    """nnemu's own traces of two shipped scenarios in each format (and omr1's head)."""
    found: dict[str, list[bytes]] = collections.defaultdict(list)
    for name in ("quickstart", "two_apps_one_npu"):
        for suffix in (".txt", ".html", ".json", ".pftrace"):
            out = work / f"seed-{name}{suffix}"
            code = _main_in_child(
                [
                    "run",
                    str(ROOT / "scenarios" / f"{name}.yaml"),
                    "--set",
                    "duration_ms=300",
                    "--trace",
                    str(out),
                ],
                work,
            )
            if code in (0, 1) and out.exists():  # 1: an expectation failed, the trace is written
                found[suffix].append(out.read_bytes())
    if OMR1.exists():
        found[".html"].append(omr1_head().encode())
    return found


def _main_in_child(argv: list[str], work: Path) -> int:
    outcome, _, _ = run(argv, [], 300, work)
    return int(outcome.split()[-1]) if outcome.startswith("exit") else 70


def plan(args: argparse.Namespace, work: Path) -> list[tuple[str, list[str], list[Path]]]:
    """Every run of the campaign, in order: (family, argv, inputs); written inputs in ``work``."""
    rng = random.Random(args.seed)
    sources = sorted((ROOT / "scenarios").glob("*.yaml"))
    seeds = seed_traces(work)
    runs: list[tuple[str, list[str], list[Path]]] = []
    for family, share in SHARES:
        count = round(args.runs * share)
        n = 0
        while n < count:
            tag = f"{family.replace('.', '_')}{n}"
            if family == "scenario":
                path = work / f"{tag}.yaml"
                path.write_text(
                    mutate_scenario(rng.choice(sources).read_text(), rng),
                    encoding="utf-8",
                    errors="surrogatepass",
                )
                argv = ["run", str(path)]
                if rng.random() < 0.9:
                    argv += ["--set", "duration_ms=100"]
                if rng.random() < 0.15:
                    argv += [rng.choice(("--trace", "--report", "--html")), str(path)]
                elif rng.random() < 0.2:
                    argv += [
                        "--trace",
                        str(
                            work / f"{tag}.out{rng.choice(('.txt', '.json', '.pftrace', '.html'))}"
                        ),
                    ]
                runs.append((family, argv, [path]))
                n += 1
            elif family == "experiment":
                path = work / f"{tag}.yaml"
                path.write_text(
                    experiment(rng, ROOT / "scenarios" / "quickstart.yaml"), encoding="utf-8"
                )
                runs.append(
                    (
                        family,
                        ["sweep", str(path), "--workers", "1", "--out", str(work / f"{tag}.sweep")],
                        [path],
                    )
                )
                n += 1
            elif family.startswith("trace"):
                suffix = family[len("trace") :]
                source = rng.choice(seeds[suffix])
                path = work / f"{tag}{suffix}"
                if suffix == ".pftrace":
                    path.write_bytes(mutate_pftrace(source, rng))
                else:
                    mutant = mutate_trace(source.decode("utf-8", "replace"), rng, suffix == ".json")
                    if isinstance(mutant, bytes):
                        path.write_bytes(mutant)
                    else:
                        path.write_text(mutant, encoding="utf-8", errors="replace")
                for command in TRACE_COMMANDS:
                    if n >= count:
                        break
                    if command == "query":
                        argv = ["query", str(path), "SELECT count(*), max(dur), min(ts) FROM slice"]
                    else:
                        argv = [*command.split(), str(path)]
                    runs.append((family, argv, [path]))
                    n += 1
            elif family == "sql":
                suffix = rng.choice((".txt", ".html", ".json", ".pftrace"))
                path = work / f"sql-base{suffix}"
                if not path.exists():
                    path.write_bytes(seeds[suffix][0])
                argv = ["query", str(path), sql_statement(rng)]
                if rng.random() < 0.3:
                    argv.insert(1, rng.choice(("--csv", "--json")))
                runs.append((family, argv, [path]))
                n += 1
            else:  # names
                path = work / f"{tag}.yaml"
                path.write_text(named_scenario(rng), encoding="utf-8", errors="surrogatepass")
                out = work / f"{tag}.out{rng.choice(('.txt', '.html', '.json', '.pftrace'))}"
                runs.append((family, ["run", str(path), "--trace", str(out)], [path]))
                runs.append(("names", ["parse", str(out)], [path]))
                n += 2
    return runs


PRELOADED = (
    "nnemu.cli",
    "nnemu._emulator",
    "nnemu.parser",
    "nnemu.query",
    "nnemu.replay",
    "nnemu.scenario",
    "nnemu.sweep",
)
"""The modules the commands import, imported once in the process the runs are forked from."""


def preload() -> None:
    """Import the commands' modules here, once (a fork server): a forked run then pays for
    its command, not for ~1 s of imports; SIGINT is Python's again (nnemu's import makes it
    end the process at once until ``console_main`` runs, which each run calls)."""
    for name in PRELOADED:
        importlib.import_module(name)
    signal.signal(signal.SIGINT, signal.default_int_handler)


def shard_main(args: argparse.Namespace) -> dict[str, object]:
    """Run this shard's share of the plan; its tallies and failures as JSON data."""
    tally: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    peak: dict[str, int] = collections.defaultdict(int)
    failures: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory(prefix="nnemu-fuzz-") as tmp:
        work = Path(tmp)
        runs = plan(args, work)
        preload()
        # The families interleaved (the same order in every shard), so that a campaign cut
        # short by --minutes has run each of them.
        groups: list[list[tuple[str, list[str], list[Path]]]] = []
        for item in runs:  # a names parse stays right after its run
            if item[0] == "names" and item[1][0] == "parse":
                groups[-1].append(item)
            else:
                groups.append([item])
        random.Random(args.seed).shuffle(groups)
        runs = [item for group in groups for item in group]
        stop_at = time.monotonic() + args.minutes * 60 if args.minutes else None
        last_run_ok: dict[int, bool] = {}
        for index, (family, argv, inputs) in enumerate(runs):
            if stop_at is not None and time.monotonic() > stop_at:
                break
            if index % args.shards != args.shard and not (
                family == "names" and argv[0] == "parse" and (index - 1) % args.shards == args.shard
            ):
                continue
            if family == "names" and argv[0] == "parse":
                if (index - 1) % args.shards != args.shard:
                    continue  # the parse runs in the shard that ran its run
                if not last_run_ok.get(index - 1):
                    continue  # nothing written to read back
            outcome, detail, rss = run(argv, inputs, args.timeout, work)
            if family == "names" and argv[0] == "parse" and outcome != "exit 0":
                outcome, detail = "unread", detail or f"{outcome}: {' '.join(argv)[:150]}"
            if family == "names" and argv[0] == "run":
                last_run_ok[index] = outcome == "exit 0"
            tally[family][outcome] += 1
            peak[family] = max(peak[family], rss)
            if not outcome.startswith("exit"):
                failures.append((family, outcome, detail))  # listed, kept; counted if not FINE
                if args.keep:
                    args.keep.mkdir(parents=True, exist_ok=True)
                    for path in inputs:
                        target = args.keep / f"{family}-{index}{path.suffix}"
                        target.write_bytes(path.read_bytes())
                    (args.keep / f"{family}-{index}.argv").write_text(json.dumps(argv))
            for leftover in work.glob("*.sweep"):
                subprocess.run(["rm", "-rf", str(leftover)], check=False)
            if args.progress:
                done = {
                    "tally": {k: dict(v) for k, v in tally.items()},
                    "peak": dict(peak),
                    "failures": failures,
                    "index": index,
                    "of": len(runs),
                }
                (args.progress / f"shard{args.shard}.json").write_text(json.dumps(done))
    return {
        "tally": {k: dict(v) for k, v in tally.items()},
        "peak": dict(peak),
        "failures": failures,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5000, help="runs in all, shared among the families")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per command")
    ap.add_argument("--jobs", type=int, default=1, help="shards run at once (processes)")
    ap.add_argument("--shard", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--shards", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--show", type=int, default=30, help="failures to list")
    ap.add_argument("--keep", type=Path, help="copy each failing input into this directory")
    ap.add_argument("--minutes", type=float, help="stop starting runs after this long")
    ap.add_argument("--progress", type=Path, help="write each shard's tallies here as it goes")
    ap.add_argument(
        "--root", type=Path, help="run the nnemu of this checkout (e.g. main, for a baseline)"
    )
    args = ap.parse_args()
    global ROOT
    if args.root:
        ROOT = args.root.resolve()
    sys.path.insert(0, str(ROOT))
    os.environ["PYTHONPATH"] = str(ROOT)
    if args.shard is not None:
        json.dump(shard_main(args), sys.stdout)
        return 0
    started = time.monotonic()
    if args.jobs <= 1:
        args.shard, args.shards = 0, 1
        results: list[dict[str, Any]] = [shard_main(args)]
    else:
        children = [
            subprocess.Popen(
                [
                    sys.executable,
                    __file__,
                    *sys.argv[1:],
                    "--shard",
                    str(k),
                    "--shards",
                    str(args.jobs),
                ],
                stdout=subprocess.PIPE,
                text=True,
            )
            for k in range(args.jobs)
        ]
        results = [json.loads(child.communicate()[0]) for child in children]
    tally: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    peak: dict[str, int] = collections.defaultdict(int)
    failures: list[list[str]] = []
    for result in results:
        for family, counts in result["tally"].items():
            tally[family].update(counts)
        for family, rss in result["peak"].items():
            peak[family] = max(peak[family], rss)
        failures.extend(result["failures"])
    outcomes = sorted({o for c in tally.values() for o in c})
    print(
        f"{'family':<15}{'runs':>6}" + "".join(f"{o:>11}" for o in outcomes) + f"{'max RSS MB':>12}"
    )
    for family, _ in SHARES:
        counts = tally[family]
        print(
            f"{family:<15}{sum(counts.values()):>6}"
            + "".join(f"{counts[o]:>11}" for o in outcomes)
            + f"{peak[family] // 1024:>12}"
        )
    total = collections.Counter[str]()
    for counts in tally.values():
        total.update(counts)
    bad = sum(n for o, n in total.items() if not o.startswith("exit") and o not in FINE)
    print(
        f"\n{sum(total.values())} runs (seed {args.seed}) in {time.monotonic() - started:.0f} s: "
        f"{bad} failures ({total['traceback']} tracebacks, {total['hang']} hangs, "
        f"{total['blow-up']} blow-ups, {total['lost file']} lost files, "
        f"{total['negative']} silent negatives, {total['unread']} unread traces, "
        f"{total['slow']} slow); "
        f"{total['interrupted']} interrupted (endless by request: exit 130 at the timeout's SIGINT)"
    )
    for family, outcome, detail in failures[: args.show]:
        print(f"  {family}: {outcome}: {detail}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
