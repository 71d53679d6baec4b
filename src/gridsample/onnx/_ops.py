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
the next runtime.  Attributes are read as ONNX Runtime reads them: ``mode`` and
``padding_mode`` exactly (no case folding, no integer codes, no empty string),
``align_corners`` the integer 0 or 1.

``onnx.reference`` re-raises any ``TypeError`` an operator raises as its own
``TypeError`` ("Issues with types ..."); gridsample's
:class:`~gridsample.GridSampleTypeError` (a wrong dtype of ``X``, ``grid`` or
``theta``) is then that error's ``__cause__``.
"""

from __future__ import annotations

import numpy as np
from onnx.reference.op_run import OpRun

from .._affine import affine_grid
from .._api import grid_sample
from .._errors import GridSampleError, GridSampleTypeError
from .._options import is_integer
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


#: GridSample's padding names (every version).
_PADDINGS = ("zeros", "border", "reflection")


def _node(op: OpRun) -> str:
    return f"{op.onnx_node.op_type} node {op.onnx_node.name!r}"


def _attribute(op: OpRun, name: str, value):
    """The attribute ``name`` (``value``: what ``_run`` received, or None) and whether the
    node gives it; else the node's version's default applies (``onnx.reference`` passes the
    newest schema's default, ``mode="linear"``, to a GridSample-16 node too)."""
    given = any(a.name == name for a in op.onnx_node.attribute)
    return (value if value is not None else getattr(op, name, None)), given


def _choice(op: OpRun, name: str, value, allowed: tuple, what: str) -> str:
    """A string attribute, exactly one of ``allowed`` (as ONNX Runtime takes them: no case
    or space folding, no integer codes)."""
    text = value.decode() if isinstance(value, bytes) else value
    if not isinstance(text, str) or text not in allowed:
        raise GridSampleError(f"{_node(op)}: {name}={value!r} is not {what}; allowed: "
                              f"{', '.join(map(repr, allowed))}")
    return text


def _flag(op: OpRun, value) -> int:
    """``align_corners``: the integer 0 or 1."""
    if not (is_integer(value) and value in (0, 1)):
        raise GridSampleError(f"{_node(op)}: align_corners={value!r} is not allowed; it is "
                              f"an integer attribute, 0 or 1")
    return int(value)


class GridSample(OpRun):
    """ONNX GridSample-16/20/22 computed by :func:`gridsample.grid_sample`."""

    op_domain = ""

    def _run(self, X, grid, mode=None, padding_mode=None, align_corners=None):
        version = gridsample_version(_default_opset(self))
        value, given = _attribute(self, "mode", mode)
        mode = (_choice(self, "mode", value, _MODES[version], f"a GridSample-{version} mode")
                if given else "linear")
        value, given = _attribute(self, "padding_mode", padding_mode)
        padding = (_choice(self, "padding_mode", value, _PADDINGS,
                           f"defined by ONNX GridSample-{version}") if given else "zeros")
        value, given = _attribute(self, "align_corners", align_corners)
        align = _flag(self, value) if given else 0
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
        return (grid_sample(X, grid, mode, padding, align),)


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
        value, given = _attribute(self, "align_corners", align_corners)
        align = _flag(self, value) if given else 0
        size = np.asarray(size)
        if size.ndim != 1 or size.dtype.kind not in "iu":  # (a float is not truncated)
            raise GridSampleTypeError(
                f"AffineGrid's size has dtype {size.dtype} and shape {size.shape}; ONNX "
                f"AffineGrid-20 takes a 1-D int64 tensor (N, C, H, W) or (N, C, D, H, W)")
        return (affine_grid(theta, size.tolist(), align),)


#: The classes to pass as ``ReferenceEvaluator(..., new_ops=OPS)``.
OPS = (GridSample, AffineGrid)
