"""Backward kernels: the gradients of GridSample w.r.t. the input and the grid.

For output point ``p`` with taps ``o`` (flat input offsets) and weights
``W_o = prod_a w_a``, the forward is ``y[c, p] = sum_o W_o x[c, o]``.  With
``G = dL/dy``:

* ``dL/dx[c, o] = sum_p G[c, p] W_o(p)`` -- a scatter-add (the adjoint);
* ``dL/dg[p, a] = chain_a(p) * sum_o D_{o,a} V_o`` with
  ``V_o = sum_c G[c, p] x[c, o]`` and ``D_{o,a} = dw_a * prod_{b != a} w_b``
  (the product rule over the tensor-product weights; ``chain_a = dx_a/dg_a``,
  :mod:`gridsample._grad_taps`).

Both passes plan blocks of points like the forward (a list of taps per
point, taps outside ``X`` dropped), then sweep the channels.

Determinism: every gradient element is accumulated by exactly one task, in
an order fixed by the data alone.  The grid pass gives each point to one
task (summing over the batch inside the task when the grid is broadcast);
the input pass gives each task whole channels of one batch item and walks
all points of the item in order.  So the result is bit-identical at any
thread count and any block size -- no atomics, no racy scatter.

Both entries are plain compiled functions run on the thread pool
(:mod:`gridsample._threads`): quick to compile, ``noalias`` arrays.
"""

from __future__ import annotations

import numpy as np

from ._grad_planners import plan_grad_block
from ._jit import function, inline

__all__ = ["task_grad_grid", "task_grad_x"]


@inline
def _scratch(block, K, r, like):
    off = np.empty(block * K, np.int64)
    wts = np.empty(block * K, like.dtype)
    cnt = np.empty(block, np.int64)
    chain = np.empty(block * r, like.dtype)
    ax_off = np.empty(4 * r, np.int64)
    ax_w = np.empty(4 * r, like.dtype)
    ax_dw = np.empty(4 * r, like.dtype)
    ax_n = np.empty(r, np.int64)
    return off, wts, cnt, chain, ax_off, ax_w, ax_dw, ax_n


@inline
def _constants(kc, dk):
    """Keys' constants and slopes as tuples (scalars travel into helpers without refcounts)."""
    return ((kc[0], kc[1], kc[2], kc[3], kc[4], kc[5], kc[6]),
            (dk[0], dk[1], dk[2], dk[3], dk[4]))


