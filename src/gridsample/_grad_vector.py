"""Branch-free grid-gradient kernels: ``dL/dgrid`` with SIMD gathers.

The general backward (:mod:`gridsample._grad_kernels`) plans a list of the
taps inside ``X`` per point and sweeps it with loops of varying length,
which LLVM keeps scalar.  Here, as in the forward's vector kernels
(:mod:`gridsample._vector`), a block is planned as a fixed table with the
same instructions for every point:

``off[k, j]``
    int32 flat offset of tap ``k`` of point ``j``, ``-1`` outside ``X``
    (the sweep reads 0 there);
``dws[a * K + k, j]``
    ``D_{k,a}``, the derivative of tap ``k``'s weight along axis ``a``
    before the chain factor (NaN for a NaN point);
``chain[a, j]``
    the chain factor ``dx_a/dg_a`` (:mod:`gridsample._grad_taps`).

and the sweep gathers every tap of every channel::

    S_a[j] = sum_c G[c, j] * (0 + D_{0,a} v_0 + D_{1,a} v_1 + ...)      (left to right)
    dL/dg[j, a] = S_a[j] * chain[a, j]

which are the general kernels' sums in their order (a tap outside adds
``D * 0``, which changes at most the sign of a zero sum): the two families
give the same bits otherwise, which the tests check.  The input gradient
is a scatter: planned the same way, scattered in scalar code (below).

2-D linear: taps ``(x0, y0), (x1, y0), (x0, y1), (x1, y1)`` with weights
``w_x w_y``, so ``D_x = (-w_y0, w_y0, -w_y1, w_y1)`` and
``D_y = (-w_x0, -w_x1, w_x0, w_x1)`` (the weight slopes are ``±1`` in the
padded coordinate, so these products are exact).

2-D linear of up to :data:`ONE_PASS_GRAD_CHANNELS` float32 channels under zeros or border
skips the table: :func:`run_grad_linear_2d_one` plans each group of lanes in registers and
sums it at once, the same terms in the same order.

3-D linear plans per axis instead (the forward's table: two offsets and two
weights per axis, :func:`gridsample._vector._plan_linear_axis`; 24 slope
rows would be too many store streams to vectorize) and forms the 8 taps
and their slopes ``D_x = ±(w_y w_z)``, ``D_y = ±(w_x w_z)``,
``D_z = ±(w_x w_y)`` in the sweep.
"""

from __future__ import annotations

import math

import numpy as np

from ._claims import claim_task, join_shares
from ._dtypes import KIND_NATIVE
from ._jit import skeleton
from ._registry import PAD_BORDER, PAD_REFLECTION, PAD_ZEROS
from ._simd import LANES
from ._simd_linear import plan_grad_linear_2d_groups, sum_grad_linear_2d_groups, whole_groups
from ._taps import (
    AXIS_HIGH,
    AXIS_MUL,
    AXIS_ONE,
    AXIS_REFLECT_LOW,
    AXIS_REFLECT_SPAN,
    AXIS_SCALE,
    axis_row,
    cubic_row,
)
from ._vector import (
    _cubic_tap,
    _plan_cubic_axis,
    _plan_linear_axis,
    _tap_3d,
    _tap_inlined,
    _unnormalize,
    has_exact_pass,
    linear_2d_taps,
    planar_points,
    reflect_residue,
    unfold,
)

__all__ = ["plan_grad_linear_2d", "sweep_grad_linear_2d", "run_grad_linear_2d_one",
           "ONE_PASS_GRAD_CHANNELS", "plan_grad_linear_3d",
           "sweep_grad_linear_3d", "plan_grad_cubic_2d", "sweep_grad_cubic_2d",
           "run_grid_grad_blocks", "scatter_fused", "scatter_cubic_2d", "scatter_cubic_3d",
           "scatter_linear_3d", "run_scatter_blocks", "run_both_grad_blocks"]


@skeleton
def _chain(g, pad, ax, exact):
    """``dx/dg * pad'(x)`` with selects: :func:`gridsample._grad_taps.pad_slope`'s rule.

    Border: slope 1 strictly inside ``(0, S-1)``, else 0.  Reflection: the
    sign of ``x - low``, flipped in the mirrored half of the fold, 0 where
    the reflected value is clipped and on an axis of span 0.  A coordinate
    at ``±inf`` (or NaN: the point's sums are NaN whatever this is) gets 0.
    Also whether reflection needs the exact pass for ``g``
    (:func:`gridsample._vector.reflect_residue`; ``exact``: this is that pass).
    """
    u = _unnormalize(g, ax)
    high = ax[AXIS_HIGH]
    zero = high - high
    one = ax[AXIS_ONE]
    finite = (u == u) & (not math.isinf(u))
    slope = one
    far = False
    if pad == PAD_BORDER:
        slope = one if (u > zero) & (u < high) else zero
    elif pad == PAD_REFLECTION:
        low, span = ax[AXIS_REFLECT_LOW], ax[AXIS_REFLECT_SPAN]
        v = u if finite else zero
        d = v - low
        m, far = reflect_residue(abs(d), ax, exact)
        sign = one if d >= zero else -one
        sign = -sign if m > span else sign
        y = unfold(m, ax, zero)  # the reflected coordinate, from the same residue
        slope = sign if (y > zero) & (y < high) & (span > zero) else zero
    scale = ax[AXIS_MUL] * ax[AXIS_SCALE]
    return (scale * slope if finite else zero), far


