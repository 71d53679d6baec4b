"""The backward over channel-last memory of many contiguous channels, a point at a time.

The vector-planned backward (:mod:`gridsample._grad_vector`) sweeps its plan a channel at a
time: right for planes, but over channel-last memory each channel re-reads every tap's cache
line.  These sweeps and scatters take the same plans (the same planners, the same tables)
and read each point's taps once, all ``C`` channels of a tap side by side (``xs_c == 1``,
dL/dy's ``gs_c == 1``): the backward takes them for channel-last memory of more than
``PLANAR_MAX_CHANNELS`` channels (``_backward._interleaved``).

Grid gradient, per point ``j``: the tap list of offsets ``q_t`` and slopes ``D_{a,t}``,
then, for each channel, ``s_{a,c} = 0 + D_{a,0} x[q_0 + c] + D_{a,1} x[q_1 + c] + ...``
and ``S_a = 0 + G[0] s_{a,0} + G[1] s_{a,1} + ...`` (float32: the channels in vectors,
:func:`gridsample._simd_interleaved.channel_slope_sums_interleaved`, for cubic
:func:`~gridsample._simd_interleaved.slope_sums_interleaved` and a scalar channel sum) --
the planar sweeps' sums in their order, so the same bits as every other backward kernel
of either layout.

Input gradient, per point: for each tap inside whose weight is not NaN, in the plan's order,
``gx[q_t + c] += G[c] w_t`` for every channel (float32:
:func:`gridsample._simd_interleaved.scatter_interleaved`).  Each element of ``dL/dx``
receives its terms point by point, tap by tap, as in the planar scatter: the same bits.

Linear and nearest (not cubic: its taps are work enough to overlap the misses) ask, where
the array read is large, before each run of ``PREFETCH_POINTS`` points, for the cache lines
of the taps of the next run's points that jump away from their predecessors
(:mod:`gridsample._prefetch`; X for the grid gradient, dL/dx for the scatter): a random
warp's taps miss the caches, and one point's few loads keep too few misses in flight.

The sweeps read ``xs_c`` and ``gs_c`` as 1 whatever they are passed: the backward takes them
only then.
"""

from __future__ import annotations

import numpy as np

from ._dtypes import KIND_NATIVE
from ._grad_vector import slopes_3d, slopes_cubic_2d
from ._jit import skeleton
from ._prefetch import PREFETCH_POINTS, worth_prefetching
from ._simd_interleaved import (
    channel_slope_sums_interleaved,
    interleaved_vectors_serve,
    scatter_interleaved,
    slope_sums_interleaved,
)
from ._vector import (
    _cubic_tap,
    _prefetch_ahead,
    _prefetch_ahead_3d,
    _tap_3d,
    _tap_interleaved,
)

__all__ = ["sweep_grad_linear_2d_il", "sweep_grad_cubic_2d_il", "sweep_grad_linear_3d_il",
           "scatter_fused_il", "scatter_cubic_2d_il", "scatter_linear_3d_il",
           "scatter_cubic_3d_il"]


# --- the grid gradient ----------------------------------------------------------------------

@skeleton
def _slope_sums(xn, taps, slopes, T, R, C, sums, zero):
    """``sums[a C + c] = s_{a,c} = 0 + sum_t slopes[a T + t] x[taps[t] + c]`` (0 outside)
    in scalar code: :func:`gridsample._simd_interleaved.slope_sums_interleaved` where the
    vectors do not serve."""
    for a in range(R):
        for c in range(C):
            s = zero
            for t in range(T):
                s += slopes[a * T + t] * _tap_interleaved(xn, KIND_NATIVE, taps[t], c, zero)
            sums[a * C + c] = s


@skeleton
def _channel_sums(gflat, gj, sums, R, C, acc, j, zero):
    """``acc[a, j] = 0 + G[0] s_{a,0} + G[1] s_{a,1} + ...``: point ``j``'s slope sums
    weighted by its dL/dy (``gflat[gj + c]``), the channels in order."""
    for a in range(R):
        s = zero
        for c in range(C):
            s += gflat[gj + c] * sums[a * C + c]
        acc[a, j] = s


@skeleton
def _grad_scratch(T, R, C, like):
    """A point's tap list (offsets, ``R`` rows of slopes), its ``R x C`` slope sums and the
    outside values (0)."""
    return (np.empty(T, np.int32), np.empty(R * T, like.dtype), np.empty(R * C, like.dtype),
            np.zeros(C, like.dtype))


