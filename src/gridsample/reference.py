"""A slow, plain NumPy reference of GridSample: the twin of the fast kernels.

It follows ``docs/semantics.md`` literally: coordinates, their padding and the tap
indices in the grid's precision (float32 at least), as §6.2 asks; weights,
products and sums in float64 (complex128 for complex input), vectorized over output points and
looping over the ``T**r`` tap
combinations.  It shares no arithmetic with the compiled kernels (only the
option parsing), so the tests can use it as an independent oracle for what
PyTorch and onnxruntime do not cover: r = 1 and r >= 4, 3-D cubic,
channel-last, broadcasting, mixed dtypes and the non-finite rules.

Element types (docs/semantics.md §6): numbers are summed in float64 (complex128 for
complex X), then cast once to X's dtype -- integers rounded half to even and
saturated, bool nonzero after rounding, NaN to 0 for both; float16 and
bfloat16 by NumPy's / ml_dtypes' casts.  Strings (str, bytes, object) are
gathered with nearest only, ``""`` where a point reads nothing.  (The fast
kernels sum float16/bfloat16 in float32, so the two may differ by one unit
in the last place of those types.)

``grid_sample_backward`` is the twin of :func:`gridsample.grid_sample_backward`:
the adjoint scatter (``np.add.at``) for ``dL/dx`` and the chain rule through
unnormalize, padding and the interpolation weights for ``dL/dgrid``, its
derivatives written out beside the code.

It is meant for small inputs: it materializes one gather per tap.
"""

from __future__ import annotations

import itertools

import numpy as np

from ._axis_numpy import axis_grad_taps, axis_taps, bspline, identity_grid, unnormalize
from ._dtypes import cast_values, coord_dtype
from ._options import (
    MODE_NEAREST,
    PAD_ZEROS,
    parse_align_corners,
    parse_cubic_a,
    parse_flag,
    parse_grid_units,
    parse_mode,
    parse_paddings,
)
from ._plan import _parse_fill
from ._registry import PAD_BORDER, PAD_CONSTANT, PAD_MIRROR, PAD_REFLECTION, PAD_WRAP, mode_of

__all__ = ["grid_sample", "grid_sample_backward", "grid_push", "affine_grid"]


def _extras(x, r, channels, mode, padding_mode, fill_value, cubic_a, grid_units, displacement):
    """The options beyond ONNX: per-axis paddings, fill per channel (or None), a, units, flag."""
    paddings = parse_paddings(padding_mode, r)
    fill = _parse_fill(fill_value, paddings, x, channels)
    return (paddings, fill, parse_cubic_a(cubic_a, mode), parse_grid_units(grid_units),
            parse_flag("displacement", displacement))


# --------------------------------------------------------------------------
# B-spline prefilter (docs/semantics.md §4.2), as dense linear algebra.
#
# On one axis of size S the samples are x = B c with B[i, j] = sum_k B_n(k)
# [the extension maps i + k to j]; the coefficients solve that system.
# Constant (zeros) and border axes are first padded by 12 samples of the
# fill or the edge and extended by the mirror or half-sample rule past that.

_SPLINE_PAD = 12


def _fold(i, size, rule):
    """Index ``i`` of the extended line in ``0 … size-1``."""
    if size == 1:
        return 0
    period = {"mirror": 2 * size - 2, "half": 2 * size, "wrap": size}[rule]
    m = i % period
    if rule == "mirror" and m >= size:
        return period - m
    if rule == "half" and m >= size:
        return period - 1 - m
    return m


def _spline_rule(padding, align_corners):
    """(extension rule, pre-padding, what it holds) of a padding code."""
    if padding in (PAD_ZEROS, PAD_CONSTANT):
        return "mirror", _SPLINE_PAD, "fill"
    if padding == PAD_BORDER:
        return "half", _SPLINE_PAD, "edge"
    if padding == PAD_MIRROR or (padding == PAD_REFLECTION and align_corners):
        return "mirror", 0, ""
    if padding == PAD_WRAP:
        return "wrap", 0, ""
    return "half", 0, ""


