"""``nnemu sweep``: an experiment (a base scenario, the keys that vary, replications) run as
many deterministic variants on a local process pool or a Dask cluster, with a results table,
a summary of means and confidence intervals, and plots.  docs/experiments.md is the guide.
"""

from nnemu.sweep._command import run_sweep_command
from nnemu.sweep._experiment import Experiment, Variant, load_experiment, variant_key
from nnemu.sweep._results import SweepDirError, summary, table

__all__ = [
    "Experiment",
    "SweepDirError",
    "Variant",
    "load_experiment",
    "run_sweep_command",
    "summary",
    "table",
    "variant_key",
]