@skeleton
def _linear_point(xn, taps, slopes, T, R, C, gflat, gj, sums, azero, vectors, acc, j, zero):
    """``acc[a, j]`` of a linear point (``T`` taps listed; ``R`` a constant): float32 in
    registers (:func:`gridsample._simd_interleaved.channel_slope_sums_interleaved`), else
    the scalar loops.  Keeping the sums in registers paid for linear, not for cubic, which
    stores them (docs/kernels.md, "The backward over many channel-last channels")."""
    if vectors:
        channel_slope_sums_interleaved(xn, taps, slopes, T, R, C, gflat, gj, sums, azero)
        for a in range(R):
            acc[a, j] = sums[a]
    else:
        _slope_sums(xn, taps, slopes, T, R, C, sums, zero)
        _channel_sums(gflat, gj, sums, R, C, acc, j, zero)


@skeleton
def sweep_grad_linear_2d_il(xflat, xs_c, gflat, gs_c, gs_p, off, wts, dws, nb, C, acc, zero):
    """``acc[a, j] = sum_c G[c, j] S_{c,a}[j]`` of a planned 2-D linear block, a point at a
    time (the module docstring); the sweep's arguments as
    :func:`gridsample._grad_vector.sweep_grad_linear_2d`'s."""
    taps, slopes, sums, azero = _grad_scratch(4, 2, C, wts)
    vectors = interleaved_vectors_serve(xflat, slopes, gflat, azero)
    ask = worth_prefetching(xflat)
    for j0 in range(0, nb, PREFETCH_POINTS):
        if ask:
            _prefetch_ahead(xflat, off, j0 + PREFETCH_POINTS, nb, 4, C)
        for j in range(j0, min(j0 + PREFETCH_POINTS, nb)):
            for k in range(4):
                taps[k], slopes[k], slopes[4 + k] = off[k, j], dws[k, j], dws[4 + k, j]
            _linear_point(xflat, taps, slopes, 4, 2, C, gflat, j * gs_p, sums, azero, vectors,
                          acc, j, zero)


@skeleton
def sweep_grad_cubic_2d_il(xflat, xs_c, gflat, gs_c, gs_p, off, wts, dws, nb, C, acc, zero):
    """:func:`sweep_grad_linear_2d_il` of a planned 2-D cubic block (16 taps, ``y`` outer,
    :func:`gridsample._grad_vector.slopes_cubic_2d`), the slope sums stored, then weighted
    by dL/dy (:func:`_channel_sums`)."""
    taps, slopes, sums, azero = _grad_scratch(16, 2, C, wts)
    vectors = interleaved_vectors_serve(xflat, slopes, sums, azero)
    for j in range(nb):
        for ky in range(4):
            for kx in range(4):
                t = 4 * ky + kx
                taps[t], slopes[t], slopes[16 + t] = slopes_cubic_2d(off, wts, dws, j, ky, kx)
        if vectors:
            slope_sums_interleaved(xflat, taps, slopes, 16, 2, C, sums, azero)
        else:
            _slope_sums(xflat, taps, slopes, 16, 2, C, sums, zero)
        _channel_sums(gflat, j * gs_p, sums, 2, C, acc, j, zero)


@skeleton
def sweep_grad_linear_3d_il(xflat, xs_c, gflat, gs_c, gs_p, off, wts, dws, nb, C, acc, zero):
    """:func:`sweep_grad_linear_2d_il` of a planned 3-D linear block (8 taps, ``z`` outer,
    :func:`gridsample._grad_vector.slopes_3d`)."""
    taps, slopes, sums, azero = _grad_scratch(8, 3, C, wts)
    vectors = interleaved_vectors_serve(xflat, slopes, gflat, azero)
    ask = worth_prefetching(xflat)
    for j0 in range(0, nb, PREFETCH_POINTS):
        if ask:
            _prefetch_ahead_3d(xflat, off, j0 + PREFETCH_POINTS, nb, C)
        for j in range(j0, min(j0 + PREFETCH_POINTS, nb)):
            for kz in range(2):
                for ky in range(2):
                    for kx in range(2):
                        t = 4 * kz + 2 * ky + kx
                        taps[t], slopes[t], slopes[8 + t], slopes[16 + t] = slopes_3d(
                            off, wts, j, kz, ky, kx)
            _linear_point(xflat, taps, slopes, 8, 3, C, gflat, j * gs_p, sums, azero, vectors,
                          acc, j, zero)


# --- the input gradient ---------------------------------------------------------------------

