"""Which tracer runs: the mypyc-compiled tracer and writers, or the pure-Python ones.

The ``tracer`` target of ``nnemu._native`` compiles ``_tracer`` and ``_writers`` with the
kernel (``nnemu.sim._kernel``, whose clock the compiled tracer reads natively); this
module is the one place that picks a family, and ``nnemu.tracer`` hands out the picked
``Tracer``, ``Mark``, ``mark``, ``Section`` and writers.  So no code mixes the two (a
compiled ``Tracer`` takes compiled ``Mark`` objects only).  Both families share what
``_events`` defines (the sink protocols, ``SectionKind``), which is never compiled.

The compiled family is taken when both of its modules are built from the sources on disk,
the compiled kernel runs (``nnemu.sim.COMPILED``: a compiled tracer takes compiled kernels
only) and ``NNEMU_PURE`` does not name ``tracer`` (or ``1``); otherwise the pure one.
"""

from __future__ import annotations

from types import ModuleType
from typing import Final

from nnemu import _native, sim


def _pick() -> tuple[ModuleType, ModuleType]:
    tracer = _native.compiled("nnemu.tracer._tracer")
    writers = _native.compiled("nnemu.tracer._writers")
    if tracer is not None and writers is not None and sim.COMPILED:
        return tracer, writers
    from nnemu.tracer import _tracer, _writers

    return _tracer, _writers


_TRACER, _WRITERS = _pick()

COMPILED: Final = _TRACER.__name__ != "nnemu.tracer._tracer"
"""Whether the compiled family runs."""

BATCH_EVENTS = _TRACER.BATCH_EVENTS
Mark = _TRACER.Mark
Section = _TRACER.Section
Tracer = _TRACER.Tracer
mark = _TRACER.mark
ChromeJsonWriter = _WRITERS.ChromeJsonWriter
FtraceWriter = _WRITERS.FtraceWriter
open_trace_writer = _WRITERS.open_trace_writer
