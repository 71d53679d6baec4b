"""Tap planners: fill a block's ``(offset, weight)`` lists from the grid.

:func:`plan_point` is the general planner for any rank and mode: per-axis
taps (:func:`gridsample._taps.axis_taps`), then their tensor product.  The
rank-specialised planners compute the same lists with the per-axis helpers
in registers: a straight-line path for a point whose taps all lie inside
``X``, and short inline paths for a NaN point and for a point near or past
an edge under zeros padding (only its taps inside ``X`` are listed).  Each
fast planner lists the same taps in the same order as the general one, with the same weights
bit for bit: every planner forms a point's weights in the wider of the weight and coordinate
dtypes (a float64 grid's per-axis weights stay float64 for float32 ``x``) and rounds their
product to the weight dtype once.  The tests compare them against the NumPy reference and
against each other.

All planners share one signature (some arguments are used by
:func:`plan_general` only), so the kernels can call them alike.  Each axis
is padded by its own code (``AXIS_PAD`` of its constants row); the ``pad``
argument is not read.

Point ``j`` of a block owns entries ``j*K … j*K + K - 1`` of ``off`` and
``wts``; ``cnt[j]`` of them are used.  Taps are listed innermost axis
fastest (PyTorch's nw, ne, sw, se order) and weights multiply as
``(w_x * w_y) * w_z``.
"""

from __future__ import annotations

from ._jit import function, skeleton
from ._registry import MAX_AXIS_TAPS
from ._taps import (
    AXIS_PAD,
    axis_pad,
    axis_row,
    axis_taps,
    cubic_axis,
    cubic_row,
    linear_axis,
    nearest_axis,
)

__all__ = ["plan_point", "plan_linear_2d", "plan_nearest_2d", "plan_cubic_2d", "plan_linear_3d",
           "plan_nearest_3d", "plan_general", "WCONST_ZERO", "WCONST_ONE",
           "WCONST_NAN"]

# Layout of the weight-dtype constants array passed to the kernels.
WCONST_ZERO, WCONST_ONE, WCONST_NAN = 0, 1, 2




@function
def plan_point(grid, gn, p, j, K, mode, pad, axc, kc, sizes, strides,
               off, wts, cnt, ax_off, ax_w, ax_n, wconst):
    """General planner: taps of output point ``p`` into slot ``j``, any rank.

    A NaN point gets one tap at offset 0 with weight NaN, so every sweep
    yields NaN for it without a branch.  ``ax_off``/``ax_w``/``ax_n`` are
    scratch of length ``MAX_AXIS_TAPS r``, ``MAX_AXIS_TAPS r + K`` and ``r``;
    ``ax_w``, in the wider of the weight and coordinate dtypes, holds the
    per-axis weights and after them the point's products, which are rounded
    to the weight dtype once (as the fast planners' products are).
    """
    r = grid.shape[2]
    base = j * K
    prods = r * MAX_AXIS_TAPS  # ax_w[prods + e]: the product of combination e
    for a in range(r):
        na = axis_taps(grid[gn, p, a], mode, int(axc[a, AXIS_PAD]), axc[a], kc, sizes[a],
                       strides[a], ax_off, ax_w, a * MAX_AXIS_TAPS)
        if na < 0:
            off[base] = 0
            wts[base] = wconst[WCONST_NAN]
            cnt[j] = 1
            return
        ax_n[a] = na
    # Tensor product, axis by axis: the c existing combinations are
    # replicated for each tap t of the new axis (t descending, so the
    # in-place t = 0 copy comes last and no source is overwritten early).
    c = 1
    off[base] = 0
    ax_w[prods] = 1
    for a in range(r):
        na = ax_n[a]
        if na == 0:
            c = 0
            break
        for t in range(na - 1, -1, -1):
            ao = ax_off[a * MAX_AXIS_TAPS + t]
            aw = ax_w[a * MAX_AXIS_TAPS + t]
            for e in range(c):
                off[base + t * c + e] = off[base + e] + ao
                ax_w[prods + t * c + e] = ax_w[prods + e] * aw
        c *= na
    for e in range(c):
        wts[base + e] = ax_w[prods + e]
    cnt[j] = c


@skeleton
def _nan_point(off, wts, cnt, j, o, wconst):
    """Slot ``j`` (entries from ``o``) gets one tap of weight NaN: the point reads NaN."""
    off[o] = 0
    wts[o] = wconst[WCONST_NAN]
    cnt[j] = 1


@skeleton
def _edge_taps_2d(off, wts, o, b, xo, yo, wx, wy, okx, oky):
    """List the taps of a 2-D point that lie inside ``X``; return their number.

    ``xo``/``yo`` are the per-tap offsets of each axis relative to ``b``,
    ``wx``/``wy`` their weights and ``okx``/``oky`` whether each tap is
    inside.  Same order (x fastest) and products as :func:`plan_point`.
    """
    c = 0
    for ky in range(len(yo)):
        if oky[ky]:
            for kx in range(len(xo)):
                if okx[kx]:
                    off[o + c] = b + yo[ky] + xo[kx]
                    wts[o + c] = wx[kx] * wy[ky]
                    c += 1
    return c


