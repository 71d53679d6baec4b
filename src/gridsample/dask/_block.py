"""The per-block tasks of :mod:`gridsample.dask` (NumPy only; no Dask import).

Exactness.  The kernels compute an output point from its grid value and the
*full* spatial sizes of ``x`` (the unnormalize constants, the border / reflection
edges).  A block receives only a window of ``x``: the spatial index box
``[lo_a, hi_a]`` its points read.  Re-expressing the grid in the window's own
normalized coordinates would round differently, so instead the window is shown
to the unchanged public kernel as an array of the *full* spatial shape whose
data pointer sits ``sum_a lo_a * stride_a`` bytes *before* the window's first
element, with the window's strides::

    virtual[n, c, i_1, ..., i_r]  ==  window[n, c, i_1 - lo_1, ..., i_r - lo_r]

for every ``i_a`` in ``[lo_a, hi_a]`` -- the only indices the kernel reads.  The
kernel therefore computes bit for bit what it computes on the whole ``x``.

Safety.  Reading any other index of ``virtual`` would read memory outside the
window, so before calling the kernel the task recomputes the exact footprint of
its grid block (:func:`gridsample.dask._footprint.points_window`, the kernel's
own tap arithmetic in NumPy) and refuses to run (``RuntimeError``) unless it
lies inside the window it was given.  A window is additionally widened by
``MARGIN`` elements on each side when the graph is built.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import numba
import numpy as np

from .._affine import affine_window
from .._api import grid_sample as _grid_sample
from ._footprint import points_window

__all__ = ["BlockSpec", "AffineSpec", "sample_block", "affine_block", "footprint_block",
           "MARGIN", "encode_window", "decode_window"]

#: Elements added on each side of a computed footprint (clipped to the axis).
MARGIN = 1


@dataclass(frozen=True)
class BlockSpec:
    """What one output block needs besides its grid block and its input pieces.

    ``window`` is per spatial axis of x (d1 … dr) ``(lo, hi)`` inclusive, or
    None when no point of the block reads anything.  ``pieces`` lists, for each
    input chunk handed to the task (same order), ``(src, dst)`` slice tuples:
    ``window_array[dst] = chunk[src]``.
    """

    mode: int
    pad: int
    align: bool
    channel_last: bool
    in_spatial: tuple
    coord_dtype: np.dtype
    window: tuple | None
    window_shape: tuple
    dtype: np.dtype
    pieces: tuple
    threads: int | None


@dataclass(frozen=True)
class AffineSpec:
    """How an affine block makes its own grid (equal to ``affine_grid(...)[block]``)."""

    theta: np.ndarray  # (n_items or 1, r, r + 1), compute dtype
    grid_dtype: np.dtype  # theta's dtype (the grid affine_grid would return)
    out_spatial: tuple  # full output spatial shape (D1 … Dr)
    start: tuple  # this block's first index per output spatial axis
    stop: tuple
    align: bool


@contextlib.contextmanager
def kernel_threads(n):
    """Limit Numba's threads for the calling thread (``set_num_threads`` is thread-local)."""
    if n is None:
        yield
        return
    prev = numba.get_num_threads()
    numba.set_num_threads(max(1, min(int(n), numba.config.NUMBA_NUM_THREADS)))
    try:
        yield
    finally:
        numba.set_num_threads(prev)


def encode_window(window, r):
    """``(valid, lo_1, hi_1, ..., lo_r, hi_r)`` as int64 (for a Dask array of footprints)."""
    row = np.zeros(1 + 2 * r, np.int64)
    if window is not None:
        row[0] = 1
        for a, (lo, hi) in enumerate(window):
            row[1 + 2 * a], row[2 + 2 * a] = lo, hi
    return row


def decode_window(row):
    if not row[0]:
        return None
    r = (len(row) - 1) // 2
    return tuple((int(row[1 + 2 * a]), int(row[2 + 2 * a])) for a in range(r))


def footprint_block(grid_block, in_spatial, mode, pad, align, coord_dtype):
    """Map-blocks function: the exact footprint of one grid block, shape (1, …, 1, 1 + 2r)."""
    r = len(in_spatial)
    w = points_window(np.asarray(grid_block), in_spatial, mode, pad, align, coord_dtype)
    return encode_window(w, r).reshape((1,) * (grid_block.ndim - 1) + (1 + 2 * r,))


