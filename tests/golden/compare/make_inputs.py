"""Write the inputs of the ``nnemu compare`` golden cases (``python -m tests.golden.compare.make_inputs``).

Every input comes from real runs of ``scenarios/two_apps_one_npu.yaml`` (virtual time, so the
same bytes each time): run reports, replications reports, and two sweep directories written
as the sweep-directory contract (docs/experiments.md) describes them, one with a failed
variant.  Run it again only when the report's format changes, then ``--update-goldens``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from nnemu import run
from nnemu.errors import NnemuError
from nnemu.overrides import apply_overrides
from nnemu.replications import run_replications
from nnemu.scenario import dump_scenario, load_scenario

HERE = Path(__file__).resolve().parent
SCENARIO = HERE.parents[2] / "scenarios" / "two_apps_one_npu.yaml"
SLOWER = "devices.npu.performance.float32.exec_time=0.3"
"""The change B makes: the indexer's float32 model runs 20% slower on the NPU."""
RATE = "apps.indexer.workload.think_ms"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _sweep(directory: Path, sets: list[str], points: list[str], replications: int) -> None:
    """A sweep directory: ``points`` values of RATE, each run ``replications`` times."""
    base = apply_overrides(load_scenario(SCENARIO), sets)
    lines = []
    for raw in points:
        assignment = f"{RATE}={raw}"
        for replication in range(replications):
            seed = base.seed + replication
            key = "\n".join([dump_scenario(base), assignment, str(seed)])
            row: dict[str, object] = {
                "nnemu": "0.1.0",
                "point": {RATE: json.loads(raw)},
                "replication": replication,
                "seed": seed,
                "variant": hashlib.sha256(key.encode()).hexdigest()[:16],
            }
            try:
                report = run(apply_overrides(base, [assignment]), seed=seed)
            except NnemuError as exc:
                row |= {"error": str(exc), "report": None, "status": "failed"}
            else:
                row |= {"error": None, "report": dict(report.data), "status": "ok"}
            lines.append(json.dumps(row, sort_keys=True) + "\n")
    _write(directory / "results.jsonl", "".join(reversed(lines)))  # completion order: any


def main() -> None:
    """Write every case's inputs."""
    base = load_scenario(SCENARIO)
    slower = apply_overrides(base, [SLOWER])
    _write(HERE / "reports" / "a.json", run(base).to_json())
    _write(HERE / "reports" / "b.json", run(slower).to_json())
    _write(HERE / "replications" / "a.json", run_replications(base, 4).to_json())
    _write(HERE / "replications" / "b.json", run_replications(slower, 4).to_json())
    _sweep(HERE / "sweeps" / "a", [], ["2", "10"], 3)
    # B: slower, and one point whose value the scenario refuses (a failed variant)
    _sweep(HERE / "sweeps" / "b", [SLOWER], ["2", "10", "-1"], 3)
    _write(HERE / "baseline" / "a.json", run(base).to_json())
    _sweep(HERE / "baseline" / "b", [SLOWER], ["2", "10"], 2)


if __name__ == "__main__":
    main()
