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

for every ``i_a`` in ``[lo_a, hi_a]`` -- the only indices whose values the kernel
uses.  The kernel therefore computes bit for bit what it computes on the whole
``x``.  It also reads element ``(n, c, 0, ..., 0)`` as a stand-in for taps
that read nothing (and discards the value); the window is placed in a zeroed
buffer so that this address is inside it too (:func:`_anchored`).

Safety.  Reading any other index of ``virtual`` would read memory outside the
window, so before calling the kernel the task recomputes the exact footprint of
its grid block (:func:`gridsample.dask._footprint.points_window`, the kernel's
own tap arithmetic in NumPy) and refuses to run (``RuntimeError``) unless it
lies inside the window it was given.  A window is additionally widened by
``MARGIN`` elements on each side when the graph is built.

Two ways to get the window.  *Chunk tasks* (:func:`sample_block`,
:func:`affine_block`) are planned with a footprint known when the graph is
built and receive the input chunks that intersect it.  *Region tasks*
(:func:`region_block`) receive the input's array-like source itself (a zarr or
HDF5 array, a memory map, a NumPy array) and read the window they compute
from their own grid block -- the exact footprint, so no footprint is needed
when the graph is built.
"""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass

import numba
import numpy as np

from .._affine import affine_window
from .._api import grid_sample as _grid_sample
from .._engine import identity_axis, run_forward
from .._plan import plan_forward
from .._splines import cast_result
from ._footprint import points_window

__all__ = ["SampleOptions", "BlockSpec", "RegionSpec", "AffineSpec", "Layout", "sample_block",
           "affine_block", "absolute_block",
           "region_block", "footprint_block", "MARGIN", "encode_window", "decode_window",
           "widen", "input_box"]

#: Elements added on each side of a computed footprint (clipped to the axis).
MARGIN = 1


class Layout:
    """Axis bookkeeping of x / output in channel-first or channel-last layout."""

    def __init__(self, rank, channel_last):
        self.r = rank
        self.channel_last = channel_last
        self.channel_axis = rank + 1 if channel_last else 1
        self.spatial_axes = tuple(range(1, 1 + rank)) if channel_last else \
            tuple(range(2, 2 + rank))

    def arrange(self, batch, channel, spatial):
        if self.channel_last:
            return (batch, *spatial, channel)
        return (batch, channel, *spatial)


def widen(window, in_spatial):
    """The footprint widened by ``MARGIN`` and clipped: per spatial axis ``(lo, hi)``."""
    if window is None:
        return None
    return tuple((max(0, lo - MARGIN), min(s - 1, hi + MARGIN))
                 for (lo, hi), s in zip(window, in_spatial))


def input_box(layout, window, batch_range, channel_range):
    """Per x axis ``[start, stop)`` of the window, and the window array's shape.

    A block that reads nothing (``window`` None) gets one element per spatial axis.
    """
    if window is None:
        spatial = [(0, 1)] * layout.r
    else:
        spatial = [(lo, hi + 1) for lo, hi in window]
    ranges = layout.arrange(batch_range, channel_range, spatial)
    shape = tuple(b - a for a, b in ranges)
    return ranges, shape


@dataclass(frozen=True)
class SampleOptions:
    """The sampling options and the full input geometry every task needs."""

    mode: int
    pad: tuple  # one padding code per grid component
    align: bool
    channel_last: bool
    in_spatial: tuple  # x's full spatial shape (d1 … dr)
    coord_dtype: np.dtype
    dtype: np.dtype  # x's (and the output's) dtype
    threads: int | None  # Numba threads per task (None: Numba's setting)
    fill: tuple = ()  # the fill per channel under "constant" (empty: none)
    cubic_a: float = -0.75
    pixels: bool = False
    # Sampling B-spline coefficients computed from x (prefilter=True): x's dtype, which the
    # result takes, and the coefficients' margins per grid component (in_spatial and dtype
    # are then the coefficients'); None: x is sampled as given.
    result_dtype: np.dtype | None = None
    spline_pad: tuple = ()


@dataclass(frozen=True)
class BlockSpec(SampleOptions):
    """A planned task: its window and the input pieces that fill it.

    ``window`` is per spatial axis of x (d1 … dr) ``(lo, hi)`` inclusive, or
    None when no point of the block reads anything.  ``pieces`` lists, for each
    input chunk handed to the task (same order), ``(src, dst)`` slice tuples:
    ``window_array[dst] = chunk[src]``.
    """

    window: tuple | None = None
    window_shape: tuple = ()
    pieces: tuple = ()


@dataclass(frozen=True)
class RegionSpec(SampleOptions):
    """A region task: its batch and channel ranges of x (``[start, stop)``)."""

    batch_range: tuple = (0, 0)
    channel_range: tuple = (0, 0)


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


def footprint_block(grid_block, in_spatial, mode, pad, align, coord_dtype, pixels=False,
                    offsets=()):
    """Map-blocks function: the exact footprint of one grid block, shape (1, …, 1, 1 + 2r)."""
    r = len(in_spatial)
    w = points_window(np.asarray(grid_block), in_spatial, mode, pad, align, coord_dtype, pixels,
                      offsets)
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


def _usable(win: np.ndarray, dtype) -> np.ndarray:
    """``win`` in native byte order with non-negative, item-aligned strides."""
    if win.dtype != dtype or any(s < 0 or s % win.itemsize for s in win.strides):
        win = np.ascontiguousarray(win, dtype=dtype)
    return win


def _assemble(chunks, spec: BlockSpec) -> np.ndarray:
    native = _native(spec.dtype)
    if len(chunks) == 1:
        (src, dst), = spec.pieces
        part = np.asarray(chunks[0])[src]
        if part.shape == tuple(spec.window_shape):
            win = part
        else:  # pragma: no cover - a single piece always covers the window
            win = None
        if win is not None:
            return _usable(win, native)
    win = np.empty(spec.window_shape, native)
    for chunk, (src, dst) in zip(chunks, spec.pieces):
        win[dst] = np.asarray(chunk)[src]
    return win


def _virtual(win: np.ndarray, window, spec) -> np.ndarray:
    """``win`` seen as an array of the full spatial shape (see the module notes)."""
    r = len(spec.in_spatial)
    spatial_axes = range(1, 1 + r) if spec.channel_last else range(2, 2 + r)
    shape = list(win.shape)
    offset = 0
    for a, axis in enumerate(spatial_axes):
        lo = window[a][0] if window is not None else 0
        offset += lo * win.strides[axis]
        shape[axis] = spec.in_spatial[a]
    ptr = win.__array_interface__["data"][0] - offset
    iface = {"shape": tuple(shape), "typestr": f"|V{win.itemsize}", "data": (ptr, True),
             "strides": win.strides, "version": 3}
    return np.asarray(_Pointer(iface, win)).view(win.dtype)


def _native(dtype):
    return dtype.newbyteorder("=") if not dtype.isnative else dtype


def _anchored(win: np.ndarray, window, spec) -> np.ndarray:
    """``win`` copied C-contiguous into a zeroed buffer, ``base`` elements after its start.

    Besides the taps inside the window, the kernels read element
    ``(n, c, 0, ..., 0)`` of a plane as a stand-in where a point reads
    nothing (a tap outside under zeros padding, a NaN point) and then discard
    the value.  In the full-size view that element lies ``base = sum_a lo_a *
    stride_a`` elements before the window, so the window is placed that far
    into its buffer: every such read then lands in the buffer (in its zeros,
    or in the window).  The zeros are never written; for large buffers
    ``np.zeros`` maps untouched pages lazily, so they cost address space, not
    memory (``base`` is at most the window's size times the number of
    windows along the outermost spatial axis).
    """
    if window is None:
        return win
    r = len(spec.in_spatial)
    spatial_axes = range(1, 1 + r) if spec.channel_last else range(2, 2 + r)
    cstrides = np.cumprod((1,) + win.shape[:0:-1])[::-1]  # C-order element strides
    base = sum(int(window[a][0]) * int(cstrides[axis]) for a, axis in enumerate(spatial_axes))
    buf = np.zeros(base + win.size, win.dtype)
    out = buf[base:].reshape(win.shape)
    out[...] = win
    return out


def _kernel(win, window, grid_block, spec) -> np.ndarray:
    """The in-memory operator on ``win`` shown as the full-size ``x``."""
    x = _virtual(_anchored(win, window, spec), window, spec)
    with kernel_threads(spec.threads):
        if spec.result_dtype is not None:
            return _sample_coefficients(x, grid_block, spec)
        return _grid_sample(x, grid_block, spec.mode, spec.pad, spec.align,
                            channel_last=spec.channel_last,
                            fill_value=list(spec.fill) if spec.fill else 0,
                            cubic_a=spec.cubic_a,
                            grid_units="pixels" if spec.pixels else "normalized",
                            prefilter=False)  # a B-spline's x holds its coefficients


def _sample_coefficients(c, grid_block, spec) -> np.ndarray:
    """B-spline coefficients ``c`` (full-size view) sampled as the in-memory operator samples
    those it computes (:func:`gridsample._splines.coefficient_plan`: the same plan, margins
    included), then cast to x's dtype."""
    plan, c, grid = plan_forward(c, grid_block, spec.mode, spec.pad, spec.align,
                                 spec.channel_last, fill_value=list(spec.fill) if spec.fill else 0,
                                 cubic_a=spec.cubic_a,
                                 grid_units="pixels" if spec.pixels else "normalized",
                                 prefilter=False)
    plan = dataclasses.replace(plan, spline_pad=spec.spline_pad)
    return cast_result(run_forward(plan, c, grid), spec.result_dtype)


