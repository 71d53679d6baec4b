"""Compiled forward kernels.

Work is split into *blocks* of output points.  For each block a kernel first
*plans the taps*: for every point it computes the padded taps of each axis
(:func:`gridsample._taps.axis_taps`) and their tensor product, a short list of
``(flat input offset, weight)`` pairs with the taps outside ``X`` already
dropped.  It then *sweeps* the channels over that list:

* planar layout (channel-first, the channel stride is the largest): one
  channel at a time over all points of the block, so reads of one input plane
  stay close together and writes are contiguous;
* interleaved layout (channel-last, unit channel stride): one point at a
  time over all channels, so every tap reads ``C`` neighbouring values.

Both sweeps add the taps in the same order (innermost axis fastest, as
PyTorch's nw, ne, sw, se), so channel-first and channel-last results are
bit-identical.  The prange over ``N x blocks`` keeps every core busy even for
``N = 1``; each block works only on its own scratch and output slice, so the
result does not depend on the number of threads.
"""

from __future__ import annotations

import numpy as np

from ._jit import inline, kernel, prange
from ._taps import axis_taps

__all__ = ["sample_forward", "plan_block_taps", "WCONST_ZERO", "WCONST_ONE", "WCONST_NAN"]

# Layout of the weight-dtype constants array passed to the kernels.
WCONST_ZERO, WCONST_ONE, WCONST_NAN = 0, 1, 2


@inline
def plan_block_taps(grid, gn, p0, nb, mode, pad, axc, kc, sizes, strides, taps_total,
                    off, wts, cnt, ax_off, ax_w, ax_n, wconst):
    """Fill ``off``/``wts``/``cnt`` for points ``p0 … p0+nb-1`` of grid row ``gn``.

    Point ``j`` owns entries ``j*taps_total …``; ``cnt[j]`` of them are used.
    A NaN point gets one tap at offset 0 with weight NaN, so every sweep
    yields NaN for it without a branch.
    """
    r = grid.shape[2]
    for j in range(nb):
        base = j * taps_total
        nan_point = False
        for a in range(r):
            na = axis_taps(grid[gn, p0 + j, a], mode, pad, axc[a], kc, sizes[a], strides[a],
                           ax_off, ax_w, a * 4)
            if na < 0:
                nan_point = True
                break
            ax_n[a] = na
        if nan_point:
            off[base] = 0
            wts[base] = wconst[WCONST_NAN]
            cnt[j] = 1
            continue
        # Tensor product, axis by axis: the c existing combinations are
        # replicated for each tap t of the new axis (t descending, so the
        # in-place t = 0 copy comes last and no source is overwritten early).
        # Weights multiply as ((w_x * w_y) * w_z), PyTorch's order.
        c = 1
        off[base] = 0
        wts[base] = wconst[WCONST_ONE]
        for a in range(r):
            na = ax_n[a]
            if na == 0:
                c = 0
                break
            for t in range(na - 1, -1, -1):
                ao = ax_off[a * 4 + t]
                aw = ax_w[a * 4 + t]
                dst = base + t * c
                for e in range(c):
                    off[dst + e] = off[base + e] + ao
                    wts[dst + e] = wts[base + e] * aw
            c *= na
        cnt[j] = c


@inline
def _sweep_planar(xflat, xbase, xs_c, off, wts, cnt, nb, taps_total, out3, n, p0, wconst):
    C = out3.shape[1]
    for c in range(C):
        cbase = xbase + c * xs_c
        for j in range(nb):
            acc = wconst[WCONST_ZERO]
            o = j * taps_total
            for k in range(cnt[j]):
                acc += wts[o + k] * xflat[cbase + off[o + k]]
            out3[n, c, p0 + j] = acc


@inline
def _sweep_interleaved(xflat, xbase, xs_c, off, wts, cnt, nb, taps_total, out3, n, p0, acc):
    C = out3.shape[1]
    for j in range(nb):
        acc[:] = 0
        o = j * taps_total
        for k in range(cnt[j]):
            w = wts[o + k]
            b = xbase + off[o + k]
            for c in range(C):
                acc[c] += w * xflat[b + c * xs_c]
        for c in range(C):
            out3[n, c, p0 + j] = acc[c]


@kernel
def sample_forward(xflat, xs_n, xs_c, sizes, strides, axc, kc, grid, out3,
                   mode, pad, taps, block, interleaved, wconst):
    """Forward GridSample over any rank.

    Parameters
    ----------
    xflat : ndarray, shape (M,)
        Flat view of the input's memory; element ``(n, c, i_1 … i_r)`` lives at
        ``n*xs_n + c*xs_c + sum(i_a * stride_a)``.
    sizes, strides : int64 arrays, shape (r,)
        Input length and element stride of each axis, in *grid order*
        (entry 0 is the innermost spatial axis, which ``grid[..., 0]`` indexes).
    axc : ndarray, shape (r, AXIS_FIELDS); kc : ndarray, shape (CUBIC_FIELDS,)
        Per-axis and cubic constants in the coordinate dtype.
    grid : ndarray, shape (Ng, P, r)
        Normalized coordinates; ``Ng`` is N or 1 (broadcast).
    out3 : ndarray, shape (N, C, P)
        Output, any strides.
    taps : int
        Taps per axis (1 nearest, 2 linear, 4 cubic).
    interleaved : bool
        Sweep channels innermost (channel-last memory).
    wconst : ndarray, shape (3,)
        0, 1 and NaN in the weight dtype.
    """
    N = out3.shape[0]
    C = out3.shape[1]
    P = out3.shape[2]
    r = grid.shape[2]
    taps_total = 1
    for _ in range(r):
        taps_total *= taps
    nblk = (P + block - 1) // block
    broadcast = grid.shape[0] == 1
    for task in prange(N * nblk):
        n = task // nblk
        p0 = (task - n * nblk) * block
        nb = min(block, P - p0)
        gn = 0 if broadcast else n
        off = np.empty(nb * taps_total, np.int64)
        wts = np.empty(nb * taps_total, wconst.dtype)
        cnt = np.empty(nb, np.int64)
        ax_off = np.empty(r * 4, np.int64)
        ax_w = np.empty(r * 4, wconst.dtype)
        ax_n = np.empty(r, np.int64)
        plan_block_taps(grid, gn, p0, nb, mode, pad, axc, kc, sizes, strides, taps_total,
                        off, wts, cnt, ax_off, ax_w, ax_n, wconst)
        xbase = n * xs_n
        if interleaved:
            acc = np.empty(C, wconst.dtype)
            _sweep_interleaved(xflat, xbase, xs_c, off, wts, cnt, nb, taps_total, out3, n, p0, acc)
        else:
            _sweep_planar(xflat, xbase, xs_c, off, wts, cnt, nb, taps_total, out3, n, p0, wconst)
