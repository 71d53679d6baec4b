"""Run ONNX models with onnx's ReferenceEvaluator and gridsample's operators."""

from __future__ import annotations

import os

import onnx
from onnx.reference import ReferenceEvaluator

from .._errors import GridSampleTypeError, describe
from ._ops import OPS

__all__ = ["evaluator", "run_model", "load_model"]


def load_model(model) -> onnx.ModelProto:
    """A ModelProto from a ModelProto, a file path or serialized bytes."""
    if isinstance(model, onnx.ModelProto):
        return model
    if isinstance(model, (str, os.PathLike)):
        return onnx.load(os.fspath(model))
    if isinstance(model, (bytes, bytearray)):
        return onnx.load_from_string(bytes(model))
    raise GridSampleTypeError(
        f"model={describe(model)} has type {type(model).__name__}; it must be an "
        f"onnx.ModelProto, a path to a .onnx file or serialized model bytes"
    )


def evaluator(model, *, new_ops=(), **kwargs) -> ReferenceEvaluator:
    """A ``ReferenceEvaluator`` whose GridSample and AffineGrid nodes run on gridsample.

    Parameters
    ----------
    model : onnx.ModelProto, str, os.PathLike or bytes
    new_ops : sequence of OpRun classes, optional
        Further operator classes; gridsample's come first.
    **kwargs
        Passed on to ``ReferenceEvaluator`` (``verbose``, ``functions``, ...).
    """
    return ReferenceEvaluator(load_model(model), new_ops=[*OPS, *new_ops], **kwargs)


def run_model(model, feeds: dict, output_names=None) -> list:
    """Evaluate ``model`` on ``feeds`` ({input name: array}) in one call.

    Returns
    -------
    list of ndarray
        The outputs named by ``output_names`` (all graph outputs by default).
    """
    return evaluator(model).run(output_names, feeds)