@skeleton
def _grad_linear_2d_point(grid, j, pad, ax0, ax1, st0, st1, one, exact, off, dws, chain):
    """Point ``j``'s rows of a 2-D linear gradient plan; whether it needs the exact pass.
    The exact pass (``exact``) rewrites only the points it exists for."""
    g0, g1 = grid[2 * j], grid[2 * j + 1]
    o0, o1, o2, o3, dx, dy, far = linear_2d_taps(g0, g1, pad, ax0, ax1, st0, st1, exact)
    if exact and not far:
        return far
    off[0, j] = o0
    off[1, j] = o1
    off[2, j] = o2
    off[3, j] = o3
    wx0, wy0 = one - dx, one - dy
    # -w: the general planner's (-1) * w, bit for bit (also for w = 0)
    dws[0, j] = -wy0
    dws[1, j] = wy0
    dws[2, j] = -dy
    dws[3, j] = dy
    dws[4, j] = -wx0
    dws[5, j] = -dx
    dws[6, j] = wx0
    dws[7, j] = dx
    chain[0, j] = _chain(g0, pad, ax0, exact)[0]
    chain[1, j] = _chain(g1, pad, ax1, exact)[0]
    return far


@skeleton
def plan_grad_linear_2d(grid, nb, pad, axc, kc, dk, sizes, strides, off, wts, dws, chain,
                        coords):
    """Plan ``nb`` points of a 2-D linear block: offsets, weight slopes, chain factors.

    ``grid`` is the block's coordinates flat (``2j``, ``2j + 1``); the taps are
    :func:`gridsample._vector.linear_2d_taps`, the forward's, and so is the exact pass
    for points far outside (the chain factors' reflection takes the same residue).
    """
    ax0, ax1 = axis_row(axc, 0), axis_row(axc, 1)
    st0, st1 = np.int32(strides[0]), np.int32(strides[1])
    one = ax0[AXIS_ONE]
    # Explicit vectors where they serve (float32, zeros or border), the rest one by one:
    # LLVM keeps this loop scalar.
    first = 0
    if pad == PAD_ZEROS or pad == PAD_BORDER:
        first = plan_grad_linear_2d_groups(grid, whole_groups(nb, ax0, ax1, pad), off, dws,
                                           chain, ax0, ax1, st0, st1, pad)
    distant = False  # an or of bools keeps the loop's vectors full width
    for j in range(first, nb):
        far = _grad_linear_2d_point(grid, j, pad, ax0, ax1, st0, st1, one, False, off, dws,
                                    chain)
        distant = distant | far
    if has_exact_pass(pad) and distant:  # the exact pass for points far outside
        for j in range(nb):
            _grad_linear_2d_point(grid, j, pad, ax0, ax1, st0, st1, one, True, off, dws, chain)


@skeleton
def _slope_sum(xc, off, dws, a, j, zero):
    """``0 + D_{0,a} v_0 + ... + D_{3,a} v_3`` (left to right; taps outside read 0)."""
    acc = zero
    for k in range(4):
        acc += dws[4 * a + k, j] * _tap_inlined(xc, KIND_NATIVE, off[k, j], zero)
    return acc


@skeleton
def sweep_grad_linear_2d(xflat, xs_c, gflat, gs_c, gs_p, off, wts, dws, nb, C, acc, zero):
    """``acc[a, j] = sum_c G[c, j] S_{c,a}[j]`` over all channels, channel by channel."""
    for j in range(nb):
        acc[0, j] = zero
        acc[1, j] = zero
    for c in range(C):
        xc = xflat[c * xs_c:]
        gc = gflat[c * gs_c:]
        if gs_p == 1:  # contiguous dL/dy: vector loads
            for j in range(nb):
                acc[0, j] += gc[j] * _slope_sum(xc, off, dws, 0, j, zero)
                acc[1, j] += gc[j] * _slope_sum(xc, off, dws, 1, j, zero)
        else:
            for j in range(nb):
                gv = gc[j * gs_p]
                acc[0, j] += gv * _slope_sum(xc, off, dws, 0, j, zero)
                acc[1, j] += gv * _slope_sum(xc, off, dws, 1, j, zero)


