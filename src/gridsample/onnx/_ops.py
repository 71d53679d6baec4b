"""GridSample and AffineGrid as operator classes for ``onnx.reference``.

``onnx.reference.ReferenceEvaluator(model, new_ops=OPS)`` then runs these
nodes with gridsample's kernels instead of the evaluator's pure-Python
loops (which are ~30,000x slower than PyTorch and pre-clamp cubic taps for
border/reflection padding).

Which GridSample version a node follows is the model's opset for the default
domain: 16-19 run GridSample-16 (4-D X only; modes ``bilinear``, ``nearest``,
``bicubic``), 20-21 GridSample-20 (any rank; modes ``linear``, ``nearest``,
``cubic``), 22 and later GridSample-22 (adds bfloat16).  The names of the
other versions are rejected, as the specification asks: a converter that
writes ``bilinear`` into an opset-20 model is told so here rather than by
the next runtime.
"""

from __future__ import annotations

import numpy as np
from onnx.reference.op_run import OpRun

from .._affine import affine_grid
from .._api import grid_sample
from .._errors import GridSampleError, GridSampleTypeError
from .._options import parse_onnx_padding
from .._registry import MODES

__all__ = ["GridSample", "AffineGrid", "OPS", "gridsample_version"]

# Mode names each GridSample version defines (padding names never changed).
_MODES = {
    16: tuple(m.onnx16 for m in MODES if m.onnx),
    20: tuple(m.name for m in MODES if m.onnx),
    22: tuple(m.name for m in MODES if m.onnx),
}


def _default_opset(op: OpRun) -> int:
    opsets = op.run_params.get("opsets") or {}
    return int(opsets.get("", opsets.get("ai.onnx", 0)))


def gridsample_version(opset: int) -> int:
    """The GridSample version (16, 20 or 22) a model of default-domain ``opset`` runs."""
    if opset >= 22:
        return 22
    if opset >= 20:
        return 20
    if opset >= 16:
        return 16
    raise GridSampleError(
        f"opset={opset}: GridSample exists from opset 16 on; the model imports opset {opset}"
    )


def _text(value):
    return value.decode() if isinstance(value, bytes) else value


class GridSample(OpRun):
    """ONNX GridSample-16/20/22 computed by :func:`gridsample.grid_sample`."""

    op_domain = ""

    def _run(self, X, grid, mode=None, padding_mode=None, align_corners=None):
        version = gridsample_version(_default_opset(self))
        given = {a.name for a in self.onnx_node.attribute}
        mode = _text(mode if mode is not None else getattr(self, "mode", None)) or "linear"
        padding_mode = _text(padding_mode if padding_mode is not None
                             else getattr(self, "padding_mode", None)) or "zeros"
        align = align_corners if align_corners is not None else getattr(self, "align_corners", 0)
        if "mode" in given and mode not in _MODES[version]:
            raise GridSampleError(
                f"GridSample node {self.onnx_node.name!r}: mode={mode!r} is not a GridSample-"
                f"{version} mode; allowed: {', '.join(map(repr, _MODES[version]))}"
            )
        if version == 16 and X.ndim != 4:
            raise GridSampleError(
                f"GridSample node {self.onnx_node.name!r}: X has shape {X.shape}; GridSample-16 "
                f"takes 4-D X (N, C, H, W) only (opset 20 and later take any rank)"
            )
        if version < 22 and "bfloat16" in (X.dtype.name, grid.dtype.name):
            raise GridSampleError(
                f"GridSample node {self.onnx_node.name!r}: bfloat16 inputs need opset 22 or "
                f"later (this model runs GridSample-{version})"
            )
        padding = parse_onnx_padding(padding_mode, f"ONNX GridSample-{version}")
        return (grid_sample(X, grid, mode, padding, int(align)),)


class AffineGrid(OpRun):
    """ONNX AffineGrid-20 computed by :func:`gridsample.affine_grid`."""

    op_domain = ""

    def _run(self, theta, size, align_corners=None):
        opset = _default_opset(self)
        if opset < 20:
            raise GridSampleError(
                f"opset={opset}: AffineGrid exists from opset 20 on; the model imports "
                f"opset {opset}"
            )
        align = align_corners if align_corners is not None else getattr(self, "align_corners", 0)
        size = np.asarray(size)
        if size.ndim != 1 or size.dtype.kind not in "iu":  # (a float is not truncated)
            raise GridSampleTypeError(
                f"AffineGrid's size has dtype {size.dtype} and shape {size.shape}; ONNX "
                f"AffineGrid-20 takes a 1-D int64 tensor (N, C, H, W) or (N, C, D, H, W)")
        return (affine_grid(theta, size.tolist(), int(align)),)


#: The classes to pass as ``ReferenceEvaluator(..., new_ops=OPS)``.
OPS = (GridSample, AffineGrid)