@function
def plan_linear_2d(grid, gn, p0, nb, K, mode, pad, axc, kc, sizes, strides, off, wts, cnt,
                    ax_off, ax_w, ax_n, wconst):
    gg = grid[gn, p0:p0 + nb]  # one view per block (see axis_row)
    ax0, ax1 = axis_row(axc, 0), axis_row(axc, 1)
    pad0, pad1 = axis_pad(ax0), axis_pad(ax1)
    one = kc[0]
    sx, sy = strides[0], strides[1]
    for j in range(nb):
        ix, ix1, wx0, wx1, okx0, okx1, nanx = linear_axis(gg[j, 0], pad0, ax0, one, sizes[0])
        iy, iy1, wy0, wy1, oky0, oky1, nany = linear_axis(gg[j, 1], pad1, ax1, one, sizes[1])
        o = 4 * j
        x0, x1, y0, y1 = ix * sx, ix1 * sx, iy * sy, iy1 * sy
        if okx0 and okx1 and oky0 and oky1:
            off[o] = y0 + x0
            off[o + 1] = y0 + x1
            off[o + 2] = y1 + x0
            off[o + 3] = y1 + x1
            wts[o] = wx0 * wy0
            wts[o + 1] = wx1 * wy0
            wts[o + 2] = wx0 * wy1
            wts[o + 3] = wx1 * wy1
            cnt[j] = 4
        elif nanx or nany:
            _nan_point(off, wts, cnt, j, o, wconst)
        else:  # near or past an edge under zeros padding
            cnt[j] = _edge_taps_2d(off, wts, o, 0, (x0, x1), (y0, y1), (wx0, wx1), (wy0, wy1),
                                   (okx0, okx1), (oky0, oky1))


@function
def plan_nearest_2d(grid, gn, p0, nb, K, mode, pad, axc, kc, sizes, strides, off, wts, cnt,
                     ax_off, ax_w, ax_n, wconst):
    gg = grid[gn, p0:p0 + nb]  # one view per block (see axis_row)
    ax0, ax1 = axis_row(axc, 0), axis_row(axc, 1)
    pad0, pad1 = axis_pad(ax0), axis_pad(ax1)
    for j in range(nb):
        ix, okx, nanx = nearest_axis(gg[j, 0], pad0, ax0, sizes[0])
        iy, oky, nany = nearest_axis(gg[j, 1], pad1, ax1, sizes[1])
        if nanx or nany:
            _nan_point(off, wts, cnt, j, j, wconst)
        elif okx and oky:
            off[j] = iy * strides[1] + ix * strides[0]
            wts[j] = wconst[WCONST_ONE]
            cnt[j] = 1
        else:
            off[j] = 0  # a valid index: the nearest sweep reads it without a branch
            cnt[j] = 0


@function
def plan_cubic_2d(grid, gn, p0, nb, K, mode, pad, axc, kc, sizes, strides, off, wts, cnt,
                   ax_off, ax_w, ax_n, wconst):
    gg = grid[gn, p0:p0 + nb]  # one view per block (see axis_row)
    ax0, ax1 = axis_row(axc, 0), axis_row(axc, 1)
    pad0, pad1 = axis_pad(ax0), axis_pad(ax1)
    kt = cubic_row(kc)
    sx, sy = strides[0], strides[1]
    for j in range(nb):
        (x0, x1, x2, x3, wx0, wx1, wx2, wx3, okx0, okx1, okx2, okx3,
         nanx) = cubic_axis(gg[j, 0], pad0, ax0, kt, sizes[0])
        (y0, y1, y2, y3, wy0, wy1, wy2, wy3, oky0, oky1, oky2, oky3,
         nany) = cubic_axis(gg[j, 1], pad1, ax1, kt, sizes[1])
        xo = (x0 * sx, x1 * sx, x2 * sx, x3 * sx)
        yo = (y0 * sy, y1 * sy, y2 * sy, y3 * sy)
        wx = (wx0, wx1, wx2, wx3)
        wy = (wy0, wy1, wy2, wy3)
        o = 16 * j
        if okx0 and okx1 and okx2 and okx3 and oky0 and oky1 and oky2 and oky3:
            for ky in range(4):
                for kx in range(4):
                    off[o + 4 * ky + kx] = yo[ky] + xo[kx]
                    wts[o + 4 * ky + kx] = wx[kx] * wy[ky]
            cnt[j] = 16
        elif nanx or nany:
            _nan_point(off, wts, cnt, j, o, wconst)
        else:  # near or past an edge under zeros padding, or infinitely far out
            cnt[j] = _edge_taps_2d(off, wts, o, 0, xo, yo, wx, wy,
                                   (okx0, okx1, okx2, okx3), (oky0, oky1, oky2, oky3))


