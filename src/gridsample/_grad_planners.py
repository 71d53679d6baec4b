"""Backward tap planners: a block's taps, weights and weight slopes.

Like the forward planners (:mod:`gridsample._planners`), with one more
output: for tap ``t`` of point ``j`` and axis ``a``, the slope
``D = dw_a * prod_{b != a} w_b`` at ``dws[(j*K + t)*r + a]`` (only when the
grid gradient is wanted), and the chain factors ``chain[j*r + a]``
(:mod:`gridsample._grad_taps`).  ``cnt[j]`` is the number of taps, -1 for a
NaN point.

:func:`plan_grad_general` handles any rank and mode: per-axis taps into
small arrays, then their tensor product.  The 2-D and 3-D planners keep a
point's taps in registers (tuples) and write the product directly, with
tap loops of constant length per mode; they list the same taps in the same
order with the same products as the general one, so results do not depend
on which planner ran (the tests check this bit for bit).

Every block planner is compiled as its own function (once per precision);
each backward entry of :mod:`gridsample._grad_kernels` calls one per block.  Two
measured rules shape the code: an array passed into an inlined helper, or
a view made, *per point* costs two atomic reference-count updates (the
planners take one view of the block's grid rows instead); and indexing
``grid[gn, p0 + j]`` was 4x slower than indexing that view with ``j``.
"""

from __future__ import annotations

import math

from ._grad_taps import grad_axis_taps, grad_cubic_taps, grad_linear_taps, grad_nearest_taps
from ._jit import function, skeleton
from ._registry import MAX_AXIS_TAPS, MODE_SPLINE_FIRST, MODE_SPLINE_LAST
from ._taps import AXIS_MUL, AXIS_SCALE, axis_pad, axis_row, spline_taps, unnormalize

__all__ = ["plan_grad_general", "plan_grad_2d_linear", "plan_grad_2d_nearest", "plan_grad_2d_cubic",
           "plan_grad_3d_linear", "plan_grad_3d_nearest"]


@function
def plan_grad_general(grid, gn, p0, nb, K, mode, pad, axc, kc, dk, sizes, strides, off, wts,
                      dws, cnt, chain, ax_off, ax_w, ax_dw, ax_n, want_slopes):
    """General planner: points ``p0 .. p0 + nb - 1`` of grid item ``gn``, any rank and mode.

    Per point: each axis's taps (those inside ``X``) into ``ax_*``, then
    their tensor product.
    """
    r = grid.shape[2]
    one = kc[0]
    gg = grid[gn, p0:p0 + nb]
    for j in range(nb):
        base = j * K
        nan = False
        for a in range(r):
            ax = axis_row(axc, a)
            if mode >= MODE_SPLINE_FIRST:  # B-splines of other degrees than 3: up to 8 taps
                n = spline_taps(gg[j, a], mode - 1, axis_pad(ax), ax, one, sizes[a], strides[a],
                                ax_off, ax_w, ax_dw, a * MAX_AXIS_TAPS, False, True)
                if n < 0 or mode > MODE_SPLINE_LAST:
                    nan = True
                    break
                scale = ax[AXIS_MUL] * ax[AXIS_SCALE]
                far = math.isinf(unnormalize(gg[j, a], ax))  # locally constant: slope 0
                chain[j * r + a] = scale - scale if far else scale
                ax_n[a] = n
                continue
            nan_a, ch, idx, w, dw, ok = grad_axis_taps(gg[j, a], mode, axis_pad(ax), ax,
                                                       kc, dk, sizes[a])
            if nan_a:
                nan = True
                break
            chain[j * r + a] = ch
            n = 0
            for k in range(4):
                if ok[k]:
                    ax_off[a * MAX_AXIS_TAPS + n] = idx[k] * strides[a]
                    ax_w[a * MAX_AXIS_TAPS + n] = w[k]
                    ax_dw[a * MAX_AXIS_TAPS + n] = dw[k]
                    n += 1
            ax_n[a] = n
        if nan:
            cnt[j] = -1
            continue
        # Tensor product, axis by axis (as gridsample._planners.plan_point):
        # combination e of the axes so far is replicated for each tap t of
        # axis a; t descends so the in-place t = 0 copy comes last.  For the
        # slopes, D of an earlier axis b picks up the factor w_a, and D of
        # axis a is the product so far times dw_a.
        c = 1
        off[base] = 0
        wts[base] = one
        for a in range(r):
            na = ax_n[a]
            if na == 0:
                c = 0
                break
            for t in range(na - 1, -1, -1):
                ao = ax_off[a * MAX_AXIS_TAPS + t]
                aw = ax_w[a * MAX_AXIS_TAPS + t]
                adw = ax_dw[a * MAX_AXIS_TAPS + t]
                dst = base + t * c
                for e in range(c):
                    src = base + e
                    if want_slopes:
                        for b in range(a):
                            dws[(dst + e) * r + b] = dws[src * r + b] * aw
                        dws[(dst + e) * r + a] = wts[src] * adw
                    off[dst + e] = off[src] + ao
                    wts[dst + e] = wts[src] * aw
            c *= na
        cnt[j] = c


