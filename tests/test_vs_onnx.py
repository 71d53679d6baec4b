"""gridsample against onnxruntime and the ONNX conformance node tests.

onnxruntime (CPU, opset 20) covers 4-D in every mode and 5-D in linear and
nearest.  The conformance cases are built in memory by
``onnx.backend.test.case.node.collect_testcases`` (onnx >= 1.23 no longer
ships their data) and checked with ONNX's own runner tolerances.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import gridsample
from conftest import ALIGNS, MODES, PADDINGS, random_case, tolerance

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402

from gridsample.onnx import conformance_cases  # noqa: E402

_ONNX_TYPE = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float64): TensorProto.DOUBLE}


def ort_grid_sample(x, grid, mode, padding, align):
    node = helper.make_node("GridSample", ["X", "G"], ["Y"], mode=mode, padding_mode=padding,
                            align_corners=int(align))
    elem = _ONNX_TYPE[x.dtype]
    graph = helper.make_graph(
        [node], "gs",
        [helper.make_tensor_value_info("X", elem, list(x.shape)),
         helper.make_tensor_value_info("G", elem, list(grid.shape))],
        [helper.make_tensor_value_info("Y", elem, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 9
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return sess.run(None, {"X": x, "G": grid})[0]


@pytest.mark.parametrize("mode,padding,align", list(itertools.product(MODES, PADDINGS, ALIGNS)))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_4d_matches_onnxruntime(rng, mode, padding, align, dtype):
    x, grid = random_case(rng, (2, 3, 8, 10), (5, 6), spread=1.5, x_dtype=dtype, grid_dtype=dtype)
    got = gridsample.grid_sample(x, grid, mode, padding, align)
    np.testing.assert_allclose(got, ort_grid_sample(x, grid, mode, padding, align),
                               **tolerance(dtype))


@pytest.mark.parametrize("mode,padding,align",
                         list(itertools.product(("linear", "nearest"), PADDINGS, ALIGNS)))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_5d_matches_onnxruntime(rng, mode, padding, align, dtype):
    x, grid = random_case(rng, (1, 2, 4, 5, 6), (3, 4, 2), spread=1.5, x_dtype=dtype,
                          grid_dtype=dtype)
    got = gridsample.grid_sample(x, grid, mode, padding, align)
    np.testing.assert_allclose(got, ort_grid_sample(x, grid, mode, padding, align),
                               **tolerance(dtype))


_CASES = [c for c in conformance_cases() if c.model.graph.node[0].op_type == "GridSample"]


def test_all_gridsample_conformance_cases_are_collected():
    # onnx 1.23 defines 18 GridSample node cases; fewer means the filter broke.
    assert len(_CASES) >= 18


@pytest.mark.parametrize("case", _CASES, ids=[c.name for c in _CASES])
def test_onnx_conformance_case(case):
    node = case.model.graph.node[0]
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    decode = lambda v: v.decode() if isinstance(v, bytes) else v  # noqa: E731
    for inputs, outputs in case.data_sets:
        got = gridsample.grid_sample(
            inputs[0], inputs[1],
            mode=decode(attrs.get("mode", "linear")),
            padding_mode=decode(attrs.get("padding_mode", "zeros")),
            align_corners=attrs.get("align_corners", 0),
        )
        np.testing.assert_allclose(got, outputs[0], rtol=case.rtol, atol=case.atol)
