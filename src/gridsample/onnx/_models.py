"""A small spatial-transformer model, AffineGrid -> GridSample, built with onnx.helper.

It is what spatial-transformer networks export to: the tests run it through
gridsample's evaluator, the plain evaluator and onnxruntime, and the ONNX
benchmark times it.
"""

from __future__ import annotations

import numpy as np
from onnx import ModelProto, TensorProto, helper, numpy_helper

from .._errors import GridSampleTypeError, describe

__all__ = ["spatial_transformer_model"]

_ELEM = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float64): TensorProto.DOUBLE,
         np.dtype(np.float16): TensorProto.FLOAT16}


def spatial_transformer_model(x_shape, out_spatial, *, mode="linear", padding_mode="zeros",
                              align_corners=False, dtype=np.float32, opset=20) -> ModelProto:
    """``Y = GridSample(X, AffineGrid(theta, size))`` for 2-D or 3-D ``X``.

    Parameters
    ----------
    x_shape : tuple, (N, C, H, W) or (N, C, D, H, W)
        Shape of input ``X``.
    out_spatial : tuple, (H', W') or (D', H', W')
        Spatial shape of output ``Y``; ``size`` = (N, C, *out_spatial) is an
        initializer.
    mode, padding_mode, align_corners
        GridSample's attributes (ONNX opset-20 names); AffineGrid gets the
        same ``align_corners``.
    dtype : float32, float64 or float16
        Element type of ``X``, ``theta`` and ``Y``.
    opset : int, default 20
        Default-domain opset (AffineGrid needs 20 or later).

    Returns
    -------
    onnx.ModelProto
        Inputs ``X`` (x_shape) and ``theta`` (N, r, r + 1); output ``Y``
        (N, C, *out_spatial).
    """
    n, c = x_shape[:2]
    r = len(x_shape) - 2
    try:
        elem = _ELEM[np.dtype(dtype)]
    except (TypeError, KeyError):  # (np.dtype refuses some values with a TypeError)
        raise GridSampleTypeError(
            f"dtype={describe(dtype)} is not one of the model's element types: float32, "
            f"float64, float16") from None
    size = numpy_helper.from_array(np.array([n, c, *out_spatial], np.int64), "size")
    nodes = [
        helper.make_node("AffineGrid", ["theta", "size"], ["grid"],
                         align_corners=int(align_corners)),
        helper.make_node("GridSample", ["X", "grid"], ["Y"], mode=mode,
                         padding_mode=padding_mode, align_corners=int(align_corners)),
    ]
    graph = helper.make_graph(
        nodes, "spatial_transformer",
        [helper.make_tensor_value_info("X", elem, list(x_shape)),
         helper.make_tensor_value_info("theta", elem, [n, r, r + 1])],
        [helper.make_tensor_value_info("Y", elem, [n, c, *out_spatial])],
        initializer=[size],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model
