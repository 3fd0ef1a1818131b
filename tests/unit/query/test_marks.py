"""Layer, phase and kind of NNTRACE tags and HIDL names in the slice table."""

from __future__ import annotations

import pytest

from nnemu.query import describe, open_trace


@pytest.mark.parametrize(
    ("name", "layer", "phase", "kind"),
    [
        ("[NN_LR_PE]ANeuralNetworksExecution_compute", "LR", "PE", "plain"),
        ("[NN_LA_PO]mobilenet_quantized", "LA", "PO", "plain"),
        ("[SW][NN_LD_PCO]SampleDriver::compute", "LD", "PCO", "switch"),
        ("[SUB][NN_LC_PTR]convolution", "LC", "PTR", "subtract"),
        ("[NN_LX_PE]unknown_layer", None, None, "plain"),
        ("HIDL::IDevice::getCapabilities_1_3::client", "LI", "PI", "hidl_client"),
        ("HIDL::IDevice::prepareModel_1_3::server", "LD", "PC", "hidl_server"),
        ("HIDL::IPreparedModel::executeSynchronously_1_3::server", "LD", "PE", "hidl_server"),
        ("HIDL::IExecutionCallback::notify_1_3::client", None, None, "hidl_client"),
        ("HIDL::IComposerClient::executeCommands::client", None, None, "hidl_client"),
        ("HIDL::IDevice::openOutputStream::server", None, None, "hidl_server"),
        ("HIDL::IMapper::importBuffer::passthrough", None, None, "plain"),
        ("Choreographer#doFrame", None, None, "plain"),
    ],
)
def test_describe_reads_tags_and_hidl_names(name, layer, phase, kind):
    """NN tags, [SW]/[SUB] and NNAPI HIDL client/server names get their layer, phase and kind."""
    info = describe(name)
    assert (info.layer, info.phase, info.kind) == (layer, phase, kind)


def test_describe_keeps_function_and_problems_as_args():
    """The function after a tag and the problem with a malformed tag become args."""
    assert describe("[NN_LR_PE]f").args == (("nnapi.function", "f"),)
    problem = dict(describe("[NN_LQ_PE]f").args)["nnapi.problem"]
    assert "unknown layer code 'LQ'" in problem


def test_layer_phase_and_kind_columns_in_sql(write_trace):
    """The slice table carries the parsed columns and nnapi_slice keeps only slices with a layer."""
    rows = [
        (0, "app", 100, 100, "[NN_LR_PE]compute"),
        (1, "app", 100, 100, "[SW][NN_LR_PCO]switch"),
        (2, "app", 100, 100, "[SUB][NN_LC_PTR]sub"),
        (3, "app", 100, 100, "E"),
        (4, "app", 100, 100, "E"),
        (5, "app", 100, 100, "E"),
        (6, "app", 100, 100, "HIDL::IPreparedModel::execute::client"),
        (7, "app", 100, 100, "E"),
        (8, "drv", 200, 200, "HIDL::IPreparedModel::execute::server"),
        (9, "drv", 200, 200, "E"),
        (10, "app", 100, 100, "HIDL::ISensors::poll::client"),
        (11, "app", 100, 100, "E"),
    ]
    conn = open_trace(str(write_trace(rows)))
    assert conn.execute("SELECT name, layer, phase, kind FROM slice ORDER BY id").fetchall() == [
        ("[NN_LR_PE]compute", "LR", "PE", "plain"),
        ("[SW][NN_LR_PCO]switch", "LR", "PCO", "switch"),
        ("[SUB][NN_LC_PTR]sub", "LC", "PTR", "subtract"),
        ("HIDL::IPreparedModel::execute::client", "LI", "PE", "hidl_client"),
        ("HIDL::IPreparedModel::execute::server", "LD", "PE", "hidl_server"),
        ("HIDL::ISensors::poll::client", None, None, "hidl_client"),
    ]
    assert conn.execute("SELECT count(*), min(tid) FROM nnapi_slice").fetchone() == (5, 100)
