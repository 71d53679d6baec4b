"""The backward's own derivative: second derivatives of grid sampling.

``grid_sample_backward`` maps ``(G, X, g)`` (``G = dL/dy``) to
``(dL/dX, dL/dg)``.  Differentiating a scalar ``M`` of those two results --
given ``P = dM/d(dL/dX)`` (shape of X) and ``Q = dM/d(dL/dg)`` (shape of
g) -- gives ``dM/dG``, ``dM/dX`` and ``dM/dg``, which is what autograd needs
for a backward with ``create_graph=True`` (gradient penalties, Hessian
products, eikonal losses).

For one output point with taps ``t`` (one per axis, product weights
``W_t = prod_a w_a``), write ``D_a W_t = w_a' prod_{b != a} w_b`` for the
weight's derivative along grid component ``a`` (``w'`` includes the chain
factor ``dx/dg`` and the padding's slope, as in the backward) and ``D_ab``
for the second derivatives (``w_a''`` on the diagonal, ``w_a' w_b'`` off
it).  The backward is::

    dL/dX[t, c] += G[p, c] W_t
    dL/dg[p, a]  = sum_t D_a W_t sum_c G[p, c] X[t, c]

and, with ``s_t = sum_a Q[p, a] D_a W_t`` (the derivative of ``W_t`` along
the direction ``Q[p]``)::

    dM/dG[p, c]  = sum_t W_t P[t, c]                    (forward of P)
                 + sum_t s_t X[t, c]                    (directional derivative)
    dM/dX[t, c] += s_t G[p, c]                          (its adjoint: a scatter)
    dM/dg[p, b]  = sum_t D_b W_t sum_c G[p, c] P[t, c]  (backward's dL/dg with X = P)
                 + sum_t sum_a Q[p, a] D_ab W_t sum_c G[p, c] X[t, c]

The ``P`` terms are the forward and backward operators themselves and run
on the compiled kernels.  The ``Q`` terms run here in NumPy, float64,
vectorized over points and looping over the tap combinations (the per-axis
math is :mod:`gridsample._axis_numpy`'s), the scatter summed by
``np.bincount`` in point order: deterministic, single-threaded, no compile.

Where the second derivative does not exist the rule is PyTorch's: padding
slopes (border's clip, reflection's folds) are piecewise constant, so their
kinks contribute nothing; linear weights are piecewise linear in each
coordinate (``w_a'' = 0``, the cross terms ``w_a' w_b'`` remain); nearest
has no derivative in ``g`` at all (every ``Q`` term is 0); Keys' kernel is
C^1 but not C^2 (``K''`` jumps at distance 2, where the limit from inside
the point's cell applies).  docs/semantics.md §7.6 states the rules.
"""

from __future__ import annotations

import itertools

import numpy as np

from ._api import grid_sample
from ._axis_numpy import axis_curvature, axis_grad_taps, identity_grid, unnormalize
from ._backward import GRAD_DTYPE_NAMES, grid_sample_backward, parse_output_mask, plan_backward
from ._errors import GridSampleError, GridSampleTypeError
from ._options import MODE_NEAREST
from ._plan import as_array
from ._registry import PAD_ZEROS
from ._splines import coefficient_plan, input_gradient

__all__ = ["grid_sample_double_backward"]


def _optional_like(name: str, value, like: np.ndarray, what: str):
    """``None``, or ``value`` as an array of ``like``'s shape and a gradient dtype."""
    if value is None:
        return None
    a = as_array(name, value)
    if a.dtype.name not in GRAD_DTYPE_NAMES:
        raise GridSampleTypeError(
            f"{name} has dtype {a.dtype}; allowed dtypes: {', '.join(GRAD_DTYPE_NAMES)}")
    if a.shape != like.shape:
        raise GridSampleError(f"{name} has shape {a.shape}; it must have {what}'s shape "
                              f"{like.shape}")
    return a


