"""Golden test for ``nnemu run --replications``: the exact summary of three replications.

``pytest --update-goldens`` rewrites ``replications/two_apps_one_npu.txt``.
"""

from __future__ import annotations

from pathlib import Path

from tests.commands import run_cli
from tests.goldens import check_golden

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def test_replications_summary(update_goldens: bool) -> None:
    """The app table, latency split and device table (energy included) show means ± 95% CI."""
    code, out, err = run_cli(
        "run", str(REPO / "scenarios/two_apps_one_npu.yaml"), "--replications", "3"
    )
    assert code == 0
    assert err == ""
    check_golden(out, HERE / "replications" / "two_apps_one_npu.txt", update_goldens)
