"""Random systrace/ftrace texts loaded by two trees' ``nnemu query``: tables and warnings equal.

Not a benchmark: a check that query's text load reads every kind of row as another tree's
does (it read them with a loop of its own before branch ``querytext2``; now with the trace
reader's rows, ``nnemu.trace.TraceEvents.feed``).

``python bench/text_identity.py gen N DIR SEED`` writes N random traces (text and HTML, with
malformed rows, ids beyond pid_t, odd timestamps, cut last rows, process dumps);
``PYTHONPATH=TREE python bench/text_identity.py load DIR OUT.json`` loads each with that
tree's ``load_trace`` and dumps its tables, warnings and summary;
``python bench/text_identity.py compare A.json B.json`` names the traces whose dumps differ
(exit 1 if any).
"""

import json
import os
import random
import sqlite3
import sys

TASKS = [
    "app",
    "<...>",
    "Binder:1-2",
    " x y",
    "HwBinder:2000_1",
    "a-b-c",
    "camera",
    "nn-worker-1",
    "t",
]
TGIDS = [
    "",
    "( 1000) ",
    "(-----) ",
    "(  200) ",
    "(1000)",
    "(    0) ",
    "(99999999999) ",
    "( 4194305) ",
    "(4194304) ",
]
TIDS = ["1000", "1001", "200", "99999999999", "0", "4194304", "4194305", "1", "0001000"]
PAYLOADS = [
    "B|1000|[NN_LA_PE]run",
    "B|1000|HIDL::IDevice::prepareModel_1_3::server",
    "B|1000|name\r",
    "B|200|[NN_LD_PC]prepareModel",
    "B||bad",
    "B|x|odd",
    "B|1000",
    "B|1000|",
    "B",
    "B|",
    "B| 200|sp",
    "B|+200|plus",
    "B|1000|a|b|c",
    "B|1000|[NN_LR_PE]ANeuralNetworksExecution_compute  ",
    "B|1000|nnemu::qos priority=HIGH",
    "B|0|zero",
    "B|99999999999|huge",
    "Bx|200|kindx",
    "E|1000",
    "E",
    "E|200",
    "E|",
    "E|x",
    "E|1000|extra",
    "E",
    "E",
    "E|1000",
    "E|1000",
    "C|1000|counter|1",
    "C|1000|counter|2.5",
    "C|x|c|1",
    "C|1000||3",
    "C|200|q| 7",
]


def stamp(rng, t):
    r = rng.random()
    if r < 0.85:
        return f"{t // 1_000_000}.{t % 1_000_000:06d}"
    if r < 0.9:
        return f"{t // 1_000_000}.{t % 1_000_000:06d}500"
    if r < 0.93:
        return f"{t // 1_000_000}.{(t % 1_000_000) // 1000:03d}"
    if r < 0.95:
        return "99999999999.000001"
    if r < 0.96:
        return "999999999999999999999.1"
    return f"{t // 1_000_000}.{t % 1_000_000:06d}0"


def row(rng, t):
    task, tgid, tid, payload = (
        rng.choice(TASKS),
        rng.choice(TGIDS),
        rng.choice(TIDS),
        rng.choice(PAYLOADS),
    )
    space = rng.choice([" ", " ", " ", "  ", "\t"])
    r = rng.random()
    if r < 0.02:
        return f"{task}-{tid} garbage tracing_mark_write: {payload}\n"
    if r < 0.03:
        return "some other line\n"
    if r < 0.04:
        return f"{task:>16}-{tid} {tgid}[001] ...1{space}{stamp(rng, t)}: sched_switch: x\n"
    return (
        f"{task:>16}-{tid} {tgid}[001] ...1{space}{stamp(rng, t)}: tracing_mark_write: {payload}\n"
    )


def trace(rng):
    n = rng.randint(1, 80)
    t = rng.randint(0, 5_000_000)
    rows = []
    for _ in range(n):
        t += rng.choice([0, 1, 5, 100, 3000]) if rng.random() > 0.05 else -rng.randint(1, 5000)
        t = max(t, 0)
        rows.append(row(rng, t))
    body = "".join(rows)
    if rng.random() < 0.2:
        body = body.rstrip("\n")  # cut last row
    if rng.random() < 0.4:
        dump = ""
        if rng.random() < 0.7:
            dump = (
                '<script class="trace-data" type="application/text">\nPROCESS DUMP\nUSER PID PPID VSZ RSS WCHAN PC S NAME COMM\n'
                "root 1000 1 0 0 0 0 S /system/bin/app app\nroot 200 1 0 0 0 0 S drv drv\n</script>\n"
            )
        end = "" if rng.random() < 0.15 else "</script>\n"
        return (
            '<html><body>\n<script class="trace-data" type="application/text">\n# tracer: nop\n'
            + body
            + ("\n" if not body.endswith("\n") and end else "")
            + end
            + dump
            + "</body></html>\n"
        )
    return "# tracer: nop\n" + body


def gen(n, out, seed):
    rng = random.Random(seed)
    os.makedirs(out, exist_ok=True)
    for i in range(n):
        text = trace(rng)
        ext = ".html" if text.startswith("<html>") else ".txt"
        with open(os.path.join(out, f"t{i:04d}{ext}"), "w") as f:
            f.write(text)


def load(d, out):
    from nnemu.errors import TraceFormatError
    from nnemu.query._load import load_trace

    result = {}
    for name in sorted(os.listdir(d)):
        conn = sqlite3.connect(":memory:")
        warnings = []
        summary = None
        try:
            s = load_trace(
                os.path.join(d, name),
                conn,
                lambda line, message, held=warnings: held.append((line, message)),
            )
            summary = [
                s.format,
                s.slices,
                s.open_slices,
                s.unmatched_ends,
                s.out_of_order,
                s.threads,
                s.processes,
            ]
        except TraceFormatError as error:
            warnings.append((error.line_number, error.message))
        tables = {}
        for (table,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name"
        ).fetchall():
            tables[table] = [
                list(map(repr, r)) for r in conn.execute(f"SELECT * FROM {table}").fetchall()
            ]
        result[name] = {"summary": summary, "warnings": warnings, "tables": tables}
    with open(out, "w") as f:
        json.dump(result, f, sort_keys=True)


def compare(a, b):
    with open(a) as f:
        first = json.load(f)
    with open(b) as f:
        second = json.load(f)
    differ = [
        name for name in sorted(set(first) | set(second)) if first.get(name) != second.get(name)
    ]
    print(f"{len(differ)} of {len(first)} traces differ", *differ[:20])
    return 1 if differ else 0


if sys.argv[1] == "gen":
    gen(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]))
elif sys.argv[1] == "compare":
    sys.exit(compare(sys.argv[2], sys.argv[3]))
else:
    load(sys.argv[2], sys.argv[3])
