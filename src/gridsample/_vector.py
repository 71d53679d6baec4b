"""Branch-free 2-D linear and nearest kernels that LLVM turns into SIMD code.

The general kernels (:mod:`gridsample._kernels`) plan a block of points as a
*list* of the taps inside ``X`` (a per-point count, taps dropped at the
edges), which needs branches per point; LLVM keeps such loops scalar.  Here a
block's plan is a fixed ``K x block`` table, structure of arrays:

``off[k, j]``
    int32 flat offset of tap ``k`` of point ``j`` (relative to the batch item
    and channel), or ``-1`` when the tap lies outside ``X``;
``wts[k, j]``
    its weight (NaN for a NaN point, so the point's sum is NaN).

Every point is planned with the same instructions (selects instead of
branches), so the planner loop vectorizes (measured 7.7 -> 1.0 ms for 1024²
points on one core), and the sweep reads every tap with a gather::

    v_k = x[max(off_k, 0)]            always a valid index
    v_k = v_k if off_k >= 0 else 0    a tap outside reads 0 (never 0 * inf)
    y   = w_0 v_0 + w_1 v_1 + w_2 v_2 + w_3 v_3      (left to right)

which is PyTorch's own formula for its vectorized CPU kernel (masked gathers
give 0 outside), so results agree with the general kernels except that a sum
of zeros may carry the other sign.  Planner and sweep are separate compiled
functions whose array arguments are ``noalias`` (:func:`gridsample._jit.function`):
without that LLVM cannot prove a store to the output leaves the plan alone and
vectorizes nothing; inside a ``prange`` body it cannot see it either.

Offsets are int32 so that a gather takes 16 of them (AVX-512); the engine uses
these kernels only when every offset of a batch item and channel, and every
intermediate ``iy*stride_y + ix*stride_x`` with ``ix, iy`` in ``[-3, S+2]``,
fits (:func:`fits_int32`).

The scalar math repeats :mod:`gridsample._taps` (``linear_axis``,
``nearest_axis``, ``pad_continuous``) with selects; the tests compare both
kernel families on NaN, ±inf, huge and edge coordinates under every padding.
"""

from __future__ import annotations

import math

import numpy as np

from ._convert import load, store
from ._jit import helper, skeleton
from ._options import PAD_BORDER, PAD_REFLECTION, PAD_ZEROS
from ._taps import (
    AXIS_HIGH,
    AXIS_MUL,
    AXIS_ONE,
    AXIS_REFLECT_LOW,
    AXIS_REFLECT_SPAN,
    AXIS_SCALE,
    AXIS_SHIFT,
    AXIS_SUB,
    axis_row,
    cubic_row,
)

__all__ = ["fits_int32", "run_blocks"]

_INT32_MAX = 2 ** 31 - 1


def fits_int32(sizes, strides) -> bool:
    """Whether the vector planner's int32 offsets are exact for these axes.

    Tap indices are formed in ``[-6, S+2]`` (cubic's far taps, linear's
    ``[-3, S+1]``) before the range checks drop the outside ones, so the bound
    is taken over that range.
    """
    return sum((int(s) + 6) * abs(int(st)) for s, st in zip(sizes, strides)) <= _INT32_MAX


@helper
def _unnormalize(g, ax):
    """docs/semantics.md §2 as ``_taps.unnormalize``, with a select: ``±inf`` keeps its value."""
    u = ((g + ax[AXIS_SHIFT]) * ax[AXIS_MUL] - ax[AXIS_SUB]) * ax[AXIS_SCALE]
    return g if math.isinf(g) else u


@skeleton
def _reflect(u, ax, zero):
    """``_taps.reflect_clip`` for a finite ``u``, with selects (``fmod`` is exact)."""
    low, span = ax[AXIS_REFLECT_LOW], ax[AXIS_REFLECT_SPAN]
    return unfold(np.fmod(abs(u - low), span + span), ax, zero)


