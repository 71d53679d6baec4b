"""gridsample.onnx: the ReferenceEvaluator operators, the helper and the conformance runner."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import gridsample
from conftest import ALIGNS, MODES, PADDINGS, random_case, tolerance

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402

import gridsample.onnx as gso  # noqa: E402

_CASES = gso.conformance_cases()


def test_every_conformance_case_is_collected():
    # onnx 1.23: 18 GridSample and 4 single-node AffineGrid cases.
    ops = [c.model.graph.node[0].op_type for c in _CASES]
    assert ops.count("GridSample") >= 18 and ops.count("AffineGrid") >= 4


@pytest.mark.parametrize("case", _CASES, ids=[c.name for c in _CASES])
def test_conformance_case_through_the_evaluator(case):
    sess = gso.evaluator(case.model)
    names = [i.name for i in case.model.graph.input]
    for inputs, outputs in case.data_sets:
        got = sess.run(None, dict(zip(names, inputs)))
        assert got[0].dtype == outputs[0].dtype
        np.testing.assert_allclose(got[0], outputs[0], rtol=case.rtol, atol=case.atol)


def test_conformance_runner_reports_every_case_passing():
    results = gso.run_conformance(compare_reference=False)
    assert len(results) == len(_CASES)
    assert all(r.passed for r in results), [r for r in results if not r.passed]
    table = gso.format_table(results)
    assert f"{len(results)}/{len(results)} conformance cases pass" in table


def _grid_sample_model(x_shape, grid_shape, opset, dtype=TensorProto.FLOAT, **attrs):
    node = helper.make_node("GridSample", ["X", "G"], ["Y"], **attrs)
    graph = helper.make_graph(
        [node], "gs",
        [helper.make_tensor_value_info("X", dtype, list(x_shape)),
         helper.make_tensor_value_info("G", dtype, list(grid_shape))],
        [helper.make_tensor_value_info("Y", dtype, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


@pytest.mark.parametrize("opset_mode,mode", [
    ((16, "bilinear"), "linear"), ((16, "bicubic"), "cubic"), ((16, "nearest"), "nearest"),
    ((20, "linear"), "linear"), ((20, "cubic"), "cubic"), ((22, "cubic"), "cubic"),
])
def test_each_opset_takes_its_own_mode_names(rng, opset_mode, mode):
    opset, name = opset_mode
    x, grid = random_case(rng, (2, 3, 6, 7), (4, 5), x_dtype=np.float32, grid_dtype=np.float32)
    model = _grid_sample_model(x.shape, grid.shape, opset, mode=name, padding_mode="reflection",
                               align_corners=1)
    got = gso.run_model(model, {"X": x, "G": grid})[0]
    np.testing.assert_array_equal(got, gridsample.grid_sample(x, grid, mode, "reflection", True))


def test_opset_20_rejects_opset_16_names(rng):
    x, grid = random_case(rng, (1, 1, 3, 3), (2, 2), x_dtype=np.float32, grid_dtype=np.float32)
    model = _grid_sample_model(x.shape, grid.shape, 20, mode="bilinear")
    with pytest.raises(gridsample.GridSampleError, match="mode='bilinear' is not a GridSample-20"):
        gso.run_model(model, {"X": x, "G": grid})


@pytest.mark.parametrize("attrs, name", [
    (dict(mode=""), "mode"), (dict(mode=0), "mode"), (dict(mode="Linear"), "mode"),
    (dict(padding_mode=""), "padding_mode"), (dict(padding_mode=1), "padding_mode"),
    (dict(padding_mode="BORDER"), "padding_mode"), (dict(padding_mode=" border"), "padding_mode"),
    (dict(align_corners=0.5), "align_corners"), (dict(align_corners="1"), "align_corners"),
    (dict(align_corners="abc"), "align_corners"), (dict(align_corners=2), "align_corners"),
])
def test_attributes_are_read_exactly(rng, attrs, name):
    """As ONNX Runtime reads them: names exactly (no case or space folding, no codes, no
    empty string taken for the default), align_corners the integer 0 or 1."""
    x, grid = random_case(rng, (1, 1, 3, 3), (2, 2), x_dtype=np.float32, grid_dtype=np.float32)
    model = _grid_sample_model(x.shape, grid.shape, 20, **attrs)
    with pytest.raises(gridsample.GridSampleError, match=f"GridSample node '': {name}="):
        gso.run_model(model, {"X": x, "G": grid})


@pytest.mark.parametrize("opset", [16, 20, 22])
@pytest.mark.parametrize("attrs", [{}, dict(align_corners=1), dict(padding_mode="border")])
def test_attributes_left_out_take_their_defaults(rng, opset, attrs):
    """A node without ``mode`` (or without any attribute) runs bilinear / linear at every
    opset: onnx.reference hands ``_run`` the newest schema's defaults, GridSample-16's too."""
    x, grid = random_case(rng, (1, 2, 4, 5), (3, 3), x_dtype=np.float32, grid_dtype=np.float32)
    model = _grid_sample_model(x.shape, grid.shape, opset, **attrs)
    got = gso.run_model(model, {"X": x, "G": grid})[0]
    want = gridsample.grid_sample(x, grid, "linear", attrs.get("padding_mode", "zeros"),
                                  bool(attrs.get("align_corners", 0)))
    np.testing.assert_array_equal(got, want)


def test_opset_16_is_4d_only(rng):
    x, grid = random_case(rng, (1, 1, 3, 3, 3), (2, 2, 2), x_dtype=np.float32,
                          grid_dtype=np.float32)
    model = _grid_sample_model(x.shape, grid.shape, 16, mode="bilinear")
    with pytest.raises(gridsample.GridSampleError, match="GridSample-16 takes 4-D X"):
        gso.run_model(model, {"X": x, "G": grid})


def test_opset_20_runs_any_rank(rng):
    x, grid = random_case(rng, (1, 2, 4, 3, 3, 3), (2, 2, 2, 2), x_dtype=np.float32,
                          grid_dtype=np.float32)
    model = _grid_sample_model(x.shape, grid.shape, 20, mode="linear")
    got = gso.run_model(model, {"X": x, "G": grid})[0]
    np.testing.assert_array_equal(got, gridsample.grid_sample(x, grid))


def test_gridsample_before_opset_16_is_an_error():
    with pytest.raises(gridsample.GridSampleError, match="opset=15"):
        gso.gridsample_version(15)


@pytest.mark.parametrize("size, refused", [
    (np.array([1, 1, 4, 5], np.int64), False),
    (np.array([1, 1, 4.5, 5], np.float32), True),  # truncated to 4 before: a silent wrong grid
    (np.array([[1, 1, 4, 5]], np.int64), True),
])
def test_affine_grid_takes_a_1d_integer_size(size, refused):
    from onnx.reference import ReferenceEvaluator

    node = helper.make_node("AffineGrid", ["theta", "size"], ["grid"], align_corners=0)
    size_type = TensorProto.INT64 if size.dtype == np.int64 else TensorProto.FLOAT
    graph = helper.make_graph(
        [node], "ag",
        [helper.make_tensor_value_info("theta", TensorProto.FLOAT, [1, 2, 3]),
         helper.make_tensor_value_info("size", size_type, list(size.shape))],
        [helper.make_tensor_value_info("grid", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 10
    theta = np.array([[[1, 0.2, 0], [0, 1, 0.1]]], np.float32)
    run = ReferenceEvaluator(model, new_ops=list(gso.OPS)).run
    if refused:  # (onnx.reference re-raises a TypeError of an operator as its own, from it)
        with pytest.raises(TypeError) as info:
            run(None, {"theta": theta, "size": size})
        error = info.value if isinstance(info.value, gridsample.GridSampleTypeError) \
            else info.value.__cause__
        assert isinstance(error, gridsample.GridSampleTypeError)
        assert "AffineGrid's size" in str(error)
    else:
        got = run(None, {"theta": theta, "size": size})[0]
        np.testing.assert_array_equal(got, gridsample.affine_grid(theta, (1, 1, 4, 5)))


@pytest.mark.parametrize("align", [0.5, "1", 2])
def test_affine_grid_align_corners_is_0_or_1(align):
    node = helper.make_node("AffineGrid", ["theta", "size"], ["grid"], align_corners=align)
    graph = helper.make_graph(
        [node], "ag",
        [helper.make_tensor_value_info("theta", TensorProto.FLOAT, [1, 2, 3]),
         helper.make_tensor_value_info("size", TensorProto.INT64, [4])],
        [helper.make_tensor_value_info("grid", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 10
    theta = np.array([[[1, 0.2, 0], [0, 1, 0.1]]], np.float32)
    with pytest.raises(gridsample.GridSampleError, match="AffineGrid node '': align_corners="):
        gso.run_model(model, {"theta": theta, "size": np.array([1, 1, 4, 5], np.int64)})


def test_run_model_reads_paths_and_bytes(rng, tmp_path):
    x, grid = random_case(rng, (1, 2, 5, 5), (3, 3), x_dtype=np.float32, grid_dtype=np.float32)
    model = _grid_sample_model(x.shape, grid.shape, 22, mode="cubic")
    path = tmp_path / "gs.onnx"
    onnx.save(model, path)
    want = gridsample.grid_sample(x, grid, "cubic")
    for source in (model, path, str(path), model.SerializeToString()):
        np.testing.assert_array_equal(gso.run_model(source, {"X": x, "G": grid})[0], want)
    with pytest.raises(gridsample.GridSampleTypeError, match="model=.*onnx.ModelProto"):
        gso.run_model(3.5, {})


def _stn_inputs(rng, x_shape, dtype):
    r = len(x_shape) - 2
    x = rng.standard_normal(x_shape).astype(dtype)
    theta = (np.eye(r, r + 1) + 0.4 * rng.standard_normal((x_shape[0], r, r + 1))).astype(dtype)
    return x, theta


def _stn_functions(x, theta, out_spatial, mode, padding, align):
    size = (*x.shape[:2], *out_spatial)
    return gridsample.grid_sample(x, gridsample.affine_grid(theta, size, align), mode, padding,
                                  align)


def _onnxruntime(model, feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


@pytest.mark.parametrize("mode,padding,align", list(itertools.product(MODES, PADDINGS, ALIGNS)))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_spatial_transformer_2d(rng, mode, padding, align, dtype):
    x, theta = _stn_inputs(rng, (2, 3, 9, 11), dtype)
    model = gso.spatial_transformer_model(x.shape, (7, 8), mode=mode, padding_mode=padding,
                                          align_corners=align, dtype=dtype)
    got = gso.run_model(model, {"X": x, "theta": theta})[0]
    np.testing.assert_array_equal(got, _stn_functions(x, theta, (7, 8), mode, padding, align))
    np.testing.assert_allclose(got, _onnxruntime(model, {"X": x, "theta": theta}),
                               **tolerance(dtype))


@pytest.mark.parametrize("mode,padding,align", list(itertools.product(MODES, PADDINGS, ALIGNS)))
def test_spatial_transformer_3d(rng, mode, padding, align):
    x, theta = _stn_inputs(rng, (1, 2, 5, 6, 7), np.float32)
    model = gso.spatial_transformer_model(x.shape, (4, 5, 6), mode=mode, padding_mode=padding,
                                          align_corners=align, opset=22)
    got = gso.run_model(model, {"X": x, "theta": theta})[0]
    np.testing.assert_array_equal(got, _stn_functions(x, theta, (4, 5, 6), mode, padding, align))
    if mode == "cubic":  # onnxruntime rejects 5-D cubic; gridsample runs it
        with pytest.raises(Exception, match="Cubic"):
            _onnxruntime(model, {"X": x, "theta": theta})
    else:
        np.testing.assert_allclose(got, _onnxruntime(model, {"X": x, "theta": theta}),
                                   **tolerance(np.float32))


@pytest.mark.parametrize("dtype", [np.int32, "bfloat16", "float8"])
def test_model_of_another_element_type_is_a_type_error(dtype):
    with pytest.raises(gridsample.GridSampleTypeError, match="dtype=.* is not one of the "
                                                             "model's element types"):
        gso.spatial_transformer_model((1, 1, 4, 4), (4, 4), dtype=dtype)