#: Channels up to which the 2-D linear grid gradient plans and sums its points in one pass
#: (:func:`run_grad_linear_2d_one`); beyond, each group's channels read as many planes of X
#: and dL/dy at once, where the planned sweep's channel-by-channel order reads two.
ONE_PASS_GRAD_CHANNELS = 3


@skeleton
def _sum_grad_linear_2d(grid, nb, pad, ax0, ax1, st0, st1, xflat, xs_c, gflat, gs_c, C, rows,
                        tail_points, tail_go, tail_rows):
    """``rows[2 j + a] = S_a chain_a`` of a 2-D linear block's ``nb`` points in one pass
    (:func:`gridsample._simd_linear.sum_grad_linear_2d_groups`): the whole groups of lanes
    in place, the last ``nb mod LANES`` points through copies padded to a group
    (``tail_*``: coordinates 0 and dL/dy 0 in the lanes past the block at first, then what
    an earlier block's tail left; their sums are dropped, and a group reads only taps inside
    X whatever its coordinates), so that nothing is read or written past the block.  The
    rest goes a group at a time, so that no copy overflows even where ``whole_groups``
    would do none (the backward takes this pass only where it does them all)."""
    done = sum_grad_linear_2d_groups(grid, whole_groups(nb, ax0, ax1, pad), xflat, xs_c, C,
                                     gflat, gs_c, rows, ax0, ax1, st0, st1, pad)
    while done < nb:
        rest = min(nb - done, LANES)
        for i in range(2 * rest):
            tail_points[i] = grid[2 * done + i]
        for c in range(C):
            for p in range(rest):
                tail_go[c * LANES + p] = gflat[c * gs_c + done + p]
        sum_grad_linear_2d_groups(tail_points, LANES, xflat, xs_c, C, tail_go, LANES,
                                  tail_rows, ax0, ax1, st0, st1, pad)
        for i in range(2 * rest):
            rows[2 * done + i] = tail_rows[i]
        done += rest


@skeleton
def run_grad_linear_2d_one(share, claims, xflat, xs_n, xs_c, sizes, strides, axc, kc, dk, grid,
                           gflat, gs_n, gs_c, gs_p, ggrid, C, block, pad):
    """:func:`run_grid_grad_blocks` of a 2-D linear grid gradient planned and summed in one
    pass, a group of points at a time, without plan tables (:func:`_sum_grad_linear_2d`):
    float32, zeros or border, contiguous dL/dy (``gs_p`` 1), at most
    :data:`ONE_PASS_GRAD_CHANNELS` channels and axes the explicit vectors serve (the
    backward takes it only there); the planned entry's bits, but for the sign of a NaN (its
    points in a block's last part of a group are planned by scalar code there)."""
    P = grid.shape[1]
    nblk = (P + block - 1) // block
    gcoords = grid.reshape(grid.size)
    ax0, ax1 = axis_row(axc, 0), axis_row(axc, 1)
    st0, st1 = np.int32(strides[0]), np.int32(strides[1])
    tail_points = np.zeros(2 * LANES, grid.dtype)
    tail_go = np.zeros(C * LANES, gflat.dtype)
    tail_rows = np.empty(2 * LANES, ggrid.dtype)
    while True:
        task = claim_task(claims, share)
        if task < 0:
            break
        n = task // nblk
        p0 = (task - n * nblk) * block
        nb = min(block, P - p0)
        gn = 0 if grid.shape[0] == 1 else n
        _sum_grad_linear_2d(gcoords[(gn * P + p0) * 2:], nb, pad, ax0, ax1, st0, st1,
                            xflat[n * xs_n:], xs_c, gflat[n * gs_n + p0:], gs_c, C,
                            ggrid[n, p0:p0 + nb].reshape(nb * 2), tail_points, tail_go,
                            tail_rows)
    join_shares(claims, share)


@skeleton
def plan_grad_linear_3d(grid, nb, pad, axc, kc, dk, sizes, strides, off, wts, dws, chain,
                        coords):
    """Plan a 3-D linear block: per-axis offsets and weights (rows 2a, 2a+1), chain factors;
    each axis's loops read a planar copy of the coordinates (``coords``,
    :func:`gridsample._vector.planar_points`)."""
    planar_points(grid, nb, 3, coords)
    for a in range(3):  # one copy of the loop body
        ax = axis_row(axc, a)
        _plan_linear_axis(coords[a * nb:], nb, pad, a, ax, ax[AXIS_ONE], sizes[a],
                          strides[a], off, wts)
    for a in range(3):
        ax = axis_row(axc, a)
        distant = False
        for j in range(nb):
            c, far = _chain(coords[a * nb + j], pad, ax, False)
            chain[a, j] = c
            distant = distant | far
        if pad == PAD_REFLECTION and distant:  # the exact pass for points far outside
            for j in range(nb):
                c, far = _chain(coords[a * nb + j], pad, ax, True)
                if far:
                    chain[a, j] = c
    _nan_points_on_every_axis(nb, 3, 2, axc, wts, chain)