def _spline_matrix(size, degree, rule):
    """``B``: the samples of the spline with coefficients ``c`` are ``B @ c``."""
    samples = bspline(np.arange(-(degree // 2), degree // 2 + 1), degree)
    b = np.zeros((size, size))
    for i in range(size):
        for k, v in zip(range(-(degree // 2), degree // 2 + 1), samples):
            b[i, _fold(i + k, size, rule)] += v
    return b


def _spline_coefficients(x, degree, paddings, align_corners, fill):
    """Coefficients of channel-first ``x`` (N, C, *spatial) and each axis's pre-padding."""
    r = x.ndim - 2
    pads = []
    for k, padding in enumerate(paddings):
        axis = x.ndim - 1 - k  # grid[..., k] indexes spatial axis r-1-k
        rule, pad, holds = _spline_rule(padding, align_corners)
        if pad:
            widths = [(0, 0)] * x.ndim
            widths[axis] = (pad, pad)
            if holds == "edge":
                x = np.pad(x, widths, mode="edge")
            else:
                value = np.zeros(x.shape[1]) if fill is None else fill
                x = np.concatenate([np.broadcast_to(value.reshape((1, -1) + (1,) * r),
                                                    _with(x.shape, axis, pad)), x,
                                    np.broadcast_to(value.reshape((1, -1) + (1,) * r),
                                                    _with(x.shape, axis, pad))], axis=axis)
        b = _spline_matrix(x.shape[axis], degree, rule)
        x = np.moveaxis(np.linalg.solve(b, np.moveaxis(x, axis, 0).reshape(b.shape[0], -1))
                        .reshape(np.moveaxis(x, axis, 0).shape), 0, axis)
        pads.append(pad)
    return x, tuple(pads)


def _spline_adjoint(grad_c, degree, paddings, align_corners, pads):
    """``dL/dx`` from ``dL/dc`` (channel-first): solve with ``B^T``, then undo the pre-padding."""
    for k, (padding, pad) in enumerate(zip(paddings, pads)):
        axis = grad_c.ndim - 1 - k
        rule, _, holds = _spline_rule(padding, align_corners)
        moved = np.moveaxis(grad_c, axis, 0)
        b = _spline_matrix(moved.shape[0], degree, rule)
        moved = np.linalg.solve(b.T, moved.reshape(b.shape[0], -1)).reshape(moved.shape)
        if pad:
            core = moved[pad:-pad].copy()
            if holds == "edge":
                core[0] += moved[:pad].sum(axis=0)
                core[-1] += moved[-pad:].sum(axis=0)
            moved = core
        grad_c = np.moveaxis(moved, 0, axis)
    return grad_c


def _with(shape, axis, length):
    return shape[:axis] + (length,) + shape[axis + 1:]


def grid_sample(x, grid, mode="linear", padding_mode="zeros", align_corners=False, *,
                channel_last=False, fill_value=0, cubic_a=-0.75, grid_units="normalized",
                displacement=False, prefilter=True):
    """Reference GridSample; same signature and result as :func:`gridsample.grid_sample`.

    Parameters
    ----------
    x : array_like, shape (N, C, d1, ..., dr) or (N, d1, ..., dr, C)
    grid : array_like, shape (N or 1, D1, ..., Dr, r)

    Returns
    -------
    ndarray, shape (N, C, D1, ..., Dr) or (N, D1, ..., Dr, C), dtype of ``x``
    """
    mode = parse_mode(mode)
    align_corners = parse_align_corners(align_corners)
    channel_last = parse_flag("channel_last", channel_last)
    x = np.asarray(x)
    grid = np.asarray(grid)
    # docs/semantics.md §6.2: coordinates in the grid's precision, float32 at least.
    cdt = coord_dtype(grid.dtype)
    grid = grid.astype(cdt)
    if channel_last:
        x = np.moveaxis(x, -1, 1)
    n, c = x.shape[:2]
    in_spatial = x.shape[2:]
    r = len(in_spatial)
    paddings, fill, keys_a, pixels, displacement = _extras(
        x, r, c, mode, padding_mode, fill_value, cubic_a, grid_units, displacement)
    grid = np.broadcast_to(grid, (n,) + grid.shape[1:])
    out_spatial = grid.shape[1:-1]
    if displacement:
        grid = grid + identity_grid(out_spatial, align_corners, pixels, cdt)
    strings = x.dtype.kind in "USO"
    if strings and mode != MODE_NEAREST:
        raise ValueError("strings are sampled with mode='nearest' only")
    # docs/semantics.md §6: float64 sums (complex128 for complex X); strings are gathered.
    work = np.complex128 if np.iscomplexobj(x) else np.float64
    xw = x if strings else x.astype(work)
    sizes, offsets = list(in_spatial), [0] * r  # per spatial axis
    if mode_of(mode).spline and parse_flag("prefilter", prefilter):
        xw, pads = _spline_coefficients(xw, mode_of(mode).spline, paddings, align_corners, fill)
        sizes = list(xw.shape[2:])
        for k, pad in enumerate(pads):
            offsets[r - 1 - k] = pad

    with np.errstate(invalid="ignore", over="ignore"):
        per_axis = []
        nan = np.zeros((n,) + out_spatial, bool)
        for k in range(r):
            # grid[..., k] indexes spatial axis r-1-k (grid[..., 0] is the width).
            axis = r - 1 - k
            size = sizes[axis]
            coord = unnormalize(grid[..., k], in_spatial[axis], align_corners, pixels)
            coord = coord + coord.dtype.type(offsets[axis]) if offsets[axis] else coord
            if paddings[k] in (PAD_ZEROS, PAD_CONSTANT):
                # +-inf is infinitely far out: every tap outside, with the weights of a far
                # integer stand-in (fraction 0), with which they read the fill.
                coord = np.where(np.isinf(coord), -(size + 8.0), coord).astype(coord.dtype)
            taps, axis_nan = axis_taps(coord, size, mode, paddings[k], align_corners, keys_a)
            per_axis.append((axis, taps))
            nan |= axis_nan

        # A tap outside X reads the fill: "" or 0, or fill_value under "constant".
        if fill is None:
            fill = np.full(c, (b"" if x.dtype.kind == "S" else "") if strings else 0,
                           x.dtype if strings else work)
        fill = fill if strings else fill.astype(work)
        out = np.full((n,) + out_spatial + (c,), fill if strings else 0,
                      x.dtype if strings else work)
        batch_idx = np.arange(n).reshape((n,) + (1,) * len(out_spatial))
        for combo in itertools.product(*(taps for _, taps in per_axis)):
            weight = np.ones((n,) + out_spatial)
            valid = np.ones((n,) + out_spatial, bool)
            index = [None] * r
            for (axis, _), (idx, w, ok) in zip(per_axis, combo):
                weight = weight * w
                valid &= ok
                index[axis] = idx
            safe = [np.where(valid, i, 0).astype(np.intp) for i in index]
            values = xw[(batch_idx, slice(None), *safe)]  # (N, *out_spatial, C)
            if strings:  # nearest: one tap; a NaN point reads nothing
                out = np.where((valid & ~nan)[..., None], values, out)
            else:
                out += weight[..., None] * np.where(valid[..., None], values, fill)
        if not strings:
            out[nan] = complex(np.nan, np.nan) if work is np.complex128 else np.nan

    out = np.moveaxis(out, -1, 1)  # (N, C, *out_spatial)
    if channel_last:
        out = np.moveaxis(out, 1, -1)
    return cast_values(out, x.dtype)


# --------------------------------------------------------------------------
# Backward (docs/semantics.md §7).
#
# For one output point p of item n, the forward is a sum over tap
# combinations (k_1, ..., k_r), one tap per axis:
#
#     y[c, p] = sum_k  prod_a w_a,k_a(x_a)  *  X[c, i_1,k_1, ..., i_r,k_r]
#
# where x_a is the unnormalized coordinate u_a(g_a) of axis a, padded first
# for linear and nearest (x_a = pad(u_a(g_a))); cubic pads the integer tap
# indices i instead, which are piecewise constant in x_a.  With G = dL/dy:
#
#     dL/dX[c, i_1,k_1, ...] += G[c, p] * prod_a w_a,k_a                  (adjoint: scatter)
#     dL/dg_a[p] = sum_k (dw_a,k_a/dg_a) * prod_{b != a} w_b,k_b * sum_c G[c, p] X[c, i...]
#
# and dw/dg = dw/dx * dx/dg by the chain rule: the weight's slope in the
# (padded) coordinate times the axis's chain factor u'(g) * pad'(u(g)).
# A NaN point (docs/semantics.md §5) adds nothing to dL/dX and gets NaN in dL/dg (linear
# and cubic); nearest is piecewise constant, so its dL/dg is 0 everywhere.



def grid_sample_backward(grad_output, x, grid, mode="linear", padding_mode="zeros",
                         align_corners=False, *, channel_last=False, output_mask=(True, True),
                         fill_value=0, cubic_a=-0.75, grid_units="normalized",
                         displacement=False, prefilter=True):
    """Reference backward; same signature and results as :func:`gridsample.grid_sample_backward`.

    Coordinates in the grid's precision, float32 at least, as in the forward
    (docs/semantics.md §6.2, §7.4); weights, slopes and sums in float64,
    then cast once to ``x``'s and ``grid``'s dtypes.  ``dL/dx`` is scattered
    with ``np.add.at``; a grid of batch 1 gets the sum over the batch.

    Parameters
    ----------
    grad_output : array_like, shape (N, C, D1, ..., Dr) or (N, D1, ..., Dr, C)
    x : array_like, shape (N, C, d1, ..., dr) or (N, d1, ..., dr, C)
    grid : array_like, shape (N or 1, D1, ..., Dr, r)

    Returns
    -------
    grad_x : ndarray of x's shape and dtype, or None
    grad_grid : ndarray of grid's shape and dtype, or None
    """
    mode = parse_mode(mode)
    align_corners = parse_align_corners(align_corners)
    channel_last = parse_flag("channel_last", channel_last)
    want_x, want_grid = (bool(m) for m in output_mask)
    x = np.asarray(x)
    grid = np.asarray(grid)
    gout = np.asarray(grad_output)
    cdt = coord_dtype(grid.dtype)
    if not channel_last:  # work channel-last: a gather is then (N, *out_spatial, C)
        x = np.moveaxis(x, 1, -1)
        gout = np.moveaxis(gout, 1, -1)
    n, c = x.shape[0], x.shape[-1]
    in_spatial = x.shape[1:-1]
    r = len(in_spatial)
    paddings, fill, keys_a, pixels, displacement = _extras(
        x, r, c, mode, padding_mode, fill_value, cubic_a, grid_units, displacement)
    x_in = x
    sizes, offsets, pads = list(in_spatial), [0] * r, None
    if mode_of(mode).spline and parse_flag("prefilter", prefilter):
        coef, pads = _spline_coefficients(np.moveaxis(x.astype(np.float64), -1, 1),
                                          mode_of(mode).spline, paddings, align_corners,
                                          None if fill is None else fill.astype(np.float64))
        x = np.moveaxis(coef, 1, -1)
        sizes = list(x.shape[1:-1])
        for k, pad in enumerate(pads):
            offsets[r - 1 - k] = pad
    fill = np.zeros(c) if fill is None else fill.astype(np.float64)
    coords = np.broadcast_to(grid.astype(cdt), (n,) + grid.shape[1:])
    out_spatial = coords.shape[1:-1]
    if displacement:
        coords = coords + identity_grid(out_spatial, align_corners, pixels, cdt)
    xw = x.astype(np.float64)
    gw = gout.astype(np.float64)
    g_fill = np.sum(gw * fill, axis=-1)  # sum_c G[c] fill[c]: what an outside tap adds
    grad_x = np.zeros((n,) + tuple(sizes) + (c,))
    grad_grid = np.zeros((n,) + out_spatial + (r,))

    with np.errstate(invalid="ignore", over="ignore"):
        per_axis = []  # (spatial axis, taps) in grid component order
        nan = np.zeros((n,) + out_spatial, bool)
        far = np.zeros((n,) + out_spatial, bool)  # +-inf on a zeros/constant axis
        for k in range(r):
            axis = r - 1 - k  # grid[..., k] indexes spatial axis r-1-k
            size = sizes[axis]
            coord = unnormalize(coords[..., k], in_spatial[axis], align_corners, pixels)
            coord = coord + coord.dtype.type(offsets[axis]) if offsets[axis] else coord
            taps, axis_nan = axis_grad_taps(coord, size, mode, paddings[k], align_corners,
                                            keys_a, pixels, in_spatial[axis])
            per_axis.append((axis, taps))
            nan |= axis_nan
            if paddings[k] in (PAD_ZEROS, PAD_CONSTANT):
                far |= np.isinf(coord)  # reads the fill only: a flat value
        flat = nan | far

        batch_idx = np.arange(n).reshape((n,) + (1,) * len(out_spatial))
        for combo in itertools.product(*(taps for _, taps in per_axis)):
            valid = ~nan  # a NaN point adds nothing anywhere
            index = [None] * r
            for (axis, _), (idx, _, _, ok) in zip(per_axis, combo):
                valid = valid & ok
                index[axis] = idx
            at = (batch_idx, *(np.where(valid, i, 0).astype(np.intp) for i in index))
            weights = [w for _, w, _, _ in combo]
            if want_x:
                weight = np.prod(weights, axis=0)
                np.add.at(grad_x, at, np.where(valid[..., None], weight[..., None] * gw, 0.0))
            if want_grid and mode != MODE_NEAREST:
                # sum_c G[c, p] X[c, taps], shared by every axis's term; a tap
                # outside reads the fill (0 but under "constant")
                gx = np.where(valid, np.sum(gw * xw[at], axis=-1), g_fill)
                for a, (_, _, dw, _) in enumerate(combo):
                    others = np.prod([w for b, w in enumerate(weights) if b != a], axis=0)
                    grad_grid[..., a] += np.where(flat, 0.0, dw * others * gx)
        if mode != MODE_NEAREST:
            grad_grid[nan] = np.nan

    if grid.shape[0] != n:  # a grid of batch 1 was broadcast: add the items' gradients
        grad_grid = grad_grid.sum(axis=0, keepdims=True)
    if pads is not None:  # through the prefilter's adjoint
        grad_x = np.moveaxis(_spline_adjoint(np.moveaxis(grad_x, -1, 1), mode_of(mode).spline,
                                             paddings, align_corners, pads), 1, -1)
    if not channel_last:
        grad_x = np.moveaxis(grad_x, -1, 1)
    return (grad_x.astype(x_in.dtype) if want_x else None,
            grad_grid.astype(grid.dtype) if want_grid else None)


def grid_push(values, grid, shape, mode="linear", padding_mode="zeros", align_corners=False, *,
              channel_last=False, cubic_a=-0.75, grid_units="normalized", displacement=False,
              prefilter=True):
    """Reference push: the reference backward's ``dL/dx`` for an input of ``shape`` (full shape)."""
    x = np.zeros(tuple(shape), np.asarray(values).dtype)
    return grid_sample_backward(values, x, grid, mode, padding_mode, align_corners,
                                channel_last=channel_last, output_mask=(True, False),
                                cubic_a=cubic_a, grid_units=grid_units,
                                displacement=displacement, prefilter=prefilter)[0]


def affine_grid(theta, size, align_corners=False):
    """Reference AffineGrid; same signature and result as :func:`gridsample.affine_grid`.

    Builds the homogeneous base grid ``(*spatial, r + 1)`` explicitly (its
    coordinates from linspace, the ONNX specification's picture) and
    multiplies it by ``theta`` with a float64 matmul, then casts to
    ``theta``'s dtype.

    Parameters
    ----------
    theta : array_like, shape (N, 2, 3) or (N, 3, 4)
    size : sequence of int, (N, C, H, W) or (N, C, D, H, W)

    Returns
    -------
    ndarray, shape (N, H, W, 2) or (N, D, H, W, 3), dtype of ``theta``
    """
    align_corners = parse_align_corners(align_corners)
    theta = np.asarray(theta)
    spatial = tuple(int(s) for s in size[2:])
    axes = []
    for length in spatial[::-1]:  # W first: grid[..., 0] is x
        if length == 1:
            axes.append(np.zeros(1))
        elif align_corners:
            axes.append(np.linspace(-1.0, 1.0, length))
        else:
            half = 1.0 / length  # centres of `length` equal cells of [-1, 1]
            axes.append(np.linspace(-1.0 + half, 1.0 - half, length))
    mesh = np.meshgrid(*axes[::-1], indexing="ij")  # each (*spatial), D/H/W order
    base = np.stack([*mesh[::-1], np.ones(spatial)], axis=-1)  # (..., x, y[, z], 1)
    t = theta.astype(np.float64)
    out = np.einsum("...j,nkj->n...k", base, t)
    return out.astype(theta.dtype)
