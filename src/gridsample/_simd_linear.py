"""The one pass of a single 2-D linear channel written with explicit vectors.

:func:`gridsample._vector.sum_linear_2d_one` plans and sums a block's points one at a time
and leaves the vectorizing to LLVM.  :func:`sum_linear_2d_groups` does the same operations
on :data:`~gridsample._simd.LANES` points at once with :mod:`gridsample._simd`'s vectors,
for the paddings whose taps it can read with masked gathers (zeros, constant, border):
each tap is one gather whose mask is the tap's "inside" test, where the LLVM-vectorized
loop clamps the offset, gathers and selects the outside value (docs/kernels.md,
"Explicit vectors").  The steps and their order are :func:`~gridsample._vector.linear_2d_taps`,
:func:`~gridsample._vector._linear_2d_weights` and
:func:`~gridsample._vector._linear_weighted`, so the sums are the same bits; the block's
last ``nb mod LANES`` points are left to the scalar loop.
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.extending import overload

from ._registry import PAD_BORDER, PAD_ZEROS
from ._simd import (
    AVAILABLE,
    LANES,
    floor,
    gather,
    load_pairs,
    select,
    splat,
    store_vector,
    truncate,
)
from ._taps import AXIS_HIGH, AXIS_MUL, AXIS_OFFSET, AXIS_ONE, AXIS_SCALE, AXIS_SHIFT, AXIS_SUB

__all__ = ["sum_linear_2d_groups", "GROUP_PADDINGS"]

#: The paddings :func:`sum_linear_2d_groups` serves (constant runs as zeros with a fill).
GROUP_PADDINGS = (PAD_ZEROS, PAD_BORDER)


def sum_linear_2d_groups(points, nb, xc, oc, ax0, ax1, st0, st1, zero, pad):
    """Plan and sum the first ``nb - nb mod LANES`` points of a single 2-D linear channel
    (coordinates ``points[2j], points[2j+1]``, taps read from ``xc``, sums into ``oc[j]``;
    ``zero``: what a tap outside reads); return how many it did.

    Compiled for float32 X, output and points where :data:`gridsample._simd.AVAILABLE`
    (the overload below); elsewhere, and interpreted, it does none and returns 0."""
    return 0


def _serves(points, xc, oc) -> bool:
    return (AVAILABLE and all(isinstance(a, types.Array) and a.dtype == types.float32
                              for a in (points, xc, oc)))


@overload(sum_linear_2d_groups, jit_options={"error_model": "numpy"})
def _sum_linear_2d_groups(points, nb, xc, oc, ax0, ax1, st0, st1, zero, pad):
    if not _serves(points, xc, oc):
        return lambda points, nb, xc, oc, ax0, ax1, st0, st1, zero, pad: 0

    def groups(points, nb, xc, oc, ax0, ax1, st0, st1, zero, pad):
        L = LANES
        # The unnormalization ((g + shift) a - b) c of each axis (_taps; its offset, 0 here,
        # dropped: u + 0 differs from u only for u = -0, which gives the same taps and
        # weights).
        shift0, mul0, sub0 = splat(ax0[AXIS_SHIFT], L), splat(ax0[AXIS_MUL], L), \
            splat(ax0[AXIS_SUB], L)
        scale0 = splat(ax0[AXIS_SCALE], L)
        shift1, mul1, sub1 = splat(ax1[AXIS_SHIFT], L), splat(ax1[AXIS_MUL], L), \
            splat(ax1[AXIS_SUB], L)
        scale1 = splat(ax1[AXIS_SCALE], L)
        high0, high1 = splat(ax0[AXIS_HIGH], L), splat(ax1[AXIS_HIGH], L)
        c0 = ax0[AXIS_HIGH] - ax0[AXIS_HIGH]
        one = splat(ax0[AXIS_ONE], L)
        nought = splat(c0, L)
        two = one + one
        lo, minus_one = nought - two, nought - one
        top0, top1 = high0 + two, high1 + two
        s0, s1 = splat(np.int32(st0), L), splat(np.int32(st1), L)
        outside = splat(zero, L)
        # Where the vectors do not serve, the scalar loop does every point: an axis of size 1
        # with align_corners (c = 0 would turn ±inf into NaN; _unnormalize keeps ±inf by a
        # select), an axis with an offset (B-spline coefficients).
        serve = (pad == PAD_ZEROS or pad == PAD_BORDER) \
            and ax0[AXIS_MUL] * ax0[AXIS_SCALE] != c0 and ax1[AXIS_MUL] * ax1[AXIS_SCALE] != c0 \
            and ax0[AXIS_OFFSET] == c0 and ax1[AXIS_OFFSET] == c0
        done = nb - nb % L if serve else 0
        for j in range(0, done, L):
            g0, g1 = load_pairs(points, 2 * j, L)
            # The unnormalization keeps ±inf (a, c > 0: checked above).
            u0 = ((g0 + shift0) * mul0 - sub0) * scale0
            u1 = ((g1 + shift1) * mul1 - sub1) * scale1
            if pad == PAD_BORDER:  # _clip: NaN stays NaN
                u0 = select(nought > u0, nought, u0)
                u0 = select(high0 < u0, high0, u0)
                u1 = select(nought > u1, nought, u1)
                u1 = select(high1 < u1, high1, u1)
            # Outside (-2, S+1) no tap is inside: such coordinates are moved to its ends,
            # integers whose taps lie outside and whose weights are linear_2d_taps' for
            # its far value (1 and 0); NaN stays NaN (maxps, minps).
            x = select(lo > u0, lo, u0)
            x = select(top0 < x, top0, x)
            y = select(lo > u1, lo, u1)
            y = select(top1 < y, top1, y)
            fx, fy = floor(x), floor(y)
            # A NaN point: NaN fractions (so NaN weights and sum), no tap inside (every
            # comparison false) and offsets converted to INT_MIN, never read.
            dx, dy = x - fx, y - fy
            x0 = (fx >= nought) & (fx <= high0)
            x1 = (fx >= minus_one) & (fx < high0)
            y0 = (fy >= nought) & (fy <= high1)
            y1 = (fy >= minus_one) & (fy < high1)
            b = truncate(fy) * s1 + truncate(fx) * s0
            b1 = b + s1
            # _linear_2d_weights with weights in the coordinates' dtype (one * d == d).
            wx0, wy0 = one - dx, one - dy
            w0, w1, w2, w3 = wx0 * wy0, dx * wy0, wx0 * dy, dx * dy
            acc = w0 * gather(xc, 0, b, x0 & y0, outside)
            acc = acc + w1 * gather(xc, 0, b + s0, x1 & y0, outside)
            acc = acc + w2 * gather(xc, 0, b1, x0 & y1, outside)
            acc = acc + w3 * gather(xc, 0, b1 + s0, x1 & y1, outside)
            store_vector(oc, j, acc)
        return done

    return groups
