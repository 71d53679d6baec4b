"""B-spline modes with ``prefilter=True``: sampling through the spline coefficients.

``x`` holds samples; the kernels sample the B-spline whose coefficients
:func:`gridsample._prefilter.coefficients` computes from them (one array,
in float32 for float32/float16/bfloat16 ``x`` and float64 otherwise,
padded by 12 samples on constant and border axes).  :func:`coefficient_plan`
gives that array and the plan that samples it: the caller's plan with the
coefficients' shape, dtype and margins.  The forward casts its result to
``x``'s dtype as every mode does (:func:`cast_result`); the input gradient
is the prefilter's adjoint applied to the coefficients' gradient
(:func:`input_gradient`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ._dtypes import X_DTYPE_NAMES, cast_values, dtype_name, x_conversion
from ._engine import run_forward
from ._errors import GridSampleError, GridSampleTypeError, describe
from ._options import parse_align_corners, parse_flag, parse_paddings
from ._plan import ForwardPlan, as_array, plan_forward
from ._prefilter import coefficient_dtype, coefficients, coefficients_adjoint

__all__ = ["coefficient_plan", "cast_result", "input_gradient", "spline_coefficients",
           "prefiltered_sampler"]


def coefficient_plan(plan: ForwardPlan, x: np.ndarray, values: bool = True) -> tuple:
    """The spline coefficients of ``x`` and the plan that samples them.

    ``values=False``: zeros of the coefficients' layout (for what reads only
    the layout: the input gradient alone, a push).
    """
    c, pads = coefficients(x, plan.spline, plan.axis_paddings, plan.align_corners,
                           plan.channel_last, plan.fill, values=values)
    spatial = c.shape[1:-1] if plan.channel_last else c.shape[2:]
    fill = None if plan.fill is None else plan.fill.astype(c.dtype)
    cplan = dataclasses.replace(plan, in_spatial=tuple(spatial), spline_pad=pads,
                                out_dtype=c.dtype, weight_dtype=x_conversion(c.dtype).weight,
                                fill=fill, prefilter=False)
    return c, cplan


def cast_result(out: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """A result sampled from the coefficients, in ``x``'s dtype (rounded as every mode's)."""
    return out if out.dtype == dtype else cast_values(out, dtype)


def input_gradient(plan: ForwardPlan, cplan: ForwardPlan, grad_c: np.ndarray) -> np.ndarray:
    """``dL/dx`` from ``dL/dc``: the prefilter's adjoint (then the pre-padding's)."""
    grad_c = np.array(grad_c, order="C")  # the adjoint works in place
    return coefficients_adjoint(grad_c, plan.spline, plan.axis_paddings, plan.align_corners,
                                plan.channel_last, cplan.spline_pad)


def spline_coefficients(x, degree, padding_mode="mirror", *, align_corners=False,
                        channel_last=False) -> np.ndarray:
    """The B-spline coefficients of the samples ``x``: the prefilter alone.

    Sampling the result with ``prefilter=False`` gives what sampling ``x``
    with ``prefilter=True`` gives, so a user can prefilter once and sample
    many times; with ``"mirror"``, ``"symmetric"``, ``"reflection"`` and
    ``"wrap"`` exactly (to round-off).  ``"zeros"``/``"constant"`` and
    ``"border"`` filter with the mirror and half-sample rules as SciPy's
    ``spline_filter`` does (``mode="grid-constant"`` / ``"nearest"``), while
    ``prefilter=True`` first pads 12 samples of the fill or edge (SciPy's
    ``map_coordinates``): the two differ within a few samples of those edges.

    Parameters
    ----------
    x : array_like, shape (N, C, d1, ..., dr), or (N, d1, ..., dr, C) with ``channel_last``
        Samples: a real or complex number type.
    degree : int
        The spline's degree, 0 to 7 (0 and 1 need no filter: a copy).
    padding_mode : str or int, or a tuple of them (one per grid component), default "mirror"
        The boundary rule of each axis, named as :func:`grid_sample`'s paddings.
    align_corners : bool, default False
        Picks ``"reflection"``'s rule: whole-sample (True) or half-sample (False).
    channel_last : bool, default False
        Layout of ``x``.

    Returns
    -------
    ndarray, shape of ``x``
        float64 for float64, integer and bool ``x``; float32 for float32,
        float16 and bfloat16 (complex128 / complex64 for complex ``x``).

    Examples
    --------
    >>> import numpy as np, gridsample
    >>> x = np.array([[[0.0, 1.0, 0.0, 0.0]]])
    >>> c = gridsample.spline_coefficients(x, 3)
    >>> grid = np.array([[[-0.75], [-0.25]]])             # the first two samples
    >>> gridsample.grid_sample(c, grid, "bspline3", "mirror", prefilter=False).round(12) + 0.0
    array([[[0., 1.]]])
    """
    x = as_array("x", x)
    if dtype_name(x.dtype) not in X_DTYPE_NAMES:
        raise GridSampleTypeError(
            f"x has dtype {x.dtype}; spline coefficients exist for the number types "
            f"{', '.join(X_DTYPE_NAMES)}")
    channel_last = parse_flag("channel_last", channel_last)
    if x.ndim < 3:
        layout = "(N, d1, ..., dr, C)" if channel_last else "(N, C, d1, ..., dr)"
        raise GridSampleError(f"x has shape {x.shape}; it must have at least 3 axes {layout}")
    if isinstance(degree, (bool, np.bool_)) or not isinstance(degree, (int, np.integer)):
        raise GridSampleTypeError(f"degree={describe(degree)} must be an int from 0 to 7")
    if not 0 <= int(degree) <= 7:
        raise GridSampleError(f"degree={degree!r} is not a B-spline degree gridsample has; "
                              f"allowed: 0 to 7")
    paddings = parse_paddings(padding_mode, x.ndim - 2)
    if degree < 2:
        return x.astype(coefficient_dtype(x.dtype))
    return coefficients(x, int(degree), paddings, parse_align_corners(align_corners),
                        channel_last, None, prepad=False)[0]



def prefiltered_sampler(x, grid_like, mode, padding_mode, align_corners, *, channel_last=False,
                        fill_value=0):
    """``grid -> grid_sample(x, grid, mode, ...)`` that prefilters ``x`` once, for many grids.

    ``grid_like`` is a first grid (validated with ``x``); the grids passed
    later must share its batch, rank and dtype (the command line's slabs).
    A mode without a prefilter samples ``x`` itself.
    """
    plan, x, grid_like = plan_forward(x, grid_like, mode, padding_mode, align_corners,
                                      channel_last, fill_value=fill_value)
    data, cplan = coefficient_plan(plan, x) if plan.prefilter else (x, plan)

    def sample(grid):
        part = dataclasses.replace(cplan, out_spatial=tuple(grid.shape[1:-1]),
                                   grid_batch=grid.shape[0])
        return cast_result(run_forward(part, data, grid), plan.out_dtype)
    return sample
