"""Push (splatting) and count: the adjoint of sampling w.r.t. the input.

``grid_push(v, grid, shape)`` scatters each output point's values to the
taps it would read, with the weights it would read them with:
``<grid_push(v), x> = <v, grid_sample(x)>`` for every ``x`` of ``shape``
(the linear part of the sampler: a fill value adds a constant, not a
linear term).  It is the input gradient of :func:`gridsample.grid_sample`
computed by the same kernels, so it is deterministic (bit-identical at any
thread count) and exact to the order of its sums.  ``grid_count`` pushes
ones: how much weight each input element receives (a density of the
sampling points).
"""

from __future__ import annotations

import math

import numpy as np

from ._backward import GRAD_DTYPE_NAMES, run_backward
from ._dtypes import dtype_name
from ._errors import GridSampleError, GridSampleTypeError, describe
from ._options import is_integer, parse_flag, parse_mode
from ._plan import PLAIN_LOGIC, as_array, check_allocatable, check_shapes, plan_forward

__all__ = ["grid_push", "grid_count", "parse_push_shape", "check_push_shapes"]


def parse_push_shape(shape, values_shape, rank: int, channel_last: bool,
                     values_name: str = "values") -> tuple:
    """The pushed array's shape in its layout, from ``shape`` (full or spatial only);
    ``values_name``: how messages name the values pushed."""
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__len__"):
        raise GridSampleTypeError(
            f"shape={describe(shape)} must be a sequence of ints: the pushed array's shape "
            f"(N, C, d1, ..., dr), or its spatial shape (d1, ..., dr)")
    dims = list(shape)
    if not all(is_integer(d) for d in dims):  # (as affine_grid's size: a type error)
        raise GridSampleTypeError(f"shape={describe(shape)} holds non-integers; it must hold "
                                  f"non-negative ints")
    if not all(int(d) >= 0 for d in dims):
        raise GridSampleError(f"shape={describe(shape)} must hold non-negative ints")
    dims = [int(d) for d in dims]
    batch = values_shape[0]
    channels = values_shape[-1] if channel_last else values_shape[1]
    layout = "(N, d1, ..., dr, C)" if channel_last else "(N, C, d1, ..., dr)"
    if len(dims) == rank:
        spatial = dims
    elif len(dims) == rank + 2:
        n, c = (dims[0], dims[-1]) if channel_last else (dims[0], dims[1])
        spatial = dims[1:-1] if channel_last else dims[2:]
        if (n, c) != (batch, channels):
            raise GridSampleError(
                f"shape={tuple(dims)} has N={n}, C={c} but {values_name} has N={batch}, "
                f"C={channels} (layout {layout})")
    else:
        raise GridSampleError(
            f"shape={tuple(dims)} has {len(dims)} entries; for a grid of {rank} components it "
            f"must have {rank + 2} {layout} or {rank} (the spatial shape)")
    if channel_last:
        return (batch, *spatial, channels)
    return (batch, channels, *spatial)


def check_push_shapes(values_shape, grid_shape, out_shape, mode_code: int, channel_last: bool,
                      shown: str, logic: tuple = PLAIN_LOGIC, values_name: str = "values"
                      ) -> None:
    """grid_push's rules between ``values``, ``grid`` and the result's shape ``out_shape``
    (:func:`parse_push_shape`; ``shown``: how messages show the ``shape`` argument): the
    result against the grid as grid_sample's input (its N and C are values', so messages
    name values), and values against what sampling the result gives.  Also for tensors
    without data (gridsample.torch's shape inference; ``logic``: :func:`check_shapes`')."""
    any_of, all_of, require = logic
    spatial = out_shape[1:-1] if channel_last else out_shape[2:]
    require(any_of(all_of(*[s != 0 for s in spatial]), math.prod(values_shape) == 0), lambda: (
        f"{shown} has an empty spatial axis (the result {tuple(out_shape)}), but {values_name} "
        f"{tuple(values_shape)} is not empty: there is nowhere to push to"))
    check_shapes(out_shape, grid_shape, mode_code, channel_last, "values", logic,
                 empty_input=False)
    n, c = (out_shape[0], out_shape[-1]) if channel_last else (out_shape[0], out_shape[1])
    sampled = tuple(grid_shape[1:-1])
    wanted = (n, *sampled, c) if channel_last else (n, c, *sampled)
    require(all_of(*[a == b for a, b in zip(values_shape, wanted)]), lambda: (
        f"values has shape {tuple(values_shape)}; for grid {tuple(grid_shape)} it must be "
        f"{wanted}"))


