"""Run a validated plan: lay out the arrays for the kernel and call it.

The kernel is chosen from :data:`FORWARD_KERNELS` by ``(rank, mode)``;
pairs without a specialised kernel use the general N-D one.
"""

from __future__ import annotations

import numba
import numpy as np

from . import _kernels as kern
from ._options import MODE_CUBIC, MODE_LINEAR, MODE_NEAREST
from ._plan import ForwardPlan
from ._planners import taps_per_point
from ._taps import axis_constants, cubic_constants

__all__ = ["run_forward", "flat_view", "FORWARD_KERNELS"]

#: Forward kernel of each (rank, mode); anything else uses ``kern.forward_nd``.
FORWARD_KERNELS = {
    (2, MODE_LINEAR): kern.forward_linear_2d,
    (2, MODE_NEAREST): kern.forward_nearest_2d,
    (2, MODE_CUBIC): kern.forward_cubic_2d,
    (3, MODE_LINEAR): kern.forward_linear_3d,
    (3, MODE_NEAREST): kern.forward_nearest_3d,
}

# Target number of (offset, weight) pairs planned per block: ~4096 pairs
# (48-64 KiB of scratch) stays in L2 while the channels are swept.
_PAIRS_PER_BLOCK = 4096
_MIN_BLOCK = 16
# Up to this many channels the planar sweep wins even on channel-last memory
# (a few passes over cache lines the first pass brought in; no accumulator array).
_PLANAR_MAX_CHANNELS = 4


def flat_view(a: np.ndarray, writeable: bool = False):
    """A 1-D view of the memory ``a`` spans, and ``a``'s element strides.

    Element ``idx`` of ``a`` is ``flat[sum(idx * strides)]``.  Arrays with
    negative strides or strides that are not a multiple of the item size are
    copied once (to C order) first.
    """
    item = a.itemsize
    if any(s < 0 or s % item for s in a.strides):
        a = np.ascontiguousarray(a)
    strides = tuple(s // item for s in a.strides)
    span = 1 + sum((n - 1) * s for n, s in zip(a.shape, strides))
    flat = np.lib.stride_tricks.as_strided(a, shape=(span,), strides=(item,),
                                           writeable=writeable)
    return flat, strides


def _block_size(plan: ForwardPlan, taps_total: int) -> int:
    block = max(_MIN_BLOCK, _PAIRS_PER_BLOCK // taps_total)
    # Enough blocks for every thread (x4 for balance) even when N is small.
    wanted = 4 * numba.get_num_threads()
    per_item = -(-wanted // max(plan.batch, 1))
    return max(_MIN_BLOCK, min(block, -(-plan.out_points // per_item)))


def _split_channels(strides, channel_last):
    """(batch, channel, spatial...) element strides of an array in its layout."""
    if channel_last:
        return strides[0], strides[-1], strides[1:-1]
    return strides[0], strides[1], strides[2:]


def run_forward(plan: ForwardPlan, x: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Compute the forward operator for a validated plan."""
    out = np.empty(plan.out_shape, plan.out_dtype)
    if plan.is_empty:
        return out
    r = plan.rank
    xflat, xs = flat_view(x)
    xs_n, xs_c, xs_spatial = _split_channels(xs, plan.channel_last)
    outflat, os = flat_view(out, writeable=True)
    os_n, os_c, os_spatial = _split_channels(os, plan.channel_last)
    os_p = os_spatial[-1]  # the output is C-contiguous: points are evenly spaced
    # Kernels list axes in grid order: entry 0 is the innermost spatial axis.
    sizes = np.array(plan.in_spatial[::-1], np.int64)
    strides = np.array(xs_spatial[::-1], np.int64)
    axc = np.stack([axis_constants(int(s), plan.align_corners, plan.coord_dtype) for s in sizes])
    kc = np.array(cubic_constants(), plan.weight_dtype)
    wconst = np.array([0.0, 1.0, np.nan], plan.weight_dtype)
    grid3 = np.ascontiguousarray(grid.reshape(plan.grid_batch, plan.out_points, r))
    # Sweep channels innermost when they are many and the closest in memory.
    interleaved = plan.channels > _PLANAR_MAX_CHANNELS and xs_c <= min(strides)

    forward = FORWARD_KERNELS.get((r, plan.mode), kern.forward_nd)
    K = taps_per_point(plan.mode, r)
    forward(xflat, xs_n, xs_c, sizes, strides, axc, kc, grid3,
            outflat, os_n, os_c, os_p, plan.batch, plan.channels, K, plan.mode, plan.padding,
            _block_size(plan, K), interleaved, wconst)
    return out