@skeleton
def _nan_points_on_every_axis(nb, rank, rows, axc, wts, chain):
    """A NaN point (NaN weights on some axis: ``rows`` weight rows per axis, the first NaN
    for such a point) gets NaN chain factors on every axis: the slope ``D_x`` has no ``w_x``
    factor to carry the NaN of axis x."""
    zero = axc[0, AXIS_HIGH] - axc[0, AXIS_HIGH]
    cnan = zero / zero
    for j in range(nb):
        nan = False
        for a in range(rank):
            nan = nan | (wts[a * rows, j] != wts[a * rows, j])
        for a in range(rank):
            chain[a, j] = cnan if nan else chain[a, j]


@skeleton
def slopes_3d(off, wts, j, kz, ky, kx):
    """Tap ``(kz, ky, kx)`` of point ``j`` of a 3-D linear plan: its offset (int32; ``-1``
    where any axis's tap lies outside) and its slopes ``(D_x, D_y, D_z)``.

    The general planner's slopes are ``(dw_x w_y) w_z``, ``(w_x dw_y) w_z`` and
    ``(w_x w_y) dw_z`` with ``dw = ∓1``: the products ``w_y w_z``, ``w_x w_z``,
    ``w_x w_y``, negated for tap 0 of the axis (exact).
    """
    q, _ = _tap_3d(off, wts, j, 2, kz, ky, kx)
    wz, wy, wx = wts[4 + kz, j], wts[2 + ky, j], wts[kx, j]
    dx = wy * wz
    dy = wx * wz
    dz = wx * wy
    return q, (dx if kx == 1 else -dx), (dy if ky == 1 else -dy), (dz if kz == 1 else -dz)


@skeleton
def _slope_sums_3d(xc, off, wts, j, zero):
    """``(S_x, S_y, S_z)`` of one channel: the 8 taps ``z`` outer, ``x`` inner
    (:func:`slopes_3d`)."""
    sx = zero
    sy = zero
    sz = zero
    for kz in range(2):
        for ky in range(2):
            for kx in range(2):
                q, dx, dy, dz = slopes_3d(off, wts, j, kz, ky, kx)
                v = _tap_inlined(xc, KIND_NATIVE, q, zero)
                sx += dx * v
                sy += dy * v
                sz += dz * v
    return sx, sy, sz


@skeleton
def sweep_grad_linear_3d(xflat, xs_c, gflat, gs_c, gs_p, off, wts, dws, nb, C, acc, zero):
    """``acc[a, j] = sum_c G[c, j] S_{c,a}[j]``, channel by channel."""
    for j in range(nb):
        acc[0, j] = zero
        acc[1, j] = zero
        acc[2, j] = zero
    for c in range(C):
        xc = xflat[c * xs_c:]
        gc = gflat[c * gs_c:]
        for j in range(nb):
            gv = gc[j * gs_p]
            sx, sy, sz = _slope_sums_3d(xc, off, wts, j, zero)
            acc[0, j] += gv * sx
            acc[1, j] += gv * sy
            acc[2, j] += gv * sz


@skeleton
def _plan_cubic_grad_axis(coords, nb, pad, axis, ax, kt, dk, size, stride, off, wts, dws,
                          chain):
    """One axis of a 2-D cubic block: the forward's offsets and weights
    (:func:`gridsample._vector._plan_cubic_axis`, rows ``4 axis`` ...), then the weight
    slopes ``dw/dx`` and the chain factor ``dx/dg``.

    The coordinate is not padded (docs/semantics.md §4): with ``t = x - floor(x)`` the
    slopes are ``k'(t+1), k'(t), -k'(1-t), -k'(2-t)``
    (:func:`gridsample._grad_taps.grad_cubic_taps`); a NaN or infinite coordinate
    gets slopes and chain 0 (a NaN point's weights are NaN; the caller marks it).
    ``coords``: the axis's coordinates, contiguous.
    """
    _plan_cubic_axis(coords, nb, pad, axis, ax, kt, size, stride, off, wts)
    zero, one = ax[AXIS_HIGH] - ax[AXIS_HIGH], ax[AXIS_ONE]
    scale = ax[AXIS_MUL] * ax[AXIS_SCALE]
    r = 4 * axis
    for j in range(nb):
        u = _unnormalize(coords[j], ax)
        bad = (u != u) | math.isinf(u)
        v = zero if bad else u
        t = v - np.floor(v)
        q = one - t
        tp, qp = t + one, q + one
        d0 = (dk[2] * tp - dk[3]) * tp + dk[4]
        d1 = (dk[0] * t - dk[1]) * t
        d2 = -((dk[0] * q - dk[1]) * q)
        d3 = -((dk[2] * qp - dk[3]) * qp + dk[4])
        dws[r, j] = zero if bad else d0
        dws[r + 1, j] = zero if bad else d1
        dws[r + 2, j] = zero if bad else d2
        dws[r + 3, j] = zero if bad else d3
        chain[axis, j] = zero if bad else scale