def _inside(need, window):
    if need is None:
        return True
    if window is None:
        return False
    return all(w[0] <= n[0] and n[1] <= w[1] for n, w in zip(need, window))


class _Pointer:
    """Holds a raw ``__array_interface__`` and keeps the window alive."""

    def __init__(self, interface, keep):
        self.__array_interface__ = interface
        self._keep = keep


def _assemble(chunks, spec: BlockSpec) -> np.ndarray:
    native = spec.dtype.newbyteorder("=") if not spec.dtype.isnative else spec.dtype
    if len(chunks) == 1:
        (src, dst), = spec.pieces
        part = np.asarray(chunks[0])[src]
        if part.shape == tuple(spec.window_shape):
            win = part
        else:  # pragma: no cover - a single piece always covers the window
            win = None
        if win is not None:
            if win.dtype != native or any(s < 0 or s % win.itemsize for s in win.strides):
                win = np.ascontiguousarray(win, dtype=native)
            return win
    win = np.empty(spec.window_shape, native)
    for chunk, (src, dst) in zip(chunks, spec.pieces):
        win[dst] = np.asarray(chunk)[src]
    return win


def _virtual(win: np.ndarray, spec: BlockSpec) -> np.ndarray:
    """``win`` seen as an array of the full spatial shape (see the module notes)."""
    r = len(spec.in_spatial)
    spatial_axes = range(1, 1 + r) if spec.channel_last else range(2, 2 + r)
    shape = list(win.shape)
    offset = 0
    for a, axis in enumerate(spatial_axes):
        lo = spec.window[a][0] if spec.window is not None else 0
        offset += lo * win.strides[axis]
        shape[axis] = spec.in_spatial[a]
    ptr = win.__array_interface__["data"][0] - offset
    iface = {"shape": tuple(shape), "typestr": f"|V{win.itemsize}", "data": (ptr, True),
             "strides": win.strides, "version": 3}
    return np.asarray(_Pointer(iface, win)).view(win.dtype)


def _sample(grid_block: np.ndarray, chunks, spec: BlockSpec) -> np.ndarray:
    need = points_window(grid_block, spec.in_spatial, spec.mode, spec.pad, spec.align,
                         spec.coord_dtype)
    if not _inside(need, spec.window):
        raise RuntimeError(
            f"gridsample.dask: a grid block reads input range {need}, outside the window "
            f"{spec.window} planned for it; the grid changed between planning and computing "
            f"(persist a non-deterministic grid before calling grid_sample)")
    if spec.window is None:
        # No point reads anything: a window of one zero element per spatial axis stands in.
        win = np.zeros(spec.window_shape, spec.dtype.newbyteorder("="))
    else:
        win = _assemble(chunks, spec)
    x = _virtual(win, spec)
    with kernel_threads(spec.threads):
        return _grid_sample(x, grid_block, spec.mode, spec.pad, spec.align,
                            channel_last=spec.channel_last)


def sample_block(grid_block, chunks, spec: BlockSpec) -> np.ndarray:
    """Task: sample one output block from its grid block and the input chunks of its footprint."""
    return _sample(np.asarray(grid_block), chunks, spec)


def affine_grid_block(aspec: AffineSpec) -> np.ndarray:
    """``affine_grid(theta, full)[:, block]`` bit for bit, made from the block's index ranges.

    The same compiled row kernel as :func:`gridsample.affine_grid`, fed the
    block's slice of each axis's base coordinates (computed for the full axis
    length, then sliced): every grid value is formed from the same operands in
    the same order.
    """
    return affine_window(aspec.theta, aspec.grid_dtype, aspec.out_spatial, aspec.start,
                         aspec.stop, aspec.align)


def affine_block(chunks, spec: BlockSpec, aspec: AffineSpec) -> np.ndarray:
    """Task: make the block's affine grid, then sample as :func:`sample_block`."""
    with kernel_threads(spec.threads):
        grid = affine_grid_block(aspec)
    return _sample(grid, chunks, spec)