def _direction_terms(plan, gout, x, grid, q, want_gout, want_x, want_grid):
    """The ``Q`` terms (see the module docstring) in float64.

    Returns ``dM/dG`` as ``(N, P, C)``, ``dM/dX`` as ``(N, M, C)`` (``M``
    input elements per channel) and ``dM/dg`` as ``(N, P, r)``, each None
    where not wanted.  Coordinates are in the grid's precision, float32 at least (the
    forward's and the backward's rule, ``plan.coord_dtype``); a NaN point gets NaN in
    ``dM/dG`` and ``dM/dg`` and adds nothing to ``dM/dX``.
    """
    n, r, c = plan.batch, plan.rank, plan.channels
    p = plan.out_points
    in_spatial = plan.in_spatial
    m = int(np.prod(in_spatial))
    coord_dtype = plan.coord_dtype
    # Channel-last work arrays: a gather is then a row per point.
    xc = x if plan.channel_last else np.moveaxis(x, 1, -1)
    gc = gout if plan.channel_last else np.moveaxis(gout, 1, -1)
    xf = xc.reshape(n * m, c).astype(np.float64)
    gf = gc.reshape(n * p, c).astype(np.float64)
    coords = np.broadcast_to(grid.reshape(plan.grid_batch, p, r).astype(coord_dtype), (n, p, r))
    if plan.displacement:
        identity = identity_grid(plan.out_spatial, plan.align_corners, plan.pixels, coord_dtype)
        coords = coords + identity.reshape(1, p, r)
    qv = np.broadcast_to(q.reshape(plan.grid_batch, p, r).astype(np.float64), (n, p, r))
    # What a tap outside X reads: the fill under "constant", else 0.
    fill = np.zeros(c) if plan.fill is None else plan.fill.astype(np.float64)

    per_axis, nan, far = [], np.zeros((n, p), bool), np.zeros((n, p), bool)
    with np.errstate(invalid="ignore", over="ignore"):
        for a in range(r):
            axis = r - 1 - a  # grid[..., a] indexes spatial axis r-1-a
            size = in_spatial[axis]
            stride = int(np.prod(in_spatial[axis + 1:]))
            # B-spline coefficients pre-padded by `margin` on each side of this axis
            margin = plan.spline_pad[a] if plan.spline_pad else 0
            unpadded = size - 2 * margin
            coord = unnormalize(coords[..., a], unpadded, plan.align_corners, plan.pixels)
            coord = coord + coord.dtype.type(margin) if margin else coord
            taps, axis_nan = axis_grad_taps(coord, size, plan.mode, plan.axis_paddings[a],
                                            plan.align_corners, plan.cubic_a, plan.pixels,
                                            unpadded)
            curv = axis_curvature(coord, unpadded, plan.mode, plan.align_corners, plan.cubic_a,
                                  plan.pixels)
            per_axis.append([(idx, w, dw, ddw, ok, stride)
                             for (idx, w, dw, ok), ddw in zip(taps, curv)])
            nan |= axis_nan
            if plan.linear_paddings[a] == PAD_ZEROS:
                far |= np.isinf(coord)  # reads the fill only: no derivative terms
    dead = nan | far  # points without derivative terms
    base = (np.arange(n) * m)[:, None]

    d_gout = np.zeros((n * p, c)) if want_gout else None
    d_x = np.zeros((c, n * m)) if want_x else None
    d_grid = np.zeros((n, p, r)) if want_grid else None

    def prod_except(values, skip):
        out = np.ones((n, p))
        for b, v in enumerate(values):
            if b not in skip:
                out = out * v
        return out

    with np.errstate(invalid="ignore", over="ignore"):
        for combo in itertools.product(*per_axis):
            valid = ~nan
            flat = base
            for tap in combo:
                valid = valid & tap[4]
            for idx, _, _, _, _, stride in combo:
                flat = flat + np.where(valid, idx, 0).astype(np.intp) * stride
            flat = flat.ravel()
            w = [t[1] for t in combo]
            dw = [t[2] for t in combo]
            slope = [dw[a] * prod_except(w, (a,)) for a in range(r)]  # D_a W
            s = np.where(dead, 0.0, sum(qv[..., a] * slope[a] for a in range(r))).ravel()
            if want_gout or want_grid:
                xv = np.where(valid.reshape(-1, 1), xf[flat], fill)
            if want_gout:
                d_gout += s[:, None] * xv
            if want_x:
                s_in = np.where(valid.ravel(), s, 0.0)  # only taps inside X read X
                for ch in range(c):
                    d_x[ch] += np.bincount(flat, weights=s_in * gf[:, ch], minlength=n * m)
            if want_grid:
                gx = np.sum(gf * xv, axis=1).reshape(n, p)
                for b in range(r):
                    # sum_a Q_a D_ab W: the diagonal has w_b'', the rest w_a' w_b'
                    h = qv[..., b] * combo[b][3] * prod_except(w, (b,))
                    for a in range(r):
                        if a != b:
                            h = h + qv[..., a] * dw[a] * dw[b] * prod_except(w, (a, b))
                    d_grid[..., b] += np.where(dead, 0.0, h * gx)
    if nan.any():
        if want_gout:
            d_gout[nan.ravel()] = np.nan
        if want_grid:
            d_grid[nan] = np.nan
    return (None if d_gout is None else d_gout.reshape(n, p, c),
            None if d_x is None else d_x.T.reshape(n, m, c), d_grid)