@skeleton
def plan_grad_cubic_2d(grid, nb, pad, axc, kc, dk, sizes, strides, off, wts, dws, chain,
                       coords):
    """Plan a 2-D cubic block per axis, from a planar copy of the coordinates (``coords``);
    NaN points marked on both axes."""
    kt = cubic_row(kc)
    dkt = (dk[0], dk[1], dk[2], dk[3], dk[4])
    planar_points(grid, nb, 2, coords)
    for a in range(2):
        _plan_cubic_grad_axis(coords[a * nb:], nb, pad, a, axis_row(axc, a), kt, dkt, sizes[a],
                              strides[a], off, wts, dws, chain)
    _nan_points_on_every_axis(nb, 2, 4, axc, wts, chain)


@skeleton
def slopes_cubic_2d(off, wts, dws, j, ky, kx):
    """Tap ``(ky, kx)`` of point ``j`` of a 2-D cubic gradient plan: its offset (int32;
    ``-1`` where either axis's tap lies outside) and the general planner's slopes
    ``(dw_x w_y, w_x dw_y)``."""
    q, _ = _cubic_tap(off, wts, j, ky, kx)
    return q, dws[kx, j] * wts[4 + ky, j], wts[kx, j] * dws[4 + ky, j]


@skeleton
def _slope_sums_cubic_2d(xc, off, wts, dws, j, zero):
    """``(S_x, S_y)`` of one channel over the 16 taps, ``y`` outer, ``x`` inner
    (:func:`slopes_cubic_2d`)."""
    sx = zero
    sy = zero
    for ky in range(4):
        for kx in range(4):
            q, dx, dy = slopes_cubic_2d(off, wts, dws, j, ky, kx)
            v = _tap_inlined(xc, KIND_NATIVE, q, zero)
            sx += dx * v
            sy += dy * v
    return sx, sy


@skeleton
def sweep_grad_cubic_2d(xflat, xs_c, gflat, gs_c, gs_p, off, wts, dws, nb, C, acc, zero):
    """``acc[a, j] = sum_c G[c, j] S_{c,a}[j]``, channel by channel."""
    for j in range(nb):
        acc[0, j] = zero
        acc[1, j] = zero
    for c in range(C):
        xc = xflat[c * xs_c:]
        gc = gflat[c * gs_c:]
        for j in range(nb):
            gv = gc[j * gs_p]
            sx, sy = _slope_sums_cubic_2d(xc, off, wts, dws, j, zero)
            acc[0, j] += gv * sx
            acc[1, j] += gv * sy


@skeleton
def run_grid_grad_blocks(share, claims, xflat, xs_n, xs_c, sizes, strides, axc, kc, dk, grid,
                         gflat, gs_n, gs_c, gs_p, ggrid, C, block, K, rank, plan, sweep):
    """The blocks of ``N x blocks`` that share ``share`` claims (:mod:`gridsample._claims`;
    the caller's share then waits for the workers'): ``ggrid[n, p, a] = S_a * chain_a``.

    Each block belongs to one task, which writes its points' rows of
    ``ggrid`` (shape (N, P, r)) whole: deterministic at any thread count.
    The plan tables: ``K`` rows of offsets and of weights, ``2 K`` of
    slopes, ``rank`` of chain factors (each template uses what it needs).

    ``plan`` and ``sweep`` are compiled functions of their own here (not
    templates inlined into the entry, as the forward's): inlined, the grid
    gradient ran 2-2.5x slower (2-D linear, one thread, Zen 4; the same
    bits), which the forward's and the input gradient's loops did not.  Some
    planners are :func:`gridsample._jit.callee`s (optimized twice), so that the
    process that compiles the entry runs a vectorized planner too.
    """
    P = grid.shape[1]
    nblk = (P + block - 1) // block
    gcoords = grid.reshape(grid.size)
    zero = axc[0, 0] - axc[0, 0]
    off, wts, dws, chain, acc, coords = _grad_scratch(K, block, rank, axc, grid)
    while True:
        task = claim_task(claims, share)
        if task < 0:
            break
        n = task // nblk
        p0 = (task - n * nblk) * block
        nb = min(block, P - p0)
        gn = 0 if grid.shape[0] == 1 else n
        plan(gcoords[(gn * P + p0) * rank:], nb, axc, kc, dk, sizes, strides, off, wts, dws,
             chain, coords)
        sweep(xflat[n * xs_n:], xs_c, gflat[n * gs_n + p0 * gs_p:], gs_c, gs_p, off, wts, dws,
              nb, C, acc, zero)
        _store_rows(ggrid, n, p0, nb, rank, acc, chain)
    join_shares(claims, share)


