"""gridsample for ONNX: operators for ``onnx.reference`` and a conformance runner.

Importing this module imports ``onnx`` (``pip install gridsample[onnx]``);
``import gridsample`` alone never does.

>>> from gridsample.onnx import evaluator                     # doctest: +SKIP
>>> evaluator("stn.onnx").run(None, {"X": x, "theta": theta})  # doctest: +SKIP

``python -m gridsample.onnx`` runs ONNX's GridSample and AffineGrid
conformance cases through gridsample and prints a pass table.
"""

from ._conformance import CaseResult, conformance_cases, format_table, run_conformance
from ._evaluate import evaluator, load_model, run_model
from ._models import spatial_transformer_model
from ._ops import OPS, AffineGrid, GridSample, gridsample_version

__all__ = [
    "GridSample",
    "AffineGrid",
    "OPS",
    "gridsample_version",
    "evaluator",
    "run_model",
    "load_model",
    "conformance_cases",
    "run_conformance",
    "format_table",
    "CaseResult",
    "spatial_transformer_model",
]
