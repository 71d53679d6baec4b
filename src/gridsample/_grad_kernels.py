"""Backward kernels: the gradients of GridSample w.r.t. the input and the grid.

For output point ``p`` with taps ``o`` (flat input offsets) and weights
``W_o = prod_a w_a``, the forward is ``y[c, p] = sum_o W_o x[c, o]``.  With
``G = dL/dy``:

* ``dL/dx[c, o] = sum_p G[c, p] W_o(p)`` -- a scatter-add (the adjoint);
* ``dL/dg[p, a] = chain_a(p) * sum_c G[c, p] sum_o D_{o,a} x[c, o]`` with
  ``D_{o,a} = dw_a * prod_{b != a} w_b``
  (the product rule over the tensor-product weights; ``chain_a = dx_a/dg_a``,
  :mod:`gridsample._grad_taps`).

One pass computes both: blocks of points are planned like the forward (a
list of taps per point, taps outside ``X`` dropped, plus the slopes ``D``),
then one sweep over the channels gathers the slopes and scatters into ``dL/dx``.

Determinism without atomics: the work is split into ``N x G x Q`` tasks:
batch item, one of ``G`` groups of channels, one of ``Q`` contiguous chunks
of the item's points.  Channel groups write disjoint parts of ``dL/dx``;
point chunks scatter into private buffers, summed afterwards in the order
``((b_0 + b_1) + b_2) + ...``.  The grid gradient of a point is computed
whole by the one task that owns it (a broadcast grid's rows are summed
over the batch afterwards, in batch order).  ``G`` and ``Q`` depend on the shapes only,
never on the thread count, and every buffer element receives its terms in
point order; so the gradients are bit-identical at any thread count and
any block size.

The entries are plain compiled functions run on the thread pool
(:mod:`gridsample._threads`), one per (rank, mode) planner, so a call
compiles only its own mode's planner; the sweep is a ``noalias`` function
of its own.
"""

from __future__ import annotations

import numpy as np

from ._grad_planners import (
    plan_grad_2d_cubic,
    plan_grad_2d_linear,
    plan_grad_2d_nearest,
    plan_grad_3d_linear,
    plan_grad_3d_nearest,
    plan_grad_general,
)
from ._jit import function, helper, skeleton
from ._registry import MAX_AXIS_TAPS, MODES, kernel_name

__all__ = ["BACKWARD_ENTRIES", "backward_nd", "task_sum_buffers"]


@helper
def _scratch(block, K, r, like):
    off = np.empty(block * K, np.int64)
    wts = np.empty(block * K, like.dtype)
    cnt = np.empty(block, np.int64)
    chain = np.empty(block * r, like.dtype)
    ax_off = np.empty(MAX_AXIS_TAPS * r, np.int64)
    ax_w = np.empty(MAX_AXIS_TAPS * r, like.dtype)
    ax_dw = np.empty(MAX_AXIS_TAPS * r, like.dtype)
    ax_n = np.empty(r, np.int64)
    return off, wts, cnt, chain, ax_off, ax_w, ax_dw, ax_n


@helper
def _constants(kc, dk):
    """Keys' constants and slopes as tuples (scalars travel into helpers without refcounts)."""
    return ((kc[0], kc[1], kc[2], kc[3], kc[4], kc[5], kc[6], kc[7]),
            (dk[0], dk[1], dk[2], dk[3], dk[4]))


@skeleton
def _grid_grads(ggrid, row, p0, nb, r, cnt, sacc, chain, zero):
    """``dL/dg[p, a] = chain_a * S_a`` for the block's points (NaN points: NaN)."""
    for j in range(nb):
        for a in range(r):
            if cnt[j] < 0:  # a NaN point (docs/semantics.md §7.3): its gradient is NaN too
                ggrid[row, p0 + j, a] = zero + np.nan
            else:
                ggrid[row, p0 + j, a] = sacc[j * r + a] * chain[j * r + a]