@skeleton
def unfold(m, ax, zero):
    """The reflected coordinate of a point ``m = |u - low| mod 2 span`` along the fold,
    clipped to ``[0, S-1]`` (0 on an axis of size 1 with align_corners)."""
    low, span, high = ax[AXIS_REFLECT_LOW], ax[AXIS_REFLECT_SPAN], ax[AXIS_HIGH]
    m = span + span - m if m > span else m
    y = m + low
    y = zero if y < zero else y
    y = high if y > high else y
    return zero if span <= zero else y


@helper
def _reflect_near(t, low, d1, r, period, span, high, zero):
    """One tap of :func:`_reflect_taps`: fold ``r + (t - low - d1)`` (``< P + 4`` in size,
    ``P >= 2``: two exact subtractions reduce it below ``P``), mirror, clip."""
    m = abs(r + ((t - low) - d1))
    m = m - period if m >= period else m
    m = m - period if m >= period else m
    m = period - m if m > span else m
    y = m + low
    y = zero if y < zero else y
    return high if y > high else y


@skeleton
def _reflect_taps(t0, t1, t2, t3, ax, zero):
    """:func:`_reflect` of the four cubic taps with one ``fmod`` instead of four.

    Reflection folds ``d = t - low`` with period ``P = 2 span``, and the fold
    depends on ``d`` only modulo ``P`` and up to its sign.  With ``d1 = t1 - low``
    and ``r = fmod(d1, P)`` (exact), each tap's ``d_k = t_k - low`` equals
    ``d1 + e_k`` with ``e_k = d_k - d1`` exact (a small integer: -1 ... 2, or
    what float rounding made of ``f + k`` for huge ``f``, at most 4 in size), so
    ``d_k`` folds like the small, exact ``r + e_k``: the same bits as
    :func:`_reflect` on each tap, for a quarter of the ``fmod`` calls (libm
    calls, which do not vectorize).
    """
    low, span, high = ax[AXIS_REFLECT_LOW], ax[AXIS_REFLECT_SPAN], ax[AXIS_HIGH]
    period = span + span
    d1 = t1 - low
    r = np.fmod(d1, period)  # NaN for span 0, replaced below
    y0 = _reflect_near(t0, low, d1, r, period, span, high, zero)
    y1 = _reflect_near(t1, low, d1, r, period, span, high, zero)
    y2 = _reflect_near(t2, low, d1, r, period, span, high, zero)
    y3 = _reflect_near(t3, low, d1, r, period, span, high, zero)
    if span <= zero:  # an axis of size 1 with align_corners: everything maps to 0
        return zero, zero, zero, zero
    return y0, y1, y2, y3


@helper
def _clip(u, high, zero):
    """Clip to ``[0, high]``; NaN stays NaN (the comparisons are false)."""
    u = zero if zero > u else u
    return high if high < u else u


@skeleton
def _coordinate(g, pad, ax):
    """Unnormalized, padded coordinate of ``g`` and whether it is a NaN point.

    A NaN point (docs/semantics.md §5): a NaN coordinate, or ``±inf`` under reflection (no
    image).  Its coordinate is returned as 0, so that every later step sees a
    finite number.  Border clips (``±inf`` to the edges); reflection folds.
    """
    u = _unnormalize(g, ax)
    high = ax[AXIS_HIGH]
    zero = high - high
    nan = u != u
    if pad == PAD_BORDER:
        u = _clip(u, high, zero)
    elif pad == PAD_REFLECTION:
        nan = nan | math.isinf(u)
        u = _reflect(zero if nan else u, ax, zero)
    return (zero if nan else u), nan