def grid_push(values, grid, shape, mode="linear", padding_mode="zeros", align_corners=False, *,
              channel_last=False, cubic_a=-0.75, grid_units="normalized", displacement=False,
              prefilter=True):
    """Push ``values`` to the positions in ``grid``: the adjoint of :func:`grid_sample` in ``x``.

    Parameters
    ----------
    values : array_like, shape (N, C, D1, ..., Dr), or (N, D1, ..., Dr, C) with ``channel_last``
        What each grid point carries; float16, bfloat16, float32 or float64.
    grid : array_like, shape (N, D1, ..., Dr, r) or (1, D1, ..., Dr, r)
        Positions, as for :func:`grid_sample` (a batch of 1 serves every item).
    shape : sequence of int
        The result's shape, ``(N, C, d1, ..., dr)`` (or ``(N, d1, ..., dr, C)``
        with ``channel_last``), or its spatial part ``(d1, ..., dr)``.
    mode, padding_mode, align_corners, channel_last, cubic_a, grid_units, displacement, prefilter
        As in :func:`grid_sample` (a B-spline mode with ``prefilter`` pushes
        through the prefilter's adjoint); a tap that sampling would pad onto an
        element (border, reflection, mirror, symmetric, wrap) pushes onto
        that element; a tap outside under zeros or constant padding is lost.

    Returns
    -------
    ndarray of ``shape``, dtype of ``values`` (summed in float64 when
    ``values`` or ``grid`` is float64, else float32; positions in the grid's precision,
    float32 at least, as :func:`grid_sample` forms them)

    Raises
    ------
    GridSampleError, GridSampleTypeError
        As :func:`grid_sample`; also for a bad ``shape`` or ``values`` dtype.

    Notes
    -----
    ``sum(grid_push(v, g, s) * x) == sum(v * grid_sample(x, g))`` for every
    ``x`` of shape ``s``, to round-off (docs/semantics.md §7.4).  A NaN position pushes
    nothing.

    Examples
    --------
    >>> import numpy as np, gridsample
    >>> grid = np.array([[[[0.25, 0.0]]]])          # between columns 1 and 2 of a 1x4 row
    >>> gridsample.grid_push(np.ones((1, 1, 1, 1)), grid, (1, 4), align_corners=True)
    array([[[[0.   , 0.125, 0.875, 0.   ]]]])
    """
    return _push(values, grid, shape, mode, padding_mode, align_corners, channel_last, cubic_a,
                 grid_units, displacement, prefilter, "values")


def _push(values, grid, shape, mode, padding_mode, align_corners, channel_last, cubic_a,
          grid_units, displacement, prefilter, values_name):
    """:func:`grid_push`, its messages naming the values pushed ``values_name`` where they
    speak of their shape (:func:`grid_count` pushes ones it made itself)."""
    v = as_array("values", values)
    if dtype_name(v.dtype) not in GRAD_DTYPE_NAMES:
        raise GridSampleTypeError(
            f"values has dtype {v.dtype}; allowed dtypes: {', '.join(GRAD_DTYPE_NAMES)}")
    g = as_array("grid", grid)
    if v.ndim < 3 or g.ndim != v.ndim:
        raise GridSampleError(
            f"values has shape {v.shape} and grid {g.shape}; values must be (N, C, D1, ..., Dr) "
            f"and grid (N, D1, ..., Dr, r) with r >= 1")
    channel_last = parse_flag("channel_last", channel_last)
    out_shape = parse_push_shape(shape, v.shape, v.ndim - 2, channel_last, values_name)
    wide = np.float64 in (v.dtype, g.dtype)
    shown = f"shape={describe(shape)}"
    check_allocatable(out_shape, 8 if wide else 4, f"{shown} asks for a result that")
    check_push_shapes(v.shape, g.shape, out_shape, parse_mode(mode), channel_last, shown,
                      values_name=values_name)
    # The input is never read, only its layout: zeros in the compute dtype,
    # so the backward takes it as it is (its pages are never touched).
    x = np.zeros(out_shape, np.float64 if wide else np.float32)
    plan, x, g = plan_forward(x, g, mode, padding_mode, align_corners, channel_last,
                              cubic_a=cubic_a, grid_units=grid_units, displacement=displacement,
                              prefilter=prefilter, x_name="values", shapes_checked=True)
    return run_backward(plan, v, x, g, True, False)[0].astype(v.dtype, copy=False)


def grid_count(grid, shape, mode="linear", padding_mode="zeros", align_corners=False, *,
               channel_last=False, cubic_a=-0.75, grid_units="normalized", displacement=False,
              prefilter=True):
    """The push of ones: how much weight each element of an input of ``shape`` receives.

    Parameters
    ----------
    grid : array_like, shape (N, D1, ..., Dr, r)
        Positions, as for :func:`grid_sample`.
    shape : sequence of int
        The spatial shape ``(d1, ..., dr)``, or a full shape with one channel.
    mode, padding_mode, align_corners, channel_last, cubic_a, grid_units, displacement, prefilter
        As in :func:`grid_push`.

    Returns
    -------
    ndarray, shape (N, 1, d1, ..., dr), or (N, d1, ..., dr, 1) with ``channel_last``
        In the grid's dtype (float32 for float16/bfloat16 grids).

    Examples
    --------
    >>> import numpy as np, gridsample
    >>> grid = np.array([[[[0.25, 0.0], [-1.0, 0.0]]]])  # at column 1.875, and at column 0
    >>> gridsample.grid_count(grid, (1, 4), align_corners=True)
    array([[[[1.   , 0.125, 0.875, 0.   ]]]])
    """
    g = as_array("grid", grid)
    if g.ndim < 3:
        raise GridSampleError(f"grid has shape {g.shape}; it must be (N, D1, ..., Dr, r)")
    dtype = g.dtype if dtype_name(g.dtype) in ("float32", "float64") else np.dtype(np.float32)
    ones_shape = (g.shape[0], *g.shape[1:-1], 1) if channel_last else (g.shape[0], 1,
                                                                        *g.shape[1:-1])
    ones = np.broadcast_to(np.ones((), dtype), ones_shape)
    return _push(ones, g, shape, mode, padding_mode, align_corners, channel_last, cubic_a,
                 grid_units, displacement, prefilter, "the count (the grid's batch, one channel)")