def _need(grid_block, spec):
    """The exact footprint of a grid block (the kernel's tap arithmetic in NumPy)."""
    return points_window(grid_block, spec.in_spatial, spec.mode, spec.pad, spec.align,
                         spec.coord_dtype, spec.pixels, spec.spline_pad)


def _sample(grid_block: np.ndarray, chunks, spec: BlockSpec) -> np.ndarray:
    need = _need(grid_block, spec)
    if not _inside(need, spec.window):
        raise RuntimeError(
            f"gridsample.dask: a grid block reads input range {need}, outside the window "
            f"{spec.window} planned for it; the grid changed between planning and computing "
            f"(persist a non-deterministic grid before calling grid_sample)")
    if spec.window is None:
        # No point reads anything: a window of one zero element per spatial axis stands in.
        win = np.zeros(spec.window_shape, _native(spec.dtype))
    else:
        win = _assemble(chunks, spec)
    return _kernel(win, spec.window, grid_block, spec)


def absolute_block(grid_block, out_spatial, align, pixels, dtype, block_info=None):
    """Map-blocks function: displacements to absolute positions, as the in-memory operator.

    Adds each point's identity (:func:`gridsample._engine.identity_axis`) to
    the block's displacements, in the coordinate ``dtype``: bit for bit the
    coordinates :func:`gridsample._engine.coordinates` forms for those points.
    """
    out = np.asarray(grid_block).astype(dtype)
    location = block_info[0]["array-location"]
    r = len(out_spatial)
    for k in range(r):
        axis = r - 1 - k  # grid[..., k] addresses spatial axis r-1-k
        start, stop = location[1 + axis]
        base = identity_axis(out_spatial[axis], align, pixels, dtype)[start:stop]
        shape = [1] * r
        shape[axis] = stop - start
        out[..., k] += base.reshape(1, *shape)
    return out


def sample_block(grid_block, chunks, spec: BlockSpec) -> np.ndarray:
    """Task: sample one output block from its grid block and the input chunks of its footprint."""
    return _sample(np.asarray(grid_block), chunks, spec)


def region_block(source, grid_block, spec: RegionSpec) -> np.ndarray:
    """Task: sample one output block, reading its window straight from ``source``.

    ``source`` is x's array-like (anything sliced by a tuple of slices into an
    array: zarr, h5py, a memory map, NumPy).  The window is the block's exact
    footprint widened by ``MARGIN``, so the kernel never reads outside it, and
    only that box of ``source`` is requested.
    """
    grid = np.asarray(grid_block)
    window = widen(_need(grid, spec), spec.in_spatial)
    layout = Layout(len(spec.in_spatial), spec.channel_last)
    ranges, shape = input_box(layout, window, spec.batch_range, spec.channel_range)
    native = _native(spec.dtype)
    if window is None:
        win = np.zeros(shape, native)
    else:
        win = _usable(np.asarray(source[tuple(slice(a, b) for a, b in ranges)]), native)
    return _kernel(win, window, grid, spec)


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