@skeleton
def linear_2d_taps(g0, g1, pad, ax0, ax1, s0, s1, st0, st1):
    """One point's 2-D linear taps: four int32 offsets (``-1`` outside) and the fractions
    ``dx, dy`` (NaN for a NaN point), in the coordinate dtype."""
    # Constants in the coordinate dtype: a Python int literal would turn
    # float32 math into float64 (half the vector width).
    zero, c1 = ax0[AXIS_HIGH] - ax0[AXIS_HIGH], ax0[AXIS_ONE]
    c2 = c1 + c1
    lo, far = zero - c2, zero - c2 - c1  # far: a coordinate with no tap inside
    cnan = zero / zero  # NaN in the coordinate dtype (error_model="numpy")
    x, nanx = _coordinate(g0, pad, ax0)
    y, nany = _coordinate(g1, pad, ax1)
    # Outside (-2, S+1) both taps are outside: move such x (and NaN) to -3
    # before the cast, which is then always defined.
    x = x if (x > lo) & (x < ax0[AXIS_HIGH] + c2) else far
    y = y if (y > lo) & (y < ax1[AXIS_HIGH] + c2) else far
    fx, fy = np.floor(x), np.floor(y)
    nan = nanx | nany  # a NaN point: every weight NaN
    dx = cnan if nan else x - fx
    dy = cnan if nan else y - fy
    ix, iy = np.int32(fx), np.int32(fy)
    x0 = (ix >= 0) & (ix < s0)
    x1 = (ix >= -1) & (ix < s0 - 1)
    y0 = (iy >= 0) & (iy < s1)
    y1 = (iy >= -1) & (iy < s1 - 1)
    # Numba forms int32 sums and products in int64; the explicit int32
    # keeps the vector lanes 32 bits wide (the values fit: fits_int32).
    b = np.int32(iy * st1 + ix * st0)
    return (b if x0 & y0 else np.int32(-1), np.int32(b + st0) if x1 & y0 else np.int32(-1),
            np.int32(b + st1) if x0 & y1 else np.int32(-1),
            np.int32(b + st1 + st0) if x1 & y1 else np.int32(-1), dx, dy)


@skeleton
def plan_linear_2d(grid, nb, pad, axc, kc, sizes, strides, one, nanw, off, wts):
    """Plan ``nb`` points of a 2-D linear block.

    ``grid`` is the block's coordinates flat, shape (2 nb,): a 1-D array
    indexed ``2j``, ``2j+1`` vectorizes; ``grid[j, 0]`` on a 2-D view did not
    (measured 1.7 vs 7.5 ms for 1024² points).
    """
    ax0, ax1 = axis_row(axc, 0), axis_row(axc, 1)
    s0, s1 = np.int32(sizes[0]), np.int32(sizes[1])
    st0, st1 = np.int32(strides[0]), np.int32(strides[1])
    for j in range(nb):
        o0, o1, o2, o3, dx, dy = linear_2d_taps(grid[2 * j], grid[2 * j + 1], pad, ax0, ax1,
                                                s0, s1, st0, st1)
        off[0, j] = o0
        off[1, j] = o1
        off[2, j] = o2
        off[3, j] = o3
        # Weights in the weight dtype (docs/semantics.md §6.2): ``one * d`` is exact and only
        # widens ``d`` when weights are wider than coordinates.
        wx1, wy1 = one * dx, one * dy
        wx0, wy0 = one - dx, one - dy
        wts[0, j] = wx0 * wy0
        wts[1, j] = wx1 * wy0
        wts[2, j] = wx0 * wy1
        wts[3, j] = wx1 * wy1


@skeleton
def plan_nearest_2d(grid, nb, pad, axc, kc, sizes, strides, one, nanw, off, wts):
    """Plan ``nb`` points of a 2-D nearest block: one tap, weight 1 (NaN for a NaN point)."""
    ax0, ax1 = axis_row(axc, 0), axis_row(axc, 1)
    s0, s1 = np.int32(sizes[0]), np.int32(sizes[1])
    st0, st1 = np.int32(strides[0]), np.int32(strides[1])
    zero, c1 = ax0[AXIS_HIGH] - ax0[AXIS_HIGH], ax0[AXIS_ONE]
    lo, far = zero - c1, zero - c1 - c1 - c1
    hi0, hi1 = ax0[AXIS_HIGH] + c1, ax1[AXIS_HIGH] + c1
    for j in range(nb):
        x, nanx = _coordinate(grid[2 * j], pad, ax0)
        y, nany = _coordinate(grid[2 * j + 1], pad, ax1)
        x = x if (x > lo) & (x < hi0) else far
        y = y if (y > lo) & (y < hi1) else far
        ix, iy = np.int32(np.rint(x)), np.int32(np.rint(y))  # half to even
        ok = (ix >= 0) & (ix < s0) & (iy >= 0) & (iy < s1)
        off[0, j] = np.int32(iy * st1 + ix * st0) if ok else np.int32(-1)
        wts[0, j] = nanw if nanx | nany else one


