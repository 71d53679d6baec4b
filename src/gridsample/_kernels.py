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
kind : int
    How elements are read and results stored (``KIND_*`` of
    :mod:`gridsample._convert`).
azero : ndarray, shape (1,)
    0 in the accumulator dtype (the weight dtype; complex for complex X).

Two families of entries share these building blocks:

* ``forward_*``: ``prange`` kernels with everything inlined into the loop
  body, one per specialised (rank, mode) -- the fastest code (Numba declares
  the loop body's arrays ``noalias``), used for float32 and float64 X.  Each
  costs ~5-20 s to compile per dtype signature (Numba's parfor passes grow
  with the body), paid once and cached on disk.
* ``task_*``: plain compiled entries, one per (rank, mode) like the above,
  for every other element type (integers, bool, float16/bfloat16, complex).
  They call the planner as a compiled function (``plan_*_fn``, compiled once
  per grid/weight dtype and shared by all element types) and inline only the
  sweep, so a new element type compiles in a few seconds.  The engine runs
  them on several threads (:mod:`gridsample._threads`), one contiguous range
  of blocks each.
"""

from __future__ import annotations

import numpy as np

from ._jit import function, inline, kernel, prange
from ._planners import (
    plan_cubic_2d,
    plan_cubic_2d_fn,
    plan_general_fn,
    plan_linear_2d_fn,
    plan_linear_3d_fn,
    plan_nearest_2d_fn,
    plan_nearest_3d_fn,
    plan_general,
    plan_linear_2d,
    plan_linear_3d,
    plan_nearest_2d,
    plan_nearest_3d,
)
from ._sweeps import sweep

__all__ = ["forward_nd", "forward_linear_2d", "forward_nearest_2d", "forward_cubic_2d",
           "forward_linear_3d", "forward_nearest_3d", "task_nd", "task_linear_2d",
           "task_nearest_2d", "task_cubic_2d", "task_linear_3d", "task_nearest_3d"]


@inline
def _scratch(points, K, r, wconst):
    """Scratch for planning ``points`` points: the plan and the general planner's per-axis lists."""
    off = np.empty(points * K, np.int64)
    wts = np.empty(points * K, wconst.dtype)
    cnt = np.empty(points, np.int64)
    ax_off = np.empty(r * 4, np.int64)
    ax_w = np.empty(r * 4, wconst.dtype)
    ax_n = np.empty(r, np.int64)
    return off, wts, cnt, ax_off, ax_w, ax_n


@inline
def _locate(task, nblk, block, grid):
    """Batch item, grid row, first point and size of block ``task``."""
    n = task // nblk
    p0 = (task - n * nblk) * block
    return n, 0 if grid.shape[0] == 1 else n, p0, min(block, grid.shape[1] - p0)


@inline
def _block(task, nblk, block, grid, K, wconst):
    """Batch item, grid row, first point and size of block ``task``, and its scratch."""
    n, gn, p0, nb = _locate(task, nblk, block, grid)
    return (n, gn, p0, nb) + _scratch(nb, K, grid.shape[2], wconst)


@kernel
def forward_nd(xflat, xs_n, xs_c, sizes, strides, axc, kc, grid, outflat, os_n, os_c, os_p,
               N, C, K, mode, pad, block, interleaved, wconst, kind, azero):
    """General entry: any rank and mode."""
    nblk = (grid.shape[1] + block - 1) // block
    for task in prange(N * nblk):
        n, gn, p0, nb, off, wts, cnt, ax_off, ax_w, ax_n = _block(task, nblk, block, grid, K,
                                                                   wconst)
        plan_general(grid, gn, p0, nb, K, mode, pad, axc, kc, sizes, strides, off, wts, cnt,
                     ax_off, ax_w, ax_n, wconst)
        sweep(xflat, n * xs_n, xs_c, off, wts, cnt, nb, K, C, outflat, n * os_n + p0 * os_p,
              os_c, os_p, interleaved, kind, azero)


@kernel
def forward_linear_2d(xflat, xs_n, xs_c, sizes, strides, axc, kc, grid, outflat, os_n, os_c,
                      os_p, N, C, K, mode, pad, block, interleaved, wconst, kind, azero):
    """2-D linear (K = 4)."""
    nblk = (grid.shape[1] + block - 1) // block
    for task in prange(N * nblk):
        n, gn, p0, nb, off, wts, cnt, ax_off, ax_w, ax_n = _block(task, nblk, block, grid, 4,
                                                                   wconst)
        plan_linear_2d(grid, gn, p0, nb, K, mode, pad, axc, kc, sizes, strides, off, wts, cnt,
                       ax_off, ax_w, ax_n, wconst)
        sweep(xflat, n * xs_n, xs_c, off, wts, cnt, nb, 4, C, outflat, n * os_n + p0 * os_p,
              os_c, os_p, interleaved, kind, azero)


@kernel
def forward_nearest_2d(xflat, xs_n, xs_c, sizes, strides, axc, kc, grid, outflat, os_n, os_c,
                       os_p, N, C, K, mode, pad, block, interleaved, wconst, kind, azero):
    """2-D nearest (K = 1)."""
    nblk = (grid.shape[1] + block - 1) // block
    for task in prange(N * nblk):
        n, gn, p0, nb, off, wts, cnt, ax_off, ax_w, ax_n = _block(task, nblk, block, grid, 1,
                                                                   wconst)
        plan_nearest_2d(grid, gn, p0, nb, K, mode, pad, axc, kc, sizes, strides, off, wts, cnt,
                        ax_off, ax_w, ax_n, wconst)
        sweep(xflat, n * xs_n, xs_c, off, wts, cnt, nb, 1, C, outflat, n * os_n + p0 * os_p,
              os_c, os_p, interleaved, kind, azero)


@kernel
def forward_cubic_2d(xflat, xs_n, xs_c, sizes, strides, axc, kc, grid, outflat, os_n, os_c,
                     os_p, N, C, K, mode, pad, block, interleaved, wconst, kind, azero):
    """2-D cubic (K = 16)."""
    nblk = (grid.shape[1] + block - 1) // block
    for task in prange(N * nblk):
        n, gn, p0, nb, off, wts, cnt, ax_off, ax_w, ax_n = _block(task, nblk, block, grid, 16,
                                                                   wconst)
        plan_cubic_2d(grid, gn, p0, nb, K, mode, pad, axc, kc, sizes, strides, off, wts, cnt,
                      ax_off, ax_w, ax_n, wconst)
        sweep(xflat, n * xs_n, xs_c, off, wts, cnt, nb, 16, C, outflat, n * os_n + p0 * os_p,
              os_c, os_p, interleaved, kind, azero)


@kernel
def forward_linear_3d(xflat, xs_n, xs_c, sizes, strides, axc, kc, grid, outflat, os_n, os_c,
                      os_p, N, C, K, mode, pad, block, interleaved, wconst, kind, azero):
    """3-D linear (K = 8)."""
    nblk = (grid.shape[1] + block - 1) // block
    for task in prange(N * nblk):
        n, gn, p0, nb, off, wts, cnt, ax_off, ax_w, ax_n = _block(task, nblk, block, grid, 8,
                                                                   wconst)
        plan_linear_3d(grid, gn, p0, nb, K, mode, pad, axc, kc, sizes, strides, off, wts, cnt,
                       ax_off, ax_w, ax_n, wconst)
        sweep(xflat, n * xs_n, xs_c, off, wts, cnt, nb, 8, C, outflat, n * os_n + p0 * os_p,
              os_c, os_p, interleaved, kind, azero)


@kernel
def forward_nearest_3d(xflat, xs_n, xs_c, sizes, strides, axc, kc, grid, outflat, os_n, os_c,
                       os_p, N, C, K, mode, pad, block, interleaved, wconst, kind, azero):
    """3-D nearest (K = 1)."""
    nblk = (grid.shape[1] + block - 1) // block
    for task in prange(N * nblk):
        n, gn, p0, nb, off, wts, cnt, ax_off, ax_w, ax_n = _block(task, nblk, block, grid, 1,
                                                                   wconst)
        plan_nearest_3d(grid, gn, p0, nb, K, mode, pad, axc, kc, sizes, strides, off, wts, cnt,
                        ax_off, ax_w, ax_n, wconst)
        sweep(xflat, n * xs_n, xs_c, off, wts, cnt, nb, 1, C, outflat, n * os_n + p0 * os_p,
              os_c, os_p, interleaved, kind, azero)


@function
def task_nd(first, stop, xflat, xs_n, xs_c, sizes, strides, axc, kc, grid, outflat, os_n,
            os_c, os_p, N, C, K, mode, pad, block, interleaved, wconst, kind, azero):
    """Blocks ``first .. stop - 1``, any rank and mode, any element type."""
    nblk = (grid.shape[1] + block - 1) // block
    off, wts, cnt, ax_off, ax_w, ax_n = _scratch(block, K, grid.shape[2], wconst)
    for task in range(first, stop):
        n, gn, p0, nb = _locate(task, nblk, block, grid)
        plan_general_fn(grid, gn, p0, nb, K, mode, pad, axc, kc, sizes, strides, off, wts, cnt,
                        ax_off, ax_w, ax_n, wconst)
        sweep(xflat, n * xs_n, xs_c, off, wts, cnt, nb, K, C, outflat, n * os_n + p0 * os_p,
              os_c, os_p, interleaved, kind, azero)


@function
def task_linear_2d(first, stop, xflat, xs_n, xs_c, sizes, strides, axc, kc, grid, outflat, os_n,
                   os_c, os_p, N, C, K, mode, pad, block, interleaved, wconst, kind, azero):
    """Blocks ``first .. stop - 1``, linear-2d, any element type."""
    nblk = (grid.shape[1] + block - 1) // block
    off, wts, cnt, ax_off, ax_w, ax_n = _scratch(block, 4, grid.shape[2], wconst)
    for task in range(first, stop):
        n, gn, p0, nb = _locate(task, nblk, block, grid)
        plan_linear_2d_fn(grid, gn, p0, nb, K, mode, pad, axc, kc, sizes, strides, off, wts, cnt,
                          ax_off, ax_w, ax_n, wconst)
        sweep(xflat, n * xs_n, xs_c, off, wts, cnt, nb, 4, C, outflat, n * os_n + p0 * os_p,
              os_c, os_p, interleaved, kind, azero)


@function
def task_nearest_2d(first, stop, xflat, xs_n, xs_c, sizes, strides, axc, kc, grid, outflat, os_n,
                    os_c, os_p, N, C, K, mode, pad, block, interleaved, wconst, kind, azero):
    """Blocks ``first .. stop - 1``, nearest-2d, any element type."""
    nblk = (grid.shape[1] + block - 1) // block
    off, wts, cnt, ax_off, ax_w, ax_n = _scratch(block, 1, grid.shape[2], wconst)
    for task in range(first, stop):
        n, gn, p0, nb = _locate(task, nblk, block, grid)
        plan_nearest_2d_fn(grid, gn, p0, nb, K, mode, pad, axc, kc, sizes, strides, off, wts, cnt,
                           ax_off, ax_w, ax_n, wconst)
        sweep(xflat, n * xs_n, xs_c, off, wts, cnt, nb, 1, C, outflat, n * os_n + p0 * os_p,
              os_c, os_p, interleaved, kind, azero)


@function
def task_cubic_2d(first, stop, xflat, xs_n, xs_c, sizes, strides, axc, kc, grid, outflat, os_n,
                  os_c, os_p, N, C, K, mode, pad, block, interleaved, wconst, kind, azero):
    """Blocks ``first .. stop - 1``, cubic-2d, any element type."""
    nblk = (grid.shape[1] + block - 1) // block
    off, wts, cnt, ax_off, ax_w, ax_n = _scratch(block, 16, grid.shape[2], wconst)
    for task in range(first, stop):
        n, gn, p0, nb = _locate(task, nblk, block, grid)
        plan_cubic_2d_fn(grid, gn, p0, nb, K, mode, pad, axc, kc, sizes, strides, off, wts, cnt,
                         ax_off, ax_w, ax_n, wconst)
        sweep(xflat, n * xs_n, xs_c, off, wts, cnt, nb, 16, C, outflat, n * os_n + p0 * os_p,
              os_c, os_p, interleaved, kind, azero)


@function
def task_linear_3d(first, stop, xflat, xs_n, xs_c, sizes, strides, axc, kc, grid, outflat, os_n,
                   os_c, os_p, N, C, K, mode, pad, block, interleaved, wconst, kind, azero):
    """Blocks ``first .. stop - 1``, linear-3d, any element type."""
    nblk = (grid.shape[1] + block - 1) // block
    off, wts, cnt, ax_off, ax_w, ax_n = _scratch(block, 8, grid.shape[2], wconst)
    for task in range(first, stop):
        n, gn, p0, nb = _locate(task, nblk, block, grid)
        plan_linear_3d_fn(grid, gn, p0, nb, K, mode, pad, axc, kc, sizes, strides, off, wts, cnt,
                          ax_off, ax_w, ax_n, wconst)
        sweep(xflat, n * xs_n, xs_c, off, wts, cnt, nb, 8, C, outflat, n * os_n + p0 * os_p,
              os_c, os_p, interleaved, kind, azero)


@function
def task_nearest_3d(first, stop, xflat, xs_n, xs_c, sizes, strides, axc, kc, grid, outflat, os_n,
                    os_c, os_p, N, C, K, mode, pad, block, interleaved, wconst, kind, azero):
    """Blocks ``first .. stop - 1``, nearest-3d, any element type."""
    nblk = (grid.shape[1] + block - 1) // block
    off, wts, cnt, ax_off, ax_w, ax_n = _scratch(block, 1, grid.shape[2], wconst)
    for task in range(first, stop):
        n, gn, p0, nb = _locate(task, nblk, block, grid)
        plan_nearest_3d_fn(grid, gn, p0, nb, K, mode, pad, axc, kc, sizes, strides, off, wts, cnt,
                           ax_off, ax_w, ax_n, wconst)
        sweep(xflat, n * xs_n, xs_c, off, wts, cnt, nb, 1, C, outflat, n * os_n + p0 * os_p,
              os_c, os_p, interleaved, kind, azero)