@skeleton
def _grad_scratch(K, block, rank, axc, grid):
    """A grid-gradient plan's tables (``K`` rows of offsets and weights, ``2 K`` of slopes,
    ``rank`` of chain factors and of sums) and the planners' coordinate scratch."""
    return (np.empty((K, block), np.int32), np.empty((K, block), axc.dtype),
            np.empty((2 * K, block), axc.dtype), np.empty((rank, block), axc.dtype),
            np.empty((rank, block), axc.dtype), np.empty(rank * block, grid.dtype))


@skeleton
def _store_rows(ggrid, n, p0, nb, rank, acc, chain):
    """``ggrid[n, p0 + j, a] = acc[a, j] * chain[a, j]`` for the block's ``nb`` points.

    The rows as one flat view (contiguous: ggrid is a new C array): indexed by ``j`` alone,
    no wraparound test per store, and stores LLVM vectorizes (a 2-D view's ``rows[j, a]``
    kept the loop scalar: 1.3-1.6x its time, Zen 4)."""
    rows = ggrid[n, p0:p0 + nb].reshape(nb * rank)
    for j in range(nb):
        for a in range(rank):
            rows[rank * j + a] = acc[a, j] * chain[a, j]


# --- the input gradient: vector-planned blocks, scalar scatter --------------------------------
#
# dL/dx[c, o] += G[c, p] W_o(p) cannot be a SIMD scatter (two points of one
# vector may hit the same element), but its plan can be the forward's
# branch-free one (gridsample._vector_entries' planners), which is several
# times faster than the general list planner.  The scatter then runs over
# the plan's fixed taps, skipping those outside X (offset < 0) and NaN
# points (NaN weights), each element's additions in the general kernels'
# order: point, tap (channels apart, two a pass in scatter_fused) -- the
# same additions in the same order, so the same bits.


@skeleton
def _fused_point(gxa, gxb, gva, gvb, off, wts, j, K, two):
    """Point ``j`` of a block planned with full tap offsets (``K`` rows), each tap inside
    with a weight that is a number: ``gxa[o] += gva w`` and, with ``two`` (a constant 1),
    ``gxb[o] += gvb w``."""
    for k in range(K):
        o = off[k, j]
        w = wts[k, j]
        if (o >= 0) & (w == w):
            gxa[np.uint64(o)] += gva * w  # unsigned: no wraparound test
            if two == 1:
                gxb[np.uint64(o)] += gvb * w


@skeleton
def scatter_fused(gxflat, xs_c, gflat, gs_c, gs_p, off, wts, nb, c0, c1, K):
    """Scatter channels ``c0 .. c1 - 1`` of a block planned with full tap offsets (K rows),
    two channels a pass (the last one of an odd count alone).

    Each tap's offset, weight and test serve both channels of a pass, and the two
    channels' additions are independent: on a smooth warp a point adds into elements its
    predecessor just stored (in 2-D linear all four in the same cell, or its first and
    third taps, the predecessor's second and fourth, one cell on along x), a read waiting
    on that store, and the other channel's additions fill the wait (docs/kernels.md, "The
    input gradient's scatter: two channels a pass").  Each element still takes its
    additions point by point, tap by tap: the same bits."""
    c = c0
    while c + 1 < c1:
        gxa, gxb = gxflat[c * xs_c:], gxflat[(c + 1) * xs_c:]
        ga, gb = gflat[c * gs_c:], gflat[(c + 1) * gs_c:]
        for j in range(nb):
            _fused_point(gxa, gxb, ga[j * gs_p], gb[j * gs_p], off, wts, j, K, 1)
        c += 2
    if c < c1:
        gxc, gc = gxflat[c * xs_c:], gflat[c * gs_c:]
        for j in range(nb):
            gv = gc[j * gs_p]
            _fused_point(gxc, gxc, gv, gv, off, wts, j, K, 0)