@skeleton
def _plan_2d(grid, gn, p0, nb, K, pad, axc, kc, dk, sizes, strides, off, wts, dws, cnt,
             chain, want_slopes, n, axis_taps):
    """2-D block body; ``n`` (1, 2 or 4 taps per axis) and ``axis_taps`` come from the caller.

    Taps x fastest, ``W = w_x * w_y``, ``D_x = dw_x * w_y``, ``D_y = w_x * dw_y``:
    the general planner's products (there ``1 * w`` is exact).
    """
    ax0, ax1 = axis_row(axc, 0), axis_row(axc, 1)
    pad0, pad1 = axis_pad(ax0), axis_pad(ax1)
    sx, sy = strides[0], strides[1]
    gg = grid[gn, p0:p0 + nb]  # a view per block: p0 + j indexing is 4x slower (measured)
    for j in range(nb):
        nanx, cx, ix, wx, dx, okx = axis_taps(gg[j, 0], pad0, ax0, kc, dk, sizes[0])
        nany, cy, iy, wy, dy, oky = axis_taps(gg[j, 1], pad1, ax1, kc, dk, sizes[1])
        if nanx or nany:
            cnt[j] = -1
            continue
        o = j * K
        c = 0
        for ky in range(n):
            if oky[ky]:
                for kx in range(n):
                    if okx[kx]:
                        t = o + c
                        off[t] = iy[ky] * sy + ix[kx] * sx
                        wts[t] = wx[kx] * wy[ky]
                        if want_slopes:
                            dws[2 * t] = dx[kx] * wy[ky]
                            dws[2 * t + 1] = wx[kx] * dy[ky]
                        c += 1
        cnt[j] = c
        if want_slopes:
            chain[2 * j] = cx
            chain[2 * j + 1] = cy


@skeleton
def _plan_3d(grid, gn, p0, nb, K, pad, axc, kc, dk, sizes, strides, off, wts, dws, cnt,
             chain, want_slopes, n, axis_taps):
    """3-D block body: taps x fastest, products ``(w_x * w_y) * w_z`` as the general planner."""
    ax0, ax1, ax2 = axis_row(axc, 0), axis_row(axc, 1), axis_row(axc, 2)
    pad0, pad1, pad2 = axis_pad(ax0), axis_pad(ax1), axis_pad(ax2)
    sx, sy, sz = strides[0], strides[1], strides[2]
    gg = grid[gn, p0:p0 + nb]
    for j in range(nb):
        nanx, cx, ix, wx, dx, okx = axis_taps(gg[j, 0], pad0, ax0, kc, dk, sizes[0])
        nany, cy, iy, wy, dy, oky = axis_taps(gg[j, 1], pad1, ax1, kc, dk, sizes[1])
        nanz, cz, iz, wz, dz, okz = axis_taps(gg[j, 2], pad2, ax2, kc, dk, sizes[2])
        if nanx or nany or nanz:
            cnt[j] = -1
            continue
        o = j * K
        c = 0
        for kz in range(n):
            if okz[kz]:
                for ky in range(n):
                    if oky[ky]:
                        for kx in range(n):
                            if okx[kx]:
                                t = o + c
                                off[t] = iz[kz] * sz + iy[ky] * sy + ix[kx] * sx
                                wxy = wx[kx] * wy[ky]
                                wts[t] = wxy * wz[kz]
                                if want_slopes:
                                    dws[3 * t] = (dx[kx] * wy[ky]) * wz[kz]
                                    dws[3 * t + 1] = (wx[kx] * dy[ky]) * wz[kz]
                                    dws[3 * t + 2] = wxy * dz[kz]
                                c += 1
        cnt[j] = c
        if want_slopes:
            chain[3 * j] = cx
            chain[3 * j + 1] = cy
            chain[3 * j + 2] = cz


# One planner per (rank, mode): a call compiles its own mode's math only.
# They share the general planner's signature (the engine calls either).

@function
def plan_grad_2d_linear(grid, gn, p0, nb, K, mode, pad, axc, kc, dk, sizes, strides, off, wts,
                        dws, cnt, chain, ax_off, ax_w, ax_dw, ax_n, want_slopes):
    _plan_2d(grid, gn, p0, nb, K, pad, axc, kc, dk, sizes, strides, off, wts, dws, cnt, chain,
             want_slopes, 2, grad_linear_taps)


@function
def plan_grad_2d_nearest(grid, gn, p0, nb, K, mode, pad, axc, kc, dk, sizes, strides, off, wts,
                         dws, cnt, chain, ax_off, ax_w, ax_dw, ax_n, want_slopes):
    _plan_2d(grid, gn, p0, nb, K, pad, axc, kc, dk, sizes, strides, off, wts, dws, cnt, chain,
             want_slopes, 1, grad_nearest_taps)


@function
def plan_grad_2d_cubic(grid, gn, p0, nb, K, mode, pad, axc, kc, dk, sizes, strides, off, wts,
                       dws, cnt, chain, ax_off, ax_w, ax_dw, ax_n, want_slopes):
    _plan_2d(grid, gn, p0, nb, K, pad, axc, kc, dk, sizes, strides, off, wts, dws, cnt, chain,
             want_slopes, 4, grad_cubic_taps)


@function
def plan_grad_3d_linear(grid, gn, p0, nb, K, mode, pad, axc, kc, dk, sizes, strides, off, wts,
                        dws, cnt, chain, ax_off, ax_w, ax_dw, ax_n, want_slopes):
    _plan_3d(grid, gn, p0, nb, K, pad, axc, kc, dk, sizes, strides, off, wts, dws, cnt, chain,
             want_slopes, 2, grad_linear_taps)


@function
def plan_grad_3d_nearest(grid, gn, p0, nb, K, mode, pad, axc, kc, dk, sizes, strides, off, wts,
                         dws, cnt, chain, ax_off, ax_w, ax_dw, ax_n, want_slopes):
    _plan_3d(grid, gn, p0, nb, K, pad, axc, kc, dk, sizes, strides, off, wts, dws, cnt, chain,
             want_slopes, 1, grad_nearest_taps)
