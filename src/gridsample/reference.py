"""A slow, plain NumPy reference of GridSample: the twin of the fast kernels.

It follows ``DESIGN.md`` §3 literally: coordinates, their padding and the tap
indices in the grid's precision (float32 at least), as rule 5 asks; weights,
products and sums in float64 (complex128 for complex input), vectorized over output points and looping over the ``T**r`` tap
combinations.  It shares no arithmetic with the compiled kernels (only the
option parsing), so the tests can use it as an independent oracle for what
PyTorch and onnxruntime do not cover: r = 1 and r >= 4, 3-D cubic,
channel-last, broadcasting, mixed dtypes and the non-finite rules.

Element types (rules 5-7): numbers are summed in float64 (complex128 for
complex X), then cast once to X's dtype -- integers rounded half to even and
saturated, bool nonzero after rounding, NaN to 0 for both; float16 and
bfloat16 by NumPy's / ml_dtypes' casts.  Strings (str, bytes, object) are
gathered with nearest only, ``""`` where a point reads nothing.  (The fast
kernels sum float16/bfloat16 in float32, so the two may differ by one unit
in the last place of those types.)

It is meant for small inputs: it materializes one gather per tap.
"""

from __future__ import annotations

import itertools

import numpy as np

from ._options import (
    MODE_CUBIC,
    MODE_NEAREST,
    PAD_BORDER,
    PAD_REFLECTION,
    parse_align_corners,
    parse_flag,
    parse_mode,
    parse_padding,
)

__all__ = ["grid_sample", "affine_grid"]

_A = -0.75  # Keys' cubic convolution parameter


def _unnormalize(g, size, align_corners):
    # The spec's formulas, as the spec writes them, in g's dtype (NumPy keeps
    # float32 arithmetic float32 when the other operands are Python ints).
    # +-inf is infinitely far out on every axis, also where S - 1 = 0.
    if align_corners:
        x = (g + 1) / 2 * (size - 1)
    else:
        x = ((g + 1) * size - 1) / 2
    return np.where(np.isinf(g), g, x)


def _reflect(x, size, align_corners):
    """Reflect over [0, S-1] (align_corners) or [-0.5, S-0.5], repeatedly; then clip.

    Repeated reflection folds the line with period 2 * span: the distance
    from ``lo`` modulo ``2 span`` (``fmod`` is exact, so far points such as
    1e30 land where exact arithmetic puts them), mirrored when past ``span``.
    """
    lo, hi = (0.0, size - 1.0) if align_corners else (-0.5, size - 0.5)
    span = hi - lo
    if span <= 0:  # an axis of size 1 with align_corners: everything maps to 0
        return np.where(np.isnan(x), x, np.zeros_like(x))
    phase = np.fmod(np.abs(x - lo), 2 * span)
    y = np.where(phase > span, 2 * span - phase, phase) + lo
    return np.clip(y, 0, size - 1)


def _keys(t):
    """Keys' cubic convolution kernel W(t), A = -0.75."""
    t = np.abs(t)
    near = ((_A + 2) * t - (_A + 3)) * t * t + 1
    far = ((_A * t - 5 * _A) * t + 8 * _A) * t - 4 * _A
    return np.where(t <= 1, near, np.where(t < 2, far, 0.0))