@skeleton
def _cubic_taps(g, pad, ax, kt, size, zero, far, cnan):
    """``_taps.cubic_axis`` with selects: four int32 tap indices, weights, inside flags.

    The coordinate is not padded (docs/semantics.md §4); each tap ``floor(x) - 1 + k`` is.
    zeros: a coordinate outside ``(-3, S+2)`` reads nothing and is moved to
    ``far`` before the cast.  border: ``±inf`` clips every tap to the edge,
    weights ``(0, 1, 0, 0)``.  reflection: ``±inf`` is a NaN point.  A NaN
    point gets NaN weights and in-range taps.
    """
    one = kt[0]
    high = ax[AXIS_HIGH]
    u = _unnormalize(g, ax)
    inf = math.isinf(u)
    nan = (u != u) | (inf & (pad == PAD_REFLECTION))
    if pad == PAD_ZEROS:
        x = u if (u > zero - 3) & (u < high + 3) else far  # NaN and ±inf too
    else:
        x = zero if nan else u  # border keeps ±inf: its taps clip to the edge
    f = np.floor(x)
    t = x - f
    r = one - t
    w0 = ((kt[1] * (t + one) - kt[4]) * (t + one) + kt[5]) * (t + one) - kt[6]
    w1 = (kt[2] * t - kt[3]) * t * t + one
    w2 = (kt[2] * r - kt[3]) * r * r + one
    w3 = ((kt[1] * (r + one) - kt[4]) * (r + one) + kt[5]) * (r + one) - kt[6]
    edge = inf & (pad == PAD_BORDER)
    nanw = cnan * one
    zw = one - one
    w0 = nanw if nan else (zw if edge else w0)
    w1 = nanw if nan else (one if edge else w1)
    w2 = nanw if nan else (zw if edge else w2)
    w3 = nanw if nan else (zw if edge else w3)
    if pad == PAD_ZEROS:
        i0 = np.int32(f) - np.int32(1)
        s = np.int32(size)
        return (i0, i0 + np.int32(1), i0 + np.int32(2), i0 + np.int32(3), w0, w1, w2, w3,
                (i0 >= 0) & (i0 < s), (i0 >= -1) & (i0 < s - 1), (i0 >= -2) & (i0 < s - 2),
                (i0 >= -3) & (i0 < s - 3))
    # Each tap formed from f directly (past 2**24 in float32, f + 1 rounds).
    c1 = ax[AXIS_ONE]
    t0, t1, t2, t3 = f - c1, f, f + c1, f + (c1 + c1)
    if pad == PAD_BORDER:
        t0, t1 = _clip(t0, high, zero), _clip(t1, high, zero)
        t2, t3 = _clip(t2, high, zero), _clip(t3, high, zero)
    else:
        t0, t1, t2, t3 = _reflect_taps(t0, t1, t2, t3, ax, zero)
    last = np.int32(size - 1)
    i0, i1, i2, i3 = np.int32(t0), np.int32(t1), np.int32(t2), np.int32(t3)
    # ±inf under border reads only its weight-1 tap (an inf at the edge stays
    # inf, not 0 * inf = NaN), as the general kernels drop the others.
    keep = not edge
    return (min(i0, last), min(i1, last), min(i2, last), min(i3, last), w0, w1, w2, w3,
            keep, True, keep, keep)


