"""Run a validated plan: lay out the arrays for the kernels and call one.

The kernel is chosen from :data:`FORWARD_KERNELS` by ``(rank, mode)``; ranks
without a specialised entry use the N-D kernel.
"""

from __future__ import annotations

import numba
import numpy as np

from ._kernels import sample_forward
from ._options import MODE_CUBIC, MODE_LINEAR, MODE_NEAREST
from ._plan import ForwardPlan
from ._taps import axis_constants, cubic_constants

__all__ = ["run_forward", "flat_view", "FORWARD_KERNELS", "TAPS_PER_AXIS"]

#: Taps per axis of each mode.
TAPS_PER_AXIS = {MODE_NEAREST: 1, MODE_LINEAR: 2, MODE_CUBIC: 4}

#: Forward kernels keyed by (rank, mode); ``(None, mode)`` is the N-D fallback.
FORWARD_KERNELS = {(None, m): sample_forward for m in TAPS_PER_AXIS}

# Target number of (offset, weight) pairs planned per block: ~4096 pairs
# (48-64 KiB of scratch) stays in L2 while the channels are swept.
_PAIRS_PER_BLOCK = 4096
_MIN_BLOCK = 16


def flat_view(a: np.ndarray):
    """A read-only 1-D view of the memory ``a`` spans, and ``a``'s element strides.

    Element ``idx`` of ``a`` is ``flat[sum(idx * strides)]``.  Arrays with
    negative strides or strides that are not a multiple of the item size are
    copied once (to C order) first.
    """
    item = a.itemsize
    if any(s < 0 or s % item for s in a.strides):
        a = np.ascontiguousarray(a)
    strides = tuple(s // item for s in a.strides)
    span = 1 + sum((n - 1) * s for n, s in zip(a.shape, strides))
    flat = np.lib.stride_tricks.as_strided(a, shape=(span,), strides=(item,), writeable=False)
    return flat, strides


def _block_size(plan: ForwardPlan, taps_total: int) -> int:
    block = max(_MIN_BLOCK, _PAIRS_PER_BLOCK // taps_total)
    # Enough blocks for every thread (x4 for balance) even when N is small.
    wanted = 4 * numba.get_num_threads()
    per_item = -(-wanted // max(plan.batch, 1))
    return max(_MIN_BLOCK, min(block, -(-plan.out_points // per_item)))


def run_forward(plan: ForwardPlan, x: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Compute the forward operator for a validated plan."""
    out = np.empty(plan.out_shape, plan.out_dtype)
    if plan.is_empty:
        return out
    r = plan.rank
    xflat, xs = flat_view(x)
    if plan.channel_last:
        xs_n, xs_c, xs_spatial = xs[0], xs[-1], xs[1:-1]
    else:
        xs_n, xs_c, xs_spatial = xs[0], xs[1], xs[2:]
    # Kernels list axes in grid order: entry 0 is the innermost spatial axis.
    sizes = np.array(plan.in_spatial[::-1], np.int64)
    strides = np.array(xs_spatial[::-1], np.int64)
    axc = np.array([axis_constants(int(s), plan.align_corners) for s in sizes], plan.coord_dtype)
    kc = np.array(cubic_constants(), plan.coord_dtype)
    wconst = np.array([0.0, 1.0, np.nan], plan.weight_dtype)

    points = plan.out_points
    grid3 = grid.reshape(plan.grid_batch, points, r)
    if plan.channel_last:
        out3 = out.reshape(plan.batch, points, plan.channels).transpose(0, 2, 1)
    else:
        out3 = out.reshape(plan.batch, plan.channels, points)
    # Sweep channels innermost when they are the closest in memory.
    interleaved = plan.channels > 1 and xs_c <= min(strides)

    taps = TAPS_PER_AXIS[plan.mode]
    taps_total = taps**r
    kern = FORWARD_KERNELS.get((r, plan.mode), FORWARD_KERNELS[(None, plan.mode)])
    kern(xflat, xs_n, xs_c, sizes, strides, axc, kc, grid3, out3, plan.mode, plan.padding,
         taps, _block_size(plan, taps_total), interleaved, wconst)
    return out
