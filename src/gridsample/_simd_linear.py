"""2-D linear kernels written with explicit vectors: a single channel's one pass, the planner
of a block's plan table and the gathering sweep over it.

:mod:`gridsample._vector` writes these as scalar loops that LLVM vectorizes.  Here they do the
same operations on :data:`~gridsample._simd.LANES` points at once with
:mod:`gridsample._simd`'s vectors, for float32 and the paddings whose taps a masked gather can
read (zeros, constant, border): each tap is one gather whose mask is the tap's "inside" test,
where the LLVM-vectorized loops clamp the offset, gather and select the outside value
(docs/kernels.md, "Explicit vectors").  The steps and their order are those of
:func:`~gridsample._vector.linear_2d_taps`, :func:`~gridsample._vector._linear_2d_weights`,
:func:`~gridsample._vector._store_linear_2d` and :func:`~gridsample._vector._linear_point_sum`,
so the numbers are the same bits.  Each function does the whole groups of lanes of a block
and returns how many points it did; the scalar loop it precedes does the rest (everything,
where the vectors do not serve: other dtypes, other CPUs, interpreted code).
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.extending import overload, register_jitable

from ._registry import PAD_BORDER, PAD_ZEROS
from ._simd import (
    AVAILABLE,
    LANES,
    floor,
    gather,
    load_pairs,
    load_row,
    select,
    splat,
    store_row,
    store_vector,
    truncate,
)
from ._taps import AXIS_HIGH, AXIS_MUL, AXIS_OFFSET, AXIS_ONE, AXIS_SCALE, AXIS_SHIFT, AXIS_SUB

__all__ = ["sum_linear_2d_groups", "plan_linear_2d_groups", "sweep_linear_2d_groups",
           "sweep_linear_2d_pair_groups", "GROUP_PADDINGS"]

#: The paddings the vectors serve (constant runs as zeros with a fill).
GROUP_PADDINGS = (PAD_ZEROS, PAD_BORDER)

_JIT = {"error_model": "numpy"}


def sum_linear_2d_groups(points, nb, xc, oc, ax0, ax1, st0, st1, zero, pad):
    """Plan and sum the first ``nb - nb mod LANES`` points of a single 2-D linear channel
    (coordinates ``points[2j], points[2j+1]``, taps read from ``xc``, sums into ``oc[j]``;
    ``zero``: what a tap outside reads); return how many it did.

    Compiled for float32 X, output and points where :data:`gridsample._simd.AVAILABLE`
    (the overload below); elsewhere, and interpreted, it does none and returns 0."""
    return 0


def plan_linear_2d_groups(points, nb, off, wts, ax0, ax1, st0, st1, pad):
    """:func:`gridsample._vector.plan_linear_2d` for the first ``nb - nb mod LANES`` points:
    their offsets (``-1`` outside) and weights into the plan table ``off``, ``wts``; return
    how many it did (float32 points and weights; elsewhere none, as above)."""
    return 0


def sweep_linear_2d_groups(xc, off, wts, nb, oc, zero):
    """:func:`gridsample._vector.sweep_linear_2d` of one channel for the first
    ``nb - nb mod LANES`` points of a planned block, from ``xc`` into ``oc[j]`` (contiguous),
    a tap outside reading ``zero``; return how many it did (float32; elsewhere none)."""
    return 0


def sweep_linear_2d_pair_groups(xa, xb, off, wts, nb, oa, ob, za, zb):
    """:func:`sweep_linear_2d_groups` of two channels in one pass (``xa`` into ``oa``, ``xb``
    into ``ob``; ``za``, ``zb`` read outside): each group's offsets, masks and weights are
    loaded once for both, and their gathers overlap; return how many points it did."""
    return 0


def _float32(*arrays) -> bool:
    return AVAILABLE and all(isinstance(a, types.Array) and a.dtype == types.float32
                             for a in arrays)


def _table(table, dtype) -> bool:
    return (isinstance(table, types.Array) and table.ndim == 2 and table.layout == "C"
            and table.dtype == dtype)


@register_jitable
def _constants(ax0, ax1, st0, st1):
    """The loop constants of a block, as vectors (see :func:`_taps`), and whether the
    vectors serve these axes.

    The unnormalization ``((g + shift) a - b) c`` of each axis (``_taps``) without its
    offset and without ``_unnormalize``'s select that keeps ``±inf``: the formula keeps
    ``±inf`` when ``a c > 0``, and ``u + 0`` differs from ``u`` only at ``u = -0``, which
    gives the same taps and weights.  So the scalar loop takes the axes where either matters:
    size 1 with align_corners (``c = 0``) and B-spline coefficients (an offset).
    """
    L = LANES
    zero = ax0[AXIS_HIGH] - ax0[AXIS_HIGH]
    serve = (ax0[AXIS_MUL] * ax0[AXIS_SCALE] != zero and ax1[AXIS_MUL] * ax1[AXIS_SCALE] != zero
             and ax0[AXIS_OFFSET] == zero and ax1[AXIS_OFFSET] == zero)
    one = splat(ax0[AXIS_ONE], L)
    nought = splat(zero, L)
    two = one + one
    high0, high1 = splat(ax0[AXIS_HIGH], L), splat(ax1[AXIS_HIGH], L)
    return serve, (
        splat(ax0[AXIS_SHIFT], L), splat(ax0[AXIS_MUL], L), splat(ax0[AXIS_SUB], L),
        splat(ax0[AXIS_SCALE], L),
        splat(ax1[AXIS_SHIFT], L), splat(ax1[AXIS_MUL], L), splat(ax1[AXIS_SUB], L),
        splat(ax1[AXIS_SCALE], L),
        high0, high1, high0 + two, high1 + two, nought, one, nought - two, nought - one,
        splat(np.int32(st0), L), splat(np.int32(st1), L))


@register_jitable
def _taps(g0, g1, k, pad):
    """:func:`gridsample._vector.linear_2d_taps` of ``LANES`` points (zeros or border): the
    offsets of the four taps, whether each lies inside, and the fractions ``dx, dy``.

    Two changes that keep every number: a coordinate outside ``(-2, S+1)`` is clamped to the
    interval's ends (``maxps``, ``minps``) where the scalar loop moves it to -3 -- both are
    integers whose taps lie outside, so the weights are the same ``1, 0`` and every tap
    reads the outside value; a NaN coordinate stays NaN: its fraction, so its weights and
    sum, are NaN, every inside test is false and :func:`~gridsample._simd.truncate` makes
    its offsets ``-2**31``, never read (the scalar loop moves it to 0 and blends NaN into the
    fractions: the NaN's sign may differ).
    """
    (shift0, mul0, sub0, scale0, shift1, mul1, sub1, scale1, high0, high1, top0, top1,
     nought, one, lo, minus_one, s0, s1) = k
    u0 = ((g0 + shift0) * mul0 - sub0) * scale0
    u1 = ((g1 + shift1) * mul1 - sub1) * scale1
    if pad == PAD_BORDER:  # _clip: NaN stays NaN
        u0 = select(nought > u0, nought, u0)
        u0 = select(high0 < u0, high0, u0)
        u1 = select(nought > u1, nought, u1)
        u1 = select(high1 < u1, high1, u1)
    x = select(lo > u0, lo, u0)
    x = select(top0 < x, top0, x)
    y = select(lo > u1, lo, u1)
    y = select(top1 < y, top1, y)
    fx, fy = floor(x), floor(y)
    x0 = (fx >= nought) & (fx <= high0)
    x1 = (fx >= minus_one) & (fx < high0)
    y0 = (fy >= nought) & (fy <= high1)
    y1 = (fy >= minus_one) & (fy < high1)
    b = truncate(fy) * s1 + truncate(fx) * s0
    b1 = b + s1
    return (b, b + s0, b1, b1 + s0, x0 & y0, x1 & y0, x0 & y1, x1 & y1, x - fx, y - fy, one)


@register_jitable
def _weights(dx, dy, one):
    """:func:`gridsample._vector._linear_2d_weights` with weights in the coordinates' dtype
    (``one * d == d``)."""
    wx0, wy0 = one - dx, one - dy
    return wx0 * wy0, dx * wy0, wx0 * dy, dx * dy


@register_jitable
def _whole_groups(nb, serve, pad):
    if serve and (pad == PAD_ZEROS or pad == PAD_BORDER):
        return nb - nb % LANES
    return 0


@overload(sum_linear_2d_groups, jit_options=_JIT)
def _sum_linear_2d_groups(points, nb, xc, oc, ax0, ax1, st0, st1, zero, pad):
    if not _float32(points, xc, oc):
        return lambda points, nb, xc, oc, ax0, ax1, st0, st1, zero, pad: 0

    def groups(points, nb, xc, oc, ax0, ax1, st0, st1, zero, pad):
        L = LANES
        serve, k = _constants(ax0, ax1, st0, st1)
        outside = splat(zero, L)
        done = _whole_groups(nb, serve, pad)
        for j in range(0, done, L):
            g0, g1 = load_pairs(points, 2 * j, L)
            q0, q1, q2, q3, m0, m1, m2, m3, dx, dy, one = _taps(g0, g1, k, pad)
            w0, w1, w2, w3 = _weights(dx, dy, one)
            acc = w0 * gather(xc, 0, q0, m0, outside)
            acc = acc + w1 * gather(xc, 0, q1, m1, outside)
            acc = acc + w2 * gather(xc, 0, q2, m2, outside)
            acc = acc + w3 * gather(xc, 0, q3, m3, outside)
            store_vector(oc, j, acc)
        return done

    return groups


@overload(plan_linear_2d_groups, jit_options=_JIT)
def _plan_linear_2d_groups(points, nb, off, wts, ax0, ax1, st0, st1, pad):
    if not (_float32(points) and _table(off, types.int32) and _table(wts, types.float32)):
        return lambda points, nb, off, wts, ax0, ax1, st0, st1, pad: 0

    def groups(points, nb, off, wts, ax0, ax1, st0, st1, pad):
        L = LANES
        serve, k = _constants(ax0, ax1, st0, st1)
        none = splat(np.int32(-1), L)
        done = _whole_groups(nb, serve, pad)
        for j in range(0, done, L):
            g0, g1 = load_pairs(points, 2 * j, L)
            q0, q1, q2, q3, m0, m1, m2, m3, dx, dy, one = _taps(g0, g1, k, pad)
            store_row(off, 0, j, select(m0, q0, none))
            store_row(off, 1, j, select(m1, q1, none))
            store_row(off, 2, j, select(m2, q2, none))
            store_row(off, 3, j, select(m3, q3, none))
            w0, w1, w2, w3 = _weights(dx, dy, one)
            store_row(wts, 0, j, w0)
            store_row(wts, 1, j, w1)
            store_row(wts, 2, j, w2)
            store_row(wts, 3, j, w3)
        return done

    return groups


@overload(sweep_linear_2d_groups, jit_options=_JIT)
def _sweep_linear_2d_groups(xc, off, wts, nb, oc, zero):
    if not (_float32(xc, oc) and _table(off, types.int32) and _table(wts, types.float32)):
        return lambda xc, off, wts, nb, oc, zero: 0

    def groups(xc, off, wts, nb, oc, zero):
        L = LANES
        outside = splat(zero, L)
        inside = splat(np.int32(0), L)
        done = nb - nb % L
        for j in range(0, done, L):
            q0, q1 = load_row(off, 0, j, L), load_row(off, 1, j, L)
            q2, q3 = load_row(off, 2, j, L), load_row(off, 3, j, L)
            acc = load_row(wts, 0, j, L) * gather(xc, 0, q0, q0 >= inside, outside)
            acc = acc + load_row(wts, 1, j, L) * gather(xc, 0, q1, q1 >= inside, outside)
            acc = acc + load_row(wts, 2, j, L) * gather(xc, 0, q2, q2 >= inside, outside)
            acc = acc + load_row(wts, 3, j, L) * gather(xc, 0, q3, q3 >= inside, outside)
            store_vector(oc, j, acc)
        return done

    return groups


@overload(sweep_linear_2d_pair_groups, jit_options=_JIT)
def _sweep_linear_2d_pair_groups(xa, xb, off, wts, nb, oa, ob, za, zb):
    if not (_float32(xa, xb, oa, ob) and _table(off, types.int32)
            and _table(wts, types.float32)):
        return lambda xa, xb, off, wts, nb, oa, ob, za, zb: 0

    def groups(xa, xb, off, wts, nb, oa, ob, za, zb):
        L = LANES
        outside_a, outside_b = splat(za, L), splat(zb, L)
        inside = splat(np.int32(0), L)
        done = nb - nb % L
        for j in range(0, done, L):
            q0, q1 = load_row(off, 0, j, L), load_row(off, 1, j, L)
            q2, q3 = load_row(off, 2, j, L), load_row(off, 3, j, L)
            m0, m1, m2, m3 = q0 >= inside, q1 >= inside, q2 >= inside, q3 >= inside
            w0, w1 = load_row(wts, 0, j, L), load_row(wts, 1, j, L)
            w2, w3 = load_row(wts, 2, j, L), load_row(wts, 3, j, L)
            a = w0 * gather(xa, 0, q0, m0, outside_a)
            b = w0 * gather(xb, 0, q0, m0, outside_b)
            a = a + w1 * gather(xa, 0, q1, m1, outside_a)
            b = b + w1 * gather(xb, 0, q1, m1, outside_b)
            a = a + w2 * gather(xa, 0, q2, m2, outside_a)
            b = b + w2 * gather(xb, 0, q2, m2, outside_b)
            a = a + w3 * gather(xa, 0, q3, m3, outside_a)
            b = b + w3 * gather(xb, 0, q3, m3, outside_b)
            store_vector(oa, j, a)
            store_vector(ob, j, b)
        return done

    return groups