@skeleton
def _plan_cubic_axis(grid, nb, pad, axis, ax, kt, size, stride, off, wts):
    """One axis of a 2-D cubic block: rows ``4 axis … 4 axis + 3`` of ``off`` and ``wts``.

    A tap outside gets offset ``-2**31`` (int32's minimum); the sweep forms
    the 16 taps as ``y offset + x offset`` and knows a tap is inside when
    neither part is negative (``(oy | ox) >= 0``: the sign bit).
    """
    st = np.int32(stride)
    zero, c1 = ax[AXIS_HIGH] - ax[AXIS_HIGH], ax[AXIS_ONE]
    far = zero - (c1 + c1 + c1 + c1 + c1)  # taps -6 ... -3: all outside
    cnan = zero / zero
    out = np.int32(-2 ** 31)
    r = 4 * axis
    for j in range(nb):
        (i0, i1, i2, i3, w0, w1, w2, w3, ok0, ok1, ok2,
         ok3) = _cubic_taps(grid[2 * j + axis], pad, ax, kt, size, zero, far, cnan)
        off[r, j] = i0 * st if ok0 else out
        off[r + 1, j] = i1 * st if ok1 else out
        off[r + 2, j] = i2 * st if ok2 else out
        off[r + 3, j] = i3 * st if ok3 else out
        wts[r, j] = w0
        wts[r + 1, j] = w1
        wts[r + 2, j] = w2
        wts[r + 3, j] = w3


@skeleton
def plan_cubic_2d(grid, nb, pad, axc, kc, sizes, strides, one, nanw, off, wts):
    """Plan ``nb`` points of a 2-D cubic block: each axis's 4 taps, one axis per loop.

    One loop per axis: a loop storing all 16 taps (32 store streams into
    two arrays) stayed scalar (30 ms per 1024² points) -- LLVM gives up on
    proving that many streams apart.
    """
    kt = cubic_row(kc)
    for a in range(2):  # one copy of the loop body: half the code to compile
        _plan_cubic_axis(grid, nb, pad, a, axis_row(axc, a), kt, sizes[a], strides[a], off, wts)


@skeleton
def _plan_linear_axis(grid, nb, pad, rank, axis, ax, one, size, stride, off, wts):
    """One axis of a linear block: its two taps in rows ``2 axis``, ``2 axis + 1``.

    A tap outside gets offset ``-2**31``; the sweep adds the axes' offsets
    and knows a tap is inside when no part is negative (the sign bit of
    their bitwise or).  Weights ``1 - d`` and ``d`` in the weight dtype; a
    NaN point gets NaN weights (its products are NaN).
    """
    st = np.int32(stride)
    s = np.int32(size)
    zero, c1 = ax[AXIS_HIGH] - ax[AXIS_HIGH], ax[AXIS_ONE]
    c2 = c1 + c1
    lo, far, hi = zero - c2, zero - c2 - c1, ax[AXIS_HIGH] + c2
    cnan = zero / zero
    out = np.int32(-2 ** 31)
    r = 2 * axis
    for j in range(nb):
        x, nan = _coordinate(grid[rank * j + axis], pad, ax)
        x = x if (x > lo) & (x < hi) else far
        f = np.floor(x)
        d = x - f
        d = cnan if nan else d
        i = np.int32(f)
        off[r, j] = np.int32(i * st) if (i >= 0) & (i < s) else out
        off[r + 1, j] = np.int32(i * st + st) if (i >= -1) & (i < s - 1) else out
        wts[r, j] = one - d
        wts[r + 1, j] = one * d


@skeleton
def plan_linear_3d(grid, nb, pad, axc, kc, sizes, strides, one, nanw, off, wts):
    """Plan a 3-D linear block, one loop per axis (see ``_plan_cubic``)."""
    for a in range(3):  # one copy of the loop body
        _plan_linear_axis(grid, nb, pad, 3, a, axis_row(axc, a), one, sizes[a], strides[a], off,
                          wts)