@function
def task_grad_grid(first, stop, xflat, xs_n, xs_c, sizes, strides, axc, kc, dk, grid, gflat,
                   gs_n, gs_c, gs_p, ggrid, N, C, K, mode, pad, block, interleaved, planner):
    """Grid gradient of blocks ``first .. stop - 1`` (``Ng x blocks`` tasks).

    Parameters
    ----------
    xflat : ndarray, shape (M,)
        Flat input (element ``(n, c, i...)`` at ``n*xs_n + c*xs_c + sum i*stride``).
    grid : ndarray, shape (Ng, P, r)
        Normalized coordinates; ``Ng`` is N or 1 (a broadcast grid: its
        gradient sums over the batch, inside the task, in batch order).
    gflat : ndarray
        Flat ``dL/dy``, element ``(n, c, p)`` at ``n*gs_n + c*gs_c + p*gs_p``.
    ggrid : ndarray, shape (Ng, P, r)
        Output, written for every point of the tasks' blocks.
    planner : int
        Block planner (``PLANNER_*`` of :mod:`gridsample._grad_planners`).
    """
    r = grid.shape[2]
    P = grid.shape[1]
    Ng = grid.shape[0]
    kct, dkt = _constants(kc, dk)
    nblk = (P + block - 1) // block
    off, wts, cnt, chain, ax_off, ax_w, ax_dw, ax_n = _scratch(block, K, r, kc)
    dws = np.empty(block * K * r, kc.dtype)
    vals = np.empty(block * K, kc.dtype)
    zero = kc[0] - kc[0]
    for task in range(first, stop):
        gn = task // nblk
        p0 = (task - gn * nblk) * block
        nb = min(block, P - p0)
        plan_grad_block(planner, grid, gn, p0, nb, K, mode, pad, axc, kct, dkt, sizes, strides,
                        off, wts, dws, cnt, chain, ax_off, ax_w, ax_dw, ax_n, True)
        for i in range(nb * K):
            vals[i] = zero
        n_first, n_stop = (0, N) if Ng == 1 else (gn, gn + 1)
        for n in range(n_first, n_stop):
            xb = n * xs_n
            gb = n * gs_n + p0 * gs_p
            if interleaved:
                # Channel-last: V_o = sum_c G[c] x[c, o], channels innermost.
                for j in range(nb):
                    gj = gb + j * gs_p
                    for t in range(max(cnt[j], 0)):
                        xt = xb + off[j * K + t]
                        acc = zero
                        for c in range(C):
                            acc += gflat[gj + c * gs_c] * xflat[xt + c * xs_c]
                        vals[j * K + t] += acc
            else:
                for c in range(C):
                    xc = xflat[xb + c * xs_c:]
                    gc = gflat[gb + c * gs_c:]
                    for j in range(nb):
                        gv = gc[j * gs_p]
                        o = j * K
                        for t in range(cnt[j]):
                            vals[o + t] += gv * xc[off[o + t]]
        for j in range(nb):
            m = cnt[j]
            for a in range(r):
                if m < 0:  # a NaN point (rule 7): its gradient is NaN too
                    ggrid[gn, p0 + j, a] = zero + np.nan
                    continue
                s = zero
                for t in range(m):
                    s += vals[j * K + t] * dws[(j * K + t) * r + a]
                ggrid[gn, p0 + j, a] = s * chain[j * r + a]


@function
def task_grad_x(first, stop, groups, gxflat, xs_n, xs_c, sizes, strides, axc, kc, dk, grid,
                gflat, gs_n, gs_c, gs_p, N, C, K, mode, pad, block, interleaved, planner):
    """Input gradient of tasks ``first .. stop - 1`` (``N x groups`` tasks).

    Task ``(n, q)`` owns channels ``[q*C//groups, (q+1)*C//groups)`` of
    batch item ``n`` and scatters ``G[c, p] * W_o`` into ``gxflat`` (laid
    out like ``x``, strides ``xs_*``) for every point ``p`` in order, so no
    two tasks write the same element.
    """
    r = grid.shape[2]
    P = grid.shape[1]
    Ng = grid.shape[0]
    kct, dkt = _constants(kc, dk)
    off, wts, cnt, chain, ax_off, ax_w, ax_dw, ax_n = _scratch(block, K, r, kc)
    dws = np.empty(1, kc.dtype)
    for task in range(first, stop):
        n = task // groups
        q = task - n * groups
        c0 = q * C // groups
        c1 = (q + 1) * C // groups
        gn = 0 if Ng == 1 else n
        xb = n * xs_n
        for p0 in range(0, P, block):
            nb = min(block, P - p0)
            plan_grad_block(planner, grid, gn, p0, nb, K, mode, pad, axc, kct, dkt, sizes,
                            strides, off, wts, dws, cnt, chain, ax_off, ax_w, ax_dw, ax_n, False)
            gb = n * gs_n + p0 * gs_p
            if interleaved:
                for j in range(nb):
                    gj = gb + j * gs_p
                    for t in range(max(cnt[j], 0)):
                        w = wts[j * K + t]
                        xt = xb + off[j * K + t]
                        for c in range(c0, c1):
                            gxflat[xt + c * xs_c] += gflat[gj + c * gs_c] * w
            else:
                for c in range(c0, c1):
                    gxc = gxflat[xb + c * xs_c:]
                    gc = gflat[gb + c * gs_c:]
                    for j in range(nb):
                        gv = gc[j * gs_p]
                        o = j * K
                        for t in range(cnt[j]):
                            gxc[off[o + t]] += gv * wts[o + t]