@helper
def _setup(block, K, r, kc, dk, want_grid):
    """Constants as tuples and the per-thread scratch of a task range."""
    kct, dkt = _constants(kc, dk)
    off, wts, cnt, chain, ax_off, ax_w, ax_dw, ax_n = _scratch(block, K, r, kc)
    dws = np.empty(block * K * r if want_grid else 1, kc.dtype)
    vals = np.empty(block * max(K, r), kc.dtype)  # per-tap sums, then per-axis S_a
    return kct, dkt, off, wts, cnt, chain, ax_off, ax_w, ax_dw, ax_n, dws, vals


@helper
def _task(task, G, Q, C, P, Ng, xs_n, gx_q):
    """Decode task ``(n, g, q)``: item, grid row, channel range, bases and point range."""
    n = task // (G * Q)
    g = (task // Q) % G
    q = task % Q
    return (n, 0 if Ng == 1 else n, g * C // G, (g + 1) * C // G, n * xs_n,
            q * gx_q + n * xs_n, q * P // Q, (q + 1) * P // Q)


@skeleton
def _sweep_block(xflat, xb, xs_c, gflat, gb, gs_c, gs_p, gxflat, gxb, ggrid, n, p0, nb, K, r,
                 c0, c1, off, wts, cnt, dws, chain, vals, interleaved, want_x, want_grid, zero):
    """Sweep channels ``c0 .. c1 - 1`` over a planned block: slopes ``S``, scatter ``dL/dx``.

    ``vals[j*r + a]`` accumulates ``S_a = sum_c G[c] sum_t D_{t,a} x[c, o_t]``
    of point ``j``, the derivative of the point's output along axis ``a``
    (before the chain factor).  Gather and scatter run as separate loops over the block (its plan
    is in
    cache): fused into one loop they were 2x slower on random grids, the
    stores holding back the next gathers.  ``zero`` is 0 in the weight dtype
    (a constant: scratch such as ``wts[0]`` may hold leftover NaN when the
    block's first point has no taps).
    """
    if want_grid:
        for i in range(nb * r):
            vals[i] = zero
    if interleaved:
        # Channel-last: a point at a time, its taps' channels side by side.  The slope sums
        # add in the planar order below (channel by channel, each over the taps), so that
        # both layouts, and the vector kernels of each, give the same bits.
        for j in range(nb):
            gj = gb + j * gs_p
            m = max(cnt[j], 0)
            o = j * K
            if want_grid:
                for c in range(c0, c1):
                    gv = gflat[gj + c * gs_c]
                    xc = xb + c * xs_c
                    for a in range(r):
                        sa = zero
                        for t in range(m):
                            sa += dws[(o + t) * r + a] * xflat[xc + off[o + t]]
                        vals[j * r + a] += gv * sa
            if want_x:
                for t in range(m):
                    q = gxb + off[o + t]
                    w = wts[o + t]
                    for c in range(c0, c1):
                        gxflat[q + c * xs_c] += gflat[gj + c * gs_c] * w
    else:
        for c in range(c0, c1):
            gc = gflat[gb + c * gs_c:]
            if want_grid:
                # S_a += G[c] * sum_t D_{t,a} x[c, o_t]: the slope of this
                # channel's value, one accumulator per axis (for r = 2, 3 in
                # registers; the general rank re-reads the taps per axis).
                xc = xflat[xb + c * xs_c:]
                for j in range(nb):
                    gv = gc[j * gs_p]
                    o = j * K
                    m = cnt[j]
                    if r == 2:
                        s0 = zero
                        s1 = zero
                        for t in range(m):
                            v = xc[off[o + t]]
                            s0 += dws[2 * (o + t)] * v
                            s1 += dws[2 * (o + t) + 1] * v
                        vals[2 * j] += gv * s0
                        vals[2 * j + 1] += gv * s1
                    elif r == 3:
                        s0 = zero
                        s1 = zero
                        s2 = zero
                        for t in range(m):
                            v = xc[off[o + t]]
                            s0 += dws[3 * (o + t)] * v
                            s1 += dws[3 * (o + t) + 1] * v
                            s2 += dws[3 * (o + t) + 2] * v
                        vals[3 * j] += gv * s0
                        vals[3 * j + 1] += gv * s1
                        vals[3 * j + 2] += gv * s2
                    else:
                        for a in range(r):
                            sa = zero
                            for t in range(m):
                                sa += dws[(o + t) * r + a] * xc[off[o + t]]
                            vals[j * r + a] += gv * sa
            if want_x:
                gxc = gxflat[gxb + c * xs_c:]
                for j in range(nb):
                    gv = gc[j * gs_p]
                    o = j * K
                    for t in range(cnt[j]):
                        gxc[off[o + t]] += gv * wts[o + t]
    if want_grid:
        _grid_grads(ggrid, n, p0, nb, r, cnt, vals, chain, zero)


# The sweep compiled per rank (``r`` a constant: the slope sums stay in
# registers), as ``noalias`` functions of their own.

@function
def sweep_block_2d(xflat, xb, xs_c, gflat, gb, gs_c, gs_p, gxflat, gxb, ggrid, n, p0, nb, K, r,
                   c0, c1, off, wts, cnt, dws, chain, vals, interleaved, want_x, want_grid, zero):
    _sweep_block(xflat, xb, xs_c, gflat, gb, gs_c, gs_p, gxflat, gxb, ggrid, n, p0, nb, K, 2,
                 c0, c1, off, wts, cnt, dws, chain, vals, interleaved, want_x, want_grid, zero)


@function
def sweep_block_3d(xflat, xb, xs_c, gflat, gb, gs_c, gs_p, gxflat, gxb, ggrid, n, p0, nb, K, r,
                   c0, c1, off, wts, cnt, dws, chain, vals, interleaved, want_x, want_grid, zero):
    _sweep_block(xflat, xb, xs_c, gflat, gb, gs_c, gs_p, gxflat, gxb, ggrid, n, p0, nb, K, 3,
                 c0, c1, off, wts, cnt, dws, chain, vals, interleaved, want_x, want_grid, zero)


@function
def sweep_block_nd(xflat, xb, xs_c, gflat, gb, gs_c, gs_p, gxflat, gxb, ggrid, n, p0, nb, K, r,
                   c0, c1, off, wts, cnt, dws, chain, vals, interleaved, want_x, want_grid, zero):
    _sweep_block(xflat, xb, xs_c, gflat, gb, gs_c, gs_p, gxflat, gxb, ggrid, n, p0, nb, K, r,
                 c0, c1, off, wts, cnt, dws, chain, vals, interleaved, want_x, want_grid, zero)


@skeleton
def run_backward(first, stop, args, r, planner, sweep):
    """Both gradients for tasks ``first .. stop - 1`` of ``N x G x Q``, planning with ``planner``.

    Task ``(n, g, q)`` takes batch item ``n``, the ``g``-th of ``G`` groups
    of channels and the ``q``-th of ``Q`` contiguous chunks of output
    points.  Per block of points it plans the taps once, then sweeps its
    channels: it gathers the slope sums of the grid gradient (the engine
    asks for them with ``G = 1`` only, so a point's sum is complete in one
    task) and scatters ``G[c] W_o`` into input-gradient buffer ``q``
    (``gxflat``, buffers ``gx_q`` elements apart, laid out like ``x``, which
    the engine made contiguous so both share the tap offsets).  The engine
    sums the ``Q`` buffers in order afterwards.

    ``args`` packs, in order:

    G, Q : int
        Channel groups and point chunks per item.
    xflat, xs_n, xs_c : ndarray (M,), int, int
        Flat input: element ``(n, c, i...)`` at ``n*xs_n + c*xs_c + sum i*stride``.
    sizes, strides : int64 arrays (r,)
        Input axes in grid order.
    axc, kc, dk : ndarrays
        Per-axis, Keys and Keys-slope constants.
    grid : ndarray, shape (Ng, P, r)
        Normalized coordinates; ``Ng`` is N or 1 (broadcast).
    gflat, gs_n, gs_c, gs_p : ndarray, int, int, int
        Flat ``dL/dy``: element ``(n, c, p)`` at ``n*gs_n + c*gs_c + p*gs_p``.
    gxflat, gx_q : ndarray, int
        The ``Q`` input-gradient buffers.
    ggrid : ndarray, shape (N, P, r)
        Grid gradient of each item's points.
    C, K, mode, pad, block : int
        Channels, taps per point, codes and points per block.
    interleaved, want_x, want_grid : bool
        Channel-last sweep; which gradients to compute.
    """
    (G, Q, xflat, xs_n, xs_c, sizes, strides, axc, kc, dk, grid, gflat, gs_n, gs_c, gs_p,
     gxflat, gx_q, ggrid, C, K, mode, pad, block, interleaved, want_x, want_grid) = args
    kct, dkt, off, wts, cnt, chain, ax_off, ax_w, ax_dw, ax_n, dws, vals = _setup(
        block, K, r, kc, dk, want_grid)
    for task in range(first, stop):
        n, gn, c0, c1, xb, gxb, ps, pe = _task(task, G, Q, C, grid.shape[1], grid.shape[0],
                                               xs_n, gx_q)
        for p0 in range(ps, pe, block):
            nb = min(block, pe - p0)
            planner(grid, gn, p0, nb, K, mode, pad, axc, kct, dkt, sizes, strides, off, wts, dws,
                    cnt, chain, ax_off, ax_w, ax_dw, ax_n, want_grid)
            sweep(xflat, xb, xs_c, gflat, n * gs_n + p0 * gs_p, gs_c, gs_p, gxflat, gxb, ggrid, n,
                  p0, nb, K, r, c0, c1, off, wts, cnt, dws, chain, vals, interleaved, want_x,
                  want_grid, kc[0] - kc[0])


# Entries, one per planner (a call compiles only its own); each takes
# ``(first, stop, args)`` as run_shared passes them.

@function
def backward_nd(first, stop, args):
    """Any rank and mode: the general planner."""
    run_backward(first, stop, args, args[10].shape[2], plan_grad_general, sweep_block_nd)


@function
def backward_linear_2d(first, stop, args):
    run_backward(first, stop, args, 2, plan_grad_2d_linear, sweep_block_2d)


@function
def backward_nearest_2d(first, stop, args):
    run_backward(first, stop, args, 2, plan_grad_2d_nearest, sweep_block_2d)


@function
def backward_cubic_2d(first, stop, args):
    run_backward(first, stop, args, 2, plan_grad_2d_cubic, sweep_block_2d)


@function
def backward_linear_3d(first, stop, args):
    run_backward(first, stop, args, 3, plan_grad_3d_linear, sweep_block_3d)


@function
def backward_nearest_3d(first, stop, args):
    run_backward(first, stop, args, 3, plan_grad_3d_nearest, sweep_block_3d)


#: Backward entry of each (rank, mode code) the registry specialises (named
#: ``backward_<mode>_<rank>d``); others use ``backward_nd``.
BACKWARD_ENTRIES = {(r, m.code): globals()[f"backward_{kernel_name(m.code, r)}"]
                    for m in MODES for r in m.specialised_ranks}


@function
def task_sum_buffers(first, stop, bufs, Q, size, chunk, out):
    """``out[i] = ((b_0[i] + b_1[i]) + ...) + b_{Q-1}[i]`` for chunks ``first .. stop - 1``.

    ``bufs`` holds ``Q`` buffers of ``size`` elements back to back; chunk
    ``k`` is elements ``k*chunk .. (k+1)*chunk - 1``.
    """
    for k in range(first, stop):
        lo = k * chunk
        n = min(size, lo + chunk) - lo
        # Views from the chunk's start, one pass per buffer: each loop runs over i alone (a
        # loop over q innermost, and indices LLVM cannot prove non-negative, kept it scalar:
        # 4x the time of NumPy's add).  The sums keep their order.
        o = out[lo:lo + n]
        b0 = bufs[lo:lo + n]
        if Q == 1:
            for i in range(n):
                o[i] = b0[i]
            continue
        b1 = bufs[size + lo:size + lo + n]
        for i in range(n):
            o[i] = b0[i] + b1[i]
        for q in range(2, Q):
            bq = bufs[q * size + lo:q * size + lo + n]
            for i in range(n):
                o[i] += bq[i]