def grid_sample_double_backward(grad_grad_x, grad_grad_grid, grad_output, x, grid,
                                mode="linear", padding_mode="zeros", align_corners=False, *,
                                channel_last=False, output_mask=(True, True, True),
                                fill_value=0, cubic_a=-0.75, grid_units="normalized",
                                displacement=False, prefilter=True):
    """Derivatives of :func:`gridsample.grid_sample_backward`'s results (double backward).

    For ``(dL/dx, dL/dgrid) = grid_sample_backward(grad_output, x, grid, ...)``
    and a scalar ``M`` of those, given ``grad_grad_x = dM/d(dL/dx)`` and
    ``grad_grad_grid = dM/d(dL/dgrid)``, returns ``dM/d(grad_output)``,
    ``dM/dx`` and ``dM/dgrid``: what a backward with ``create_graph=True``
    needs (``gridsample.torch`` registers it as the backward's derivative).

    Parameters
    ----------
    grad_grad_x : array_like or None, shape of ``x``
        ``dM/d(dL/dx)``; None means zeros.
    grad_grad_grid : array_like or None, shape of ``grid``
        ``dM/d(dL/dgrid)``; None means zeros.
    grad_output : array_like, shape (N, C, D1, ..., Dr), or (N, D1, ..., Dr, C) with
    ``channel_last``
        The backward's ``dL/dy``.
    x : array_like, shape (N, C, d1, ..., dr), or (N, d1, ..., dr, C) with ``channel_last``
    grid : array_like, shape (N, D1, ..., Dr, r) or (1, D1, ..., Dr, r)
    mode, padding_mode, align_corners, channel_last
        As in :func:`gridsample.grid_sample`.
    output_mask : triple of bool, default (True, True, True)
        Which of the three results to compute; a skipped one is None.
    fill_value, cubic_a, grid_units, displacement, prefilter
        As in :func:`gridsample.grid_sample_backward` (the fill enters the
        grid gradient, so its derivatives too).

    Returns
    -------
    grad_grad_output : ndarray, shape and dtype of ``grad_output``, or None
        ``grid_sample(grad_grad_x, grid)`` plus the derivative of the
        output along ``grad_grad_grid`` (``sum_a Q_a dy/dg_a``).
    grad_x : ndarray, shape and dtype of ``x`` (C-contiguous), or None
        The adjoint of that derivative applied to ``grad_output``; 0 where
        ``grad_grad_grid`` is None or the mode is nearest (``dL/dx`` does
        not depend on ``x``).
    grad_grid : ndarray, shape and dtype of ``grid``, or None
        ``grid_sample_backward(grad_output, grad_grad_x, grid)``'s grid
        gradient plus the Hessian of the interpolant along
        ``grad_grad_grid``; summed over the batch for a broadcast grid.

    Raises
    ------
    GridSampleError, GridSampleTypeError
        As :func:`gridsample.grid_sample_backward`; also a ``grad_grad_x``
        or ``grad_grad_grid`` of another shape than ``x``'s or ``grid``'s,
        a non-float dtype, or a bad ``output_mask``.

    Notes
    -----
    The rule at kinks (docs/semantics.md §7.6): padding slopes are piecewise
    constant (border clips and reflection folds contribute no second
    derivative, as in PyTorch); linear interpolation has no second
    derivative along one axis, only across two; nearest has none.  A NaN
    point gives NaN in ``grad_grad_output`` and ``grad_grid`` and nothing
    in ``grad_x``; a point infinitely far out gives 0.  The
    ``grad_grad_x`` terms run on the compiled forward and backward kernels,
    the ``grad_grad_grid`` terms in NumPy (float64, single-threaded):
    bit-identical at any thread count.

    Examples
    --------
    >>> import numpy as np, gridsample
    >>> x = np.array([[[0.0, 1.0, 4.0, 9.0]]])              # (N, C, W): i**2 at i = 0..3
    >>> grid = np.zeros((1, 1, 1))                          # the point 1.5 (align_corners)
    >>> _, _, h = gridsample.grid_sample_double_backward(
    ...     None, np.ones((1, 1, 1)), np.ones((1, 1, 1)), x, grid, "cubic",
    ...     align_corners=True)
    >>> h      # d2y/dg2: the cubic's curvature 3 at 1.5, times (dx/dg)**2 = 1.5**2
    array([[[6.75]]])
    """
    plan, gout, x, grid, _ = plan_backward(
        grad_output, x, grid, mode, padding_mode, align_corners, channel_last, (True, True),
        fill_value=fill_value, cubic_a=cubic_a, grid_units=grid_units, displacement=displacement,
        prefilter=prefilter)
    want_gout, want_x, want_grid = parse_output_mask(
        output_mask, ("grad_grad_output", "grad_x", "grad_grid"))
    ggx = _optional_like("grad_grad_x", grad_grad_x, x, "x")
    ggg = _optional_like("grad_grad_grid", grad_grad_grid, grid, "grid")
    # The P terms involve dL/dx, which the fill does not touch: the sampler's
    # linear part (constant axes as zeros, no fill).
    options = dict(mode=plan.mode, padding_mode=plan.linear_paddings,
                   align_corners=plan.align_corners, channel_last=plan.channel_last,
                   cubic_a=plan.cubic_a, grid_units="pixels" if plan.pixels else "normalized",
                   displacement=plan.displacement, prefilter=plan.prefilter)
    # Each result is the sum of the terms that apply (None: no term yet, 0).
    d_gout = d_x = d_grid = None
    if not plan.is_empty and ggx is not None:
        if want_gout:
            d_gout = grid_sample(ggx, grid, **options)
        if want_grid and plan.mode != MODE_NEAREST:
            d_grid = grid_sample_backward(gout, ggx, grid, output_mask=(False, True),
                                          **options)[1]
    tangent = (want_gout or want_x or want_grid) and ggg is not None
    if not plan.is_empty and tangent and plan.mode != MODE_NEAREST:
        # A prefiltered B-spline samples its coefficients c = F x: the terms in c, and
        # dM/dx = F^T dM/dc.
        cplan, xs = coefficient_plan(plan, x)[::-1] if plan.prefilter else (plan, x)
        tg, tx, tgrid = _direction_terms(cplan, gout, xs, grid, ggg, want_gout, want_x,
                                         want_grid)
        if want_gout:
            tg = tg.reshape((plan.batch,) + plan.out_spatial + (plan.channels,))
            d_gout = _add(d_gout, tg if plan.channel_last else np.moveaxis(tg, -1, 1))
        if want_x:
            tx = tx.reshape((plan.batch,) + cplan.in_spatial + (plan.channels,))
            d_x = tx if plan.channel_last else np.moveaxis(tx, -1, 1)
            if plan.prefilter:
                d_x = input_gradient(plan, cplan, d_x)
        if want_grid:
            if plan.grid_batch != plan.batch:
                tgrid = tgrid.sum(axis=0, keepdims=True)  # items added in batch order
            d_grid = _add(d_grid, tgrid.reshape(grid.shape))
    return (_result(d_gout, gout, want_gout), _result(d_x, x, want_x),
            _result(d_grid, grid, want_grid))


def _add(total, term):
    """``total + term`` in float64, ``total`` None meaning no term yet."""
    return term if total is None else np.add(total, term, dtype=np.float64)


def _result(value, like, wanted):
    """A result in ``like``'s shape and dtype (C-contiguous), zeros where no term applied."""
    if not wanted:
        return None
    if value is None:
        return np.zeros(like.shape, like.dtype)
    return np.ascontiguousarray(value, like.dtype)
