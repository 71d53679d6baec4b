"""Forward kernels: blocks of output points, planned, then swept.

Work is split into *blocks* of output points.  For each block a kernel first
*plans the taps* (:mod:`gridsample._planners`): for every point a short list
of ``(flat input offset, weight)`` pairs, taps outside ``X`` already dropped.
It then *sweeps* the channels over that list (:mod:`gridsample._sweeps`):
planar for channel-first memory, interleaved for channel-last.  Both add the
taps in the same order, so the two layouts give bit-identical results.

The prange runs over ``N x blocks``, so every core is busy even for N = 1;
each block touches only its own scratch and output slice, so results do not
depend on the number of threads.

There is one entry point per specialised (rank, mode) and one general entry
for everything else; :data:`gridsample._engine.FORWARD_KERNELS` is the table.
Each specialised entry fixes ``K`` (taps per point) in its source, so LLVM
sees a constant-length tap loop in the sweep and unrolls it.

All entries share one signature:

xflat : ndarray, shape (M,)
    Flat view of the input's memory; element ``(n, c, i_1 … i_r)`` lives at
    ``n*xs_n + c*xs_c + sum(i_a * stride_a)``.
sizes, strides : int64 arrays, shape (r,)
    Input length and element stride of each axis, in *grid order* (entry 0 is
    the innermost spatial axis, which ``grid[..., 0]`` indexes).
axc : ndarray, shape (r, AXIS_FIELDS); kc : ndarray, shape (CUBIC_FIELDS,)
    Per-axis and cubic constants in the coordinate dtype.
grid : ndarray, shape (Ng, P, r), C-contiguous
    Normalized coordinates; ``Ng`` is N or 1 (broadcast).
outflat : ndarray, shape (M_out,)
    Flat output; element ``(n, c, p)`` at ``n*os_n + c*os_c + p*os_p``.
N, C : int
    Batch size and channels.
K, mode : int
    Most taps per point and the mode code (used by the general entry only).
pad : int
    Padding code.
block : int
    Output points per block.
interleaved : bool
    Sweep channels innermost (channel-last memory).
wconst : ndarray, shape (3,)
    0, 1 and NaN in the weight dtype.
"""

from __future__ import annotations

import numpy as np

from ._jit import inline, kernel, prange
from ._planners import (
    plan_cubic_2d,
    plan_general,
    plan_linear_2d,
    plan_linear_3d,
    plan_nearest_2d,
    plan_nearest_3d,
)
from ._sweeps import sweep

__all__ = ["forward_nd", "forward_linear_2d", "forward_nearest_2d", "forward_cubic_2d",
           "forward_linear_3d", "forward_nearest_3d"]


@inline
def _block(task, nblk, block, grid, K, wconst):
    """Batch item, grid row, first point and size of block ``task``, and its scratch."""
    P = grid.shape[1]
    r = grid.shape[2]
    n = task // nblk
    p0 = (task - n * nblk) * block
    nb = min(block, P - p0)
    gn = 0 if grid.shape[0] == 1 else n
    off = np.empty(nb * K, np.int64)
    wts = np.empty(nb * K, wconst.dtype)
    cnt = np.empty(nb, np.int64)
    ax_off = np.empty(r * 4, np.int64)
    ax_w = np.empty(r * 4, wconst.dtype)
    ax_n = np.empty(r, np.int64)
    return n, gn, p0, nb, off, wts, cnt, ax_off, ax_w, ax_n


@kernel
def forward_nd(xflat, xs_n, xs_c, sizes, strides, axc, kc, grid, outflat, os_n, os_c, os_p,
               N, C, K, mode, pad, block, interleaved, wconst):
    """General entry: any rank and mode."""
    nblk = (grid.shape[1] + block - 1) // block
    for task in prange(N * nblk):
        n, gn, p0, nb, off, wts, cnt, ax_off, ax_w, ax_n = _block(task, nblk, block, grid, K,
                                                                   wconst)
        plan_general(grid, gn, p0, nb, K, mode, pad, axc, kc, sizes, strides, off, wts, cnt,
                     ax_off, ax_w, ax_n, wconst)
        sweep(xflat, n * xs_n, xs_c, off, wts, cnt, nb, K, C, outflat, n * os_n + p0 * os_p,
              os_c, os_p, interleaved, wconst)