@skeleton
def _scatter_point(gx, taps, weights, T, g, gj, c0, c1, vectors):
    """``gx[taps[t] + c] += g[gj + c] * weights[t]`` for the taps ``t`` in order whose offset
    is not negative, channels ``c0 .. c1 - 1``."""
    if vectors:
        scatter_interleaved(gx, taps, weights, T, g, gj, c0, c1)
        return
    for t in range(T):
        q = taps[t]
        if q >= 0:
            w = weights[t]
            for c in range(c0, c1):
                gx[np.uint64(q + c)] += g[gj + c] * w  # unsigned: no wraparound test


@skeleton
def _listed(q, w):
    """A tap as the scatter lists it: its offset, or ``-1`` (skipped) where it lies outside
    or its weight is NaN (a NaN point adds nothing)."""
    return q if (q >= 0) & (w == w) else np.int32(-1), w


@skeleton
def scatter_fused_il(gxflat, xs_c, gflat, gs_c, gs_p, off, wts, nb, c0, c1, K):
    """Scatter channels ``c0 .. c1 - 1`` of a block planned with full tap offsets (``K``
    rows), a point at a time; the arguments as
    :func:`gridsample._grad_vector.scatter_fused`'s."""
    taps, weights = np.empty(K, np.int32), np.empty(K, wts.dtype)
    vectors = interleaved_vectors_serve(gxflat, weights, gflat, weights)
    ask = worth_prefetching(gxflat)
    for j0 in range(0, nb, PREFETCH_POINTS):
        if ask:
            _prefetch_ahead(gxflat, off, j0 + PREFETCH_POINTS, nb, K, c1)
        for j in range(j0, min(j0 + PREFETCH_POINTS, nb)):
            for k in range(K):
                taps[k], weights[k] = _listed(off[k, j], wts[k, j])
            _scatter_point(gxflat, taps, weights, K, gflat, j * gs_p, c0, c1, vectors)


@skeleton
def scatter_cubic_2d_il(gxflat, xs_c, gflat, gs_c, gs_p, off, wts, nb, c0, c1, K):
    """:func:`scatter_fused_il` of a 2-D cubic block (``y`` outer, ``w = w_x w_y``:
    :func:`gridsample._vector._cubic_tap`)."""
    taps, weights = np.empty(16, np.int32), np.empty(16, wts.dtype)
    vectors = interleaved_vectors_serve(gxflat, weights, gflat, weights)
    for j in range(nb):
        for ky in range(4):
            for kx in range(4):
                q, w = _cubic_tap(off, wts, j, ky, kx)
                taps[4 * ky + kx], weights[4 * ky + kx] = _listed(q, w)
        _scatter_point(gxflat, taps, weights, 16, gflat, j * gs_p, c0, c1, vectors)


@skeleton
def _scatter_3d_il(gxflat, gflat, gs_p, off, wts, nb, c0, c1, T):
    """:func:`scatter_fused_il` of a 3-D block planned per axis (``T`` rows each; ``z``
    outer, ``w = (w_x w_y) w_z``: :func:`gridsample._vector._tap_3d`)."""
    taps, weights = np.empty(T * T * T, np.int32), np.empty(T * T * T, wts.dtype)
    vectors = interleaved_vectors_serve(gxflat, weights, gflat, weights)
    ask = (T == 2) & worth_prefetching(gxflat)
    for j0 in range(0, nb, PREFETCH_POINTS):
        if ask:
            _prefetch_ahead_3d(gxflat, off, j0 + PREFETCH_POINTS, nb, c1)
        for j in range(j0, min(j0 + PREFETCH_POINTS, nb)):
            for kz in range(T):
                for ky in range(T):
                    for kx in range(T):
                        t = (kz * T + ky) * T + kx
                        q, w = _tap_3d(off, wts, j, T, kz, ky, kx)
                        taps[t], weights[t] = _listed(q, w)
            _scatter_point(gxflat, taps, weights, T * T * T, gflat, j * gs_p, c0, c1, vectors)


@skeleton
def scatter_linear_3d_il(gxflat, xs_c, gflat, gs_c, gs_p, off, wts, nb, c0, c1, K):
    """:func:`_scatter_3d_il` of a 3-D linear block (2 rows per axis)."""
    _scatter_3d_il(gxflat, gflat, gs_p, off, wts, nb, c0, c1, 2)


@skeleton
def scatter_cubic_3d_il(gxflat, xs_c, gflat, gs_c, gs_p, off, wts, nb, c0, c1, K):
    """:func:`_scatter_3d_il` of a 3-D cubic block (4 rows per axis)."""
    _scatter_3d_il(gxflat, gflat, gs_p, off, wts, nb, c0, c1, 4)
