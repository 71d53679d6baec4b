"""Forward kernels: blocks of output points, planned, then swept.

Work is split into *blocks* of output points.  For each block a kernel first
*plans the taps* (:mod:`gridsample._planners`): for every point a short list
of ``(flat input offset, weight)`` pairs, taps outside ``X`` already dropped.
It then *sweeps* the channels over that list (:mod:`gridsample._sweeps`):
planar for channel-first memory, interleaved for channel-last.  Both add the
taps in the same order, so the two layouts give bit-identical results.

An entry runs the blocks ``first .. stop - 1`` of the ``N x blocks`` tasks;
the engine splits the tasks into contiguous ranges, one per thread of the
pool (:mod:`gridsample._threads`), so every core is busy even for N = 1.
Each block touches only its own scratch and output slice, so results do not
depend on the number of threads.

There is one entry per specialised (rank, mode) and one general entry for
everything else; :data:`gridsample._engine.GENERAL_KERNELS` is the table.
Each specialised entry fixes ``K`` (taps per point) and its planner; the
planners are compiled functions of :mod:`gridsample._planners` (once per
grid/weight dtype, shared by all element types), the sweeps of
:mod:`gridsample._sweeps` are compiled per element type.

Every entry takes ``(first, stop, args)``; ``args`` packs, in order:

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

These *general* kernels serve every element type, rank, mode and layout;
the branch-free kernels of :mod:`gridsample._vector` replace them where they
apply (2-D and 3-D, planar sweeps, int32 offsets).
"""

from __future__ import annotations

import numpy as np

from ._jit import function, helper, skeleton
from ._planners import (
    plan_cubic_2d,
    plan_general,
    plan_linear_2d,
    plan_linear_3d,
    plan_nearest_2d,
    plan_nearest_3d,
)
from ._registry import MAX_AXIS_TAPS
from ._sweeps import sweep, sweep_fill

__all__ = ["task_nd", "task_fill", "task_linear_2d",
           "task_nearest_2d", "task_cubic_2d", "task_linear_3d", "task_nearest_3d"]


@helper
def _scratch(points, K, r, wconst, axc):
    """Scratch for planning ``points`` points: the plan and the general planner's per-axis lists
    (:func:`gridsample._planners.plan_point`), whose weights are formed in the wider of the
    weight and coordinate dtypes (``axc``'s)."""
    off = np.empty(points * K, np.int64)
    wts = np.empty(points * K, wconst.dtype)
    cnt = np.empty(points, np.int64)
    ax_off = np.empty(r * MAX_AXIS_TAPS, np.int64)
    wide = wconst[:1] * axc[0, :1]  # (an array of the promoted dtype)
    ax_w = np.empty(r * MAX_AXIS_TAPS + K, wide.dtype)
    ax_n = np.empty(r, np.int64)
    return off, wts, cnt, ax_off, ax_w, ax_n


@helper
def _locate(task, nblk, block, grid):
    """Batch item, grid row, first point and size of block ``task``."""
    n = task // nblk
    p0 = (task - n * nblk) * block
    return n, 0 if grid.shape[0] == 1 else n, p0, min(block, grid.shape[1] - p0)


@skeleton
def run_general(first, stop, args, K, planner, sweeper, fillv):
    """Blocks ``first .. stop - 1`` of ``N x blocks``: plan with ``planner``, then sweep
    with ``sweeper`` (:func:`_sweep_drop` or :func:`_sweep_fill`; ``fillv`` is the fill per
    channel the latter reads).

    ``args`` packs the arguments listed in the module docstring, in order;
    ``K`` (taps per point) is the entry's constant (or ``args``' own ``K``).
    """
    (xflat, xs_n, xs_c, sizes, strides, axc, kc, grid, outflat, os_n, os_c, os_p, N, C, _K,
     mode, pad, block, interleaved, wconst, kind, azero) = args
    nblk = (grid.shape[1] + block - 1) // block
    off, wts, cnt, ax_off, ax_w, ax_n = _scratch(block, K, grid.shape[2], wconst, axc)
    for task in range(first, stop):
        n, gn, p0, nb = _locate(task, nblk, block, grid)
        planner(grid, gn, p0, nb, K, mode, pad, axc, kc, sizes, strides, off, wts, cnt, ax_off,
                ax_w, ax_n, wconst)
        sweeper(xflat, n * xs_n, xs_c, off, wts, cnt, nb, K, C, outflat, n * os_n + p0 * os_p,
                os_c, os_p, interleaved, kind, azero, fillv)


@helper
def _sweep_drop(xflat, xbase, xs_c, off, wts, cnt, nb, K, C, outflat, obase, os_c, os_p,
                interleaved, kind, azero, fillv):
    """The sweep of a plan whose taps outside are dropped (every padding but a fill)."""
    sweep(xflat, xbase, xs_c, off, wts, cnt, nb, K, C, outflat, obase, os_c, os_p,
          interleaved, kind, azero)


@helper
def _sweep_fill(xflat, xbase, xs_c, off, wts, cnt, nb, K, C, outflat, obase, os_c, os_p,
                interleaved, kind, azero, fillv):
    """The sweep of a plan whose taps outside read ``fillv[c]`` (either layout)."""
    sweep_fill(xflat, xbase, xs_c, off, wts, cnt, nb, K, C, outflat, obase, os_c, os_p, kind,
               azero[0], fillv)


# Entries, one per planner; each takes ``(first, stop, args)`` as run_shared passes them.

@function
def task_fill(first, stop, args, fillv):
    """Any rank and mode with a fill value (``fillv``: one per channel, accumulator dtype).

    Plans with the general planner, sweeps with :func:`gridsample._sweeps.sweep_fill`.
    """
    run_general(first, stop, args, args[14], plan_general, _sweep_fill, fillv)


@function
def task_nd(first, stop, args):
    """Any rank and mode."""
    run_general(first, stop, args, args[14], plan_general, _sweep_drop, args[21])


@function
def task_linear_2d(first, stop, args):
    run_general(first, stop, args, 4, plan_linear_2d, _sweep_drop, args[21])


@function
def task_nearest_2d(first, stop, args):
    run_general(first, stop, args, 1, plan_nearest_2d, _sweep_drop, args[21])


@function
def task_cubic_2d(first, stop, args):
    run_general(first, stop, args, 16, plan_cubic_2d, _sweep_drop, args[21])


@function
def task_linear_3d(first, stop, args):
    run_general(first, stop, args, 8, plan_linear_3d, _sweep_drop, args[21])


@function
def task_nearest_3d(first, stop, args):
    run_general(first, stop, args, 1, plan_nearest_3d, _sweep_drop, args[21])