@skeleton
def plan_nearest_3d(grid, nb, pad, axc, kc, sizes, strides, one, nanw, off, wts):
    """Plan a 3-D nearest block: one tap, weight 1 (NaN for a NaN point)."""
    ax0, ax1, ax2 = axis_row(axc, 0), axis_row(axc, 1), axis_row(axc, 2)
    s0, s1, s2 = np.int32(sizes[0]), np.int32(sizes[1]), np.int32(sizes[2])
    st0, st1, st2 = np.int32(strides[0]), np.int32(strides[1]), np.int32(strides[2])
    zero, c1 = ax0[AXIS_HIGH] - ax0[AXIS_HIGH], ax0[AXIS_ONE]
    lo, far = zero - c1, zero - c1 - c1 - c1
    hi0, hi1, hi2 = ax0[AXIS_HIGH] + c1, ax1[AXIS_HIGH] + c1, ax2[AXIS_HIGH] + c1
    for j in range(nb):
        x, nanx = _coordinate(grid[3 * j], pad, ax0)
        y, nany = _coordinate(grid[3 * j + 1], pad, ax1)
        z, nanz = _coordinate(grid[3 * j + 2], pad, ax2)
        x = x if (x > lo) & (x < hi0) else far
        y = y if (y > lo) & (y < hi1) else far
        z = z if (z > lo) & (z < hi2) else far
        ix, iy, iz = np.int32(np.rint(x)), np.int32(np.rint(y)), np.int32(np.rint(z))
        ok = (ix >= 0) & (ix < s0) & (iy >= 0) & (iy < s1) & (iz >= 0) & (iz < s2)
        off[0, j] = np.int32(iz * st2 + iy * st1 + ix * st0) if ok else np.int32(-1)
        wts[0, j] = nanw if nanx | nany | nanz else one


@helper
def _tap(xc, kind, q, zero):
    """``x[q]``, or ``zero`` for a tap outside (``q < 0``; the read itself stays in bounds)."""
    v = load(xc, kind, q if q > 0 else np.int32(0))  # int32: 16 lanes per gather
    return v if q >= 0 else zero


@skeleton
def _tap_inlined(xc, kind, q, zero):
    """:func:`_tap` inlined by Numba, for the sums whose loops LLVM must see whole.

    There the taps become gathers; a call per tap kept the 2-D cubic sweep at
    scalar loads (2x faster on smooth grids, 1.2-1.5x slower on random ones,
    Zen 3); gathers match the previous kernels on both.
    """
    v = load(xc, kind, q if q > 0 else np.int32(0))
    return v if q >= 0 else zero


@helper
def _linear_sum(xc, kind, off, wts, j, zero):
    acc = zero
    for k in range(4):  # w0 v0 + w1 v1 + w2 v2 + w3 v3, left to right
        term = wts[k, j] * _tap_inlined(xc, kind, off[k, j], zero)
        acc = term if k == 0 else acc + term
    return acc


@skeleton
def sweep_linear_2d(xflat, xs_c, off, wts, nb, C, outflat, os_c, os_p, kind, azero):
    """All channels of a planned linear block: ``y = w0 v0 + w1 v1 + w2 v2 + w3 v3``."""
    zero = azero[0]
    c0 = 0
    if os_p == 1:
        # Two channels per pass share the loads of offsets and weights.
        for c0 in range(0, C - 1, 2):
            xa = xflat[c0 * xs_c:]
            xb = xflat[(c0 + 1) * xs_c:]
            oa = outflat[c0 * os_c:]
            ob = outflat[(c0 + 1) * os_c:]
            for j in range(nb):
                store(oa, j, _linear_sum(xa, kind, off, wts, j, zero), kind)
                store(ob, j, _linear_sum(xb, kind, off, wts, j, zero), kind)
        c0 = C - C % 2
    for c in range(c0, C):
        xc = xflat[c * xs_c:]
        oc = outflat[c * os_c:]
        if os_p == 1:  # channel-first output: contiguous stores (a loop of its own)
            for j in range(nb):
                store(oc, j, _linear_sum(xc, kind, off, wts, j, zero), kind)
        else:
            for j in range(nb):
                store(oc, j * os_p, _linear_sum(xc, kind, off, wts, j, zero), kind)





@skeleton
def _cubic_sum(xc, kind, off, wts, j, zero):
    """``sum w_x w_y x[oy + ox]`` over the 16 taps, ``y`` outer, ``x`` inner (plan order)."""
    acc = zero
    for ky in range(4):
        oy = off[4 + ky, j]
        wy = wts[4 + ky, j]
        for kx in range(4):
            ox = off[kx, j]
            q = np.int32(oy + ox) if (oy | ox) >= 0 else np.int32(-1)  # Numba adds in int64
            term = (wts[kx, j] * wy) * _tap_inlined(xc, kind, q, zero)
            if ky == 0 and kx == 0:
                acc = term
            else:
                acc += term
    return acc