@skeleton
def scatter_cubic_2d(gxflat, xs_c, gflat, gs_c, gs_p, off, wts, nb, c0, c1, K):
    """Scatter a 2-D cubic block (per-axis rows): ``y`` outer, ``x`` inner, ``w = w_x w_y``.

    A point whose four ``x`` taps all lie inside ``X`` with finite weights (most
    points) tests each row once instead of each tap: ``w_x w_y`` is then NaN
    exactly where ``w_y`` is (cubic weights are bounded, never infinite), so the
    same taps are added, in the same order.
    """
    for c in range(c0, c1):
        gxc = gxflat[c * xs_c:]
        gc = gflat[c * gs_c:]
        for j in range(nb):
            gv = gc[j * gs_p]
            ox0, ox1, ox2, ox3 = off[0, j], off[1, j], off[2, j], off[3, j]
            wx0, wx1, wx2, wx3 = wts[0, j], wts[1, j], wts[2, j], wts[3, j]
            inside = (((ox0 | ox1 | ox2 | ox3) >= 0)
                      & (wx0 == wx0) & (wx1 == wx1) & (wx2 == wx2) & (wx3 == wx3))
            for ky in range(4):
                oy = off[4 + ky, j]
                wy = wts[4 + ky, j]
                if inside:
                    if (oy >= 0) & (wy == wy):
                        gxc[np.uint64(oy + ox0)] += gv * (wx0 * wy)  # unsigned: no
                        gxc[np.uint64(oy + ox1)] += gv * (wx1 * wy)  # wraparound test
                        gxc[np.uint64(oy + ox2)] += gv * (wx2 * wy)
                        gxc[np.uint64(oy + ox3)] += gv * (wx3 * wy)
                    continue
                for kx in range(4):
                    ox = off[kx, j]
                    w = wts[kx, j] * wy
                    if ((oy | ox) >= 0) & (w == w):
                        gxc[np.uint64(oy + ox)] += gv * w


@skeleton
def _scatter_3d(gxflat, xs_c, gflat, gs_c, gs_p, off, wts, nb, c0, c1, T):
    """Scatter a 3-D block planned per axis (``T`` rows each): ``z`` outer, ``x`` inner,
    ``w = (w_x w_y) w_z``; rows of a point whose ``x`` taps are all inside tested once."""
    for c in range(c0, c1):
        gxc = gxflat[c * xs_c:]
        gc = gflat[c * gs_c:]
        for j in range(nb):
            gv = gc[j * gs_p]
            inside = True  # every x tap inside X with a finite weight (as in 2-D cubic)
            for kx in range(T):
                inside &= (off[kx, j] >= 0) & (wts[kx, j] == wts[kx, j])
            for kz in range(T):
                oz = off[2 * T + kz, j]
                wz = wts[2 * T + kz, j]
                for ky in range(T):
                    oy = off[T + ky, j]
                    wy = wts[T + ky, j]
                    if inside:
                        if ((oz | oy) >= 0) & (wy == wy) & (wz == wz):
                            for kx in range(T):
                                gxc[np.uint64(oz + oy + off[kx, j])] += gv * (
                                    (wts[kx, j] * wy) * wz)  # unsigned: no wraparound test
                        continue
                    for kx in range(T):
                        ox = off[kx, j]
                        w = (wts[kx, j] * wy) * wz
                        if ((oz | oy | ox) >= 0) & (w == w):
                            gxc[np.uint64(oz + oy + ox)] += gv * w


@skeleton
def scatter_linear_3d(gxflat, xs_c, gflat, gs_c, gs_p, off, wts, nb, c0, c1, K):
    """Scatter a 3-D linear block (2 rows per axis)."""
    _scatter_3d(gxflat, xs_c, gflat, gs_c, gs_p, off, wts, nb, c0, c1, 2)


@skeleton
def scatter_cubic_3d(gxflat, xs_c, gflat, gs_c, gs_p, off, wts, nb, c0, c1, K):
    """Scatter a 3-D cubic block (4 rows per axis)."""
    _scatter_3d(gxflat, xs_c, gflat, gs_c, gs_p, off, wts, nb, c0, c1, 4)


