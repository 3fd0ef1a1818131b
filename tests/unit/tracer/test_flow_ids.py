"""``Tracer.flow_start``/``flow_end``: a flow by id is the flow ``flow_out``/``flow_in`` write
by key (one numbering, the same events)."""

from __future__ import annotations

from nnemu.sim import Kernel, ProcessTable, as_thread
from nnemu.tracer import Layer, Phase, Tracer, mark
from tests.unit.tracer.helpers import FlowRecorder

A = mark(Layer.IPC, Phase.EXECUTION, "a")


def test_flows_by_id_and_by_key_share_one_numbering_and_end_where_told():
    """Ids count up across both kinds; each flow starts and ends on the thread that wrote it
    there; ``flow_end(0)`` (a flow no sink took) writes nothing."""
    sink = FlowRecorder()
    tracer = Tracer(Kernel(), [sink])
    table = ProcessTable()
    one, two = table.spawn("one", 10001).main_thread, table.spawn("two", 10002).main_thread
    with as_thread(one):
        with tracer.section(A):
            first = tracer.flow_start()
            tracer.flow_out("key")
        with tracer.section(A):
            third = tracer.flow_start()
    with as_thread(two), tracer.section(A):
        tracer.flow_end(first)
        tracer.flow_in("key")
        tracer.flow_end(third)
        tracer.flow_end(0)
    tracer.close()
    assert (first, third) == (1, 3)
    assert sink.flows == [
        (one.tid, 1, False),
        (one.tid, 2, False),
        (one.tid, 3, False),
        (two.tid, 1, True),
        (two.tid, 2, True),
        (two.tid, 3, True),
    ]


def test_no_flow_without_a_sink_that_takes_flows():
    """A tracer whose sinks take no flows gives id 0 and writes nothing."""
    tracer = Tracer(Kernel(), [])
    with as_thread(ProcessTable().spawn("one", 10001).main_thread):
        assert tracer.flow_start() == 0
        tracer.flow_end(0)