@skeleton
def sweep_cubic_2d(xflat, xs_c, off, wts, nb, C, outflat, os_c, os_p, kind, azero):
    """All channels of a planned cubic block: the 16 taps summed in plan order."""
    zero = azero[0]
    for c in range(C):
        xc = xflat[c * xs_c:]
        oc = outflat[c * os_c:]
        if os_p == 1:
            for j in range(nb):
                store(oc, j, _cubic_sum(xc, kind, off, wts, j, zero), kind)
        else:
            for j in range(nb):
                store(oc, j * os_p, _cubic_sum(xc, kind, off, wts, j, zero), kind)





@skeleton
def _linear_3d_sum(xc, kind, off, wts, j, zero):
    """The 8 taps ``z`` outer, ``x`` inner, weights ``(w_x w_y) w_z`` (the general order)."""
    acc = zero
    for kz in range(2):
        oz = off[4 + kz, j]
        wz = wts[4 + kz, j]
        for ky in range(2):
            oy = off[2 + ky, j]
            wy = wts[2 + ky, j]
            for kx in range(2):
                ox = off[kx, j]
                inside = (oz | oy | ox) >= 0
                q = np.int32(oz + oy + ox) if inside else np.int32(-1)
                term = ((wts[kx, j] * wy) * wz) * _tap_inlined(xc, kind, q, zero)
                if kz == 0 and ky == 0 and kx == 0:
                    acc = term
                else:
                    acc += term
    return acc


@skeleton
def sweep_linear_3d(xflat, xs_c, off, wts, nb, C, outflat, os_c, os_p, kind, azero):
    """All channels of a planned 3-D linear block."""
    zero = azero[0]
    for c in range(C):
        xc = xflat[c * xs_c:]
        oc = outflat[c * os_c:]
        if os_p == 1:
            for j in range(nb):
                store(oc, j, _linear_3d_sum(xc, kind, off, wts, j, zero), kind)
        else:
            for j in range(nb):
                store(oc, j * os_p, _linear_3d_sum(xc, kind, off, wts, j, zero), kind)





@skeleton
def sweep_nearest_2d(xflat, xs_c, off, wts, nb, C, outflat, os_c, os_p, kind, azero):
    """All channels of a planned nearest block: ``y = w0 v0``."""
    zero = azero[0]
    for c in range(C):
        xc = xflat[c * xs_c:]
        oc = outflat[c * os_c:]
        if os_p == 1:
            for j in range(nb):
                store(oc, j, wts[0, j] * _tap(xc, kind, off[0, j], zero), kind)
        else:
            for j in range(nb):
                store(oc, j * os_p, wts[0, j] * _tap(xc, kind, off[0, j], zero), kind)





#: 3-D nearest sweeps exactly as 2-D: one tap, its offset already formed.
sweep_nearest_3d = sweep_nearest_2d

@skeleton
def run_blocks(first, stop, xflat, xs_n, xs_c, sizes, strides, axc, kc, grid, outflat, os_n,
               os_c, os_p, C, block, wconst, kind, azero, K, rank, plan, sweep):
    """Blocks ``first .. stop - 1`` of ``N x blocks``: plan each with ``plan``, sweep with
    ``sweep``.

    The plan tables (``K`` rows of ``block`` points) are allocated once per
    call; a block's grid slice is flat (``rank`` values per point), its
    input view starts at the batch item and its output view at the block's
    first point.
    """
    P = grid.shape[1]
    nblk = (P + block - 1) // block
    gflat = grid.reshape(grid.size)
    one, nanw = wconst[1], wconst[2]
    off = np.empty((K, block), np.int32)
    wts = np.empty((K, block), wconst.dtype)
    for task in range(first, stop):
        n = task // nblk
        p0 = (task - n * nblk) * block
        nb = min(block, P - p0)
        gn = 0 if grid.shape[0] == 1 else n
        plan(gflat[(gn * P + p0) * rank:], nb, axc, kc, sizes, strides, one, nanw, off, wts)
        sweep(xflat[n * xs_n:], xs_c, off, wts, nb, C, outflat[n * os_n + p0 * os_p:], os_c,
              os_p, kind, azero)