@skeleton
def run_scatter_blocks(share, claims, gxflat, G, Q, xs_n, xs_c, sizes, strides, axc, kc, grid,
                       gflat, gs_n, gs_c, gs_p, gx_q, C, block, wconst, K, rank, plan, scatter):
    """``dL/dx`` for the tasks of ``N x G x Q`` (as the general backward) that share
    ``share`` claims (:mod:`gridsample._claims`; the caller's share then waits for the
    workers').

    Task ``(n, g, q)``: item ``n``, channels ``g*C//G .. (g+1)*C//G - 1``,
    points ``q*P//Q .. (q+1)*P//Q - 1`` in blocks, scattered into buffer
    ``q`` (``gx_q`` elements apart).  The same split and order as
    :func:`gridsample._grad_kernels.run_backward`.

    The buffers come uninitialized: each task first zeroes the part it scatters into (X
    is contiguous in its own layout, ``xs_n`` elements an item): channels ``c0 … c1 - 1``
    of item ``n`` (channel-first planes, ``xs_c`` elements each), or, as one group, the
    whole item (any layout).  Every part belongs to one task, and a part zeroed by the
    thread that then scatters into it is in that core's cache, not in the caller's, where
    zeroing the buffers before the call left it (docs/kernels.md, "Each task zeroes its own
    part of dL/dx").
    """
    P = grid.shape[1]
    gcoords = grid.reshape(grid.size)
    one, nanw = wconst[1], wconst[2]
    off = np.empty((K, block), np.int32)
    wts = np.empty((K, block), wconst.dtype)
    coords = np.empty(rank * block, grid.dtype)  # the planners' scratch
    zero = wconst[0]
    while True:
        task = claim_task(claims, share)
        if task < 0:
            break
        n = task // (G * Q)
        g = (task // Q) % G
        q = task % Q
        c0, c1 = g * C // G, (g + 1) * C // G
        ps, pe = q * P // Q, (q + 1) * P // Q
        gn = 0 if grid.shape[0] == 1 else n
        base = q * gx_q + n * xs_n
        part = gxflat[base:base + xs_n] if G == 1 else gxflat[base + c0 * xs_c:base + c1 * xs_c]
        part[:] = zero
        for p0 in range(ps, pe, block):
            nb = min(block, pe - p0)
            plan(gcoords[(gn * P + p0) * rank:], nb, axc, kc, sizes, strides, one, nanw, off,
                 wts, coords)
            scatter(gxflat[q * gx_q + n * xs_n:], xs_c, gflat[n * gs_n + p0 * gs_p:], gs_c,
                    gs_p, off, wts, nb, c0, c1, K)
    join_shares(claims, share)


@skeleton
def run_both_grad_blocks(share, claims, gxflat, gx_n, Q, xflat, xs_n, xs_c, sizes, strides, axc,
                         kc, dk, grid, gflat, gs_n, gs_c, gs_p, gx_q, ggrid, C, block, K, rank,
                         plan, sweep, scatter):
    """Both gradients of one channel from one plan per block: the tasks of ``N x Q`` that
    share ``share`` claims, task ``(n, q)`` the points ``q*P//Q .. (q+1)*P//Q - 1`` of item
    ``n`` (``G`` = 1: :func:`run_scatter_blocks`' split).

    Each block is planned by the grid gradient's planner, whose offset and weight rows are
    the forward planner's (2-D cubic: :func:`_plan_cubic_grad_axis`), summed into its rows
    of ``ggrid`` as :func:`run_grid_grad_blocks` does, then scattered into buffer ``q`` as
    :func:`run_scatter_blocks` does, each task zeroing its item's part of it first: the two
    passes' bits, with the plan made once (a third of a one-channel cubic warp's time).
    ``xs_n`` is X's item stride, ``gx_n`` the buffers' item size (X's own stride can be
    anything for a single item: NumPy calls ``img[None, None]`` contiguous with stride 0).
    The caller takes this only where X's item is small enough for it and dL/dx to share the
    caches (a random warp of a large X reads both at random)."""
    P = grid.shape[1]
    gcoords = grid.reshape(grid.size)
    zero = axc[0, 0] - axc[0, 0]
    off, wts, dws, chain, acc, coords = _grad_scratch(K, block, rank, axc, grid)
    while True:
        task = claim_task(claims, share)
        if task < 0:
            break
        n = task // Q
        q = task % Q
        ps, pe = q * P // Q, (q + 1) * P // Q
        gn = 0 if grid.shape[0] == 1 else n
        gx = gxflat[q * gx_q + n * gx_n:]
        gx[:gx_n] = zero
        for p0 in range(ps, pe, block):
            nb = min(block, pe - p0)
            go = gflat[n * gs_n + p0 * gs_p:]
            plan(gcoords[(gn * P + p0) * rank:], nb, axc, kc, dk, sizes, strides, off, wts, dws,
                 chain, coords)
            sweep(xflat[n * xs_n:], xs_c, go, gs_c, gs_p, off, wts, dws, nb, C, acc, zero)
            _store_rows(ggrid, n, p0, nb, rank, acc, chain)
            scatter(gx, xs_c, go, gs_c, gs_p, off, wts, nb, 0, C, K)
    join_shares(claims, share)