def _axis_taps(x, size, mode, padding, align_corners):
    """Taps of one axis: list of (float index, weight, valid) and the NaN mask.

    ``x`` is the unnormalized coordinate, in the coordinate dtype; padding and
    tap indices stay in that dtype (NumPy keeps float32 float32 when the
    other operands are Python scalars), weights are float64.  Indices stay float
    until the caller masks them, so huge and infinite values are harmless.
    """
    if mode == MODE_CUBIC:
        nan = np.isnan(x) | (np.isinf(x) & (padding == PAD_REFLECTION))
        if padding == PAD_BORDER:
            # +-inf: every tap clips to the edge; a far finite stand-in with
            # a zero fraction gives the same taps and weights (0, 1, 0, 0).
            x = np.where(np.isinf(x), np.copysign(size + 8.0, x), x)
        f = np.floor(x)
        frac = (x - f).astype(np.float64)  # exact; weights in float64 from here
        taps = []
        for k in (-1, 0, 1, 2):
            idx = f + k
            w = _keys(frac - k)  # not x - idx: for huge x, f + k rounds back to f
            if padding == PAD_BORDER:
                idx = np.clip(idx, 0, size - 1)
            elif padding == PAD_REFLECTION:
                idx = _reflect(np.where(np.isfinite(idx), idx, 0.0), size, align_corners)
            valid = (idx >= 0) & (idx <= size - 1)
            taps.append((idx, w, valid))
        return taps, nan

    if padding == PAD_BORDER:
        x = np.clip(x, 0, size - 1)
    elif padding == PAD_REFLECTION:
        x = np.where(np.isinf(x), np.nan, x)
        x = _reflect(x, size, align_corners)
    nan = np.isnan(x)
    if mode == MODE_NEAREST:
        idx = np.rint(x)  # round half to even
        return [(idx, np.ones_like(x), (idx >= 0) & (idx <= size - 1))], nan
    f = np.floor(x)
    d = (x - f).astype(np.float64)  # exact; weights in float64 from here
    return [
        (f, 1 - d, (f >= 0) & (f <= size - 1)),
        (f + 1, d, (f + 1 >= 0) & (f + 1 <= size - 1)),
    ], nan


def grid_sample(x, grid, mode="linear", padding_mode="zeros", align_corners=False, *,
                channel_last=False):
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
    padding = parse_padding(padding_mode)
    align_corners = parse_align_corners(align_corners)
    channel_last = parse_flag("channel_last", channel_last)
    x = np.asarray(x)
    grid = np.asarray(grid)
    # Rule 5: coordinates are computed in the grid's precision, float32 at least.
    coord_dtype = np.float64 if grid.dtype == np.float64 else np.float32
    grid = grid.astype(coord_dtype)
    if channel_last:
        x = np.moveaxis(x, -1, 1)
    n, c = x.shape[:2]
    in_spatial = x.shape[2:]
    r = len(in_spatial)
    grid = np.broadcast_to(grid, (n,) + grid.shape[1:])
    out_spatial = grid.shape[1:-1]
    strings = x.dtype.kind in "USO"
    if strings and mode != MODE_NEAREST:
        raise ValueError("strings are sampled with mode='nearest' only")
    # Rule 5/6: float64 sums (complex128 for complex X); strings are gathered.
    work = np.complex128 if np.iscomplexobj(x) else np.float64
    xw = x if strings else x.astype(work)

    with np.errstate(invalid="ignore", over="ignore"):
        per_axis = []
        nan = np.zeros((n,) + out_spatial, bool)
        for a in range(r):
            # grid[..., a] indexes spatial axis r-1-a (grid[..., 0] is the width).
            axis = r - 1 - a
            size = in_spatial[axis]
            coord = _unnormalize(grid[..., a], size, align_corners)
            taps, axis_nan = _axis_taps(coord, size, mode, padding, align_corners)
            per_axis.append((axis, taps))
            nan |= axis_nan

        fill = (b"" if x.dtype.kind == "S" else "") if strings else 0
        out = np.full((n,) + out_spatial + (c,), fill, x.dtype if strings else work)
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
                out += np.where(valid[..., None], weight[..., None] * values, 0)
        if not strings:
            out[nan] = complex(np.nan, np.nan) if work is np.complex128 else np.nan

    out = np.moveaxis(out, -1, 1)  # (N, C, *out_spatial)
    if channel_last:
        out = np.moveaxis(out, 1, -1)
    return _cast(out, x.dtype)


def _cast(values, dtype):
    """float64 / complex128 sums to X's dtype (rule 6).

    Integers: round half to even, saturate to the range, NaN -> 0.  bool:
    nonzero after rounding, NaN -> False.  Floats and complex: one rounding
    (float16/bfloat16 through NumPy / ml_dtypes casts).
    """
    if dtype.kind in "USO":
        return values
    if dtype.kind == "b":
        v = np.rint(values)
        return (v != 0) & ~np.isnan(v)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        v = np.rint(values)
        out = np.zeros(v.shape, dtype)
        high = v >= float(info.max)
        low = v <= float(info.min)
        mid = ~(high | low | np.isnan(v))
        out[high] = info.max
        out[low] = info.min
        out[mid] = v[mid].astype(dtype)
        return out
    return values.astype(dtype)


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
