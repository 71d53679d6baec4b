"""Run ONNX's conformance node cases for GridSample and AffineGrid through gridsample.

onnx >= 1.23 no longer ships the data folders of its node tests; the cases
are built in memory by ``onnx.backend.test.case.node.collect_testcases()``
and every single-node GridSample or AffineGrid case is kept (the
``*_expanded`` AffineGrid cases test ONNX's function body, not the
operator).  Outputs are compared with the case's own tolerances (rtol 1e-3,
atol 1e-7), as ONNX's backend runner does.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from onnx.reference import ReferenceEvaluator

from ._evaluate import evaluator

__all__ = ["CaseResult", "conformance_cases", "run_conformance", "format_table"]

_OPS = ("GridSample", "AffineGrid")


@dataclass(frozen=True)
class CaseResult:
    """The outcome of one conformance case."""

    name: str
    op: str
    opset: int
    passed: bool
    max_error: float
    reference_alone: bool | None  # onnx.reference without gridsample's ops
    message: str = ""


def conformance_cases() -> list:
    """ONNX's single-node conformance cases of GridSample and AffineGrid."""
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases()
    return [c for c in cases
            if len(c.model.graph.node) == 1 and c.model.graph.node[0].op_type in _OPS]


def _close(got, want, case) -> tuple:
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        return False, float("inf")
    err = float(np.max(np.abs(got.astype(np.float64) - want), initial=0.0))
    ok = np.allclose(got, want, rtol=case.rtol, atol=case.atol, equal_nan=True)
    return bool(ok), err


def _run_case(case, session_factory) -> tuple:
    sess = session_factory(case.model)
    names = [i.name for i in case.model.graph.input]
    passed, worst = True, 0.0
    for inputs, outputs in case.data_sets:
        got = sess.run(None, dict(zip(names, inputs)))
        for g, w in zip(got, outputs):
            ok, err = _close(g, w, case)
            passed &= ok
            worst = max(worst, err)
    return passed, worst


def run_conformance(*, compare_reference: bool = True) -> list:
    """Run every case through ``ReferenceEvaluator`` with gridsample's ops.

    Parameters
    ----------
    compare_reference : bool, default True
        Also run each case with the evaluator's own operators, for the
        ``reference alone`` column.

    Returns
    -------
    list of CaseResult
    """
    results = []
    for case in conformance_cases():
        node = case.model.graph.node[0]
        opset = max(o.version for o in case.model.opset_import if o.domain in ("", "ai.onnx"))
        try:
            passed, err = _run_case(case, evaluator)
            message = ""
        except Exception as exc:  # a failing case is reported, not raised
            passed, err, message = False, float("nan"), f"{type(exc).__name__}: {exc}"
        alone = None
        if compare_reference:
            try:
                alone = _run_case(case, ReferenceEvaluator)[0]
            except Exception:
                alone = False
        results.append(CaseResult(case.name, node.op_type, opset, passed, err, alone, message))
    return results


def format_table(results) -> str:
    """A Markdown table of the results and a one-line summary."""
    lines = ["| case | op | opset | gridsample | max abs error | onnx.reference alone |",
             "|---|---|---|---|---|---|"]
    for r in results:
        alone = "n/a" if r.reference_alone is None else ("pass" if r.reference_alone else "FAIL")
        verdict = "pass" if r.passed else f"FAIL {r.message}".strip()
        lines.append(f"| {r.name} | {r.op} | {r.opset} | {verdict} | {r.max_error:.2e} | {alone} |")
    passed = sum(r.passed for r in results)
    lines.append("")
    lines.append(f"{passed}/{len(results)} conformance cases pass with gridsample's operators.")
    return "\n".join(lines)