@kernel
def forward_linear_2d(xflat, xs_n, xs_c, sizes, strides, axc, kc, grid, outflat, os_n, os_c,
                      os_p, N, C, K, mode, pad, block, interleaved, wconst):
    """2-D linear (K = 4)."""
    nblk = (grid.shape[1] + block - 1) // block
    for task in prange(N * nblk):
        n, gn, p0, nb, off, wts, cnt, ax_off, ax_w, ax_n = _block(task, nblk, block, grid, 4,
                                                                   wconst)
        plan_linear_2d(grid, gn, p0, nb, K, mode, pad, axc, kc, sizes, strides, off, wts, cnt,
                       ax_off, ax_w, ax_n, wconst)
        sweep(xflat, n * xs_n, xs_c, off, wts, cnt, nb, 4, C, outflat, n * os_n + p0 * os_p,
              os_c, os_p, interleaved, wconst)


@kernel
def forward_nearest_2d(xflat, xs_n, xs_c, sizes, strides, axc, kc, grid, outflat, os_n, os_c,
                       os_p, N, C, K, mode, pad, block, interleaved, wconst):
    """2-D nearest (K = 1)."""
    nblk = (grid.shape[1] + block - 1) // block
    for task in prange(N * nblk):
        n, gn, p0, nb, off, wts, cnt, ax_off, ax_w, ax_n = _block(task, nblk, block, grid, 1,
                                                                   wconst)
        plan_nearest_2d(grid, gn, p0, nb, K, mode, pad, axc, kc, sizes, strides, off, wts, cnt,
                        ax_off, ax_w, ax_n, wconst)
        sweep(xflat, n * xs_n, xs_c, off, wts, cnt, nb, 1, C, outflat, n * os_n + p0 * os_p,
              os_c, os_p, interleaved, wconst)


@kernel
def forward_cubic_2d(xflat, xs_n, xs_c, sizes, strides, axc, kc, grid, outflat, os_n, os_c,
                     os_p, N, C, K, mode, pad, block, interleaved, wconst):
    """2-D cubic (K = 16)."""
    nblk = (grid.shape[1] + block - 1) // block
    for task in prange(N * nblk):
        n, gn, p0, nb, off, wts, cnt, ax_off, ax_w, ax_n = _block(task, nblk, block, grid, 16,
                                                                   wconst)
        plan_cubic_2d(grid, gn, p0, nb, K, mode, pad, axc, kc, sizes, strides, off, wts, cnt,
                      ax_off, ax_w, ax_n, wconst)
        sweep(xflat, n * xs_n, xs_c, off, wts, cnt, nb, 16, C, outflat, n * os_n + p0 * os_p,
              os_c, os_p, interleaved, wconst)


@kernel
def forward_linear_3d(xflat, xs_n, xs_c, sizes, strides, axc, kc, grid, outflat, os_n, os_c,
                      os_p, N, C, K, mode, pad, block, interleaved, wconst):
    """3-D linear (K = 8)."""
    nblk = (grid.shape[1] + block - 1) // block
    for task in prange(N * nblk):
        n, gn, p0, nb, off, wts, cnt, ax_off, ax_w, ax_n = _block(task, nblk, block, grid, 8,
                                                                   wconst)
        plan_linear_3d(grid, gn, p0, nb, K, mode, pad, axc, kc, sizes, strides, off, wts, cnt,
                       ax_off, ax_w, ax_n, wconst)
        sweep(xflat, n * xs_n, xs_c, off, wts, cnt, nb, 8, C, outflat, n * os_n + p0 * os_p,
              os_c, os_p, interleaved, wconst)


@kernel
def forward_nearest_3d(xflat, xs_n, xs_c, sizes, strides, axc, kc, grid, outflat, os_n, os_c,
                       os_p, N, C, K, mode, pad, block, interleaved, wconst):
    """3-D nearest (K = 1)."""
    nblk = (grid.shape[1] + block - 1) // block
    for task in prange(N * nblk):
        n, gn, p0, nb, off, wts, cnt, ax_off, ax_w, ax_n = _block(task, nblk, block, grid, 1,
                                                                   wconst)
        plan_nearest_3d(grid, gn, p0, nb, K, mode, pad, axc, kc, sizes, strides, off, wts, cnt,
                        ax_off, ax_w, ax_n, wconst)
        sweep(xflat, n * xs_n, xs_c, off, wts, cnt, nb, 1, C, outflat, n * os_n + p0 * os_p,
              os_c, os_p, interleaved, wconst)