@function
def plan_linear_3d(grid, gn, p0, nb, K, mode, pad, axc, kc, sizes, strides, off, wts, cnt,
                    ax_off, ax_w, ax_n, wconst):
    gg = grid[gn, p0:p0 + nb]  # one view per block (see axis_row)
    ax0, ax1, ax2 = axis_row(axc, 0), axis_row(axc, 1), axis_row(axc, 2)
    pad0, pad1, pad2 = axis_pad(ax0), axis_pad(ax1), axis_pad(ax2)
    one = kc[0]
    sx, sy, sz = strides[0], strides[1], strides[2]
    for j in range(nb):
        ix, ix1, wx0, wx1, okx0, okx1, nanx = linear_axis(gg[j, 0], pad0, ax0, one, sizes[0])
        iy, iy1, wy0, wy1, oky0, oky1, nany = linear_axis(gg[j, 1], pad1, ax1, one, sizes[1])
        iz, iz1, wz0, wz1, okz0, okz1, nanz = linear_axis(gg[j, 2], pad2, ax2, one, sizes[2])
        o = 8 * j
        xs = (ix * sx, ix1 * sx)
        ys = (iy * sy, iy1 * sy)
        zs = (iz * sz, iz1 * sz)
        if okx0 and okx1 and oky0 and oky1 and okz0 and okz1:
            off[o] = zs[0] + ys[0] + xs[0]
            off[o + 1] = zs[0] + ys[0] + xs[1]
            off[o + 2] = zs[0] + ys[1] + xs[0]
            off[o + 3] = zs[0] + ys[1] + xs[1]
            off[o + 4] = zs[1] + ys[0] + xs[0]
            off[o + 5] = zs[1] + ys[0] + xs[1]
            off[o + 6] = zs[1] + ys[1] + xs[0]
            off[o + 7] = zs[1] + ys[1] + xs[1]
            w00 = wx0 * wy0
            w01 = wx1 * wy0
            w10 = wx0 * wy1
            w11 = wx1 * wy1
            wts[o] = w00 * wz0
            wts[o + 1] = w01 * wz0
            wts[o + 2] = w10 * wz0
            wts[o + 3] = w11 * wz0
            wts[o + 4] = w00 * wz1
            wts[o + 5] = w01 * wz1
            wts[o + 6] = w10 * wz1
            wts[o + 7] = w11 * wz1
            cnt[j] = 8
        elif nanx or nany or nanz:
            _nan_point(off, wts, cnt, j, o, wconst)
        else:  # near or past an edge under zeros padding: taps inside X only
            c = 0
            for kz in range(2):
                if (okz0, okz1)[kz]:
                    for ky in range(2):
                        if (oky0, oky1)[ky]:
                            for kx in range(2):
                                if (okx0, okx1)[kx]:
                                    off[o + c] = zs[kz] + ys[ky] + xs[kx]
                                    # (w_x * w_y) * w_z, as plan_point multiplies
                                    wts[o + c] = ((wx0, wx1)[kx] * (wy0, wy1)[ky]) * (wz0, wz1)[kz]
                                    c += 1
            cnt[j] = c


@function
def plan_nearest_3d(grid, gn, p0, nb, K, mode, pad, axc, kc, sizes, strides, off, wts, cnt,
                     ax_off, ax_w, ax_n, wconst):
    gg = grid[gn, p0:p0 + nb]  # one view per block (see axis_row)
    ax0, ax1, ax2 = axis_row(axc, 0), axis_row(axc, 1), axis_row(axc, 2)
    pad0, pad1, pad2 = axis_pad(ax0), axis_pad(ax1), axis_pad(ax2)
    for j in range(nb):
        ix, okx, nanx = nearest_axis(gg[j, 0], pad0, ax0, sizes[0])
        iy, oky, nany = nearest_axis(gg[j, 1], pad1, ax1, sizes[1])
        iz, okz, nanz = nearest_axis(gg[j, 2], pad2, ax2, sizes[2])
        if nanx or nany or nanz:
            _nan_point(off, wts, cnt, j, j, wconst)
        elif okx and oky and okz:
            off[j] = iz * strides[2] + iy * strides[1] + ix * strides[0]
            wts[j] = wconst[WCONST_ONE]
            cnt[j] = 1
        else:
            off[j] = 0  # a valid index: the nearest sweep reads it without a branch
            cnt[j] = 0


@function
def plan_general(grid, gn, p0, nb, K, mode, pad, axc, kc, sizes, strides, off, wts, cnt,
                 ax_off, ax_w, ax_n, wconst):
    """Plan a block with the general planner (any rank and mode)."""
    for j in range(nb):
        plan_point(grid, gn, p0 + j, j, K, mode, pad, axc, kc, sizes, strides,
                   off, wts, cnt, ax_off, ax_w, ax_n, wconst)
